// One endpoint's device-memory PIO slot cut into cells (DmCells), on a fake device: which
// cell a message goes to, that a cell comes back only once its SEND retired (in order), which
// SENDs must be signalled, and that stores never leave the cell.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "transports/verbs/dm_cells.h"
#include "verbs_fake_dm.h"

using swy::Status;
using swy::tl::verbs::DmCells;
using swy::tl::verbs::DmPool;
using swy::tl::verbs::testing::FakeDm;
using swy::tl::verbs::testing::FakeDmState;

namespace {

constexpr size_t kCell = 256;
constexpr uint32_t kCellsPerSlot = 4;

struct Fixture {
    FakeDmState state;
    std::unique_ptr<DmPool> pool;
    Fixture(uint32_t slots, uint32_t reserved) {
        state.max = 1 << 20;
        std::string why;
        EXPECT_EQ(DmPool::create(std::make_unique<FakeDm>(&state), kCell * kCellsPerSlot, slots,
                                 reserved, &pool, &why),
                  Status::kOk)
            << why;
    }
    std::unique_ptr<DmCells> cells(bool first = false, size_t cell = kCell) {
        std::unique_ptr<DmCells> out;
        std::string why;
        EXPECT_EQ(DmCells::create(pool.get(), first, cell, &out, &why), Status::kOk) << why;
        return out;
    }
};

std::vector<uint8_t> bytes(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<uint8_t>(i * 7 + seed);
    return v;
}

}  // namespace

TEST(VerbsDmCells, SlotIsCutIntoCellsThatAreTakenInOrder) {
    Fixture f(2, 0);
    auto c = f.cells();
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->cells(), kCellsPerSlot);
    EXPECT_EQ(c->cell_size(), kCell);
    DmCells::Cell cell;
    for (uint32_t i = 0; i < kCellsPerSlot; ++i) {
        ASSERT_TRUE(c->acquire(&cell));
        EXPECT_EQ(cell.index, i);
        // Zero-based MR: the SGE address is the offset of the cell in the whole region.
        EXPECT_EQ(c->sge_address(cell.index), c->slot() * kCell * kCellsPerSlot + i * kCell);
    }
    EXPECT_EQ(c->lkey(), FakeDm::kLkey);
    EXPECT_EQ(c->in_flight(), kCellsPerSlot);
    EXPECT_FALSE(c->acquire(&cell)) << "a fifth message while four are in flight";
    EXPECT_EQ(c->in_flight(), kCellsPerSlot);
}

TEST(VerbsDmCells, ACellIsReusedOnlyAfterItsSendRetired) {
    Fixture f(1, 0);
    auto c = f.cells();
    DmCells::Cell cell;
    for (uint32_t i = 0; i < kCellsPerSlot; ++i)
        ASSERT_TRUE(c->acquire(&cell));
    // Sends retire in order: only the oldest can come back.
    EXPECT_FALSE(c->release(1));
    EXPECT_FALSE(c->release(3));
    EXPECT_FALSE(c->acquire(&cell));
    ASSERT_TRUE(c->release(0));
    EXPECT_FALSE(c->release(0)) << "released twice";
    ASSERT_TRUE(c->acquire(&cell));
    EXPECT_EQ(cell.index, 0u) << "the freed cell, and no other, is reused";
    EXPECT_FALSE(c->acquire(&cell));
    // Wrap around many times: the ring never hands out a cell still in flight.
    for (uint32_t round = 0; round < 1000; ++round) {
        const uint32_t oldest = (round + 1) % kCellsPerSlot;
        ASSERT_TRUE(c->release(oldest)) << round;
        ASSERT_TRUE(c->acquire(&cell));
        ASSERT_EQ(cell.index, oldest);
    }
    EXPECT_FALSE(c->release(7)) << "no such cell";
}

TEST(VerbsDmCells, TheSendThatLeavesHalfOrNoCellsFreeIsSignalled) {
    Fixture f(1, 0);
    auto c = f.cells();
    DmCells::Cell cell;
    std::vector<bool> signal;
    for (uint32_t i = 0; i < kCellsPerSlot; ++i) {
        ASSERT_TRUE(c->acquire(&cell));
        signal.push_back(cell.signal);
    }
    // 4 cells: the 2nd take leaves 2 free, the 4th none: a completion that frees them is
    // always on its way when every cell is taken.
    EXPECT_EQ(signal, (std::vector<bool>{false, true, false, true}));
    // A single-cell slot signals every send.
    Fixture g(1, 0);
    auto one = g.cells(false, kCell * kCellsPerSlot);
    ASSERT_EQ(one->cells(), 1u);
    ASSERT_TRUE(one->acquire(&cell));
    EXPECT_TRUE(cell.signal);
}

TEST(VerbsDmCells, CancelUndoesOnlyTheNewestTake) {
    Fixture f(1, 0);
    auto c = f.cells();
    DmCells::Cell a, b;
    ASSERT_TRUE(c->acquire(&a));
    ASSERT_TRUE(c->acquire(&b));
    EXPECT_FALSE(c->cancel(a.index)) << "not the newest";
    EXPECT_TRUE(c->cancel(b.index));
    EXPECT_EQ(c->in_flight(), 1u);
    ASSERT_TRUE(c->acquire(&b));
    EXPECT_EQ(b.index, 1u) << "the cancelled cell is taken again next";
}

TEST(VerbsDmCells, StoresHeaderAndPayloadByteForByteInsideTheCell) {
    Fixture f(2, 0);
    auto first = f.cells();
    auto c = f.cells();  // slot 1: its cells start at one slot into the region
    ASSERT_EQ(c->slot(), 1);
    DmCells::Cell cell;
    ASSERT_TRUE(c->acquire(&cell));
    ASSERT_TRUE(c->acquire(&cell));  // cell 1
    const auto hdr = bytes(8, 1);
    const auto payload = bytes(kCell - 8 - 1, 2);  // cell - 1 bytes in all: padded store
    ASSERT_EQ(c->store(cell.index, hdr.data(), hdr.size(), payload.data(), payload.size()),
              Status::kOk);
    const size_t at = 1 * kCell * kCellsPerSlot + 1 * kCell;
    EXPECT_EQ(std::memcmp(f.state.memory.data() + at, hdr.data(), hdr.size()), 0);
    EXPECT_EQ(std::memcmp(f.state.memory.data() + at + 8, payload.data(), payload.size()), 0);
    // Nothing outside the cell was touched: the byte before it and the one after it.
    EXPECT_EQ(f.state.memory[at - 1], 0);
    EXPECT_EQ(f.state.memory[at + kCell], 0);
    // Exactly a cell fits; one byte more is refused before anything reaches the device.
    const auto full = bytes(kCell - 8, 3);
    EXPECT_EQ(c->store(cell.index, hdr.data(), 8, full.data(), full.size()), Status::kOk);
    EXPECT_EQ(std::memcmp(f.state.memory.data() + at + 8, full.data(), full.size()), 0);
    const int writes = f.state.writes;
    const auto over = bytes(kCell - 8 + 1, 4);
    EXPECT_EQ(c->store(cell.index, hdr.data(), 8, over.data(), over.size()), Status::kInvalidParam);
    EXPECT_EQ(f.state.writes, writes);
    EXPECT_EQ(f.state.memory[at + kCell], 0);
    // A cell not in flight cannot be written (its last SEND may still be read... or it was
    // never taken).
    EXPECT_EQ(c->store(2, hdr.data(), 8, nullptr, 0), Status::kInvalidParam);
    // Another endpoint's slot is untouched by all of this.
    for (size_t i = 0; i < kCell * kCellsPerSlot; ++i)
        ASSERT_EQ(f.state.memory[i], 0) << i;
    (void)first;
}

TEST(VerbsDmCells, DeviceStoreErrorIsReported) {
    Fixture f(1, 0);
    auto c = f.cells();
    DmCells::Cell cell;
    ASSERT_TRUE(c->acquire(&cell));
    f.state.fail_write = Status::kIoError;
    const auto p = bytes(100, 5);
    EXPECT_EQ(c->store(cell.index, nullptr, 0, p.data(), p.size()), Status::kIoError);
}

TEST(VerbsDmCells, SlotsFollowThePioPolicyAndComeBackWithTheEndpoint) {
    Fixture f(2, 1);  // one slot for anyone, one for PIO_FIRST endpoints
    auto a = f.cells(false);
    ASSERT_NE(a, nullptr);
    std::unique_ptr<DmCells> b;
    std::string why;
    EXPECT_EQ(DmCells::create(f.pool.get(), false, kCell, &b, &why), Status::kNoResource);
    EXPECT_NE(why.find("reserved"), std::string::npos) << why;
    auto first = f.cells(true);
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(DmCells::create(f.pool.get(), true, kCell, &b, &why), Status::kNoResource);
    EXPECT_NE(why.find("taken"), std::string::npos) << why;
    a.reset();  // the endpoint closed: its slot is free again...
    EXPECT_EQ(f.pool->free_slots(), 1u);
    // ...but it is the one kept free for PIO_FIRST endpoints (as SWY_PIO_RESERVED on shm).
    EXPECT_EQ(DmCells::create(f.pool.get(), false, kCell, &b, &why), Status::kNoResource);
    first.reset();
    EXPECT_EQ(DmCells::create(f.pool.get(), false, kCell, &b, &why), Status::kOk) << why;
}

TEST(VerbsDmCells, RejectsCellsThatAreUnalignedOrLargerThanASlot) {
    Fixture f(1, 0);
    std::unique_ptr<DmCells> c;
    std::string why;
    EXPECT_EQ(DmCells::create(f.pool.get(), false, 0, &c, &why), Status::kInvalidParam);
    EXPECT_EQ(DmCells::create(f.pool.get(), false, 100, &c, &why), Status::kInvalidParam);
    EXPECT_EQ(DmCells::create(f.pool.get(), false, kCell * kCellsPerSlot + 64, &c, &why),
              Status::kInvalidParam);
    EXPECT_EQ(DmCells::create(nullptr, false, kCell, &c, &why), Status::kInvalidParam);
    EXPECT_EQ(f.pool->free_slots(), 1u) << "a refused request took no slot";
}

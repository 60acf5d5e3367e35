// Specification of swy::tl::shm::RingView: a bounded lock-free FIFO of cells, with
// multi-producer (claim_shared) and single-producer (claim_private) senders and one consumer.
#include "transports/shm/ring.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <set>
#include <thread>
#include <vector>

namespace swy::tl::shm {
namespace {

constexpr uint32_t kCellSize = 64;  // 16-byte header + 48 bytes payload

/// Cache-line aligned heap memory for a ring; freed on scope exit.
struct RingMemory {
    RingMemory(uint32_t ncells, uint32_t cell_size)
        : bytes(static_cast<uint8_t*>(
              std::aligned_alloc(kCacheLine, RingView::region_bytes(ncells, cell_size)))),
          ring(bytes.get(), ncells, cell_size) {
        ring.initialise();
    }
    struct Free {
        void operator()(uint8_t* p) const { std::free(p); }
    };
    std::unique_ptr<uint8_t, Free> bytes;
    RingView ring;
};

// A message as the tests write it: who sent it and its per-sender sequence number.
struct Message {
    uint32_t producer;
    uint64_t sequence;
};

void write_message(CellHeader* c, uint32_t producer, uint64_t sequence) {
    const Message m{producer, sequence};
    std::memcpy(reinterpret_cast<uint8_t*>(c) + sizeof(CellHeader), &m, sizeof(m));
    c->sender = static_cast<uint16_t>(producer);
    c->length = sizeof(m);
}

Message read_message(const CellHeader* c) {
    Message m{};
    std::memcpy(&m, reinterpret_cast<const uint8_t*>(c) + sizeof(CellHeader), sizeof(m));
    return m;
}

/// Private-head push; false if the ring is full.
bool push_private(const RingView& ring, uint64_t& head, uint64_t sequence) {
    CellHeader* c = ring.claim_private(head);
    if (c == nullptr) return false;
    write_message(c, 0, sequence);
    RingView::publish(c, head);
    ++head;
    return true;
}

/// Shared-head push; false if the ring is full.
bool push_shared(const RingView& ring, std::atomic<uint64_t>& head, uint32_t producer,
                 uint64_t sequence) {
    uint64_t pos = 0;
    CellHeader* c = ring.claim_shared(head, &pos);
    if (c == nullptr) return false;
    write_message(c, producer, sequence);
    RingView::publish(c, pos);
    return true;
}

/// Pop one message at @p tail; false if the ring is empty.
bool pop(const RingView& ring, uint64_t& tail, Message* out) {
    CellHeader* c = ring.peek(tail);
    if (c == nullptr) return false;
    *out = read_message(c);
    ring.release(c, tail);
    ++tail;
    return true;
}

TEST(ShmRing, GeometryFollowsConstructorArguments) {
    RingMemory mem(16, 128);
    EXPECT_TRUE(mem.ring.valid());
    EXPECT_EQ(mem.ring.capacity(), 16u);
    EXPECT_EQ(mem.ring.cell_size(), 128u);
    // The header lives in the position's slot: the whole cell is the message's.
    EXPECT_EQ(mem.ring.payload_capacity(), 128u);
    EXPECT_FALSE(RingView().valid());
}

// The FIFO's headers are packed (ring.h): consecutive small messages (an RTS is 48 bytes of
// header plus the cell header) take consecutive slots of a few pages, not a page of their own
// each. With 8 KiB cells each message used to start a new page of the receiver's segment.
TEST(ShmRing, ConsecutiveSmallMessagesShareFewPages) {
    constexpr uint32_t kCells = 256;
    constexpr uint32_t kBigCell = 8192;
    RingMemory mem(kCells, kBigCell);
    constexpr size_t kPage = 4096;
    constexpr size_t kRts = 48;
    std::set<uintptr_t> pages;
    for (uint64_t pos = 0; pos < kCells; ++pos) {
        const auto first = reinterpret_cast<uintptr_t>(mem.ring.cell(pos));
        const auto last = reinterpret_cast<uintptr_t>(mem.ring.payload(pos, kRts)) + kRts - 1;
        for (uintptr_t p = first / kPage; p <= last / kPage; ++p)
            pages.insert(p);
    }
    // 256 slots of 128 bytes: 8 pages (9 if the allocation is not page aligned).
    EXPECT_LE(pages.size(), size_t{kCells} * RingView::kSlotBytes / kPage + 1);
}

// A message up to kInlineBytes lives in its slot, a larger one in its position's payload
// cell: at the boundary and at full capacity, a full ring of them comes out byte for byte
// (no message overlaps another's slot or cell).
TEST(ShmRing, PayloadsAroundTheInlineBoundaryComeOutIntact) {
    constexpr uint32_t kCells = 8;
    constexpr uint32_t kCell = 1024;
    RingMemory mem(kCells, kCell);
    const size_t sizes[] = {RingView::kInlineBytes - 1, RingView::kInlineBytes,
                            RingView::kInlineBytes + 1, mem.ring.payload_capacity()};
    std::atomic<uint64_t> head{0};
    uint64_t tail = 0;
    for (int lap = 0; lap < 3; ++lap) {
        for (uint64_t i = 0; i < kCells; ++i) {
            const size_t len = sizes[i % std::size(sizes)];
            uint64_t pos = 0;
            CellHeader* c = mem.ring.claim_shared(head, &pos);
            ASSERT_NE(c, nullptr);
            c->length = static_cast<uint32_t>(len);
            uint8_t* d = mem.ring.payload(pos, len);
            for (size_t b = 0; b < len; ++b)
                d[b] = static_cast<uint8_t>(pos * 31 + b);
            RingView::publish(c, pos);
        }
        for (uint64_t i = 0; i < kCells; ++i, ++tail) {
            CellHeader* c = mem.ring.peek(tail);
            ASSERT_NE(c, nullptr);
            const size_t len = c->length;
            ASSERT_EQ(len, sizes[i % std::size(sizes)]);
            const uint8_t* d = mem.ring.payload(tail, len);
            for (size_t b = 0; b < len; ++b)
                ASSERT_EQ(d[b], static_cast<uint8_t>(tail * 31 + b))
                    << "pos " << tail << " byte " << b;
            mem.ring.release(c, tail);
        }
    }
}

TEST(ShmRing, EmptyRingHasNothingToPeek) {
    RingMemory mem(8, kCellSize);
    EXPECT_EQ(mem.ring.peek(0), nullptr);
}

TEST(ShmRing, ClaimedButUnpublishedCellIsInvisibleToConsumer) {
    RingMemory mem(8, kCellSize);
    CellHeader* c = mem.ring.claim_private(0);
    ASSERT_NE(c, nullptr);
    write_message(c, 0, 42);
    EXPECT_EQ(mem.ring.peek(0), nullptr);
    RingView::publish(c, 0);
    ASSERT_EQ(mem.ring.peek(0), c);
    EXPECT_EQ(read_message(c).sequence, 42u);
}

TEST(ShmRing, SingleProducerKeepsFifoOrder) {
    RingMemory mem(16, kCellSize);
    uint64_t head = 0;
    uint64_t tail = 0;
    for (uint64_t i = 0; i < 10; ++i)
        ASSERT_TRUE(push_private(mem.ring, head, 100 + i));
    for (uint64_t i = 0; i < 10; ++i) {
        Message m{};
        ASSERT_TRUE(pop(mem.ring, tail, &m));
        EXPECT_EQ(m.sequence, 100 + i);
    }
    Message m{};
    EXPECT_FALSE(pop(mem.ring, tail, &m));
}

TEST(ShmRing, FullRingRefusesPrivateClaimUntilConsumerReleases) {
    RingMemory mem(8, kCellSize);
    uint64_t head = 0;
    for (uint64_t i = 0; i < 8; ++i)
        ASSERT_TRUE(push_private(mem.ring, head, i));
    EXPECT_EQ(mem.ring.claim_private(head), nullptr);
    EXPECT_EQ(mem.ring.claim_private(head), nullptr);  // still full, still no spin

    // Peeking alone frees nothing; release does.
    uint64_t tail = 0;
    CellHeader* c = mem.ring.peek(tail);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(mem.ring.claim_private(head), nullptr);
    mem.ring.release(c, tail++);
    EXPECT_NE(mem.ring.claim_private(head), nullptr);
    ASSERT_TRUE(push_private(mem.ring, head, 8));
    EXPECT_EQ(mem.ring.claim_private(head), nullptr);

    for (uint64_t i = 1; i <= 8; ++i) {
        Message m{};
        ASSERT_TRUE(pop(mem.ring, tail, &m));
        EXPECT_EQ(m.sequence, i);
    }
}

TEST(ShmRing, FullRingRefusesSharedClaimWithoutMovingHead) {
    RingMemory mem(8, kCellSize);
    std::atomic<uint64_t> head{0};
    for (uint64_t i = 0; i < 8; ++i)
        ASSERT_TRUE(push_shared(mem.ring, head, 0, i));
    uint64_t pos = 12345;
    EXPECT_EQ(mem.ring.claim_shared(head, &pos), nullptr);
    EXPECT_EQ(head.load(), 8u) << "a refused claim must not consume a position";
    EXPECT_EQ(pos, 12345u) << "a refused claim must not report a position";

    uint64_t tail = 0;
    Message m{};
    ASSERT_TRUE(pop(mem.ring, tail, &m));
    EXPECT_EQ(m.sequence, 0u);
    CellHeader* c = mem.ring.claim_shared(head, &pos);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(pos, 8u);
    EXPECT_EQ(c, mem.ring.cell(0)) << "position 8 wraps onto cell 0 of an 8-cell ring";
    EXPECT_EQ(head.load(), 9u);
    EXPECT_EQ(mem.ring.claim_shared(head, &pos), nullptr);
}

TEST(ShmRing, WrapsAroundManyTimesWithPrivateClaims) {
    constexpr uint32_t kCells = 4;
    RingMemory mem(kCells, kCellSize);
    uint64_t head = 0;
    uint64_t tail = 0;
    uint64_t next_expected = 0;
    uint64_t sent = 0;
    // Vary the fill level so that head and tail cross cell 0 at every offset.
    for (int round = 0; round < 10000; ++round) {
        const uint32_t burst = 1 + static_cast<uint32_t>(round % kCells);
        for (uint32_t i = 0; i < burst; ++i)
            ASSERT_TRUE(push_private(mem.ring, head, sent++));
        if (burst == kCells) {
            ASSERT_EQ(mem.ring.claim_private(head), nullptr);
        }
        Message m{};
        while (pop(mem.ring, tail, &m))
            ASSERT_EQ(m.sequence, next_expected++);
        ASSERT_EQ(tail, head);
    }
    EXPECT_EQ(next_expected, sent);
    EXPECT_GT(sent / kCells, 5000u) << "expected thousands of laps";
}

TEST(ShmRing, WrapsAroundManyTimesWithSharedClaims) {
    constexpr uint32_t kCells = 8;
    RingMemory mem(kCells, kCellSize);
    std::atomic<uint64_t> head{0};
    uint64_t tail = 0;
    uint64_t sent = 0;
    uint64_t received = 0;
    for (int round = 0; round < 10000; ++round) {
        // Keep the ring partly full across rounds: push until full, pop half.
        while (push_shared(mem.ring, head, 0, sent))
            ++sent;
        for (uint32_t i = 0; i < kCells / 2; ++i) {
            Message m{};
            ASSERT_TRUE(pop(mem.ring, tail, &m));
            ASSERT_EQ(m.sequence, received++);
        }
    }
    Message m{};
    while (pop(mem.ring, tail, &m))
        ASSERT_EQ(m.sequence, received++);
    EXPECT_EQ(received, sent);
    EXPECT_EQ(head.load(), sent);
}

// A broken ring can livelock a producer inside claim() or leave the consumer waiting for a
// message that was lost. Threads cannot be cancelled, so after kWatchdog the test reports what
// it knows and aborts instead of hanging until the ctest timeout.
constexpr auto kWatchdog = std::chrono::seconds(60);

template <typename Report>
void wait_or_abort(const std::atomic<uint32_t>& finished, uint32_t expected, Report report) {
    const auto deadline = std::chrono::steady_clock::now() + kWatchdog;
    while (finished.load(std::memory_order_acquire) < expected) {
        if (std::chrono::steady_clock::now() > deadline) {
            report();
            std::fprintf(stderr, "ring stress made no progress for %lld s: aborting\n",
                         static_cast<long long>(kWatchdog.count()));
            std::abort();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

// Several threads push sequence-numbered messages through a small ring; one consumer checks
// that each producer's messages arrive in order, none lost, none duplicated.
void run_multi_producer_stress(uint32_t producers, uint64_t per_producer) {
    constexpr uint32_t kCells = 64;
    RingMemory mem(kCells, kCellSize);
    alignas(kCacheLine) std::atomic<uint64_t> head{0};
    std::atomic<bool> start{false};
    std::atomic<uint32_t> producers_finished{0};
    std::atomic<uint32_t> consumer_finished{0};
    std::atomic<uint64_t> progress{0};  // messages received, for the watchdog's report

    const uint64_t total = per_producer * producers;
    std::vector<uint64_t> next(producers, 0);
    uint64_t received = 0;
    uint64_t gaps = 0;     // a producer's sequence skipped ahead: messages lost
    uint64_t repeats = 0;  // a producer's sequence went back: duplicated or reordered
    uint64_t bad_producer = 0;
    std::thread consumer([&] {
        uint64_t tail = 0;
        while (received < total) {
            Message m{};
            if (!pop(mem.ring, tail, &m)) {
                // Once every producer is done, everything published is visible: an empty ring
                // now means messages were lost.
                if (producers_finished.load(std::memory_order_acquire) == producers &&
                    mem.ring.peek(tail) == nullptr) {
                    break;
                }
                std::this_thread::yield();
                continue;
            }
            ++received;
            progress.store(received, std::memory_order_relaxed);
            if (m.producer >= producers) {
                ++bad_producer;
                continue;
            }
            if (m.sequence > next[m.producer]) ++gaps;
            if (m.sequence < next[m.producer]) ++repeats;
            next[m.producer] = m.sequence + 1;
        }
        consumer_finished.store(1, std::memory_order_release);
    });
    std::vector<std::thread> threads;
    for (uint32_t p = 0; p < producers; ++p) {
        threads.emplace_back([&, p] {
            while (!start.load(std::memory_order_acquire)) {}
            for (uint64_t i = 0; i < per_producer; ++i) {
                while (!push_shared(mem.ring, head, p, i))
                    std::this_thread::yield();
            }
            producers_finished.fetch_add(1, std::memory_order_release);
        });
    }
    start.store(true, std::memory_order_release);
    auto report = [&] {
        std::fprintf(
            stderr,
            "%u producers x %llu messages: %u producers finished, %llu received, head %llu\n",
            producers, static_cast<unsigned long long>(per_producer), producers_finished.load(),
            static_cast<unsigned long long>(progress.load()),
            static_cast<unsigned long long>(head.load()));
    };
    wait_or_abort(producers_finished, producers, report);
    wait_or_abort(consumer_finished, 1, report);
    for (auto& t : threads)
        t.join();
    consumer.join();

    EXPECT_EQ(bad_producer, 0u);
    EXPECT_EQ(gaps, 0u) << "messages lost";
    EXPECT_EQ(repeats, 0u) << "messages duplicated or reordered";
    EXPECT_EQ(received, total);
    for (uint32_t p = 0; p < producers; ++p) {
        EXPECT_EQ(next[p], per_producer) << "producer " << p;
    }
    EXPECT_EQ(head.load(), total);
    uint64_t tail = received;
    EXPECT_EQ(mem.ring.peek(tail), nullptr) << "nothing left after the last message";
}

// ThreadSanitizer runs the stress 10-50x slower; keep its runtime reasonable on small machines.
#if defined(__SANITIZE_THREAD__)
constexpr uint64_t kStressMessages = 50'000;
#else
constexpr uint64_t kStressMessages = 200'000;
#endif

TEST(ShmRing, TwoProducersKeepPerProducerOrderAndLoseNothing) {
    run_multi_producer_stress(2, kStressMessages);
}

TEST(ShmRing, FourProducersKeepPerProducerOrderAndLoseNothing) {
    run_multi_producer_stress(4, kStressMessages);
}

// The dedicated-ring case: one producer thread with a private head, one consumer thread.
TEST(ShmRing, PrivateProducerThreadKeepsOrderAcrossThreads) {
    constexpr uint32_t kCells = 16;
    RingMemory mem(kCells, kCellSize);
    std::atomic<uint32_t> finished{0};
    std::atomic<uint64_t> progress{0};
    uint64_t received = 0;
    uint64_t out_of_order = 0;
    std::thread consumer([&] {
        uint64_t tail = 0;
        while (received < kStressMessages) {
            Message m{};
            if (!pop(mem.ring, tail, &m)) {
                std::this_thread::yield();
                continue;
            }
            if (m.sequence != received) ++out_of_order;
            progress.store(++received, std::memory_order_relaxed);
        }
        finished.fetch_add(1, std::memory_order_release);
    });
    std::thread producer([&] {
        uint64_t head = 0;
        for (uint64_t i = 0; i < kStressMessages; ++i) {
            while (!push_private(mem.ring, head, i))
                std::this_thread::yield();
        }
        finished.fetch_add(1, std::memory_order_release);
    });
    wait_or_abort(finished, 2, [&] {
        std::fprintf(stderr, "private ring: %llu of %llu received\n",
                     static_cast<unsigned long long>(progress.load()),
                     static_cast<unsigned long long>(kStressMessages));
    });
    producer.join();
    consumer.join();
    EXPECT_EQ(received, kStressMessages);
    EXPECT_EQ(out_of_order, 0u);
}

// The ring lives in a MAP_SHARED mapping; a forked child produces, the parent consumes.
TEST(ShmRing, WorksAcrossForkInSharedMapping) {
    constexpr uint32_t kCells = 32;
    constexpr uint64_t kMessages = 100'000;
    const size_t bytes = kCacheLine + RingView::region_bytes(kCells, kCellSize);
    void* map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(map, MAP_FAILED);
    auto* base = static_cast<uint8_t*>(map);
    // The shared head has its own cache line ahead of the cells, as in SegmentHeader.
    auto* head = new (base) std::atomic<uint64_t>(0);
    RingView ring(base + kCacheLine, kCells, kCellSize);
    ring.initialise();

    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // Child: no gtest assertions here; exit code reports the outcome.
        for (uint64_t i = 0; i < kMessages; ++i) {
            while (!push_shared(ring, *head, 7, i))
                sched_yield();
        }
        _exit(0);
    }

    uint64_t tail = 0;
    uint64_t received = 0;
    uint64_t out_of_order = 0;
    uint64_t wrong_sender = 0;
    bool reaped = false;
    int wstatus = 0;
    const auto deadline = std::chrono::steady_clock::now() + kWatchdog;
    while (received < kMessages) {
        Message m{};
        if (!pop(ring, tail, &m)) {
            if (std::chrono::steady_clock::now() > deadline) {
                ADD_FAILURE() << "no progress: " << received << " messages received";
                if (!reaped) kill(child, SIGKILL);
                break;
            }
            // A child that died early would leave us spinning forever.
            if (!reaped && waitpid(child, &wstatus, WNOHANG) == child) reaped = true;
            if (reaped && ring.peek(tail) == nullptr) {
                ADD_FAILURE() << "child exited after " << received << " messages";
                break;
            }
            sched_yield();
            continue;
        }
        if (m.sequence != received) ++out_of_order;
        if (m.producer != 7) ++wrong_sender;
        ++received;
    }
    if (!reaped) {
        ASSERT_EQ(waitpid(child, &wstatus, 0), child);
    }
    EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
    EXPECT_EQ(received, kMessages);
    EXPECT_EQ(out_of_order, 0u);
    EXPECT_EQ(wrong_sender, 0u);
    EXPECT_EQ(head->load(), kMessages);
    munmap(map, bytes);
}

}  // namespace
}  // namespace swy::tl::shm

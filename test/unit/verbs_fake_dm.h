// A fake DmDevice for the verbs device-memory tests: device memory as a byte vector, and a
// record of what the pool asked of it (rxe and most hosts have no device memory).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "transports/verbs/dm_pool.h"

namespace swy::tl::verbs::testing {

struct FakeDmState {
    size_t max = 0;
    Status fail_allocate = Status::kOk;
    Status fail_write = Status::kOk;
    size_t allocated = 0;
    int releases = 0;
    int writes = 0;
    std::vector<uint8_t> memory;
};

class FakeDm final : public DmDevice {
public:
    static constexpr uint32_t kLkey = 0xD1CE;
    explicit FakeDm(FakeDmState* s) : s_(s) {}
    size_t max_size() const override { return s_->max; }
    Status allocate(size_t length, std::string* why) override {
        if (s_->fail_allocate != Status::kOk) {
            *why = "fake: allocation refused";
            return s_->fail_allocate;
        }
        s_->allocated = length;
        s_->memory.assign(length, 0);
        return Status::kOk;
    }
    Status write(size_t offset, const void* data, size_t length) override {
        EXPECT_LE(offset + length, s_->memory.size()) << "pool wrote outside the region";
        // What adapters require of device-memory stores (mlx5: 4-byte units).
        EXPECT_EQ(offset % 4, 0u) << "unaligned device-memory store";
        EXPECT_EQ(length % 4, 0u) << "device-memory store of a partial 4-byte unit";
        if (s_->fail_write != Status::kOk) return s_->fail_write;
        ++s_->writes;
        std::memcpy(s_->memory.data() + offset, data, length);
        return Status::kOk;
    }
    void release() override { ++s_->releases; }
    uint32_t lkey() const override { return kLkey; }
    // Zero-based, as ibv_reg_dm_mr with IBV_ACCESS_ZERO_BASED.
    uint64_t sge_address(size_t offset) const override { return offset; }

private:
    FakeDmState* s_;
};

}  // namespace swy::tl::verbs::testing

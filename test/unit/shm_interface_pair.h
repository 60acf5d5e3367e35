// Two shm interfaces in one process, each with a sink that records what it receives: the
// fixture of tests that drive the shm transport directly (no worker, no protocols).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transports/shm/shm_iface.h"

namespace swy::tl::shm {

/// Keeps every active message delivered to it, in order.
struct RecordingSink final : AmSink {
    struct Msg {
        AmId id;
        AmSource src;
        std::vector<uint8_t> data;
    };
    std::vector<Msg> msgs;
    void on_am(AmId id, AmSource src, const uint8_t* data, size_t length) override {
        msgs.push_back({id, src, std::vector<uint8_t>(data, data + length)});
    }
    void on_remote_failure(uint16_t, uint64_t, Status) override {}
};

inline constexpr uint64_t kUidA = 0xA11CE00000000001ull;
inline constexpr uint64_t kUidB = 0xB0B0000000000002ull;

/// Interfaces a_ (uid kUidA) and b_ (kUidB), each with two PIO slots.
class ShmInterfacePair : public ::testing::Test {
protected:
    void SetUp() override {
        ShmConfig config;
        config.geometry.pio_slots = 2;
        std::string why;
        ASSERT_EQ(ShmInterface::open(config, kUidA, 0, &sink_a_, &a_, &why), Status::kOk) << why;
        ASSERT_EQ(ShmInterface::open(config, kUidB, 0, &sink_b_, &b_, &why), Status::kOk) << why;
    }

    /// A lane from @p from to @p to (uid @p to_uid), with a PIO ring if @p pio.
    std::unique_ptr<Endpoint> lane(ShmInterface& from, const ShmInterface& to, uint64_t to_uid,
                                   bool pio) {
        std::vector<uint8_t> section = to.address();
        std::unique_ptr<Endpoint> ep;
        std::string why;
        EXPECT_EQ(from.connect(to_uid, section.data(), section.size(), pio, &ep, &why), Status::kOk)
            << why;
        return ep;
    }

    /// Progress both interfaces until @p sink holds @p count messages (bounded).
    bool deliver(const RecordingSink& sink, size_t count) {
        for (int i = 0; i < 100000 && sink.msgs.size() < count; ++i) {
            a_->progress();
            b_->progress();
        }
        return sink.msgs.size() >= count;
    }

    RecordingSink sink_a_;
    RecordingSink sink_b_;
    std::unique_ptr<ShmInterface> a_;
    std::unique_ptr<ShmInterface> b_;
};

}  // namespace swy::tl::shm

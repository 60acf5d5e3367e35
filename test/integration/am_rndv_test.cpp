// Rendezvous active messages: the handler gets a descriptor and pulls the data from inside
// the call or later (it returned SWY_INPROGRESS), into a buffer of its size or a smaller one
// (SWY_ERR_MESSAGE_TRUNCATED, nothing written past it), or drops it (returns SWY_OK without
// pulling, or releases the kept descriptor): every sender completes with SWY_OK. Messages for
// an id without a handler are dropped, their senders complete too. Over shm (pipeline),
// shm+cma (zero-copy GET/PUT) and tcp. And a sender that dies while the receiver holds its
// descriptors: pulling one fails with SWY_ERR_CONNECTION_RESET, releasing one is harmless.
#include <signal.h>

#include <string>
#include <vector>

#include "am_util.h"
#include "ep_error_seen.h"

namespace swy_itest {
namespace {

constexpr uint16_t kId = 11;
constexpr uint16_t kUnknownId = 999;

enum Mode : uint32_t { kInside, kLater, kDropReturn, kDropRelease, kTruncate, kModes };

struct Header {
    uint32_t mode;
    uint32_t index;
};

size_t rndv_size(uint32_t index) { return index % 2 == 0 ? 100000 : (size_t{4} << 20) + 3; }

struct Held {
    Mode mode;
    uint32_t index;
    size_t length;
    void* desc;
};

struct Receiver {
    swy_worker_h worker = nullptr;
    std::vector<Held> held;
    std::vector<AmPull> pulls;  // reserved: addresses stay put
    std::vector<uint32_t> pulled_index;
    std::vector<size_t> pulled_length;
    uint32_t seen = 0;
};

swy_status_t on_rndv(void* arg, const void* header, size_t header_length, void* data, size_t length,
                     const swy_am_recv_param_t* param) {
    auto* rx = static_cast<Receiver*>(arg);
    ICHECK((param->flags & SWY_AM_RECV_FLAG_RNDV) != 0);
    Header h{};
    ICHECK(header_length == sizeof(h));
    std::memcpy(&h, header, sizeof(h));
    ICHECK(h.mode < kModes);
    ICHECK_MSG(h.index == rx->seen, "AM #%u arrived as #%u", h.index, rx->seen);
    ++rx->seen;
    ICHECK_MSG(length == rndv_size(h.index), "AM #%u: %zu bytes", h.index, length);
    switch (h.mode) {
        case kInside:
            rx->pulls.emplace_back();
            rx->pulled_index.push_back(h.index);
            rx->pulled_length.push_back(length);
            start_pull(rx->worker, rx->pulls.back(), data, length);
            return SWY_OK;
        case kDropReturn: return SWY_OK;
        default:
            rx->held.push_back({static_cast<Mode>(h.mode), h.index, length, data});
            return SWY_INPROGRESS;
    }
}

void modes(World& w, const std::string& tls) {
    NodeOptions opts;
    opts.config = am_config(tls);
    Node n(w, opts);
    swy_worker_h wk = n.worker();
    Receiver rx;
    rx.worker = wk;
    constexpr uint32_t kPerMode = 4;
    constexpr uint32_t kCount = kPerMode * kModes;
    rx.pulls.reserve(kCount);
    ICHECK_OK(swy_worker_set_am_handler(wk, kId, on_rndv, &rx, 0));
    n.connect_all();
    if (w.rank() == 1) {
        auto deadline = deadline_in(60);
        while (rx.seen < kCount) {
            swy_worker_progress(wk);
            exit_if_aborted();
            ICHECK_MSG(Clock::now() < deadline, "timed out: %u of %u AMs", rx.seen, kCount);
        }
        // Outside the handler: pull, pull short, or drop what was kept.
        for (const Held& h : rx.held) {
            if (h.mode == kDropRelease) {
                swy_am_data_release(wk, h.desc);
                continue;
            }
            const size_t capacity = h.mode == kTruncate ? h.length / 2 + 1 : h.length;
            rx.pulls.emplace_back();
            rx.pulled_index.push_back(h.index);
            rx.pulled_length.push_back(h.length);
            start_pull(wk, rx.pulls.back(), h.desc, capacity);
        }
        deadline = deadline_in(60);
        for (;;) {
            swy_worker_progress(wk);
            bool all = true;
            for (auto& p : rx.pulls)
                all = pull_done(p) && all;
            if (all) break;
            exit_if_aborted();
            ICHECK_MSG(Clock::now() < deadline, "timed out pulling");
        }
        for (size_t k = 0; k < rx.pulls.size(); ++k) {
            AmPull& p = rx.pulls[k];
            const uint32_t i = rx.pulled_index[k];
            const size_t len = rx.pulled_length[k];
            const bool truncated = p.capacity < len;
            ICHECK_STATUS(p.status, truncated ? SWY_ERR_MESSAGE_TRUNCATED : SWY_OK);
            ICHECK_MSG(p.info.length == len, "AM #%u: info.length %zu, sent %zu", i, p.info.length,
                       len);
            ICHECK_PATTERN(p.buffer.data(), p.capacity, pattern_seed(len, 0, i),
                           "AM #%u (%zu of %zu bytes)", i, p.capacity, len);
            ICHECK_MSG(guard_intact(p.buffer.data() + p.capacity),
                       "AM #%u: written past a %zu-byte buffer", i, p.capacity);
        }
        // A descriptor is consumed: pulling or releasing it again is refused.
        if (!rx.held.empty()) {
            AmPull again;
            std::vector<unsigned char> buf(16);
            swy_request_h req = nullptr;
            swy_request_params_t p{};
            ICHECK_STATUS(swy_am_recv_data_nb(wk, rx.held[0].desc, buf.data(), 16, &p, &req),
                          SWY_ERR_INVALID_PARAM);
        }
    } else {
        std::vector<std::vector<unsigned char>> data(kCount);
        std::vector<AmSend> sends;
        for (uint32_t i = 0; i < kCount; ++i) {
            const Header h{i % kModes, i};
            data[i].resize(rndv_size(i));
            fill_pattern(data[i].data(), data[i].size(), pattern_seed(data[i].size(), 0, i));
            sends.push_back(post_am(n.ep(1), kId, &h, sizeof(h), data[i].data(), data[i].size(),
                                    SWY_AM_SEND_FLAG_RNDV));
            // Nobody listens on this id: dropped at the receiver, completed here.
            if (i % 5 == 0) {
                sends.push_back(post_am(n.ep(1), kUnknownId, &h, sizeof(h), data[i].data(),
                                        data[i].size(), i % 10 == 0 ? SWY_AM_SEND_FLAG_RNDV : 0));
                sends.push_back(post_am(n.ep(1), kUnknownId, nullptr, 0, data[i].data(), 8));
            }
        }
        for (size_t k = 0; k < sends.size(); ++k)
            ICHECK_MSG(finish_am(wk, sends[k]) == SWY_OK, "send %zu: %s", k,
                       swy_status_string(sends[k].status));
    }
    n.finish();
}

// ---- a sender that dies while its descriptors are held ----

constexpr int kHeldWord = 50;  // rank 0 holds the descriptors

void sender_dies(World& w, const std::string& tls) {
    NodeOptions opts;
    opts.config = am_config(tls);
    Node n(w, opts);
    swy_worker_h wk = n.worker();
    Receiver rx;
    rx.worker = wk;
    rx.pulls.reserve(4);
    ICHECK_OK(swy_worker_set_am_handler(wk, kId, on_rndv, &rx, 0));
    n.publish();
    ErrorSeen seen;
    n.connect(1 - w.rank(), 0, on_ep_error, &seen);
    w.barrier(wk);
    if (w.rank() == 1) {
        std::vector<unsigned char> data(rndv_size(1));
        fill_pattern(data.data(), data.size(), pattern_seed(data.size(), 0, 1));
        for (uint32_t i = 0; i < 2; ++i) {
            const Header h{kLater, i};
            AmSend s = post_am(n.ep(0), kId, &h, sizeof(h), data.data(), rndv_size(i),
                               SWY_AM_SEND_FLAG_RNDV);
            ICHECK(s.status == SWY_INPROGRESS);
        }
        w.wait_scratch_at_least(kHeldWord, 1, wk);
        raise(SIGKILL);
    }
    auto deadline = deadline_in(30);
    while (rx.held.size() < 2) {
        swy_worker_progress(wk);
        exit_if_aborted();
        ICHECK_MSG(Clock::now() < deadline, "timed out waiting for the descriptors");
    }
    w.scratch(kHeldWord).store(1, std::memory_order_release);
    deadline = deadline_in(20);
    while (seen.calls == 0) {
        swy_worker_progress(wk);
        ICHECK_MSG(Clock::now() < deadline, "rank 1's death went unnoticed for 20 s");
    }
    // Pulling from the dead sender fails (at once, or when its lane's failure is noticed).
    AmPull& p = rx.pulls.emplace_back();
    start_pull(wk, p, rx.held[0].desc, rx.held[0].length);
    deadline = deadline_in(20);
    while (!pull_done(p)) {
        swy_worker_progress(wk);
        ICHECK_MSG(Clock::now() < deadline, "a pull from a dead sender hangs");
    }
    ICHECK_STATUS(p.status, SWY_ERR_CONNECTION_RESET);
    ICHECK(guard_intact(p.buffer.data() + p.capacity));
    swy_am_data_release(wk, rx.held[1].desc);  // dropped: nobody to tell
    for (int i = 0; i < 100; ++i)
        swy_worker_progress(wk);
    n.forget(1);
}

TEST(AmRndv, PullInsideLaterTruncatedAndDroppedShm) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { modes(w, "shm"); }));
}

TEST(AmRndv, PullInsideLaterTruncatedAndDroppedShmCma) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { modes(w, "shm,cma"); }));
}

TEST(AmRndv, PullInsideLaterTruncatedAndDroppedTcp) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { modes(w, "tcp,self"); }));
}

TEST(AmRndv, SenderDiesWhileDescriptorsAreHeldShmCma) {
    RunOptions opts;
    opts.expected_signal[1] = SIGKILL;
    EXPECT_TRUE(run_ranks(
        2, [](World& w) { sender_dies(w, "shm,cma"); }, opts));
}

TEST(AmRndv, SenderDiesWhileDescriptorsAreHeldTcp) {
    RunOptions opts;
    opts.expected_signal[1] = SIGKILL;
    EXPECT_TRUE(run_ranks(
        2, [](World& w) { sender_dies(w, "tcp,self"); }, opts));
}

}  // namespace
}  // namespace swy_itest

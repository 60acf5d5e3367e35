// A worker created with SWY_THREAD_MODE_MULTI is used by several threads at once: every call
// serialises on the worker's lock. Run under ThreadSanitizer in CI (scripts/test.sh).
#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

namespace {

struct Pair {
    swy_context_h ctx = nullptr;
    swy_worker_h sender = nullptr;
    swy_worker_h receiver = nullptr;
    swy_ep_h ep = nullptr;

    explicit Pair(const char* tls) {
        swy_config_h cfg = nullptr;
        EXPECT_EQ(swy_config_read(&cfg), SWY_OK);
        EXPECT_EQ(swy_config_set(cfg, "TLS", tls), SWY_OK);
        swy_context_params_t cp{};
        cp.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG;
        cp.config = cfg;
        EXPECT_EQ(swy_context_create(&cp, &ctx), SWY_OK);
        swy_config_release(cfg);
        swy_worker_params_t wp{};
        wp.field_mask = SWY_WORKER_PARAM_FIELD_THREAD_MODE;
        wp.thread_mode = SWY_THREAD_MODE_MULTI;
        EXPECT_EQ(swy_worker_create(ctx, &wp, &sender), SWY_OK);
        EXPECT_EQ(swy_worker_create(ctx, &wp, &receiver), SWY_OK);
        void* addr = nullptr;
        size_t len = 0;
        EXPECT_EQ(swy_worker_get_address(receiver, &addr, &len), SWY_OK);
        swy_ep_params_t ep_params{};
        ep_params.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
        ep_params.remote_address = addr;
        ep_params.remote_address_length = len;
        EXPECT_EQ(swy_ep_create(sender, &ep_params, &ep), SWY_OK);
        swy_worker_release_address(receiver, addr);
    }
    ~Pair() {
        swy_request_h req = nullptr;
        if (swy_ep_close_nb(ep, SWY_EP_CLOSE_FLUSH, &req) == SWY_INPROGRESS) {
            swy_request_wait(sender, req);
            swy_request_free(req);
        }
        swy_worker_destroy(sender);
        swy_worker_destroy(receiver);
        swy_context_destroy(ctx);
    }
};

uint8_t pattern(uint64_t tag, size_t i) { return static_cast<uint8_t>(tag * 131 + i * 7 + 1); }

}  // namespace

// Two threads send on one endpoint while a third thread receives and a fourth only drives
// progress: every message arrives intact and each sender's messages stay in its order.
TEST(WorkerMultiThread, ConcurrentSendersAndReceiverOverShmDeliverEveryMessageInOrder) {
    Pair p("shm");
    constexpr int kPerThread = 3000;
    constexpr int kThreads = 2;
    const size_t sizes[] = {0, 8, 300, 5000, 20000};
    std::atomic<bool> stop{false};

    std::thread progress_thread([&] {
        while (!stop.load())
            swy_worker_progress(p.sender);
    });
    std::vector<std::thread> senders;
    for (int t = 0; t < kThreads; ++t) {
        senders.emplace_back([&, t] {
            std::vector<uint8_t> buf(20000);
            for (int i = 0; i < kPerThread; ++i) {
                const size_t size = sizes[i % 5];
                const uint64_t tag = (uint64_t(t) << 32) | uint64_t(i);
                for (size_t k = 0; k < size; ++k)
                    buf[k] = pattern(tag, k);
                swy_request_h req = nullptr;
                swy_status_t s = swy_tag_send_nb(p.ep, buf.data(), size, tag, nullptr, &req);
                ASSERT_GE(s, SWY_OK);
                if (s == SWY_INPROGRESS) {
                    ASSERT_EQ(swy_request_wait(p.sender, req), SWY_OK);
                    swy_request_free(req);
                }
            }
        });
    }
    // One receiver per sender thread, wildcard on the low bits: order per sender must hold.
    std::vector<std::thread> receivers;
    std::atomic<int> errors{0};
    for (int t = 0; t < kThreads; ++t) {
        receivers.emplace_back([&, t] {
            std::vector<uint8_t> buf(20000);
            for (int i = 0; i < kPerThread; ++i) {
                swy_request_h req = nullptr;
                swy_tag_recv_info_t info{};
                swy_request_params_t rp{};
                rp.field_mask = SWY_REQ_PARAM_FIELD_RECV_INFO;
                rp.recv_info = &info;
                swy_status_t s =
                    swy_tag_recv_nb(p.receiver, buf.data(), buf.size(), uint64_t(t) << 32,
                                    0xFFFFFFFF00000000ull, &rp, &req);
                if (s == SWY_INPROGRESS) {
                    s = swy_request_wait(p.receiver, req);
                    swy_request_recv_info(req, &info);
                    swy_request_free(req);
                }
                const uint64_t expected_tag = (uint64_t(t) << 32) | uint64_t(i);
                if (s != SWY_OK || info.sender_tag != expected_tag || info.length != sizes[i % 5]) {
                    errors++;
                    continue;
                }
                for (size_t k = 0; k < info.length; ++k) {
                    if (buf[k] != pattern(expected_tag, k)) {
                        errors++;
                        break;
                    }
                }
            }
        });
    }
    for (auto& th : senders)
        th.join();
    for (auto& th : receivers)
        th.join();
    stop.store(true);
    progress_thread.join();
    EXPECT_EQ(errors.load(), 0);
}

// Blocking waits from one thread while another sends: the event fd wakes the waiter.
TEST(WorkerMultiThread, BlockingWaitWakesWhenAMessageArrives) {
    Pair p("shm");
    std::atomic<bool> received{false};
    std::thread waiter([&] {
        uint64_t value = 0;
        swy_request_h req = nullptr;
        swy_status_t s =
            swy_tag_recv_nb(p.receiver, &value, sizeof(value), 7, ~0ull, nullptr, &req);
        ASSERT_EQ(s, SWY_INPROGRESS);
        while (swy_request_test(req) == SWY_INPROGRESS) {
            swy_worker_wait(p.receiver, 2000);
            swy_worker_progress(p.receiver);
        }
        EXPECT_EQ(swy_request_test(req), SWY_OK);
        EXPECT_EQ(value, 0xfeedull);
        swy_request_free(req);
        received = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    uint64_t value = 0xfeed;
    swy_request_h req = nullptr;
    swy_status_t s = swy_tag_send_nb(p.ep, &value, sizeof(value), 7, nullptr, &req);
    ASSERT_GE(s, SWY_OK);
    if (s == SWY_INPROGRESS) {
        swy_request_wait(p.sender, req);
        swy_request_free(req);
    }
    waiter.join();
    EXPECT_TRUE(received.load());
}

// One-sided operations over tcp when the target dies: a flush means "performed at the
// target", so a flush (of the endpoint or of the worker) that was under way when the target
// was SIGKILLed, or a worker flush started after it died with puts no flush had covered,
// completes with an error, never SWY_OK; so does a get it never answered. The target stops
// progressing first, so none of these can have been performed.
#include <signal.h>

#include <vector>

#include "ep_error_seen.h"
#include "rma_util.h"

namespace swy_itest {
namespace {

constexpr int kDieWord = 480;  // rank 0 → rank 1: die now
constexpr size_t kWindow = 1u << 20;

NodeOptions tcp_options() {
    NodeOptions o;
    o.config = {{"TLS", "tcp,self"}, {"NET_DEVICES", "lo"}};
    return o;
}

bool is_peer_failure(swy_status_t st) {
    return st == SWY_ERR_CONNECTION_RESET || st == SWY_ERR_ENDPOINT_CLOSED ||
           st == SWY_ERR_TIMED_OUT;
}

/// Rank 1: expose a window, publish its key, stop progressing (nothing sent to it is
/// performed from now on) and die when rank 0 says so.
void target_then_die(World& w, Node& n) {
    Exposed win = expose(n.context(), true, kWindow);
    std::memset(win.base, 0x11, kWindow);
    publish_key(w, 0, n.context(), win);
    w.wait_scratch_at_least(kDieWord, 1, nullptr, 60);
    raise(SIGKILL);
    _exit(0);  // not reached
}

/// Rank 0 runs @p body against rank 1 (connected over tcp, window exposed, key unpacked at
/// @p base), which stops progressing and dies when rank 0 stores kDieWord; afterwards rank 0
/// forgets the dead peer and finishes.
template <typename Body>
::testing::AssertionResult against_a_target_that_dies(Body body) {
    RunOptions o;
    o.expected_signal[1] = SIGKILL;
    o.timeout_s = 60;
    return run_ranks(
        2,
        [&body](World& w) {
            Node n(w, tcp_options());
            n.publish();
            ErrorSeen seen;
            n.connect(1 - w.rank(), 0, on_ep_error, &seen);
            w.barrier(n.worker());
            if (w.rank() == 1) target_then_die(w, n);
            swy_rkey_h key = unpack(n.ep(1), key_bytes(w, 0, 1));
            body(w, n, seen, key, remote_base(w, 0, 1));
            swy_rkey_destroy(key);
            n.forget(1);
            n.finish(1);
        },
        o);
}

// Puts, a get, an endpoint flush and a worker flush are outstanding when the target dies:
// every one of them that had not completed ends with the peer's failure.
TEST(RmaTcpFailure, FlushesUnderWayWhenTheTargetDiesFail) {
    ASSERT_TRUE(against_a_target_that_dies([](World& w, Node& n, const ErrorSeen& seen,
                                              swy_rkey_h key, uint64_t base) {
        std::vector<unsigned char> small(8, 0xA5), big(kWindow, 0x5A), back(64, 0);
        swy_request_h put_small = nullptr, put_big = nullptr, get = nullptr;
        swy_request_h ep_flush = nullptr, worker_flush = nullptr;
        const swy_status_t s_small =
            swy_put_nb(n.ep(1), small.data(), small.size(), base, key, nullptr, &put_small);
        const swy_status_t s_big =
            swy_put_nb(n.ep(1), big.data(), big.size(), base, key, nullptr, &put_big);
        ICHECK(s_small == SWY_OK || s_small == SWY_INPROGRESS);
        ICHECK(s_big == SWY_OK || s_big == SWY_INPROGRESS);
        ICHECK_STATUS(swy_get_nb(n.ep(1), back.data(), back.size(), base, key, nullptr, &get),
                      SWY_INPROGRESS);
        ICHECK_STATUS(swy_ep_flush_nb(n.ep(1), nullptr, &ep_flush), SWY_INPROGRESS);
        ICHECK_STATUS(swy_worker_flush_nb(n.worker(), nullptr, &worker_flush), SWY_INPROGRESS);
        // The target does not progress: nothing can be answered, whatever we do.
        for (int i = 0; i < 20000; ++i)
            swy_worker_progress(n.worker());
        ICHECK(swy_request_test(get) == SWY_INPROGRESS);
        ICHECK(swy_request_test(ep_flush) == SWY_INPROGRESS);
        ICHECK(swy_request_test(worker_flush) == SWY_INPROGRESS);

        w.scratch(kDieWord).store(1, std::memory_order_release);
        const swy_status_t g = wait_request(n.worker(), get, "get from the dead target", 40);
        const swy_status_t ef = wait_request(n.worker(), ep_flush, "endpoint flush", 40);
        const swy_status_t wf = wait_request(n.worker(), worker_flush, "worker flush", 40);
        ICHECK_MSG(is_peer_failure(g), "get: %s", swy_status_string(g));
        ICHECK_MSG(is_peer_failure(ef), "endpoint flush: %s", swy_status_string(ef));
        ICHECK_MSG(is_peer_failure(wf), "worker flush: %s", swy_status_string(wf));
        for (swy_request_h r : {get, ep_flush, worker_flush})
            swy_request_free(r);
        // The big put may still have been waiting for room when the target died: then it
        // failed too; once complete it meant only "buffer reusable".
        if (s_big == SWY_INPROGRESS) {
            const swy_status_t pb = wait_request(n.worker(), put_big, "big put", 40);
            ICHECK_MSG(pb == SWY_OK || is_peer_failure(pb), "big put: %s", swy_status_string(pb));
            swy_request_free(put_big);
        }
        if (s_small == SWY_INPROGRESS) {
            (void)wait_request(n.worker(), put_small, "small put", 40);
            swy_request_free(put_small);
        }
        ICHECK(seen.calls == 1);
        // The endpoint is failed: a new flush of it says so at once.
        swy_request_h again = nullptr;
        const swy_status_t a = swy_ep_flush_nb(n.ep(1), nullptr, &again);
        ICHECK_MSG(is_peer_failure(a), "flush of the failed endpoint: %s", swy_status_string(a));
    }));
}

// The puts completed (locally) before the target died, and no flush was under way: the first
// worker flush afterwards must not say they were performed.
TEST(RmaTcpFailure, WorkerFlushAfterTheTargetDiedWithUnflushedPutsFails) {
    ASSERT_TRUE(against_a_target_that_dies([](World& w, Node& n, const ErrorSeen& seen,
                                              swy_rkey_h key, uint64_t base) {
        std::vector<unsigned char> small(8, 0xA5);
        ICHECK_OK(put(n.worker(), n.ep(1), small.data(), small.size(), base, key));
        w.scratch(kDieWord).store(1, std::memory_order_release);
        const auto deadline = deadline_in(40);
        while (seen.calls == 0) {
            ICHECK_MSG(Clock::now() < deadline, "the target's death was never noticed");
            swy_worker_progress(n.worker());
        }
        ICHECK_MSG(is_peer_failure(seen.status), "endpoint error: %s",
                   swy_status_string(seen.status));
        swy_request_h req = nullptr;
        swy_status_t wf = swy_worker_flush_nb(n.worker(), nullptr, &req);
        if (wf == SWY_INPROGRESS) wf = wait_request(n.worker(), req, "worker flush", 40);
        if (req != nullptr) swy_request_free(req);
        ICHECK_MSG(is_peer_failure(wf), "worker flush after the target died: %s",
                   swy_status_string(wf));
        // Reported once: a worker flush after that has nothing outstanding.
        req = nullptr;
        wf = swy_worker_flush_nb(n.worker(), nullptr, &req);
        if (wf == SWY_INPROGRESS) wf = wait_request(n.worker(), req, "second worker flush", 40);
        if (req != nullptr) swy_request_free(req);
        ICHECK_STATUS(wf, SWY_OK);
        swy_request_h ef = nullptr;
        const swy_status_t e = swy_ep_flush_nb(n.ep(1), nullptr, &ef);
        ICHECK_MSG(is_peer_failure(e), "flush of the failed endpoint: %s", swy_status_string(e));
    }));
}

}  // namespace
}  // namespace swy_itest

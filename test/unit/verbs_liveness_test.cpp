// Failure detection of an idle verbs connection: with nothing in flight RC itself notices
// nothing, so a dead peer is seen only through the EOF of the handshake socket, which progress
// looks at about every VerbsInterface::kCmPollIntervalNs (not every call: a system call per
// few progress calls was a large part of the 8-byte round trip on rxe). Needs an RDMA device
// (rxe0 in the VM: test/verbs/run-vm.sh); skips without one.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <switchyard/switchyard.h>

#include "verbs_test_node.h"

namespace {

using Clock = std::chrono::steady_clock;

using swy::test::VerbsNode;

struct Errors {
    int calls = 0;
    swy_status_t status = SWY_OK;
};

void count_error(void* arg, swy_ep_h, swy_status_t status) {
    auto* e = static_cast<Errors*>(arg);
    ++e->calls;
    e->status = status;
}

}  // namespace

TEST(VerbsLiveness, IdlePeerDeathIsNoticedWithinTwoSecondsAndIdlenessIsNot) {
    {
        VerbsNode probe;
        if (!probe.has_verbs()) {
            GTEST_SKIP() << "no RDMA device: the verbs transport did not open "
                            "(run test/verbs/run-vm.sh)";
        }
    }
    int c2p[2];
    ASSERT_EQ(pipe(c2p), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // The victim: publishes its address and progresses (answering the handshake) until
        // it is killed.
        close(c2p[0]);
        VerbsNode v;
        const auto len = static_cast<uint32_t>(v.address.size());
        if (write(c2p[1], &len, 4) != 4 ||
            write(c2p[1], v.address.data(), len) != static_cast<ssize_t>(len)) {
            _exit(2);
        }
        const auto end = Clock::now() + std::chrono::seconds(120);
        while (Clock::now() < end)
            swy_worker_progress(v.worker);
        _exit(0);
    }
    close(c2p[1]);
    VerbsNode a;
    uint32_t len = 0;
    ASSERT_EQ(read(c2p[0], &len, 4), 4);
    ASSERT_GT(len, 0u) << "the child has no address";
    std::vector<uint8_t> victim(len);
    ASSERT_EQ(read(c2p[0], victim.data(), len), static_cast<ssize_t>(len));
    close(c2p[0]);

    Errors errors;
    swy_ep_params_t p{};
    p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS | SWY_EP_PARAM_FIELD_ERR_HANDLER;
    p.remote_address = victim.data();
    p.remote_address_length = victim.size();
    p.err_cb = count_error;
    p.err_arg = &errors;
    swy_ep_h ep = nullptr;
    ASSERT_EQ(swy_ep_create(a.worker, &p, &ep), SWY_OK);
    // One eager message: it leaves once the handshake is done, so the connection is up.
    const uint64_t value = 42;
    swy_request_h sr = nullptr;
    ASSERT_GE(swy_tag_send_nb(ep, &value, sizeof(value), 7, nullptr, &sr), 0);
    const auto wired_by = Clock::now() + std::chrono::seconds(60);
    while (sr != nullptr && swy_request_test(sr) == SWY_INPROGRESS && Clock::now() < wired_by) {
        swy_worker_progress(a.worker);
    }
    ASSERT_TRUE(sr == nullptr || swy_request_test(sr) == SWY_OK) << "the connection never came up";
    if (sr != nullptr) swy_request_free(sr);

    // Idle and alive for several poll intervals: no false alarm.
    const auto idle_until = Clock::now() + std::chrono::milliseconds(200);
    while (Clock::now() < idle_until)
        swy_worker_progress(a.worker);
    EXPECT_EQ(errors.calls, 0) << "an idle, live peer was reported failed";

    kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);  // its descriptors are closed now
    const auto dead = Clock::now();
    while (errors.calls == 0 && Clock::now() - dead < std::chrono::seconds(10)) {
        swy_worker_progress(a.worker);
    }
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - dead).count();
    std::printf("[ liveness ] idle peer's death noticed after %.1f ms of progress\n", ms);
    EXPECT_EQ(errors.calls, 1) << "the death of an idle peer was never reported";
    EXPECT_LT(errors.status, 0);
    // A bound on detection, not a benchmark: a few coarse-clock ticks plus the slowness of a
    // TCG guest on a loaded host (80 ms seen) stay far below it; a poll interval of seconds,
    // or none, does not.
    EXPECT_LT(ms, 2000.0);
    swy_request_h close_req = nullptr;
    swy_ep_close_nb(ep, SWY_EP_CLOSE_FORCE, &close_req);
    if (close_req != nullptr) swy_request_free(close_req);
}

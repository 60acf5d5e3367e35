// fork() with an open worker (issue 18): the child's copy of the worker is inert. Every call
// on it, its endpoints and its requests returns SWY_ERR_UNSUPPORTED; its progress takes
// nothing from the parent's rings or sockets; destroying it closes nothing of the parent's.
// The parent then receives every message its peer sent while the child was busy, and its own
// sends still arrive.
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "multiproc.h"

namespace swy_itest {
namespace {

constexpr int kChildLooping = 10;  // scratch: the child's progress loop is running
constexpr int kPeerSent = 11;      // scratch: rank 0 posted every message
constexpr int kMessages = 40;
constexpr swy_tag_t kStream = 0xF0C0000000000000ull;
constexpr swy_tag_t kPosted = 0xF0C1000000000000ull;  // received by a request made before fork
constexpr swy_tag_t kBack = 0xF0C2000000000000ull;    // rank 1 to rank 0 after the child is gone

size_t stream_size(int i) { return 8 + static_cast<size_t>(i) * 97 % 2000; }

/// Everything the child does with its inherited copy. @return a bit per failed check (0: ok).
int child_body(World& w, swy_worker_h worker, swy_ep_h ep, swy_request_h posted) {
    int failed = 0;
    auto expect = [&](bool ok, int bit, const char* what) {
        if (!ok) {
            fprintf(stderr, "[fork child of rank %d] %s\n", w.rank(), what);
            failed |= 1 << bit;
        }
    };
    // Progress while the peer sends to the parent: before the fix this drained the parent's
    // ring (or socket) into the child's copy of the matcher.
    w.scratch(kChildLooping).store(1, std::memory_order_release);
    unsigned events = 0;
    const auto deadline = deadline_in(20);
    while (w.scratch(kPeerSent).load(std::memory_order_acquire) == 0 && Clock::now() < deadline)
        events += swy_worker_progress(worker);
    for (int i = 0; i < 20000; ++i)
        events += swy_worker_progress(worker);
    expect(events == 0, 0, "swy_worker_progress did work on an inherited worker");

    char buf[64] = {};
    swy_request_h r = nullptr;
    expect(
        swy_tag_recv_nb(worker, buf, sizeof(buf), kStream, 0, nullptr, &r) == SWY_ERR_UNSUPPORTED,
        1, "swy_tag_recv_nb on an inherited worker was not refused");
    expect(swy_tag_send_nb(ep, buf, 8, kStream, nullptr, &r) == SWY_ERR_UNSUPPORTED, 2,
           "swy_tag_send_nb on an inherited endpoint was not refused");
    expect(swy_request_test(posted) == SWY_ERR_UNSUPPORTED, 3,
           "swy_request_test on an inherited request was not refused");
    expect(swy_request_free(posted) == SWY_ERR_UNSUPPORTED, 4,
           "swy_request_free on an inherited request was not refused");
    swy_request_h c = nullptr;
    expect(swy_ep_close_nb(ep, SWY_EP_CLOSE_FORCE, &c) == SWY_ERR_UNSUPPORTED, 5,
           "swy_ep_close_nb on an inherited endpoint was not refused");
    void* addr = nullptr;
    size_t len = 0;
    expect(swy_worker_get_address(worker, &addr, &len) == SWY_ERR_UNSUPPORTED, 6,
           "swy_worker_get_address on an inherited worker was not refused");
    expect(swy_worker_arm(worker) == SWY_ERR_UNSUPPORTED, 7,
           "swy_worker_arm on an inherited worker was not refused");
    // Before the fix: closed the parent's endpoints and released its shared-memory sender
    // slots, so the parent's next send "succeeded" into nowhere.
    swy_worker_destroy(worker);
    return failed;
}

void rank_forker(World& w, const NodeOptions& opts) {
    Node n(w, opts);
    n.connect_all();
    uint64_t posted_buf = 0;
    Recv posted = post_recv(n.worker(), &posted_buf, sizeof(posted_buf), kPosted);
    ICHECK(posted.req != nullptr);

    fflush(nullptr);
    const pid_t child = fork();
    ICHECK_MSG(child >= 0, "fork failed");
    if (child == 0) _exit(child_body(w, n.worker(), n.ep(0), posted.req));

    // The parent does not progress until the child is done: whatever the child could take,
    // it has had every chance to.
    int status = 0;
    const auto deadline = deadline_in(30);
    pid_t done = 0;
    while ((done = waitpid(child, &status, WNOHANG)) == 0 && Clock::now() < deadline)
        usleep(1000);
    if (done == 0) {
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
    }
    ICHECK_MSG(done == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
               "the fork()ed child failed its checks (%s)", describe_status(status).c_str());

    // Every message the peer sent while the child was looping is here, byte for byte.
    for (int i = 0; i < kMessages; ++i) {
        std::vector<unsigned char> buf(stream_size(i) + kGuardBytes, kGuardByte);
        Recv r = post_recv(n.worker(), buf.data(), stream_size(i), kStream | i);
        ICHECK_STATUS(finish_recv(n.worker(), r, 10), SWY_OK);
        ICHECK_PATTERN(buf.data(), stream_size(i), pattern_seed(stream_size(i), 0, i),
                       "message %d after the child's progress", i);
        ICHECK(guard_intact(buf.data() + stream_size(i)));
    }
    ICHECK_STATUS(finish_recv(n.worker(), posted, 10), SWY_OK);
    ICHECK(posted_buf == 0x5EED);
    // The parent's sends still arrive after the child destroyed its copy.
    uint64_t back = 0xBAC4;
    send_blocking(n.worker(), n.ep(0), &back, sizeof(back), kBack);
    n.finish();
}

void rank_peer(World& w, const NodeOptions& opts) {
    Node n(w, opts);
    n.connect_all();
    w.wait_scratch_at_least(kChildLooping, 1, n.worker());
    std::vector<std::vector<unsigned char>> bufs;
    std::vector<Send> sends;
    for (int i = 0; i < kMessages; ++i) {
        bufs.emplace_back(stream_size(i));
        fill_pattern(bufs.back().data(), stream_size(i), pattern_seed(stream_size(i), 0, i));
        sends.push_back(post_send(n.ep(1), bufs.back().data(), stream_size(i), kStream | i));
    }
    uint64_t word = 0x5EED;
    sends.push_back(post_send(n.ep(1), &word, sizeof(word), kPosted));
    // Let the bytes reach the parent's ring or socket before the child stops looping.
    for (int i = 0; i < 2000; ++i)
        swy_worker_progress(n.worker());
    w.scratch(kPeerSent).store(1, std::memory_order_release);
    for (Send& s : sends)
        ICHECK_STATUS(finish_send(n.worker(), s, 30), SWY_OK);
    uint64_t back = 0;
    Recv r = post_recv(n.worker(), &back, sizeof(back), kBack);
    ICHECK_STATUS(finish_recv(n.worker(), r, 10), SWY_OK);
    ICHECK(back == 0xBAC4);
    n.finish();
}

class ForkInert : public ::testing::TestWithParam<std::string> {};

TEST_P(ForkInert, ChildCopyOfAWorkerIsRefusedAndTakesNothingFromTheParent) {
    NodeOptions opts;
    opts.config = {{"TLS", GetParam()}};
    if (GetParam() == "tcp") opts.config.push_back({"NET_DEVICES", "lo"});
    EXPECT_TRUE(run_ranks(2, [&](World& w) {
        if (w.rank() == 0) {
            rank_peer(w, opts);
        } else {
            rank_forker(w, opts);
        }
    }));
}

INSTANTIATE_TEST_SUITE_P(Transports, ForkInert, ::testing::Values("shm", "tcp"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace swy_itest

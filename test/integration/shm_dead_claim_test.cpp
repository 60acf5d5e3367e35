// A sender SIGKILLed between claiming a shared-FIFO cell and publishing it (issue #18): the
// cell stays claimed forever, and every message behind it in the receiver's FIFO, from any
// sender, used to wait for it. The receiver must skip the dead sender's cell and deliver every
// byte from the live sender. The dying rank uses the transport's test hook
// (SWY_SHM_TEST_DIE_AFTER_CLAIM), which kills the process at exactly that point.
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "multiproc.h"

namespace swy_itest {
namespace {

constexpr int kPidWord = 200;   // rank 1 stores its pid here
constexpr int kSizeWord = 201;  // rank 0 stores the eager fragment size of its lanes here
constexpr swy_tag_t kFromDying = 0xDC01000000000000ull;
constexpr swy_tag_t kFromLive = 0xDC02000000000000ull;

/// Every rank uses the shared FIFO only (no PIO ring): that is the lane a dead claim blocks.
NodeOptions fifo_only(uint32_t die_after_claim = 0) {
    NodeOptions o;
    o.config = {{"TLS", "shm"}, {"SHM_PIO_SLOTS", "0"}};
    if (die_after_claim != 0)
        o.config.emplace_back("SHM_TEST_DIE_AFTER_CLAIM", std::to_string(die_after_claim));
    return o;
}

/// Sizes the live sender sends after the death: around the eager fragment size of the FIFO
/// (one cell, two cells) and a rendezvous, whose replies travel on the receiver's reply lane.
std::vector<size_t> live_sizes(size_t bc) {
    return {0, 8, bc - 1, bc, bc + 1, 2 * bc + 17, 1u << 20, 8, bc};
}

void wait_until_dead(World& w, swy_worker_h worker) {
    w.wait_scratch_at_least(kPidWord, 1, worker, 30);
    const int pid = static_cast<int>(w.scratch(kPidWord).load());
    int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    if (fd < 0) return;  // already reaped
    pollfd pfd{fd, POLLIN, 0};
    auto deadline = deadline_in(30);
    while (poll(&pfd, 1, 10) == 0) {
        swy_worker_progress(worker);
        exit_if_aborted();
        ICHECK_MSG(Clock::now() < deadline, "rank 1 did not die at its claim");
    }
    close(fd);
}

void receiver(World& w, uint32_t dying_messages) {
    Node n(w, fifo_only());
    n.publish();
    w.barrier(n.worker(), 0, 3);
    // The messages rank 1 published before its fatal claim arrive intact.
    std::vector<std::vector<unsigned char>> dbufs(dying_messages, std::vector<unsigned char>(64));
    std::vector<Recv> drecvs;
    for (uint32_t i = 0; i < dying_messages; ++i)
        drecvs.push_back(post_recv(n.worker(), dbufs[i].data(), 64, kFromDying | i));
    const size_t bc = static_cast<size_t>(w.scratch(kSizeWord).load());
    const std::vector<size_t> sizes = live_sizes(bc);
    std::vector<std::vector<unsigned char>> bufs;
    std::vector<Recv> recvs;
    for (size_t i = 0; i < sizes.size(); ++i) {
        bufs.emplace_back(sizes[i] + kGuardBytes, kGuardByte);
        recvs.push_back(post_recv(n.worker(), bufs[i].data(), sizes[i], kFromLive | i));
    }
    for (uint32_t i = 0; i < dying_messages; ++i) {
        ICHECK_OK(finish_recv(n.worker(), drecvs[i], 20));
        ICHECK_PATTERN(dbufs[i].data(), 64, pattern_seed(64, 1, i), "message %u of rank 1", i);
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
        swy_status_t st = finish_recv(n.worker(), recvs[i], 20);
        ICHECK_MSG(st == SWY_OK, "%zu bytes from the live sender behind the dead claim: %d (%s)",
                   sizes[i], (int)st, swy_status_string(st));
        ICHECK_MSG(recvs[i].info.length == sizes[i], "message %zu: length %zu, sent %zu", i,
                   recvs[i].info.length, sizes[i]);
        ICHECK_PATTERN(bufs[i].data(), sizes[i], pattern_seed(sizes[i], 2, i),
                       "%zu bytes from the live sender", sizes[i]);
        ICHECK(guard_intact(bufs[i].data() + sizes[i]));
    }
    n.finish(2, 1);
}

void dying_sender(World& w, uint32_t dying_messages) {
    // Its claim number dying_messages + 1 is fatal: the messages before it are published.
    Node n(w, fifo_only(dying_messages + 1));
    w.scratch(kPidWord).store(static_cast<uint64_t>(getpid()));
    n.publish();
    n.connect(0);
    w.barrier(n.worker(), 0, 3);
    std::vector<unsigned char> buf(64);
    for (uint32_t i = 0;; ++i) {
        fill_pattern(buf.data(), buf.size(), pattern_seed(64, 1, i));
        send_blocking(n.worker(), n.ep(0), buf.data(), buf.size(), kFromDying | i);
        ICHECK_MSG(i <= dying_messages, "the test hook did not kill rank 1");
    }
}

void live_sender(World& w) {
    Node n(w, fifo_only());
    n.publish();
    n.connect(0);
    w.scratch(kSizeWord).store(n.query(0).bcopy_max_size);
    w.barrier(n.worker(), 0, 3);
    wait_until_dead(w, n.worker());  // so that its cell is ahead of every one of ours
    const std::vector<size_t> sizes = live_sizes(n.query(0).bcopy_max_size);
    std::vector<std::vector<unsigned char>> bufs;
    std::vector<Send> sends;
    for (size_t i = 0; i < sizes.size(); ++i) {
        bufs.emplace_back(sizes[i]);
        fill_pattern(bufs[i].data(), sizes[i], pattern_seed(sizes[i], 2, i));
        sends.push_back(post_send(n.ep(0), bufs[i].data(), sizes[i], kFromLive | i));
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
        swy_status_t st = finish_send(n.worker(), sends[i], 20);
        ICHECK_MSG(st == SWY_OK, "send %zu (%zu bytes) gave %d (%s)", i, sizes[i], (int)st,
                   swy_status_string(st));
    }
    n.finish(2, 1);
}

::testing::AssertionResult run_with_death_at(uint32_t dying_messages) {
    RunOptions opts;
    opts.timeout_s = 45;
    opts.expected_signal[1] = SIGKILL;
    return run_ranks(
        3,
        [dying_messages](World& w) {
            if (w.rank() == 0)
                receiver(w, dying_messages);
            else if (w.rank() == 1)
                dying_sender(w, dying_messages);
            else
                live_sender(w);
        },
        opts);
}

// The receiver knows the dead sender (it delivered its earlier messages, so it watches it).
TEST(ShmDeadClaim, CellOfSenderKilledMidStreamIsSkipped) { EXPECT_TRUE(run_with_death_at(20)); }

// The fatal claim is the sender's first message: the receiver never heard of it.
TEST(ShmDeadClaim, CellOfSenderKilledOnItsFirstMessageIsSkipped) {
    EXPECT_TRUE(run_with_death_at(0));
}

}  // namespace
}  // namespace swy_itest

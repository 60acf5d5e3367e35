// Failure detection on established tcp connections must never turn a slow peer into lost data
// (issue #18), and what it reports must say what happened:
//  - a receiver stopped (SIGSTOP) for longer than every timeout, while a sender fills its
//    socket, is slow, not dead: nothing fails, every byte arrives after SIGCONT;
//  - a send completes only once the peer's kernel acknowledged its bytes: while the receiver
//    is stopped, no more completes than its receive buffer can hold, and when it then dies
//    the rest fail with an error, never with success;
//  - a peer that exits in order (worker destroyed) is reported SWY_ERR_ENDPOINT_CLOSED, one
//    that is SIGKILLed SWY_ERR_CONNECTION_RESET.
// SWY_TLS=tcp,self on loopback.
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "ep_error_seen.h"
#include "multiproc.h"

namespace swy_itest {
namespace {

constexpr int kPidWord = 300;      // + rank: getpid() of that rank
constexpr int kStoppedWord = 310;  // the receiver is about to stop itself
constexpr int kDoneWord = 311;     // the sender finished its part
constexpr swy_tag_t kTag = 0x51000000ull;
constexpr size_t kMessage = 64u << 10;  // eager over tcp (fragments), well below rendezvous
constexpr int kMessages = 256;          // 16 MiB: far more than the socket buffers hold

/// Short timeouts: the old rule (kernel TCP_USER_TIMEOUT = 3 x keepalive) aborted a
/// connection whose receiver had not read for 3 s.
NodeOptions tcp_options() {
    NodeOptions o;
    o.config = {{"TLS", "tcp,self"},
                {"NET_DEVICES", "lo"},
                {"TCP_KEEPALIVE", "1s"},
                {"TCP_USER_TIMEOUT", "1s"}};
    return o;
}

/// Most bytes the socket of a process that never read can hold: tcp_rmem's default (the
/// kernel grows a receive buffer only as its process reads), plus slack. An upper bound for
/// what the stopped peer's kernel can have acknowledged.
size_t max_receive_buffer() {
    std::ifstream f("/proc/sys/net/ipv4/tcp_rmem");
    size_t lo = 0, def = 0, max = 0;
    f >> lo >> def >> max;
    return (def != 0 ? def : size_t{128} << 10) + kMessage;
}

/// Progresses for @p seconds.
void progress_for(swy_worker_h w, double seconds) {
    auto deadline = deadline_in(seconds);
    while (Clock::now() < deadline)
        swy_worker_progress(w);
}

/// Rank 0 sends kMessages to rank 1, which stops itself right away. @p body_while_stopped
/// runs in rank 0 while rank 1 is stopped (after the sends were posted).
struct StoppedReceiver {
    World& w;
    Node& n;
    std::vector<std::vector<unsigned char>> bufs;
    std::vector<Send> sends;

    StoppedReceiver(World& world, Node& node) : w(world), n(node) {}

    void post_all() {
        bufs.resize(kMessages);
        for (int i = 0; i < kMessages; ++i) {
            bufs[i].resize(kMessage);
            fill_pattern(bufs[i].data(), kMessage, pattern_seed(kMessage, 0, i));
            sends.push_back(post_send(n.ep(1), bufs[i].data(), kMessage, kTag | i));
        }
    }
    size_t completed_ok() const {
        size_t k = 0;
        for (const Send& s : sends)
            if (s.done && s.status == SWY_OK) ++k;
        return k;
    }
};

void poll_sends(swy_worker_h wk, std::vector<Send>& sends) {
    for (Send& s : sends) {
        if (s.done) continue;
        swy_status_t st = swy_request_test(s.req);
        if (st == SWY_INPROGRESS) continue;
        s.done = true;
        s.status = st;
        swy_request_free(s.req);
        s.req = nullptr;
    }
    swy_worker_progress(wk);
}

TEST(TcpSlowPeer, AReceiverStoppedLongerThanEveryTimeoutLosesNothing) {
    EXPECT_TRUE(run_ranks(
        2,
        [](World& w) {
            Node n(w, tcp_options());
            ErrorSeen seen;
            n.publish();
            n.connect(1 - w.rank(), 0, on_ep_error, &seen);
            w.scratch(kPidWord + w.rank()).store(static_cast<uint64_t>(getpid()));
            w.barrier(n.worker());
            swy_worker_h wk = n.worker();
            if (w.rank() == 1) {
                // Post nothing and stop: the messages pile up in both kernels, then in the
                // sender's queue, and the sender's window goes to zero.
                w.scratch(kStoppedWord).store(1, std::memory_order_release);
                raise(SIGSTOP);
                std::vector<unsigned char> buf(kMessage);
                for (int i = 0; i < kMessages; ++i) {
                    Recv r = post_recv(wk, buf.data(), kMessage, kTag | i);
                    ICHECK_OK(finish_recv(wk, r, 30));
                    ICHECK_PATTERN(buf.data(), kMessage, pattern_seed(kMessage, 0, i), "message %d",
                                   i);
                }
                w.wait_scratch_at_least(kDoneWord, 1, wk);
                ICHECK_MSG(seen.calls == 0, "the receiver's endpoint failed: %s",
                           swy_status_string(seen.status));
                n.finish();
                return;
            }
            StoppedReceiver s(w, n);
            w.wait_scratch_at_least(kStoppedWord, 1);
            s.post_all();
            // Four times the keepalive and the user timeout, the sender busy all along.
            auto until = deadline_in(4.0);
            while (Clock::now() < until)
                poll_sends(wk, s.sends);
            ICHECK_MSG(seen.calls == 0, "a stopped peer was taken for a dead one: %s",
                       swy_status_string(seen.status));
            kill(static_cast<pid_t>(w.scratch(kPidWord + 1).load()), SIGCONT);
            for (Send& send : s.sends)
                ICHECK_OK(finish_send(wk, send, 30));
            w.scratch(kDoneWord).store(1, std::memory_order_release);
            ICHECK_MSG(seen.calls == 0, "the sender's endpoint failed: %s",
                       swy_status_string(seen.status));
            n.finish();
        },
        RunOptions{60.0, {}}));
}

TEST(TcpSlowPeer, SendsCompleteOnlyOnceAcknowledgedAndTheRestFailWhenThePeerDies) {
    EXPECT_TRUE(run_ranks(
        2,
        [](World& w) {
            Node n(w, tcp_options());
            ErrorSeen seen;
            n.publish();
            n.connect(1 - w.rank(), 0, on_ep_error, &seen);
            w.scratch(kPidWord + w.rank()).store(static_cast<uint64_t>(getpid()));
            w.barrier(n.worker());
            swy_worker_h wk = n.worker();
            if (w.rank() == 1) {
                w.scratch(kStoppedWord).store(1, std::memory_order_release);
                raise(SIGSTOP);
                pause();  // killed while stopped; never gets here in a passing run
                _exit(0);
            }
            StoppedReceiver s(w, n);
            w.wait_scratch_at_least(kStoppedWord, 1);
            s.post_all();
            progress_for(wk, 0.2);
            auto until = deadline_in(1.0);
            while (Clock::now() < until)
                poll_sends(wk, s.sends);
            const size_t ok = s.completed_ok();
            const size_t bound = max_receive_buffer();
            fprintf(stderr,
                    "%zu of %d sends (%zu KiB) completed while the peer was stopped; "
                    "its kernel can hold at most %zu KiB\n",
                    ok, kMessages, ok * kMessage / 1024, bound / 1024);
            ICHECK_MSG(ok * kMessage <= bound,
                       "%zu KiB of sends completed, more than the stopped peer's kernel can have "
                       "acknowledged (%zu KiB): completed sends were only queued",
                       ok * kMessage / 1024, bound / 1024);
            ICHECK_MSG(ok < static_cast<size_t>(kMessages), "every send completed");
            const pid_t victim = static_cast<pid_t>(w.scratch(kPidWord + 1).load());
            kill(victim, SIGKILL);
            kill(victim, SIGCONT);
            for (size_t i = 0; i < s.sends.size(); ++i) {
                Send& send = s.sends[i];
                const bool was_done = send.done;
                swy_status_t st = finish_send(wk, send, 30);
                if (was_done) continue;
                ICHECK_MSG(st != SWY_OK,
                           "send %zu, not acknowledged before the peer died, "
                           "completed with success",
                           i);
            }
            auto deadline = deadline_in(10.0);
            while (seen.calls == 0 && Clock::now() < deadline)
                swy_worker_progress(wk);
            ICHECK_MSG(seen.status == SWY_ERR_CONNECTION_RESET,
                       "the killed peer was reported with %d (%s)", (int)seen.status,
                       swy_status_string(seen.status));
            n.forget(1);
            n.finish(1, 1);
        },
        RunOptions{60.0, {{1, SIGKILL}}}));
}

TEST(TcpSlowPeer, AnOrderlyExitIsEndpointClosedAndAKillIsAReset) {
    EXPECT_TRUE(run_ranks(
        3,
        [](World& w) {
            Node n(w, tcp_options());
            ErrorSeen seen[3];
            n.publish();
            if (w.rank() == 0) {
                for (int r = 1; r < 3; ++r)
                    n.connect(r, 0, on_ep_error, &seen[r]);
            } else {
                n.connect(0);
            }
            w.barrier(n.worker());
            swy_worker_h wk = n.worker();
            // Traffic both ways first, so every connection is established and used.
            unsigned char out = static_cast<unsigned char>(w.rank()), in = 0;
            if (w.rank() != 0) {
                send_blocking(wk, n.ep(0), &out, 1, kTag | w.rank());
            } else {
                for (int r = 1; r < 3; ++r) {
                    Recv rv = post_recv(wk, &in, 1, kTag | r);
                    ICHECK_OK(finish_recv(wk, rv));
                    ICHECK(in == r);
                    send_blocking(wk, n.ep(r), &out, 1, kTag | r);
                }
            }
            w.barrier(wk);
            if (w.rank() == 1) {
                // In order: the worker goes away (its endpoints with it) and the process exits.
                n.forget(0);
                swy_worker_destroy(wk);
                _exit(0);
            }
            if (w.rank() == 2) {
                Recv rv = post_recv(wk, &in, 1, kTag | 2);
                ICHECK_OK(finish_recv(wk, rv));
                raise(SIGKILL);
            }
            auto deadline = deadline_in(15.0);
            while ((seen[1].calls == 0 || seen[2].calls == 0) && Clock::now() < deadline)
                swy_worker_progress(wk);
            ICHECK_MSG(seen[1].status == SWY_ERR_ENDPOINT_CLOSED,
                       "a peer that destroyed its worker was reported with %d (%s)",
                       (int)seen[1].status, swy_status_string(seen[1].status));
            ICHECK_MSG(seen[2].status == SWY_ERR_CONNECTION_RESET,
                       "a killed peer was reported with %d (%s)", (int)seen[2].status,
                       swy_status_string(seen[2].status));
            n.forget(1);
            n.forget(2);
            n.finish(1, 1);
        },
        RunOptions{60.0, {{2, SIGKILL}}}));
}

}  // namespace
}  // namespace swy_itest

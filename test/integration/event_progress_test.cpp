// Event-driven progress at the public API: an application's epoll loop over the worker's event
// fd and one fd of its own wakes a few times per message and sleeps while nothing arrives; an
// arm lasts until the next progress (senders signal only a receiver armed now, and a BUSY arm
// leaves nothing armed); swy_worker_signal() wakes a blocked wait from another thread; a self
// send from another thread wakes a multi-threaded worker asleep in swy_worker_wait().
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>

#include <thread>
#include <vector>

#include "multiproc.h"

namespace swy_itest {
namespace {

constexpr swy_tag_t kTag = 0x4500000000000000ull;

/// Is the worker's event fd readable right now (without blocking)?
bool efd_readable(swy_worker_h worker) {
    int efd = -1;
    ICHECK_OK(swy_worker_get_efd(worker, &efd));
    pollfd p{efd, POLLIN, 0};
    const int rc = poll(&p, 1, 0);
    ICHECK_MSG(rc >= 0, "poll: %s", strerror(errno));
    return rc == 1;
}

double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

/// What the receiver's loop saw.
struct LoopCounts {
    unsigned rounds = 0;   ///< passes of progress + arm (a spin shows up here)
    unsigned wakeups = 0;  ///< epoll_wait returns
    unsigned busy = 0;     ///< arms that returned BUSY
};

/// The documented loop: progress until idle, arm, epoll_wait on the worker's fd and @p own_fd
/// (an eventfd the sender writes halfway through). Receives @p count 8-byte messages.
LoopCounts epoll_receive(swy_worker_h worker, int own_fd, int count, World& w) {
    int efd = -1;
    ICHECK_OK(swy_worker_get_efd(worker, &efd));
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    ICHECK(ep >= 0);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = 0;
    ICHECK(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);
    ev.data.u32 = 1;
    ICHECK(epoll_ctl(ep, EPOLL_CTL_ADD, own_fd, &ev) == 0);

    std::vector<uint64_t> values(count, 0);
    std::vector<Recv> recvs;
    for (int i = 0; i < count; ++i)
        recvs.push_back(post_recv(worker, &values[i], sizeof(uint64_t), kTag | i));
    w.barrier(worker);  // the sender starts now

    LoopCounts c;
    bool own_seen = false;
    int done = 0;
    for (;;) {
        ++c.rounds;
        while (swy_worker_progress(worker) > 0) {}
        for (Recv& r : recvs) {
            if (r.done || swy_request_test(r.req) == SWY_INPROGRESS) continue;
            ICHECK_OK(finish_recv(worker, r));
            ++done;
        }
        if (done == count && own_seen) break;
        const swy_status_t s = swy_worker_arm(worker);
        if (s == SWY_ERR_BUSY) {
            ++c.busy;
            continue;
        }
        ICHECK_OK(s);
        epoll_event out[4];
        const int k = epoll_wait(ep, out, 4, 20000);
        ICHECK_MSG(k > 0, "no wake-up within 20 s (%d of %d received): a lost wake-up", done,
                   count);
        ++c.wakeups;
        for (int i = 0; i < k; ++i) {
            if (out[i].data.u32 != 1) continue;
            uint64_t v;
            ICHECK(read(own_fd, &v, sizeof(v)) == sizeof(v));
            own_seen = true;
        }
    }
    for (int i = 0; i < count; ++i)
        ICHECK_MSG(values[i] == 0xC0DE0000ull + i, "message %d holds %llx", i,
                   (unsigned long long)values[i]);
    close(ep);
    return c;
}

void run_epoll_loop(const NodeOptions& opts, const char* name) {
    constexpr int kMessages = 12;
    const int own_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);  // inherited by both ranks
    ASSERT_GE(own_fd, 0);
    EXPECT_TRUE(run_ranks(2, [&](World& w) {
        Node n(w, opts);
        n.connect_all();
        swy_worker_h wk = n.worker();
        if (w.rank() == 0) {
            w.barrier(wk);
            for (int i = 0; i < kMessages; ++i) {
                usleep(20000);  // the receiver is idle meanwhile
                const uint64_t v = 0xC0DE0000ull + i;
                send_blocking(wk, n.ep(1), &v, sizeof(v), kTag | i);
                // tcp corks a small send that follows another in one progress pass: it
                // leaves on our next progress call, so make one (the receiver should see
                // each message on its own).
                swy_worker_progress(wk);
                if (i == kMessages / 2) {
                    const uint64_t one = 1;
                    ICHECK(write(own_fd, &one, sizeof(one)) == sizeof(one));
                }
            }
        } else {
            const double cpu0 = cpu_seconds();
            const auto t0 = Clock::now();
            const LoopCounts c = epoll_receive(wk, own_fd, kMessages, w);
            const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
            const double cpu = cpu_seconds() - cpu0;
            fprintf(stderr,
                    "[%s] %d messages 20 ms apart: %u rounds, %u wake-ups, %u busy arms, "
                    "receiver CPU %.1f ms over %.0f ms\n",
                    name, kMessages, c.rounds, c.wakeups, c.busy, cpu * 1e3, wall * 1e3);
            // A few wake-ups per message (the message, the sender's own fd, a late wake-up
            // byte): a loop that spins while idle makes thousands.
            ICHECK_MSG(c.wakeups <= 3 * kMessages + 4, "%u wake-ups for %d messages", c.wakeups,
                       kMessages);
            ICHECK_MSG(c.rounds <= 4 * kMessages + 8, "%u loop rounds for %d messages", c.rounds,
                       kMessages);
        }
        n.finish();
    }));
    close(own_fd);
}

TEST(EventProgress, EpollLoopOverShmWakesAFewTimesPerMessage) {
    run_epoll_loop(NodeOptions{}, "shm");
}

TEST(EventProgress, EpollLoopOverTcpWakesAFewTimesPerMessage) {
    NodeOptions o;
    o.config = {{"TLS", "tcp"}, {"NET_DEVICES", "lo"}};
    run_epoll_loop(o, "tcp");
}

// Over tcp a send completes once the peer's kernel acknowledged its bytes. A sender that
// waits for that in the documented loop (progress, arm, epoll_wait on the event fd) is never
// told BUSY merely because acknowledgements are outstanding, and sleeps: the fd wakes it a
// bounded number of times per message, also when the receiver is slow to take the bytes
// (every other message here). The receiver checks every byte.
TEST(EventProgress, TcpSenderWaitingForDeliverySleepsOnTheEventFd) {
    constexpr int kMessages = 16;
    const size_t sizes[] = {8, 1000, 8000, 30000};
    NodeOptions o;
    o.config = {{"TLS", "tcp"}, {"NET_DEVICES", "lo"}};
    EXPECT_TRUE(run_ranks(2, [&](World& w) {
        Node n(w, o);
        n.connect_all();
        swy_worker_h wk = n.worker();
        if (w.rank() == 1) {
            for (int i = 0; i < kMessages; ++i) {
                const size_t len = sizes[i % 4];
                std::vector<unsigned char> buf(len + kGuardBytes, kGuardByte);
                Recv r = post_recv(wk, buf.data(), len, kTag | i);
                if (i % 2 == 1) usleep(5000);  // slow to read: the ACK waits for our kernel
                ICHECK_OK(finish_recv(wk, r));
                ICHECK(r.info.length == len);
                ICHECK_PATTERN(buf.data(), len, pattern_seed(len, 0, i), "message %d", i);
                ICHECK(guard_intact(buf.data() + len));
            }
        } else {
            int efd = -1;
            ICHECK_OK(swy_worker_get_efd(wk, &efd));
            LoopCounts c;
            for (int i = 0; i < kMessages; ++i) {
                const size_t len = sizes[i % 4];
                std::vector<unsigned char> buf(len);
                fill_pattern(buf.data(), len, pattern_seed(len, 0, i));
                Send s = post_send(n.ep(1), buf.data(), len, kTag | i);
                while (!s.done) {
                    ++c.rounds;
                    while (swy_worker_progress(wk) > 0) {}
                    if (swy_request_test(s.req) != SWY_INPROGRESS) break;
                    const swy_status_t st = swy_worker_arm(wk);
                    if (st == SWY_ERR_BUSY) {
                        ++c.busy;
                        continue;
                    }
                    ICHECK_OK(st);
                    pollfd p{efd, POLLIN, 0};
                    const int k = poll(&p, 1, 20000);
                    ICHECK_MSG(k == 1, "message %d: no wake-up within 20 s: a lost wake-up", i);
                    ++c.wakeups;
                }
                ICHECK_OK(finish_send(wk, s));
            }
            fprintf(stderr, "[tcp sender] %d messages: %u rounds, %u wake-ups, %u busy arms\n",
                    kMessages, c.rounds, c.wakeups, c.busy);
            ICHECK_MSG(c.busy <= 2, "%u BUSY arms while only acknowledgements were awaited",
                       c.busy);
            ICHECK_MSG(c.wakeups < 50u * kMessages, "%u wake-ups for %d messages", c.wakeups,
                       kMessages);
            ICHECK_MSG(c.rounds < 50u * kMessages, "%u loop rounds for %d messages", c.rounds,
                       kMessages);
        }
        n.finish();
    }));
}

// Armed means "until the next progress": a receiver that progressed (or whose arm said BUSY)
// is not signalled by senders, so its fd stays quiet (no sender system call either); one
// armed now is, and the progress after the wake-up consumes it.
TEST(EventProgress, SendersSignalOnlyAReceiverArmedNow) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w);
        n.connect_all();
        swy_worker_h wk = n.worker();
        uint64_t step = 0;
        // Rank 1 says "send" by raising scratch(0); rank 0 answers "sent" in scratch(1).
        auto send_on_request = [&](int messages) {
            ++step;
            w.wait_scratch_at_least(0, step);
            for (int i = 0; i < messages; ++i) {
                const uint64_t v = step * 100 + i;
                send_blocking(wk, n.ep(1), &v, sizeof(v), kTag | (step * 100 + i));
            }
            w.scratch(1).store(step, std::memory_order_release);
        };
        std::vector<uint64_t> got;
        auto request_sends = [&]() {
            ++step;
            w.scratch(0).store(step, std::memory_order_release);
            w.wait_scratch_at_least(1, step);  // no progress: what arrives stays in the lane
        };
        auto receive = [&](int messages) {
            for (int i = 0; i < messages; ++i) {
                uint64_t v = 0;
                Recv r = post_recv(wk, &v, sizeof(v), kTag | (step * 100 + i));
                ICHECK_OK(finish_recv(wk, r));
                ICHECK(v == step * 100 + i);
            }
        };
        if (w.rank() == 0) {
            send_on_request(1);
            send_on_request(1);
            send_on_request(2);
        } else {
            // Armed, then progressed: disarmed. (Wire-up may leave work for a few passes.)
            for (int k = 0; k < 1000 && swy_worker_arm(wk) == SWY_ERR_BUSY; ++k)
                swy_worker_progress(wk);
            ICHECK_OK(swy_worker_arm(wk));
            swy_worker_progress(wk);
            request_sends();
            ICHECK_MSG(!efd_readable(wk), "a sender woke a receiver that had progressed");
            // An arm that finds work waiting says BUSY and leaves nothing armed.
            ICHECK_STATUS(swy_worker_arm(wk), SWY_ERR_BUSY);
            receive(1);
            request_sends();
            ICHECK_MSG(!efd_readable(wk), "a sender woke a receiver whose arm returned BUSY");
            receive(1);
            // Armed now: the first message makes the fd readable; the progress after it
            // consumes the wake-up, so a new arm blocks.
            while (swy_worker_progress(wk) > 0) {}
            ICHECK_OK(swy_worker_arm(wk));
            request_sends();
            ICHECK_MSG(efd_readable(wk), "an armed receiver was not woken");
            receive(2);
            ICHECK_OK(swy_worker_arm(wk));
            ICHECK_MSG(!efd_readable(wk), "the wake-up outlived the progress that followed it");
            swy_worker_progress(wk);
        }
        n.finish();
    }));
}

TEST(EventProgress, SignalWakesABlockedWaitFromAnotherThread) {
    EXPECT_TRUE(run_ranks(1, [](World& w) {
        Node n(w);
        swy_worker_h wk = n.worker();
        ICHECK_STATUS(swy_worker_signal(nullptr), SWY_ERR_INVALID_PARAM);
        // A signal given before the wait is not lost, and the next progress consumes it.
        ICHECK_OK(swy_worker_signal(wk));
        ICHECK_OK(swy_worker_signal(wk));
        ICHECK_OK(swy_worker_wait(wk, 20000));
        swy_worker_progress(wk);
        ICHECK_STATUS(swy_worker_wait(wk, 0), SWY_ERR_TIMED_OUT);

        // Blocked in swy_worker_wait (the signalling thread waits until the waiter is about
        // to block; if it signals a little early, the wait returns at once, which is fine).
        std::atomic<int> phase{0};
        std::thread signaller([&] {
            while (phase.load() == 0)
                sched_yield();
            usleep(20000);
            (void)swy_worker_signal(wk);
        });
        phase = 1;
        const swy_status_t st = swy_worker_wait(wk, 20000);
        signaller.join();
        ICHECK_STATUS(st, SWY_OK);
        swy_worker_progress(wk);

        // Blocked in epoll on the event fd after an arm.
        int efd = -1;
        ICHECK_OK(swy_worker_get_efd(wk, &efd));
        ICHECK_OK(swy_worker_arm(wk));
        ICHECK(!efd_readable(wk));
        phase = 0;
        std::thread signaller2([&] {
            while (phase.load() == 0)
                sched_yield();
            usleep(20000);
            (void)swy_worker_signal(wk);
        });
        phase = 1;
        pollfd p{efd, POLLIN, 0};
        const int rc = poll(&p, 1, 20000);
        signaller2.join();
        ICHECK_MSG(rc == 1, "the signal did not make the event fd readable (poll: %d)", rc);
        swy_worker_progress(wk);
        ICHECK_OK(swy_worker_arm(wk));
        ICHECK_MSG(!efd_readable(wk), "the signal was not consumed by progress");
        swy_worker_progress(wk);
        n.finish();
    }));
}

// The self lane has no fd: a send from another thread of a multi-threaded worker must still
// wake the thread asleep in swy_worker_wait().
TEST(EventProgress, SelfSendFromAnotherThreadWakesAMultiThreadedWait) {
    EXPECT_TRUE(run_ranks(1, [](World& w) {
        NodeOptions o;
        o.config = {{"TLS", "self"}};
        o.thread_mode = SWY_THREAD_MODE_MULTI;
        Node n(w, o);
        n.connect_all(true);
        swy_worker_h wk = n.worker();
        uint64_t value = 0;
        Recv r = post_recv(wk, &value, sizeof(value), kTag | 9);
        ICHECK(!r.done);
        std::atomic<int> phase{0};
        std::thread sender([&] {
            while (phase.load() == 0)
                sched_yield();
            usleep(20000);
            const uint64_t v = 0x5E1F;
            send_blocking(wk, n.ep(0), &v, sizeof(v), kTag | 9);
        });
        phase = 1;
        unsigned timeouts = 0;
        while (swy_request_test(r.req) == SWY_INPROGRESS) {
            if (swy_worker_wait(wk, 20000) == SWY_ERR_TIMED_OUT) ++timeouts;
            swy_worker_progress(wk);
            ICHECK_MSG(timeouts == 0, "the self send did not wake the waiting thread");
        }
        sender.join();
        ICHECK_OK(finish_recv(wk, r));
        ICHECK(value == 0x5E1F);
        n.finish();
    }));
}

}  // namespace
}  // namespace swy_itest

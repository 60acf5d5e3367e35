// A peer that dies mid-stream (SIGKILL, no chance to clean up) must be noticed: the endpoint's
// error callback runs (or sends to it fail) within 10 s, nothing hangs, the other peers keep
// working, and no shared-memory file is left behind.
#include <signal.h>

#include <set>
#include <string>
#include <vector>

#include "ep_error_seen.h"
#include "multiproc.h"

namespace swy_itest {
namespace {

constexpr int kAttrBase = 0;
constexpr int kDyingWord = 100;     // rank 1 sets it just before raise(SIGKILL)
constexpr int kDetectedWord = 101;  // rank 0 sets it once it noticed
constexpr swy_tag_t kFrom1 = 0xDE00000100000000ull;
constexpr swy_tag_t kProbeTag = 0xDE000000000000FFull;
constexpr swy_tag_t kBetween02 = 0xDE00000200000000ull;
constexpr int kWindow = 64;
constexpr uint64_t kDieAfter = 300;  // messages rank 1 posts before it kills itself

size_t stream_size(uint64_t i, size_t bc) {
    return i % 10 == 4 ? 2 * bc + 17 : 16 + (i * 31) % 700;
}

bool is_peer_failure(swy_status_t st) {
    return st == SWY_ERR_CONNECTION_RESET || st == SWY_ERR_ENDPOINT_CLOSED;
}

// Both directions between ranks 0 and 2, after rank 1 died.
void exchange_0_2(World& w, Node& n, size_t bc) {
    const int peer = w.rank() == 0 ? 2 : 0;
    const std::vector<size_t> sizes{0, 8, 3000, 2 * bc + 1, 1u << 20};
    std::vector<std::vector<unsigned char>> rbufs, sbufs;
    std::vector<Recv> recvs;
    std::vector<Send> sends;
    for (size_t i = 0; i < sizes.size(); ++i) {
        rbufs.emplace_back(sizes[i] + kGuardBytes, kGuardByte);
        recvs.push_back(post_recv(n.worker(), rbufs[i].data(), sizes[i], kBetween02 | i));
    }
    w.barrier(n.worker(), 1, 2);
    for (size_t i = 0; i < sizes.size(); ++i) {
        sbufs.emplace_back(sizes[i]);
        fill_pattern(sbufs[i].data(), sizes[i], pattern_seed(sizes[i], w.rank(), i));
        sends.push_back(post_send(n.ep(peer), sbufs[i].data(), sizes[i], kBetween02 | i));
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
        swy_status_t st = finish_send(n.worker(), sends[i], 10);
        ICHECK_MSG(st == SWY_OK, "after rank 1 died, a %zu-byte send to rank %d gave %d (%s)",
                   sizes[i], peer, (int)st, swy_status_string(st));
        st = finish_recv(n.worker(), recvs[i], 10);
        ICHECK_MSG(st == SWY_OK, "after rank 1 died, a %zu-byte receive from rank %d gave %d (%s)",
                   sizes[i], peer, (int)st, swy_status_string(st));
        ICHECK_PATTERN(rbufs[i].data(), sizes[i], pattern_seed(sizes[i], peer, i),
                       "%zu bytes from rank %d after rank 1 died", sizes[i], peer);
        ICHECK(guard_intact(rbufs[i].data() + sizes[i]));
    }
}

void rank0(World& w) {
    Node n(w);
    n.publish();
    ErrorSeen seen;
    n.connect(1, 0, on_ep_error, &seen);
    n.connect(2);
    w.barrier(n.worker(), 0, 3);
    publish_attr(w, kAttrBase, n.query(2));
    const size_t bc = read_attr(w, kAttrBase, 0).bcopy_max_size;
    ICHECK(bc > 0);
    const size_t max_size = 2 * bc + 17;
    swy_worker_h wk = n.worker();

    // Receive rank 1's stream through a window of posted receives, checking what arrives.
    std::vector<std::vector<unsigned char>> bufs(kWindow, std::vector<unsigned char>(max_size));
    std::vector<Recv> recvs(kWindow);
    uint64_t posted = 0, done = 0;
    std::vector<Send> probes;  // small sends to rank 1 after it died
    std::vector<unsigned char> probe_payload(8, 0x42);
    int send_failures = 0;
    swy_status_t send_failure_status = SWY_OK;
    auto start = Clock::now();
    Clock::time_point died{};
    Clock::time_point last_probe{};
    for (;;) {
        while (posted - done < (uint64_t)kWindow) {
            recvs[posted % kWindow] =
                post_recv(wk, bufs[posted % kWindow].data(), max_size, kFrom1);
            ++posted;
        }
        Recv& r = recvs[done % kWindow];
        if (r.done || swy_request_test(r.req) != SWY_INPROGRESS) {
            swy_status_t st = finish_recv(wk, r);
            if (st != SWY_OK && is_peer_failure(st) &&
                w.scratch(kDyingWord).load(std::memory_order_acquire) != 0) {
                ++done;  // a message cut short by the death may fail; later ones too
                continue;
            }
            ICHECK_MSG(st == SWY_OK, "receive #%llu from rank 1 completed with %d (%s)",
                       (unsigned long long)done, (int)st, swy_status_string(st));
            size_t len = stream_size(done, bc);
            ICHECK_MSG(r.info.length == len, "message #%llu from rank 1: length %zu, sent %zu",
                       (unsigned long long)done, r.info.length, len);
            ICHECK_PATTERN(bufs[done % kWindow].data(), len, pattern_seed(len, 1, done),
                           "message #%llu from rank 1 before it died", (unsigned long long)done);
            ++done;
        }
        swy_worker_progress(wk);
        if (seen.calls > 0 || send_failures > 0) break;
        exit_if_aborted();
        auto now = Clock::now();
        if (died == Clock::time_point{}) {
            if (w.scratch(kDyingWord).load(std::memory_order_acquire) != 0) died = now;
            ICHECK_MSG(now - start < std::chrono::seconds(30), "rank 1 never reached its death");
            continue;
        }
        ICHECK_MSG(now - died < std::chrono::seconds(10),
                   "10 s after rank 1 was killed: no error callback (calls=%d), no failed send "
                   "(%zu tried), %llu messages received",
                   seen.calls, probes.size(), (unsigned long long)done);
        if (now - last_probe > std::chrono::milliseconds(10)) {  // a send may reveal the death
            last_probe = now;
            Send s = post_send(n.ep(1), probe_payload.data(), probe_payload.size(), kProbeTag);
            if (s.done && s.status != SWY_OK) {
                ICHECK_MSG(is_peer_failure(s.status), "send to dead rank 1 gave %d (%s)",
                           (int)s.status, swy_status_string(s.status));
                ++send_failures;
                send_failure_status = s.status;
            } else if (!s.done) {
                probes.push_back(s);
            }
        }
        for (auto& s : probes) {
            if (!s.done && swy_request_test(s.req) != SWY_INPROGRESS) {
                swy_status_t st = finish_send(wk, s);
                if (st != SWY_OK) {
                    ICHECK_MSG(is_peer_failure(st), "send to dead rank 1 completed with %d (%s)",
                               (int)st, swy_status_string(st));
                    ++send_failures;
                    send_failure_status = st;
                }
            }
        }
    }
    double after =
        std::chrono::duration<double>(Clock::now() - (died == Clock::time_point{} ? start : died))
            .count();
    fprintf(stderr,
            "[rank 0] noticed rank 1's death %.3f s after it: err_cb calls %d (status %s), "
            "failed sends %d (%s); %llu messages received intact\n",
            after, seen.calls, swy_status_string(seen.status), send_failures,
            swy_status_string(send_failure_status), (unsigned long long)done);
    if (seen.calls > 0) {
        ICHECK_MSG(seen.status < 0, "error callback with non-error status %d", (int)seen.status);
        ICHECK_MSG(seen.ep == n.ep(1), "error callback named another endpoint");
        swy_ep_attr_t a{};
        a.field_mask = SWY_EP_ATTR_FIELD_LANE | SWY_EP_ATTR_FIELD_PIO_DETAIL;
        ICHECK_OK(swy_ep_query(n.ep(1), &a));
        ICHECK_MSG(a.connected == 0, "failed endpoint still reports connected=1");
    }
    w.scratch(kDetectedWord).store(1, std::memory_order_release);

    // Nothing may hang on the dead peer: the remaining receives end, sends end, close ends.
    for (uint64_t i = done; i < posted; ++i) {
        Recv& r = recvs[i % kWindow];
        if (!r.done) {
            swy_status_t c = swy_request_cancel(wk, r.req);
            ICHECK_MSG(c == SWY_OK || c == SWY_ERR_BUSY, "cancel gave %d (%s)", (int)c,
                       swy_status_string(c));
        }
        swy_status_t st = finish_recv(wk, r, 5);
        ICHECK_MSG(st == SWY_OK || st == SWY_ERR_CANCELED || is_peer_failure(st),
                   "leftover receive from dead rank 1 ended with %d (%s)", (int)st,
                   swy_status_string(st));
    }
    for (auto& s : probes) {
        swy_status_t st = finish_send(wk, s, 5);
        ICHECK_MSG(st == SWY_OK || is_peer_failure(st) || st == SWY_ERR_CANCELED,
                   "send to dead rank 1 ended with %d (%s)", (int)st, swy_status_string(st));
    }
    swy_request_h creq = nullptr;
    swy_status_t cst = swy_ep_close_nb(n.ep(1), SWY_EP_CLOSE_FORCE, &creq);
    n.forget(1);
    if (cst == SWY_INPROGRESS) {
        cst = wait_request(wk, creq, "force close of the endpoint to dead rank 1", 5);
        swy_request_free(creq);
    }
    ICHECK_MSG(cst == SWY_OK || is_peer_failure(cst), "force close gave %d (%s)", (int)cst,
               swy_status_string(cst));

    exchange_0_2(w, n, bc);
    n.finish(2, 1);
}

void rank1(World& w) {
    Node n(w);
    n.publish();
    n.connect(0);
    w.barrier(n.worker(), 0, 3);
    const size_t bc = read_attr(w, kAttrBase, 0).bcopy_max_size;
    std::vector<std::vector<unsigned char>> bufs(kWindow, std::vector<unsigned char>(2 * bc + 17));
    std::vector<Send> sends(kWindow);
    uint64_t sent = 0, done = 0;
    for (;;) {
        while (sent - done < (uint64_t)kWindow) {
            size_t len = stream_size(sent, bc);
            fill_pattern(bufs[sent % kWindow].data(), len, pattern_seed(len, 1, sent));
            sends[sent % kWindow] = post_send(n.ep(0), bufs[sent % kWindow].data(), len, kFrom1);
            ++sent;
            if (sent == kDieAfter) {  // mid-stream, with sends still in flight
                w.scratch(kDyingWord).store(1, std::memory_order_release);
                raise(SIGKILL);
            }
        }
        Send& s = sends[done % kWindow];
        if (s.done || swy_request_test(s.req) != SWY_INPROGRESS) {
            ICHECK_OK(finish_send(n.worker(), s));
            ++done;
        }
        swy_worker_progress(n.worker());
        exit_if_aborted();
    }
}

void rank2(World& w) {
    Node n(w);
    n.publish();
    n.connect(0);
    w.barrier(n.worker(), 0, 3);
    const size_t bc = read_attr(w, kAttrBase, 0).bcopy_max_size;
    w.wait_scratch_at_least(kDetectedWord, 1, n.worker(), 45);
    exchange_0_2(w, n, bc);
    n.finish(2, 1);
}

TEST(ShmPeerFailure, KilledSenderIsReportedWithinTenSecondsAndOthersKeepWorking) {
    const std::set<std::string> before = swy_shm_files();
    RunOptions opts;
    opts.expected_signal[1] = SIGKILL;
    EXPECT_TRUE(run_ranks(
        3,
        [](World& w) {
            if (w.rank() == 0)
                rank0(w);
            else if (w.rank() == 1)
                rank1(w);
            else
                rank2(w);
        },
        opts));
    std::string leftovers;
    for (const auto& f : swy_shm_files())
        if (!before.count(f)) leftovers += " " + f;
    EXPECT_TRUE(leftovers.empty()) << "left behind in /dev/shm:" << leftovers;
}

TEST(ShmPeerFailure, CleanRunLeavesNoSharedMemoryFiles) {
    const std::set<std::string> before = swy_shm_files();
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w);
        n.connect_all();
        std::vector<unsigned char> buf(100);
        fill_pattern(buf.data(), buf.size(), pattern_seed(100, w.rank(), 0));
        Send s = post_send(n.ep(1 - w.rank()), buf.data(), buf.size(), 1);
        std::vector<unsigned char> in(100);
        Recv r = post_recv(n.worker(), in.data(), in.size(), 1);
        ICHECK_OK(finish_recv(n.worker(), r));
        ICHECK_OK(finish_send(n.worker(), s));
        ICHECK_PATTERN(in.data(), 100, pattern_seed(100, 1 - w.rank(), 0), "hello");
        n.finish();
    }));
    std::string leftovers;
    for (const auto& f : swy_shm_files())
        if (!before.count(f)) leftovers += " " + f;
    EXPECT_TRUE(leftovers.empty()) << "left behind in /dev/shm:" << leftovers;
}

}  // namespace
}  // namespace swy_itest

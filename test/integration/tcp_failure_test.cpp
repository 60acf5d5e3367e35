// A tcp peer SIGKILLed in the middle of transfers (SWY_TLS=tcp,self on loopback): every request
// still outstanding on the endpoint to it completes with an error status, the endpoint's error
// callback runs exactly once, and an endpoint of the same worker to a third process keeps
// working, before and after, payloads checked.
#include <signal.h>

#include <string>
#include <vector>

#include "ep_error_seen.h"
#include "multiproc.h"

namespace swy_itest {
namespace {

constexpr int kDyingWord = 200;    // the victim sets it just before it kills itself
constexpr int kStartedWord = 201;  // the survivor saw the first rendezvous bytes land
constexpr swy_tag_t kToVictim = 0xDF00000100000000ull;
constexpr swy_tag_t kFromVictim = 0xDF00000200000000ull;
constexpr swy_tag_t kBetween02 = 0xDF00000300000000ull;
constexpr size_t kLarge = 64u << 20;  // far more than the socket buffers hold

bool is_peer_failure(swy_status_t st) {
    return st == SWY_ERR_CONNECTION_RESET || st == SWY_ERR_ENDPOINT_CLOSED ||
           st == SWY_ERR_UNREACHABLE;
}

NodeOptions tcp_options() {
    NodeOptions o;
    o.config = {{"TLS", "tcp,self"}, {"NET_DEVICES", "lo"}};
    return o;
}

/// Both directions between ranks 0 and 2 (eager, fragments and rendezvous), verified.
void exchange_0_2(World& w, Node& n, uint64_t round) {
    const int peer = w.rank() == 0 ? 2 : 0;
    const std::vector<size_t> sizes{0, 8, 3000, (300u << 10) + 1, (3u << 20) + 5};
    std::vector<std::vector<unsigned char>> rbufs, sbufs;
    std::vector<Recv> recvs;
    std::vector<Send> sends;
    rbufs.reserve(sizes.size());
    sbufs.reserve(sizes.size());
    const swy_tag_t base = kBetween02 | (round << 8);
    for (size_t i = 0; i < sizes.size(); ++i) {
        rbufs.emplace_back(sizes[i] + kGuardBytes, kGuardByte);
        recvs.push_back(post_recv(n.worker(), rbufs[i].data(), sizes[i], base | i));
    }
    w.barrier(n.worker(), 1, 2, 60.0);  // the survivor may be busy with the death
    for (size_t i = 0; i < sizes.size(); ++i) {
        sbufs.emplace_back(sizes[i]);
        fill_pattern(sbufs[i].data(), sizes[i], pattern_seed(sizes[i], w.rank(), round * 16 + i));
        sends.push_back(post_send(n.ep(peer), sbufs[i].data(), sizes[i], base | i));
    }
    for (Send& s : sends)
        ICHECK_OK(finish_send(n.worker(), s, 20));
    for (size_t i = 0; i < sizes.size(); ++i) {
        ICHECK_OK(finish_recv(n.worker(), recvs[i], 20));
        ICHECK_PATTERN(rbufs[i].data(), sizes[i], pattern_seed(sizes[i], peer, round * 16 + i),
                       "round %llu, %zu bytes from rank %d", (unsigned long long)round, sizes[i],
                       peer);
        ICHECK(guard_intact(rbufs[i].data() + sizes[i]));
    }
    w.barrier(n.worker(), 1, 2, 60.0);  // the survivor may be busy with the death
}

/// Rank 0 is the survivor, rank 1 the victim, rank 2 the bystander. @p victim_sends: the
/// large rendezvous goes 1 → 0 (the survivor's receive buffer is being filled straight from
/// the socket when the victim dies); else 0 → 1 (the survivor is pushing fragments), plus a
/// synchronous eager send and a fragmented eager send queued behind it.
void run_victim_scenario(bool victim_sends) {
    EXPECT_TRUE(run_ranks(
        3,
        [&](World& w) {
            Node n(w, tcp_options());
            ErrorSeen seen_1, seen_2;
            n.publish();
            for (int r = 0; r < 3; ++r) {
                if (r == w.rank()) continue;
                ErrorSeen* seen = r == 1 ? &seen_1 : &seen_2;
                n.connect(r, 0, w.rank() == 0 ? on_ep_error : nullptr, seen);
            }
            w.barrier(n.worker());
            swy_worker_h wk = n.worker();

            if (w.rank() == 1) {
                // The victim: take part in the transfer for a moment, stop progressing (the
                // sender's socket fills up), and die without any cleanup.
                std::vector<unsigned char> big(kLarge);
                Recv r;
                Send s;
                if (victim_sends) {
                    fill_pattern(big.data(), kLarge, pattern_seed(kLarge, 1, 0));
                    w.barrier(wk, 2, 2);  // the survivor's receive is posted
                    s = post_send(n.ep(0), big.data(), kLarge, kFromVictim);
                    w.wait_scratch_at_least(kStartedWord, 1, wk);
                } else {
                    r = post_recv(wk, big.data(), kLarge, kToVictim);
                    w.barrier(wk, 2, 2);
                    // Payload bytes landing in the buffer: the rendezvous is under way.
                    const uint64_t seed = pattern_seed(kLarge, 0, 0);
                    auto deadline = deadline_in(20.0);
                    while (verify_pattern(big.data(), 8, seed) != 8) {
                        ICHECK_MSG(Clock::now() < deadline, "the rendezvous never started");
                        swy_worker_progress(wk);
                    }
                }
                w.scratch(kDyingWord).store(1, std::memory_order_release);
                raise(SIGKILL);
                _exit(0);  // not reached
            }

            if (w.rank() == 2) {
                exchange_0_2(w, n, 0);
                exchange_0_2(w, n, 1);  // after the death
                n.forget(1);            // closed with force by the worker's destroy
                n.finish(2, 3);
                return;
            }

            // Rank 0, the survivor.
            exchange_0_2(w, n, 0);
            std::vector<unsigned char> big(kLarge + kGuardBytes, kGuardByte);
            std::vector<unsigned char> small(8, 0x11), frag(1u << 20, 0x22);
            std::vector<Send> sends;
            Recv big_recv;
            if (victim_sends) {
                big_recv = post_recv(wk, big.data(), kLarge, kFromVictim);
                w.barrier(wk, 2, 2);
                // A synchronous send the victim never matches: in flight until the death.
                sends.push_back(post_send(n.ep(1), small.data(), small.size(), kToVictim | 1,
                                          SWY_REQ_FLAG_SYNC));
                const uint64_t seed = pattern_seed(kLarge, 1, 0);
                auto deadline = deadline_in(20.0);
                while (verify_pattern(big.data(), 8, seed) != 8) {
                    ICHECK_MSG(Clock::now() < deadline, "the rendezvous never started");
                    swy_worker_progress(wk);
                }
                w.scratch(kStartedWord).store(1, std::memory_order_release);
            } else {
                fill_pattern(big.data(), kLarge, pattern_seed(kLarge, 0, 0));
                w.barrier(wk, 2, 2);
                sends.push_back(post_send(n.ep(1), small.data(), small.size(), kToVictim | 1,
                                          SWY_REQ_FLAG_SYNC));
                sends.push_back(post_send(n.ep(1), big.data(), kLarge, kToVictim));
                sends.push_back(post_send(n.ep(1), frag.data(), frag.size(), kToVictim | 2));
                ICHECK_MSG(!sends[0].done && !sends[1].done,
                           "a rendezvous or synchronous send completed before the peer answered");
            }
            // Not progressing meanwhile: the transfer stays far from done (64 MiB cannot fit the
            // socket buffers), so the death surely interrupts it.
            w.wait_scratch_at_least(kDyingWord, 1, victim_sends ? nullptr : wk);
            // Every outstanding operation on the dead peer's endpoint now fails; none hangs.
            for (Send& s : sends) {
                swy_status_t st = finish_send(wk, s, 15);
                ICHECK_MSG(s.req == nullptr, "send request not freed");
                // The fragmented eager send may have left entirely before the death.
                ICHECK_MSG(
                    is_peer_failure(st) || (sends.size() == 3 && &s == &sends[2] && st == SWY_OK),
                    "send to the dead peer completed with %d (%s)", (int)st, swy_status_string(st));
            }
            if (victim_sends) {
                swy_status_t st = finish_recv(wk, big_recv, 15);
                ICHECK_MSG(is_peer_failure(st), "receive from the dead peer completed with %d (%s)",
                           (int)st, swy_status_string(st));
                ICHECK_MSG(guard_intact(big.data() + kLarge),
                           "the interrupted receive wrote past its buffer");
            }
            // The error callback: exactly once, with a failure status, even after more progress.
            auto deadline = deadline_in(15.0);
            while (seen_1.calls == 0) {
                ICHECK_MSG(Clock::now() < deadline, "no error callback for the dead peer");
                swy_worker_progress(wk);
            }
            for (int i = 0; i < 20000; ++i)
                swy_worker_progress(wk);
            ICHECK_MSG(seen_1.calls == 1, "error callback ran %d times", seen_1.calls);
            ICHECK_MSG(is_peer_failure(seen_1.status), "error callback status %d (%s)",
                       (int)seen_1.status, swy_status_string(seen_1.status));
            ICHECK_MSG(seen_2.calls == 0, "the bystander's endpoint reported an error");
            // New sends to the dead peer fail at once instead of hanging.
            Send late = post_send(n.ep(1), small.data(), small.size(), kToVictim | 3);
            ICHECK_MSG(is_peer_failure(finish_send(wk, late, 5)),
                       "send after the death did not fail");
            exchange_0_2(w, n, 1);
            n.forget(1);
            n.finish(2, 3);
        },
        RunOptions{120.0, {{1, SIGKILL}}}));
}

TEST(TcpPeerDeath, KilledReceiverFailsTheRendezvousSyncAndQueuedSendsOnce) {
    run_victim_scenario(false);
}

TEST(TcpPeerDeath, KilledSenderFailsTheReceiveBeingFilledFromTheSocket) {
    run_victim_scenario(true);
}

}  // namespace
}  // namespace swy_itest

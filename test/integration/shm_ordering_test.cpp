// Ordering and volume over shm: all-to-all streams of mixed small and fragmented messages with
// exact and wildcard receives, thousands of posted receives, and an unexpected-message storm.
// MPI's rule under test: messages from one sender match in send order; receives match in post
// order.
#include <sched.h>

#include <vector>

#include "multiproc.h"

namespace swy_itest {
namespace {

constexpr int kAttrBase = 0;
constexpr int kMessagesPerPair = 2000;
constexpr int kWindow = 64;  // outstanding sends / receives per peer
constexpr swy_tag_t kTagBase = 0x0D00000000000000ull;

// Sizes every rank agrees on: mostly small, every 8th one a fragmented (> 2 bcopy) message.
struct SizePlan {
    size_t bcopy;
    size_t size_of(int sender, uint64_t seq) const {
        if (seq % 8 == 3) return 2 * bcopy + 1 + (seq * 13 + sender) % 97;
        return 8 + (seq * 37 + (uint64_t)sender * 11) % 250;
    }
    size_t max_size() const { return 2 * bcopy + 1 + 97; }
};

SizePlan agree_on_sizes(World& w, Node& n) {
    int peer = (w.rank() + 1) % w.size();
    publish_attr(w, kAttrBase, n.query(peer));
    size_t bcopy = 0;
    for (int r = 0; r < w.size(); ++r)
        bcopy = std::max(bcopy, read_attr(w, kAttrBase, r).bcopy_max_size);
    ICHECK_MSG(bcopy > 0 && bcopy < (16u << 20), "implausible bcopy_max_size %zu", bcopy);
    return SizePlan{bcopy};
}

// A message's first 8 bytes say who sent it and its sequence number; the rest is a pattern.
void fill_message(unsigned char* buf, size_t len, int sender, uint64_t seq) {
    uint64_t hdr = ((uint64_t)sender << 32) | seq;
    memcpy(buf, &hdr, 8);
    fill_pattern(buf + 8, len - 8, pattern_seed(len, sender, seq));
}

void check_message(const unsigned char* buf, size_t len, int sender, uint64_t seq) {
    uint64_t hdr = 0;
    memcpy(&hdr, buf, 8);
    ICHECK_MSG(hdr == (((uint64_t)sender << 32) | seq),
               "expected message #%llu from rank %d, got #%llu from rank %llu (out of order?)",
               (unsigned long long)seq, sender, (unsigned long long)(hdr & 0xffffffffu),
               (unsigned long long)(hdr >> 32));
    ICHECK_PATTERN(buf + 8, len - 8, pattern_seed(len, sender, seq), "message #%llu from rank %d",
                   (unsigned long long)seq, sender);
}

bool request_done(const Send& s) { return s.done || swy_request_test(s.req) != SWY_INPROGRESS; }
bool request_done(const Recv& r) { return r.done || swy_request_test(r.req) != SWY_INPROGRESS; }

// Exact tags: tag = base | sender << 32 | (seq % 5). Several messages share a tag, so only
// the ordering rule decides which receive each one lands in.
swy_tag_t exact_tag(int sender, uint64_t seq) {
    return kTagBase | ((uint64_t)sender << 32) | (seq % 5);
}
// Wildcard runs: the tag carries sender and sequence so the receiver can tell them apart.
swy_tag_t wild_tag(int sender, uint64_t seq) { return kTagBase | ((uint64_t)sender << 32) | seq; }

// Every rank streams kMessagesPerPair messages to every other rank while receiving the same
// from each, with at most kWindow sends and kWindow receives per peer outstanding.
void all_to_all(World& w, bool wildcard) {
    Node n(w);
    n.connect_all();
    const SizePlan plan = agree_on_sizes(w, n);
    const int me = w.rank();
    const int np = w.size();
    const uint64_t total = kMessagesPerPair;
    swy_worker_h worker = n.worker();

    struct PeerState {
        std::vector<std::vector<unsigned char>> sbuf, rbuf;
        std::vector<Send> sends;
        std::vector<Recv> recvs;
        uint64_t sent = 0, send_done = 0;    // sends posted / retired
        uint64_t posted = 0, recv_done = 0;  // receives posted / retired (exact mode)
        uint64_t next_seq_from = 0;          // wildcard mode: next expected from this peer
    };
    std::vector<PeerState> peers(np);
    for (int p = 0; p < np; ++p) {
        if (p == me) continue;
        peers[p].sbuf.assign(kWindow, std::vector<unsigned char>(plan.max_size()));
        peers[p].sends.resize(kWindow);
        if (!wildcard) {
            peers[p].rbuf.assign(kWindow,
                                 std::vector<unsigned char>(plan.max_size() + kGuardBytes));
            peers[p].recvs.resize(kWindow);
        }
    }
    // Wildcard mode: one ring of receives that match anything (mask 0).
    const size_t wring = (size_t)kWindow * (np - 1);
    const uint64_t wtotal = total * (np - 1);
    std::vector<std::vector<unsigned char>> wbuf;
    std::vector<Recv> wrecv;
    uint64_t wposted = 0, wdone = 0;
    if (wildcard) {
        wbuf.assign(wring, std::vector<unsigned char>(plan.max_size() + kGuardBytes));
        wrecv.resize(wring);
    }

    auto deadline = deadline_in(60);
    for (;;) {
        bool all_done = true;
        for (int p = 0; p < np; ++p) {
            if (p == me) continue;
            PeerState& ps = peers[p];
            // Retire finished sends in order, then fill the window.
            while (ps.send_done < ps.sent && request_done(ps.sends[ps.send_done % kWindow])) {
                Send& s = ps.sends[ps.send_done % kWindow];
                swy_status_t st = finish_send(worker, s);
                ICHECK_MSG(st == SWY_OK, "send #%llu to rank %d completed with %d (%s)",
                           (unsigned long long)ps.send_done, p, (int)st, swy_status_string(st));
                ++ps.send_done;
            }
            while (ps.sent < total && ps.sent - ps.send_done < (uint64_t)kWindow) {
                uint64_t seq = ps.sent;
                size_t len = plan.size_of(me, seq);
                auto& buf = ps.sbuf[seq % kWindow];
                fill_message(buf.data(), len, me, seq);
                swy_tag_t tag = wildcard ? wild_tag(me, seq) : exact_tag(me, seq);
                ps.sends[seq % kWindow] = post_send(n.ep(p), buf.data(), len, tag);
                if (ps.sends[seq % kWindow].done)
                    ICHECK_MSG(ps.sends[seq % kWindow].status == SWY_OK, "send failed: %s",
                               swy_status_string(ps.sends[seq % kWindow].status));
                ++ps.sent;
            }
            if (!wildcard) {
                while (ps.recv_done < ps.posted && request_done(ps.recvs[ps.recv_done % kWindow])) {
                    uint64_t seq = ps.recv_done;
                    Recv& r = ps.recvs[seq % kWindow];
                    swy_status_t st = finish_recv(worker, r);
                    ICHECK_MSG(st == SWY_OK, "receive #%llu from rank %d completed with %d (%s)",
                               (unsigned long long)seq, p, (int)st, swy_status_string(st));
                    size_t len = plan.size_of(p, seq);
                    ICHECK_MSG(r.info.length == len && r.info.sender_tag == exact_tag(p, seq),
                               "receive #%llu from rank %d matched tag 0x%llx length %zu, "
                               "expected tag 0x%llx length %zu",
                               (unsigned long long)seq, p, (unsigned long long)r.info.sender_tag,
                               r.info.length, (unsigned long long)exact_tag(p, seq), len);
                    auto& buf = ps.rbuf[seq % kWindow];
                    check_message(buf.data(), len, p, seq);
                    ICHECK(guard_intact(buf.data() + plan.max_size()));
                    ++ps.recv_done;
                }
                while (ps.posted < total && ps.posted - ps.recv_done < (uint64_t)kWindow) {
                    uint64_t seq = ps.posted;
                    auto& buf = ps.rbuf[seq % kWindow];
                    memset(buf.data() + plan.max_size(), kGuardByte, kGuardBytes);
                    ps.recvs[seq % kWindow] =
                        post_recv(worker, buf.data(), plan.max_size(), exact_tag(p, seq));
                    ++ps.posted;
                }
                if (ps.recv_done < total) all_done = false;
            }
            if (ps.send_done < total) all_done = false;
        }
        if (wildcard) {
            while (wdone < wposted && request_done(wrecv[wdone % wring])) {
                Recv& r = wrecv[wdone % wring];
                swy_status_t st = finish_recv(worker, r);
                ICHECK_MSG(st == SWY_OK, "wildcard receive #%llu completed with %d (%s)",
                           (unsigned long long)wdone, (int)st, swy_status_string(st));
                swy_tag_t tag = r.info.sender_tag;
                ICHECK_MSG((tag & 0xFF00000000000000ull) == kTagBase, "foreign tag 0x%llx",
                           (unsigned long long)tag);
                int sender = (int)((tag >> 32) & 0xff);
                uint64_t seq = tag & 0xffffffffu;
                ICHECK_MSG(sender >= 0 && sender < np && sender != me, "bad sender %d in tag",
                           sender);
                PeerState& ps = peers[sender];
                ICHECK_MSG(seq == ps.next_seq_from,
                           "wildcard receive #%llu got message #%llu from rank %d, expected "
                           "#%llu: messages from one sender overtook each other",
                           (unsigned long long)wdone, (unsigned long long)seq, sender,
                           (unsigned long long)ps.next_seq_from);
                size_t len = plan.size_of(sender, seq);
                ICHECK_MSG(r.info.length == len, "message #%llu from rank %d: length %zu, sent %zu",
                           (unsigned long long)seq, sender, r.info.length, len);
                auto& buf = wbuf[wdone % wring];
                check_message(buf.data(), len, sender, seq);
                ICHECK(guard_intact(buf.data() + plan.max_size()));
                ++ps.next_seq_from;
                ++wdone;
            }
            while (wposted < wtotal && wposted - wdone < wring) {
                auto& buf = wbuf[wposted % wring];
                memset(buf.data() + plan.max_size(), kGuardByte, kGuardBytes);
                wrecv[wposted % wring] = post_recv(worker, buf.data(), plan.max_size(), 0, 0);
                ++wposted;
            }
            if (wdone < wtotal) all_done = false;
        }
        if (all_done) break;
        if (swy_worker_progress(worker) == 0) sched_yield();
        exit_if_aborted();
        ICHECK_MSG(Clock::now() < deadline, "all-to-all did not finish in 60 s");
    }
    n.finish();
}

TEST(ShmTagOrdering, ExactTagsMatchInSendOrderBetweenTwoRanks) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { all_to_all(w, false); }));
}

TEST(ShmTagOrdering, ExactTagsMatchInSendOrderBetweenFourRanks) {
    EXPECT_TRUE(run_ranks(
        4, [](World& w) { all_to_all(w, false); }, RunOptions{90, {}}));
}

TEST(ShmTagOrdering, WildcardReceivesSeeEachSendersMessagesInOrderTwoRanks) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { all_to_all(w, true); }));
}

TEST(ShmTagOrdering, WildcardReceivesSeeEachSendersMessagesInOrderFourRanks) {
    EXPECT_TRUE(run_ranks(
        4, [](World& w) { all_to_all(w, true); }, RunOptions{90, {}}));
}

TEST(ShmTagOrdering, FiveThousandPostedReceivesMatchInPostOrder) {
    constexpr int kCount = 5000;
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w);
        n.connect_all();
        const SizePlan plan = agree_on_sizes(w, n);
        // Few distinct tags, so the ordering rule (not the tag) decides each match.
        auto tag_of = [](uint64_t i) { return kTagBase | (i % 7); };
        auto size_of = [&](uint64_t i) { return i % 250 == 17 ? plan.size_of(0, 3) : 8 + i % 120; };
        if (w.rank() == 1) {
            std::vector<std::vector<unsigned char>> bufs(kCount);
            std::vector<Recv> recvs(kCount);
            for (uint64_t i = 0; i < kCount; ++i) {
                bufs[i].assign(size_of(i) + kGuardBytes, kGuardByte);
                recvs[i] = post_recv(n.worker(), bufs[i].data(), size_of(i), tag_of(i));
                ICHECK_MSG(!recvs[i].done, "receive #%llu completed before anything was sent",
                           (unsigned long long)i);
            }
            w.barrier(n.worker());  // all posted; now the sender starts
            for (uint64_t i = 0; i < kCount; ++i) {
                swy_status_t st = finish_recv(n.worker(), recvs[i]);
                ICHECK_MSG(st == SWY_OK, "receive #%llu completed with %d (%s)",
                           (unsigned long long)i, (int)st, swy_status_string(st));
                ICHECK_MSG(recvs[i].info.length == size_of(i),
                           "receive #%llu: length %zu, expected %zu", (unsigned long long)i,
                           recvs[i].info.length, size_of(i));
                check_message(bufs[i].data(), size_of(i), 0, i);
                ICHECK(guard_intact(bufs[i].data() + size_of(i)));
            }
        } else {
            w.barrier(n.worker());
            std::vector<std::vector<unsigned char>> bufs(kCount);
            std::vector<Send> sends(kCount);
            for (uint64_t i = 0; i < kCount; ++i) {
                bufs[i].resize(size_of(i));
                fill_message(bufs[i].data(), size_of(i), 0, i);
                sends[i] = post_send(n.ep(1), bufs[i].data(), size_of(i), tag_of(i));
            }
            for (uint64_t i = 0; i < kCount; ++i) {
                swy_status_t st = finish_send(n.worker(), sends[i]);
                ICHECK_MSG(st == SWY_OK, "send #%llu completed with %d (%s)", (unsigned long long)i,
                           (int)st, swy_status_string(st));
            }
        }
        n.finish();
    }));
}

TEST(ShmTagOrdering, TenThousandUnexpectedMessagesAreAllDeliveredInOrder) {
    constexpr int kCount = 10000;
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w);
        n.connect_all();
        auto tag_of = [](uint64_t i) { return kTagBase | (i % 3); };
        auto size_of = [](uint64_t i) { return (size_t)(8 + (i * 7) % 57); };
        if (w.rank() == 0) {
            std::vector<std::vector<unsigned char>> bufs(kCount);
            std::vector<Send> sends(kCount);
            for (uint64_t i = 0; i < kCount; ++i) {
                bufs[i].resize(size_of(i));
                fill_message(bufs[i].data(), size_of(i), 0, i);
                sends[i] = post_send(n.ep(1), bufs[i].data(), size_of(i), tag_of(i));
                if ((i & 63) == 0) swy_worker_progress(n.worker());
            }
            for (uint64_t i = 0; i < kCount; ++i)
                ICHECK_OK(finish_send(n.worker(), sends[i]));
            w.scratch(0).store(1, std::memory_order_release);  // every message is out
            w.barrier(n.worker());
        } else {
            // Drain the FIFO into the unexpected queue without posting anything.
            w.wait_scratch_at_least(0, 1, n.worker());
            for (int i = 0; i < 1000; ++i)
                swy_worker_progress(n.worker());
            w.barrier(n.worker());
            std::vector<unsigned char> buf(128 + kGuardBytes);
            for (uint64_t i = 0; i < kCount; ++i) {
                memset(buf.data(), 0, buf.size());
                memset(buf.data() + 128, kGuardByte, kGuardBytes);
                Recv r = post_recv(n.worker(), buf.data(), 128, tag_of(i));
                swy_status_t st = finish_recv(n.worker(), r);
                ICHECK_MSG(st == SWY_OK, "receive #%llu completed with %d (%s)",
                           (unsigned long long)i, (int)st, swy_status_string(st));
                ICHECK_MSG(r.info.length == size_of(i), "receive #%llu: length %zu, expected %zu",
                           (unsigned long long)i, r.info.length, size_of(i));
                check_message(buf.data(), size_of(i), 0, i);
                ICHECK(guard_intact(buf.data() + 128));
            }
            swy_tag_recv_info_t info{};
            swy_message_h msg = nullptr;
            ICHECK_STATUS(swy_tag_probe_nb(n.worker(), 0, 0, 0, &info, &msg), SWY_ERR_NO_MESSAGE);
        }
        n.finish();
    }));
}

}  // namespace
}  // namespace swy_itest

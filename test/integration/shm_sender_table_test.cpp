// The sender table of a worker's shm segment (issue #18): one worker used to accept 1 024
// senders (endpoint 1 025 failed), and when a table was full the receiver could not open its
// reply lane, so synchronous sends and rendezvous hung with only a warning. Now the table is
// as large as SWY_SHM_MAX_SENDERS says, and running out is an error: on the endpoint being
// created, or on the requests of a peer that cannot be answered.
#include <string>
#include <vector>

#include "multiproc.h"

namespace swy_itest {
namespace {

constexpr int kSenders = 4;
constexpr int kEpsPerSender = 512;  // 2 048 endpoints to one worker in all
constexpr size_t kSmall = 64;
constexpr size_t kLarge = 1u << 20;  // a rendezvous
constexpr swy_tag_t kManyTag = 0x5E00000000000000ull;

swy_tag_t many_tag(int rank, int i) { return kManyTag | (swy_tag_t(rank) << 32) | swy_tag_t(i); }

swy_ep_h create_ep(swy_worker_h worker, const std::vector<unsigned char>& addr,
                   swy_status_t* status) {
    swy_ep_params_t p{};
    p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
    p.remote_address = addr.data();
    p.remote_address_length = addr.size();
    swy_ep_h ep = nullptr;
    *status = swy_ep_create(worker, &p, &ep);
    return ep;
}

void close_ep(swy_worker_h worker, swy_ep_h ep) {
    swy_request_h req = nullptr;
    swy_status_t st = swy_ep_close_nb(ep, SWY_EP_CLOSE_FLUSH, &req);
    if (st == SWY_INPROGRESS) {
        st = wait_request(worker, req, "endpoint close", 20);
        swy_request_free(req);
    }
    ICHECK_MSG(st == SWY_OK, "closing an endpoint gave %d (%s)", (int)st, swy_status_string(st));
}

// Ranks 1..4 each open 512 endpoints to rank 0 and send on every one of them; every 64th
// message is synchronous (its acknowledgement needs rank 0's reply lane) and every 128th a
// rendezvous. Rank 0 checks every byte.
TEST(ShmSenderTable, TwoThousandEndpointsToOneWorker) {
    RunOptions opts;
    opts.timeout_s = 120;
    EXPECT_TRUE(run_ranks(
        1 + kSenders,
        [](World& w) {
            Node n(w);
            n.publish();
            if (w.rank() == 0) {
                const int total = kSenders * kEpsPerSender;
                std::vector<std::vector<unsigned char>> bufs;
                std::vector<Recv> recvs;
                bufs.reserve(total);
                for (int r = 1; r <= kSenders; ++r) {
                    for (int i = 0; i < kEpsPerSender; ++i) {
                        const size_t len = i % 128 == 5 ? kLarge : kSmall;
                        bufs.emplace_back(len + kGuardBytes, kGuardByte);
                        recvs.push_back(
                            post_recv(n.worker(), bufs.back().data(), len, many_tag(r, i)));
                    }
                }
                w.barrier(n.worker(), 0);
                for (int k = 0; k < total; ++k) {
                    const int r = 1 + k / kEpsPerSender, i = k % kEpsPerSender;
                    const size_t len = i % 128 == 5 ? kLarge : kSmall;
                    ICHECK_MSG(finish_recv(n.worker(), recvs[k], 30) == SWY_OK,
                               "message from rank %d endpoint %d", r, i);
                    ICHECK(recvs[k].info.length == len);
                    ICHECK_PATTERN(bufs[k].data(), len, pattern_seed(len, r, i),
                                   "rank %d endpoint %d", r, i);
                    ICHECK(guard_intact(bufs[k].data() + len));
                }
                w.barrier(n.worker(), 1);
            } else {
                const std::vector<unsigned char> addr = w.address_of(0);
                std::vector<swy_ep_h> eps;
                for (int i = 0; i < kEpsPerSender; ++i) {
                    swy_status_t st;
                    eps.push_back(create_ep(n.worker(), addr, &st));
                    ICHECK_MSG(st == SWY_OK, "rank %d: endpoint %d to rank 0: %d (%s)", w.rank(), i,
                               (int)st, swy_status_string(st));
                }
                w.barrier(n.worker(), 0);
                std::vector<std::vector<unsigned char>> bufs;
                std::vector<Send> sends;
                for (int i = 0; i < kEpsPerSender; ++i) {
                    const size_t len = i % 128 == 5 ? kLarge : kSmall;
                    bufs.emplace_back(len);
                    fill_pattern(bufs.back().data(), len, pattern_seed(len, w.rank(), i));
                    sends.push_back(post_send(eps[i], bufs.back().data(), len,
                                              many_tag(w.rank(), i),
                                              i % 64 == 3 ? SWY_REQ_FLAG_SYNC : 0));
                }
                for (int i = 0; i < kEpsPerSender; ++i) {
                    swy_status_t st = finish_send(n.worker(), sends[i], 30);
                    ICHECK_MSG(st == SWY_OK, "send on endpoint %d: %d (%s)", i, (int)st,
                               swy_status_string(st));
                }
                w.barrier(n.worker(), 1);
                for (swy_ep_h ep : eps)
                    close_ep(n.worker(), ep);
            }
            n.finish();
        },
        opts));
}

NodeOptions table_of(int slots) {
    NodeOptions o;
    o.config = {{"TLS", "shm"}, {"SHM_MAX_SENDERS", std::to_string(slots)}};
    return o;
}

// Every worker's table has one slot. Rank 2 takes rank 1's; rank 1 then sends to rank 0, which
// cannot open a reply lane to rank 1: rank 1's synchronous send and rendezvous, and rank 0's
// rendezvous receive, end with an error instead of waiting forever. Rank 3 finds rank 0's one
// slot taken: its endpoint is refused at creation.
TEST(ShmSenderTable, FullTableIsAnErrorNotAHang) {
    RunOptions opts;
    opts.timeout_s = 60;
    EXPECT_TRUE(run_ranks(
        4,
        [](World& w) {
            Node n(w, table_of(1));
            n.publish();
            constexpr swy_tag_t kSyncTag = 0xF0, kLargeTag = 0xF1;
            if (w.rank() == 2) n.connect(1);  // fills rank 1's table
            w.barrier(n.worker(), 0);
            if (w.rank() == 1) n.connect(0);  // takes rank 0's one slot
            w.barrier(n.worker(), 1);
            if (w.rank() == 0) {
                std::vector<unsigned char> small(kSmall), large(kLarge);
                Recv rs = post_recv(n.worker(), small.data(), small.size(), kSyncTag);
                Recv rl = post_recv(n.worker(), large.data(), large.size(), kLargeTag);
                swy_status_t st = finish_recv(n.worker(), rs, 20);
                ICHECK_MSG(st == SWY_OK || st == SWY_ERR_NO_RESOURCE,
                           "the synchronous message (its data arrives): %d (%s)", (int)st,
                           swy_status_string(st));
                if (st == SWY_OK)
                    ICHECK_PATTERN(small.data(), kSmall, pattern_seed(kSmall, 1, 0), "sync");
                st = finish_recv(n.worker(), rl, 20);
                ICHECK_MSG(st == SWY_ERR_NO_RESOURCE || st == SWY_ERR_CONNECTION_RESET,
                           "a rendezvous receive from a peer we cannot answer: %d (%s)", (int)st,
                           swy_status_string(st));
            } else if (w.rank() == 1) {
                std::vector<unsigned char> small(kSmall), large(kLarge);
                fill_pattern(small.data(), kSmall, pattern_seed(kSmall, 1, 0));
                fill_pattern(large.data(), kLarge, pattern_seed(kLarge, 1, 1));
                Send ss = post_send(n.ep(0), small.data(), kSmall, kSyncTag, SWY_REQ_FLAG_SYNC);
                Send sl = post_send(n.ep(0), large.data(), kLarge, kLargeTag);
                swy_status_t st = finish_send(n.worker(), ss, 20);
                ICHECK_MSG(st == SWY_ERR_NO_RESOURCE,
                           "a synchronous send whose acknowledgement cannot come: %d (%s)", (int)st,
                           swy_status_string(st));
                st = finish_send(n.worker(), sl, 20);
                ICHECK_MSG(st == SWY_ERR_NO_RESOURCE || st == SWY_ERR_CONNECTION_RESET,
                           "a rendezvous send that cannot be answered: %d (%s)", (int)st,
                           swy_status_string(st));
            } else if (w.rank() == 3) {
                swy_status_t st;
                swy_ep_h ep = create_ep(n.worker(), w.address_of(0), &st);
                ICHECK_MSG(st == SWY_ERR_NO_RESOURCE && ep == nullptr,
                           "an endpoint to a worker whose sender table is full: %d (%s)", (int)st,
                           swy_status_string(st));
            }
            w.barrier(n.worker(), 2);
            // Failed endpoints close without flushing.
            if (w.rank() == 1) n.close(0, SWY_EP_CLOSE_FORCE);
            n.finish();
        },
        opts));
}

}  // namespace
}  // namespace swy_itest

// Unexpected messages through recycled descriptors and the request-free receive: a receive
// posted after a whole eager message arrived takes it at once (no request), and the
// descriptor (with a small buffer) goes back to the worker for the next unexpected message.
// Batches larger than the recycled pool, sizes around the kept-buffer limit (4096 B) in an
// order that hands each recycled buffer a smaller and then a larger message, synchronous
// sends (acknowledged by the at-once receive) and truncation on that path. Every byte is
// checked, and the guard bytes behind every buffer.
#include <algorithm>
#include <string>
#include <vector>

#include "multiproc.h"

namespace swy_itest {
namespace {

constexpr swy_tag_t kTag = 0x7E05000000000000ull;
constexpr int kBatch = 300;  // more than the worker keeps (256): the rest are freed

size_t size_of(int round, int i) {
    static const size_t kSizes[] = {0, 1, 3, 7, 8, 9, 16, 17, 64, 4095, 4096, 4097, 8, 4097, 2};
    constexpr int kCount = sizeof(kSizes) / sizeof(kSizes[0]);
    return kSizes[(i + 5 * round) % kCount];
}
// Every seventh receive (of a non-empty message) has one byte less room: truncated.
bool truncated(int i, size_t size) { return size != 0 && i % 7 == 3; }
bool sync_send(int i) { return i % 3 == 1; }

// Sender side of one round: kBatch messages with distinct tags.
void send_round(swy_worker_h worker, swy_ep_h ep, int rank, int round, std::vector<Send>* sends,
                std::vector<std::vector<unsigned char>>* out) {
    for (int i = 0; i < kBatch; ++i) {
        const size_t size = size_of(round, i);
        (*out)[i].assign(size, 0);
        fill_pattern((*out)[i].data(), size, pattern_seed(size, rank, round * kBatch + i));
        (*sends)[i] = post_send(ep, size ? (*out)[i].data() : nullptr, size,
                                kTag | (uint64_t(round) << 16) | uint64_t(i),
                                sync_send(i) ? SWY_REQ_FLAG_SYNC : 0);
    }
    (void)worker;
}

// Receiver side: wait until the whole round is unexpected, then receive it (odd rounds in
// reverse order, so descriptors come back in another order than they were taken).
void receive_round(swy_worker_h worker, int sender_rank, int round) {
    const swy_tag_t last = kTag | (uint64_t(round) << 16) | uint64_t(kBatch - 1);
    ICHECK_MSG(progress_until_unexpected(worker, last, ~swy_tag_t{0}, 20.0),
               "round %d: the last message never arrived", round);
    for (int k = 0; k < kBatch; ++k) {
        const int i = round % 2 ? kBatch - 1 - k : k;
        const size_t size = size_of(round, i);
        const size_t room = truncated(i, size) ? size - 1 : size;
        const swy_tag_t tag = kTag | (uint64_t(round) << 16) | uint64_t(i);
        std::vector<unsigned char> in(room + kGuardBytes, kGuardByte);
        Recv r = post_recv(worker, in.data(), room, tag);
        ICHECK_MSG(r.done,
                   "round %d message %d (%zu B): an unexpected whole message did not "
                   "complete at once",
                   round, i, size);
        const swy_status_t want = room < size ? SWY_ERR_MESSAGE_TRUNCATED : SWY_OK;
        ICHECK_MSG(r.status == want, "round %d message %d (%zu B into %zu): status %d (%s)", round,
                   i, size, room, (int)r.status, swy_status_string(r.status));
        ICHECK_MSG(r.info.length == size && r.info.sender_tag == tag,
                   "round %d message %d: info length %zu tag 0x%llx", round, i, r.info.length,
                   (unsigned long long)r.info.sender_tag);
        // The bytes that fit are the message's first bytes.
        std::vector<unsigned char> expect(size);
        fill_pattern(expect.data(), size, pattern_seed(size, sender_rank, round * kBatch + i));
        ICHECK_MSG(room == 0 || std::equal(in.begin(), in.begin() + room, expect.begin()),
                   "round %d message %d (%zu B): payload differs", round, i, size);
        ICHECK_MSG(guard_intact(in.data() + room), "round %d message %d: wrote past %zu B", round,
                   i, room);
    }
}

void finish_round(swy_worker_h worker, std::vector<Send>* sends, int round) {
    for (int i = 0; i < kBatch; ++i) {
        // A synchronous send is acknowledged by the receive that took it at once.
        const swy_status_t st = finish_send(worker, (*sends)[i]);
        ICHECK_MSG(st == SWY_OK, "round %d send %d (%s) completed with %d (%s)", round, i,
                   sync_send(i) ? "sync" : "plain", (int)st, swy_status_string(st));
    }
}

TEST(UnexpectedReuse, SelfRoundsThroughRecycledDescriptors) {
    EXPECT_TRUE(run_ranks(1, [](World& w) {
        NodeOptions o;
        o.config = {{"TLS", "self"}};
        Node n(w, o);
        n.connect_all(/*include_self=*/true);
        std::vector<Send> sends(kBatch);
        std::vector<std::vector<unsigned char>> out(kBatch);
        for (int round = 0; round < 4; ++round) {
            send_round(n.worker(), n.ep(0), 0, round, &sends, &out);
            receive_round(n.worker(), 0, round);
            finish_round(n.worker(), &sends, round);
        }
        n.finish();
    }));
}

TEST(UnexpectedReuse, ShmRoundsThroughRecycledDescriptors) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w);
        n.connect_all();
        std::vector<Send> sends(kBatch);
        std::vector<std::vector<unsigned char>> out(kBatch);
        for (int round = 0; round < 4; ++round) {
            if (w.rank() == 0) {
                send_round(n.worker(), n.ep(1), 0, round, &sends, &out);
                finish_round(n.worker(), &sends, round);
            } else {
                receive_round(n.worker(), 0, round);
            }
            w.barrier(n.worker());
        }
        n.finish();
    }));
}

}  // namespace
}  // namespace swy_itest

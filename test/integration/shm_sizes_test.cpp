// Two processes over shm: every size around every protocol boundary the endpoints report,
// powers of two up to 4 MiB and odd sizes, in both directions, with the receive posted before
// the message arrives (expected path) and after (unexpected path). Every byte is checked.
#include <vector>

#include "multiproc.h"

namespace swy_itest {
namespace {

enum class Path { kExpected, kUnexpected };

constexpr int kAttrBase = 0;  // scratch words for the published endpoint attributes

swy_tag_t round_tag(uint64_t round) { return 0x5A00000000000000ull | round; }

// One message from src to dst. Both ranks call it with the same arguments.
void exchange(World& w, Node& n, int src, int dst, size_t size, uint64_t round, Path path) {
    const swy_tag_t tag = round_tag(round);
    const uint64_t seed = pattern_seed(size, src, round);
    swy_worker_h worker = n.worker();
    if (w.rank() == src) {
        std::vector<unsigned char> buf(size);
        fill_pattern(buf.data(), size, seed);
        if (path == Path::kExpected) w.barrier(worker);  // the receive is posted
        Send s = post_send(n.ep(dst), size ? buf.data() : nullptr, size, tag);
        if (path == Path::kUnexpected) w.barrier(worker);  // sent; now the receiver posts
        swy_status_t st = finish_send(worker, s);
        ICHECK_MSG(st == SWY_OK, "send of %zu bytes (%s path) completed with %d (%s)", size,
                   path == Path::kExpected ? "expected" : "unexpected", (int)st,
                   swy_status_string(st));
    } else if (w.rank() == dst) {
        std::vector<unsigned char> buf(size + kGuardBytes, kGuardByte);
        Recv r;
        if (path == Path::kExpected) {
            r = post_recv(worker, buf.data(), size, tag);
            w.barrier(worker);
        } else {
            w.barrier(worker);
            // Let the message (or its first fragment / RTS) land in the unexpected queue.
            progress_until_unexpected(worker, tag, ~(swy_tag_t)0, 0.1);
            r = post_recv(worker, buf.data(), size, tag);
        }
        swy_status_t st = finish_recv(worker, r);
        const char* p = path == Path::kExpected ? "expected" : "unexpected";
        ICHECK_MSG(st == SWY_OK, "receive of %zu bytes (%s path) completed with %d (%s)", size, p,
                   (int)st, swy_status_string(st));
        ICHECK_MSG(r.info.length == size, "receive (%s path) reports length %zu, sent %zu", p,
                   r.info.length, size);
        ICHECK_MSG(r.info.sender_tag == tag, "receive reports tag 0x%llx, sent 0x%llx",
                   (unsigned long long)r.info.sender_tag, (unsigned long long)tag);
        ICHECK_PATTERN(buf.data(), size, seed, "size %zu, %s path, %d->%d", size, p, src, dst);
        ICHECK_MSG(guard_intact(buf.data() + size), "bytes written past a %zu-byte buffer", size);
    }
    w.barrier(worker);  // round done on both sides
}

TEST(ShmTransport, DeliversEverySizeAroundBoundaries) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w);
        n.connect_all();
        const int peer = 1 - w.rank();
        swy_ep_attr_t mine = n.query(peer);
        ICHECK(mine.transport != nullptr);
        ICHECK_MSG(std::string(mine.transport) == "shm", "TLS=shm endpoint uses transport '%s'",
                   mine.transport);
        ICHECK_MSG(mine.connected == 1, "fresh endpoint reports connected=%d", mine.connected);
        ICHECK_MSG(mine.bcopy_max_size > 0, "shm endpoint reports bcopy_max_size 0");
        ICHECK_MSG(mine.pio == 0 || mine.pio_max_size > 0, "pio=1 but pio_max_size 0");
        publish_attr(w, kAttrBase, mine);
        std::vector<swy_ep_attr_t> attrs{read_attr(w, kAttrBase, 0), read_attr(w, kAttrBase, 1)};
        const std::vector<size_t> sizes = boundary_sizes(attrs);
        if (w.rank() == 0) {
            fprintf(stderr, "[rank 0] pio_max_size %zu/%zu, bcopy_max_size %zu/%zu, %zu sizes\n",
                    attrs[0].pio_max_size, attrs[1].pio_max_size, attrs[0].bcopy_max_size,
                    attrs[1].bcopy_max_size, sizes.size());
        }
        uint64_t round = 0;
        for (size_t size : sizes) {
            for (Path path : {Path::kExpected, Path::kUnexpected}) {
                exchange(w, n, 0, 1, size, round++, path);
                exchange(w, n, 1, 0, size, round++, path);
            }
        }
        n.finish();
    }));
}

TEST(ShmTransport, DeliversBackToBackMessagesOfEverySizeInOrder) {
    // All sizes in flight at once from each side, in both directions at the same time: the
    // protocols for different sizes must not overtake each other on one endpoint.
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w);
        n.connect_all();
        const int peer = 1 - w.rank();
        publish_attr(w, kAttrBase, n.query(peer));
        std::vector<swy_ep_attr_t> attrs{read_attr(w, kAttrBase, 0), read_attr(w, kAttrBase, 1)};
        const std::vector<size_t> sizes = boundary_sizes(attrs, 1u << 20);
        const swy_tag_t tag = 0x5B00000000000000ull;  // one tag: order decides the match

        std::vector<std::vector<unsigned char>> rbufs, sbufs;
        std::vector<Recv> recvs;
        std::vector<Send> sends;
        for (size_t i = 0; i < sizes.size(); ++i) {  // receives first on both sides...
            rbufs.emplace_back(sizes[i] + kGuardBytes, kGuardByte);
            recvs.push_back(post_recv(n.worker(), rbufs[i].data(), sizes[i], tag));
        }
        w.barrier(n.worker());
        for (size_t i = 0; i < sizes.size(); ++i) {  // ...then every send without waiting
            sbufs.emplace_back(sizes[i]);
            fill_pattern(sbufs[i].data(), sizes[i], pattern_seed(sizes[i], w.rank(), i));
            sends.push_back(post_send(n.ep(peer), sbufs[i].data(), sizes[i], tag));
        }
        for (auto& s : sends)
            ICHECK_OK(finish_send(n.worker(), s));
        for (size_t i = 0; i < sizes.size(); ++i) {
            swy_status_t st = finish_recv(n.worker(), recvs[i]);
            ICHECK_MSG(st == SWY_OK, "receive #%zu (%zu bytes) completed with %d (%s)", i, sizes[i],
                       (int)st, swy_status_string(st));
            ICHECK_MSG(recvs[i].info.length == sizes[i],
                       "receive #%zu matched a %zu-byte message, expected %zu (out of order?)", i,
                       recvs[i].info.length, sizes[i]);
            ICHECK_PATTERN(rbufs[i].data(), sizes[i], pattern_seed(sizes[i], peer, i),
                           "message #%zu of %zu bytes", i, sizes[i]);
            ICHECK(guard_intact(rbufs[i].data() + sizes[i]));
        }
        n.finish();
    }));
}

}  // namespace
}  // namespace swy_itest

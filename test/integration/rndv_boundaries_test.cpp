// Two processes over shm with CMA, the built-in cost figures: every edge of the protocol table
// the endpoint reports (threshold - 1, threshold, threshold + 1), and the size from which a
// GET is split (SWY_RNDV_SPLIT_MIN), carried in both directions, with the receive posted
// before the message arrives and after; every byte checked. And the middle sizes take no
// pipelined rendezvous on such a lane: GET (plain or split) moves them (issue 17).
#include <set>
#include <string>
#include <vector>

#include "multiproc.h"
#include "proto_table_text.h"

namespace swy_itest {
namespace {

constexpr swy_tag_t kTag = 0x5D00000000000000ull;
constexpr size_t kSplitMin = 128 << 10;  // SWY_RNDV_SPLIT_MIN's default
constexpr int kCountWord = 0;            // scratch: how many sizes rank 0 published
constexpr int kSizeBase = 1;             // scratch: the sizes
constexpr int kMaxSizes = 64;

using Row = ProtoRow;

NodeOptions shm_with_cma() {
    NodeOptions o;
    // /dev/null: the built-in figures, whatever calibration file this host has.
    o.config = {{"TLS", "shm,cma"}, {"CALIBRATION_FILE", "/dev/null"}, {"OVERSUBSCRIBED", "no"}};
    return o;
}

enum class Path { kExpected, kUnexpected };

/// One message of @p size bytes from @p src to the other rank; both ranks call it.
void exchange(World& w, Node& n, int src, size_t size, uint64_t round, Path path) {
    swy_worker_h wk = n.worker();
    const swy_tag_t tag = kTag | round;
    const uint64_t seed = pattern_seed(size, src, round);
    const char* p = path == Path::kExpected ? "expected" : "unexpected";
    if (w.rank() == src) {
        std::vector<unsigned char> buf(size);
        fill_pattern(buf.data(), size, seed);
        if (path == Path::kExpected) w.barrier(wk);  // the receive is posted
        Send s = post_send(n.ep(1 - src), buf.data(), size, tag);
        if (path == Path::kUnexpected) w.barrier(wk);  // sent; now the receiver posts
        const swy_status_t st = finish_send(wk, s);
        ICHECK_MSG(st == SWY_OK, "send of %zu bytes (%s path) completed with %s", size, p,
                   swy_status_string(st));
    } else {
        std::vector<unsigned char> buf(size + kGuardBytes, kGuardByte);
        Recv r;
        if (path == Path::kExpected) {
            r = post_recv(wk, buf.data(), size, tag);
            w.barrier(wk);
        } else {
            w.barrier(wk);
            progress_until_unexpected(wk, tag, ~(swy_tag_t)0, 0.1);
            r = post_recv(wk, buf.data(), size, tag);
        }
        const swy_status_t st = finish_recv(wk, r);
        ICHECK_MSG(st == SWY_OK, "receive of %zu bytes (%s path) completed with %s", size, p,
                   swy_status_string(st));
        ICHECK_MSG(r.info.length == size, "receive of %zu bytes reports %zu", size, r.info.length);
        ICHECK_PATTERN(buf.data(), size, seed, "size %zu, %s path, from rank %d", size, p, src);
        ICHECK_MSG(guard_intact(buf.data() + size), "bytes written past a %zu-byte buffer", size);
    }
    w.barrier(wk);
}

TEST(RndvBoundaries, EveryTableEdgeAndTheSplitSizeArriveIntact) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w, shm_with_cma());
        n.connect_all();
        if (w.rank() == 0) {
            std::string text;
            const std::vector<Row> rows = host_table(n.ep(1), &text);
            std::set<size_t> sizes;
            auto around = [&](size_t v) {
                sizes.insert(v - 1);
                sizes.insert(v);
                sizes.insert(v + 1);
            };
            bool rendezvous = false;
            for (const Row& r : rows) {
                if (r.lo > 0) around(r.lo);
                rendezvous = rendezvous || r.proto.rfind("rndv_", 0) == 0;
            }
            ICHECK_MSG(rendezvous, "a shm lane with CMA has no rendezvous:\n%s", text.c_str());
            around(kSplitMin);
            ICHECK_MSG(sizes.size() <= kMaxSizes, "%zu sizes", sizes.size());
            fprintf(stderr, "[rank 0] table:\n%s[rank 0] %zu sizes around its edges\n",
                    text.c_str(), sizes.size());
            int i = 0;
            for (size_t s : sizes)
                w.scratch(kSizeBase + i++).store(s, std::memory_order_relaxed);
            w.scratch(kCountWord).store(sizes.size(), std::memory_order_release);
        }
        w.wait_scratch_at_least(kCountWord, 1);
        const size_t count = w.scratch(kCountWord).load(std::memory_order_acquire);
        uint64_t round = 0;
        for (size_t i = 0; i < count; ++i) {
            const size_t size = w.scratch(kSizeBase + static_cast<int>(i)).load();
            for (Path path : {Path::kExpected, Path::kUnexpected}) {
                exchange(w, n, 0, size, round++, path);
                exchange(w, n, 1, size, round++, path);
            }
        }
        n.finish();
    }));
}

// The pipeline streams every fragment through the sender's CPU after a round trip; on a lane
// that reaches its peer with CMA the receiver's GET (split from SWY_RNDV_SPLIT_MIN) moves the
// middle sizes instead, and the pipeline stays the fallback of a refused GET.
TEST(RndvBoundaries, NoPipelineOnALaneWithCma) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w, shm_with_cma());
        n.connect_all();
        std::string text;
        const std::vector<Row> rows = host_table(n.ep(1 - w.rank()), &text);
        for (const Row& r : rows) {
            ICHECK_MSG(r.proto != "rndv_pipeline", "%zu..%zu takes rndv_pipeline:\n%s", r.lo, r.hi,
                       text.c_str());
        }
        ICHECK_MSG(rows.back().proto == "rndv_get_cma", "large messages take %s:\n%s",
                   rows.back().proto.c_str(), text.c_str());
        n.finish();
    }));
}

}  // namespace
}  // namespace swy_itest

// SWY_RNDV_SCHEME=get|put|pipeline: the endpoint's table names that scheme, and only it, for
// every size from the rendezvous threshold on, and a message carried by it arrives intact.
// With GET in force the receiver needs nothing from the sender: a large message completes
// while the sender sleeps without progressing.
#include <string>
#include <vector>

#include "multiproc.h"
#include "proto_table_text.h"

namespace swy_itest {
namespace {

constexpr swy_tag_t kTag = 0x5200000000000000ull;

using Row = ProtoRow;

NodeOptions forced(const char* scheme) {
    NodeOptions o;
    o.config = {{"TLS", "shm,cma"}, {"RNDV_SCHEME", scheme}};
    return o;
}

/// Check that every rendezvous range of rank 0's table to rank 1 is @p expected, that there is
/// one, and that it covers @p size; then send @p size bytes 0 → 1 and verify them.
void forced_scheme_carries(const char* scheme, const char* expected, size_t size) {
    EXPECT_TRUE(run_ranks(2, [&](World& w) {
        Node n(w, forced(scheme));
        n.connect_all();
        swy_worker_h wk = n.worker();
        const uint64_t seed = pattern_seed(size, 0, 1);
        if (w.rank() == 0) {
            std::string text;
            const std::vector<Row> rows = host_table(n.ep(1), &text);
            bool any = false;
            for (const Row& r : rows) {
                if (r.proto.rfind("rndv_", 0) != 0) continue;
                any = true;
                ICHECK_MSG(r.proto == expected, "SWY_RNDV_SCHEME=%s, yet %zu.. uses %s:\n%s",
                           scheme, r.lo, r.proto.c_str(), text.c_str());
            }
            ICHECK_MSG(any, "SWY_RNDV_SCHEME=%s leaves no rendezvous at all:\n%s", scheme,
                       text.c_str());
            ICHECK_MSG(rows.back().proto == expected && rows.back().lo <= size,
                       "%zu bytes do not take %s:\n%s", size, expected, text.c_str());
            std::vector<unsigned char> buf(size);
            fill_pattern(buf.data(), size, seed);
            w.barrier(wk);
            send_blocking(wk, n.ep(1), buf.data(), size, kTag);
        } else {
            std::vector<unsigned char> buf(size + kGuardBytes, kGuardByte);
            Recv r = post_recv(wk, buf.data(), size, kTag);
            w.barrier(wk);
            ICHECK_OK(finish_recv(wk, r));
            ICHECK(r.info.length == size);
            ICHECK_MSG(verify_pattern(buf.data(), size, seed) == size, "payload corrupted");
            ICHECK(guard_intact(buf.data() + size));
        }
        n.finish();
    }));
}

TEST(RndvScheme, GetIsTheOnlyRendezvousWhenForced) {
    forced_scheme_carries("get", "rndv_get_cma", 1 << 20);
}

TEST(RndvScheme, PutIsTheOnlyRendezvousWhenForced) {
    forced_scheme_carries("put", "rndv_put_cma", 1 << 20);
}

TEST(RndvScheme, PipelineIsTheOnlyRendezvousWhenForced) {
    forced_scheme_carries("pipeline", "rndv_pipeline", 1 << 20);
}

// GET needs nothing from the sender once its RTS is out: the receiver completes while the
// sender sleeps for 3 s without calling into Switchyard. Proven by order, not by time: the
// sender raises "awake" only after its sleep, and the receiver must finish before that.
TEST(RndvScheme, GetCompletesWhileTheSenderSleeps) {
    constexpr size_t kSize = 4 << 20;  // well above the split size a default receiver uses
    EXPECT_TRUE(run_ranks(2, [&](World& w) {
        Node n(w, forced("get"));
        n.connect_all();
        swy_worker_h wk = n.worker();
        const uint64_t seed = pattern_seed(kSize, 0, 7);
        std::atomic<uint64_t>& awake = w.scratch(0);
        if (w.rank() == 0) {
            std::string text;
            const std::vector<Row> rows = host_table(n.ep(1), &text);
            ICHECK_MSG(rows.back().proto == "rndv_get_cma" && rows.back().lo <= kSize,
                       "%zu bytes do not take rndv_get_cma:\n%s", kSize, text.c_str());
            std::vector<unsigned char> buf(kSize);
            fill_pattern(buf.data(), kSize, seed);
            w.barrier(wk);
            Send s = post_send(n.ep(1), buf.data(), kSize, kTag | 1);
            ICHECK_MSG(!s.done, "a 4 MiB send completed before any receiver pulled it");
            sleep(3);  // no progress: only the RTS is out
            awake.store(1, std::memory_order_release);
            ICHECK_OK(finish_send(wk, s));
        } else {
            std::vector<unsigned char> buf(kSize);
            Recv r = post_recv(wk, buf.data(), kSize, kTag | 1);
            w.barrier(wk);
            ICHECK_OK(finish_recv(wk, r, 20.0));
            ICHECK_MSG(awake.load(std::memory_order_acquire) == 0,
                       "the receive completed only after the sender woke up");
            ICHECK(r.info.length == kSize);
            ICHECK_MSG(verify_pattern(buf.data(), kSize, seed) == kSize, "payload corrupted");
        }
        n.finish();
    }));
}

}  // namespace
}  // namespace swy_itest

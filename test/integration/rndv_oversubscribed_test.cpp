// An oversubscribed host (SWY_OVERSUBSCRIBED=yes, or auto with SWY_LOCAL_PROCS above
// SWY_OVERSUBSCRIBED_PER_CORE per core): every rendezvous over shm is a plain GET, from the
// first size that needs a second eager fragment; with fewer processes per core the idle
// host's choice stands; the printed table says so and why; messages at threshold-1,
// threshold and threshold+1 arrive intact; and a large receive completes while its sender
// sleeps (no pipeline fragments, no split tail to wait for), with the default
// SWY_RNDV_SCHEME=auto.
#include <sched.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "multiproc.h"
#include "proto_table_text.h"

namespace swy_itest {
namespace {

constexpr swy_tag_t kTag = 0x5300000000000000ull;

using Row = ProtoRow;

NodeOptions busy_host(const char* mode, const char* local_procs) {
    NodeOptions o;
    o.config = {{"TLS", "shm,cma"},
                {"RNDV_SCHEME", "auto"},
                {"OVERSUBSCRIBED", mode},
                {"LOCAL_PROCS", local_procs}};
    return o;
}

/// The first rendezvous size of rank 0's table to rank 1, after checking that every
/// rendezvous range is rndv_get_cma and says it is there for oversubscription (@p why null:
/// that no range mentions oversubscription).
size_t get_threshold(Node& n, const char* why) {
    std::string text;
    const std::vector<Row> rows = host_table(n.ep(1), &text);
    size_t thresh = SIZE_MAX;
    for (const Row& r : rows) {
        if (why == nullptr) {
            ICHECK_MSG(r.line.find("oversubscribed") == std::string::npos,
                       "not oversubscribed, yet:\n%s", text.c_str());
        }
        if (r.proto.rfind("rndv_", 0) != 0) continue;
        if (thresh == SIZE_MAX) thresh = r.lo;
        if (why == nullptr) continue;
        ICHECK_MSG(r.proto == "rndv_get_cma", "oversubscribed, yet %zu.. uses %s:\n%s", r.lo,
                   r.proto.c_str(), text.c_str());
        ICHECK_MSG(r.line.find("oversubscribed: ") != std::string::npos &&
                       r.line.find(why) != std::string::npos,
                   "the range does not say why (%s):\n%s", why, text.c_str());
    }
    ICHECK_MSG(thresh != SIZE_MAX && thresh > 1, "no rendezvous at all:\n%s", text.c_str());
    return thresh;
}

/// The cores the library counts (protocols/oversubscription.h, usable_cores()).
unsigned usable_cores() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 1) {
        return static_cast<unsigned>(CPU_COUNT(&set));
    }
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? static_cast<unsigned>(online) : 1;
}

/// SWY_OVERSUBSCRIBED=auto with @p local_procs: rendezvous from a threshold of at least
/// @p min_thresh, by GET for oversubscription that the table names with @p why (null: not
/// oversubscribed); sizes around it arrive byte for byte.
void get_carries_every_size(const std::string& local_procs, const char* why, size_t min_thresh) {
    EXPECT_TRUE(run_ranks(2, [&](World& w) {
        Node n(w, busy_host("auto", local_procs.c_str()));
        n.connect_all();
        swy_worker_h wk = n.worker();
        std::atomic<uint64_t>& shared_thresh = w.scratch(0);
        if (w.rank() == 0) shared_thresh.store(get_threshold(n, why));
        w.barrier(wk);
        const size_t thresh = shared_thresh.load();
        ICHECK_MSG(thresh >= min_thresh, "GET from %zu B, expected from %zu B or later", thresh,
                   min_thresh);
        for (size_t size : {thresh - 1, thresh, thresh + 1, size_t{1} << 20}) {
            const uint64_t seed = pattern_seed(size, 0, 3);
            if (w.rank() == 0) {
                std::vector<unsigned char> buf(size);
                fill_pattern(buf.data(), size, seed);
                w.barrier(wk);
                send_blocking(wk, n.ep(1), buf.data(), size, kTag | size);
            } else {
                std::vector<unsigned char> buf(size + kGuardBytes, kGuardByte);
                Recv r = post_recv(wk, buf.data(), size, kTag | size);
                w.barrier(wk);
                ICHECK_OK(finish_recv(wk, r));
                ICHECK(r.info.length == size);
                ICHECK_MSG(verify_pattern(buf.data(), size, seed) == size, "%zu bytes corrupted",
                           size);
                ICHECK(guard_intact(buf.data() + size));
            }
        }
        n.finish();
    }));
}

// More local processes than any host has cores (so more than 4 per core): GET from the first
// size that needs a second fragment.
TEST(RndvOversubscribed, GetFromTheThresholdCarriesEverySize) {
    get_carries_every_size("100000", "100000 local processes on ", 2);
}

// Two processes per core (at most SWY_OVERSUBSCRIBED_PER_CORE): not oversubscribed. Eager
// keeps the sizes that need several fragments, and the rendezvous the idle host picks starts
// past them; sizes around it arrive byte for byte.
TEST(RndvOversubscribed, TwoProcessesPerCoreKeepTheIdleChoice) {
    const std::string procs = std::to_string(2 * usable_cores());
    // Past two default fragments (8224 B each, docs/protocols.md): an oversubscribed host's
    // GET would start at 8241 B.
    get_carries_every_size(procs, nullptr, 2 * 8224 + 1);
}

// The receiver needs nothing from the sender once the RTS is out, even for a message far
// above the split size (an idle host splits it: the sender would put the tail). Proven by
// order, not by time: the sender raises "awake" only after its sleep.
TEST(RndvOversubscribed, LargeReceiveCompletesWhileTheSenderSleeps) {
    constexpr size_t kSize = 4 << 20;
    EXPECT_TRUE(run_ranks(2, [&](World& w) {
        Node n(w, busy_host("yes", "0"));
        n.connect_all();
        swy_worker_h wk = n.worker();
        const uint64_t seed = pattern_seed(kSize, 0, 9);
        std::atomic<uint64_t>& awake = w.scratch(1);
        if (w.rank() == 0) {
            ICHECK(get_threshold(n, "SWY_OVERSUBSCRIBED=yes") < kSize);
            std::vector<unsigned char> buf(kSize);
            fill_pattern(buf.data(), kSize, seed);
            w.barrier(wk);
            Send s = post_send(n.ep(1), buf.data(), kSize, kTag | 1);
            ICHECK_MSG(!s.done, "a 4 MiB send completed before any receiver pulled it");
            sleep(2);  // no progress: only the RTS is out
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

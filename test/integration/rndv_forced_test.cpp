// Every protocol forced through SWY_PROTO on both sides (TLS=shm,cma), and the default table
// exercised at the thresholds it reports: payloads verified byte for byte with guard bytes
// after the buffer, the receive posted before the RTS and after it. Plus a 4-rank all-to-all
// that mixes eager and rendezvous sizes, and synchronous sends over rendezvous.
#include <cinttypes>
#include <string>
#include <vector>

#include "multiproc.h"

namespace swy_itest {
namespace {

constexpr swy_tag_t kTag = 0x4F00000000000000ull;

struct TableRow {
    size_t lo;
    size_t hi;  // SIZE_MAX for "inf"
    std::string proto;
};

// Parse swy_ep_print_protocols(): "<lo>..<hi> <protocol>  <reason>" per line.
std::vector<TableRow> ep_table(swy_ep_h ep, std::string* text = nullptr) {
    std::vector<char> buf(32768);
    ICHECK_OK(swy_ep_print_protocols(ep, SWY_MEMTYPE_HOST, buf.data(), buf.size()));
    std::vector<TableRow> rows;
    const char* p = buf.data();
    while (*p != '\0') {
        const char* eol = strchr(p, '\n');
        std::string line(p, eol != nullptr ? (size_t)(eol - p) : strlen(p));
        unsigned long long lo = 0;
        char hi[32] = {0}, proto[64] = {0};
        ICHECK_MSG(sscanf(line.c_str(), "%llu..%31s %63s", &lo, hi, proto) == 3,
                   "cannot parse protocol table line '%s'", line.c_str());
        TableRow r;
        r.lo = lo;
        r.hi = strcmp(hi, "inf") == 0 ? SIZE_MAX : strtoull(hi, nullptr, 10);
        r.proto = proto;
        rows.push_back(r);
        if (eol == nullptr) break;
        p = eol + 1;
    }
    ICHECK_MSG(!rows.empty() && rows.front().lo == 0 && rows.back().hi == SIZE_MAX,
               "protocol table does not cover 0..inf:\n%s", buf.data());
    for (size_t i = 1; i < rows.size(); ++i)
        ICHECK_MSG(rows[i].lo == rows[i - 1].hi + 1, "protocol table has a gap:\n%s", buf.data());
    if (text != nullptr) *text = buf.data();
    return rows;
}

const std::string& proto_at(const std::vector<TableRow>& rows, size_t size) {
    for (const TableRow& r : rows)
        if (size <= r.hi) return r.proto;
    return rows.back().proto;
}

bool is_rndv(const std::string& proto) { return proto.rfind("rndv_", 0) == 0; }

std::vector<std::pair<std::string, std::string>> shm_cma(const std::string& proto = "") {
    std::vector<std::pair<std::string, std::string>> c{{"TLS", "shm,cma"}};
    if (!proto.empty()) c.push_back({"PROTO", proto});
    return c;
}

/// One message rank 0 → rank 1, receive posted before the send (posted_first) or after the
/// sender's RTS/eager data had time to arrive. Checks length, tag, payload, guard bytes, and
/// for rendezvous that the send does not complete before a receive matched.
void exchange(World& w, Node& n, size_t size, uint64_t idx, bool posted_first, bool rndv) {
    const swy_tag_t tag = kTag | (idx << 1) | (posted_first ? 1 : 0);
    swy_worker_h wk = n.worker();
    const uint64_t seed = pattern_seed(size, 0, idx);
    const char* order = posted_first ? "posted first" : "posted after the send";
    if (w.rank() == 0) {
        std::vector<unsigned char> buf(size);
        fill_pattern(buf.data(), size, seed);
        if (posted_first) w.barrier(wk);
        Send s = post_send(n.ep(1), size ? buf.data() : nullptr, size, tag);
        if (!posted_first) {
            if (rndv) {
                ICHECK_MSG(!s.done, "rendezvous send of %zu bytes completed immediately (%d)", size,
                           (int)s.status);
                auto until = deadline_in(0.002);
                while (Clock::now() < until) {
                    swy_worker_progress(wk);
                    ICHECK_MSG(swy_request_test(s.req) == SWY_INPROGRESS,
                               "rendezvous send of %zu bytes completed with no receive posted",
                               size);
                }
            }
            w.barrier(wk);
        }
        swy_status_t st = finish_send(wk, s);
        ICHECK_MSG(st == SWY_OK, "send of %zu bytes (%s) completed with %d (%s)", size, order,
                   (int)st, swy_status_string(st));
    } else {
        std::vector<unsigned char> buf(size + kGuardBytes, kGuardByte);
        Recv r;
        if (posted_first) {
            r = post_recv(wk, buf.data(), size, tag);
            w.barrier(wk);
        } else {
            w.barrier(wk);
            progress_until_unexpected(wk, tag, ~(swy_tag_t)0, 1.0);
            r = post_recv(wk, buf.data(), size, tag);
        }
        swy_status_t st = finish_recv(wk, r);
        ICHECK_MSG(st == SWY_OK, "receive of %zu bytes (%s) completed with %d (%s)", size, order,
                   (int)st, swy_status_string(st));
        ICHECK_MSG(r.info.length == size && r.info.sender_tag == tag,
                   "receive (%s) reports length %zu tag 0x%llx; sent %zu tag 0x%llx", order,
                   r.info.length, (unsigned long long)r.info.sender_tag, size,
                   (unsigned long long)tag);
        ICHECK_PATTERN(buf.data(), size, seed, "%zu bytes, %s", size, order);
        ICHECK_MSG(guard_intact(buf.data() + size),
                   "receive of %zu bytes (%s) wrote past the end of its buffer", size, order);
    }
    w.barrier(wk);
}

const std::vector<size_t> kFixedSizes{0,        1, 8, (64u << 10) + 1, 1u << 20, (4u << 20) + 3,
                                      16u << 20};

// ------------------------------------------------------------------------------------------
// Each protocol forced with SWY_PROTO on both sides
// ------------------------------------------------------------------------------------------

class RndvForced : public ::testing::TestWithParam<const char*> {};

TEST_P(RndvForced, EverySizeArrivesIntactPostedBeforeAndAfterTheSend) {
    const std::string proto = GetParam();
    EXPECT_TRUE(run_ranks(2, [&](World& w) {
        NodeOptions opts;
        opts.config = shm_cma(proto);
        Node n(w, opts);
        n.connect_all();
        const int peer = 1 - w.rank();
        swy_ep_attr_t a = n.query(peer);
        ICHECK_MSG(a.cma == 1, "TLS=shm,cma between two processes of this host: cma=0");
        std::string text;
        std::vector<TableRow> rows = ep_table(n.ep(peer), &text);
        // The table must say that the forced protocol runs: from 0 to inf, except eager_short
        // which can only carry up to pio_max (then eager_bcopy), and only with a PIO lane.
        if (proto == "eager_short") {
            if (a.pio) {
                ICHECK_MSG(rows.size() == 2 && rows[0].proto == "eager_short" &&
                               rows[0].hi == a.pio_max_size && rows[1].proto == "eager_bcopy",
                           "PROTO=eager_short with pio_max %zu gave:\n%s", a.pio_max_size,
                           text.c_str());
            } else {
                ICHECK_MSG(rows.size() == 1 && rows[0].proto == "eager_bcopy",
                           "PROTO=eager_short without PIO gave:\n%s", text.c_str());
            }
        } else {
            ICHECK_MSG(rows.size() == 1 && rows[0].proto == proto, "PROTO=%s gave:\n%s",
                       proto.c_str(), text.c_str());
        }
        uint64_t idx = 0;
        for (size_t size : kFixedSizes) {
            const bool rndv = is_rndv(proto_at(rows, size));
            for (bool posted_first : {true, false})
                exchange(w, n, size, idx++, posted_first, rndv);
        }
        n.finish();
    }));
}

INSTANTIATE_TEST_SUITE_P(RndvProtocols, RndvForced,
                         ::testing::Values("eager_short", "eager_bcopy", "rndv_get_cma",
                                           "rndv_put_cma", "rndv_pipeline"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                             return std::string(info.param);
                         });

// ------------------------------------------------------------------------------------------
// The default table, at the thresholds it reports
// ------------------------------------------------------------------------------------------

TEST(RndvDefaultTable, SizesAroundEveryReportedThresholdArriveIntact) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        NodeOptions opts;
        opts.config = shm_cma();
        Node n(w, opts);
        n.connect_all();
        const int peer = 1 - w.rank();
        ICHECK_MSG(n.query(peer).cma == 1, "TLS=shm,cma between two local processes: cma=0");
        std::string text;
        std::vector<TableRow> rows = ep_table(n.ep(peer), &text);
        bool any_rndv = false;
        for (const TableRow& r : rows)
            any_rndv = any_rndv || is_rndv(r.proto);
        ICHECK_MSG(any_rndv, "default table with CMA has no rendezvous range:\n%s", text.c_str());
        ICHECK_MSG(proto_at(rows, 16u << 20) == "rndv_get_cma" ||
                       proto_at(rows, 16u << 20) == "rndv_put_cma",
                   "default table with CMA does not use zero-copy at 16 MiB:\n%s", text.c_str());
        std::set<size_t> sizes(kFixedSizes.begin(), kFixedSizes.end());
        for (const TableRow& r : rows) {
            if (r.lo == 0 || r.lo > (64u << 20)) continue;
            sizes.insert(r.lo - 1);
            sizes.insert(r.lo);
            sizes.insert(r.lo + 1);
        }
        if (w.rank() == 0) fprintf(stderr, "[rank 0] default table:\n%s", text.c_str());
        uint64_t idx = 0;
        for (size_t size : sizes) {
            const bool rndv = is_rndv(proto_at(rows, size));
            for (bool posted_first : {true, false})
                exchange(w, n, size, idx++, posted_first, rndv);
        }
        n.finish();
    }));
}

// ------------------------------------------------------------------------------------------
// All-to-all
// ------------------------------------------------------------------------------------------

TEST(RndvAllToAll, FourRanksMixEagerAndRendezvousSizes) {
    EXPECT_TRUE(run_ranks(4, [](World& w) {
        NodeOptions opts;
        opts.config = shm_cma();
        Node n(w, opts);
        n.connect_all();
        swy_worker_h wk = n.worker();
        const std::vector<size_t> sizes{0, 100, 5000, (64u << 10) + 1, 1u << 20, (3u << 20) + 5};
        const int me = w.rank();
        auto tag_of = [](int src, size_t i) {
            return kTag | 0x00A0000000000000ull | ((swy_tag_t)src << 16) | i;
        };
        // Send buffers (to every peer the same content per size, seeded by the sender's rank).
        std::vector<std::vector<unsigned char>> sbufs;
        for (size_t i = 0; i < sizes.size(); ++i) {
            sbufs.emplace_back(sizes[i]);
            fill_pattern(sbufs[i].data(), sizes[i], pattern_seed(sizes[i], me, i));
        }
        struct Slot {
            int src;
            size_t i;
            std::vector<unsigned char> buf;
            Recv r;
        };
        std::vector<Slot> slots;
        for (int src = 0; src < w.size(); ++src) {
            if (src == me) continue;
            for (size_t i = 0; i < sizes.size(); ++i)
                slots.push_back(
                    {src, i, std::vector<unsigned char>(sizes[i] + kGuardBytes, kGuardByte), {}});
        }
        // Half the receives (odd source offset) posted before anybody sends, half afterwards.
        auto early = [&](const Slot& s) { return ((s.src - me + w.size()) % w.size()) % 2 == 1; };
        for (Slot& s : slots)
            if (early(s)) s.r = post_recv(wk, s.buf.data(), sizes[s.i], tag_of(s.src, s.i));
        w.barrier(wk);
        std::vector<Send> sends;
        for (int k = 1; k < w.size(); ++k) {
            const int dst = (me + k) % w.size();
            for (size_t i = 0; i < sizes.size(); ++i)
                sends.push_back(post_send(n.ep(dst), sizes[i] ? sbufs[i].data() : nullptr, sizes[i],
                                          tag_of(me, i)));
        }
        w.barrier(wk);
        for (Slot& s : slots)
            if (!early(s)) s.r = post_recv(wk, s.buf.data(), sizes[s.i], tag_of(s.src, s.i));
        for (Slot& s : slots) {
            swy_status_t st = finish_recv(wk, s.r);
            const size_t size = sizes[s.i];
            ICHECK_MSG(st == SWY_OK && s.r.info.length == size,
                       "receive of %zu bytes from rank %d: status %d (%s), length %zu", size, s.src,
                       (int)st, swy_status_string(st), s.r.info.length);
            ICHECK_PATTERN(s.buf.data(), size, pattern_seed(size, s.src, s.i),
                           "%zu bytes from rank %d", size, s.src);
            ICHECK_MSG(guard_intact(s.buf.data() + size), "%zu bytes from rank %d overran", size,
                       s.src);
        }
        for (Send& s : sends)
            ICHECK_OK(finish_send(wk, s));
        n.finish();
    }));
}

// ------------------------------------------------------------------------------------------
// Synchronous sends over rendezvous
// ------------------------------------------------------------------------------------------

class RndvSync : public ::testing::TestWithParam<const char*> {};

TEST_P(RndvSync, SynchronousSendWithRendezvousCompletesAfterMatch) {
    const std::string proto = GetParam();
    EXPECT_TRUE(run_ranks(2, [&](World& w) {
        NodeOptions opts;
        opts.config = shm_cma(proto == "all" ? "" : proto);
        Node n(w, opts);
        n.connect_all();
        swy_worker_h wk = n.worker();
        std::vector<TableRow> rows = ep_table(n.ep(1 - w.rank()));
        size_t rndv_from = SIZE_MAX;
        for (const TableRow& r : rows)
            if (is_rndv(r.proto)) {
                rndv_from = r.lo;
                break;
            }
        ICHECK_MSG(rndv_from <= (16u << 20), "no rendezvous range in the table (PROTO=%s)",
                   proto.c_str());
        std::vector<size_t> sizes{std::max<size_t>(rndv_from, 8), (4u << 20) + 3};
        if (rndv_from == 0) sizes.insert(sizes.begin(), 0);
        for (size_t k = 0; k < sizes.size(); ++k) {
            const size_t size = sizes[k];
            const swy_tag_t tag = kTag | 0x00B0000000000000ull | k;
            if (w.rank() == 0) {
                std::vector<unsigned char> buf(size);
                fill_pattern(buf.data(), size, pattern_seed(size, 0, k));
                Send s =
                    post_send(n.ep(1), size ? buf.data() : nullptr, size, tag, SWY_REQ_FLAG_SYNC);
                ICHECK_MSG(!s.done, "synchronous %zu-byte rendezvous send completed immediately",
                           size);
                auto until = deadline_in(0.05);
                while (Clock::now() < until) {
                    swy_worker_progress(wk);
                    ICHECK_MSG(swy_request_test(s.req) == SWY_INPROGRESS,
                               "synchronous %zu-byte send (%s) completed before a receive matched",
                               size, proto.c_str());
                }
                w.barrier(wk);
                ICHECK_OK(finish_send(wk, s));
            } else {
                w.barrier(wk);
                std::vector<unsigned char> buf(size + kGuardBytes, kGuardByte);
                Recv r = post_recv(wk, buf.data(), size, tag);
                ICHECK_OK(finish_recv(wk, r));
                ICHECK_MSG(r.info.length == size, "length %zu, sent %zu", r.info.length, size);
                ICHECK_PATTERN(buf.data(), size, pattern_seed(size, 0, k), "sync %zu bytes", size);
                ICHECK(guard_intact(buf.data() + size));
            }
            w.barrier(wk);
        }
        n.finish();
    }));
}

INSTANTIATE_TEST_SUITE_P(RndvSchemes, RndvSync,
                         ::testing::Values("all", "rndv_get_cma", "rndv_put_cma", "rndv_pipeline"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                             return std::string(info.param);
                         });

}  // namespace
}  // namespace swy_itest

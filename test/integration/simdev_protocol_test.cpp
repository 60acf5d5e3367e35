// The protocol suite with simulated device memory (SWY_MEMTYPES=host,simdev): simdev buffers
// on the sender, on the receiver and on both, over TLS=shm and TLS=shm,cma, with every
// protocol forced through SWY_PROTO and with the default tables. Every size class is sent
// (0, 1, 8, around each threshold that swy_ep_print_protocols() reports for simdev and for
// host memory and around the fragment limits, 64 KiB+1, 1 MiB, 4 MiB+3), the receive posted
// before the send and after it. Payloads and the guard bytes after every receive buffer are
// read back with swy_mem_copy(): a CPU access to simdev memory would kill the rank (SIGSEGV).
// Plus a 4-rank all-to-all where every rank has its own mix of memory types.
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "multiproc.h"
#include "simdev_util.h"

namespace swy_itest {
namespace {

constexpr swy_tag_t kTag = 0x5D00000000000000ull;

struct Placement {
    const char* name;
    swy_memtype_t send;  // rank 0's buffers
    swy_memtype_t recv;  // rank 1's buffers
};

const Placement kPlacements[] = {
    {"SimdevSender", SWY_MEMTYPE_SIMDEV, SWY_MEMTYPE_HOST},
    {"SimdevReceiver", SWY_MEMTYPE_HOST, SWY_MEMTYPE_SIMDEV},
    {"SimdevBoth", SWY_MEMTYPE_SIMDEV, SWY_MEMTYPE_SIMDEV},
};

const std::vector<size_t> kFixedSizes{0, 1, 8, (64u << 10) + 1, 1u << 20, (4u << 20) + 3};

/// The simdev table must not offer what device memory cannot do: PIO stores from the buffer
/// (eager_short) or CMA on its pages (rndv_get_cma, rndv_put_cma).
void check_device_table(const std::vector<ProtoRow>& rows, const std::string& text,
                        const std::string& proto) {
    for (const ProtoRow& r : rows) {
        ICHECK_MSG(r.proto == "eager_bcopy" || r.proto == "rndv_pipeline",
                   "PROTO=%s: the simdev table uses %s for %zu..%zu; device memory can only "
                   "take eager_bcopy or rndv_pipeline:\n%s",
                   proto.c_str(), r.proto.c_str(), r.lo, r.hi, text.c_str());
    }
    if (proto == "eager_short" || proto == "eager_bcopy" || proto == "rndv_get_cma" ||
        proto == "rndv_put_cma") {
        ICHECK_MSG(rows.size() == 1 && rows[0].proto == "eager_bcopy",
                   "PROTO=%s: expected eager_bcopy for every simdev size, got:\n%s", proto.c_str(),
                   text.c_str());
    } else if (proto == "rndv_pipeline") {
        ICHECK_MSG(rows.size() == 1 && rows[0].proto == "rndv_pipeline",
                   "PROTO=rndv_pipeline: expected the pipeline for every simdev size, got:\n%s",
                   text.c_str());
    }
}

/// Rank 0's size list: the fixed sizes, and -1/=/+1 around every range start of both tables
/// and around the endpoint's PIO and fragment limits.
std::vector<size_t> sizes_for(const std::vector<ProtoRow>& host,
                              const std::vector<ProtoRow>& device, const swy_ep_attr_t& a) {
    std::set<size_t> s(kFixedSizes.begin(), kFixedSizes.end());
    auto around = [&s](size_t v) {
        if (v == 0 || v == SIZE_MAX || v > (16u << 20)) return;
        s.insert(v - 1);
        s.insert(v);
        s.insert(v + 1);
    };
    for (const auto* rows : {&host, &device})
        for (const ProtoRow& r : *rows)
            around(r.lo);
    around(a.pio_max_size);
    around(a.bcopy_max_size);
    return std::vector<size_t>(s.begin(), s.end());
}

/// One message rank 0 → rank 1 from a @p p.send buffer into a @p p.recv buffer, the receive
/// posted before the send (posted_first) or once the message (or its RTS) had time to arrive.
void exchange(World& w, Node& n, const Placement& p, size_t size, uint64_t idx, bool posted_first,
              bool sender_rndv) {
    const swy_tag_t tag = kTag | (idx << 1) | (posted_first ? 1 : 0);
    swy_worker_h wk = n.worker();
    const uint64_t seed = pattern_seed(size, 0, idx);
    char what[160];
    snprintf(what, sizeof(what), "%zu bytes %s -> %s, receive %s", size, memtype_name(p.send),
             memtype_name(p.recv), posted_first ? "posted first" : "posted after the send");
    if (w.rank() == 0) {
        TestBuffer buf(n.context(), p.send, size);
        buf.fill(seed);
        if (posted_first) w.barrier(wk);
        Send s = post_send_mt(n.ep(1), buf.data(), size, p.send, tag);
        if (!posted_first) {
            if (sender_rndv) {
                // Rendezvous leaves the data in the sender's buffer until a receive matched.
                ICHECK_MSG(!s.done, "%s: rendezvous send completed immediately", what);
                auto until = deadline_in(0.002);
                while (Clock::now() < until) {
                    swy_worker_progress(wk);
                    ICHECK_MSG(swy_request_test(s.req) == SWY_INPROGRESS,
                               "%s: rendezvous send completed with no receive posted", what);
                }
            }
            w.barrier(wk);
        }
        swy_status_t st = finish_send(wk, s);
        ICHECK_MSG(st == SWY_OK, "%s: send completed with %d (%s)", what, (int)st,
                   swy_status_string(st));
    } else {
        TestBuffer buf(n.context(), p.recv, size);
        Recv r;
        if (posted_first) {
            r = post_recv_mt(wk, buf.data(), size, p.recv, tag);
            w.barrier(wk);
        } else {
            w.barrier(wk);
            progress_until_unexpected(wk, tag, ~(swy_tag_t)0, 1.0);
            r = post_recv_mt(wk, buf.data(), size, p.recv, tag);
        }
        swy_status_t st = finish_recv(wk, r);
        ICHECK_MSG(st == SWY_OK, "%s: receive completed with %d (%s)", what, (int)st,
                   swy_status_string(st));
        ICHECK_MSG(r.info.length == size && r.info.sender_tag == tag,
                   "%s: receive reports length %zu tag 0x%llx", what, r.info.length,
                   (unsigned long long)r.info.sender_tag);
        buf.check(size, seed, what);
    }
    w.barrier(wk);
}

// ------------------------------------------------------------------------------------------
// Two ranks: placement × TLS × PROTO
// ------------------------------------------------------------------------------------------

using Param = std::tuple<int, const char*, const char*>;  // placement, TLS, PROTO

class SimdevProtocol : public ::testing::TestWithParam<Param> {};

TEST_P(SimdevProtocol, EverySizeClassArrivesIntactPostedBeforeAndAfterTheSend) {
    const Placement& p = kPlacements[std::get<0>(GetParam())];
    const std::string tls = std::get<1>(GetParam());
    const std::string proto = std::get<2>(GetParam());
    EXPECT_TRUE(run_ranks(2, [&](World& w) {
        NodeOptions opts;
        opts.config = simdev_config(tls, proto == "all" ? "" : proto);
        Node n(w, opts);
        n.connect_all();
        const int peer = 1 - w.rank();
        std::string host_text, device_text;
        std::vector<ProtoRow> host = proto_table(n.ep(peer), SWY_MEMTYPE_HOST, &host_text);
        std::vector<ProtoRow> device = proto_table(n.ep(peer), SWY_MEMTYPE_SIMDEV, &device_text);
        check_device_table(device, device_text, proto);
        const std::vector<ProtoRow>& sender_rows = p.send == SWY_MEMTYPE_HOST ? host : device;
        std::vector<size_t> mine;
        if (w.rank() == 0) {
            mine = sizes_for(host, device, n.query(peer));
            if (proto == "all" && p.send == SWY_MEMTYPE_SIMDEV && p.recv == SWY_MEMTYPE_HOST) {
                fprintf(stderr, "[rank 0] TLS=%s host table:\n%s[rank 0] simdev table:\n%s",
                        tls.c_str(), host_text.c_str(), device_text.c_str());
            }
        }
        const std::vector<size_t> sizes = share_sizes(w, 0, mine);
        uint64_t idx = 0;
        for (size_t size : sizes) {
            const bool rndv = is_rndv_proto(proto_for(sender_rows, size));
            for (bool posted_first : {true, false})
                exchange(w, n, p, size, idx++, posted_first, rndv);
        }
        n.finish();
    }));
}

INSTANTIATE_TEST_SUITE_P(Placements, SimdevProtocol,
                         ::testing::Combine(::testing::Values(0, 1, 2),
                                            ::testing::Values("shm", "shm,cma"),
                                            ::testing::Values("all", "eager_short", "eager_bcopy",
                                                              "rndv_get_cma", "rndv_put_cma",
                                                              "rndv_pipeline")),
                         [](const ::testing::TestParamInfo<Param>& info) {
                             std::string tls = std::get<1>(info.param);
                             for (char& c : tls)
                                 if (c == ',') c = '_';
                             return std::string(kPlacements[std::get<0>(info.param)].name) + "_" +
                                    tls + "_" + std::get<2>(info.param);
                         });

// ------------------------------------------------------------------------------------------
// Four ranks, each with its own memory types
// ------------------------------------------------------------------------------------------

class SimdevAllToAll : public ::testing::TestWithParam<const char*> {};

TEST_P(SimdevAllToAll, FourRanksWithMixedMemoryTypesExchangeEverySize) {
    const std::string tls = GetParam();
    EXPECT_TRUE(run_ranks(4, [&](World& w) {
        NodeOptions opts;
        opts.config = simdev_config(tls);
        Node n(w, opts);
        n.connect_all();
        swy_worker_h wk = n.worker();
        // Rank r sends from send_type[r] and receives into recv_type[r].
        const swy_memtype_t send_type[4] = {SWY_MEMTYPE_HOST, SWY_MEMTYPE_SIMDEV,
                                            SWY_MEMTYPE_SIMDEV, SWY_MEMTYPE_HOST};
        const swy_memtype_t recv_type[4] = {SWY_MEMTYPE_HOST, SWY_MEMTYPE_SIMDEV, SWY_MEMTYPE_HOST,
                                            SWY_MEMTYPE_SIMDEV};
        const std::vector<size_t> sizes{0, 100, 5000, (64u << 10) + 1, 1u << 20, (3u << 20) + 5};
        const int me = w.rank();
        auto tag_of = [](int src, size_t i) {
            return kTag | 0x00A0000000000000ull | ((swy_tag_t)src << 16) | i;
        };
        std::vector<TestBuffer> sbufs;
        for (size_t i = 0; i < sizes.size(); ++i) {
            sbufs.emplace_back(n.context(), send_type[me], sizes[i]);
            sbufs.back().fill(pattern_seed(sizes[i], me, i));
        }
        struct Slot {
            int src;
            size_t i;
            TestBuffer buf;
            Recv r;
        };
        std::vector<Slot> slots;
        for (int src = 0; src < w.size(); ++src) {
            if (src == me) continue;
            for (size_t i = 0; i < sizes.size(); ++i)
                slots.push_back({src, i, TestBuffer(n.context(), recv_type[me], sizes[i]), {}});
        }
        // Half the receives (odd source offset) posted before anybody sends, half afterwards.
        auto early = [&](const Slot& s) { return ((s.src - me + w.size()) % w.size()) % 2 == 1; };
        for (Slot& s : slots)
            if (early(s))
                s.r = post_recv_mt(wk, s.buf.data(), sizes[s.i], recv_type[me], tag_of(s.src, s.i));
        w.barrier(wk);
        std::vector<Send> sends;
        for (int k = 1; k < w.size(); ++k) {
            const int dst = (me + k) % w.size();
            for (size_t i = 0; i < sizes.size(); ++i)
                sends.push_back(post_send_mt(n.ep(dst), sbufs[i].data(), sizes[i], send_type[me],
                                             tag_of(me, i)));
        }
        w.barrier(wk);
        for (Slot& s : slots)
            if (!early(s))
                s.r = post_recv_mt(wk, s.buf.data(), sizes[s.i], recv_type[me], tag_of(s.src, s.i));
        for (Slot& s : slots) {
            swy_status_t st = finish_recv(wk, s.r);
            const size_t size = sizes[s.i];
            char what[160];
            snprintf(what, sizeof(what), "%zu bytes from rank %d (%s -> %s, receive %s)", size,
                     s.src, memtype_name(send_type[s.src]), memtype_name(recv_type[me]),
                     early(s) ? "posted first" : "posted after the send");
            ICHECK_MSG(st == SWY_OK && s.r.info.length == size, "%s: status %d (%s), length %zu",
                       what, (int)st, swy_status_string(st), s.r.info.length);
            s.buf.check(size, pattern_seed(size, s.src, s.i), what);
        }
        for (Send& s : sends)
            ICHECK_OK(finish_send(wk, s));
        slots.clear();  // device buffers go back before their context does
        sbufs.clear();
        n.finish();
    }));
}

INSTANTIATE_TEST_SUITE_P(Transports, SimdevAllToAll, ::testing::Values("shm", "shm,cma"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                             std::string tls = info.param;
                             for (char& c : tls)
                                 if (c == ',') c = '_';
                             return tls;
                         });

}  // namespace
}  // namespace swy_itest

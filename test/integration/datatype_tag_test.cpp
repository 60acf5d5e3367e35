// Tag send and receive with iov and generic datatypes (switchyard/datatype.h), over shm (with
// CMA, so contiguous rendezvous is zero-copy GET), tcp, and self: every combination of
// non-contiguous and contiguous sender and receiver, at 0/1/8 bytes, one packet -1/0/+1,
// the rendezvous threshold -1/0/+1 (read from swy_ep_print_datatype_protocols) and large,
// with the receive posted before and after the message arrived. Every byte is checked, the
// gaps between iov entries and generic elements must stay untouched, and every generic
// operation's finish must have run exactly once when it completed.
#include <string>
#include <vector>

#include "datatype_util.h"
#include "multiproc.h"

namespace swy_itest {
namespace {

using dt::Counters;
using dt::Data;
using dt::Layout;

constexpr swy_tag_t kTag = 0xD7A0000000000000ull;
constexpr int kThreshBase = 0;  // scratch words: the sender's thresholds

struct Combo {
    Layout send, recv;
};
constexpr Combo kCombos[] = {
    {Layout::kIov, Layout::kIov},        {Layout::kGeneric, Layout::kGeneric},
    {Layout::kContig, Layout::kIov},     {Layout::kIov, Layout::kContig},
    {Layout::kContig, Layout::kGeneric}, {Layout::kGeneric, Layout::kIov},
};

NodeOptions options(const char* tls, const char* proto = nullptr) {
    NodeOptions o;
    o.config = {{"TLS", tls}};
    if (proto != nullptr) o.config.push_back({"PROTO", proto});
    return o;
}

/// Per-process test state: the generic type and its counters.
struct Types {
    Counters counters;
    swy_datatype_t generic = 0;
    Types() { generic = dt::make_strided_type(&counters); }
    ~Types() { swy_dt_destroy(generic); }
    void check_balanced(const char* what) const {
        ICHECK_MSG(counters.starts == counters.finishes,
                   "%s: generic start ran %llu times, finish %llu times", what,
                   (unsigned long long)counters.starts, (unsigned long long)counters.finishes);
    }
};

/// Check a completed receive of @p sent bytes into @p in (capacity in.length()).
void check_received(Data& in, const Recv& r, size_t sent, swy_tag_t tag, uint64_t seed,
                    const char* what) {
    const size_t cap = in.length();
    const swy_status_t want = sent > cap ? SWY_ERR_MESSAGE_TRUNCATED : SWY_OK;
    ICHECK_MSG(r.status == want, "%s: receive completed with %d (%s), expected %d", what,
               (int)r.status, swy_status_string(r.status), (int)want);
    ICHECK_MSG(r.info.length == sent && r.info.sender_tag == tag,
               "%s: receive reports length %zu tag 0x%llx; sent %zu tag 0x%llx", what,
               r.info.length, (unsigned long long)r.info.sender_tag, sent, (unsigned long long)tag);
    std::vector<uint8_t> want_bytes(sent);
    fill_pattern(want_bytes.data(), sent, seed);
    std::vector<uint8_t> got = in.gather();
    const size_t n = std::min(sent, cap);
    for (size_t i = 0; i < n; ++i)
        ICHECK_MSG(got[i] == want_bytes[i], "%s: byte %zu of %zu differs", what, i, n);
    ICHECK_MSG(in.guards_intact(), "%s: a byte outside the receive's layout was written", what);
}

/// One message @p src -> @p dst of @p size bytes, receive capacity @p cap (truncation when
/// smaller). src == dst: the self transport, one process.
void exchange(World& w, Node& n, Types& t, int src, int dst, Combo c, size_t size, size_t cap,
              uint64_t idx, bool posted_first) {
    const swy_tag_t tag = kTag | idx;
    const uint64_t seed = pattern_seed(size, src, idx);
    swy_worker_h wk = n.worker();
    char what[160];
    snprintf(what, sizeof(what), "%s -> %s, %zu bytes into %zu, %s", dt::layout_name(c.send),
             dt::layout_name(c.recv), size, cap, posted_first ? "expected" : "unexpected");
    const bool sender = w.rank() == src;
    const bool receiver = w.rank() == dst;
    Data out(c.send, sender ? size : 0, t.generic, &t.counters);
    Data in(c.recv, receiver ? cap : 0, t.generic, &t.counters);
    if (sender) out.fill(seed);
    Recv r;
    Send s;
    if (posted_first && receiver) r = post_recv_data(wk, in, tag);
    if (src != dst && posted_first) w.barrier(wk);
    if (sender) s = post_send_data(n.ep(dst), out, tag);
    if (!posted_first) {
        if (src != dst) w.barrier(wk);
        if (receiver) {
            progress_until_unexpected(wk, tag, ~(swy_tag_t)0, src == dst ? 0.1 : 1.0);
            r = post_recv_data(wk, in, tag);
        }
    }
    if (receiver) {
        finish_recv(wk, r);
        check_received(in, r, size, tag, seed, what);
    }
    if (sender) {
        const swy_status_t st = finish_send(wk, s);
        const swy_status_t ok = size > cap ? SWY_ERR_MESSAGE_TRUNCATED : SWY_OK;
        // A truncated rendezvous tells the sender; eager does not.
        ICHECK_MSG(st == SWY_OK || st == ok, "%s: send completed with %d (%s)", what, (int)st,
                   swy_status_string(st));
        ICHECK_MSG(out.guards_intact(), "%s: the send wrote into its own data", what);
    }
    t.check_balanced(what);
    if (src != dst) w.barrier(wk);
}

/// The sender's (rank 0's) thresholds, published so both ranks walk the same sizes.
dt::Thresholds shared_thresholds(World& w, Node& n, int peer, bool check_no_zcopy) {
    if (w.rank() == 0) {
        std::string text;
        std::vector<dt::DtRow> rows = dt::datatype_table(n.ep(peer), &text);
        const dt::Thresholds t = dt::thresholds_of(rows, text);
        fprintf(stderr, "[rank 0] datatype table:\n%s", text.c_str());
        if (check_no_zcopy) {
            for (const dt::DtRow& row : rows) {
                ICHECK_MSG(row.proto.find("rndv_") != 0 || row.proto == "rndv_pipeline",
                           "non-contiguous data would use %s:\n%s", row.proto.c_str(),
                           text.c_str());
            }
        }
        w.scratch(kThreshBase).store(t.single_packet_max);
        w.scratch(kThreshBase + 1).store(t.rndv_min);
        w.scratch(kThreshBase + 2).store(1, std::memory_order_release);
    }
    w.wait_scratch_at_least(kThreshBase + 2, 1);
    return {(size_t)w.scratch(kThreshBase).load(), (size_t)w.scratch(kThreshBase + 1).load()};
}

void every_combination(World& w, Node& n, int src, int dst) {
    Types t;
    const int peer = src == dst ? src : 1 - w.rank();
    const dt::Thresholds th = shared_thresholds(w, n, peer, true);
    const std::vector<size_t> sizes = dt::datatype_sizes(th, (2u << 20) + 3);
    uint64_t idx = 0;
    for (const Combo& c : kCombos) {
        for (size_t size : sizes) {
            for (bool posted_first : {true, false})
                exchange(w, n, t, src, dst, c, size, size, idx++, posted_first);
        }
    }
}

TEST(DatatypeTag, EveryCombinationAndBoundaryOverShm) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w, options("shm,cma"));
        n.connect_all();
        every_combination(w, n, 0, 1);
        n.finish();
    }));
}

TEST(DatatypeTag, EveryCombinationAndBoundaryOverTcp) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w, options("tcp,self"));
        n.connect_all();
        every_combination(w, n, 0, 1);
        n.finish();
    }));
}

TEST(DatatypeTag, EveryCombinationAndBoundaryOverSelf) {
    EXPECT_TRUE(run_ranks(1, [](World& w) {
        Node n(w, options("self"));
        n.connect_all(/*include_self=*/true);
        every_combination(w, n, 0, 0);
        n.finish();
    }));
}

// Few, large iov entries: tcp places pipeline fragments that fall inside one entry straight
// from the socket, and unpacks the ones that straddle entries.
TEST(DatatypeTag, LargeIovEntriesOverTcp) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w, options("tcp,self"));
        n.connect_all();
        Types t;
        swy_worker_h wk = n.worker();
        uint64_t idx = 4000;
        const size_t size = (8u << 20) + 11;
        for (size_t send_entries : {size_t{1}, size_t{3}}) {
            for (size_t recv_entries : {size_t{4}, size_t{2}, size_t{50}}) {
                const swy_tag_t tag = kTag | idx;
                const uint64_t seed = pattern_seed(size, 0, idx++);
                if (w.rank() == 0) {
                    Data out(Layout::kIov, size, t.generic, &t.counters, send_entries);
                    out.fill(seed);
                    w.barrier(wk);
                    Send s = post_send_data(n.ep(1), out, tag);
                    ICHECK_OK(finish_send(wk, s));
                } else {
                    Data in(Layout::kIov, size, t.generic, &t.counters, recv_entries);
                    Recv r = post_recv_data(wk, in, tag);
                    w.barrier(wk);
                    finish_recv(wk, r);
                    check_received(in, r, size, tag, seed, "large iov entries over tcp");
                }
                w.barrier(wk);
            }
        }
        n.finish();
    }));
}

// A contiguous rendezvous sender offers zero-copy (GET over CMA, or PUT when forced); a
// non-contiguous receive answers with the pipeline RTR, which the sender must take in that
// stage. Also the forced protocols for a non-contiguous sender (the table still says pipeline).
class DatatypeForcedRndv : public ::testing::TestWithParam<const char*> {};

TEST_P(DatatypeForcedRndv, ZeroCopyOfferIsAnsweredWithThePipeline) {
    const char* proto = GetParam();
    EXPECT_TRUE(run_ranks(2, [proto](World& w) {
        Node n(w, options("shm,cma", proto));
        n.connect_all();
        Types t;
        const dt::Thresholds th = shared_thresholds(w, n, 1 - w.rank(), true);
        ICHECK_MSG(th.rndv_min == 0, "PROTO=%s: rendezvous from %zu, not 0", proto, th.rndv_min);
        uint64_t idx = 0;
        for (size_t size : {size_t{1}, size_t{4097}, size_t{(1u << 20) + 5}}) {
            for (const Combo& c : kCombos) {
                for (bool posted_first : {true, false})
                    exchange(w, n, t, 0, 1, c, size, size, idx++, posted_first);
            }
        }
        n.finish();
    }));
}

INSTANTIATE_TEST_SUITE_P(Protocols, DatatypeForcedRndv,
                         ::testing::Values("rndv_get_cma", "rndv_put_cma", "rndv_pipeline"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                             return std::string(info.param);
                         });

// Truncation: a receive whose layout is shorter than the message gets exactly its packed
// length (the generic unpack checks it is never asked for more) and MESSAGE_TRUNCATED.
TEST(DatatypeTag, TruncatesIntoIovAndGeneric) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w, options("shm,cma"));
        n.connect_all();
        Types t;
        const dt::Thresholds th = shared_thresholds(w, n, 1 - w.rank(), false);
        uint64_t idx = 1000;
        for (size_t size :
             {size_t{9}, th.single_packet_max + 100, th.rndv_min + 77, size_t{(3u << 20) + 1}}) {
            for (Layout recv : {Layout::kIov, Layout::kGeneric}) {
                for (Layout send : {Layout::kContig, Layout::kIov, Layout::kGeneric}) {
                    for (bool posted_first : {true, false}) {
                        for (size_t cap : {size / 2 + 1, size_t{0}})
                            exchange(w, n, t, 0, 1, {send, recv}, size, cap, idx++, posted_first);
                    }
                }
            }
        }
        n.finish();
    }));
}

// Probe, then receive the probed message into a non-contiguous layout.
TEST(DatatypeTag, ProbedMessageIsReceivedIntoADatatype) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w, options("shm,cma"));
        n.connect_all();
        Types t;
        const dt::Thresholds th = shared_thresholds(w, n, 1 - w.rank(), false);
        swy_worker_h wk = n.worker();
        uint64_t idx = 2000;
        for (size_t size : {size_t{0}, size_t{8}, th.single_packet_max + 1, th.rndv_min + 1,
                            size_t{(2u << 20) + 9}}) {
            for (Layout recv : {Layout::kIov, Layout::kGeneric}) {
                const swy_tag_t tag = kTag | idx;
                const uint64_t seed = pattern_seed(size, 0, idx++);
                if (w.rank() == 0) {
                    Data out(Layout::kGeneric, size, t.generic, &t.counters);
                    out.fill(seed);
                    Send s = post_send_data(n.ep(1), out, tag);
                    w.barrier(wk);
                    ICHECK_OK(finish_send(wk, s));
                } else {
                    w.barrier(wk);
                    wait_for_unexpected(wk, tag);
                    swy_tag_recv_info_t info{};
                    swy_message_h msg = nullptr;
                    ICHECK_OK(swy_tag_probe_nb(wk, tag, ~(swy_tag_t)0, 1, &info, &msg));
                    ICHECK_MSG(info.length == size, "probe reports %zu bytes, sent %zu",
                               info.length, size);
                    Data in(recv, size, t.generic, &t.counters);
                    swy_request_params_t p = in.params();
                    swy_tag_recv_info_t imm{};
                    p.field_mask |= SWY_REQ_PARAM_FIELD_RECV_INFO;
                    p.recv_info = &imm;
                    Recv r;
                    const swy_status_t st =
                        swy_tag_msg_recv_nb(wk, in.buffer(), in.count(), msg, &p, &r.req);
                    adopt_recv_result(r, st, &imm, "swy_tag_msg_recv_nb");
                    finish_recv(wk, r);
                    check_received(in, r, size, tag, seed, "probe + msg_recv");
                }
                t.check_balanced("probe + msg_recv");
                w.barrier(wk);
            }
        }
        n.finish();
    }));
}

// The finish callback: once on cancel, once on an unpack failure (which the receive reports),
// and never for an operation refused before it started (device memory).
TEST(DatatypeTag, FinishRunsOnceOnCancelAndFailure) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w, options("shm,cma"));
        n.connect_all();
        Types t;
        swy_worker_h wk = n.worker();
        const dt::Thresholds th = shared_thresholds(w, n, 1 - w.rank(), false);
        if (w.rank() == 1) {
            // Cancel an unmatched generic receive.
            Data in(Layout::kGeneric, 100, t.generic, &t.counters);
            Recv r = post_recv_data(wk, in, kTag | 0xFFFF);
            ICHECK(!r.done);
            ICHECK_OK(swy_request_cancel(wk, r.req));
            ICHECK_STATUS(finish_recv(wk, r), SWY_ERR_CANCELED);
            ICHECK_MSG(t.counters.starts == 1 && t.counters.finishes == 1,
                       "cancel: %llu starts, %llu finishes", (unsigned long long)t.counters.starts,
                       (unsigned long long)t.counters.finishes);
            // Stated device memory is refused before the type is started.
            swy_request_params_t p = in.params();
            p.field_mask |= SWY_REQ_PARAM_FIELD_MEMTYPE;
            p.memtype = SWY_MEMTYPE_SIMDEV;
            swy_request_h req = nullptr;
            ICHECK_STATUS(swy_tag_recv_nb(wk, in.buffer(), in.count(), 1, ~(swy_tag_t)0, &p, &req),
                          SWY_ERR_UNSUPPORTED);
            ICHECK(req == nullptr);
            t.check_balanced("device memory refused");
        }
        // An unpack that fails fails the receive with its status, eager and rendezvous.
        uint64_t idx = 3000;
        for (size_t size : {size_t{64}, th.rndv_min + 1}) {
            const swy_tag_t tag = kTag | idx;
            const uint64_t seed = pattern_seed(size, 0, idx++);
            if (w.rank() == 0) {
                Data out(Layout::kIov, size, t.generic, &t.counters);
                out.fill(seed);
                Send s = post_send_data(n.ep(1), out, tag);
                w.barrier(wk);
                const swy_status_t st = finish_send(wk, s);
                ICHECK_MSG(st == SWY_OK, "send under a failing unpack: %d", (int)st);
            } else {
                Data in(Layout::kGeneric, size, t.generic, &t.counters);
                in.strided().unpack_status = SWY_ERR_ACCESS_DENIED;
                Recv r = post_recv_data(wk, in, tag);
                w.barrier(wk);
                ICHECK_STATUS(finish_recv(wk, r), SWY_ERR_ACCESS_DENIED);
                t.check_balanced("failed unpack");
            }
            w.barrier(wk);
        }
        n.finish();
    }));
}

}  // namespace
}  // namespace swy_itest

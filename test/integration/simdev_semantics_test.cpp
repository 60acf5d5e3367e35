// Matching semantics with simulated device memory (SWY_MEMTYPES=host,simdev): wildcard
// receives, probe and matched-probe receives and truncation into simdev buffers; buffers whose
// stated memory type is wrong are refused with an error status; and with the memory type left
// to detection (SWY_MEMTYPE_UNKNOWN, or no request parameters) simdev buffers are recognised.
// Every simdev byte is read and written through swy_mem_copy() (a CPU access faults).
#include <string>
#include <vector>

#include "multiproc.h"
#include "simdev_util.h"

namespace swy_itest {
namespace {

constexpr swy_tag_t kTag = 0x5E00000000000000ull;
constexpr const char* kTls = "shm,cma";

// Eager in one packet, eager in fragments, and rendezvous (pipeline for simdev buffers).
const std::vector<size_t> kSizes{0, 100, 5000, 40000, (1u << 20) + 3};

// ------------------------------------------------------------------------------------------
// Wildcard receives
// ------------------------------------------------------------------------------------------

TEST(SimdevSemantics, WildcardReceivesIntoSimdevMatchInSendOrder) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        NodeOptions opts;
        opts.config = simdev_config(kTls);
        Node n(w, opts);
        n.connect_all();
        swy_worker_h wk = n.worker();
        // Round 0: receives posted before the sends; round 1: after the messages arrived.
        // Mask 0 (any tag) for even messages, the high 32 bits only for odd ones.
        for (int round = 0; round < 2; ++round) {
            const bool posted_first = round == 0;
            auto tag_of = [&](size_t i) {
                return kTag | ((swy_tag_t)round << 24) | ((swy_tag_t)(i * 7 + 3) << 8);
            };
            if (w.rank() == 0) {
                std::vector<TestBuffer> bufs;
                for (size_t i = 0; i < kSizes.size(); ++i) {
                    // Alternate the sender's memory too.
                    bufs.emplace_back(n.context(), i % 2 ? SWY_MEMTYPE_SIMDEV : SWY_MEMTYPE_HOST,
                                      kSizes[i]);
                    bufs.back().fill(pattern_seed(kSizes[i], round, i));
                }
                if (posted_first) w.barrier(wk);
                std::vector<Send> sends;
                for (size_t i = 0; i < kSizes.size(); ++i)
                    sends.push_back(post_send_mt(n.ep(1), bufs[i].data(), kSizes[i], bufs[i].type(),
                                                 tag_of(i)));
                if (!posted_first) w.barrier(wk);
                for (Send& s : sends)
                    ICHECK_OK(finish_send(wk, s));
            } else {
                std::vector<TestBuffer> bufs;
                for (size_t size : kSizes)
                    bufs.emplace_back(n.context(), SWY_MEMTYPE_SIMDEV, size);
                std::vector<Recv> recvs(kSizes.size());
                auto post_all = [&] {
                    for (size_t i = 0; i < kSizes.size(); ++i) {
                        const swy_tag_t mask = i % 2 ? 0xFFFFFFFF00000000ull : 0;
                        recvs[i] = post_recv_mt(wk, bufs[i].data(), kSizes[i], SWY_MEMTYPE_SIMDEV,
                                                i % 2 ? kTag : 0, mask);
                    }
                };
                if (posted_first) {
                    post_all();
                    w.barrier(wk);
                } else {
                    w.barrier(wk);
                    wait_for_unexpected(wk, tag_of(kSizes.size() - 1));
                    post_all();
                }
                for (size_t i = 0; i < kSizes.size(); ++i) {
                    char what[128];
                    snprintf(what, sizeof(what), "wildcard receive %zu (%zu bytes, %s)", i,
                             kSizes[i], posted_first ? "posted first" : "posted after the send");
                    swy_status_t st = finish_recv(wk, recvs[i]);
                    ICHECK_MSG(st == SWY_OK, "%s: status %d (%s)", what, (int)st,
                               swy_status_string(st));
                    ICHECK_MSG(
                        recvs[i].info.sender_tag == tag_of(i) && recvs[i].info.length == kSizes[i],
                        "%s matched tag 0x%llx length %zu; expected message %zu (tag "
                        "0x%llx): wildcard receives must match in send order",
                        what, (unsigned long long)recvs[i].info.sender_tag, recvs[i].info.length, i,
                        (unsigned long long)tag_of(i));
                    bufs[i].check(kSizes[i], pattern_seed(kSizes[i], round, i), what);
                }
            }
            w.barrier(wk);
        }
        n.finish();
    }));
}

// ------------------------------------------------------------------------------------------
// Probe, then a matched-probe receive
// ------------------------------------------------------------------------------------------

TEST(SimdevSemantics, ProbeThenMatchedProbeReceiveIntoSimdev) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        NodeOptions opts;
        opts.config = simdev_config(kTls);
        Node n(w, opts);
        n.connect_all();
        swy_worker_h wk = n.worker();
        uint64_t idx = 0;
        for (swy_memtype_t send_type : {SWY_MEMTYPE_HOST, SWY_MEMTYPE_SIMDEV}) {
            for (size_t size : kSizes) {
                const swy_tag_t tag = kTag | 0x100000 | (idx << 4);
                const uint64_t seed = pattern_seed(size, 0, idx);
                char what[128];
                snprintf(what, sizeof(what), "matched-probe receive of %zu bytes (%s sender)", size,
                         memtype_name(send_type));
                if (w.rank() == 0) {
                    TestBuffer buf(n.context(), send_type, size);
                    buf.fill(seed);
                    Send s = post_send_mt(n.ep(1), buf.data(), size, send_type, tag);
                    w.barrier(wk);
                    ICHECK_OK(finish_send(wk, s));
                } else {
                    w.barrier(wk);
                    // Probe without removing (sees it, leaves it), then with removing.
                    swy_tag_recv_info_t info = wait_for_unexpected(wk, tag, ~(swy_tag_t)0xF);
                    ICHECK_MSG(info.length == size && info.sender_tag == tag,
                               "%s: probe reports length %zu tag 0x%llx", what, info.length,
                               (unsigned long long)info.sender_tag);
                    swy_message_h msg = nullptr;
                    swy_tag_recv_info_t info2{};
                    ICHECK_OK(swy_tag_probe_nb(wk, tag, ~(swy_tag_t)0xF, 1, &info2, &msg));
                    ICHECK(msg != nullptr && info2.length == size);
                    swy_message_h none = nullptr;
                    ICHECK_STATUS(swy_tag_probe_nb(wk, tag, ~(swy_tag_t)0xF, 0, nullptr, &none),
                                  SWY_ERR_NO_MESSAGE);
                    TestBuffer buf(n.context(), SWY_MEMTYPE_SIMDEV, info2.length);
                    Recv r;
                    swy_tag_recv_info_t imm{~(swy_tag_t)0, ~(size_t)0};
                    swy_request_params_t p{};
                    p.field_mask = SWY_REQ_PARAM_FIELD_MEMTYPE | SWY_REQ_PARAM_FIELD_RECV_INFO;
                    p.memtype = SWY_MEMTYPE_SIMDEV;
                    p.recv_info = &imm;
                    swy_status_t st =
                        swy_tag_msg_recv_nb(wk, buf.data(), info2.length, msg, &p, &r.req);
                    ICHECK_MSG(st == SWY_OK || st == SWY_INPROGRESS,
                               "%s: swy_tag_msg_recv_nb returned %d (%s)", what, (int)st,
                               swy_status_string(st));
                    adopt_recv_result(r, st, &imm, "swy_tag_msg_recv_nb");
                    st = finish_recv(wk, r);
                    ICHECK_MSG(st == SWY_OK, "%s: status %d (%s)", what, (int)st,
                               swy_status_string(st));
                    ICHECK_MSG(r.info.length == size && r.info.sender_tag == tag,
                               "%s: reports length %zu tag 0x%llx", what, r.info.length,
                               (unsigned long long)r.info.sender_tag);
                    buf.check(size, seed, what);
                }
                w.barrier(wk);
                ++idx;
            }
        }
        n.finish();
    }));
}

// ------------------------------------------------------------------------------------------
// Truncation
// ------------------------------------------------------------------------------------------

TEST(SimdevSemantics, TruncatedReceiveIntoSimdevKeepsThePrefixAndTheGuard) {
    struct Case {
        size_t size;
        size_t capacity;
    };
    const std::vector<Case> cases{{100, 50},
                                  {5000, 4000},
                                  {40000, 30001},
                                  {200000, 100001},
                                  {(1u << 20) + 3, (512u << 10) + 1},
                                  {(1u << 20) + 3, 0}};
    EXPECT_TRUE(run_ranks(2, [&](World& w) {
        NodeOptions opts;
        opts.config = simdev_config(kTls);
        Node n(w, opts);
        n.connect_all();
        swy_worker_h wk = n.worker();
        std::vector<ProtoRow> host = proto_table(n.ep(1 - w.rank()), SWY_MEMTYPE_HOST);
        std::vector<ProtoRow> device = proto_table(n.ep(1 - w.rank()), SWY_MEMTYPE_SIMDEV);
        const size_t follow_len = 1000;
        uint64_t idx = 0;
        for (swy_memtype_t send_type : {SWY_MEMTYPE_HOST, SWY_MEMTYPE_SIMDEV}) {
            for (const Case& c : cases) {
                for (bool posted_first : {true, false}) {
                    const swy_tag_t tag = kTag | 0x200000 | (idx << 4);
                    const uint64_t seed = pattern_seed(c.size, 0, idx);
                    const uint64_t follow_seed = pattern_seed(follow_len, 0, idx + 1000);
                    char what[160];
                    snprintf(what, sizeof(what),
                             "%zu bytes (%s sender) into a %zu-byte simdev "
                             "buffer, receive %s",
                             c.size, memtype_name(send_type), c.capacity,
                             posted_first ? "posted first" : "posted after the send");
                    if (w.rank() == 0) {
                        TestBuffer big(n.context(), send_type, c.size);
                        big.fill(seed);
                        TestBuffer follow(n.context(), send_type, follow_len);
                        follow.fill(follow_seed);
                        if (posted_first) w.barrier(wk);
                        Send s1 = post_send_mt(n.ep(1), big.data(), c.size, send_type, tag);
                        Send s2 = post_send_mt(n.ep(1), follow.data(), follow_len, send_type, tag);
                        if (!posted_first) w.barrier(wk);
                        const auto& rows = send_type == SWY_MEMTYPE_HOST ? host : device;
                        const bool rndv = is_rndv_proto(proto_for(rows, c.size));
                        // Eager senders are done once the data left; a rendezvous sender
                        // learns of the truncation.
                        const swy_status_t want = rndv ? SWY_ERR_MESSAGE_TRUNCATED : SWY_OK;
                        swy_status_t st = finish_send(wk, s1, 10);
                        ICHECK_MSG(st == want, "%s: %s sender completed with %d (%s), expected %s",
                                   what, proto_for(rows, c.size).c_str(), (int)st,
                                   swy_status_string(st), swy_status_string(want));
                        ICHECK_OK(finish_send(wk, s2, 10));
                    } else {
                        TestBuffer buf(n.context(), SWY_MEMTYPE_SIMDEV, c.capacity);
                        Recv r;
                        if (posted_first) {
                            r = post_recv_mt(wk, buf.data(), c.capacity, SWY_MEMTYPE_SIMDEV, tag);
                            w.barrier(wk);
                        } else {
                            w.barrier(wk);
                            progress_until_unexpected(wk, tag, ~(swy_tag_t)0, 1.0);
                            r = post_recv_mt(wk, buf.data(), c.capacity, SWY_MEMTYPE_SIMDEV, tag);
                        }
                        swy_status_t st = finish_recv(wk, r, 10);
                        ICHECK_MSG(st == SWY_ERR_MESSAGE_TRUNCATED,
                                   "%s: status %d (%s), expected SWY_ERR_MESSAGE_TRUNCATED", what,
                                   (int)st, swy_status_string(st));
                        ICHECK_MSG(r.info.length == c.size,
                                   "%s: truncated receive reports length %zu", what, r.info.length);
                        buf.check(c.capacity, seed, what);
                        // The next message on the tag is whole.
                        TestBuffer next(n.context(), SWY_MEMTYPE_SIMDEV, follow_len);
                        Recv r2 =
                            post_recv_mt(wk, next.data(), follow_len, SWY_MEMTYPE_SIMDEV, tag);
                        ICHECK_OK(finish_recv(wk, r2, 10));
                        ICHECK(r2.info.length == follow_len);
                        next.check(follow_len, follow_seed, "the message after a truncation");
                    }
                    w.barrier(wk);
                    ++idx;
                }
            }
        }
        n.finish();
    }));
}

// ------------------------------------------------------------------------------------------
// A wrong stated memory type is refused, not a crash
// ------------------------------------------------------------------------------------------

constexpr swy_tag_t kRefusedTag = kTag | 0x300000;

/// Tries a send and a receive of each buffer with memtype=SIMDEV; each must return an error
/// and no request. Whatever the library accepted instead is cleaned up (receives canceled,
/// the peer takes in the sends) so that every outcome is reported, then the rank fails with
/// the list. Afterwards the endpoint must still carry host and simdev messages.
void run_refusals(World& w, Node& n, bool overrun) {
    swy_worker_h wk = n.worker();
    std::vector<unsigned char> heap((1u << 20) + 3, 0x11);
    unsigned char stack[64] = {0};
    TestBuffer dev(n.context(), SWY_MEMTYPE_SIMDEV, 4096);
    std::string failures;
    std::vector<std::pair<std::string, swy_request_h>> accepted_sends;
    auto attempt = [&](const char* what, const void* buf, size_t len, bool send) {
        swy_request_params_t p{};
        p.field_mask = SWY_REQ_PARAM_FIELD_MEMTYPE;
        p.memtype = SWY_MEMTYPE_SIMDEV;
        swy_request_h req = nullptr;
        swy_status_t st =
            send ? swy_tag_send_nb(n.ep(1 - w.rank()), buf, len, kRefusedTag, &p, &req)
                 : swy_tag_recv_nb(wk, const_cast<void*>(buf), len, kRefusedTag | 1, ~(swy_tag_t)0,
                                   &p, &req);  // nothing is sent with this tag
        if (st < 0 && req == nullptr) return;
        char line[256];
        snprintf(line, sizeof(line),
                 "%s of %zu bytes from %s stated as simdev returned %d (%s)%s, expected an "
                 "error and no request",
                 send ? "send" : "receive", len, what, (int)st, swy_status_string(st),
                 req != nullptr ? " with a request" : "");
        failures += std::string("\n  ") + line;
        if (req == nullptr) return;
        if (send) {
            accepted_sends.push_back({line, req});
        } else {
            ICHECK_OK(swy_request_cancel(wk, req));
            swy_status_t fin = wait_request(wk, req, "canceling an accepted receive", 5);
            failures += std::string(" (canceled: ") + swy_status_string(fin) + ")";
            swy_request_free(req);
        }
    };
    const std::vector<size_t> sizes{8, 5000, (1u << 20) + 3};
    for (size_t size : sizes) {
        if (overrun) {
            // Starts in a simdev allocation (4 KiB + guard) and runs past its end.
            const size_t allocated = dev.size() + kGuardBytes;
            attempt("a simdev buffer overrun", dev.data(), allocated + size, true);
            attempt("a simdev buffer overrun", dev.data(), allocated + size, false);
        } else {
            attempt("a heap buffer", heap.data(), size, true);
            attempt("a heap buffer", heap.data(), size, false);
        }
    }
    if (!overrun) {
        attempt("a stack buffer", stack, sizeof(stack), true);
        attempt("a stack buffer", stack, sizeof(stack), false);
    }
    w.barrier(wk);
    // Take in whatever the peer's accepted sends delivered, and finish ours.
    auto until = deadline_in(accepted_sends.empty() ? 0.2 : 3.0);
    std::vector<unsigned char> sink;
    while (Clock::now() < until) {
        swy_worker_progress(wk);
        swy_tag_recv_info_t info{};
        swy_message_h none = nullptr;
        if (swy_tag_probe_nb(wk, kRefusedTag, ~(swy_tag_t)0, 0, &info, &none) == SWY_OK) {
            sink.assign(info.length, 0);
            Recv r = post_recv(wk, sink.data(), sink.size(), kRefusedTag);
            auto give_up = deadline_in(2.0);
            while (!r.done && swy_request_test(r.req) == SWY_INPROGRESS && Clock::now() < give_up) {
                swy_worker_progress(wk);
            }
            std::string outcome = r.done ? swy_status_string(r.status)
                                  : swy_request_test(r.req) == SWY_INPROGRESS
                                      ? "none: still in progress after 2 s"
                                      : swy_status_string(swy_request_test(r.req));
            if (!r.done) swy_request_free(r.req);
            failures +=
                "\n  the peer's refused send arrived anyway: " + std::to_string(info.length) +
                " bytes; receiving it into host memory " + "completed with " + outcome;
        }
        bool all_done = true;
        for (auto& [line, req] : accepted_sends)
            all_done = all_done && (req == nullptr || swy_request_test(req) != SWY_INPROGRESS);
        if (all_done && !accepted_sends.empty()) until = std::min(until, deadline_in(0.2));
    }
    for (auto& [line, req] : accepted_sends) {
        swy_status_t st = swy_request_test(req);
        failures += "\n  accepted send (" + line.substr(0, 40) + "...) completed with " +
                    (st == SWY_INPROGRESS ? std::string("nothing yet")
                                          : std::string(swy_status_string(st)));
        swy_request_free(req);
    }
    w.barrier(wk);
    ICHECK_MSG(failures.empty(), "buffers stated as simdev that are not simdev buffers:%s",
               failures.c_str());

    // Nothing was sent, and the endpoint still works.
    const uint64_t seed = pattern_seed(4096, 0, 77);
    if (w.rank() == 0) {
        dev.fill(seed);
        send_blocking(wk, n.ep(1), heap.data(), 16, kTag | 0x300001);
        Send s = post_send_mt(n.ep(1), dev.data(), 4096, SWY_MEMTYPE_SIMDEV, kTag | 0x300002);
        ICHECK_OK(finish_send(wk, s));
    } else {
        std::vector<unsigned char> small(16);
        Recv r1 = post_recv(wk, small.data(), small.size(), kTag | 0x300001);
        ICHECK_OK(finish_recv(wk, r1));
        Recv r2 = post_recv_mt(wk, dev.data(), 4096, SWY_MEMTYPE_SIMDEV, kTag | 0x300002);
        ICHECK_OK(finish_recv(wk, r2));
        ICHECK(r2.info.length == 4096);
        dev.check(4096, seed, "simdev message after the refusals");
    }
    w.barrier(wk);
}

TEST(SimdevSemantics, HostBufferStatedAsSimdevIsRefusedWithAnError) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        NodeOptions opts;
        opts.config = simdev_config(kTls);
        Node n(w, opts);
        n.connect_all();
        run_refusals(w, n, false);
        n.finish();
    }));
}

// swy/memtype.h: a buffer that starts inside a device allocation and runs past its end "is
// refused by sends and receives".
TEST(SimdevSemantics, SimdevBufferRunningPastItsAllocationIsRefusedWithAnError) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        NodeOptions opts;
        opts.config = simdev_config(kTls);
        Node n(w, opts);
        n.connect_all();
        run_refusals(w, n, true);
        n.finish();
    }));
}

// ------------------------------------------------------------------------------------------
// Detection
// ------------------------------------------------------------------------------------------

TEST(SimdevSemantics, SimdevBuffersAreDetectedWhenTheTypeIsNotStated) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        NodeOptions opts;
        opts.config = simdev_config(kTls);
        Node n(w, opts);
        n.connect_all();
        swy_worker_h wk = n.worker();
        uint64_t idx = 0;
        // Three ways of not saying: params with UNKNOWN, and no params at all (send side;
        // the receive side always passes params for recv_info, with UNKNOWN).
        for (bool null_params : {false, true}) {
            for (swy_memtype_t type : {SWY_MEMTYPE_SIMDEV, SWY_MEMTYPE_HOST}) {
                for (size_t size : kSizes) {
                    const swy_tag_t tag = kTag | 0x400000 | (idx << 4);
                    const uint64_t seed = pattern_seed(size, 0, idx);
                    char what[160];
                    snprintf(what, sizeof(what), "%zu bytes %s -> %s, type not stated%s", size,
                             memtype_name(type), memtype_name(type),
                             null_params ? " (no params)" : "");
                    TestBuffer buf(n.context(), type, size);
                    if (size > 0) {
                        swy_memtype_t detected = SWY_MEMTYPE_UNKNOWN;
                        ICHECK_OK(swy_mem_detect(n.context(), buf.data(), size, &detected));
                        ICHECK_MSG(detected == type, "%s: swy_mem_detect says %s", what,
                                   memtype_name(detected));
                    }
                    if (w.rank() == 0) {
                        buf.fill(seed);
                        swy_request_params_t p{};
                        p.field_mask = SWY_REQ_PARAM_FIELD_MEMTYPE;
                        p.memtype = SWY_MEMTYPE_UNKNOWN;
                        Send s;
                        swy_status_t st = swy_tag_send_nb(n.ep(1), buf.data(), size, tag,
                                                          null_params ? nullptr : &p, &s.req);
                        ICHECK_MSG(st == SWY_OK || st == SWY_INPROGRESS,
                                   "%s: swy_tag_send_nb returned %d (%s)", what, (int)st,
                                   swy_status_string(st));
                        if (st == SWY_OK) {
                            s.done = true;
                            s.status = SWY_OK;
                        }
                        st = finish_send(wk, s);
                        ICHECK_MSG(st == SWY_OK, "%s: send completed with %d (%s)", what, (int)st,
                                   swy_status_string(st));
                    } else {
                        Recv r = post_recv_mt(wk, buf.data(), size, SWY_MEMTYPE_UNKNOWN, tag);
                        swy_status_t st = finish_recv(wk, r);
                        ICHECK_MSG(st == SWY_OK && r.info.length == size,
                                   "%s: receive completed with %d (%s), length %zu", what, (int)st,
                                   swy_status_string(st), r.info.length);
                        buf.check(size, seed, what);
                    }
                    w.barrier(wk);
                    ++idx;
                }
            }
        }
        n.finish();
    }));
}

}  // namespace
}  // namespace swy_itest

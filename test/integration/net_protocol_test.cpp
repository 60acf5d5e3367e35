// The protocol suite over a network transport: tcp on loopback by default (SWY_TLS=tcp,self,
// so the lane between two processes of this host is tcp), or verbs with SWY_ITEST_NET=verbs
// (test/verbs/run-vm.sh runs it so on rxe0 in the Soft-RoCE VM): every size around every threshold the endpoint reports
// (and around the 256 KiB frame limit), 0 B to 256 MiB, posted before and after the message
// arrives, each protocol forced, ordering, wildcard receives, probes, truncation and
// synchronous sends. Every payload is checked byte for byte, with guard bytes after the
// receive buffer: the rendezvous payload is read from the socket (tcp) or moved by RDMA
// (verbs) straight into that buffer.
#include <cstdlib>
#include <string>
#include <vector>

#include "multiproc.h"

namespace swy_itest {
namespace {

constexpr swy_tag_t kTag = 0x7C00000000000000ull;

/// The transport under test: "tcp" (default) or SWY_ITEST_NET ("verbs").
std::string net_transport() {
    const char* e = std::getenv("SWY_ITEST_NET");
    return e != nullptr && *e != '\0' ? e : "tcp";
}

std::vector<std::pair<std::string, std::string>> net_config(const std::string& proto = "",
                                                            const std::string& thresh = "") {
    std::vector<std::pair<std::string, std::string>> c{{"TLS", net_transport() + ",self"}};
    if (net_transport() == "tcp") c.push_back({"NET_DEVICES", "lo"});
    if (!proto.empty()) c.push_back({"PROTO", proto});
    if (!thresh.empty()) c.push_back({"RNDV_THRESH", thresh});
    return c;
}

/// First sizes of each row of swy_ep_print_protocols() ("<lo>..<hi> <protocol> ...").
struct Row {
    size_t lo;
    std::string proto;
};

std::vector<Row> protocol_rows(swy_ep_h ep, std::string* text) {
    std::vector<char> buf(32768);
    ICHECK_OK(swy_ep_print_protocols(ep, SWY_MEMTYPE_HOST, buf.data(), buf.size()));
    *text = buf.data();
    std::vector<Row> rows;
    for (const char* p = buf.data(); *p != '\0';) {
        unsigned long long lo = 0;
        char proto[64] = {0};
        ICHECK_MSG(sscanf(p, "%llu..%*s %63s", &lo, proto) == 2, "cannot parse '%s'", p);
        rows.push_back({static_cast<size_t>(lo), proto});
        const char* eol = strchr(p, '\n');
        if (eol == nullptr) break;
        p = eol + 1;
    }
    ICHECK_MSG(!rows.empty() && rows.front().lo == 0, "bad protocol table:\n%s", text->c_str());
    return rows;
}

Node& net_node(World& w, std::unique_ptr<Node>* holder, const std::string& proto = "",
               const std::string& thresh = "") {
    NodeOptions opts;
    opts.config = net_config(proto, thresh);
    holder->reset(new Node(w, opts));
    Node& n = **holder;
    n.connect_all();
    for (int r = 0; r < w.size(); ++r) {
        if (r == w.rank()) continue;
        swy_ep_attr_t a = n.query(r);
        ICHECK_MSG(net_transport() == a.transport, "lane to rank %d is %s, not %s", r, a.transport,
                   net_transport().c_str());
    }
    return n;
}

/// One message rank 0 → rank 1, received into a buffer of @p capacity bytes (guard bytes
/// after it). posted_first: the receive is posted before the send; else after the message (or
/// its RTS) arrived. Checks status, length, tag and payload on both sides.
void exchange(World& w, Node& n, size_t size, size_t capacity, uint64_t idx, bool posted_first,
              uint32_t send_flags = 0) {
    const swy_tag_t tag = kTag | (idx << 1) | (posted_first ? 1 : 0);
    swy_worker_h wk = n.worker();
    const uint64_t seed = pattern_seed(size, 0, idx);
    const bool truncated = capacity < size;
    const char* order = posted_first ? "posted first" : "posted after the send";
    if (w.rank() == 0) {
        std::vector<unsigned char> buf(size);
        fill_pattern(buf.data(), size, seed);
        if (posted_first) w.barrier(wk);
        Send s = post_send(n.ep(1), size ? buf.data() : nullptr, size, tag, send_flags);
        if (!posted_first) w.barrier(wk);
        swy_status_t st = finish_send(wk, s);
        // A rendezvous sender learns about the truncation; an eager one finished long before.
        ICHECK_MSG(st == SWY_OK || (truncated && st == SWY_ERR_MESSAGE_TRUNCATED),
                   "send of %zu bytes (%s, capacity %zu) completed with %d (%s)", size, order,
                   capacity, (int)st, swy_status_string(st));
    } else {
        std::vector<unsigned char> buf(capacity + kGuardBytes, kGuardByte);
        Recv r;
        if (posted_first) {
            r = post_recv(wk, buf.data(), capacity, tag);
            w.barrier(wk);
        } else {
            w.barrier(wk);
            ICHECK_MSG(progress_until_unexpected(wk, tag, ~(swy_tag_t)0, 10.0),
                       "message of %zu bytes never showed up in a probe", size);
            r = post_recv(wk, buf.data(), capacity, tag);
        }
        swy_status_t st = finish_recv(wk, r);
        const swy_status_t want = truncated ? SWY_ERR_MESSAGE_TRUNCATED : SWY_OK;
        ICHECK_MSG(st == want, "receive of %zu bytes into %zu (%s) completed with %d (%s)", size,
                   capacity, order, (int)st, swy_status_string(st));
        ICHECK_MSG(r.info.length == size && r.info.sender_tag == tag,
                   "receive (%s) reports length %zu tag 0x%llx; sent %zu tag 0x%llx", order,
                   r.info.length, (unsigned long long)r.info.sender_tag, size,
                   (unsigned long long)tag);
        ICHECK_PATTERN(buf.data(), std::min(size, capacity), seed, "%zu bytes into %zu, %s", size,
                       capacity, order);
        ICHECK_MSG(guard_intact(buf.data() + capacity),
                   "receive of %zu bytes (%s) wrote past its %zu-byte buffer", size, order,
                   capacity);
    }
    w.barrier(wk);
}

/// thr-1, thr, thr+1 of every row boundary, plus fixed sizes across the frame limit.
std::vector<size_t> sizes_around(const std::vector<Row>& rows) {
    std::vector<size_t> sizes{0,          1,
                              8,          4095,
                              4096,       (256u << 10) - 1,
                              256u << 10, (256u << 10) + 1,
                              1u << 20,   (4u << 20) + 3};
    for (const Row& r : rows) {
        if (r.lo == 0) continue;
        for (size_t s : {r.lo - 1, r.lo, r.lo + 1})
            sizes.push_back(s);
    }
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    return sizes;
}

TEST(NetProtocols, EverySizeAroundEveryThresholdArrivesIntact) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        std::unique_ptr<Node> holder;
        Node& n = net_node(w, &holder);
        std::string text;
        std::vector<Row> rows = protocol_rows(n.ep(1 - w.rank()), &text);
        // The default table must switch to rendezvous somewhere, or nothing here exercises
        // the zero-copy receive.
        bool has_rndv = false;
        for (const Row& r : rows)
            has_rndv |= r.proto.rfind("rndv_", 0) == 0;
        ICHECK_MSG(has_rndv, "no rendezvous in the %s protocol table:\n%s", net_transport().c_str(),
                   text.c_str());
        uint64_t idx = 0;
        for (size_t size : sizes_around(rows)) {
            for (bool posted_first : {true, false})
                exchange(w, n, size, size, idx++, posted_first);
        }
        n.finish();
    }));
}

/// One 256 MiB message: the rendezvous fragments land straight in the receive buffer.
TEST(NetProtocols, A256MiBMessageArrivesIntact) {
    EXPECT_TRUE(run_ranks(
        2,
        [](World& w) {
            std::unique_ptr<Node> holder;
            Node& n = net_node(w, &holder);
            exchange(w, n, 256u << 20, 256u << 20, 1, true);
            n.finish();
        },
        RunOptions{120.0, {}}));
}

class NetForced : public ::testing::TestWithParam<const char*> {};

TEST_P(NetForced, EverySizeArrivesIntactWithTheProtocolForced) {
    const std::string proto = GetParam();
    if (proto.find("zcopy") != std::string::npos && net_transport() != "verbs") {
        GTEST_SKIP() << proto
                     << " is RDMA rendezvous: run with SWY_ITEST_NET=verbs on an RDMA "
                        "device (test/verbs/run-vm.sh)";
    }
    EXPECT_TRUE(run_ranks(2, [&](World& w) {
        std::unique_ptr<Node> holder;
        Node& n = net_node(w, &holder, proto);
        std::string text;
        std::vector<Row> rows = protocol_rows(n.ep(1 - w.rank()), &text);
        // Small sizes may need eager (a rendezvous-only list still keeps a small protocol);
        // what matters is that from some size on the forced protocol is the one used.
        ICHECK_MSG(rows.back().proto == proto, "SWY_PROTO=%s, but the table ends with %s:\n%s",
                   proto.c_str(), rows.back().proto.c_str(), text.c_str());
        uint64_t idx = 0;
        for (size_t size : {size_t{0}, size_t{1}, size_t{(256u << 10) - 40},
                            size_t{(256u << 10) + 1}, size_t{(3u << 20) + 5}}) {
            for (bool posted_first : {true, false})
                exchange(w, n, size, size, idx++, posted_first);
        }
        n.finish();
    }));
}

INSTANTIATE_TEST_SUITE_P(Net, NetForced,
                         ::testing::Values("eager_bcopy", "rndv_pipeline", "rndv_get_zcopy",
                                           "rndv_put_zcopy"));

/// SWY_RNDV_THRESH moves the switch; sizes around it take the right side each.
TEST(NetProtocols, ForcedRendezvousThresholdIsHonouredAroundIt) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        std::unique_ptr<Node> holder;
        Node& n = net_node(w, &holder, "", "1000");
        std::string text;
        std::vector<Row> rows = protocol_rows(n.ep(1 - w.rank()), &text);
        size_t rndv_from = SIZE_MAX;
        for (const Row& r : rows) {
            if (r.proto.rfind("rndv_", 0) == 0) {
                rndv_from = r.lo;
                break;
            }
        }
        ICHECK_MSG(rndv_from == 1000, "SWY_RNDV_THRESH=1000 but rendezvous starts at %zu:\n%s",
                   rndv_from, text.c_str());
        uint64_t idx = 0;
        for (size_t size : {size_t{999}, size_t{1000}, size_t{1001}}) {
            for (bool posted_first : {true, false})
                exchange(w, n, size, size, idx++, posted_first);
        }
        n.finish();
    }));
}

TEST(NetProtocols, TruncatedReceivesKeepTheirPrefixAndWriteNothingPastTheBuffer) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        std::unique_ptr<Node> holder;
        Node& n = net_node(w, &holder);
        uint64_t idx = 0;
        // Eager single packet, eager fragments (unless the table switches earlier), and
        // rendezvous, each into a buffer one byte short and into about half.
        for (size_t size : {size_t{100}, size_t{300u << 10}, size_t{(2u << 20) + 7}}) {
            for (size_t capacity : {size - 1, size / 2 + 3}) {
                for (bool posted_first : {true, false}) {
                    exchange(w, n, size, capacity, idx++, posted_first);
                }
            }
        }
        n.finish();
    }));
}

TEST(NetProtocols, SynchronousSendsCompleteOnlyAfterTheReceiveMatched) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        std::unique_ptr<Node> holder;
        Node& n = net_node(w, &holder);
        swy_worker_h wk = n.worker();
        uint64_t idx = 0;
        for (size_t size : {size_t{8}, size_t{300u << 10}, size_t{(1u << 20) + 1}}) {
            const swy_tag_t tag = kTag | 0x100000 | idx;
            const uint64_t seed = pattern_seed(size, 0, 0x5000 + idx);
            if (w.rank() == 0) {
                std::vector<unsigned char> buf(size);
                fill_pattern(buf.data(), size, seed);
                Send s = post_send(n.ep(1), buf.data(), size, tag, SWY_REQ_FLAG_SYNC);
                ICHECK_MSG(!s.done, "a synchronous send of %zu bytes completed at once", size);
                auto until = deadline_in(0.05);
                while (Clock::now() < until) {
                    swy_worker_progress(wk);
                    ICHECK_MSG(swy_request_test(s.req) == SWY_INPROGRESS,
                               "synchronous send of %zu bytes completed with no receive posted",
                               size);
                }
                w.barrier(wk);
                ICHECK_OK(finish_send(wk, s));
            } else {
                w.barrier(wk);
                std::vector<unsigned char> buf(size + kGuardBytes, kGuardByte);
                Recv r = post_recv(wk, buf.data(), size, tag);
                ICHECK_OK(finish_recv(wk, r));
                ICHECK_PATTERN(buf.data(), size, seed, "synchronous send of %zu bytes", size);
                ICHECK(guard_intact(buf.data() + size));
            }
            w.barrier(wk);
            ++idx;
        }
        n.finish();
    }));
}

/// Messages of one tag, eager and rendezvous mixed, sent back to back without waiting:
/// receive i gets message i, whether posted before or after they arrive.
TEST(NetProtocols, MixedSizesKeepSendOrderThroughExactAndWildcardReceives) {
    EXPECT_TRUE(run_ranks(
        2,
        [](World& w) {
            std::unique_ptr<Node> holder;
            Node& n = net_node(w, &holder);
            swy_worker_h wk = n.worker();
            constexpr int kCount = 100;
            auto size_of = [](int i) -> size_t {
                switch (i % 5) {
                    case 0: return 8;
                    case 1: return 0;
                    case 2: return 3000 + static_cast<size_t>(i);
                    case 3: return (300u << 10) + static_cast<size_t>(i);  // fragments or rndv
                    default: return (1u << 20) + static_cast<size_t>(i);   // rendezvous
                }
            };
            for (bool wildcard : {false, true}) {
                for (bool posted_first : {true, false}) {
                    const swy_tag_t tag =
                        kTag | 0x200000 | (wildcard ? 2 : 0) | (posted_first ? 1 : 0);
                    if (w.rank() == 0) {
                        std::vector<std::vector<unsigned char>> bufs(kCount);
                        std::vector<Send> sends(kCount);
                        if (posted_first) w.barrier(wk);
                        for (int i = 0; i < kCount; ++i) {
                            bufs[i].resize(size_of(i));
                            fill_pattern(bufs[i].data(), bufs[i].size(),
                                         pattern_seed(bufs[i].size(), 0, i));
                            sends[i] = post_send(n.ep(1), bufs[i].data(), bufs[i].size(), tag);
                        }
                        if (!posted_first) w.barrier(wk);
                        for (int i = 0; i < kCount; ++i)
                            ICHECK_OK(finish_send(wk, sends[i]));
                    } else {
                        std::vector<std::vector<unsigned char>> bufs(kCount);
                        std::vector<Recv> recvs(kCount);
                        const swy_tag_t mask = wildcard ? 0 : ~swy_tag_t{0};
                        auto post_all = [&] {
                            for (int i = 0; i < kCount; ++i) {
                                bufs[i].assign(size_of(i) + kGuardBytes, kGuardByte);
                                recvs[i] = post_recv(wk, bufs[i].data(), size_of(i), tag, mask);
                            }
                        };
                        if (posted_first) {
                            post_all();
                            w.barrier(wk);
                        } else {
                            w.barrier(wk);
                            ICHECK(progress_until_unexpected(wk, tag, ~swy_tag_t{0}, 10.0));
                            post_all();
                        }
                        for (int i = 0; i < kCount; ++i) {
                            ICHECK_OK(finish_recv(wk, recvs[i]));
                            ICHECK_MSG(recvs[i].info.length == size_of(i) &&
                                           recvs[i].info.sender_tag == tag,
                                       "receive %d got %zu bytes tag 0x%llx", i,
                                       recvs[i].info.length,
                                       (unsigned long long)recvs[i].info.sender_tag);
                            ICHECK_PATTERN(bufs[i].data(), size_of(i),
                                           pattern_seed(size_of(i), 0, i), "message %d (%s, %s)", i,
                                           wildcard ? "wildcard" : "exact",
                                           posted_first ? "posted first" : "posted late");
                            ICHECK(guard_intact(bufs[i].data() + size_of(i)));
                        }
                    }
                    w.barrier(wk);
                }
            }
            n.finish();
        },
        RunOptions{120.0, {}}));
}

/// A probe sees eager and rendezvous messages with their full length without consuming
/// them; a matched probe (remove) then receives exactly that message.
TEST(NetProtocols, ProbeThenMatchedReceiveForEagerAndRendezvous) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        std::unique_ptr<Node> holder;
        Node& n = net_node(w, &holder);
        swy_worker_h wk = n.worker();
        uint64_t idx = 0;
        for (size_t size : {size_t{0}, size_t{64}, size_t{(1u << 20) + 9}}) {
            const swy_tag_t tag = kTag | 0x300000 | idx;
            const uint64_t seed = pattern_seed(size, 0, 0x9000 + idx);
            if (w.rank() == 0) {
                std::vector<unsigned char> buf(size);
                fill_pattern(buf.data(), size, seed);
                Send s = post_send(n.ep(1), size ? buf.data() : nullptr, size, tag);
                w.barrier(wk);
                ICHECK_OK(finish_send(wk, s));
            } else {
                w.barrier(wk);
                swy_tag_recv_info_t info{};
                swy_message_h msg = nullptr;
                auto deadline = deadline_in(10.0);
                while (swy_tag_probe_nb(wk, kTag | 0x300000, ~swy_tag_t{0xFF}, 0, &info, &msg) !=
                       SWY_OK) {
                    ICHECK_MSG(Clock::now() < deadline, "probe never saw %zu bytes", size);
                    swy_worker_progress(wk);
                }
                ICHECK_MSG(info.length == size && info.sender_tag == tag,
                           "probe reports %zu bytes tag 0x%llx", info.length,
                           (unsigned long long)info.sender_tag);
                // Not consumed: the same probe again, now removing it.
                ICHECK_OK(swy_tag_probe_nb(wk, tag, ~swy_tag_t{0}, 1, &info, &msg));
                ICHECK(msg != nullptr);
                swy_message_h none = nullptr;
                ICHECK_STATUS(swy_tag_probe_nb(wk, tag, ~swy_tag_t{0}, 0, &info, &none),
                              SWY_ERR_NO_MESSAGE);
                std::vector<unsigned char> buf(size + kGuardBytes, kGuardByte);
                Recv r;
                swy_tag_recv_info_t rinfo{};
                swy_request_params_t params{};
                params.field_mask = SWY_REQ_PARAM_FIELD_MEMTYPE | SWY_REQ_PARAM_FIELD_RECV_INFO;
                params.memtype = SWY_MEMTYPE_HOST;
                params.recv_info = &rinfo;
                swy_status_t st = swy_tag_msg_recv_nb(wk, buf.data(), size, msg, &params, &r.req);
                adopt_recv_result(r, st, &rinfo, "swy_tag_msg_recv_nb");
                ICHECK_OK(finish_recv(wk, r));
                ICHECK_MSG(r.info.length == size, "matched receive: %zu bytes", r.info.length);
                ICHECK_PATTERN(buf.data(), size, seed, "matched probe receive of %zu bytes", size);
                ICHECK(guard_intact(buf.data() + size));
            }
            w.barrier(wk);
            ++idx;
        }
        n.finish();
    }));
}

/// Three processes, each streaming to both others at once: rendezvous on two connections
/// of one worker interleave without mixing payloads.
TEST(NetProtocols, ThreeRanksAllToAllMixedSizes) {
    EXPECT_TRUE(run_ranks(3, [](World& w) {
        std::unique_ptr<Node> holder;
        Node& n = net_node(w, &holder);
        swy_worker_h wk = n.worker();
        const std::vector<size_t> sizes{1, 5000, (512u << 10) + 3, (2u << 20) + 1};
        std::vector<std::vector<unsigned char>> out, in;
        std::vector<Send> sends;
        std::vector<Recv> recvs;
        std::vector<std::pair<int, size_t>> expect;  // (source, size) per receive
        out.reserve(8);
        in.reserve(8);
        for (int peer = 0; peer < 3; ++peer) {
            if (peer == w.rank()) continue;
            for (size_t k = 0; k < sizes.size(); ++k) {
                const swy_tag_t tag = kTag | 0x400000 | (uint64_t(peer) << 8) | k;
                in.emplace_back(sizes[k] + kGuardBytes, kGuardByte);
                recvs.push_back(post_recv(wk, in.back().data(), sizes[k], tag));
                expect.emplace_back(peer, sizes[k]);
            }
        }
        w.barrier(wk);
        for (int peer = 0; peer < 3; ++peer) {
            if (peer == w.rank()) continue;
            for (size_t k = 0; k < sizes.size(); ++k) {
                const swy_tag_t tag = kTag | 0x400000 | (uint64_t(w.rank()) << 8) | k;
                out.emplace_back(sizes[k]);
                fill_pattern(out.back().data(), sizes[k], pattern_seed(sizes[k], w.rank(), peer));
                sends.push_back(post_send(n.ep(peer), out.back().data(), sizes[k], tag));
            }
        }
        for (Send& s : sends)
            ICHECK_OK(finish_send(wk, s));
        for (size_t i = 0; i < recvs.size(); ++i) {
            ICHECK_OK(finish_recv(wk, recvs[i]));
            const auto [src, size] = expect[i];
            ICHECK_PATTERN(in[i].data(), size, pattern_seed(size, src, w.rank()),
                           "%zu bytes from rank %d", size, src);
            ICHECK(guard_intact(in[i].data() + size));
        }
        n.finish();
    }));
}

}  // namespace
}  // namespace swy_itest

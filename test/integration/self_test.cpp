// Loopback through the self transport: one process, an endpoint to its own worker, every size
// around the boundaries it reports, posted before and after the send. Runs in a forked child
// like the other integration tests so that a crash is reported, not fatal to the runner.
#include <string>
#include <vector>

#include "multiproc.h"

namespace swy_itest {
namespace {

constexpr swy_tag_t kTag = 0x5E1F000000000000ull;

NodeOptions self_only() {
    NodeOptions o;
    o.config = {{"TLS", "self"}};
    return o;
}

TEST(SelfTransport, DeliversEverySizeAroundBoundariesToOwnWorker) {
    EXPECT_TRUE(run_ranks(1, [](World& w) {
        Node n(w, self_only());
        n.connect_all(/*include_self=*/true);
        swy_ep_attr_t a = n.query(0);
        ICHECK(a.transport != nullptr);
        ICHECK_MSG(std::string(a.transport) == "self", "TLS=self endpoint uses transport '%s'",
                   a.transport);
        ICHECK_MSG(a.connected == 1, "connected=%d", a.connected);
        const std::vector<size_t> sizes = boundary_sizes({a});
        fprintf(stderr, "[self] pio=%d pio_max_size %zu bcopy_max_size %zu small=%s, %zu sizes\n",
                a.pio, a.pio_max_size, a.bcopy_max_size,
                a.small_protocol ? a.small_protocol : "(null)", sizes.size());
        swy_worker_h wk = n.worker();
        uint64_t idx = 0;
        for (size_t size : sizes) {
            for (bool posted_first : {true, false}) {
                const swy_tag_t tag = kTag | idx;
                const uint64_t seed = pattern_seed(size, 0, idx);
                std::vector<unsigned char> out(size), in(size + kGuardBytes, kGuardByte);
                fill_pattern(out.data(), size, seed);
                Recv r;
                Send s;
                if (posted_first) {
                    r = post_recv(wk, in.data(), size, tag);
                    s = post_send(n.ep(0), size ? out.data() : nullptr, size, tag);
                } else {
                    s = post_send(n.ep(0), size ? out.data() : nullptr, size, tag);
                    progress_until_unexpected(wk, tag, ~(swy_tag_t)0, 0.1);
                    r = post_recv(wk, in.data(), size, tag);
                }
                const char* path = posted_first ? "posted first" : "unexpected";
                swy_status_t st = finish_recv(wk, r);
                ICHECK_MSG(st == SWY_OK, "receive of %zu bytes (%s) completed with %d (%s)", size,
                           path, (int)st, swy_status_string(st));
                st = finish_send(wk, s);
                ICHECK_MSG(st == SWY_OK, "send of %zu bytes (%s) completed with %d (%s)", size,
                           path, (int)st, swy_status_string(st));
                ICHECK_MSG(r.info.length == size && r.info.sender_tag == tag,
                           "receive (%s) matched length %zu tag 0x%llx; sent %zu tag 0x%llx", path,
                           r.info.length, (unsigned long long)r.info.sender_tag, size,
                           (unsigned long long)tag);
                ICHECK_PATTERN(in.data(), size, seed, "%zu bytes to self, %s", size, path);
                ICHECK_MSG(guard_intact(in.data() + size), "wrote past a %zu-byte buffer", size);
                ++idx;
            }
        }
        n.finish();
    }));
}

TEST(SelfTransport, MessagesToOwnWorkerMatchInSendOrder) {
    EXPECT_TRUE(run_ranks(1, [](World& w) {
        Node n(w, self_only());
        n.connect_all(true);
        const size_t bc = n.query(0).bcopy_max_size;
        ICHECK(bc > 0);
        constexpr int kCount = 500;
        auto size_of = [&](int i) { return i % 9 == 4 ? 2 * bc + i : (size_t)(i * 13 % 300); };
        std::vector<std::vector<unsigned char>> out(kCount), in(kCount);
        std::vector<Send> sends(kCount);
        for (int i = 0; i < kCount; ++i) {  // all unexpected, one tag
            out[i].resize(size_of(i));
            fill_pattern(out[i].data(), size_of(i), pattern_seed(size_of(i), 0, i));
            sends[i] = post_send(n.ep(0), out[i].data(), size_of(i), kTag);
        }
        for (int i = 0; i < kCount; ++i) {
            in[i].assign(size_of(i) + kGuardBytes, kGuardByte);
            Recv r = post_recv(n.worker(), in[i].data(), size_of(i), kTag);
            ICHECK_OK(finish_recv(n.worker(), r));
            ICHECK_MSG(r.info.length == size_of(i), "receive #%d matched %zu bytes, expected %zu",
                       i, r.info.length, size_of(i));
            ICHECK_PATTERN(in[i].data(), size_of(i), pattern_seed(size_of(i), 0, i), "message #%d",
                           i);
            ICHECK(guard_intact(in[i].data() + size_of(i)));
        }
        for (auto& s : sends)
            ICHECK_OK(finish_send(n.worker(), s));
        // swy_request_wait path too: a blocking wait on a posted receive.
        std::vector<unsigned char> b(16);
        swy_request_params_t p{};
        p.field_mask = SWY_REQ_PARAM_FIELD_FLAGS;
        p.flags = SWY_REQ_FLAG_NO_IMM_COMPLETE;
        swy_request_h rreq = nullptr;
        ICHECK_STATUS(
            swy_tag_recv_nb(n.worker(), b.data(), b.size(), kTag | 1, ~(swy_tag_t)0, &p, &rreq),
            SWY_INPROGRESS);
        Send s =
            post_send(n.ep(0), out[1].data(), 16 <= out[1].size() ? 16 : out[1].size(), kTag | 1);
        ICHECK_OK(swy_request_wait(n.worker(), rreq));
        swy_request_free(rreq);
        ICHECK_OK(finish_send(n.worker(), s));
        n.finish();
    }));
}

}  // namespace
}  // namespace swy_itest

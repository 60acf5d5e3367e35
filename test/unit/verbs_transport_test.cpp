// The verbs transport end to end, through the public API, on a real RDMA device (rxe0 inside
// the Soft-RoCE VM: test/verbs/run-vm.sh). On a host without an RDMA device every test here
// skips with a message: the verbs interface does not open there.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <cstring>
#include <string>
#include <vector>

#include <switchyard/switchyard.h>

#include "core/address.h"
#include "core/worker.h"
#include "transports/verbs/page_identity.h"
#include "transports/verbs/verbs_open.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
    std::string scheme = "auto";
    std::string proto = "all";
    std::string rcache = "auto";
};

/// One context + worker with SWY_TLS=verbs,self.
struct Node {
    swy_context_h ctx = nullptr;
    swy_worker_h worker = nullptr;
    std::vector<uint8_t> address;

    explicit Node(const Options& o = {}) {
        swy_config_h cfg = nullptr;
        EXPECT_EQ(swy_config_read(&cfg), SWY_OK);
        swy_config_set(cfg, "TLS", "verbs,self");
        swy_config_set(cfg, "RNDV_SCHEME", o.scheme.c_str());
        swy_config_set(cfg, "PROTO", o.proto.c_str());
        swy_config_set(cfg, "VERBS_RCACHE", o.rcache.c_str());
        swy_context_params_t cp{cfg};
        EXPECT_EQ(swy_context_create(&cp, &ctx), SWY_OK);
        swy_config_release(cfg);
        if (ctx == nullptr) return;
        swy_worker_params_t wp{SWY_THREAD_MODE_SINGLE};
        EXPECT_EQ(swy_worker_create(ctx, &wp, &worker), SWY_OK);
        void* a = nullptr;
        size_t n = 0;
        if (worker != nullptr && swy_worker_get_address(worker, &a, &n) == SWY_OK) {
            address.assign(static_cast<uint8_t*>(a), static_cast<uint8_t*>(a) + n);
            swy_worker_release_address(worker, a);
        }
    }
    ~Node() {
        if (worker != nullptr) swy_worker_destroy(worker);
        if (ctx != nullptr) swy_context_destroy(ctx);
    }
    /// Whether the worker opened the verbs interface (its address has a verbs section).
    bool has_verbs() const {
        swy::core::WorkerAddress a;
        std::string why;
        return swy::core::decode_address(address.data(), address.size(), &a, &why) ==
                   swy::Status::kOk &&
               a.find(swy::core::TransportId::kVerbs) != nullptr;
    }
};

#define SKIP_WITHOUT_VERBS(node)                                                        \
    if (!(node).has_verbs()) GTEST_SKIP() << "no RDMA device: the verbs transport did not " \
                                             "open (run test/verbs/run-vm.sh)"

struct ErrorSeen {
    int calls = 0;
    swy_status_t status = SWY_OK;
};
void on_error(void* arg, swy_ep_h, swy_status_t status) {
    auto* e = static_cast<ErrorSeen*>(arg);
    ++e->calls;
    e->status = status;
}

swy_ep_h connect(swy_worker_h from, const std::vector<uint8_t>& to, ErrorSeen* errors = nullptr) {
    swy_ep_params_t p{};
    p.remote_address = to.data();
    p.remote_address_length = to.size();
    p.err_cb = errors != nullptr ? on_error : nullptr;
    p.err_arg = errors;
    swy_ep_h ep = nullptr;
    EXPECT_EQ(swy_ep_create(from, &p, &ep), SWY_OK);
    return ep;
}

/// Close an endpoint at once (its requests are done or do not matter any more).
void close_now(swy_ep_h ep) {
    swy_request_h req = nullptr;
    swy_ep_close_nb(ep, SWY_EP_CLOSE_FORCE, &req);
    if (req != nullptr) swy_request_free(req);
}

/// Progress both workers until @p req completes (or @p seconds pass); frees it.
swy_status_t finish(swy_request_h req, swy_worker_h a, swy_worker_h b, double seconds = 30) {
    if (req == nullptr) return SWY_OK;
    const auto end = Clock::now() + std::chrono::duration<double>(seconds);
    swy_status_t st;
    while ((st = swy_request_test(req)) == SWY_INPROGRESS && Clock::now() < end) {
        swy_worker_progress(a);
        if (b != nullptr) swy_worker_progress(b);
    }
    if (st != SWY_INPROGRESS) swy_request_free(req);
    return st;
}

/// Byte @p i of pattern @p seed: differs between seeds at every position.
uint8_t pattern(size_t i, uint32_t seed) {
    return static_cast<uint8_t>((i * 131 + seed * 7 + (i >> 8)) & 0xFF);
}
void fill(uint8_t* p, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; ++i) p[i] = pattern(i, seed);
}
size_t first_bad(const uint8_t* p, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; ++i) {
        if (p[i] != pattern(i, seed)) return i;
    }
    return n;
}

/// Send @p n bytes a → b with tag @p tag and check them byte for byte, plus 64 guard bytes.
void transfer(swy_ep_h ep, Node& a, Node& b, size_t n, uint32_t seed, const char* what) {
    SCOPED_TRACE(std::string(what) + ", " + std::to_string(n) + " B");
    std::vector<uint8_t> src(n), dst(n + 64, 0xEE);
    fill(src.data(), n, seed);
    swy_request_h rr = nullptr, sr = nullptr;
    swy_tag_t tag = 0x5000 + seed;
    ASSERT_GE(swy_tag_recv_nb(b.worker, dst.data(), n, tag, ~0ull, nullptr, &rr), 0);
    ASSERT_GE(swy_tag_send_nb(ep, src.data(), n, tag, nullptr, &sr), 0);
    EXPECT_EQ(finish(sr, a.worker, b.worker), SWY_OK);
    EXPECT_EQ(finish(rr, b.worker, a.worker), SWY_OK);
    EXPECT_EQ(first_bad(dst.data(), n, seed), n);
    for (size_t i = 0; i < 64; ++i) ASSERT_EQ(dst[n + i], 0xEE) << "guard byte " << i;
}

/// The registration cache of @p n's verbs interface (counters and whether it is active).
swy::tl::verbs::RegCacheReport rcache_of(const Node& n) {
    swy::tl::verbs::RegCacheReport r;
    EXPECT_TRUE(swy::tl::verbs::reg_cache_report(
        reinterpret_cast<const swy::core::Worker*>(n.worker)->verbs_interface(), &r));
    return r;
}

/// Whether this process can see page frames, so the cache must be active (root in the VM).
bool rcache_expected() {
    std::string why;
    return swy::tl::verbs::PagemapIdentity::open(&why) != nullptr;
}

/// Send @p n bytes from @p src to @p dst (both caller-owned) and check every byte of them.
void send_between(swy_ep_h ep, Node& a, Node& b, const uint8_t* src, uint8_t* dst, size_t n,
                  uint32_t seed) {
    swy_request_h rr = nullptr, sr = nullptr;
    ASSERT_GE(swy_tag_recv_nb(b.worker, dst, n, 77, ~0ull, nullptr, &rr), 0);
    ASSERT_GE(swy_tag_send_nb(ep, src, n, 77, nullptr, &sr), 0);
    ASSERT_EQ(finish(sr, a.worker, b.worker), SWY_OK);
    ASSERT_EQ(finish(rr, b.worker, a.worker), SWY_OK);
    ASSERT_EQ(first_bad(dst, n, seed), n) << "seed " << seed;
}

uint8_t* map_anonymous(size_t n) {
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

}  // namespace

TEST(VerbsTransport, EndpointReportsInlinePioAndCredits) {
    Node a, b;
    SKIP_WITHOUT_VERBS(a);
    swy_ep_h ep = connect(a.worker, b.address);
    swy_ep_attr_t attr{};
    ASSERT_EQ(swy_ep_query(ep, &attr), SWY_OK);
    EXPECT_STREQ(attr.transport, "verbs");
    EXPECT_EQ(attr.pio, 1);
    EXPECT_GT(attr.pio_max_size, 0u);
    EXPECT_LT(attr.pio_max_size, attr.bcopy_max_size);
    EXPECT_EQ(attr.credits, 64u);
    EXPECT_STREQ(attr.small_protocol, "eager_short");
    close_now(ep);
}

TEST(VerbsTransport, EveryProtocolAcrossItsBoundariesByteForByte) {
    struct Run {
        Options o;
        const char* what;
    };
    const Run runs[] = {{{"auto", "all"}, "automatic"},
                        {{"get", "all"}, "rndv get (RDMA READ)"},
                        {{"put", "all"}, "rndv put (RDMA WRITE + FIN)"},
                        {{"pipeline", "all"}, "rndv pipeline"},
                        {{"auto", "eager_bcopy"}, "eager bcopy only"}};
    for (const Run& run : runs) {
        Node a(run.o), b(run.o);
        SKIP_WITHOUT_VERBS(a);
        swy_ep_h ep = connect(a.worker, b.address);
        swy_ep_attr_t attr{};
        ASSERT_EQ(swy_ep_query(ep, &attr), SWY_OK);
        const size_t pio = attr.pio_max_size, frag = attr.bcopy_max_size;
        // Around the inline limit, the single-packet limit, fragment counts and rendezvous.
        const std::vector<size_t> sizes{0, 1, pio - 1, pio, pio + 1, frag - 1, frag, frag + 1,
                                        3 * frag + 7, 64 << 10, (1 << 20) + 3, 5 << 20};
        uint32_t seed = 1;
        for (size_t n : sizes) transfer(ep, a, b, n, seed++, run.what);
        close_now(ep);
    }
}

TEST(VerbsTransport, BufferReallocatedAtTheSameAddressIsNeverReadThroughAStaleKey) {
    for (const char* scheme : {"get", "put"}) {
        SCOPED_TRACE(scheme);
        Node a({scheme, "all"}), b({scheme, "all"});
        SKIP_WITHOUT_VERBS(a);
        swy_ep_h ep = connect(a.worker, b.address);
        const size_t n = 2 << 20;
        auto* src = static_cast<uint8_t*>(mmap(nullptr, n, PROT_READ | PROT_WRITE,
                                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        auto* dst = static_cast<uint8_t*>(mmap(nullptr, n, PROT_READ | PROT_WRITE,
                                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        ASSERT_NE(src, MAP_FAILED);
        ASSERT_NE(dst, MAP_FAILED);
        const auto before_a = rcache_of(a), before_b = rcache_of(b);
        EXPECT_EQ(before_a.active, rcache_expected()) << before_a.reason;
        for (uint32_t round = 1; round <= 3; ++round) {
            fill(src, n, round);
            std::memset(dst, 0, n);
            swy_request_h rr = nullptr, sr = nullptr;
            ASSERT_GE(swy_tag_recv_nb(b.worker, dst, n, 77, ~0ull, nullptr, &rr), 0);
            ASSERT_GE(swy_tag_send_nb(ep, src, n, 77, nullptr, &sr), 0);
            ASSERT_EQ(finish(sr, a.worker, b.worker), SWY_OK);
            ASSERT_EQ(finish(rr, b.worker, a.worker), SWY_OK);
            ASSERT_EQ(first_bad(dst, n, round), n) << "round " << round;
            // Free both buffers and map new pages at exactly the same addresses: a cached
            // registration would still point at the old pages.
            ASSERT_EQ(munmap(src, n), 0);
            ASSERT_EQ(munmap(dst, n), 0);
            ASSERT_EQ(mmap(src, n, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0), src);
            ASSERT_EQ(mmap(dst, n, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0), dst);
        }
        // With the cache, rounds 2 and 3 found the entries of round 1 and 2 stale (on both
        // sides: the sender's buffer and the receiver's), and never hit.
        const auto after_a = rcache_of(a), after_b = rcache_of(b);
        if (after_a.active) {
            EXPECT_EQ(after_a.stats.stale - before_a.stats.stale, 2u) << "sender";
            EXPECT_EQ(after_b.stats.stale - before_b.stats.stale, 2u) << "receiver";
            EXPECT_EQ(after_a.stats.hits - before_a.stats.hits, 0u);
            EXPECT_EQ(after_b.stats.hits - before_b.stats.hits, 0u);
        }
        munmap(src, n);
        munmap(dst, n);
        close_now(ep);
    }
}

TEST(VerbsTransport, RepeatedSendsFromOneBufferHitTheRegistrationCache) {
    for (const char* scheme : {"get", "put"}) {
        SCOPED_TRACE(scheme);
        Node a({scheme, "all"}), b({scheme, "all"});
        SKIP_WITHOUT_VERBS(a);
        if (!rcache_of(a).active) GTEST_SKIP() << "cache off: " << rcache_of(a).reason;
        swy_ep_h ep = connect(a.worker, b.address);
        const size_t n = 1 << 20;
        uint8_t* src = map_anonymous(n);
        uint8_t* dst = map_anonymous(n);
        ASSERT_NE(src, nullptr);
        ASSERT_NE(dst, nullptr);
        const auto before_a = rcache_of(a), before_b = rcache_of(b);
        const uint32_t rounds = 5;
        for (uint32_t round = 1; round <= rounds; ++round) {
            fill(src, n, round);
            std::memset(dst, 0, n);
            send_between(ep, a, b, src, dst, n, round);
        }
        // A range inside the registered one (not page-aligned at either end) hits too.
        const size_t off = 100, len = n - 300;
        fill(src + off, len, 9);
        std::memset(dst + off, 0, len);
        send_between(ep, a, b, src + off, dst + off, len, 9);
        const auto after_a = rcache_of(a), after_b = rcache_of(b);
        EXPECT_EQ(after_a.stats.hits - before_a.stats.hits, rounds) << "sender";
        EXPECT_EQ(after_b.stats.hits - before_b.stats.hits, rounds) << "receiver";
        EXPECT_EQ(after_a.stats.misses - before_a.stats.misses, 1u);
        EXPECT_EQ(after_b.stats.misses - before_b.stats.misses, 1u);
        EXPECT_EQ(after_a.stats.stale, before_a.stats.stale);
        EXPECT_EQ(after_b.stats.stale, before_b.stats.stale);
        munmap(src, n);
        munmap(dst, n);
        close_now(ep);
    }
}

TEST(VerbsTransport, CacheOffRegistersEveryTransferAndNeverHits) {
    Node a({"get", "all", "off"}), b({"get", "all", "off"});
    SKIP_WITHOUT_VERBS(a);
    const auto before = rcache_of(a);
    EXPECT_FALSE(before.active);
    EXPECT_EQ(before.reason, "SWY_VERBS_RCACHE=off");
    swy_ep_h ep = connect(a.worker, b.address);
    const size_t n = 1 << 20;
    uint8_t* src = map_anonymous(n);
    uint8_t* dst = map_anonymous(n);
    ASSERT_NE(src, nullptr);
    ASSERT_NE(dst, nullptr);
    for (uint32_t round = 1; round <= 3; ++round) {
        fill(src, n, round);
        std::memset(dst, 0, n);
        send_between(ep, a, b, src, dst, n, round);
    }
    const auto after_a = rcache_of(a), after_b = rcache_of(b);
    EXPECT_EQ(after_a.stats.hits, 0u);
    EXPECT_EQ(after_a.stats.uncached - before.stats.uncached, 3u) << "one per transfer";
    EXPECT_EQ(after_b.stats.hits, 0u);
    EXPECT_EQ(after_b.stats.entries, 0u);
    munmap(src, n);
    munmap(dst, n);
    close_now(ep);
}

TEST(VerbsTransport, UnknownRcacheModeIsRejectedAtWorkerCreation) {
    swy_config_h cfg = nullptr;
    ASSERT_EQ(swy_config_read(&cfg), SWY_OK);
    swy_config_set(cfg, "TLS", "verbs,self");
    swy_config_set(cfg, "VERBS_RCACHE", "sometimes");
    swy_context_params_t cp{cfg};
    swy_context_h ctx = nullptr;
    ASSERT_EQ(swy_context_create(&cp, &ctx), SWY_OK);
    swy_config_release(cfg);
    swy_worker_params_t wp{SWY_THREAD_MODE_SINGLE};
    swy_worker_h worker = nullptr;
    EXPECT_EQ(swy_worker_create(ctx, &wp, &worker), SWY_ERR_INVALID_PARAM);
    if (worker != nullptr) swy_worker_destroy(worker);
    swy_context_destroy(ctx);
}

TEST(VerbsTransport, PagesDroppedByMadviseAreRegisteredAfreshAndFirstTouchedByTheDevice) {
    for (const char* scheme : {"get", "put"}) {
        SCOPED_TRACE(scheme);
        Node a({scheme, "all"}), b({scheme, "all"});
        SKIP_WITHOUT_VERBS(a);
        swy_ep_h ep = connect(a.worker, b.address);
        const size_t n = 1 << 20;
        uint8_t* src = map_anonymous(n);
        uint8_t* dst = map_anonymous(n);
        ASSERT_NE(src, nullptr);
        ASSERT_NE(dst, nullptr);
        fill(src, n, 1);
        std::memset(dst, 0, n);
        send_between(ep, a, b, src, dst, n, 1);
        const auto before_a = rcache_of(a), before_b = rcache_of(b);
        // Both buffers lose their pages (the cached registrations still pin the old ones).
        // The sender writes new pages; the receiver's pages stay absent until the device
        // writes into them through the new registration (which faults them in).
        ASSERT_EQ(madvise(src, n, MADV_DONTNEED), 0);
        ASSERT_EQ(madvise(dst, n, MADV_DONTNEED), 0);
        fill(src, n, 2);
        send_between(ep, a, b, src, dst, n, 2);
        const auto after_a = rcache_of(a), after_b = rcache_of(b);
        if (after_a.active) {
            EXPECT_EQ(after_a.stats.stale - before_a.stats.stale, 1u) << "sender";
            EXPECT_EQ(after_b.stats.stale - before_b.stats.stale, 1u) << "receiver";
            EXPECT_EQ(after_a.stats.hits, before_a.stats.hits);
            EXPECT_EQ(after_b.stats.hits, before_b.stats.hits);
        }
        munmap(src, n);
        munmap(dst, n);
        close_now(ep);
    }
}

TEST(VerbsTransport, ForkedChildWritingTheBufferNeverChangesWhatTheParentSends) {
    Node a({"get", "all"}), b({"get", "all"});
    SKIP_WITHOUT_VERBS(a);
    swy_ep_h ep = connect(a.worker, b.address);
    const size_t n = 1 << 20;
    uint8_t* src = map_anonymous(n);
    uint8_t* dst = map_anonymous(n);
    ASSERT_NE(src, nullptr);
    ASSERT_NE(dst, nullptr);
    fill(src, n, 1);
    std::memset(dst, 0, n);
    send_between(ep, a, b, src, dst, n, 1);
    const auto before = rcache_of(a);
    // Copy-on-write: the child writes its copy of the (registered, cached) buffer. Whichever
    // side the kernel gives the pinned frames, the parent's next send must carry the parent's
    // bytes: a hit if its pages stayed, a stale entry if they were copied.
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        fill(src, n, 3);
        _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    fill(src, n, 2);
    std::memset(dst, 0, n);
    send_between(ep, a, b, src, dst, n, 2);
    const auto after = rcache_of(a);
    if (after.active) {
        EXPECT_EQ((after.stats.hits - before.stats.hits) + (after.stats.stale - before.stats.stale),
                  1u);
    }
    munmap(src, n);
    munmap(dst, n);
    close_now(ep);
}

TEST(VerbsTransport, PeerDeathFailsOnlyThatEndpoint) {
    {
        Node probe;
        SKIP_WITHOUT_VERBS(probe);
    }
    int p2c[2], c2p[2];
    ASSERT_EQ(pipe(p2c), 0);
    ASSERT_EQ(pipe(c2p), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // The victim: publishes its address, answers one ping, then progresses until killed.
        Node v;
        const uint32_t len = static_cast<uint32_t>(v.address.size());
        if (write(c2p[1], &len, 4) != 4 || write(c2p[1], v.address.data(), len) != len) _exit(2);
        uint32_t plen = 0;
        if (read(p2c[0], &plen, 4) != 4) _exit(3);
        std::vector<uint8_t> parent(plen);
        if (read(p2c[0], parent.data(), plen) != static_cast<ssize_t>(plen)) _exit(4);
        swy_ep_h back = connect(v.worker, parent);
        uint64_t ping = 0;
        swy_request_h rr = nullptr;
        swy_tag_recv_nb(v.worker, &ping, 8, 1, ~0ull, nullptr, &rr);
        if (finish(rr, v.worker, nullptr, 60) != SWY_OK) _exit(5);
        swy_request_h sr = nullptr;
        swy_tag_send_nb(back, &ping, 8, 2, nullptr, &sr);
        finish(sr, v.worker, nullptr, 60);
        const auto end = Clock::now() + std::chrono::seconds(60);
        while (Clock::now() < end) swy_worker_progress(v.worker);
        _exit(0);
    }
    Node a, bystander;
    uint32_t len = 0;
    ASSERT_EQ(read(c2p[0], &len, 4), 4);
    std::vector<uint8_t> victim(len);
    ASSERT_EQ(read(c2p[0], victim.data(), len), static_cast<ssize_t>(len));
    const uint32_t mylen = static_cast<uint32_t>(a.address.size());
    ASSERT_EQ(write(p2c[1], &mylen, 4), 4);
    ASSERT_EQ(write(p2c[1], a.address.data(), mylen), static_cast<ssize_t>(mylen));

    ErrorSeen victim_errors, bystander_errors;
    swy_ep_h to_victim = connect(a.worker, victim, &victim_errors);
    swy_ep_h to_bystander = connect(a.worker, bystander.address, &bystander_errors);
    uint64_t ping = 0x1234, pong = 0;
    swy_request_h rr = nullptr, sr = nullptr;
    ASSERT_GE(swy_tag_recv_nb(a.worker, &pong, 8, 2, ~0ull, nullptr, &rr), 0);
    ASSERT_GE(swy_tag_send_nb(to_victim, &ping, 8, 1, nullptr, &sr), 0);
    EXPECT_EQ(finish(sr, a.worker, nullptr), SWY_OK);
    ASSERT_EQ(finish(rr, a.worker, nullptr, 60), SWY_OK);
    EXPECT_EQ(pong, ping);

    // A rendezvous the victim never receives: the send waits for an ATS that cannot come.
    std::vector<uint8_t> big(4 << 20, 0x5A);
    swy_request_h pending = nullptr;
    ASSERT_GE(swy_tag_send_nb(to_victim, big.data(), big.size(), 3, nullptr, &pending), 0);
    for (int i = 0; i < 1000; ++i) swy_worker_progress(a.worker);
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    const swy_status_t st = finish(pending, a.worker, bystander.worker, 30);
    EXPECT_NE(st, SWY_INPROGRESS) << "the send to the dead peer never completed";
    EXPECT_LT(st, 0) << "the send to the dead peer completed without an error";
    EXPECT_EQ(victim_errors.calls, 1);
    EXPECT_LT(victim_errors.status, 0);
    // The other endpoint of the same worker is unaffected.
    transfer(to_bystander, a, bystander, 100000, 9, "bystander after the peer died");
    EXPECT_EQ(bystander_errors.calls, 0);
    close_now(to_bystander);
    close_now(to_victim);
    close(p2c[0]);
    close(p2c[1]);
    close(c2p[0]);
    close(c2p[1]);
}

TEST(VerbsTransport, BlockingWaitWakesOnAnIncomingMessage) {
    Node a, b;
    SKIP_WITHOUT_VERBS(a);
    swy_ep_h ep = connect(a.worker, b.address);
    // Wire the connection first (the handshake needs both sides' progress).
    transfer(ep, a, b, 16, 3, "warm-up");
    uint64_t value = 0;
    swy_request_h rr = nullptr;
    ASSERT_GE(swy_tag_recv_nb(b.worker, &value, 8, 99, ~0ull, nullptr, &rr), 0);
    ASSERT_NE(rr, nullptr);
    std::thread sender([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        const uint64_t v = 0xC0FFEE;
        swy_request_h sr = nullptr;
        swy_tag_send_nb(ep, &v, 8, 99, nullptr, &sr);
        if (sr != nullptr) finish(sr, a.worker, nullptr);
    });
    // b sleeps in the kernel (completion channel in its event fd) until the SEND lands.
    const auto start = Clock::now();
    swy_status_t st = SWY_INPROGRESS;
    while ((st = swy_request_test(rr)) == SWY_INPROGRESS &&
           Clock::now() - start < std::chrono::seconds(20)) {
        swy_worker_wait(b.worker, 10000);
        swy_worker_progress(b.worker);
    }
    sender.join();
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    EXPECT_EQ(st, SWY_OK);
    EXPECT_EQ(value, 0xC0FFEEu);
    EXPECT_LT(waited, 9.0) << "the wait did not wake up on the message";
    if (st != SWY_INPROGRESS) swy_request_free(rr);
    close_now(ep);
}

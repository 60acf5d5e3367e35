// The verbs transport end to end, through the public API, on a real RDMA device (rxe0 inside
// the Soft-RoCE VM: test/verbs/run-vm.sh). On a host without an RDMA device every test here
// skips with a message: the verbs interface does not open there.
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <switchyard/switchyard.h>

#include "common/log.h"
#include "core/address.h"
#include "core/worker.h"
#include "transports/verbs/page_identity.h"
#include "transports/verbs/verbs_open.h"
#include "verbs_test_node.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
    std::string scheme = "auto";
    std::string proto = "all";
};
/// More settings, by name without SWY_ ({"VERBS_SQ_DEPTH", "16"}).
using Settings = swy::test::VerbsSettings;

/// One context + worker with SWY_TLS=verbs,self, the scheme and allow-list of @p o, and
/// @p extra on top.
struct Node : swy::test::VerbsNode {
    explicit Node(const Options& o = {}, const Settings& extra = {})
        : VerbsNode(with_options(o, extra)) {}
    static Settings with_options(const Options& o, const Settings& extra) {
        Settings all{{"RNDV_SCHEME", o.scheme}, {"PROTO", o.proto}};
        all.insert(all.end(), extra.begin(), extra.end());
        return all;
    }
};

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
    p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS | SWY_EP_PARAM_FIELD_ERR_HANDLER;
    p.remote_address = to.data();
    p.remote_address_length = to.size();
    p.err_cb = errors != nullptr ? on_error : nullptr;
    p.err_arg = errors;
    swy_ep_h ep = nullptr;
    EXPECT_EQ(swy_ep_create(from, &p, &ep), SWY_OK);
    return ep;
}

using swy::test::close_now;

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
    for (size_t i = 0; i < n; ++i)
        p[i] = pattern(i, seed);
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
    for (size_t i = 0; i < 64; ++i)
        ASSERT_EQ(dst[n + i], 0xEE) << "guard byte " << i;
}

/// The registration cache of @p n's verbs interface (counters and whether it is active).
swy::tl::verbs::RegCacheReport rcache_of(const Node& n) {
    swy::tl::verbs::RegCacheReport r;
    EXPECT_TRUE(swy::tl::verbs::reg_cache_report(
        reinterpret_cast<const swy::core::Worker*>(n.worker)->interface_named("verbs"), &r));
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
    attr.field_mask = SWY_EP_ATTR_FIELD_LANE | SWY_EP_ATTR_FIELD_PIO_DETAIL;
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
        attr.field_mask = SWY_EP_ATTR_FIELD_LANE | SWY_EP_ATTR_FIELD_PIO_DETAIL;
        ASSERT_EQ(swy_ep_query(ep, &attr), SWY_OK);
        const size_t pio = attr.pio_max_size, frag = attr.bcopy_max_size;
        // Around the inline limit, the single-packet limit, fragment counts and rendezvous.
        const std::vector<size_t> sizes{
            0,    1,        pio - 1,      pio,      pio + 1,       frag - 1,
            frag, frag + 1, 3 * frag + 7, 64 << 10, (1 << 20) + 3, 5 << 20};
        uint32_t seed = 1;
        for (size_t n : sizes)
            transfer(ep, a, b, n, seed++, run.what);
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
        auto* src = static_cast<uint8_t*>(
            mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        auto* dst = static_cast<uint8_t*>(
            mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
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
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0),
                      src);
            ASSERT_EQ(mmap(dst, n, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0),
                      dst);
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
    const Settings off{{"VERBS_RCACHE", "off"}};
    Node a({"get", "all"}, off), b({"get", "all"}, off);
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

TEST(VerbsTransport, UnknownRcacheModeIsRefusedBeforeAnyContext) {
    // A fixed-choice setting is checked when it is set (and so when a context is created
    // from the environment), with the accepted values in the message.
    swy_config_h cfg = nullptr;
    ASSERT_EQ(swy_config_read(&cfg), SWY_OK);
    EXPECT_EQ(swy_config_set(cfg, "VERBS_RCACHE", "sometimes"), SWY_ERR_INVALID_PARAM);
    EXPECT_EQ(swy_config_set(cfg, "VERBS_RCACHE", "off"), SWY_OK);
    swy_config_release(cfg);
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

TEST(VerbsTransport, ManyPutsInFlightWithASmallSendQueueArriveByteForByte) {
    // 8 x 4 MiB with a 16-WR send queue: 32 WRITE chunks of 1 MiB cannot all be posted at
    // once, so most wait in the backlog, and each FIN is posted only behind its last chunk;
    // FINs that find the queue or the credits taken are retried. A FIN that overtook a
    // chunk would complete a receive whose tail is still 0xEE.
    const Options o{"put", "all"};
    const Settings small_queue{{"VERBS_SQ_DEPTH", "16"}};
    Node a(o, small_queue), b(o, small_queue);
    SKIP_WITHOUT_VERBS(a);
    swy_ep_h ep = connect(a.worker, b.address);
    transfer(ep, a, b, 16, 1, "warm-up");
    constexpr size_t kCount = 8, kSize = 4 << 20;
    std::vector<std::vector<uint8_t>> src(kCount), dst(kCount);
    std::vector<swy_request_h> sends(kCount, nullptr), recvs(kCount, nullptr);
    for (size_t i = 0; i < kCount; ++i) {
        src[i].resize(kSize);
        dst[i].assign(kSize + 64, 0xEE);
        fill(src[i].data(), kSize, static_cast<uint32_t>(40 + i));
        ASSERT_GE(
            swy_tag_recv_nb(b.worker, dst[i].data(), kSize, 700 + i, ~0ull, nullptr, &recvs[i]), 0);
    }
    for (size_t i = 0; i < kCount; ++i) {
        ASSERT_GE(swy_tag_send_nb(ep, src[i].data(), kSize, 700 + i, nullptr, &sends[i]), 0);
    }
    const auto end = Clock::now() + std::chrono::seconds(120);
    size_t open = 2 * kCount;
    std::vector<swy_status_t> send_st(kCount, SWY_INPROGRESS), recv_st(kCount, SWY_INPROGRESS);
    std::vector<size_t> intact(kCount, 0);  // first wrong byte, when the receive completed
    while (open > 0 && Clock::now() < end) {
        swy_worker_progress(a.worker);
        swy_worker_progress(b.worker);
        open = 0;
        for (size_t i = 0; i < kCount; ++i) {
            if (send_st[i] == SWY_INPROGRESS &&
                (send_st[i] = swy_request_test(sends[i])) == SWY_INPROGRESS) {
                ++open;
            }
            if (recv_st[i] != SWY_INPROGRESS) continue;
            if ((recv_st[i] = swy_request_test(recvs[i])) == SWY_INPROGRESS) {
                ++open;
                continue;
            }
            // Checked the moment the receive completes, before the sender progresses again:
            // chunks still in its backlog are posted only from its progress, so a FIN that
            // overtook one shows here as a wrong tail.
            intact[i] = first_bad(dst[i].data(), kSize, static_cast<uint32_t>(40 + i));
        }
    }
    for (size_t i = 0; i < kCount; ++i) {
        SCOPED_TRACE("message " + std::to_string(i));
        EXPECT_EQ(send_st[i], SWY_OK);
        EXPECT_EQ(recv_st[i], SWY_OK);
        if (send_st[i] != SWY_INPROGRESS) swy_request_free(sends[i]);
        if (recv_st[i] != SWY_INPROGRESS) swy_request_free(recvs[i]);
        if (recv_st[i] != SWY_OK) continue;
        EXPECT_EQ(intact[i], kSize) << "the receive completed before its data was placed";
        EXPECT_EQ(first_bad(dst[i].data(), kSize, static_cast<uint32_t>(40 + i)), kSize);
        for (size_t g = 0; g < 64; ++g)
            ASSERT_EQ(dst[i][kSize + g], 0xEE) << "guard " << g;
    }
    // The connection still works after the backlog drained.
    transfer(ep, a, b, (1 << 20) + 3, 60, "after the burst");
    close_now(ep);
}

TEST(VerbsTransport, PutAroundTheRendezvousThresholdByteForByte) {
    for (const size_t n : {size_t{1} << 10, size_t{64} << 10}) {
        SCOPED_TRACE("SWY_RNDV_THRESH=" + std::to_string(n));
        const Options o{"put", "all"};
        const Settings thresh{{"RNDV_THRESH", std::to_string(n)}};
        Node a(o, thresh), b(o, thresh);
        SKIP_WITHOUT_VERBS(a);
        swy_ep_h ep = connect(a.worker, b.address);
        // The table must switch to the RDMA WRITE protocol exactly at the threshold.
        std::vector<char> table(16384);
        ASSERT_EQ(swy_ep_print_protocols(ep, SWY_MEMTYPE_HOST, table.data(), table.size()), SWY_OK);
        const std::string text(table.data());
        EXPECT_NE(text.find("rndv_put_zcopy"), std::string::npos) << text;
        EXPECT_NE(text.find("[SWY_RNDV_THRESH]"), std::string::npos) << text;
        uint32_t seed = 80;
        for (size_t size : {n - 1, n, n + 1})
            transfer(ep, a, b, size, seed++, "put threshold");
        close_now(ep);
    }
}

namespace {

/// Clear CAP_IPC_LOCK (effective, permitted, inheritable): from then on RLIMIT_MEMLOCK
/// bounds what this process may pin, root or not.
bool drop_ipc_lock() {
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (syscall(SYS_capget, &hdr, data) != 0) return false;
    const uint32_t bit = 1u << (CAP_IPC_LOCK % 32);
    data[CAP_IPC_LOCK / 32].effective &= ~bit;
    data[CAP_IPC_LOCK / 32].permitted &= ~bit;
    data[CAP_IPC_LOCK / 32].inheritable &= ~bit;
    return syscall(SYS_capset, &hdr, data) == 0;
}

/// Bytes this process has pinned (VmPin of /proc/self/status: registered memory), or -1.
long long pinned_bytes() {
    FILE* f = fopen("/proc/self/status", "r");
    if (f == nullptr) return -1;
    char line[256];
    long long kb = -1;
    while (fgets(line, sizeof(line), f) != nullptr) {
        if (std::sscanf(line, "VmPin: %lld kB", &kb) == 1) break;
    }
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

bool send_all(swy_ep_h ep, swy_worker_h w, const uint8_t* p, size_t n, swy_tag_t tag) {
    swy_request_h sr = nullptr;
    if (swy_tag_send_nb(ep, p, n, tag, nullptr, &sr) < 0) return false;
    return finish(sr, w, nullptr, 120) == SWY_OK;
}

}  // namespace

TEST(VerbsTransport, PutWhoseSenderCannotRegisterPushesThroughTheLane) {
    // The sender registers only after its RTS went out, so the receiver has already answered
    // with its rkey when the sender finds it cannot register. Here that registration really
    // fails: the sender is a child process without CAP_IPC_LOCK whose RLIMIT_MEMLOCK leaves
    // 64 KiB above what its interface pinned (ib_umem_get: ENOMEM). The data must still
    // arrive, every byte, and both requests complete with SWY_OK.
    {
        Node probe;
        SKIP_WITHOUT_VERBS(probe);
    }
    char log_path[] = "/tmp/swy-put-reg-XXXXXX";
    const int log_fd = mkstemp(log_path);
    ASSERT_GE(log_fd, 0);
    int p2c[2], c2p[2];
    ASSERT_EQ(pipe(p2c), 0);
    ASSERT_EQ(pipe(c2p), 0);
    constexpr size_t kBig = 4 << 20, kOdd = (1 << 20) + 3;
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // Before the device is opened: uverbs refuses write() commands (rxe posts sends with
        // them) from a process whose credentials changed since it opened the device.
        if (!drop_ipc_lock()) _exit(6);
        Node s({"put", "all"});
        const uint32_t len = static_cast<uint32_t>(s.address.size());
        if (write(c2p[1], &len, 4) != 4 || write(c2p[1], s.address.data(), len) != len) _exit(2);
        uint32_t plen = 0;
        if (read(p2c[0], &plen, 4) != 4) _exit(3);
        std::vector<uint8_t> parent(plen);
        if (read(p2c[0], parent.data(), plen) != static_cast<ssize_t>(plen)) _exit(4);
        swy_ep_h ep = connect(s.worker, parent);
        const uint8_t hello[16] = {1, 2, 3};
        if (!send_all(ep, s.worker, hello, sizeof(hello), 1)) _exit(5);  // wires the QP
        const long long pinned = pinned_bytes();
        if (pinned < 0) _exit(6);
        const rlimit lim{static_cast<rlim_t>(pinned + (64 << 10)),
                         static_cast<rlim_t>(pinned + (64 << 10))};
        if (setrlimit(RLIMIT_MEMLOCK, &lim) != 0) _exit(7);
        std::vector<uint8_t> big(kBig), odd(kOdd);
        fill(big.data(), kBig, 21);
        fill(odd.data(), kOdd, 22);
        // mlock is bounded by the same limit: proof that registering 4 MiB must fail now.
        if (mlock(big.data(), kBig) == 0) _exit(8);
        dup2(log_fd, 2);
        swy::common::set_log_level(swy::common::LogLevel::kInfo);
        if (!send_all(ep, s.worker, big.data(), kBig, 2)) _exit(9);
        if (!send_all(ep, s.worker, odd.data(), kOdd, 3)) _exit(10);
        _exit(0);
    }
    Node r({"put", "all"});
    uint32_t len = 0;
    ASSERT_EQ(read(c2p[0], &len, 4), 4);
    std::vector<uint8_t> peer(len);
    ASSERT_EQ(read(c2p[0], peer.data(), len), static_cast<ssize_t>(len));
    const uint32_t mylen = static_cast<uint32_t>(r.address.size());
    ASSERT_EQ(write(p2c[1], &mylen, 4), 4);
    ASSERT_EQ(write(p2c[1], r.address.data(), mylen), static_cast<ssize_t>(mylen));

    uint8_t hello[16] = {};
    std::vector<uint8_t> big(kBig + 64, 0xEE), odd(kOdd + 64, 0xEE);
    swy_request_h rh = nullptr, rb = nullptr, ro = nullptr;
    ASSERT_GE(swy_tag_recv_nb(r.worker, hello, sizeof(hello), 1, ~0ull, nullptr, &rh), 0);
    ASSERT_GE(swy_tag_recv_nb(r.worker, big.data(), kBig, 2, ~0ull, nullptr, &rb), 0);
    ASSERT_GE(swy_tag_recv_nb(r.worker, odd.data(), kOdd, 3, ~0ull, nullptr, &ro), 0);
    EXPECT_EQ(finish(rh, r.worker, nullptr, 120), SWY_OK);
    EXPECT_EQ(finish(rb, r.worker, nullptr, 120), SWY_OK);
    EXPECT_EQ(finish(ro, r.worker, nullptr, 120), SWY_OK);
    // Keep answering (credits) until the sender is through.
    int status = -1;
    const auto end = Clock::now() + std::chrono::seconds(120);
    while (waitpid(child, &status, WNOHANG) == 0 && Clock::now() < end) {
        swy_worker_progress(r.worker);
    }
    if (!WIFEXITED(status)) {
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "sender exited with status " << status << " (see the _exit codes in the child)";
    EXPECT_EQ(hello[0], 1);
    EXPECT_EQ(first_bad(big.data(), kBig, 21), kBig);
    EXPECT_EQ(first_bad(odd.data(), kOdd, 22), kOdd);
    for (size_t g = 0; g < 64; ++g) {
        ASSERT_EQ(big[kBig + g], 0xEE) << "guard " << g;
        ASSERT_EQ(odd[kOdd + g], 0xEE) << "guard " << g;
    }
    // The sender really took the fallback (both puts), not RDMA WRITE.
    std::string log;
    char buf[4096];
    ssize_t got;
    lseek(log_fd, 0, SEEK_SET);
    while ((got = read(log_fd, buf, sizeof(buf))) > 0)
        log.append(buf, static_cast<size_t>(got));
    size_t fallbacks = 0;
    for (size_t at = 0; (at = log.find("pushed through the lane", at)) != std::string::npos; ++at) {
        ++fallbacks;
    }
    EXPECT_EQ(fallbacks, 2u) << log;
    close(log_fd);
    unlink(log_path);
    for (int fd : {p2c[0], p2c[1], c2p[0], c2p[1]})
        close(fd);
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
        while (Clock::now() < end)
            swy_worker_progress(v.worker);
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
    for (int i = 0; i < 1000; ++i)
        swy_worker_progress(a.worker);
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

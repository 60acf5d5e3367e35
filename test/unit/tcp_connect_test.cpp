// tcp connection set-up seen from the public API (issue #18): one connection per pair of
// workers whichever side creates its endpoint first (or both at once), a handshake that never
// ends fails the endpoint after SWY_TCP_HANDSHAKE_TIMEOUT instead of hanging, and running out
// of descriptors is SWY_ERR_NO_RESOURCE. Two workers in this process over loopback.
#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tcp_test_util.h"
#include "test_context.h"

namespace swy::tl::tcp {
namespace {

using Clock = std::chrono::steady_clock;

swy_context_h tcp_only_context(const swy::test::Settings& extra = {}) {
    swy::test::Settings all{{"TLS", "tcp"}, {"NET_DEVICES", "lo"}};
    all.insert(all.end(), extra.begin(), extra.end());
    return swy::test::make_context(all);
}

std::vector<uint8_t> address_of(swy_worker_h w) {
    void* a = nullptr;
    size_t n = 0;
    EXPECT_EQ(swy_worker_get_address(w, &a, &n), SWY_OK);
    std::vector<uint8_t> out(static_cast<uint8_t*>(a), static_cast<uint8_t*>(a) + n);
    swy_worker_release_address(w, a);
    return out;
}

struct Errors {
    int calls = 0;
    swy_status_t status = SWY_OK;
};
void on_error(void* arg, swy_ep_h, swy_status_t status) {
    auto* e = static_cast<Errors*>(arg);
    ++e->calls;
    e->status = status;
}

swy_status_t make_ep(swy_worker_h from, const std::vector<uint8_t>& address, swy_ep_h* ep,
                     Errors* errors = nullptr) {
    swy_ep_params_t p{};
    p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS | SWY_EP_PARAM_FIELD_ERR_HANDLER;
    p.remote_address = address.data();
    p.remote_address_length = address.size();
    p.err_cb = errors != nullptr ? on_error : nullptr;
    p.err_arg = errors;
    return swy_ep_create(from, &p, ep);
}

bool progress_until(std::initializer_list<swy_worker_h> ws, const std::function<bool()>& done,
                    int seconds = 10) {
    const auto deadline = Clock::now() + std::chrono::seconds(seconds);
    while (!done()) {
        if (Clock::now() > deadline) return false;
        for (swy_worker_h w : ws)
            swy_worker_progress(w);
    }
    return true;
}

/// Sockets this process holds (/proc/self/fd entries that are sockets).
int socket_count() {
    int n = 0;
    DIR* d = opendir("/proc/self/fd");
    if (d == nullptr) return -1;
    while (dirent* e = readdir(d)) {
        char link[64] = {};
        const std::string path = std::string("/proc/self/fd/") + e->d_name;
        const ssize_t len = readlink(path.c_str(), link, sizeof(link) - 1);
        if (len > 0 && std::strncmp(link, "socket:", 7) == 0) ++n;
    }
    closedir(d);
    return n;
}

void close_ep(swy_worker_h w, swy_ep_h ep) {
    swy_request_h r = nullptr;
    if (swy_ep_close_nb(ep, SWY_EP_CLOSE_FLUSH, &r) == SWY_INPROGRESS) {
        ASSERT_TRUE(progress_until({w}, [&] { return swy_request_test(r) != SWY_INPROGRESS; }));
        swy_request_free(r);
    }
}

/// Sends @p size bytes (pattern @p seed) from @p ep to worker @p to (tag 5) and checks them
/// byte for byte; progresses both workers.
void exchange(swy_worker_h from, swy_ep_h ep, swy_worker_h to, size_t size, uint32_t seed) {
    std::vector<uint8_t> out = test::pattern(size, seed), in(size + 16, 0xEE);
    swy_request_h rr = nullptr, sr = nullptr;
    swy_status_t rs = swy_tag_recv_nb(to, in.data(), in.size(), 5, ~0ull, nullptr, &rr);
    ASSERT_TRUE(rs == SWY_OK || rs == SWY_INPROGRESS);
    swy_status_t ss = swy_tag_send_nb(ep, out.data(), out.size(), 5, nullptr, &sr);
    ASSERT_TRUE(ss == SWY_OK || ss == SWY_INPROGRESS) << swy_status_string(ss);
    ASSERT_TRUE(progress_until({from, to},
                               [&] {
                                   return (rr == nullptr ||
                                           swy_request_test(rr) != SWY_INPROGRESS) &&
                                          (sr == nullptr || swy_request_test(sr) != SWY_INPROGRESS);
                               }))
        << "message of " << size << " bytes not delivered";
    if (rr != nullptr) {
        EXPECT_EQ(swy_request_test(rr), SWY_OK);
        swy_tag_recv_info_t info{};
        ASSERT_EQ(swy_request_recv_info(rr, &info), SWY_OK);
        EXPECT_EQ(info.length, size);
        swy_request_free(rr);
    }
    if (sr != nullptr) {
        EXPECT_EQ(swy_request_test(sr), SWY_OK);
        swy_request_free(sr);
    }
    EXPECT_TRUE(std::equal(out.begin(), out.end(), in.begin())) << size << " bytes differ";
    EXPECT_EQ(in[size], 0xEE) << "written past the message";
}

/// Eager, fragmented and rendezvous sizes, both ways.
void exchange_both_ways(swy_worker_h a, swy_ep_h ab, swy_worker_h b, swy_ep_h ba) {
    uint32_t seed = 1;
    for (size_t size : {size_t{0}, size_t{8}, size_t{3000}, size_t{(300u << 10) + 1}}) {
        exchange(a, ab, b, size, seed++);
        exchange(b, ba, a, size, seed++);
    }
}

struct TwoWorkers : ::testing::Test {
    void SetUp() override {
        ctx = tcp_only_context({{"TCP_HANDSHAKE_TIMEOUT", "300ms"}});
        ASSERT_NE(ctx, nullptr);
        sockets_before = socket_count();
        ASSERT_EQ(swy_worker_create(ctx, nullptr, &a), SWY_OK);
        ASSERT_EQ(swy_worker_create(ctx, nullptr, &b), SWY_OK);
        // Listening sockets (one or two per worker) and the like: counted out.
        listeners = socket_count() - sockets_before;
    }
    void TearDown() override {
        if (a != nullptr) swy_worker_destroy(a);
        if (b != nullptr) swy_worker_destroy(b);
        if (ctx != nullptr) swy_context_destroy(ctx);
    }
    /// Sockets of connections between the two workers (both ends are in this process).
    int connection_sockets() const { return socket_count() - sockets_before - listeners; }
    /// Progress until exactly @p n connection sockets are left (a dropped duplicate closes
    /// once its peer saw the close); false if that never happens.
    bool settles_at(int n) {
        return progress_until(
            {a, b}, [&] { return connection_sockets() == n; }, 5);
    }

    swy_context_h ctx = nullptr;
    swy_worker_h a = nullptr, b = nullptr;
    int sockets_before = 0;
    int listeners = 0;
};

TEST_F(TwoWorkers, EndpointsCreatedAtOnceShareOneConnection) {
    swy_ep_h ab = nullptr, ba = nullptr;
    // Both before either worker progresses: the two connects cross.
    ASSERT_EQ(make_ep(a, address_of(b), &ab), SWY_OK);
    ASSERT_EQ(make_ep(b, address_of(a), &ba), SWY_OK);
    exchange_both_ways(a, ab, b, ba);
    EXPECT_TRUE(settles_at(2)) << connection_sockets()
                               << " sockets: one connection has two ends, in this process";
    exchange_both_ways(a, ab, b, ba);
    EXPECT_EQ(connection_sockets(), 2);
    close_ep(a, ab);
    close_ep(b, ba);
    EXPECT_TRUE(settles_at(0)) << "closed endpoints left " << connection_sockets() << " sockets";
}

TEST_F(TwoWorkers, EndpointToAPeerThatConnectedFirstRidesOnItsConnection) {
    swy_ep_h ab = nullptr, ba = nullptr;
    ASSERT_EQ(make_ep(a, address_of(b), &ab), SWY_OK);
    exchange(a, ab, b, 8, 1);  // a's connection is up, and b knows it
    Errors b_errors;
    ASSERT_EQ(make_ep(b, address_of(a), &ba, &b_errors), SWY_OK);
    exchange_both_ways(a, ab, b, ba);
    EXPECT_TRUE(settles_at(2)) << connection_sockets() << " sockets for one pair of workers";
    // a leaves first: b's endpoint keeps the connection and keeps working.
    close_ep(a, ab);
    for (int i = 0; i < 2000; ++i) {
        swy_worker_progress(a);
        swy_worker_progress(b);
    }
    EXPECT_EQ(b_errors.calls, 0) << swy_status_string(b_errors.status);
    exchange(b, ba, a, 3000, 9);
    exchange(b, ba, a, (300u << 10) + 1, 10);
    close_ep(b, ba);
    EXPECT_TRUE(settles_at(0)) << "closed endpoints left " << connection_sockets() << " sockets";
    EXPECT_EQ(b_errors.calls, 0);
}

TEST_F(TwoWorkers, APeerThatNeverAnswersFailsTheSendAfterTheHandshakeTimeout) {
    // b never makes progress: the kernel completes the TCP connection, nobody says hello
    // back. swy_ep_create does not wait for it; the send fails after 300 ms.
    Errors errors;
    swy_ep_h ab = nullptr;
    const auto t0 = Clock::now();
    ASSERT_EQ(make_ep(a, address_of(b), &ab, &errors), SWY_OK);
    EXPECT_LT(Clock::now() - t0, std::chrono::milliseconds(300)) << "swy_ep_create waited";
    std::vector<uint8_t> big(1u << 20, 0x5A);  // rendezvous: waits for the peer
    swy_request_h sr = nullptr;
    ASSERT_EQ(swy_tag_send_nb(ab, big.data(), big.size(), 1, nullptr, &sr), SWY_INPROGRESS);
    ASSERT_TRUE(progress_until({a}, [&] { return swy_request_test(sr) != SWY_INPROGRESS; }))
        << "the send never failed: no handshake deadline";
    EXPECT_EQ(swy_request_test(sr), SWY_ERR_TIMED_OUT);
    EXPECT_EQ(errors.calls, 1);
    EXPECT_EQ(errors.status, SWY_ERR_TIMED_OUT);
    swy_request_free(sr);
    swy_request_h r = nullptr;
    if (swy_ep_close_nb(ab, SWY_EP_CLOSE_FORCE, &r) == SWY_INPROGRESS) swy_request_free(r);
}

TEST(TcpConnect, OutOfDescriptorsIsNoResourceNotUnreachable) {
    // In a child: the descriptor limit is process-wide.
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        swy::test::Settings s{{"TLS", "tcp"}, {"NET_DEVICES", "lo"}};
        swy_config_h cfg = nullptr;
        if (swy_config_read(&cfg) != SWY_OK) _exit(20);
        for (const auto& [name, value] : s)
            swy_config_set(cfg, name.c_str(), value.c_str());
        swy_context_params_t cp{};
        cp.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG;
        cp.config = cfg;
        swy_context_h ctx = nullptr;
        if (swy_context_create(&cp, &ctx) != SWY_OK) _exit(21);
        swy_worker_h a = nullptr, b = nullptr;
        if (swy_worker_create(ctx, nullptr, &a) != SWY_OK) _exit(22);
        if (swy_worker_create(ctx, nullptr, &b) != SWY_OK) _exit(23);
        void* addr = nullptr;
        size_t len = 0;
        if (swy_worker_get_address(b, &addr, &len) != SWY_OK) _exit(24);
        // No descriptor left above the highest one in use.
        int highest = 0;
        for (int fd = 0; fd < 65536; ++fd) {
            struct stat st;
            if (fstat(fd, &st) == 0) highest = fd;
        }
        rlimit rl{};
        getrlimit(RLIMIT_NOFILE, &rl);
        rl.rlim_cur = static_cast<rlim_t>(highest + 1);
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) _exit(25);
        // Fill the holes below the limit too: socket() takes the lowest free number.
        while (open("/dev/null", O_RDONLY | O_CLOEXEC) >= 0) {}
        swy_ep_params_t p{};
        p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
        p.remote_address = addr;
        p.remote_address_length = len;
        swy_ep_h ep = nullptr;
        swy_status_t st = swy_ep_create(a, &p, &ep);
        if (st == SWY_OK) {
            // Created (the socket comes later): the first send reports it.
            uint64_t x = 1;
            swy_request_h r = nullptr;
            st = swy_tag_send_nb(ep, &x, sizeof(x), 1, nullptr, &r);
            const auto deadline = Clock::now() + std::chrono::seconds(10);
            while (r != nullptr && swy_request_test(r) == SWY_INPROGRESS &&
                   Clock::now() < deadline) {
                swy_worker_progress(a);
                swy_worker_progress(b);
            }
            if (r != nullptr) st = swy_request_test(r);
            if (st == SWY_OK) _exit(29);  // a message went through: descriptors were left
        }
        _exit(st == SWY_ERR_NO_RESOURCE ? 0 : 30 + (-static_cast<int>(st) & 63));
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "the child crashed";
    EXPECT_EQ(WEXITSTATUS(status), 0)
        << "swy_ep_create with no descriptor left: exit code " << WEXITSTATUS(status)
        << " (30 + -status; SWY_ERR_UNREACHABLE before the fix)";
}

}  // namespace
}  // namespace swy::tl::tcp

// Handles the application keeps after their object is gone, or inherits through fork(), are
// refused with SWY_ERR_INVALID_PARAM (issue #18, adversarial review): listener, connection
// request and remote key; and SWY_NET_DEVICES / SWY_AUTH_KEY are refused when the context is
// created, not at the first worker.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <switchyard/rma.h>
#include <switchyard/switchyard.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <vector>

#include "test_context.h"

namespace {

using Clock = std::chrono::steady_clock;

swy_status_t context_with(const swy::test::Settings& settings, swy_context_h* ctx) {
    swy_config_h cfg = nullptr;
    EXPECT_EQ(swy_config_read(&cfg), SWY_OK);
    for (const auto& [name, value] : settings)
        EXPECT_EQ(swy_config_set(cfg, name.c_str(), value.c_str()), SWY_OK) << name;
    swy_context_params_t cp{};
    cp.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG;
    cp.config = cfg;
    const swy_status_t s = swy_context_create(&cp, ctx);
    swy_config_release(cfg);
    return s;
}

bool progress_until(std::initializer_list<swy_worker_h> ws, const std::function<bool()>& done) {
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (!done()) {
        if (Clock::now() > deadline) return false;
        for (swy_worker_h w : ws)
            swy_worker_progress(w);
    }
    return true;
}

TEST(ContextChecks, NetDevicesNamingNoInterfaceIsRefusedAtContextCreation) {
    swy_context_h ctx = nullptr;
    EXPECT_EQ(context_with({{"TLS", "tcp"}, {"NET_DEVICES", "nosuchif0"}}, &ctx),
              SWY_ERR_INVALID_PARAM);
    EXPECT_EQ(ctx, nullptr);
    // An interface that exists is fine, and so is a list naming it among unknown ones.
    ASSERT_EQ(context_with({{"TLS", "tcp"}, {"NET_DEVICES", "lo,nosuchif0"}}, &ctx), SWY_OK);
    swy_context_destroy(ctx);
}

TEST(ContextChecks, AnInvalidAuthKeyIsRefusedAtContextCreation) {
    swy_context_h ctx = nullptr;
    EXPECT_EQ(context_with({{"TLS", "shm,self"}, {"AUTH_KEY", "xyz"}}, &ctx),
              SWY_ERR_INVALID_PARAM);
    EXPECT_EQ(context_with({{"TLS", "shm,self"}, {"AUTH_KEY", "0011"}}, &ctx),  // too short
              SWY_ERR_INVALID_PARAM);
    EXPECT_EQ(ctx, nullptr);
}

void on_connect(swy_conn_request_h r, void* arg) {
    static_cast<std::vector<swy_conn_request_h>*>(arg)->push_back(r);
}

struct ListenerWorld : ::testing::Test {
    void SetUp() override {
        ASSERT_EQ(context_with({{"TLS", "tcp,self"}, {"NET_DEVICES", "lo"}}, &ctx), SWY_OK);
        ASSERT_EQ(swy_worker_create(ctx, nullptr, &server), SWY_OK);
        ASSERT_EQ(swy_worker_create(ctx, nullptr, &client), SWY_OK);
        sockaddr_in sin{};
        sin.sin_family = AF_INET;
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        swy_listener_params_t lp{};
        lp.field_mask = SWY_LISTENER_PARAM_FIELD_SOCKADDR | SWY_LISTENER_PARAM_FIELD_CONN_HANDLER;
        lp.sockaddr = reinterpret_cast<const sockaddr*>(&sin);
        lp.sockaddr_length = sizeof(sin);
        lp.on_connect = on_connect;
        lp.arg = &offered;
        ASSERT_EQ(swy_listener_create(server, &lp, &listener), SWY_OK);
        swy_listener_attr_t attr{};
        attr.field_mask = SWY_LISTENER_ATTR_FIELD_SOCKADDR;
        ASSERT_EQ(swy_listener_query(listener, &attr), SWY_OK);
        std::memcpy(&bound, &attr.sockaddr, sizeof(bound));
    }
    void TearDown() override {
        if (listener != nullptr) swy_listener_destroy(listener);
        if (client != nullptr) swy_worker_destroy(client);
        if (server != nullptr) swy_worker_destroy(server);
        if (ctx != nullptr) swy_context_destroy(ctx);
    }
    /// A client endpoint whose request the listener offered.
    swy_ep_h request_one() {
        swy_ep_params_t p{};
        p.field_mask = SWY_EP_PARAM_FIELD_FLAGS | SWY_EP_PARAM_FIELD_SOCKADDR;
        p.flags = SWY_EP_FLAG_SOCKADDR;
        p.sockaddr = reinterpret_cast<const sockaddr*>(&bound);
        p.sockaddr_length = sizeof(bound);
        swy_ep_h ep = nullptr;
        EXPECT_EQ(swy_ep_create(client, &p, &ep), SWY_OK);
        EXPECT_TRUE(progress_until({server, client}, [&] { return !offered.empty(); }));
        return ep;
    }

    swy_context_h ctx = nullptr;
    swy_worker_h server = nullptr, client = nullptr;
    swy_listener_h listener = nullptr;
    sockaddr_in bound{};
    std::vector<swy_conn_request_h> offered;
};

TEST_F(ListenerWorld, ADestroyedListenersHandleIsRefused) {
    swy_listener_h gone = listener;
    swy_listener_destroy(listener);
    listener = nullptr;
    swy_listener_attr_t attr{};
    attr.field_mask = SWY_LISTENER_ATTR_FIELD_SOCKADDR;
    EXPECT_EQ(swy_listener_query(gone, &attr), SWY_ERR_INVALID_PARAM);
    attr.field_mask = 0;
    EXPECT_EQ(swy_listener_query(gone, &attr), SWY_ERR_INVALID_PARAM);
    int dummy = 0;
    EXPECT_EQ(swy_listener_reject(gone, reinterpret_cast<swy_conn_request_h>(&dummy)),
              SWY_ERR_INVALID_PARAM);
    swy_listener_destroy(gone);  // a second destroy is refused, not a double free
}

TEST_F(ListenerWorld, AnAnsweredRequestsHandleIsRefused) {
    swy_ep_h ep = request_one();
    ASSERT_EQ(offered.size(), 1u);
    swy_conn_request_h r = offered[0];
    swy_conn_request_attr_t attr{};
    attr.field_mask = SWY_CONN_REQUEST_ATTR_FIELD_CLIENT_SOCKADDR;
    ASSERT_EQ(swy_conn_request_query(r, &attr), SWY_OK);
    ASSERT_EQ(swy_listener_reject(listener, r), SWY_OK);
    // Let the verdict go out and the request be freed.
    for (int i = 0; i < 20000; ++i) {
        swy_worker_progress(server);
        swy_worker_progress(client);
    }
    EXPECT_EQ(swy_conn_request_query(r, &attr), SWY_ERR_INVALID_PARAM);
    EXPECT_EQ(swy_listener_reject(listener, r), SWY_ERR_INVALID_PARAM);
    swy_request_h cr = nullptr;
    if (swy_ep_close_nb(ep, SWY_EP_CLOSE_FORCE, &cr) == SWY_INPROGRESS) swy_request_free(cr);
}

TEST_F(ListenerWorld, HandlesInheritedThroughForkAreRefused) {
    swy_ep_h ep = request_one();
    ASSERT_EQ(offered.size(), 1u);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        swy_listener_attr_t attr{};
        attr.field_mask = SWY_LISTENER_ATTR_FIELD_SOCKADDR;
        swy_conn_request_attr_t rattr{};
        rattr.field_mask = SWY_CONN_REQUEST_ATTR_FIELD_CLIENT_SOCKADDR;
        int rc = 0;
        if (swy_listener_query(listener, &attr) != SWY_ERR_INVALID_PARAM) rc |= 1;
        if (swy_listener_reject(listener, offered[0]) != SWY_ERR_INVALID_PARAM) rc |= 2;
        if (swy_conn_request_query(offered[0], &rattr) != SWY_ERR_INVALID_PARAM) rc |= 4;
        _exit(rc);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "bits: 1 query, 2 reject, 4 request query accepted";
    // The parent's listener and request are untouched.
    EXPECT_EQ(swy_listener_reject(listener, offered[0]), SWY_OK);
    swy_request_h cr = nullptr;
    if (swy_ep_close_nb(ep, SWY_EP_CLOSE_FORCE, &cr) == SWY_INPROGRESS) swy_request_free(cr);
}

TEST(StaleRkey, AKeyOfAClosedEndpointIsRefusedNotFollowed) {
    swy_context_h ctx = nullptr;
    ASSERT_EQ(context_with({{"TLS", "shm,self"}}, &ctx), SWY_OK);
    swy_worker_h a = nullptr, b = nullptr;
    ASSERT_EQ(swy_worker_create(ctx, nullptr, &a), SWY_OK);
    ASSERT_EQ(swy_worker_create(ctx, nullptr, &b), SWY_OK);
    swy_mem_map_params_t mp{};
    mp.field_mask = SWY_MEM_MAP_FIELD_LENGTH | SWY_MEM_MAP_FIELD_FLAGS;
    mp.length = 4096;
    mp.flags = SWY_MEM_MAP_ALLOCATE;
    swy_mem_h mem = nullptr;
    ASSERT_EQ(swy_mem_map(ctx, &mp, &mem), SWY_OK);
    swy_mem_attr_t ma{};
    ma.field_mask = SWY_MEM_ATTR_FIELD_ADDRESS;
    ASSERT_EQ(swy_mem_query(mem, &ma), SWY_OK);
    const auto base = reinterpret_cast<uint64_t>(ma.address);
    void* packed = nullptr;
    size_t packed_len = 0;
    ASSERT_EQ(swy_rkey_pack(ctx, mem, &packed, &packed_len), SWY_OK);

    void* addr = nullptr;
    size_t len = 0;
    ASSERT_EQ(swy_worker_get_address(b, &addr, &len), SWY_OK);
    swy_ep_params_t p{};
    p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
    p.remote_address = addr;
    p.remote_address_length = len;
    swy_ep_h ep = nullptr;
    ASSERT_EQ(swy_ep_create(a, &p, &ep), SWY_OK);
    swy_rkey_h key = nullptr;
    ASSERT_EQ(swy_ep_rkey_unpack(ep, packed, packed_len, &key), SWY_OK);
    void* local = nullptr;
    EXPECT_NE(swy_rkey_ptr(key, base, &local), SWY_ERR_INVALID_PARAM);

    swy_request_h cr = nullptr;
    if (swy_ep_close_nb(ep, SWY_EP_CLOSE_FORCE, &cr) == SWY_INPROGRESS) swy_request_free(cr);
    EXPECT_EQ(swy_rkey_ptr(key, base, &local), SWY_ERR_INVALID_PARAM);
    // A new endpoint (likely in the closed one's slot) does not adopt the old key.
    swy_ep_h ep2 = nullptr;
    ASSERT_EQ(swy_ep_create(a, &p, &ep2), SWY_OK);
    uint64_t word = 7;
    swy_request_h req = nullptr;
    EXPECT_EQ(swy_put_nb(ep2, &word, sizeof(word), base, key, nullptr, &req),
              SWY_ERR_INVALID_PARAM);
    EXPECT_EQ(req, nullptr);
    swy_rkey_destroy(key);  // still fine: the key itself is alive

    if (swy_ep_close_nb(ep2, SWY_EP_CLOSE_FORCE, &cr) == SWY_INPROGRESS) swy_request_free(cr);
    swy_worker_release_address(b, addr);
    swy_rkey_buffer_release(packed);
    swy_mem_unmap(ctx, mem);
    swy_worker_destroy(a);
    swy_worker_destroy(b);
    swy_context_destroy(ctx);
}

}  // namespace

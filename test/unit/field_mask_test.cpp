// The field_mask rule of every public params/attr struct (switchyard.h, above
// swy_context_params_t): unknown bits are refused with SWY_ERR_INVALID_PARAM and a log line
// naming the struct; a params field whose bit is clear is ignored, whatever it holds; an attr
// query fills only the fields asked for. One worker talking to itself over self.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <switchyard/switchyard.h>

#include <cstring>
#include <string>

#include "test_context.h"

namespace {

constexpr uint64_t kUnknownBit = uint64_t{1} << 63;
constexpr swy_tag_t kTag = 0x5eed;
constexpr swy_tag_t kAll = ~swy_tag_t{0};

/// The stderr of @p call, and its status through @p status.
template <class Call>
std::string stderr_of(Call call, swy_status_t* status) {
    testing::internal::CaptureStderr();
    *status = call();
    return testing::internal::GetCapturedStderr();
}

/// The status must be SWY_ERR_INVALID_PARAM and the log must name @p type and the bit.
template <class Call>
void expect_refused(const char* type, Call call) {
    swy_status_t s = SWY_OK;
    const std::string log = stderr_of(call, &s);
    EXPECT_EQ(s, SWY_ERR_INVALID_PARAM) << type;
    EXPECT_NE(log.find(std::string(type) + ".field_mask"), std::string::npos) << log;
    EXPECT_NE(log.find("0x8000000000000000"), std::string::npos) << log;
}

/// A worker with an endpoint to itself (self).
class FieldMask : public testing::Test {
protected:
    void SetUp() override {
        ctx_ = swy::test::make_context({{"TLS", "self"}});
        ASSERT_NE(ctx_, nullptr);
        ASSERT_EQ(swy_worker_create(ctx_, nullptr, &worker_), SWY_OK);
        void* addr = nullptr;
        size_t len = 0;
        ASSERT_EQ(swy_worker_get_address(worker_, &addr, &len), SWY_OK);
        swy_ep_params_t p{};
        p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
        p.remote_address = addr;
        p.remote_address_length = len;
        ASSERT_EQ(swy_ep_create(worker_, &p, &ep_), SWY_OK);
        swy_worker_release_address(worker_, addr);
    }
    void TearDown() override {
        if (ep_ != nullptr) {
            swy_request_h req = nullptr;
            if (swy_ep_close_nb(ep_, SWY_EP_CLOSE_FORCE, &req) == SWY_INPROGRESS) {
                swy_request_wait(worker_, req);
                swy_request_free(req);
            }
        }
        if (worker_ != nullptr) swy_worker_destroy(worker_);
        if (ctx_ != nullptr) swy_context_destroy(ctx_);
    }

    /// Receive the message with kTag into @p buf (blocking).
    void receive(unsigned char* buf, size_t length) {
        swy_request_h r = nullptr;
        swy_status_t s = swy_tag_recv_nb(worker_, buf, length, kTag, kAll, nullptr, &r);
        if (s == SWY_INPROGRESS) {
            s = swy_request_wait(worker_, r);
            swy_request_free(r);
        }
        ASSERT_EQ(s, SWY_OK);
    }

    swy_context_h ctx_ = nullptr;
    swy_worker_h worker_ = nullptr;
    swy_ep_h ep_ = nullptr;
};

TEST_F(FieldMask, UnknownContextAndWorkerBitsAreRefused) {
    swy_context_params_t cp{};
    cp.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG | kUnknownBit;
    swy_context_h ctx = nullptr;
    expect_refused("swy_context_params_t", [&] { return swy_context_create(&cp, &ctx); });
    EXPECT_EQ(ctx, nullptr);

    swy_worker_params_t wp{};
    wp.field_mask = kUnknownBit;
    swy_worker_h w = nullptr;
    expect_refused("swy_worker_params_t", [&] { return swy_worker_create(ctx_, &wp, &w); });
    EXPECT_EQ(w, nullptr);
}

TEST_F(FieldMask, ContextConfigWithoutItsBitIsIgnored) {
    // A config that would fail context creation (an unknown transport): ignored without the
    // bit, so the context comes from the environment.
    swy_config_h cfg = nullptr;
    ASSERT_EQ(swy_config_read(&cfg), SWY_OK);
    ASSERT_EQ(swy_config_set(cfg, "TLS", "no-such-transport"), SWY_OK);
    swy_context_params_t cp{};
    cp.config = cfg;
    swy_context_h ctx = nullptr;
    swy_status_t refused = SWY_OK;
    cp.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG;
    (void)stderr_of([&] { return swy_context_create(&cp, &ctx); }, &refused);
    EXPECT_NE(refused, SWY_OK);  // the config is read with its bit
    cp.field_mask = 0;
    ASSERT_EQ(swy_context_create(&cp, &ctx), SWY_OK);
    swy_context_destroy(ctx);
    swy_config_release(cfg);
}

TEST_F(FieldMask, WorkerThreadModeWithoutItsBitIsIgnored) {
    swy_worker_params_t wp{};
    // A value no thread mode has: the library would refuse it if it read the field (and
    // UBSan would stop on loading it as the enum), so the call succeeds only if it is not read.
    const int bogus = 77;
    std::memcpy(&wp.thread_mode, &bogus, sizeof(bogus));
    swy_worker_h w = nullptr;
    wp.field_mask = 0;
    ASSERT_EQ(swy_worker_create(ctx_, &wp, &w), SWY_OK);
    swy_worker_destroy(w);
}

TEST_F(FieldMask, UnknownEpBitsAreRefusedAndFieldsWithoutTheirBitIgnored) {
    void* addr = nullptr;
    size_t len = 0;
    ASSERT_EQ(swy_worker_get_address(worker_, &addr, &len), SWY_OK);
    swy_ep_params_t p{};
    p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS | kUnknownBit;
    p.remote_address = addr;
    p.remote_address_length = len;
    swy_ep_h ep = nullptr;
    expect_refused("swy_ep_params_t", [&] { return swy_ep_create(worker_, &p, &ep); });
    // The address without its bit is not read: no peer named.
    p.field_mask = 0;
    swy_status_t s = SWY_OK;
    (void)stderr_of([&] { return swy_ep_create(worker_, &p, &ep); }, &s);
    EXPECT_EQ(s, SWY_ERR_INVALID_PARAM);
    // Contradictory flags without the flags' bit are not read either.
    p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
    p.flags = SWY_EP_FLAG_PIO_FIRST | SWY_EP_FLAG_NO_PIO;
    ASSERT_EQ(swy_ep_create(worker_, &p, &ep), SWY_OK);
    swy_request_h req = nullptr;
    if (swy_ep_close_nb(ep, SWY_EP_CLOSE_FORCE, &req) == SWY_INPROGRESS) {
        swy_request_wait(worker_, req);
        swy_request_free(req);
    }
    p.field_mask |= SWY_EP_PARAM_FIELD_FLAGS;  // ... and refused with it
    (void)stderr_of([&] { return swy_ep_create(worker_, &p, &ep); }, &s);
    EXPECT_EQ(s, SWY_ERR_INVALID_PARAM);
    // A flag that names a field needs that field's bit.
    p.flags = SWY_EP_FLAG_SOCKADDR;
    p.field_mask = SWY_EP_PARAM_FIELD_FLAGS;
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons(1);
    p.sockaddr = reinterpret_cast<const sockaddr*>(&sa);
    p.sockaddr_length = sizeof(sa);
    p.remote_address = nullptr;
    const std::string log = stderr_of([&] { return swy_ep_create(worker_, &p, &ep); }, &s);
    EXPECT_EQ(s, SWY_ERR_INVALID_PARAM);
    EXPECT_NE(log.find("SWY_EP_PARAM_FIELD_SOCKADDR"), std::string::npos) << log;
    swy_worker_release_address(worker_, addr);
}

TEST_F(FieldMask, UnknownRequestBitsAreRefusedBeforeAnythingIsPosted) {
    swy_request_params_t p{};
    p.field_mask = SWY_REQ_PARAM_FIELD_FLAGS | kUnknownBit;
    unsigned char out[8] = {1, 2, 3, 4, 5, 6, 7, 8}, in[8] = {};
    swy_request_h r = nullptr;
    expect_refused("swy_request_params_t",
                   [&] { return swy_tag_send_nb(ep_, out, sizeof(out), kTag, &p, &r); });
    expect_refused("swy_request_params_t",
                   [&] { return swy_tag_recv_nb(worker_, in, sizeof(in), kTag, kAll, &p, &r); });
    EXPECT_EQ(r, nullptr);
    // Nothing was sent and nothing posted: a probe finds no message.
    for (int i = 0; i < 10; ++i)
        swy_worker_progress(worker_);
    EXPECT_EQ(swy_tag_probe_nb(worker_, kTag, kAll, 0, nullptr, nullptr), SWY_ERR_NO_MESSAGE);
    // swy_tag_msg_recv_nb refuses too (checked before the message is consumed).
    ASSERT_EQ(swy_tag_send_nb(ep_, out, sizeof(out), kTag, nullptr, &r), SWY_OK);
    swy_message_h m = nullptr;
    for (int i = 0; i < 1000 && swy_tag_probe_nb(worker_, kTag, kAll, 1, nullptr, &m) != SWY_OK;
         ++i)
        swy_worker_progress(worker_);
    ASSERT_NE(m, nullptr);
    expect_refused("swy_request_params_t",
                   [&] { return swy_tag_msg_recv_nb(worker_, in, sizeof(in), m, &p, &r); });
    p.field_mask = 0;
    swy_status_t s = swy_tag_msg_recv_nb(worker_, in, sizeof(in), m, &p, &r);
    if (s == SWY_INPROGRESS) {
        s = swy_request_wait(worker_, r);
        swy_request_free(r);
    }
    ASSERT_EQ(s, SWY_OK);
    EXPECT_EQ(std::memcmp(in, out, sizeof(out)), 0);
}

TEST_F(FieldMask, SyncFlagWithoutItsBitIsAnOrdinarySend) {
    unsigned char out[8] = {9, 8, 7, 6, 5, 4, 3, 2}, in[8] = {};
    swy_request_params_t p{};
    p.flags = SWY_REQ_FLAG_SYNC;
    // Without SWY_REQ_PARAM_FIELD_FLAGS: no receive is posted, yet the send completes at once.
    swy_request_h r = nullptr;
    EXPECT_EQ(swy_tag_send_nb(ep_, out, sizeof(out), kTag, &p, &r), SWY_OK);
    EXPECT_EQ(r, nullptr);
    receive(in, sizeof(in));
    EXPECT_EQ(std::memcmp(in, out, sizeof(out)), 0);

    // With the bit: synchronous, so it waits for the receive.
    p.field_mask = SWY_REQ_PARAM_FIELD_FLAGS;
    ASSERT_EQ(swy_tag_send_nb(ep_, out, sizeof(out), kTag, &p, &r), SWY_INPROGRESS);
    for (int i = 0; i < 100; ++i)
        swy_worker_progress(worker_);
    EXPECT_EQ(swy_request_test(r), SWY_INPROGRESS);  // no receive matched it yet
    std::memset(in, 0, sizeof(in));
    receive(in, sizeof(in));
    EXPECT_EQ(swy_request_wait(worker_, r), SWY_OK);
    swy_request_free(r);
    EXPECT_EQ(std::memcmp(in, out, sizeof(out)), 0);
}

struct Completion {
    int calls = 0;
    void* seen = nullptr;
};

void on_sent(swy_request_h, swy_status_t, void* user_data) {
    auto* c = static_cast<Completion*>(user_data);
    c->calls++;
    c->seen = user_data;
}

TEST_F(FieldMask, CallbackAndUserDataAndRecvInfoWithoutTheirBitsAreIgnored) {
    unsigned char out[8] = {1, 1, 2, 3, 5, 8, 13, 21}, in[8] = {};
    Completion c;
    Completion other;
    swy_request_params_t p{};
    p.flags = SWY_REQ_FLAG_NO_IMM_COMPLETE;
    p.send_cb = &on_sent;
    p.user_data = &other;  // ignored without SWY_REQ_PARAM_FIELD_USER_DATA
    // Flags but no callback bit: the request is returned, and no callback runs.
    p.field_mask = SWY_REQ_PARAM_FIELD_FLAGS;
    swy_request_h r = nullptr;
    ASSERT_EQ(swy_tag_send_nb(ep_, out, sizeof(out), kTag, &p, &r), SWY_INPROGRESS);
    ASSERT_EQ(swy_request_wait(worker_, r), SWY_OK);
    swy_request_free(r);
    EXPECT_EQ(other.calls, 0);
    receive(in, sizeof(in));
    // With the callback and user-data bits the callback runs, with its own user data.
    p.field_mask =
        SWY_REQ_PARAM_FIELD_FLAGS | SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA;
    p.user_data = &c;
    ASSERT_EQ(swy_tag_send_nb(ep_, out, sizeof(out), kTag, &p, &r), SWY_INPROGRESS);
    ASSERT_EQ(swy_request_wait(worker_, r), SWY_OK);
    swy_request_free(r);
    EXPECT_EQ(c.calls, 1);
    EXPECT_EQ(c.seen, &c);
    receive(in, sizeof(in));

    // recv_info without its bit is not written when the receive completes at once.
    ASSERT_EQ(swy_tag_send_nb(ep_, out, sizeof(out), kTag, nullptr, &r), SWY_OK);
    swy_message_h m = nullptr;
    for (int i = 0; i < 1000 && swy_tag_probe_nb(worker_, kTag, kAll, 0, nullptr, &m) != SWY_OK;
         ++i)
        swy_worker_progress(worker_);
    swy_tag_recv_info_t info{};
    info.length = 12345;
    swy_request_params_t rp{};
    rp.recv_info = &info;
    ASSERT_EQ(swy_tag_recv_nb(worker_, in, sizeof(in), kTag, kAll, &rp, &r), SWY_OK);
    EXPECT_EQ(info.length, 12345u);
    ASSERT_EQ(swy_tag_send_nb(ep_, out, sizeof(out), kTag, nullptr, &r), SWY_OK);
    for (int i = 0; i < 1000 && swy_tag_probe_nb(worker_, kTag, kAll, 0, nullptr, &m) != SWY_OK;
         ++i)
        swy_worker_progress(worker_);
    rp.field_mask = SWY_REQ_PARAM_FIELD_RECV_INFO;
    ASSERT_EQ(swy_tag_recv_nb(worker_, in, sizeof(in), kTag, kAll, &rp, &r), SWY_OK);
    EXPECT_EQ(info.length, sizeof(out));
    EXPECT_EQ(info.sender_tag, kTag);
}

TEST_F(FieldMask, AttrQueriesFillOnlyWhatIsAskedFor) {
    // Worker: no bits, nothing filled; unknown bits refused.
    swy_worker_attr_t wa;
    std::memset(&wa, 0xab, sizeof(wa));
    wa.field_mask = 0;
    ASSERT_EQ(swy_worker_query(worker_, &wa), SWY_OK);
    EXPECT_EQ(wa.pio_endpoints_max, 0xababababu);
    EXPECT_EQ(wa.pio_window_free, 0xababababu);
    wa.field_mask = SWY_WORKER_ATTR_FIELD_PIO;
    ASSERT_EQ(swy_worker_query(worker_, &wa), SWY_OK);
    EXPECT_NE(wa.pio_endpoints_max, 0xababababu);
    EXPECT_NE(wa.pio_window_free, 0xababababu);
    wa.field_mask = SWY_WORKER_ATTR_FIELD_PIO | kUnknownBit;
    expect_refused("swy_worker_attr_t", [&] { return swy_worker_query(worker_, &wa); });

    // Endpoint: each group alone.
    swy_ep_attr_t ea;
    std::memset(&ea, 0xab, sizeof(ea));
    ea.field_mask = 0;
    ASSERT_EQ(swy_ep_query(ep_, &ea), SWY_OK);
    EXPECT_EQ(ea.connected, static_cast<int>(0xabababab));
    ea.field_mask = SWY_EP_ATTR_FIELD_LANE;
    ASSERT_EQ(swy_ep_query(ep_, &ea), SWY_OK);
    EXPECT_EQ(ea.connected, 1);
    EXPECT_STREQ(ea.transport, "self");
    EXPECT_EQ(ea.pio_dm_size, size_t{0xabababababababab});  // PIO detail not asked for
    ea.field_mask = SWY_EP_ATTR_FIELD_PIO_DETAIL;
    ASSERT_EQ(swy_ep_query(ep_, &ea), SWY_OK);
    EXPECT_EQ(ea.pio_dm_size, 0u);  // self holds no device memory
    EXPECT_NE(ea.pio_window, nullptr);
    ea.field_mask = kUnknownBit;
    expect_refused("swy_ep_attr_t", [&] { return swy_ep_query(ep_, &ea); });
}

/// Listener params and attrs over tcp on the loopback.
TEST(FieldMaskListener, UnknownBitsRefusedAndAttrFilledOnlyWhenAsked) {
    swy_context_h ctx = swy::test::make_context({{"TLS", "tcp,self"}, {"NET_DEVICES", "lo"}});
    ASSERT_NE(ctx, nullptr);
    swy_worker_h w = nullptr;
    ASSERT_EQ(swy_worker_create(ctx, nullptr, &w), SWY_OK);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    swy_listener_params_t lp{};
    lp.field_mask =
        SWY_LISTENER_PARAM_FIELD_SOCKADDR | SWY_LISTENER_PARAM_FIELD_CONN_HANDLER | kUnknownBit;
    lp.sockaddr = reinterpret_cast<const sockaddr*>(&sa);
    lp.sockaddr_length = sizeof(sa);
    lp.on_connect = [](swy_conn_request_h, void*) {};
    swy_listener_h l = nullptr;
    expect_refused("swy_listener_params_t", [&] { return swy_listener_create(w, &lp, &l); });
    // Without the handler's bit the (required) callback is not read: refused as missing.
    lp.field_mask = SWY_LISTENER_PARAM_FIELD_SOCKADDR;
    swy_status_t s = SWY_OK;
    (void)stderr_of([&] { return swy_listener_create(w, &lp, &l); }, &s);
    EXPECT_EQ(s, SWY_ERR_INVALID_PARAM);
    // Unknown listener flags without the flags' bit are not read.
    lp.field_mask = SWY_LISTENER_PARAM_FIELD_SOCKADDR | SWY_LISTENER_PARAM_FIELD_CONN_HANDLER;
    lp.flags = 1u << 30;
    ASSERT_EQ(swy_listener_create(w, &lp, &l), SWY_OK);

    swy_listener_attr_t la;
    std::memset(&la, 0xab, sizeof(la));
    la.field_mask = 0;
    ASSERT_EQ(swy_listener_query(l, &la), SWY_OK);
    EXPECT_EQ(la.port, 0xabab);
    la.field_mask = SWY_LISTENER_ATTR_FIELD_SOCKADDR;
    ASSERT_EQ(swy_listener_query(l, &la), SWY_OK);
    EXPECT_NE(la.port, 0);
    EXPECT_NE(la.port, 0xabab);
    EXPECT_EQ(la.sockaddr_length, sizeof(sockaddr_in));
    la.field_mask = kUnknownBit;
    expect_refused("swy_listener_attr_t", [&] { return swy_listener_query(l, &la); });

    // A connection request: its attr too fills only what is asked for.
    struct Offered {
        int calls = 0;
        swy_status_t none = SWY_ERR_IO, uid_only = SWY_ERR_IO, unknown = SWY_ERR_IO;
        swy_conn_request_attr_t attr{};
        std::string log;
    } offered;
    swy_listener_destroy(l);
    lp.on_connect = [](swy_conn_request_h req, void* arg) {
        auto* o = static_cast<Offered*>(arg);
        o->calls++;
        std::memset(&o->attr, 0xab, sizeof(o->attr));
        o->attr.field_mask = 0;
        o->none = swy_conn_request_query(req, &o->attr);
        o->attr.field_mask = SWY_CONN_REQUEST_ATTR_FIELD_CLIENT_UID;
        o->uid_only = swy_conn_request_query(req, &o->attr);
        swy_conn_request_attr_t bad{};
        bad.field_mask = kUnknownBit;
        testing::internal::CaptureStderr();
        o->unknown = swy_conn_request_query(req, &bad);
        o->log = testing::internal::GetCapturedStderr();
    };
    lp.arg = &offered;
    lp.flags = 0;
    ASSERT_EQ(swy_listener_create(w, &lp, &l), SWY_OK);
    la.field_mask = SWY_LISTENER_ATTR_FIELD_SOCKADDR;
    ASSERT_EQ(swy_listener_query(l, &la), SWY_OK);
    sa.sin_port = htons(la.port);
    swy_worker_h client = nullptr;
    ASSERT_EQ(swy_worker_create(ctx, nullptr, &client), SWY_OK);
    swy_ep_params_t p{};
    p.field_mask = SWY_EP_PARAM_FIELD_FLAGS | SWY_EP_PARAM_FIELD_SOCKADDR;
    p.flags = SWY_EP_FLAG_SOCKADDR;
    p.sockaddr = reinterpret_cast<const sockaddr*>(&sa);
    p.sockaddr_length = sizeof(sa);
    swy_ep_h ep = nullptr;
    ASSERT_EQ(swy_ep_create(client, &p, &ep), SWY_OK);
    for (int i = 0; i < 2000000 && offered.calls == 0; ++i) {
        swy_worker_progress(client);
        swy_worker_progress(w);
    }
    ASSERT_EQ(offered.calls, 1);
    EXPECT_EQ(offered.none, SWY_OK);
    EXPECT_EQ(offered.uid_only, SWY_OK);
    EXPECT_NE(offered.attr.client_worker_uid, 0xababababababababull);
    EXPECT_EQ(offered.attr.client_sockaddr_length, size_t{0xabababababababab});  // not asked
    EXPECT_EQ(offered.unknown, SWY_ERR_INVALID_PARAM);
    EXPECT_NE(offered.log.find("swy_conn_request_attr_t.field_mask"), std::string::npos)
        << offered.log;
    swy_request_h req = nullptr;
    if (swy_ep_close_nb(ep, SWY_EP_CLOSE_FORCE, &req) == SWY_INPROGRESS) {
        swy_request_wait(client, req);
        swy_request_free(req);
    }
    swy_listener_destroy(l);
    swy_worker_destroy(client);
    swy_worker_destroy(w);
    swy_context_destroy(ctx);
}

}  // namespace

namespace {

/// The one-sided and active-message entry points refuse unknown request bits too.
TEST_F(FieldMask, UnknownRequestBitsAreRefusedByRmaAndAmCalls) {
    swy_request_params_t p{};
    p.field_mask = kUnknownBit;
    unsigned char data[8] = {};
    swy_request_h r = nullptr;
    expect_refused("swy_request_params_t",
                   [&] { return swy_am_send_nb(ep_, 3, nullptr, 0, data, sizeof(data), &p, &r); });
    swy_status_t s = SWY_OK;
    (void)stderr_of([&] { return swy_ep_flush_nb(ep_, &p, &r); }, &s);
    EXPECT_EQ(s, SWY_ERR_INVALID_PARAM);
    (void)stderr_of([&] { return swy_worker_flush_nb(worker_, &p, &r); }, &s);
    EXPECT_EQ(s, SWY_ERR_INVALID_PARAM);
    int not_a_descriptor = 0;
    expect_refused("swy_request_params_t", [&] {
        return swy_am_recv_data_nb(worker_, &not_a_descriptor, data, sizeof(data), &p, &r);
    });
    EXPECT_EQ(r, nullptr);
}

}  // namespace

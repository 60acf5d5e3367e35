// Security issue #12: a well-formed but hostile peer. Each test is an attack that worked on the
// code before the fix (the victim touched memory it was not given, completed a request for the
// wrong peer, or tore down an endpoint it should have kept) and now must not.
//
// The attacker is a real worker in this process (so the victim can connect to it, and its
// frames are well-formed): it forges messages by calling its lane's am_send() directly, with
// headers it makes up. A third process (fork) holds secrets and targets that nobody gave the
// victim.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <switchyard/switchyard.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/address.h"
#include "core/endpoint.h"
#include "core/worker.h"
#include "protocols/wire.h"
#include "test_context.h"
#include "transports/shm/shm_address.h"
#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_iface.h"
#include "transports/tcp/tcp_transport.h"

namespace swy::core {
namespace {

constexpr size_t kSecretSize = 64;
// Globals on purpose: a forked child has them at the same addresses.
char g_secret[kSecretSize] = "parent secret: the victim must never copy this to a peer";
char g_target[kSecretSize] = "parent target: no peer may write here through the victim";

/// One context and worker with its own configuration.
struct Node {
    swy_context_h ctx = nullptr;
    swy_worker_h worker = nullptr;
    Worker* w() const { return reinterpret_cast<Worker*>(worker); }
    ~Node() {
        if (worker != nullptr) swy_worker_destroy(worker);
        if (ctx != nullptr) swy_context_destroy(ctx);
    }
};

std::unique_ptr<Node> make_node(const char* tls, const char* rndv_thresh = "auto",
                                const test::Settings& extra = {}) {
    auto n = std::make_unique<Node>();
    test::Settings settings{
        {"TLS", tls}, {"NET_DEVICES", "lo"}, {"RNDV_THRESH", rndv_thresh}, {"LOG_LEVEL", "error"}};
    settings.insert(settings.end(), extra.begin(), extra.end());
    n->ctx = test::make_context(settings);
    EXPECT_EQ(swy_worker_create(n->ctx, nullptr, &n->worker), SWY_OK);
    return n;
}

std::vector<uint8_t> address_of(const Node& n) {
    void* a = nullptr;
    size_t len = 0;
    EXPECT_EQ(swy_worker_get_address(n.worker, &a, &len), SWY_OK);
    std::vector<uint8_t> v(static_cast<uint8_t*>(a), static_cast<uint8_t*>(a) + len);
    swy_worker_release_address(n.worker, a);
    return v;
}

struct EpError {
    int calls = 0;
    static void cb(void* arg, swy_ep_h, swy_status_t) { ++static_cast<EpError*>(arg)->calls; }
};

swy_ep_h connect(const Node& from, const Node& to, EpError* err = nullptr) {
    std::vector<uint8_t> addr = address_of(to);
    swy_ep_params_t p{};
    p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS | SWY_EP_PARAM_FIELD_ERR_HANDLER;
    p.remote_address = addr.data();
    p.remote_address_length = addr.size();
    if (err != nullptr) {
        p.err_cb = &EpError::cb;
        p.err_arg = err;
    }
    swy_ep_h ep = nullptr;
    EXPECT_EQ(swy_ep_create(from.worker, &p, &ep), SWY_OK);
    return ep;
}

Endpoint* core_ep(swy_ep_h ep) { return reinterpret_cast<Endpoint*>(ep); }

/// Progress every node until @p done or @p seconds passed; returns done().
bool progress_until(std::initializer_list<const Node*> nodes, const std::function<bool()>& done,
                    double seconds = 10) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
        for (const Node* n : nodes)
            swy_worker_progress(n->worker);
        if (done()) return true;
    }
    return done();
}

void progress_for(std::initializer_list<const Node*> nodes, double seconds) {
    progress_until(
        nodes, [] { return false; }, seconds);
}

/// Send a forged control message on the attacker's lane to the victim.
void forge(swy_ep_h attacker_ep, proto::AmIdValue id, const void* hdr, size_t len) {
    tl::Endpoint* lane = core_ep(attacker_ep)->lane();
    ASSERT_NE(lane, nullptr);
    ASSERT_EQ(lane->am_send(id, hdr, len, nullptr, 0), Status::kOk);
}

/// A child process that overwrote g_secret and g_target with its own words and waits; it exits
/// 0 if its g_target is still its own when told to stop, 1 if someone wrote into it.
class ThirdProcess {
public:
    static constexpr char kChildSecret[] = "child secret: never readable through the victim";
    static constexpr char kChildTarget[] = "child target: never writable through the victim";
    ThirdProcess() {
        int go[2];
        EXPECT_EQ(pipe(go), 0);
        pid_ = fork();
        if (pid_ == 0) {
            std::memset(g_secret, 0, kSecretSize);
            std::memcpy(g_secret, kChildSecret, sizeof(kChildSecret));
            std::memset(g_target, 0, kSecretSize);
            std::memcpy(g_target, kChildTarget, sizeof(kChildTarget));
            close(go[1]);
            char c;
            (void)!read(go[0], &c, 1);  // returns when the parent closes its end
            _exit(std::memcmp(g_target, kChildTarget, sizeof(kChildTarget)) == 0 ? 0 : 1);
        }
        close(go[0]);
        stop_fd_ = go[1];
        usleep(20000);  // let the child write its words
    }
    pid_t pid() const { return pid_; }
    /// Stop the child; true if its target was never written.
    bool target_intact() {
        close(stop_fd_);
        int status = 0;
        waitpid(pid_, &status, 0);
        return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }

private:
    pid_t pid_ = -1;
    int stop_fd_ = -1;
};

bool contains(const std::vector<uint8_t>& hay, const void* needle, size_t len) {
    const auto* n = static_cast<const uint8_t*>(needle);
    return std::search(hay.begin(), hay.end(), n, n + len) != hay.end();
}

// ------------------------------------------------------------------------------------------
// 1. A forged RTS must not make the victim read memory it was not given.
// ------------------------------------------------------------------------------------------

void forged_rts_reads_nothing(pid_t pid_on_wire, const char* secret_seen_by_owner) {
    // CMA enabled, as by default: what stops the attack must be the lane, not the setting.
    auto victim = make_node("tcp,cma");
    auto attacker = make_node("tcp");
    swy_ep_h to_victim = connect(*attacker, *victim);
    std::vector<uint8_t> buffer(kSecretSize, 0);
    swy_request_h recv = nullptr;
    ASSERT_EQ(
        swy_tag_recv_nb(victim->worker, buffer.data(), buffer.size(), 0x5EC, ~0ull, nullptr, &recv),
        SWY_INPROGRESS);
    for (auto scheme : {proto::RndvScheme::kGet, proto::RndvScheme::kPut}) {
        proto::RtsHeader rts{};
        rts.tag = 0x5EC;
        rts.sender_request = 0x100000001ull;
        rts.total_length = kSecretSize;
        rts.address = reinterpret_cast<uint64_t>(g_secret);
        rts.reserved0 = pid_on_wire;  // what used to be trusted as "the sender's pid"
        rts.scheme = static_cast<uint32_t>(scheme);
        forge(to_victim, proto::kAmRndvRts, &rts, sizeof(rts));
    }
    progress_for({victim.get(), attacker.get()}, 0.5);
    EXPECT_FALSE(contains(buffer, secret_seen_by_owner, 16))
        << "the victim copied another process's memory into its buffer";
    EXPECT_NE(swy_request_test(recv), SWY_OK) << "a receive completed with forged data";
    swy_request_cancel(victim->worker, recv);
    swy_request_free(recv);
}

TEST(HostilePeer, ForgedRtsOverTcpCannotReadTheVictimsOwnMemory) {
    forged_rts_reads_nothing(getpid(), g_secret);
}

TEST(HostilePeer, ForgedRtsOverTcpCannotReadAThirdProcess) {
    ThirdProcess third;
    forged_rts_reads_nothing(third.pid(), ThirdProcess::kChildSecret);
    EXPECT_TRUE(third.target_intact());
}

// ------------------------------------------------------------------------------------------
// 2. A forged RTR (PUT) must not make the victim write anywhere but its own peer's memory.
// ------------------------------------------------------------------------------------------

void forged_rtr_writes_nothing(pid_t pid_on_wire) {
    auto victim = make_node("tcp,cma", "1K");
    auto attacker = make_node("tcp");
    swy_ep_h to_attacker = connect(*victim, *attacker);
    std::vector<uint8_t> payload(64 << 10, 0xE7);
    const std::string before(g_target, kSecretSize);
    swy_request_h send = nullptr;
    ASSERT_EQ(swy_tag_send_nb(to_attacker, payload.data(), payload.size(), 0x77, nullptr, &send),
              SWY_INPROGRESS);
    // The attacker learns the send's id and lane from the RTS the victim sent it.
    UnexpectedDesc* rts = nullptr;
    swy_tag_recv_info_t info{};
    ASSERT_TRUE(progress_until({victim.get(), attacker.get()}, [&] {
        return attacker->w()->probe(0x77, ~0ull, true, &info, &rts) == Status::kOk;
    }));
    ASSERT_TRUE(rts->rndv);
    proto::RtrHeader rtr{};
    rtr.sender_request = rts->rts.sender_request;
    rtr.receive_request = 0x4242;
    rtr.address = reinterpret_cast<uint64_t>(g_target);
    rtr.length = kSecretSize;
    rtr.reserved0 = pid_on_wire;
    rtr.scheme = static_cast<uint32_t>(proto::RndvScheme::kPut);
    // Over the very connection the RTS came on: the right peer, the wrong memory.
    tl::Endpoint* reply =
        attacker->w()->interface(rts->source.iface)->reply_endpoint(rts->source.sender);
    ASSERT_NE(reply, nullptr);
    ASSERT_EQ(reply->am_send(proto::kAmRndvRtr, &rtr, sizeof(rtr), nullptr, 0), Status::kOk);
    ASSERT_TRUE(progress_until({victim.get(), attacker.get()},
                               [&] { return swy_request_test(send) != SWY_INPROGRESS; }));
    EXPECT_NE(swy_request_test(send), SWY_OK) << "a put into unverified memory reported success";
    EXPECT_EQ(std::string(g_target, kSecretSize), before) << "the victim wrote into itself";
    swy_request_free(send);
    delete rts;
}

TEST(HostilePeer, ForgedPutRtrOverTcpCannotWriteIntoTheVictim) {
    forged_rtr_writes_nothing(getpid());
}

TEST(HostilePeer, ForgedPutRtrOverTcpCannotWriteIntoAThirdProcess) {
    ThirdProcess third;
    forged_rtr_writes_nothing(third.pid());
    EXPECT_TRUE(third.target_intact()) << "the victim wrote into a third process";
}

// ------------------------------------------------------------------------------------------
// 3. Control messages answer only to the lane of their own request's peer.
// ------------------------------------------------------------------------------------------

TEST(HostilePeer, ForgedAtsFromAnotherPeerCannotCompleteASendToAShmPeer) {
    auto victim = make_node("shm,cma,tcp", "1K");
    auto receiver = make_node("shm,cma,tcp");
    auto attacker = make_node("tcp");
    swy_ep_h to_receiver = connect(*victim, *receiver);
    swy_ep_h attacker_ep = connect(*attacker, *victim);
    ASSERT_STREQ(core_ep(to_receiver)->lane_attr().transport, "shm");
    std::vector<uint8_t> payload(1 << 20);
    for (size_t i = 0; i < payload.size(); ++i)
        payload[i] = static_cast<uint8_t>(i * 7 + 3);
    swy_request_h send = nullptr;
    ASSERT_EQ(swy_tag_send_nb(to_receiver, payload.data(), payload.size(), 0xA75, nullptr, &send),
              SWY_INPROGRESS);
    progress_for({victim.get()}, 0.05);
    const uint64_t exact = reinterpret_cast<Request*>(send)->wire_id();
    const uint64_t before = victim->w()->rejected_controls();
    // Guessed ids (generation << 32 | index, as ids used to be), then the exact one.
    for (uint64_t g = 0; g < 8; ++g) {
        for (uint64_t index = 0; index < 64; ++index) {
            proto::AckHeader ats{g << 32 | index, 0, 0};
            forge(attacker_ep, proto::kAmRndvAts, &ats, sizeof(ats));
        }
    }
    proto::AckHeader ats{exact, 0, 0};
    forge(attacker_ep, proto::kAmRndvAts, &ats, sizeof(ats));
    forge(attacker_ep, proto::kAmSyncAck, &ats, sizeof(ats));
    progress_for({victim.get(), attacker.get()}, 0.3);
    EXPECT_EQ(swy_request_test(send), SWY_INPROGRESS) << "a forged ATS completed the send";
    EXPECT_EQ(victim->w()->rejected_controls() - before, 514u) << "every forgery is counted";

    // The real receiver still gets every byte, and only then does the send complete.
    std::vector<uint8_t> buffer(payload.size(), 0);
    swy_request_h recv = nullptr;
    swy_status_t rs = swy_tag_recv_nb(receiver->worker, buffer.data(), buffer.size(), 0xA75, ~0ull,
                                      nullptr, &recv);
    ASSERT_TRUE(rs == SWY_INPROGRESS || rs == SWY_OK);
    ASSERT_TRUE(progress_until({victim.get(), receiver.get()}, [&] {
        return swy_request_test(send) != SWY_INPROGRESS &&
               (recv == nullptr || swy_request_test(recv) != SWY_INPROGRESS);
    }));
    EXPECT_EQ(swy_request_test(send), SWY_OK);
    if (recv != nullptr) {
        EXPECT_EQ(swy_request_test(recv), SWY_OK);
    }
    EXPECT_EQ(buffer, payload);
    swy_request_free(send);
    if (recv != nullptr) swy_request_free(recv);
}

TEST(HostilePeer, RequestIdsAreNotACounter) {
    auto node = make_node("self");
    std::vector<uint64_t> generations;
    for (int i = 0; i < 64; ++i) {
        Request* r = node->w()->pool().get(node->w());
        generations.push_back(r->wire_id() >> 32);
        node->w()->pool().put(r);
    }
    int sequential = 0;
    for (size_t i = 1; i < generations.size(); ++i) {
        sequential += generations[i] == generations[i - 1] + 1 || generations[i] <= 64;
    }
    EXPECT_LE(sequential, 2) << "request generations look predictable";
}

// ------------------------------------------------------------------------------------------
// 4. A peer's claims about its identity reach nothing beyond its own connection.
// ------------------------------------------------------------------------------------------

struct NullSink final : tl::AmSink {
    void on_am(tl::AmId, tl::AmSource, const uint8_t*, size_t) override {}
    void on_remote_failure(uint16_t, uint64_t, Status) override {}
};

TEST(HostilePeer, ATcpHelloWithAShmPeersUidThenAResetKeepsTheShmEndpoint) {
    auto victim = make_node("shm,cma,tcp");
    auto friend_ = make_node("shm,cma,tcp");
    EpError err;
    swy_ep_h to_friend = connect(*victim, *friend_, &err);
    ASSERT_STREQ(core_ep(to_friend)->lane_attr().transport, "shm");

    // The attacker says hello with the friend's uid, then drops the connection.
    WorkerAddress va;
    std::string why;
    std::vector<uint8_t> raw = address_of(*victim);
    ASSERT_EQ(decode_address(raw.data(), raw.size(), &va, &why), Status::kOk) << why;
    const AddressSection* tcp = va.find(tl::tcp::kAddressSection);
    ASSERT_NE(tcp, nullptr);
    tl::tcp::TcpInterface* victim_tcp = nullptr;
    for (uint16_t i = 0; victim->w()->interface(i) != nullptr; ++i) {
        if (std::strcmp(victim->w()->interface(i)->name(), "tcp") == 0) {
            victim_tcp = static_cast<tl::tcp::TcpInterface*>(victim->w()->interface(i));
        }
    }
    ASSERT_NE(victim_tcp, nullptr);
    {
        NullSink sink;
        tl::tcp::TcpConfig config;
        config.devices = {"lo"};
        // Declared before the interface, so the interface goes first: its socket closes
        // without the goodbye an orderly disconnect sends, as when the process is killed.
        std::unique_ptr<tl::Endpoint> lane;
        std::unique_ptr<tl::tcp::TcpInterface> spoofer;
        ASSERT_EQ(
            tl::tcp::TcpInterface::open(config, friend_->w()->uid(), 0, &sink, &spoofer, &why),
            Status::kOk)
            << why;
        ASSERT_EQ(spoofer->connect(va.worker_uid, tcp->bytes.data(), tcp->bytes.size(), false,
                                   &lane, &why),
                  Status::kOk)
            << why;
        uint8_t byte = 0;
        lane->am_send(proto::kAmEagerOnly, &byte, 1, nullptr, 0);  // a malformed eager: dropped
        const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
        while (std::chrono::steady_clock::now() < end) {
            spoofer->progress();
            swy_worker_progress(victim->worker);
        }
        ASSERT_EQ(victim_tcp->open_connections(), 1u) << "the spoofed hello was not taken";
    }  // the spoofer's socket closes without a goodbye: a failure of that connection
    ASSERT_TRUE(progress_until({victim.get(), friend_.get()},
                               [&] { return victim_tcp->open_connections() == 0; }));
    progress_for({victim.get(), friend_.get()}, 0.2);
    EXPECT_EQ(err.calls, 0) << "the shm endpoint failed because of a tcp peer's claim";

    std::vector<uint8_t> payload(100000, 0x3D);
    std::vector<uint8_t> buffer(payload.size(), 0);
    swy_request_h send = nullptr;
    swy_request_h recv = nullptr;
    swy_status_t ss = swy_tag_send_nb(to_friend, payload.data(), payload.size(), 9, nullptr, &send);
    swy_status_t rs =
        swy_tag_recv_nb(friend_->worker, buffer.data(), buffer.size(), 9, ~0ull, nullptr, &recv);
    ASSERT_TRUE(ss == SWY_OK || ss == SWY_INPROGRESS) << swy_status_string(ss);
    ASSERT_TRUE(rs == SWY_OK || rs == SWY_INPROGRESS);
    ASSERT_TRUE(progress_until({victim.get(), friend_.get()}, [&] {
        return (send == nullptr || swy_request_test(send) != SWY_INPROGRESS) &&
               (recv == nullptr || swy_request_test(recv) != SWY_INPROGRESS);
    }));
    if (send != nullptr) {
        EXPECT_EQ(swy_request_test(send), SWY_OK);
        swy_request_free(send);
    }
    if (recv != nullptr) {
        EXPECT_EQ(swy_request_test(recv), SWY_OK);
        swy_request_free(recv);
    }
    EXPECT_EQ(buffer, payload);
}

// ------------------------------------------------------------------------------------------
// 5. What a peer can make us hold is what it sent, and at most the caps.
// ------------------------------------------------------------------------------------------

size_t virtual_bytes() {
    std::ifstream statm("/proc/self/statm");
    size_t pages = 0;
    statm >> pages;
    return pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

TEST(HostilePeer, TenThousandFirstFragmentsAnnouncing64MiBCostOnlyWhatTheyCarry) {
    auto victim = make_node("tcp");
    auto attacker = make_node("tcp");
    swy_ep_h to_victim = connect(*attacker, *victim);
    const size_t vm_before = virtual_bytes();
    constexpr int kFirsts = 10000;
    struct {
        proto::EagerFirstHeader h;
        uint8_t payload[8];
    } frame{};
    int sent = 0;
    while (sent < kFirsts) {
        frame.h.tag = 0xF00D;
        frame.h.total_length = 64u << 20;
        frame.h.message_id = static_cast<uint32_t>(sent + 1);
        tl::Endpoint* lane = core_ep(to_victim)->lane();
        Status s = lane->am_send(proto::kAmEagerFirst, &frame, sizeof(frame), nullptr, 0);
        if (s == Status::kOk) {
            ++sent;
        } else {
            ASSERT_EQ(s, Status::kNoResource);
            swy_worker_progress(attacker->worker);
            swy_worker_progress(victim->worker);
        }
    }
    progress_for({victim.get(), attacker.get()}, 1.0);
    EXPECT_GE(victim->w()->unexpected_bytes(), size_t{kFirsts} * 8) << "the fragments arrived";
    EXPECT_LE(victim->w()->unexpected_bytes(), size_t{kFirsts} * 64)
        << "buffers were sized by what the headers announced";
    EXPECT_LT(virtual_bytes() - std::min(virtual_bytes(), vm_before), size_t{256} << 20)
        << "10 000 announced 64 MiB messages reserved address space";
}

TEST(HostilePeer, OnePeerCannotTakeMoreThanItsShareOfUnexpectedMemory) {
    auto victim = make_node("tcp", "auto", {{"UNEXPECTED_PEER_MAX", "64K"}});
    auto flooder = make_node("tcp");
    auto polite = make_node("tcp");
    swy_ep_h flood_ep = connect(*flooder, *victim);
    swy_ep_h polite_ep = connect(*polite, *victim);
    constexpr int kMessages = 100;
    std::vector<uint8_t> kb(1024);
    std::vector<swy_request_h> sends;
    for (int i = 0; i < kMessages; ++i) {
        std::fill(kb.begin(), kb.end(), static_cast<uint8_t>(i));
        swy_request_h s = nullptr;
        swy_status_t st = swy_tag_send_nb(flood_ep, kb.data(), kb.size(), 0x100 + i, nullptr, &s);
        ASSERT_TRUE(st == SWY_OK || st == SWY_INPROGRESS);
        if (s != nullptr) sends.push_back(s);
    }
    std::vector<uint8_t> polite_msg(1024, 0x5A);
    swy_request_h ps = nullptr;
    swy_status_t pst =
        swy_tag_send_nb(polite_ep, polite_msg.data(), polite_msg.size(), 0x999, nullptr, &ps);
    ASSERT_TRUE(pst == SWY_OK || pst == SWY_INPROGRESS);
    progress_until({victim.get(), flooder.get(), polite.get()}, [&] {
        for (swy_request_h s : sends) {
            if (swy_request_test(s) == SWY_INPROGRESS) return false;
        }
        return ps == nullptr || swy_request_test(ps) != SWY_INPROGRESS;
    });
    progress_for({victim.get(), flooder.get(), polite.get()}, 0.2);
    EXPECT_LE(victim->w()->unexpected_bytes(), size_t{64 << 10} + polite_msg.size());
    EXPECT_GT(victim->w()->unexpected_lost(), 0u);
    // In send order: the kept ones arrive whole, the dropped ones fail with NO_RESOURCE, and
    // none is silently skipped or mixed up.
    int kept = 0, dropped = 0;
    for (int i = 0; i < kMessages; ++i) {
        std::vector<uint8_t> buf(1024, 0);
        swy_request_h r = nullptr;
        swy_status_t st =
            swy_tag_recv_nb(victim->worker, buf.data(), buf.size(), 0x100 + i, ~0ull, nullptr, &r);
        if (r != nullptr) {
            progress_until({victim.get()}, [&] { return swy_request_test(r) != SWY_INPROGRESS; });
            st = swy_request_test(r);
            swy_request_free(r);
        }
        if (st == SWY_OK) {
            ++kept;
            EXPECT_EQ(buf, std::vector<uint8_t>(1024, static_cast<uint8_t>(i)));
            EXPECT_EQ(dropped, 0) << "a message after a dropped one was kept: order broken";
        } else {
            EXPECT_EQ(st, SWY_ERR_NO_RESOURCE);
            ++dropped;
        }
    }
    EXPECT_GT(kept, 0);
    EXPECT_GT(dropped, 0);
    // The polite peer's message, unexpected too, was not charged to the flooder.
    std::vector<uint8_t> pbuf(1024, 0);
    swy_request_h pr = nullptr;
    swy_status_t prs =
        swy_tag_recv_nb(victim->worker, pbuf.data(), pbuf.size(), 0x999, ~0ull, nullptr, &pr);
    EXPECT_EQ(prs, SWY_OK);
    EXPECT_EQ(pbuf, polite_msg);
    for (swy_request_h s : sends)
        swy_request_free(s);
    if (ps != nullptr) swy_request_free(ps);
}

TEST(HostilePeer, NoLocalUserCanSeeAWorkersUid) {
    auto node = make_node("shm,cma");
    char hex[32];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(node->w()->uid()));
    std::ifstream unix_sockets("/proc/net/unix");
    std::stringstream all;
    all << unix_sockets.rdbuf();
    EXPECT_EQ(all.str().find(hex), std::string::npos)
        << "/proc/net/unix (readable by every local user) names the worker's uid";
}

TEST(HostilePeer, AnotherUserCannotMapTheSegmentOrWakeTheWorker) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to become another user";
    auto node = make_node("shm,cma");
    WorkerAddress wa;
    std::string why;
    std::vector<uint8_t> raw = address_of(*node);
    ASSERT_EQ(decode_address(raw.data(), raw.size(), &wa, &why), Status::kOk) << why;
    const AddressSection* shm = wa.find(tl::shm::kAddressSection);
    ASSERT_NE(shm, nullptr);
    tl::shm::ShmAddress a{};
    ASSERT_TRUE(tl::shm::decode_shm_address(shm->bytes.data(), shm->bytes.size(), &a));
    pid_t child = fork();
    if (child == 0) {
        // "nobody": what an unprivileged local user has.
        if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
        char path[64];
        std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", a.pid, a.wake_fd);
        const bool wake_refused = open(path, O_RDWR | O_NONBLOCK) < 0;
        std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", a.pid, a.memfd);
        const bool segment_refused = open(path, O_RDWR) < 0;
        _exit(wake_refused && segment_refused ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "another user opened the wake-up pipe or the segment";
}

}  // namespace
}  // namespace swy::core

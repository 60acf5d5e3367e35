// Verbs transport: RC queue pairs on one RDMA device port (InfiniBand or RoCE, e.g. rxe).
//
// Resources, per interface (= per worker): a protection domain, a completion channel (its fd
// sits in the interface's epoll set, which is the interface's event_fd), a pool of registered
// send bounce buffers, and a registered array of credit words. Connections come in groups of
// up to kGroupConnections: each group has one completion queue (sends and receives) and one
// shared receive queue, sized when the group is made for what its members can have
// outstanding (every send-queue slot, which a QP error flushes as completions, plus every
// receive buffer they may be granted): the CQ cannot overflow, however busy the connections,
// and the number of connections is bounded by memory, not by one queue's size. Receive
// buffers are registered in blocks as grants need them. Per connection: one RC QP, serving
// both directions of the pair where the two workers' endpoints join (below).
//
// Wire-up (docs/verbs.md): the worker address carries the address of a small TCP listener. A
// connecting worker creates its QP, opens a TCP connection and sends a CmMessage (QPN, PSN,
// GID, LID, MTU, credits, where to write credit updates); the peer, from its progress, creates
// its QP, moves it to RTS and answers; the connector moves its QP to RTS. Until then its sends
// return kNoResource (the endpoint's pending queue retries them). The TCP connection stays
// open: a goodbye on it is an orderly close, EOF without one is a dead peer.
//
// One connection per pair: a worker that connects to a peer which already connected to it
// asks, in its request, to join that connection (join_qpn); the peer's listener, which is the
// peer itself, agrees if its QP of that number talks to ours, and no second QP is made. Both
// endpoints then own the connection; it closes once both said goodbye. Two workers that
// connect to each other at the same instant (before either request arrived): the one with the
// lower uid answers the other's request with a redirect to its own connection, and the other's
// endpoint moves onto that connection once it arrives (verbs_crossing.cpp): one QP again.
//
// Sends: every message is one SEND with immediate (AM id + credit return, verbs_wire.h);
// header+payload up to the QP's inline limit go inline (the CPU writes them into the WQE:
// PIO); an endpoint holding a device-memory slot (DmCells) stores larger ones, up to a cell,
// into device memory and sends from there; the rest are copied into a bounce buffer. Flow
// control: CreditWindow (no RNR). A connection starts with kInitialCredits receive buffers
// and its receiver lends it more (doubling, up to SWY_VERBS_RX_CREDITS) each time the sender
// went through its whole window: idle connections cost few buffers, busy ones get many.
//
// Threading: not thread-safe; the worker serialises calls.
#pragma once

#include <infiniband/verbs.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/conn_table.h"
#include "common/unique_fd.h"
#include "transports/transport.h"
#include "transports/verbs/credit_window.h"
#include "transports/verbs/dm_cells.h"
#include "transports/verbs/reg_cache.h"
#include "transports/verbs/verbs_device.h"
#include "transports/verbs/verbs_open.h"
#include "transports/verbs/verbs_wire.h"
#include "transports/zcopy.h"

namespace swy::tl::verbs {

class VerbsInterface;
struct RdmaOp;

/// A lane on one RC connection. The endpoint returned by connect() owns the connection
/// (disconnect() says goodbye and closes it); reply endpoints only borrow it. Its zero-copy
/// operations (ZcopyLane) are RDMA READ and WRITE of registered memory.
class VerbsEndpoint final : public Endpoint, public ZcopyLane {
public:
    VerbsEndpoint(VerbsInterface* iface, uint16_t conn, uint32_t generation, uint64_t remote_uid,
                  bool owner, const LaneAttr& attr);
    ~VerbsEndpoint() override;
    const LaneAttr& attr() const override { return attr_; }
    /// Inline SEND when header+payload fit attr().pio_max_message, else through a bounce
    /// buffer. kNoResource: no credit, send-queue slot or bounce buffer now, or the connection
    /// is still being set up; kConnectionReset after a failure or disconnect.
    Status am_send(AmId id, const void* hdr, size_t hdr_len, const void* payload,
                   size_t length) override;
    Status am_send_packed(AmId id, const void* hdr, size_t hdr_len, PackFn pack, void* arg,
                          size_t length) override;
    uint64_t remote_uid() const override { return remote_uid_; }
    uint64_t peer_key() const override { return connection_key(conn_, generation_); }
    void disconnect() override;
    ZcopyLane* zcopy() override { return this; }

    // ---- ZcopyLane: RDMA ----
    uint32_t caps() const override { return attr_.caps; }
    /// The whole range is posted at once (fragmented into WRs by the interface).
    size_t max_zcopy() const override { return SIZE_MAX; }
    /// Through the interface's registration cache (reg_cache.h): the registration returned
    /// holds a use of a validated cached entry, or is a per-transfer one; destroying it drops
    /// the use. Its address() and length() are the requested range.
    Status register_memory(const void* address, size_t length, unsigned access,
                           std::unique_ptr<MemoryRegistration>* out, std::string* why) override;
    /// ibv_reg_dmabuf_mr(pd, offset, length, iova, fd, access): kUnsupported when the device
    /// has no dma-buf MRs (no cap::kDeviceMemory in attr().caps), kIoError / kNoMemory when the
    /// registration fails. @p fd stays the caller's.
    Status register_dmabuf(int fd, uint64_t offset, size_t length, uint64_t iova, unsigned access,
                           std::unique_ptr<MemoryRegistration>* out, std::string* why) override;
    /// RDMA READ (remote.key: the peer's rkey). kInProgress: completion.done runs once every
    /// chunk completed; kConnectionReset: the connection failed; kInvalidParam: @p local is
    /// not inside @p local_reg (or no registration given).
    Status get_zcopy(void* local, const MemoryRegistration* local_reg, RemoteKey remote,
                     size_t length, const ZcopyCompletion& completion) override;
    /// RDMA WRITE, the mirror of get_zcopy. completion.posted runs once the last WR is in the
    /// send queue (before this returns if the queue had room for every chunk, else from
    /// progress once the backlog drained): a SEND made on this endpoint after that is
    /// executed by the peer after the WRITE's data is placed (an RC responder executes
    /// requests in order).
    Status put_zcopy(const void* local, const MemoryRegistration* local_reg, RemoteKey remote,
                     size_t length, const ZcopyCompletion& completion) override;

private:
    friend class VerbsInterface;
    VerbsInterface* iface_;  // null once the interface is gone
    uint16_t conn_;
    uint32_t generation_;
    uint64_t remote_uid_;
    bool owner_;
    bool disconnected_ = false;
    LaneAttr attr_;
};

class VerbsInterface final : public Interface {
public:
    /// Between handshakes the sockets only carry news that can wait a scheduler tick (a new
    /// peer, a dead peer's EOF), and on rxe a system call costs as much as the message: so
    /// every kCmPollEvery progress calls (a power of two) the coarse clock is read, and the
    /// sockets are polled once kCmPollIntervalNs passed since the last look.
    static constexpr uint32_t kCmPollEvery = 64;
    static constexpr uint64_t kCmPollIntervalNs = 2'000'000;

    /// See verbs::open() in verbs_open.h.
    static Status open(const VerbsConfig& config, uint64_t worker_uid, uint16_t iface_index,
                       AmSink* sink, std::unique_ptr<Interface>* out, std::string* why);
    ~VerbsInterface() override;

    const char* name() const override { return "verbs"; }
    /// Poll the CQ (deliver receives, retire sends, run RDMA callbacks), the handshake
    /// sockets (every call while a handshake runs, else about every kCmPollIntervalNs: a dead
    /// peer's EOF is seen within a few milliseconds of progress), then report failures.
    unsigned progress() override;
    std::vector<uint8_t> address() const override;
    /// Creates the QP, connects to the peer's handshake listener (blocking for at most
    /// connect_timeout_ms) and sends the request; the endpoint is usable once the answer came.
    /// Errors: kMalformed (bad section), kUnreachable (listener did not answer), kNoResource
    /// (connection table or receive queue full), kIoError (a verbs call failed).
    Status connect(uint64_t remote_uid, const uint8_t* section, size_t length, bool want_pio,
                   std::unique_ptr<Endpoint>* out, std::string* why) override;
    /// connect() with the device-memory policy in full (verbs::connect in verbs_open.h):
    /// @p want_pio asks for a device-memory slot, @p pio_first may take a reserved one.
    /// Without a slot the endpoint still sends inline; its attributes say which it got.
    Status connect_lane(uint64_t remote_uid, const uint8_t* section, size_t length, bool want_pio,
                        bool pio_first, std::unique_ptr<Endpoint>* out, std::string* why);
    Endpoint* reply_endpoint(uint16_t sender) override;
    /// Handshakes from now on carry proofs under @p key and refuse peers without it.
    void set_auth_key(const common::AuthKey& key) { config_.auth_key = key; }
    uint64_t sender_uid(uint16_t sender) const override;
    /// The connection (slot and generation); 0 for unknown slots.
    uint64_t sender_key(uint16_t sender) const override;
    int event_fd() const override { return epoll_fd_.get(); }
    bool arm() override;
    void disarm() override;

    const PortInfo& port_info() const { return port_; }
    /// The device-memory PIO window (null when the device has no device memory, as rxe, and
    /// SWY_VERBS_DM_EMULATE is off); dm_reason() says why not.
    const DmPool* dm_pool() const { return dm_pool_.get(); }
    const std::string& dm_reason() const { return dm_reason_; }
    /// Messages sent so far, by path (verbs::send_stats).
    const SendStats& send_stats() const { return stats_; }
    /// Connections in any state (tests).
    size_t connection_count() const;
    /// What the connections hold now (verbs::scale_report).
    ScaleReport scale_report() const;

    /// Connections per completion group (one CQ + one SRQ).
    static constexpr uint32_t kGroupConnections = 16;
    /// Receive buffers a new connection is granted (at most SWY_VERBS_RX_CREDITS).
    static constexpr uint32_t kInitialCredits = 8;
    /// Whether registrations are cached (validated by page frames), else per transfer.
    bool reg_cache_active() const { return reg_cache_->active(); }
    /// Why the registration cache is not active ("" when it is).
    const std::string& reg_cache_reason() const { return rcache_reason_; }
    /// Hit/miss/stale counters of the registration cache.
    const RegCacheStats& reg_cache_stats() const { return reg_cache_->stats(); }

private:
    friend class VerbsEndpoint;
    struct Connection;
    struct WrSlot {
        int32_t bounce = -1;
        int32_t dm_cell = -1;  // a device-memory cell this WR reads (Connection::dm)
        RdmaOp* op = nullptr;
    };
    enum class State : uint8_t { kConnecting, kAccepting, kReady, kFailed };
    /// A completion queue and a shared receive queue for up to kGroupConnections connections,
    /// both sized for everything those can have outstanding (verbs_groups.cpp).
    struct Group {
        ibv_cq* cq = nullptr;
        ibv_srq* srq = nullptr;
        uint32_t cq_entries = 0;
        uint32_t srq_capacity = 0;
        uint32_t rx_posted = 0;   // buffers in the SRQ's pool (posted or being handled)
        uint32_t rx_granted = 0;  // of those, granted to its connections (credits + goodbye)
        uint32_t members = 0;     // connections using it (or whose completions may remain)
        uint32_t leaving = 0;     // closed members whose completions may still be in the CQ
    };
    struct RxBlock {
        std::unique_ptr<uint8_t[]> memory;
        ibv_mr* mr = nullptr;
        uint16_t group = 0;
        uint32_t buffers = 0;
    };

    VerbsInterface(const VerbsConfig& config, uint64_t uid, uint16_t index, AmSink* sink);
    Status setup(std::string* why);
    Status listen(std::string* why);

    // Completion groups and receive buffers (verbs_groups.cpp).
    Status join_group(Connection* c, std::string* why);
    void leave_group(Connection* c);
    Status create_group(std::string* why);
    Status grow_receive_pool(Group& g, uint16_t group, uint32_t buffers, std::string* why);
    Status post_receive(uint64_t wr_id);
    uint8_t* receive_buffer(uint64_t wr_id) const;
    Status grant_receives(Connection* c, uint32_t credits, std::string* why);
    void lend_credits(Connection* c);
    unsigned poll_groups();

    // Connections (verbs_conn.cpp).
    Connection* add_connection(uint64_t peer_uid, State state, uint16_t* index, std::string* why);
    Connection* lookup(uint16_t index, uint32_t generation) const;
    Connection* by_qpn(uint32_t qpn) const;
    Connection* join_candidate(uint64_t remote_uid, const uint8_t* gid) const;
    bool accept_join(Connection* c, const CmMessage& m);
    void finish_join(Connection* c, const CmMessage& m);
    void release_join(Connection* c);
    // Crossing connects (verbs_crossing.cpp).
    Connection* wins_crossing(const CmMessage& request) const;
    void answer_with_redirect(Connection* c, Connection* mine, const CmMessage& request);
    Connection* redirect_target(const Connection* c) const;
    Status follow_redirect(Connection* c, const CmMessage& m, std::string* why);
    void attach_redirected();
    bool awaited_by_redirect(const Connection* target) const;
    uint32_t initial_credits() const { return std::min(kInitialCredits, config_.rx_credits); }
    Status create_qp(Connection* c, std::string* why);
    Status qp_to_rts(Connection* c, const CmMessage& peer, std::string* why);
    CmMessage local_half(const Connection* c, CmType type) const;
    void close_connection(Connection* c);
    void fail(Connection* c, Status why, const char* what);
    void report_failures();
    void poll_cm();
    void accept_all();
    void on_cm_readable(Connection* c);
    void disconnect(Connection* c);
    void finish_close(Connection* c);
    void drain_cq();

    // Data path (verbs_progress.cpp).
    Status send(Connection* c, AmId id, const void* hdr, size_t hdr_len, const void* payload,
                size_t length, Endpoint::PackFn pack, void* pack_arg);
    bool reserve_send(Connection* c);
    bool post_send(Connection* c, ibv_send_wr* wr, int32_t bounce, RdmaOp* op,
                   int32_t dm_cell = -1);
    void setup_dm_window();
    Status take_dm_slot(Connection* c, bool want_pio, bool pio_first, std::string* window);
    LaneAttr lane_attr(Connection* c, size_t peer_max_message, uint32_t peer_credits,
                       const std::string& pio_window) const;
    void handle_wc(const ibv_wc& wc);
    void handle_receive(const ibv_wc& wc);
    void retire_sends(Connection* c, uint32_t through, Status status);
    void return_credits(Connection* c);
    Status start_rdma(Connection* c, bool read, const MemoryRegistration& local,
                      size_t local_offset, uint64_t remote_address, uint32_t rkey, size_t length,
                      ZcopyCallback cb, ZcopyCallback posted, void* arg, uint64_t cookie);
    bool post_rdma(Connection* c, RdmaOp* op);
    void progress_rdma_backlog();

    VerbsConfig config_;
    uint64_t uid_;
    uint16_t index_;
    AmSink* sink_;
    PortInfo port_;
    DeviceHandle dev_;  // context + port attributes + chosen GID
    ibv_pd* pd_ = nullptr;
    ibv_comp_channel* channel_ = nullptr;
    std::vector<Group> groups_;
    std::vector<RxBlock> rx_blocks_;  // index: receive wr_id >> 32
    std::unique_ptr<uint8_t[]> bounce_memory_;
    ibv_mr* bounce_mr_ = nullptr;
    std::vector<int32_t> bounce_free_;
    std::unique_ptr<uint64_t[]> credit_words_;  // one per connection slot, written by peers
    ibv_mr* credit_mr_ = nullptr;
    uint32_t max_connections_ = 0;
    uint32_t max_rd_atomic_ = 1;
    uint32_t max_inline_ = 0;
    size_t max_rdma_chunk_ = 1u << 20;

    common::UniqueFd epoll_fd_;
    common::UniqueFd listen_fd_;
    uint8_t listen_ip_[16] = {};
    uint8_t listen_family_ = 4;
    uint16_t listen_port_ = 0;
    common::ConnTable<Connection> conns_;  // index: sender; generations fit a wr_id
    std::unordered_map<uint32_t, uint16_t> qpn_to_conn_;
    uint32_t handshakes_ = 0;  // connections still connecting / accepting
    uint32_t tick_ = 0;
    uint64_t cm_polled_ns_ = 0;  // coarse clock at the last look at the handshake sockets
    std::vector<uint16_t> to_report_;
    std::vector<uint16_t> credit_due_;  // connections owing the peer a credit update
    // Redirected connects waiting for the peer's connection (slot, generation).
    std::vector<std::pair<uint16_t, uint32_t>> redirects_;
    std::vector<RdmaOp*> rdma_backlog_;  // ops with chunks not yet posted (send queue full)
    std::vector<ibv_wc> stash_;          // completions polled by arm()
    bool in_progress_ = false;
    bool quiet_ = false;  // destructor: drain completions without calling the sink
    LaneAttr attr_;
    std::unique_ptr<DmPool> dm_pool_;  // reset before the PD goes: it holds an MR in it
    std::string dm_reason_;            // why there is no pool
    SendStats stats_;
    // Shared with the registrations handed out, so one that outlives the interface (against
    // the rule in zcopy.h) still releases safely.
    std::shared_ptr<RegCache> reg_cache_;
    std::string rcache_reason_;
};

}  // namespace swy::tl::verbs

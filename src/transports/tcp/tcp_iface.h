// TCP transport (inter-node): non-blocking sockets driven by the interface's own epoll set,
// messages framed with a validated 8-byte header (tcp_wire.h).
//
// Connections. connect() returns at once with an endpoint whose connection is connecting:
// non-blocking connect() attempts on the peer's addresses proceed from progress() (EPOLLOUT,
// SO_ERROR), one address after the other, each attempt bounded and all of them bounded by
// TcpConfig::connect_timeout_ns; sends meanwhile queue (up to sndbuf_limit). Once connected
// the two sides run the hello handshake (tcp_wire.h; authenticated when the interface has a
// key, docs/security-tcp.md), and from then on the connection is a "sender" on both sides:
// messages arriving on it carry AmSource{iface, sender}, and reply_endpoint(sender) writes
// on the same socket (TCP is bidirectional, so a reply never needs a second connection).
// One connection per pair of workers (tcp_pairing.cpp): connect() to a worker whose own
// connection to us is up (and carries no endpoint of ours yet) attaches the new endpoint to
// it (kAttach) instead of opening a socket. Two workers that connect to each other at once
// keep the connection of the one with the lower uid: it answers the other's hello with
// kHelloAckHold and, once the other proved the key, with kRedirect, and the other moves its
// endpoint (and the frames it queued, none of which was written yet) onto that connection. A connection stays open until both sides' endpoints
// said goodbye. An attempt that gets no answer is retried in rounds over the peer's
// addresses, with a pause that doubles between rounds, until connect_timeout_ns; a refused
// address is an answer and is not retried.
//
// Failures. Every address failing, or the connect deadline passing (kUnreachable /
// kTimedOut, with a log line listing the addresses tried), EOF without a goodbye,
// ECONNRESET, EPIPE, a keepalive or user timeout, or a frame that fails validation close
// the connection and report on_remote_failure(iface, connection key, ...) exactly once per
// connection, from progress() (never from inside a send). Sends on that connection then return
// kConnectionReset. A connection whose peer fails authentication is closed and logged; it is
// reported only when we made it (an unverified acceptor-side peer has no identity to blame).
//
// Threading: like every transport, not thread-safe; the worker serialises calls.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/auth.h"
#include "common/conn_table.h"
#include "common/unique_fd.h"
#include "transports/tcp/tcp_wire.h"
#include "transports/transport.h"

namespace swy::tl::tcp {

/// Settings of the tcp transport (from SWY_NET_DEVICES, SWY_TCP_SNDBUF_LIMIT, SWY_TCP_KEEPALIVE,
/// SWY_TCP_USER_TIMEOUT, SWY_TCP_CONNECT_TIMEOUT, SWY_TCP_CONNECT_ATTEMPT_TIMEOUT,
/// SWY_TCP_HANDSHAKE_TIMEOUT, SWY_AUTH_KEY).
struct TcpConfig {
    /// Interface names to listen on (e.g. "eth0", "lo"); "all" or empty: every interface that
    /// is up, through one wildcard listening socket.
    std::vector<std::string> devices{"all"};
    /// Bytes one connection may hold queued in user space (beyond what the kernel took) before
    /// sends return kNoResource. A single message is always accepted into an empty queue.
    size_t sndbuf_limit = 4u << 20;
    /// Idle time before keepalive probes; a silent dead peer is reported after about 3x this.
    uint64_t keepalive_ns = 10'000'000'000;
    /// Data waiting to be acknowledged and nothing at all heard from the peer's kernel for
    /// this long: the connection fails with kTimedOut (check_liveness(), from progress). Not
    /// the kernel's TCP_USER_TIMEOUT, which also aborts a peer that answers window probes
    /// but does not read (a slow process: the data would be lost, issue #18).
    uint64_t user_timeout_ns = 30'000'000'000;
    /// With connections open, look at the sockets on every Nth progress call (a power of
    /// two). 1 when tcp is the worker's only network (each look is a system call that
    /// nothing else competes with); more when shm shares the poll loop, whose hot path a
    /// system call per call would dominate.
    uint32_t busy_poll_every = 4;
    /// Total time connecting to one peer may take, over all of its addresses.
    uint64_t connect_timeout_ns = 10'000'000'000;
    /// Longest single connect attempt (a fresh socket restarts the kernel's SYN backoff, so
    /// under packet loss several short attempts beat one long one).
    uint64_t connect_attempt_ns = 2'000'000'000;
    /// Time from TCP connected to the end of the hello handshake before the connection is
    /// closed (kTimedOut): a peer that connects and says nothing holds no slot for ever.
    uint64_t handshake_timeout_ns = 30'000'000'000;
    /// Shared key: when not empty, every connection is authenticated with it (both ways).
    common::AuthKey auth_key;
    /// Costs every lane reports (the worker fills them from the context's cost figures:
    /// tcp_lane_costs(), tcp_costs.h).
    LaneCosts costs;
};

/// The attributes every lane of a tcp interface opened with @p config has (one set per
/// interface). Used by the interface and by swy-info for the table of a lane it does not open.
LaneAttr lane_attr(const TcpConfig& config);

/// SWY_NET_DEVICES checked as TcpInterface::open() would use it, for context creation: kOk for
/// "all", or when an entry names an interface that is up here, or when every entry is
/// another transport's device (@p claimed_by_other); kInvalidParam otherwise, @p why naming
/// the interfaces there are. Entries that are neither are logged (warning) and ignored.
Status check_devices(const std::vector<std::string>& devices,
                     const std::function<bool(const std::string&)>& claimed_by_other,
                     std::string* why);

class TcpInterface;

/// A lane on one connection. The endpoint returned by connect() owns the connection's
/// lifetime (disconnect() closes it in order); the endpoints from reply_endpoint() only borrow
/// it. Must not outlive its interface.
class TcpEndpoint final : public Endpoint {
public:
    TcpEndpoint(TcpInterface* iface, uint16_t conn, uint32_t generation, uint64_t remote_uid,
                bool owner);
    ~TcpEndpoint() override;
    const LaneAttr& attr() const override { return *attr_; }
    /// Writes the frame with one sendmsg straight from the caller's buffers (behind anything
    /// queued); what the kernel does not take of it is queued. Small frames (kCorkMax) sent in
    /// a burst (after another direct send of the same progress pass) are corked instead and
    /// leave together at the next progress() or arm(). kNoResource when a small frame would
    /// take the queue past sndbuf_limit, or a large one finds the kernel still full (it is
    /// then not copied: the caller retries after progress); kConnectionReset after a
    /// failure or disconnect; kInvalidParam above max_message.
    Status am_send(AmId id, const void* hdr, size_t hdr_len, const void* payload,
                   size_t length) override;
    Status am_send_packed(AmId id, const void* hdr, size_t hdr_len, PackFn pack, void* arg,
                          size_t length) override;
    uint64_t remote_uid() const override { return remote_uid_; }
    /// The connection: slot and generation (what TcpInterface::sender_key gives for it).
    uint64_t peer_key() const override { return connection_key(conn_, generation_); }
    /// Owner endpoint: queue a goodbye, then shut the connection down once everything queued
    /// has been written (the peer closes without reporting a failure). Reply endpoints: no-op.
    void disconnect() override;
    /// Data bytes this connection accepted (written to the kernel or queued).
    uint64_t accepted_bytes() const override;
    /// Data bytes the peer's kernel acknowledged (SIOCOUTQ; the last value once closed),
    /// asked only when worth it (TcpInterface::acknowledged, tcp_liveness.cpp).
    uint64_t acknowledged_bytes(uint64_t wanted) override;

private:
    friend class TcpInterface;
    TcpInterface* iface_;  // null once the interface is gone
    uint16_t conn_;
    uint32_t generation_;
    uint64_t remote_uid_;
    bool owner_;
    bool disconnected_ = false;
    /// The interface's attributes, shared (one copy per interface, not per endpoint: the idle
    /// cost of an endpoint) and kept alive for an endpoint that outlives its interface.
    std::shared_ptr<const LaneAttr> attr_;
};

class TcpInterface final : public Interface {
public:
    /// A connect attempt gets at most TcpConfig::connect_attempt_ns, and no more than an
    /// even share of what is left of the total deadline (but at least kMinAttemptNs), so
    /// that one blackholed address cannot use up the time of those after it.
    static constexpr uint64_t kMinAttemptNs = 250'000'000;
    /// Pause before the second round of attempts; doubles each round up to kMaxRetryPauseNs.
    /// These three stay constants on purpose: they only divide the time the settings give
    /// (SWY_TCP_CONNECT_TIMEOUT bounds everything, SWY_TCP_CONNECT_ATTEMPT_TIMEOUT each
    /// attempt) and never extend it, so no deployment needs to change them.
    static constexpr uint64_t kRetryPauseNs = 100'000'000;
    static constexpr uint64_t kMaxRetryPauseNs = 2'000'000'000;
    static constexpr uint32_t kIdlePollEvery = 4096;  // powers of two
    /// Up to this many open connections, progress reads each socket directly (one recv
    /// instead of epoll_wait + recv); epoll then only runs every kEpollEvery passes, for new
    /// connections and writability.
    static constexpr size_t kDirectPollMax = 2;
    static constexpr uint32_t kEpollEvery = 64;
    /// Frames up to this size sent while an earlier one of the same progress pass went out
    /// directly are corked: queued and written together (one send for a burst) at the next
    /// progress or arm call.
    static constexpr size_t kCorkMax = 2048;
    /// A corked queue this long is written at once.
    static constexpr size_t kCorkFlush = 64 * 1024;
    /// Largest queue storage an interface keeps parked for reuse (one spare for sends, one
    /// for receives): a queue that grew beyond it for large frames (up to the send queue's
    /// limit, or a whole 256 KiB frame being received) frees its storage once it runs empty,
    /// so what an idle interface holds does not depend on what went through it.
    static constexpr size_t kSpareKeepMax = 128 * 1024;

    /// Opens the listening socket(s) of the configured devices, port chosen by the kernel.
    /// @param iface_index  this interface's index in the worker (goes into AmSource::iface)
    /// @param sink         receives messages and failures; must outlive the interface
    /// Errors: kNotFound (no usable address on the devices), kIoError (socket calls),
    /// kInvalidParam (sndbuf_limit or one of the timeouts 0); @p why says which.
    static Status open(const TcpConfig& config, uint64_t worker_uid, uint16_t iface_index,
                       AmSink* sink, std::unique_ptr<TcpInterface>* out, std::string* why);
    ~TcpInterface() override;

    const char* name() const override { return "tcp"; }
    /// Writes corked frames, then (every busy_poll_every calls) reads the sockets: directly
    /// with few connections, else through one epoll_wait(0) pass; accepts, delivers every
    /// complete frame (placing payloads the sink asks for straight into its memory), flushes
    /// queues that became writable, reports failures.
    /// @return frames delivered + connections accepted.
    unsigned progress() override;
    /// The tcp section (tcp_wire.h): every listening address; loopback entries last.
    std::vector<uint8_t> address() const override;
    /// Starts connecting to the addresses in @p section (same-family entries first) and
    /// returns at once: the endpoint queues sends until the connection is up and the
    /// handshake done. When every address fails or the connect deadline passes, progress()
    /// reports on_remote_failure(iface, the endpoint's peer_key(), kUnreachable or kTimedOut). @p want_pio is
    /// ignored (tcp has no PIO).
    /// With a connection from that worker already up and not yet used by an endpoint of
    /// ours, the endpoint shares it (one connection per pair of workers).
    /// Errors: kMalformed (bad section), kUnreachable (every address refused at once; @p why
    /// lists them), kNoResource (65535 connections in use, or no socket: out of descriptors,
    /// @p why says which), kIoError (no nonce).
    Status connect(uint64_t remote_uid, const uint8_t* section, size_t length, bool want_pio,
                   std::unique_ptr<Endpoint>* out, std::string* why) override;
    /// Lane on the connection messages from @p sender arrived on; null once it is closed.
    Endpoint* reply_endpoint(uint16_t sender) override;
    /// Peer uid of a connection (0 before its hello arrived, or for unknown indices).
    uint64_t sender_uid(uint16_t sender) const override;
    /// The connection (slot and generation) once its hello arrived; 0 otherwise. The uid in
    /// a hello is the peer's claim: it never names anything beyond this connection.
    uint64_t sender_key(uint16_t sender) const override;
    int event_fd() const override { return epoll_fd_.get(); }
    /// False if frames or failure reports are waiting (the epoll fd would not wake us).
    bool arm() override;
    /// After a wake-up, look at the sockets on the very next progress call.
    void disarm() override {
        idle_polls_ = kIdlePollEvery - 1;  // a multiple of every poll period, minus 1
        epoll_tick_ = 0;                   // and an epoll pass: a new peer may have woken us
    }

    /// Installs a shared key (empty: none) for connections made or accepted from now on, and
    /// closes every connection not authenticated with exactly this key (those with a known
    /// peer are reported as failed, kConnectionReset). A no-op if the key is unchanged.
    void set_auth_key(const common::AuthKey& key);
    bool authenticated() const { return !config_.auth_key.empty(); }

    /// Listening addresses actually bound (decoded form of address()), for tools and tests.
    const std::vector<TcpAddressEntry>& listen_addresses() const { return addresses_; }
    /// Connections currently open or being connected (tests and swy-info).
    size_t open_connections() const;
    /// Times the kernel was asked what the peers acknowledged (SIOCOUTQ looks for sends
    /// waiting for delivery; tests: a reply that says what it read saves the look).
    uint64_t kernel_ack_looks() const { return kernel_ack_looks_; }
    /// Reads from the sockets that returned data (tests and benchmarks: a placed payload's
    /// last read also takes the next frame's header, so a train of fragments costs one read
    /// per fragment where all of it is there).
    uint64_t socket_reads() const { return socket_reads_; }
    /// Quick ACKs sent (TCP_QUICKACK: tests; none while a frame is still arriving).
    uint64_t quick_acks() const { return quick_acks_; }
    /// Entries of connections owing a quick ACK (tests: one per connection, however long a
    /// frame takes to arrive while we send on the same connection).
    size_t quick_acks_owed() const { return ack_owed_.size(); }
    /// Bytes of queue storage held: every connection's send and receive buffers and the
    /// parked spares (tests and benchmarks: an idle interface holds at most two spares of
    /// kSpareKeepMax, whatever went through it).
    size_t buffer_bytes() const;

private:
    friend class TcpEndpoint;
    struct Connection;
    struct SpareBuffer;
    class ByteQueue;

    TcpInterface(const TcpConfig& config, uint64_t uid, uint16_t index, AmSink* sink);
    Status listen_on_devices(std::string* why);
    void setup_socket(int fd) const;
    Connection* add_connection(common::UniqueFd fd, bool outgoing, uint64_t peer_uid,
                               uint16_t* index);
    Connection* new_slot();
    Connection* new_slot_raw();
    Status start_attempts(Connection* c);
    void end_attempt(Connection* c, const char* error);
    void check_connecting();
    void next_attempt(Connection* c);
    void connect_event(Connection* c);
    /// The attempt's socket finished connecting (connected() or end_attempt() done): true;
    /// still in progress: false.
    bool connect_settled(Connection* c);
    // one connection per pair (tcp_pairing.cpp)
    Connection* reusable_connection(uint64_t uid) const;
    Connection* own_connection_to(uint64_t uid) const;
    void attach_owner(Connection* c, TcpEndpoint* ep);
    void move_owner(Connection* from, Connection* to);
    void adopt_accepted(Connection* accepted);
    Status on_redirect(Connection* c);
    Status on_proceed(Connection* c);
    /// Whether a hello claiming @p claimed_uid crosses a connection of ours that we would keep
    /// (the acceptor then asks the connector to hold for its verdict).
    bool hold_hello(uint64_t claimed_uid) const;
    /// The accepted connection's peer proved the key (or there is none): identity known, the
    /// verdict owed on a held connection goes out, pairing with our own connection follows.
    Status peer_verified(Connection* c);
    Status unproven_pairing(Connection* c);
    void watch_handshake(Connection* c);
    void check_handshakes();
    void connected(Connection* c);
    void update_timer();
    Status handle_hello(Connection* c, const uint8_t* data, size_t length);
    Status handle_hello_ack(Connection* c, const uint8_t* data, size_t length);
    Status handle_proof(Connection* c, const uint8_t* data, size_t length);
    Status auth_failure(Connection* c, const char* what);
    Status send_handshake(Connection* c, const uint8_t* body, size_t length);
    Connection* lookup(uint16_t index, uint32_t generation) const;
    unsigned accept_all(int listen_fd);
    unsigned poll_epoll();
    unsigned poll_direct();
    void flush_corked();
    void prepare_receive();
    unsigned receive(Connection* c);
    unsigned deliver_frames(Connection* c);
    bool start_placement(Connection* c, const FrameHeader& h);
    unsigned receive_placed(Connection* c);
    Status handle_control(Connection* c, const uint8_t* data, size_t length);
    void on_eof(Connection* c);
    bool flush(Connection* c);
    void watch_writable(Connection* c, bool on);
    /// The kernel refused bytes (EAGAIN, or took only part of a frame): watch EPOLLOUT and
    /// write nothing more on @p c until epoll reports room (tx_full), so that a stream of
    /// sends waiting for room costs one epoll_wait per progress pass rather than a failing
    /// sendmsg per waiting send.
    void note_kernel_full(Connection* c);
    /// Takes @p c's socket out of the epoll set and closes it; with it go the EPOLLOUT watch
    /// and a full send buffer (watching_out, tx_full), which describe that socket only.
    void drop_socket(Connection* c);
    /// A frame from the peer said it had read @p read data bytes of ours (FrameHeader::read):
    /// what it read is delivered, so sends waiting for it complete without a SIOCOUTQ. False
    /// (the connection failed, kMalformed) when it claims more than was ever written.
    bool note_peer_read(Connection* c, uint64_t read);
    void close_connection(Connection* c);
    void fail(Connection* c, Status why);
    void report_failures();
    /// to_report_ += c; never throws (out of memory: report_scan_ instead).
    void queue_report(Connection* c);
    bool reports_waiting() const { return !to_report_.empty() || report_scan_; }
    // Failure detection on established connections (tcp_liveness.cpp).
    /// Every kLivenessPeriodNs (from progress): fails connections with data waiting that
    /// heard nothing from the peer's kernel for user_timeout_ns (kTimedOut).
    void check_liveness();
    /// Refreshes c->acked from the kernel (SIOCOUTQ) while the socket is open.
    void update_acked(Connection* c);
    /// c->acked, refreshed (update_acked) only when that may tell something new: a segment
    /// arrived after the bytes waited for were written, or the backed-off pause since the
    /// last look ran out. Remembers that someone waits for @p wanted (arm_ack_timer()).
    uint64_t acknowledged(Connection* c, uint64_t wanted);
    /// update_acked() now (arrivals since: @p news) and when to look next.
    void look_at_acks(Connection* c, uint64_t now, bool news);
    /// Nobody waits for acknowledgements on @p c any more (arm_ack_timer() drops it);
    /// @p by_reply: a frame from the peer proved the delivery, not the kernel.
    static void end_ack_wait(Connection* c, bool by_reply);
    /// From arm(): while someone waits for acknowledgements, a timer in the epoll set makes
    /// the event fd readable when the next look is due; disarmed once nobody waits. A look
    /// that is due is taken here. False if that look learnt something (the worker must see
    /// it first) or no timer could be made: then the caller must not block.
    bool arm_ack_timer();
    /// Queues a goodbye on every open connection and tries to write it (destructor).
    void say_goodbye_all();
    /// Connections that received in an earlier progress pass and sent nothing since, and are
    /// not inside a frame still arriving (or every one, with @p all: before sleeping):
    /// acknowledge now (TCP_QUICKACK) instead of after the kernel's delayed-ACK timer.
    void send_owed_acks(bool all);
    void owe_ack(Connection* c);
    /// Runs @p deliver (a call into the sink with a message of @p c). If memory runs out
    /// inside it (std::bad_alloc), the message stays in the receive buffer, the connection
    /// stops reading (Connection::stalled) and false is returned; retry_stalled() delivers it
    /// from a later progress call. Back-pressure: never a message dropped (tcp_progress.cpp).
    template <typename F>
    bool deliver_or_stall(Connection* c, F&& deliver);
    void retry_stalled();

    Status send(Connection* c, AmId id, const void* hdr, size_t hdr_len, const void* payload,
                size_t length);
    Status queue_frame(Connection* c, AmId id, const void* hdr, size_t hdr_len, const void* payload,
                       size_t length);
    Status send_packed(Connection* c, AmId id, const void* hdr, size_t hdr_len,
                       Endpoint::PackFn pack, void* arg, size_t length);
    Status send_control(Connection* c, const uint8_t* body, size_t length);
    void disconnect(Connection* c);

    TcpConfig config_;
    uint64_t uid_;
    uint16_t index_;
    AmSink* sink_;
    common::UniqueFd epoll_fd_;
    common::UniqueFd timer_fd_;  // wakes a blocking wait at the next connect deadline
    bool timer_set_ = false;
    uint64_t key_epoch_ = 0;            // bumped by set_auth_key
    std::vector<uint16_t> connecting_;  // indices of connections in State::kConnecting
    // (index, generation) of connections whose handshake is not done yet (may be stale)
    std::vector<std::pair<uint16_t, uint32_t>> handshaking_;
    // One parked buffer each for receive and send queues (tcp_connection.h).
    std::unique_ptr<SpareBuffer> spare_rx_;
    std::unique_ptr<SpareBuffer> spare_tx_;
    uint32_t handshake_tick_ = 0;
    std::vector<common::UniqueFd> listen_fds_;
    std::vector<TcpAddressEntry> addresses_;
    common::ConnTable<Connection> conns_;  // index = sender
    std::vector<uint16_t> live_;           // indices of open connections
    std::vector<uint16_t> corked_;         // connections with corked frames to write
    uint64_t epoch_ = 1;                   // progress calls so far (burst detection for corking)
    uint32_t epoll_tick_ = 0;
    uint32_t busy_mask_ = 3;           // config_.busy_poll_every - 1, rounded to a power of two
    uint8_t place_header_[256] = {};   // per AmId: sink_->placement_header(), 0: never placed
    std::vector<uint16_t> to_report_;  // failed connections not yet reported to the sink
    bool in_progress_ = false;
    Connection* delivering_ = nullptr;  // its receive buffer is in use by a sink callback
    std::shared_ptr<const LaneAttr> attr_;
    uint32_t idle_polls_ = 0;
    uint64_t next_liveness_ns_ = 0;   // CLOCK_MONOTONIC_COARSE of the next check_liveness()
    uint32_t liveness_tick_ = 0;      // progress calls between looks at the clock
    std::vector<uint16_t> ack_owed_;  // connections with Connection::ack_owed set
    bool report_scan_ = false;        // a failure could not be queued: scan the connections
    size_t stalled_ = 0;              // connections with Connection::stalled set
    // Delivery confirmation (tcp_liveness.cpp): (index, generation) of connections someone
    // waits for acknowledgements on (may be stale), and the timer that wakes a blocked worker
    // for the next look (made on first use; kAckTimerTag in the epoll set).
    std::vector<std::pair<uint16_t, uint32_t>> ack_waits_;
    common::UniqueFd ack_timer_fd_;
    bool ack_timer_set_ = false;
    uint64_t kernel_ack_looks_ = 0;  // look_at_acks() calls (kernel_ack_looks())
    uint64_t socket_reads_ = 0;      // reads that returned data (socket_reads())
    uint64_t quick_acks_ = 0;        // TCP_QUICKACKs sent (quick_acks())
};

}  // namespace swy::tl::tcp

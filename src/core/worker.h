// Worker: the progress engine. Owns the transport interfaces, the tag matcher, the request
// pool, reassembly state of fragmented messages, and every endpoint created from it.
#pragma once

#include <switchyard/switchyard.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/auth.h"
#include "common/small_copy.h"
#include "common/unique_fd.h"
#include "core/context.h"
#include "core/endpoint.h"
#include "core/request.h"
#include "core/request_params.h"
#include "core/slot_arena.h"
#include "memtypes/registry.h"
#include "protocols/am/am_recv.h"
#include "protocols/eager/eager_recv.h"
#include "protocols/rma/rma_engine.h"
#include "protocols/rndv/rendezvous.h"
#include "protocols/tag/matcher.h"
#include "protocols/wire.h"
#include "transports/registry.h"
#include "transports/transport.h"

namespace swy::core {

class ConnManager;

/// A message that arrived before its receive was posted (or was taken by a matched probe).
struct UnexpectedDesc : proto::UnexpectedMessage {
    size_t length = 0;    ///< full message length
    size_t received = 0;  ///< bytes arrived so far (== length when complete)
    /// Bytes of `data`: grows with what arrives, never with what a header announces, so a
    /// peer makes us hold only as much as it really sent (and at most the worker's caps).
    size_t capacity = 0;
    size_t* account = nullptr;  ///< the per-sender count `capacity` is charged to
    /// The buffer: `allocated` bytes, of which `capacity` are charged to the caps. A recycled
    /// descriptor (Worker::recycle_unexpected) keeps a small buffer from its last use, so
    /// an unexpected eager message costs no allocation once the worker has seen a few.
    std::unique_ptr<uint8_t[]> data;
    size_t allocated = 0;
    /// Over the unexpected-memory caps: its bytes were dropped, and the receive that matches
    /// it fails with kNoResource (a synchronous sender learns it from the ack).
    bool lost = false;
    bool sync = false;
    uint64_t sender_request = 0;
    tl::AmSource source{};
    PeerRef peer;                 ///< RTS: who sent it, as its lane vouches (failures)
    uint64_t reassembly_key = 0;  ///< 0 when complete
    bool probed_out = false;      ///< removed by a matched probe, owned by a swy_message
    bool rndv = false;            ///< an RTS: the data is still in the sender's buffer
    bool sender_failed = false;   ///< RTS whose sender died: matching it fails the receive
    proto::RtsHeader rts{};
};

class Worker final : public tl::AmSink {
public:
    static Status create(Context* context, const swy_worker_params_t* params, Worker** out,
                         std::string* why);
    /// Completes every request still outstanding with kCanceled (callbacks run), warns about
    /// requests the application never freed, then releases everything.
    ~Worker() override;

    // ---- lifetime across fork() (worker_lifetime.cpp) ----
    /// Workers live in memory the kernel hands a fork()ed child as zeros (MADV_WIPEONFORK), so
    /// the child's copy of a worker reads as not usable() and nothing in the child can reach
    /// the parent's rings or connections through it.
    /// The page header in front of every worker (worker_lifetime.cpp): its live mark, and
    /// whether an inherited copy's refusal was logged. A multiple of the worker's alignment.
    static constexpr size_t kLifetimeHeaderBytes = 64;
    static constexpr uint32_t kLiveMark = 0x53575931;  // "SWY1"; 0 in a fork()ed child
    static void* operator new(size_t size);
    static void* operator new(size_t size, const std::nothrow_t&) noexcept;
    static void operator delete(void* p, size_t size) noexcept;
    /// False in a process that inherited @p w through fork() (and only there): every call
    /// refuses it. One load: the API layer checks it on every call that reaches the worker.
    /// The mark sits in the page header in front of the object, not in a member: in the
    /// child the object's own bytes, its vtable pointer included, are zeros, and a member
    /// call on it would already be undefined (UBSan's vptr check says so).
    static bool usable(const Worker* w) noexcept {
        uint32_t mark;
        std::memcpy(&mark, reinterpret_cast<const unsigned char*>(w) - kLifetimeHeaderBytes,
                    sizeof mark);
        return mark == kLiveMark;
    }
    /// swy_worker_destroy() in a process that inherited @p w: unmaps this process's copy
    /// without running anything the parent's rings or connections would see.
    static void abandon(Worker* w);
    /// In a process that inherited this worker: true the first time only (one log line for a
    /// progress loop). Writes only this process's copy.
    static bool first_refusal(Worker* w) noexcept;
    /// True while worker code is on the stack (a callback is running): a blocking wait from
    /// there could never see progress (swy_request_wait refuses it).
    bool in_callback() const { return progress_depth_ != 0; }

    Context* context() const { return context_; }
    uint64_t uid() const { return uid_; }
    bool multi_threaded() const { return thread_mode_ == SWY_THREAD_MODE_MULTI; }
    std::recursive_mutex& lock() { return lock_; }

    /// One pass over every transport and protocol. The first call after arm() disarms
    /// (swy_worker_arm: armed until the next progress).
    unsigned progress() {
        if (__builtin_expect(armed_, 0)) disarm();
        return poll();
    }
    std::vector<uint8_t> address() const;
    Status get_efd(int* fd) const;
    /// Arm every transport for a blocking wait on the event fd: kOk when armed (senders that
    /// find us armed wake us, once), kBusy when work is waiting (then nothing stays armed).
    /// The armed state lasts until the next progress() or disarm().
    Status arm();
    /// Arm, block on the event fd, disarm. Takes the lock itself (released while blocked).
    Status wait(int timeout_ms);
    /// End the armed state: transports stop asking senders for wake-ups and consume the
    /// wake-ups already sent (the event fd stops being readable for them).
    void disarm();
    /// Wake a thread blocked in wait() or on the event fd (swy_worker_signal). Takes no lock
    /// and only writes an eventfd: safe from any thread and from a signal handler.
    void signal();
    /// Fill the groups of @p attr its field_mask asks for (bits already checked), nothing else.
    void query(swy_worker_attr_t* attr) const;
    /// Installs @p key (empty: none) as the shared key authenticating tcp and verbs
    /// connections, as SWY_AUTH_KEY does at creation (a bootstrap's per-job key): connections
    /// made or accepted from now on need it; open tcp connections not authenticated with it
    /// are closed (their peers reported failed), verbs lanes already set up stay. Call with the lock held, like every worker call. Always kOk today;
    /// a Status so a transport that cannot switch keys can say so.
    Status set_auth_key(const common::AuthKey& key);

    // ---- endpoints ----
    /// @p params is normalised (api::normalized: every field whose field_mask bit is clear
    /// holds its default), as in every core call that takes swy_ep_params_t.
    /// @p wire_into: wire this endpoint (made by add_unwired_endpoint) instead of a new one.
    Status create_endpoint(const swy_ep_params_t& params, Endpoint** out, std::string* why,
                           Endpoint* wire_into = nullptr);
    /// Close: kOk (done), kInProgress (*req set), error.
    Status close_endpoint(Endpoint* ep, swy_ep_close_mode_t mode, Request** req);
    void mark_pending(Endpoint* ep);
    /// @p ep has sends awaiting delivery (Endpoint::await_delivery): each progress pass asks
    /// it to complete those its lane confirmed. Not a reason for arm() to refuse: such a lane
    /// wakes a blocked worker itself when asking again is worth it (tl::Endpoint::
    /// acknowledged_bytes).
    void watch_delivery(Endpoint* ep);

    // ---- connection establishment through sockaddr (worker_connect.cpp, listener.h) ----
    /// The connection manager (listeners, sockaddr endpoints), created on first use.
    Status conn_manager(ConnManager** out, std::string* why);
    /// An endpoint without lanes yet: its sends wait on its pending queue until wired.
    Endpoint* add_unwired_endpoint(const swy_ep_params_t& params);
    /// Wire @p ep's lanes from a peer's worker address, then send what it queued.
    Status wire_endpoint(Endpoint* ep, const std::vector<uint8_t>& address, uint32_t flags,
                         std::string* why);
    /// True if an endpoint to worker @p uid exists, is wired and has neither failed nor closed.
    bool has_live_endpoint_to(uint64_t uid) const;
    /// A wired, open endpoint whose lane goes to @p peer now (a tcp endpoint moves to the
    /// peer's connection when both connected at once), or null. Walks every endpoint.
    Endpoint* wired_endpoint_of(PeerRef peer) const;
    /// An endpoint is being deleted (its handshake, if any, must forget it).
    void endpoint_deleted(const Endpoint* ep);

    // ---- receives ----
    /// A tagged receive. Inline: the common case of a latency-bound loop (nothing
    /// unexpected, contiguous host memory) is posted from the API call itself, with no buffer
    /// to describe and nothing that could complete it here (about 50 instructions less per
    /// receive than through the general path, callgrind, 8-byte shm loopback).
    Status tag_recv(void* buffer, size_t length, uint64_t tag, uint64_t mask,
                    const swy_request_params_t* params, Request** out) {
        if (__builtin_expect(matcher_.unexpected_count() == 0 &&
                                 stated_datatype(params) == SWY_DATATYPE_CONTIG &&
                                 host_without_detection(stated_memtype(params)),
                             1)) {
            Request* r = take_request(params);
            set_receive(r, buffer, length, tag, mask);
            matcher_.post(r);
            r->user_owned = true;
            *out = r;
            return Status::kInProgress;
        }
        return tag_recv_general(buffer, length, tag, mask, params, out);
    }
    /// The receive of a latency loop, posted without a call (so that the API call around it
    /// saves no registers): nothing unexpected and nothing posted yet, contiguous host
    /// memory, params that state no flags, callback, user data, datatype or request memory,
    /// a pooled request at hand. The posted receive, or nullptr when any of that is not so
    /// (then tag_recv(), which does everything).
    Request* try_post_receive(void* buffer, size_t length, uint64_t tag, uint64_t mask,
                              const swy_request_params_t* params) {
        constexpr uint64_t kNeedMore = SWY_REQ_PARAM_FIELD_FLAGS | SWY_REQ_PARAM_FIELD_CALLBACK |
                                       SWY_REQ_PARAM_FIELD_USER_DATA |
                                       SWY_REQ_PARAM_FIELD_DATATYPE | SWY_REQ_PARAM_FIELD_REQUEST;
        if (__builtin_expect(matcher_.unexpected_count() != 0 || matcher_.posted_count() != 0 ||
                                 (params != nullptr && (params->field_mask & kNeedMore) != 0) ||
                                 !host_without_detection(stated_memtype(params)),
                             0)) {
            return nullptr;
        }
        Request* r = pool_.try_get(this);
        if (__builtin_expect(r == nullptr, 0)) return nullptr;
        set_receive(r, buffer, length, tag, mask);
        matcher_.post_alone(r);
        r->user_owned = true;
        r->posted_alone = true;
        return r;
    }
    /// @p r becomes a tagged receive of up to @p length bytes into @p buffer.
    static void set_receive(Request* r, void* buffer, size_t length, uint64_t tag, uint64_t mask) {
        r->kind = RequestKind::kRecv;
        r->recv_buffer = static_cast<uint8_t*>(buffer);
        r->capacity = length;
        r->tag = tag;
        r->mask = mask;
    }
    /// tag_recv() for the rest: a message already here, a memory type to detect or describe,
    /// non-contiguous data.
    Status tag_recv_general(void* buffer, size_t length, uint64_t tag, uint64_t mask,
                            const swy_request_params_t* params, Request** out);
    Status probe(uint64_t tag, uint64_t mask, bool remove, swy_tag_recv_info_t* info,
                 UnexpectedDesc** message);
    Status msg_recv(void* buffer, size_t length, UnexpectedDesc* message,
                    const swy_request_params_t* params, Request** out);
    Status cancel(Request* r);

    // ---- requests ----
    RequestPool& pool() { return pool_; }
    /// A blank request from the pool (or in the caller's memory, SWY_REQ_PARAM_FIELD_REQUEST)
    /// with the flags, callback and user data @p params state. Inline: every operation that
    /// needs a request comes through here.
    Request* new_request(const swy_request_params_t* params) { return take_request(params); }
    /// new_request() always inline: for the receive fast path (Worker::tag_recv), where the
    /// call and its saved registers were a fifth of the cost of posting a receive.
    [[gnu::always_inline]] Request* take_request(const swy_request_params_t* params) {
        if (params == nullptr) return pool_.get(this);
        void* memory = request_params::request_memory(params);
        Request* r = __builtin_expect(memory == nullptr, 1) ? pool_.get(this)
                                                            : pool_.get_external(this, memory);
        // A blank request has no flags, callbacks or user data: one test when none is stated.
        constexpr uint64_t kStated = SWY_REQ_PARAM_FIELD_FLAGS | SWY_REQ_PARAM_FIELD_CALLBACK |
                                     SWY_REQ_PARAM_FIELD_USER_DATA;
        if ((params->field_mask & kStated) != 0) {
            r->flags = request_params::flags(params);
            r->send_cb = request_params::send_cb(params);
            r->recv_cb = request_params::recv_cb(params);
            r->user_data = request_params::user_data(params);
        }
        return r;
    }
    /// Record the final status; runs the callback unless @p immediate (returned to caller).
    /// Inline when there is nothing more to do (no datatype view, on no endpoint queue, no
    /// callback, not freed yet: a plain receive that completes in progress).
    void complete(Request* r, Status status) {
        if (__builtin_expect(r->completes_by_itself(), 1)) {
            if (r->completed) return;
            r->status = status;
            r->completed = true;
            return;
        }
        complete_fully(r, status);
    }
    /// complete() with all it may have to do: the view's finish, the endpoint queue, the
    /// callback, the request's return to the pool once freed.
    void complete_fully(Request* r, Status status);
    /// The application released its handle.
    /// Inline: every request handed to the application comes back through here.
    void release(Request* r) {
        if (r->external != nullptr) {
            // Only completed (the API refused the rest): the memory goes back to the caller
            // now, and put() spends the handle (the slot's generation).
            pool_.put(r);
            return;
        }
        ++r->handle_generation;  // the application's handle is spent (a second free is refused)
        if (r->completed) {
            pool_.put(r);
        } else {
            r->user_freed = true;
        }
    }
    /// Work for poll() besides the transports was queued (see side_work_): whoever queues
    /// it (a list of the worker's, a driven rendezvous, busy one-sided operations) calls this.
    void note_side_work() { side_work_ = true; }
    /// Queue a completion to run from the next progress (cancel, failures inside a call).
    void complete_later(Request* r, Status status);

    /// Send a small control message to the sender of a received packet; queued if the lane
    /// is full right now.
    void send_control(tl::AmSource to, tl::AmId id, const void* hdr, size_t length);

    // ---- AmSink ----
    void on_am(tl::AmId id, tl::AmSource src, const uint8_t* data, size_t length) override;
    void on_remote_failure(uint16_t iface, uint64_t peer_key, Status why) override;
    void on_sender_released(tl::AmSource src) override;
    void wake() override { signal(); }
    /// Zero-copy receive of rendezvous fragments (tcp): straight into the user's buffer.
    /// Also puts and get replies of one-sided operations (rma::Engine validates first).
    size_t placement_header(tl::AmId id) const override {
        return id == proto::kAmRndvData ? sizeof(proto::RndvDataHeader)
                                        : rma::Engine::placement_header(id);
    }
    uint8_t* place_payload(tl::AmId id, tl::AmSource src, const uint8_t* hdr, size_t done,
                           size_t length) override {
        if (id == proto::kAmRndvData) return rndv_.place_data(src, hdr, done, length);
        return rma_.place_payload(id, src, hdr, done, length);
    }
    void on_am_placed(tl::AmId id, tl::AmSource src, const uint8_t* hdr, size_t length) override {
        if (id == proto::kAmRndvData) {
            rndv_.on_data_placed(src, hdr, length);
        } else {
            rma_.on_am_placed(id, src, hdr, length);
        }
    }

    size_t pio_granted() const { return pio_granted_; }
    /// Control messages (acks, RTR, ATS, FIN, pipeline fragments) dropped because they named
    /// no live request of the peer they came from: forged, stale or misrouted (tests, tools).
    uint64_t rejected_controls() const { return rejected_controls_; }
    /// Unexpected messages dropped because they would have passed a memory cap (tests).
    uint64_t unexpected_lost() const { return unexpected_lost_; }
    /// Bytes now buffered for unexpected messages (tests).
    size_t unexpected_bytes() const { return unexpected_bytes_; }
    /// Interface @p index (AmSource::iface), null if there is none (tests, tools).
    tl::Interface* interface(uint16_t index) const {
        return index < ifaces_.size() ? ifaces_[index].get() : nullptr;
    }
    /// The interface of the transport named @p name (as SWY_TLS names it), null when it is
    /// not open (tests, tools).
    tl::Interface* interface_named(std::string_view name) const;

    /// The memory type a caller stated (UNKNOWN when params is null or its bit is clear).
    static swy_memtype_t stated_memtype(const swy_request_params_t* params) {
        return request_params::memtype(params);
    }
    /// The datatype a caller stated (CONTIG unless params set SWY_REQ_PARAM_FIELD_DATATYPE).
    /// Branch-free, so the contiguous paths pay one predictable test of the result.
    static swy_datatype_t stated_datatype(const swy_request_params_t* params) {
        const bool stated =
            params != nullptr && (params->field_mask & SWY_REQ_PARAM_FIELD_DATATYPE) != 0;
        return stated ? params->datatype : swy_datatype_t{SWY_DATATYPE_CONTIG};
    }
    /// Receive buffer of @p r (recv_buffer, capacity: as the caller passed them): its memory
    /// type, or its view for a non-contiguous datatype (capacity becomes the packed length).
    Status describe_receive_buffer(Request* r, const swy_request_params_t* params);
    /// Give @p r a view of @p count items of the non-contiguous @p datatype at @p buffer
    /// (@p for_pack: a send). Non-contiguous data must be host memory: a stated device memory
    /// type is kUnsupported. kInvalidParam for a bad datatype (then @p r holds no view state
    /// that needs a finish).
    Status attach_datatype(Request* r, swy_datatype_t datatype, const void* buffer, size_t count,
                           bool for_pack, swy_memtype_t stated);

    /// True when a buffer is host memory without looking at it: stated host, or not stated
    /// while no device plugin is loaded. The hot paths test this before anything else.
    bool host_without_detection(swy_memtype_t stated) const {
        return stated == SWY_MEMTYPE_HOST ||
               (stated == SWY_MEMTYPE_UNKNOWN && !context_->memtypes().device_plugins_loaded());
    }

    /// Memory type of a user buffer: the caller's statement if any (checked against the
    /// loaded plugins), else detection. kInvalidParam with a log line when it cannot be told
    /// (a detection miss while a device plugin is loaded is never taken as host).
    Status resolve_memtype(const void* buffer, size_t length, swy_memtype_t stated,
                           mem::MemType* type, bool* cpu_buffer) const;
    /// Copy received bytes into a receive request's buffer at packed @p offset (plugin copy
    /// for memory the CPU must not touch, unpack for non-contiguous data). Clamps nothing:
    /// the caller checks capacity. Inline: every eager receive comes through here with a
    /// host buffer.
    Status copy_in(Request* r, size_t offset, const uint8_t* src, size_t length) const {
        if (__builtin_expect(r->cpu_buffer, 1)) {
            common::copy_bytes(r->recv_buffer + offset, src, length);
            return Status::kOk;
        }
        return copy_in_staged(r, offset, src, length);
    }
    /// copy_in() where the CPU must not store directly: the view's unpack (non-contiguous
    /// data) or the memory type's copy routine.
    Status copy_in_staged(Request* r, size_t offset, const uint8_t* src, size_t length) const;

    // ---- one-sided operations executed by the target (src/protocols/rma/) ----
    rma::Engine& rma() { return rma_; }

    // ---- active messages (src/protocols/am/) ----
    proto::am::ActiveMessages& am() { return am_; }

    // ---- rendezvous (src/protocols/rndv/) ----
    /// The rendezvous protocols' state in this worker.
    proto::rndv::Rendezvous& rndv() { return rndv_; }

    /// Protocol tables shared by this worker's endpoints (core/endpoint_tables.h).
    EndpointTableCache& endpoint_tables() { return endpoint_tables_; }

    // ---- plumbing the protocols (src/protocols/) use ----
    // Identity checks: everything a peer sends is matched against the lane it came on.
    /// The peer behind a received message, as its transport vouches for it.
    PeerRef peer_of(tl::AmSource src) const {
        return {src.iface, ifaces_[src.iface]->sender_key(src.sender)};
    }
    /// The live send request @p wire_id names, if @p src is the peer of its endpoint; else
    /// null, and the message is counted as rejected (@p what names it in the log).
    Request* send_request_from(tl::AmSource src, uint64_t wire_id, const char* what);
    /// The same for a matched receive: @p src must be the peer its RTS came from.
    Request* receive_request_from(tl::AmSource src, uint64_t wire_id, const char* what);
    /// Count (and log, at a bounded rate) a control message dropped for @p why.
    void reject_control(const char* why);
    /// The tag matcher: posted receives and unexpected messages.
    proto::TagMatcher& matcher() { return matcher_; }
    // Unexpected-message memory, capped per peer and per worker (SWY_UNEXPECTED_*_MAX).
    /// Grow @p d's buffer to hold @p need bytes; false (and @p d lost, its bytes freed) if
    /// that would pass a cap. Inline: every unexpected message comes through here.
    bool reserve_unexpected(UnexpectedDesc* d, size_t need) {
        return need <= d->capacity ? !d->lost : grow_unexpected(d, need);
    }
    bool grow_unexpected(UnexpectedDesc* d, size_t need);
    /// @p d's large buffer becomes a spare for the next large unexpected message, if it is
    /// at most kSpareUnexpectedBytes and fewer than kSpareUnexpectedBuffers are held; else
    /// it is freed.
    void park_unexpected_buffer(UnexpectedDesc* d);
    /// Return @p d's buffer to the accounts (before recycling or handing it over). A small
    /// buffer stays with the descriptor for its next use; a large one is parked as a spare
    /// (park_unexpected_buffer) or freed.
    void release_unexpected(UnexpectedDesc* d) {
        if (d->capacity != 0) {
            unexpected_bytes_ -= d->capacity;
            *d->account -= d->capacity;
            d->capacity = 0;
        }
        if (__builtin_expect(d->allocated > kKeptUnexpectedBytes, 0)) park_unexpected_buffer(d);
    }
    /// Spare unexpected-message buffers held idle now (spare_unexpected_): for tests.
    size_t spare_unexpected_buffers() const { return spare_unexpected_.size(); }
    /// A blank descriptor for an unexpected message: from the recycled ones, else new.
    UnexpectedDesc* new_unexpected() {
        if (__builtin_expect(unexpected_free_.empty(), 0)) return new UnexpectedDesc;
        UnexpectedDesc* d = unexpected_free_.back().release();
        unexpected_free_.pop_back();
        return d;
    }
    /// Done with @p d (out of the matcher, its bytes released): keep it for the next
    /// unexpected message (up to kKeptUnexpectedDescs of them), else delete it.
    void recycle_unexpected(UnexpectedDesc* d);

private:
    // First member: destroyed last, after ~Worker() has destroyed every endpoint in it.
    SlotArena<Endpoint> endpoint_slots_;
    /// ~Worker(): complete what is still outstanding (kCanceled) and count what the
    /// application never freed.
    void cancel_outstanding();
    void warn_unfreed() const;

    Worker(Context* context, const swy_worker_params_t* params);
    Status open_interfaces(std::string* why);

    uint64_t rejected_controls_ = 0;
    void bind_unexpected(Request* r, UnexpectedDesc* desc);
    /// The account an unexpected message from @p src is charged to: its sender index (a
    /// connection on network transports, a sender lane on shm). An index that a new peer
    /// takes over inherits what the old one left unconsumed (the cap stays safe). Deques, so
    /// that a desc can keep a pointer to its account while others are added.
    size_t* unexpected_account(tl::AmSource src) {
        // Unexpected messages come in runs from one sender: remember the last account.
        if (__builtin_expect(last_account_ != nullptr && src.iface == last_account_src_.iface &&
                                 src.sender == last_account_src_.sender,
                             1)) {
            return last_account_;
        }
        std::deque<size_t>& v = unexpected_by_sender_[src.iface];
        if (src.sender >= v.size()) v.resize(size_t{src.sender} + 1, 0);
        last_account_src_ = src;
        return last_account_ = &v[src.sender];
    }
    std::vector<std::deque<size_t>> unexpected_by_sender_;  // [iface][sender index]
    /// Recycled unexpected-message descriptors (recycle_unexpected), with their small
    /// buffers: at most kKeptUnexpectedDescs x kKeptUnexpectedBytes held idle.
    static constexpr size_t kKeptUnexpectedDescs = 256;
    static constexpr size_t kKeptUnexpectedBytes = 4096;
    std::vector<std::unique_ptr<UnexpectedDesc>> unexpected_free_;
    /// Large unexpected-message buffers kept for the next ones: at most
    /// kSpareUnexpectedBuffers x kSpareUnexpectedBytes (1 MiB) held idle. Freeing and
    /// allocating one per message let the C library give the pages back and fault them in
    /// again: on this virtualised host a 64 KiB all-to-all of 2 ranks, whose messages often
    /// arrive before their receive, took 120-270 us per call instead of 7.
    struct SpareBuffer {
        std::unique_ptr<uint8_t[]> data;
        size_t bytes = 0;
    };
    static constexpr size_t kSpareUnexpectedBuffers = 4;
    static constexpr size_t kSpareUnexpectedBytes = 256 * 1024;
    std::vector<SpareBuffer> spare_unexpected_;
    tl::AmSource last_account_src_{};
    size_t* last_account_ = nullptr;
    size_t unexpected_bytes_ = 0;
    size_t unexpected_max_ = size_t{1} << 30;
    size_t unexpected_peer_max_ = size_t{256} << 20;
    uint64_t unexpected_lost_ = 0;
    // Rendezvous: state and protocols in src/protocols/rndv/ (the worker only plumbs).
    proto::rndv::Rendezvous rndv_{this};
    rma::Engine rma_{this};               // one-sided message path (src/protocols/rma/)
    proto::am::ActiveMessages am_{this};  // active messages (src/protocols/am/)

    void run_deferred();
    void retry_control();

    Context* context_;
    uint64_t uid_;
    swy_thread_mode_t thread_mode_;
    std::recursive_mutex lock_;
    std::vector<std::unique_ptr<tl::Interface>> ifaces_;  // index: AmSource::iface
    /// An open interface with the registry entry that opened it.
    struct OpenTransport {
        const tl::TransportEntry* entry;
        uint16_t index;  ///< into ifaces_
    };
    std::vector<OpenTransport> transports_;  // highest TransportEntry::priority first
    /// What the poll loop calls, in opening order, ending with a null (owned by ifaces_). A
    /// plain array walk: no per-transport branch, and idle ones cost no call
    /// (wants_progress()). Holds the null mark even before open_interfaces() ran.
    std::vector<tl::Interface*> polled_{nullptr};
    common::UniqueFd epoll_fd_;
    /// swy_worker_signal's eventfd, in epoll_fd_'s set; disarm() resets it.
    common::UniqueFd signal_fd_;
    /// Set by arm() when it returned kOk, cleared by disarm(): progress() tests it first.
    bool armed_ = false;
    unsigned poll();
    /// poll()'s rare work, out of line: the deferred completions (@return how many), and
    /// connections, pending and delivery-watched endpoints, the control backlog, rendezvous,
    /// one-sided operations and closes (@return events).
    [[gnu::noinline]] unsigned run_deferred_counted();
    [[gnu::noinline]] unsigned poll_side_work();
    /// The end of a poll() that found side_work_ set: poll_side_work(), the end of the
    /// progress depth, endpoints to delete, and side_work_ again from what is left.
    [[gnu::noinline]] unsigned finish_poll_with_side_work();
    /// Set (note_side_work) when work other than the transports' may wait for poll(): a
    /// deferred completion, a pending or delivery-watched endpoint, a control backlog, a
    /// driven rendezvous, busy one-sided operations, a close, an endpoint to delete, the
    /// connection manager. Cleared by poll() only once none is left: poll() tests this one
    /// word instead of each of them.
    bool side_work_ = false;
    /// Arm the transports alone (wait() arms them without making progress() disarm).
    Status arm_interfaces();
    void disarm_interfaces();
    proto::TagMatcher matcher_;
    proto::eager::EagerReceiver eager_{this};  // eager receive half (src/protocols/eager/)
    RequestPool pool_;
    Endpoint* endpoints_ = nullptr;  // intrusive list of every endpoint
    std::vector<Endpoint*> pending_eps_;
    std::vector<Endpoint*> pending_scratch_;
    std::vector<Endpoint*> delivery_eps_;  // endpoints with sends awaiting delivery
    std::vector<Endpoint*> delivery_scratch_;
    unsigned check_deliveries();
    /// A flush close in closing_ can complete at the next progress (its endpoint is idle or
    /// failed); one that waits for its requests waits for events, which wake a blocked wait.
    bool closing_ready() const;
    std::deque<std::pair<Request*, Status>> deferred_;
    struct ControlMessage {
        tl::AmSource to;
        tl::AmId id;
        std::vector<uint8_t> bytes;
    };
    std::deque<ControlMessage> control_backlog_;
    std::vector<Request*> closing_;
    std::vector<Endpoint*> dead_eps_;  // closed, deleted when no call can be inside them
    int progress_depth_ = 0;
    void reap_endpoints();
    size_t pio_granted_ = 0;
    size_t pio_max_eps_ = 16;
    size_t pio_reserved_ = 4;
    std::unique_ptr<ConnManager> conn_;  // null until a listener or sockaddr endpoint exists
    common::AuthKey auth_key_;           // SWY_AUTH_KEY or set_auth_key(); handed to tcp and verbs
    // Protocol tables of the endpoints (they hold shared pointers to the sets they use).
    EndpointTableCache endpoint_tables_;
};

}  // namespace swy::core

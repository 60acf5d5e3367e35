// Request: one non-blocking operation. Requests come from a per-worker pool and are never
// returned to the system allocator while the worker lives, so a stale id from the wire can
// be checked (index + generation) instead of trusted.
#pragma once

#include <switchyard/am.h>
#include <switchyard/switchyard.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "common/status.h"
#include "core/handle.h"
#include "datatype/data_view.h"
#include "protocols/tag/matcher.h"
#include "transports/transport.h"

namespace swy::core {

class Endpoint;
class Worker;
struct UnexpectedDesc;

/// kRma: a one-sided operation (protocols/rma/): only rma::Engine acts on replies naming it.
enum class RequestKind : uint8_t { kSend, kRecv, kClose, kRma };

/// A peer as the transport vouches for it: the interface and its sender key
/// (tl::Interface::sender_key). Everything a peer sends is checked against the PeerRef of
/// the lane it arrived on, never against what the message says.
struct PeerRef {
    uint16_t iface = 0;
    uint64_t key = 0;  ///< 0: nobody
    bool operator==(const PeerRef&) const = default;
};

/// Intrusive list hook for endpoint queues (pending sends, in-flight operations).
struct RequestLink {
    struct Request* prev = nullptr;
    struct Request* next = nullptr;
};

/// The worker's own record of a request that lives in the caller's memory
/// (SWY_REQ_PARAM_FIELD_REQUEST). The application's handle names this slot, never the
/// caller's memory: the slot stays with the worker, so a freed or stale handle is checked
/// against worker memory whatever the caller has done with its own since. The wire id's index
/// (with kExternalIndex set) names it too.
struct ExternalSlot {
    struct Request* request = nullptr;  ///< the live request; null while the slot is free
    uint32_t index = 0;                 ///< the request's index (kExternalIndex set)
    uint32_t last_generation = 0;       ///< the wire generation of its last use
    uint16_t handle_generation = 0;     ///< as Request::handle_generation, kept across uses
};

/// Handles of requests in caller memory have this bit set (an ExternalSlot is 8-aligned).
inline constexpr uintptr_t kExternalHandleBit = 1;

struct Request : proto::PostedReceive {
    RequestKind kind = RequestKind::kSend;
    Status status = Status::kInProgress;
    bool completed = false;
    bool user_owned = false;  ///< handed to the application (it will call free)
    bool user_freed = false;
    /// Every byte from kRequestHotBytes to kRequestClearedBytes still holds its default: the
    /// next RequestPool::reset() clears only the hot part. Set only by the eager receive's
    /// call-free completion (EagerReceiver::on_only) of a receive Worker::try_post_receive
    /// posted (posted_alone): neither path writes a field past the hot part, and nothing
    /// else touches a receive while it is posted but taken off the matcher first.
    bool cold_clean = false;
    /// Posted by Worker::try_post_receive (hot fields only, so far).
    bool posted_alone = false;
    uint32_t flags = 0;  ///< swy_request_flags
    swy_send_cb_t send_cb = nullptr;
    swy_recv_cb_t recv_cb = nullptr;
    void* user_data = nullptr;
    /// Non-contiguous data (an iov or generic datatype), packed and unpacked through this view
    /// fragment by fragment by any protocol; null for contiguous data (send_buffer /
    /// recv_buffer). With a view, cpu_buffer is false and the buffers are null: every direct
    /// path (memcpy, PIO, zero-copy, tcp placement) declines, and the staged paths go through
    /// the view (Endpoint::send_payload, Worker::copy_in). Pooled with the request (put()).
    dt::DataView* view = nullptr;
    /// Non-null when this request lives in the caller's memory (RequestPool::get_external):
    /// its slot holds the handle generation, and put() hands the memory back.
    ExternalSlot* external = nullptr;

    // ---- receive state (hot: a receive's fast path writes only the fields up to here) ----
    uint8_t* recv_buffer = nullptr;
    size_t capacity = 0;
    size_t received = 0;
    swy_tag_recv_info_t info{};
    bool matched = false;
    bool truncated = false;
    bool copy_failed = false;  ///< a memory-type copy into the buffer failed

    // ---- send state (cold from here: see cold_clean) ----
    Endpoint* ep = nullptr;
    const uint8_t* send_buffer = nullptr;
    size_t length = 0;
    size_t offset = 0;  ///< bytes handed to the lane so far
    uint64_t send_tag = 0;
    uint32_t message_id = 0;
    uint8_t proto = 0;  ///< proto::ProtoId chosen at send time
    /// The running protocol's own stage enum (protocols/protocol.h; 0: not started).
    uint8_t stage = 0;
    /// The stage as the running protocol's enum @p E (its own `enum class : uint8_t`).
    template <typename E>
    E stage_as() const {
        return static_cast<E>(stage);
    }
    template <typename E>
    void set_stage(E s) {
        stage = static_cast<uint8_t>(s);
    }
    template <typename E>
    bool in_stage(E s) const {
        return stage == static_cast<uint8_t>(s);
    }
    uint8_t memtype = 1;  ///< mem::MemType of the user buffer (send or receive)
    /// The CPU may load/store the user buffer directly, as contiguous bytes (false for device
    /// memory and for non-contiguous data: see view).
    bool cpu_buffer = true;
    bool local_done = false;  ///< every byte handed over (buffer reusable)
    bool remote_done = true;  ///< ack / ATS received (sync and rendezvous)
    int queue = 0;            ///< which endpoint list it is on (0 none, 1 pending, 2 in flight)
    /// Waiting in flight for its lane to confirm delivery (LaneAttr::confirms_delivery):
    /// the lane's accepted_bytes() once the last byte was handed over; 0: not waiting.
    uint64_t delivery_mark = 0;
    RequestLink link;

    // ---- active-message send (src/protocols/am/) ----
    bool am = false;                ///< an active message: Endpoint::push hands it to am::start
    uint16_t am_id = 0;             ///< the handler's id at the peer
    uint16_t am_header_length = 0;  ///< user header bytes at the front of am_bytes
    /// The user header is in am_bytes (below, with what a reuse keeps).

    // ---- rendezvous state (both sides; the stage is in `stage`, src/protocols/rndv/) ----
    uint64_t peer_request = 0;    ///< the other side's request id
    uint64_t remote_address = 0;  ///< peer buffer (get: sender's, put: receiver's)
    uint64_t remote_key = 0;      ///< its zero-copy key (RDMA rkey; CMA: unused, the lane's pid)
    PeerRef peer;                 ///< receiver: who sent the RTS (controls must come from it)
    size_t rndv_length = 0;       ///< bytes to move (clamped to the receive buffer)
    size_t rndv_done = 0;         ///< bytes moved so far
    Status rndv_status = Status::kOk;  ///< status the peer told us (truncation)
    size_t rndv_offset = 0;            ///< start of our part in the message (split transfers)
    size_t split_offset = 0;           ///< receiver: where the sender's pushed part starts
    Status fin_status = Status::kOk;   ///< what our FIN says (sender) or the peer's said
    tl::AmSource source{};             ///< where the RTS came from (receiver side)

    // ---- kept across reuses of the slot: RequestPool::reset() clears every field above ----
    // ---- this point with one memset and sets these itself (keep them last) ----
    /// The generation the application's handle carries (core/handle.h). Changes when the
    /// application frees the request, so that handle is refused from then on, however the
    /// slot is used next; kept across reuses of the slot (reset() leaves it).
    uint16_t handle_generation = 0;
    uint32_t index = 0;       ///< slot in the pool
    uint32_t generation = 0;  ///< random, new on every reuse (wire ids are not guessable)
    Worker* worker = nullptr;
    /// The active message's user header (copied at the call), then the data when it was not
    /// contiguous and was packed (eager only). Keeps its capacity across reuses of the
    /// request: no allocation once a worker has sent a few.
    std::vector<uint8_t> am_bytes;

    /// Nothing more to do at completion than two stores: no datatype view to finish, on no
    /// endpoint list, no callback, not freed. Worker::complete()'s inline case, and the eager
    /// receive's call-free one (EagerReceiver::on_only).
    bool completes_by_itself() const {
        return view == nullptr && queue == 0 && recv_cb == nullptr && send_cb == nullptr &&
               !user_freed;
    }

    /// Final status of a receive whose data all arrived: a failed memory-type copy or the
    /// generic datatype's unpack error, else truncation, else kOk.
    Status receive_status() const {
        if (__builtin_expect(copy_failed, 0)) {
            return view != nullptr && view->error() != Status::kOk ? view->error()
                                                                   : Status::kIoError;
        }
        return truncated ? Status::kMessageTruncated : Status::kOk;
    }

    /// The application's handle for this request (core/handle.h).
    swy_request_h handle() const {
        if (__builtin_expect(external != nullptr, 0)) {
            return reinterpret_cast<swy_request_h>(
                handle::make(external, external->handle_generation) | kExternalHandleBit);
        }
        return reinterpret_cast<swy_request_h>(handle::make(this, handle_generation));
    }

    /// Wire id: generation (a random nonce) in the high half, index in the low half.
    uint64_t wire_id() const { return (uint64_t{generation} << 32) | index; }
};

// The bytes RequestPool::reset() clears: every field before handle_generation. offsetof on
// Request (not standard layout: it derives from PostedReceive and has members of its own) is
// conditionally supported; GCC and Clang give the plain offset for a class without virtual
// bases, which is what this needs.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
inline constexpr size_t kRequestClearedBytes = offsetof(Request, handle_generation);
/// The hot part of those: every field a receive posted and completed on the fast path writes
/// (Request::cold_clean), whole 16-byte stores.
inline constexpr size_t kRequestHotBytes = offsetof(Request, ep);
#pragma GCC diagnostic pop
static_assert(kRequestHotBytes % 16 == 0 && kRequestHotBytes < kRequestClearedBytes);
/// Whether RequestPool::reset() checks that a cold_clean request's cold part is clean
/// (sanitizer builds: a full clear every time, compared with what was there).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kCheckColdClean = true;
#else
inline constexpr bool kCheckColdClean = false;
#endif

class RequestPool {
public:
    RequestPool() = default;
    RequestPool(const RequestPool&) = delete;
    RequestPool& operator=(const RequestPool&) = delete;

    /// A blank request (every field its default) for @p worker, with a new generation.
    /// Inline: every operation that needs a request takes one here.
    Request* get(Worker* worker) {
        if (__builtin_expect(free_.empty(), 0)) add_chunk();
        Request* r = free_.back();
        free_.pop_back();
        reset(r);
        r->generation = next_generation(r->generation);
        r->worker = worker;
        ++in_use_;
        return r;
    }
    /// get() when it needs no call: a request on the free list whose AM buffer is small, and
    /// nonces left in the batch; nullptr otherwise (then get()). For a caller's fast path
    /// that must stay a leaf function (Worker::try_post_receive).
    Request* try_get(Worker* worker) {
        if (__builtin_expect(free_.empty() || nonces_left_ < 2, 0)) return nullptr;
        Request* r = free_.back();
        if (__builtin_expect(r->am_bytes.capacity() > 4 * SWY_AM_MAX_HEADER, 0)) return nullptr;
        free_.pop_back();
        reset(r);
        // As next_generation(), from the nonces in hand: a nonce equal to the last one is
        // skipped while there are others, and changed when none is left (2^-64 odds).
        uint32_t g = nonces_[--nonces_left_];
        while (__builtin_expect(g == r->generation, 0) && nonces_left_ != 0)
            g = nonces_[--nonces_left_];
        r->generation = g != r->generation ? g : ~g;
        r->worker = worker;
        ++in_use_;
        return r;
    }
    /// A request built in the caller's @p memory (sizeof(Request) bytes, aligned; checked by
    /// the API layer), with a slot of ours for its handle and wire id. put() destroys it and
    /// hands the memory back.
    Request* get_external(Worker* worker, void* memory);
    /// Back to the pool (a request in caller memory: its slot, and the memory to the caller).
    /// Inline: every request that was made comes back here.
    /// The common case (no view, pool memory, room on the free list) needs no call: the
    /// callers (swy_request_free, completions) then stay leaf functions that save no
    /// registers; the rest is put_slow(), out of line.
    void put(Request* r) {
        if (__builtin_expect(
                r->view != nullptr || r->external != nullptr || free_.size() == free_.capacity(),
                0)) {
            return put_slow(r);
        }
        recycle(r);
    }
    /// Wire ids of requests in caller memory have this bit in their index.
    static constexpr uint32_t kExternalIndex = 1u << 31;
    /// A view for @p r's non-contiguous data (r->view; initialize it), recycled by put().
    dt::DataView* attach_view(Request* r) {
        if (views_free_.empty()) {
            views_.push_back(std::make_unique<dt::DataView>());
            views_free_.push_back(views_.back().get());
        }
        r->view = views_free_.back();
        views_free_.pop_back();
        return r->view;
    }
    /// The live request with this wire id, or nullptr (stale, forged or already completed).
    Request* find(uint64_t wire_id) const;
    size_t in_use() const { return in_use_; }
    /// Call @p f on every request now taken from the pool (not on the free list), in slot
    /// order. For teardown: walks every slot. The set is taken before the walk: a request
    /// that @p f (or a callback it runs) puts back is still visited, as a completed one.
    template <typename F>
    void for_each_in_use(F&& f) {
        std::vector<bool> free_slot(chunks_.size() * kChunk, false);
        for (const Request* r : free_)
            free_slot[r->index] = true;
        std::vector<Request*> external;
        for (const auto& chunk : external_chunks_) {
            for (size_t i = 0; i < kChunk; ++i)
                if (chunk[i].request != nullptr) external.push_back(chunk[i].request);
        }
        for (size_t i = 0; i < free_slot.size(); ++i) {
            if (free_slot[i]) continue;
            Request* r = &chunks_[i / kChunk][i % kChunk];
            f(r);
        }
        // A request in caller memory that f (or a callback) released is gone: visit only those
        // still in their slot.
        for (Request* r : external) {
            const ExternalSlot* slot = &external_chunks_[(r->index & ~kExternalIndex) / kChunk]
                                                        [(r->index & ~kExternalIndex) % kChunk];
            if (slot->request == r) f(r);
        }
    }

private:
    /// Zero kRequestClearedBytes at @p p in 16-byte stores (inline: a constant-size memset of
    /// this length becomes `rep stos` or a library call, each costlier than the stores).
    template <size_t... I>
    static void clear_hot(unsigned char* p, std::index_sequence<I...>) {
        (std::memset(p + 16 * I, 0, 16), ...);
    }
    /// Zero the cold bytes, kRequestHotBytes to kRequestClearedBytes (as clear_hot()).
    template <size_t... I>
    static void clear_cold(unsigned char* p, std::index_sequence<I...>) {
        (std::memset(p + kRequestHotBytes + 16 * I, 0, 16), ...);
        constexpr size_t kCold = kRequestClearedBytes - kRequestHotBytes;
        if constexpr (kCold % 16 != 0) {
            std::memset(p + kRequestHotBytes + kCold / 16 * 16, 0, kCold % 16);
        }
    }
    /// Another kChunk requests on the free list.
    void add_chunk();
    // One memset over every field up to handle_generation (Request keeps the fields a reuse
    // keeps at its end), then the few defaults that are not zero. Field by field this was ~55
    // stores per request; `*r = Request{}` builds a 300-byte temporary and copies it with
    // string instructions. A new field goes above handle_generation, and a non-zero default
    // is set here too (test/unit/request_reset_test.cpp compares with a newly built Request).
    // The cold part only when the last use may have written it (Request::cold_clean): a
    // latency loop's receive then costs 9 stores here instead of 20.
    static void reset(Request* r) {
        static_assert(sizeof(Request) == 360, "a field was added to Request: see reset()");
        auto* bytes = reinterpret_cast<unsigned char*>(r);
        const bool cold_clean = r->cold_clean;
        clear_hot(bytes, std::make_index_sequence<kRequestHotBytes / 16>{});
        // The defaults that are not zero bits (as the member initialisers say).
        static_assert(static_cast<int>(RequestKind::kSend) == 0 &&
                      static_cast<int>(Status::kOk) == 0);
        r->status = Status::kInProgress;
        // Sanitizer builds (CI) check the promise behind cold_clean: the cold part already
        // holds what a full clear writes, so a fast path that starts writing a cold field fails
        // here instead of handing a stale field to the next use.
        [[maybe_unused]] unsigned char cold[kRequestClearedBytes - kRequestHotBytes];
        if constexpr (kCheckColdClean) std::memcpy(cold, bytes + kRequestHotBytes, sizeof(cold));
        if (__builtin_expect(!cold_clean, 0) || kCheckColdClean) {
            clear_cold(bytes,
                       std::make_index_sequence<(kRequestClearedBytes - kRequestHotBytes) / 16>{});
            r->memtype = 1;
            r->cpu_buffer = true;
            r->remote_done = true;
        }
        if constexpr (kCheckColdClean) {
            if (cold_clean && std::memcmp(cold, bytes + kRequestHotBytes, sizeof(cold)) != 0) {
                std::fprintf(stderr,
                             "switchyard: a request marked cold_clean had a cold field written "
                             "(core/request.h)\n");
                std::abort();
            }
        }
        // Keeps its capacity (no allocation for the next AM), unless a large packed message
        // left it big.
        if (__builtin_expect(r->am_bytes.capacity() > 4 * SWY_AM_MAX_HEADER, 0)) {
            std::vector<uint8_t>().swap(r->am_bytes);
        }
        r->am_bytes.clear();
    }
    /// A random generation for a new use of a request, different from its last one. Inline
    /// (every request takes one): one load from the batch; refill_nonces() once per batch.
    uint32_t next_generation(uint32_t previous) {
        for (;;) {
            if (__builtin_expect(nonces_left_ == 0, 0)) refill_nonces();
            const uint32_t g = nonces_[--nonces_left_];
            if (__builtin_expect(g != previous, 1)) return g;
        }
    }
    void refill_nonces();
    static constexpr size_t kChunk = 256;
    /// Nonces from the kernel's random pool, fetched kNonceBatch at a time: one getrandom()
    /// per kNonceBatch requests instead of one per request.
    static constexpr size_t kNonceBatch = 512;
    uint32_t nonces_[kNonceBatch] = {};
    size_t nonces_left_ = 0;
    uint64_t fallback_state_ = 0;  // only if getrandom fails (never on Linux >= 3.17)
    std::vector<std::unique_ptr<Request[]>> chunks_;
    std::vector<Request*> free_;
    std::vector<std::unique_ptr<ExternalSlot[]>> external_chunks_;  // never move: handles
    std::vector<ExternalSlot*> external_free_;                      // name them
    void put_external(Request* r);
    /// put() of a request with a view or in caller memory, or when the free list must grow.
    [[gnu::noinline]] void put_slow(Request* r) {
        if (r->view != nullptr) release_view(r);
        if (r->external != nullptr) return put_external(r);
        recycle(r);
    }
    /// A pool request back on the free list.
    void recycle(Request* r) {
        r->generation++;  // a late ack for the old use no longer finds it
        r->completed = true;
        r->kind = RequestKind::kClose;
        free_.push_back(r);
        --in_use_;
    }
    size_t in_use_ = 0;
    std::vector<std::unique_ptr<dt::DataView>> views_;  // every view made (few: one per
    std::vector<dt::DataView*> views_free_;             // non-contiguous operation in flight)
    /// put() of a request with a view: its datatype's finish (if not run yet), then recycle.
    void release_view(Request* r);
};

}  // namespace swy::core

// Shared-memory transport: each worker owns one receive segment (memfd, mode 0600, never
// named in /dev/shm) with a multi-producer FIFO every sender may use and a window of
// dedicated single-producer PIO rings handed out to a limited number of senders.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/unique_fd.h"
#include "transports/cma/cma.h"
#include "transports/cma/cma_lane.h"
#include "transports/shm/ring.h"
#include "transports/shm/segment_layout.h"
#include "transports/shm/shm_address.h"
#include "transports/transport.h"

namespace swy::tl::shm {

/// Settings of the shm transport (from the context configuration).
struct ShmConfig {
    SegmentGeometry geometry{256, 8256, 8, 64, 8256};  ///< the SWY_SHM_* defaults
    uint64_t keepalive_ns = 200'000'000;
    /// Binds the receive segment to the receiver's NUMA node (null: leave it to the kernel).
    /// Called once, before the segment's pages are first touched.
    std::function<void(void*, size_t)> place_segment;
    cma::CmaMode cma_mode = cma::CmaMode::kAuto;
    /// How peers' deaths are noticed (SWY_SHM_PEER_WATCH): true: a pidfd per peer in the
    /// interface's epoll set (a blocked wait wakes at once); false ("poll"): no descriptor per
    /// peer, a stat of each peer's segment file every keepalive interval, and one timer that
    /// wakes a blocked wait at that interval while peers are watched.
    bool watch_with_pidfd = true;
    /// Costs every lane reports (the worker fills them from the context's cost figures:
    /// shm_lane_costs(), shm_costs.h).
    LaneCosts costs;
    /// Test hook (SWY_SHM_TEST_DIE_AFTER_CLAIM): the process SIGKILLs itself after claiming
    /// its N-th shared-FIFO cell, before publishing it. 0: off.
    uint32_t test_die_after_claim = 0;
};

/// The attributes of a lane into a segment of geometry @p peer: on a dedicated PIO ring
/// (@p pio) or on the shared FIFO, with @p costs. Zero-copy (CMA, cap::kGetZcopy/kPutZcopy)
/// is the endpoint's to add: it comes from a probe, aimed at the pid of the verified segment. Used by every
/// ShmEndpoint and by swy-info for the tables of lanes it does not open.
LaneAttr lane_attr(const SegmentGeometry& peer, bool pio, const LaneCosts& costs);

/// A peer's segment mapped into this process, shared by every lane to that peer.
struct RemoteSegment {
    uint64_t uid = 0;
    int pid = 0;
    uint8_t* base = nullptr;
    uint64_t size = 0;
    SegmentHeader* header = nullptr;
    uint32_t max_senders = 0;  ///< as validated when mapped (the header is the peer's to change)
    bool failed = false;
    /// The peer's wake-up pipe, opened read-write through /proc/PID/fd: holding a read end
    /// ourselves means a write never raises SIGPIPE, even after the peer died (none: not open).
    /// Opened the first time the peer must be woken (a peer that never sleeps costs no
    /// descriptor); wake_fd_number is its number in the peer, wake_unavailable says we tried.
    common::UniqueFd wake_fd;
    int wake_fd_number = -1;
    bool wake_unavailable = false;
    /// Our sender slots in its table (one per lane we opened), checked for a refusal.
    std::vector<uint16_t> our_slots;
    /// The segment file as the kernel named it when we opened it (device, inode): a live
    /// peer still holds this very file at /proc/PID/fd/<memfd> (see ShmInterface::LazyPeer).
    uint64_t file_dev = 0;
    uint64_t file_ino = 0;
    ~RemoteSegment();
};

class ShmInterface;

/// A lane into a peer's segment: either a dedicated PIO ring or the shared FIFO.
///
/// Attached lazily (issue #18, "nothing per peer until the first message"): connect() maps
/// the peer's segment only for as long as it takes to validate it, claim our sender slot
/// (and PIO ring) and probe CMA, then unmaps it unless another lane keeps it mapped. The
/// lane then points at the interface's placeholder segment, which reads as failed, so the
/// first am_send takes the slow path that already exists for a failed lane; there attach()
/// maps the segment for good, starts watching the peer and announces the PIO ring.
class ShmEndpoint final : public Endpoint {
public:
    /// A lane through slot @p sender_slot of @p remote (mapped now; kept only if @p attach).
    ShmEndpoint(ShmInterface* iface, const std::shared_ptr<RemoteSegment>& remote,
                const ShmAddress& address, uint16_t sender_slot, bool attach);
    ~ShmEndpoint() override;
    const LaneAttr& attr() const override { return attr_; }
    Status am_send(AmId id, const void* hdr, size_t hdr_len, const void* payload,
                   size_t length) override;
    Status am_send_packed(AmId id, const void* hdr, size_t hdr_len, PackFn pack, void* arg,
                          size_t length) override;
    uint64_t remote_uid() const override { return remote_uid_; }
    /// The peer's uid, which ShmInterface::sender_key gives for the lanes it sends us on.
    uint64_t peer_key() const override { return remote_uid_; }
    void disconnect() override;
    /// Move this lane onto dedicated PIO ring @p pio_slot (after announcing it).
    void use_pio_ring(uint32_t pio_slot);
    /// Ring @p pio_slot of the peer's window is ours: the lane's attributes say PIO from now
    /// on, and the ring is announced and used from the first message (attach()).
    void grant_pio_ring(uint32_t pio_slot);
    /// True once the first message mapped the peer's segment for good (or it was mapped
    /// already when the lane was created).
    bool attached() const { return attached_; }
    /// Record the CMA probe result (rendezvous zero-copy to this peer): when it passed, the
    /// lane's zero-copy operations reach the peer's verified pid in @p mode.
    void set_cma(cma::CmaMode mode, bool ok, const std::string& why) {
        // The only pid CMA ever aims at is the one this lane verified (its segment's owner):
        // nothing a peer sends can change it (security issue #12).
        cma_.set(mode, ok ? verified_pid_ : 0);
        attr_.caps = (attr_.caps & ~(cap::kGetZcopy | cap::kPutZcopy)) | cma_.caps();
        attr_.zcopy_reason = ok ? "" : "cma: " + why;
    }
    /// CMA to the peer's verified process, once the probe passed (null before or if not).
    ZcopyLane* zcopy() override { return cma_.pid() > 0 ? &cma_ : nullptr; }
    /// The pid named by the peer's segment header, which was opened through /proc/PID/fd
    /// (when the lane was created; attach() checks it again).
    int verified_pid() const override { return verified_pid_; }
    /// True while the lane may carry messages: not disconnected, and not found unable to
    /// attach (a lane not attached yet still is: its first send attaches it).
    bool usable() const { return !disconnected_ && !attach_failed_; }
    /// True if the lane holds a dedicated PIO ring in the peer's window (granted, maybe not
    /// announced yet).
    bool holds_pio_ring() const { return granted_pio_slot_ != kNoPioSlot; }
    /// The interface is going away before this lane: the lane must not reach back into it.
    void forget_interface() { listed_ = false; }

private:
    /// The slow path of a send on a lane not attached yet: attach it (kOk: send now), or why
    /// not (kNoResource: the peer's FIFO is full, try again; else the peer is gone).
    Status attach();
    /// Point the lane's send state into @p remote's mapping.
    void bind(std::shared_ptr<RemoteSegment> remote);
    /// Give our slot (and PIO ring) in the peer's table back without a message: for a lane
    /// closed before it ever sent one (the peer never heard of it).
    void release_unattached();
    void wake_peer();
    CellHeader* claim(size_t payload, uint64_t* pos);
    /// Where the @p length payload bytes of the record claimed at @p pos go.
    uint8_t* payload_of(CellHeader* cell, uint64_t pos, size_t length) const;
    void publish_record(CellHeader* cell, uint64_t pos);
    void finish(CellHeader* cell, uint64_t pos);
    /// am_send() for everything but its short PIO record (out of line: am_send() stays a
    /// leaf function).
    [[gnu::noinline]] Status am_send_general(AmId id, const void* hdr, size_t hdr_len,
                                             const void* payload, size_t length);
    /// The wake-up of a receiver found armed after a record was published (finish(), and
    /// am_send()'s short record): kOk.
    [[gnu::noinline]] Status wake_if_armed();
    /// am_send()'s short record takes a header and a payload of at most this many bytes each
    /// (copy_bytes() copies them inline).
    static constexpr size_t kShortPart = 16;

    ShmInterface* iface_;
    std::shared_ptr<RemoteSegment> remote_;  // the placeholder (failed) until attached
    ShmAddress address_;                     // where the peer's segment is, for attach()
    uint64_t remote_uid_;
    int verified_pid_;
    SegmentGeometry geometry_;  // the peer's, as validated at creation
    uint16_t sender_slot_;
    uint32_t pio_slot_;
    uint32_t granted_pio_slot_ = kNoPioSlot;  // ours in the peer's window, maybe not yet in use
    bool attached_ = false;
    bool attach_failed_ = false;  // the peer was gone (or not the same) at the first message
    // Mapped by an attach() whose PIO announcement found the FIFO full: the next one sends it.
    std::shared_ptr<RemoteSegment> pending_remote_;
    RingView ring_;
    uint64_t private_head_ = 0;    // PIO ring only
    uint64_t private_offset_ = 0;  // PIO ring: private_head_ % pio_bytes_, without a division
    uint64_t known_consumed_ = 0;  // PIO ring: the receiver's last published position
    uint8_t* pio_base_ = nullptr;  // PIO byte ring in the peer's segment
    uint64_t pio_bytes_ = 0;
    uint64_t pio_key_ = 0;
    std::atomic<uint64_t>* consumed_ = nullptr;
    std::atomic<uint64_t>* claiming_ = nullptr;  // our SenderSlot::claiming in the peer
    uint32_t die_after_claim_ = 0;               // test hook, 0: off
    bool publish_fence_ = true;  // publish with seq_cst (the receiver cannot flush us)
    bool disconnected_ = false;
    bool listed_ = true;  // in the interface's lanes_ (forget_lane() on disconnect)
    LaneAttr attr_;
    cma::CmaLane cma_;
};

class ShmInterface final : public Interface {
public:
    /// Create the receive segment. @p iface_index is this interface's index in the worker.
    static Status open(const ShmConfig& config, uint64_t worker_uid, uint16_t iface_index,
                       AmSink* sink, std::unique_ptr<ShmInterface>* out, std::string* why);
    ~ShmInterface() override;

    const char* name() const override { return "shm"; }
    unsigned progress() override;
    std::vector<uint8_t> address() const override;
    Status connect(uint64_t remote_uid, const uint8_t* section, size_t length, bool want_pio,
                   std::unique_ptr<Endpoint>* out, std::string* why) override;
    Endpoint* reply_endpoint(uint16_t sender) override;
    uint64_t sender_uid(uint16_t sender) const override;
    /// The sender's worker uid: only a process that may open our segment through /proc (and
    /// so could ptrace us anyway) can claim a sender slot.
    uint64_t sender_key(uint16_t sender) const override { return sender_uid(sender); }
    /// The sender's pid once its own segment, opened through /proc/PID/fd, was found to
    /// belong to that pid and uid (mapped on first use); 0 if that failed.
    int sender_pid(uint16_t sender) override;
    int event_fd() const override { return epoll_fd_.get(); }
    bool arm() override;
    void disarm() override;
    /// True if this process registered for expedited global membarrier, so a receiver can
    /// flush our pending stores before it sleeps (see ShmInterface::arm()).
    bool membarrier_registered() const { return membarrier_registered_; }

    /// PIO window of this worker's segment: rings offered and rings still free.
    unsigned pio_window_slots() const { return config_.geometry.pio_slots; }
    unsigned pio_window_free() const;
    const SegmentGeometry& geometry() const { return config_.geometry; }

private:
    friend class ShmEndpoint;
    struct SenderInfo {
        bool known = false;
        uint64_t uid = 0;
        int pid = 0;
        int memfd = -1;
        uint64_t segment_size = 0;
        int wake_fd = -1;
        uint32_t pio_slot = kNoPioSlot;
        int verified_pid = -1;       ///< sender_pid(): -1 not checked yet, 0 failed
        bool reply_refused = false;  ///< its table had no slot for our reply lane
        /// The lane replies to this sender take, once found (map_and_reply_ep): a lookup by
        /// uid per rendezvous ATS was a hash-map probe on every reply. Cleared with the
        /// sender, and by forget_lane() when that lane goes.
        ShmEndpoint* reply = nullptr;
    };
    struct ActiveRing {
        uint8_t* base;
        uint64_t bytes;
        uint64_t key;
        uint64_t tail = 0;
        uint64_t published = 0;
        uint64_t offset = 0;              // tail % bytes: where the next record starts
        std::atomic<uint64_t>* consumed;  // published every quarter ring
        uint32_t pio_slot;
        /// The sender slot that announced the ring (checked against the PIO table then, and
        /// known until released, which kills the ring): every record in it is from this
        /// sender, whatever its header's sender field says.
        uint16_t sender = 0;
        bool dead = false;  // released; erased after the drain loop
    };
    // One cache line: the drain loop indexes them (a size that is not a power of two cost a
    // multiplication per ring and poll).
    static_assert(sizeof(ActiveRing) == 64);
    struct LazyPeer {  // a peer only unattached lanes lead to
        int pid = 0;
        int memfd_number = -1;
        uint64_t file_dev = 0;
        uint64_t file_ino = 0;
        uint32_t lanes = 0;
    };
    struct Watched {  // a remote process we depend on
        int pid = 0;
        int memfd_number = -1;  ///< its segment at /proc/PID/fd/N (poll mode: what we stat)
        uint64_t file_dev = 0;
        uint64_t file_ino = 0;
        common::UniqueFd pidfd;  ///< none: pidfd_open failed, or the process was found dead
        bool failed = false;
        bool reported = false;
    };

    ShmInterface(const ShmConfig& config, uint64_t uid, uint16_t index, AmSink* sink);
    Status create_segment(std::string* why);
    unsigned drain(RingView& ring, uint64_t& tail);
    void dispatch(CellHeader* cell, const RingView& ring, uint64_t pos);
    /// A checked record from @p sender: to the control handler or the sink (shm_progress.cpp;
    /// dispatch() checks a FIFO cell first, drain_private() a private ring's record).
    void deliver(uint16_t sender, uint8_t am_id, const uint8_t* data, uint32_t length);
    void handle_control(uint16_t sender, const uint8_t* data, size_t length);
    bool resolve_sender(uint16_t sender);
    /// Map and validate @p uid's segment. @p keep: remember the mapping (later lanes share
    /// it) and watch the peer; else the mapping lives only as long as *out. A mapping kept
    /// already is returned either way.
    Status map_remote(uint64_t uid, const ShmAddress& a, std::shared_ptr<RemoteSegment>* out,
                      std::string* why, bool keep = true);
    /// The mapping of @p uid kept by some lane, or null.
    std::shared_ptr<RemoteSegment> kept_remote(uint64_t uid) const;
    // ---- peers with lanes that are not attached yet (no mapping, no descriptor) ----
    /// A lane to @p remote was created unattached / attached or closed.
    void add_lazy_lane(const RemoteSegment& remote, int memfd_number);
    void drop_lazy_lane(uint64_t uid);
    /// The periodic check of those peers: each still holds the very segment file we
    /// validated (one stat of /proc/PID/fd/N each, no descriptor held); one that does not
    /// has died (or its pid was reused) and is failed like a watched peer.
    void check_lazy_peers();
    /// Watch @p uid (process @p pid, segment at /proc/PID/fd/@p memfd_number, file
    /// @p dev / @p ino if known, else 0 and found here) for its death, once.
    void watch(uint64_t uid, int pid, int memfd_number, uint64_t dev, uint64_t ino);
    /// True while process @p pid still holds segment file @p dev / @p ino at fd @p memfd (one
    /// stat, no descriptor kept); false once it is gone (or no longer ours to reach).
    static bool segment_file_held(int pid, int memfd, uint64_t dev, uint64_t ino);
    void check_peers();
    void report_pending_failures();
    std::vector<uint64_t> pending_failures_;  // found dead outside progress; reported there
    // Peers we cannot answer (no reply lane): reported from progress as failures with this
    // status, once each (refused_by_ remembers both directions).
    std::vector<std::pair<uint64_t, Status>> pending_refusals_;
    // A ring was released or announced: progress() erases the dead and activates the new at
    // its end, so active_rings_ never changes while a drain holds one of its entries.
    bool rings_changed_ = false;
    void fail_remote(uint64_t uid);
    void release_sender(uint16_t sender);
    /// Erase the released rings and activate the announced ones (rings_changed_).
    void activate_and_erase_rings();
    Status map_and_reply_ep(uint16_t sender, Endpoint** out);
    // ---- every live lane of ours, by peer: replies take one we already have ----
    /// A lane to @p uid was created (connect()).
    void remember_lane(uint64_t uid, ShmEndpoint* lane);
    /// @p lane is disconnected or destroyed: no reply may take it any more.
    void forget_lane(ShmEndpoint* lane);
    /// A usable lane of ours to process @p pid with worker uid @p uid, one with a dedicated PIO
    /// ring first; null if none.
    ShmEndpoint* lane_to(uint64_t uid, int pid) const;
    SenderSlot* sender_table() const {
        return reinterpret_cast<SenderSlot*>(base_ + config_.geometry.sender_table_offset());
    }
    bool sender_known(uint16_t sender) const {
        return sender < senders_.size() && senders_[sender].known;
    }
    /// Claim a free slot in @p remote's sender table (kSenderIndexLimit: the table is full).
    static uint32_t claim_sender_slot(RemoteSegment& remote);
    // ---- a FIFO cell claimed by a process that died before publishing it ----
    /// If the cell at the FIFO tail is claimed but unpublished and only dead processes
    /// claimed that position, hand it back and move on. True if a cell was skipped.
    bool skip_dead_claim();
    /// The periodic check: skip_dead_claim() once the tail has not moved for an interval.
    void check_stuck_fifo();
    bool process_alive(uint64_t uid, int pid);
    // ---- reply lanes the peer's table had no room for ----
    /// Tell @p sender (through its slot) and our own endpoints to it that no reply lane could
    /// be opened: requests waiting for replies fail with @p why instead of waiting forever.
    void refuse_sender(uint16_t sender, Status why);
    /// Fail the lanes a peer refused to answer on (SenderSlot::refused), once each.
    void check_refusals();
    void test_claim_hook();
    /// Write one byte to @p remote's wake-up pipe, opening it first if need be.
    void wake(RemoteSegment& remote);

    ShmConfig config_;
    uint64_t uid_;
    uint16_t index_;
    AmSink* sink_;
    common::UniqueFd memfd_;
    uint8_t* base_ = nullptr;
    SegmentHeader* header_ = nullptr;
    RingView fifo_;
    uint64_t fifo_tail_ = 0;
    std::vector<ActiveRing> active_rings_;
    // Announced (kPioOpen) during this progress call; active from its end (rings_changed_). A
    // record can announce a ring from inside a ring being drained: pushing into active_rings_
    // there would move the entry the drain holds.
    std::vector<ActiveRing> opened_rings_;
    std::vector<SenderInfo> senders_;  // grows with the highest slot heard from
    // FIFO positions claimed by senders that died (remembered before their slots are freed
    // for others): a cell at one of them that stays unpublished is skipped.
    std::vector<uint64_t> orphan_claims_;
    uint64_t stuck_tail_ = UINT64_MAX;  // the tail the last periodic check found blocked
    uint32_t test_claims_ = 0;
    std::vector<uint64_t> refused_by_;  // peers whose refusal was already reported
    std::unordered_map<uint64_t, std::weak_ptr<RemoteSegment>> remotes_;
    std::unordered_map<uint64_t, std::unique_ptr<ShmEndpoint>> reply_eps_;
    // Every lane of ours not yet disconnected, the application's and the reply lanes, by the
    // peer's uid. Replies (rendezvous ATS, RTR, FIN) take one of these, a PIO one first,
    // rather than a reply lane of their own: with a reply lane each peer took two sender
    // slots in the other's table, and every reply went through the contended shared FIFO
    // even when the application's lane to that peer holds a PIO ring (issue 17).
    std::unordered_map<uint64_t, std::vector<ShmEndpoint*>> lanes_;
    std::unordered_map<uint64_t, Watched> watched_;
    std::unordered_map<uint64_t, LazyPeer> lazy_peers_;
    // What unattached lanes point at: reads as failed, so their first send takes the slow path.
    std::shared_ptr<RemoteSegment> unattached_;
    // Peers wake us by writing to this pipe; they open it through /proc/PID/fd, so exactly
    // the processes that may map our segment can wake us (an abstract socket named after our
    // uid, as before, told every local user the uid and took datagrams from anyone).
    common::UniqueFd wake_pipe_[2];  // [0] read end (published), [1] write end
    common::UniqueFd epoll_fd_;
    // Poll mode (ShmConfig::watch_with_pidfd false): one periodic timer in the epoll set, so a
    // blocked wait still runs the liveness check; started with the first watched peer.
    common::UniqueFd liveness_timer_;
    bool liveness_timer_running_ = false;
    uint32_t progress_calls_ = 0;
    uint64_t cma_probe_value_ = 0;  // our uid, read by peers to check that CMA works
    bool membarrier_registered_ = false;
    bool membarrier_works_ = false;
    /// Inline into progress() (its only caller besides a dying peer's drain): the call and
    /// its saved registers were a fifth of the cost of receiving a small message's record.
    [[gnu::always_inline]] inline unsigned drain_private(ActiveRing& ring);
    uint64_t last_check_ns_ = 0;
};

/// Internal control messages of the shm transport (never reach the worker).
inline constexpr AmId kShmControlAm = 0xFF;
enum class ShmControl : uint8_t { kPioOpen = 1, kDisconnect = 2, kNoop = 3 };

}  // namespace swy::tl::shm

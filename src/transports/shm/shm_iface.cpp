#include "transports/shm/shm_iface.h"

#include <fcntl.h>
#include <linux/membarrier.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/clock.h"
#include "common/log.h"
#include "common/small_copy.h"
#include "transports/shm/prefault.h"
#include "transports/shm/segment_bounds.h"
#include "transports/shm/shm_address.h"

namespace swy::tl::shm {

using common::log_printf;
using common::LogLevel;

namespace {

/// The geometry a peer's segment header announces (what its lanes are made of). The header
/// stays writable by the peer: after map_remote() validated it, lanes take max_senders from
/// the validated copy (RemoteSegment::max_senders).
SegmentGeometry geometry_of(const SegmentHeader& h) {
    return {h.fifo_cells,  h.fifo_cell_size, h.pio_slots,
            h.pio_credits, h.pio_cell_size,  h.max_senders};
}

}  // namespace

LaneAttr lane_attr(const SegmentGeometry& peer, bool pio, const LaneCosts& costs) {
    LaneAttr a;
    a.transport = "shm";
    a.rndv = true;
    a.costs = costs;
    a.caps = cap::kAmBcopy;
    if (pio) {
        a.pio = true;
        a.caps |= cap::kAmShort;
        // Credits in the smallest record (one cache line): how many small messages fit.
        a.credits = static_cast<uint32_t>(peer.pio_ring_bytes() / kCacheLine);
        a.credits_shared = false;  // a private ring: plain stores, no CAS
        // The cell sizes count messages, not headers: the record's header comes on top, the
        // FIFO's lives in the position's slot (ring.h).
        a.max_message = peer.pio_cell_size;
    } else {
        a.pio = false;
        a.credits = peer.fifo_cells;
        a.credits_shared = true;  // a CAS on the shared head per message
        a.max_message = peer.fifo_cell_size;
    }
    return a;
}

RemoteSegment::~RemoteSegment() {
    if (base != nullptr) munmap(base, size);
}

// ------------------------------------------------------------------------------------------
// Endpoint
// ------------------------------------------------------------------------------------------

ShmEndpoint::ShmEndpoint(ShmInterface* iface, const std::shared_ptr<RemoteSegment>& remote,
                         const ShmAddress& address, uint16_t sender_slot, bool attach)
    : iface_(iface),
      remote_(iface->unattached_),
      address_(address),
      remote_uid_(remote->uid),
      verified_pid_(remote->pid),
      geometry_(geometry_of(*remote->header)),
      sender_slot_(sender_slot),
      pio_slot_(kNoPioSlot) {
    geometry_.max_senders = remote->max_senders;
    die_after_claim_ = iface_->config_.test_die_after_claim;
    attr_ = lane_attr(geometry_, false, iface_->config_.costs);
    if (attach) {
        bind(remote);
        attached_ = true;
    }
}

void ShmEndpoint::bind(std::shared_ptr<RemoteSegment> remote) {
    remote_ = std::move(remote);
    SegmentHeader* h = remote_->header;
    ring_ = RingView(remote_->base + h->fifo_offset, h->fifo_cells, h->fifo_cell_size);
    claiming_ = &reinterpret_cast<SenderSlot*>(remote_->base + h->sender_table_offset)[sender_slot_]
                     .claiming;
    remote_->our_slots.push_back(sender_slot_);
}

void ShmEndpoint::grant_pio_ring(uint32_t pio_slot) {
    granted_pio_slot_ = pio_slot;
    const LaneAttr pio = lane_attr(geometry_, true, iface_->config_.costs);
    attr_.pio = pio.pio;
    attr_.caps = (attr_.caps & (cap::kGetZcopy | cap::kPutZcopy)) | pio.caps;
    attr_.credits = pio.credits;
    attr_.credits_shared = pio.credits_shared;
    attr_.max_message = pio.max_message;
}

void ShmEndpoint::use_pio_ring(uint32_t pio_slot) {
    SegmentHeader* h = remote_->header;
    pio_slot_ = pio_slot;
    pio_bytes_ = geometry_.pio_ring_bytes();
    pio_base_ = remote_->base + h->pio_rings_offset + uint64_t{pio_slot} * pio_bytes_;
    private_head_ = 0;
    private_offset_ = 0;
    known_consumed_ = 0;
    auto* slots = reinterpret_cast<PioSlot*>(remote_->base + h->pio_table_offset);
    consumed_ = &slots[pio_slot].consumed;
    pio_key_ = slots[pio_slot].key;
    // Its first pass would otherwise fault on every page (see prefault.h).
    prefault(pio_base_, pio_bytes_, PrefaultAccess::kWrite);
    // Release stores are enough when the receiver can flush our store buffer itself before
    // it sleeps (membarrier); otherwise publish with a full fence.
    publish_fence_ = h->publish_fence != 0 || !iface_->membarrier_registered();
    grant_pio_ring(pio_slot);
}

Status ShmEndpoint::attach() {
    if (attached_ || disconnected_ || attach_failed_) return Status::kConnectionReset;
    auto w = iface_->watched_.find(remote_uid_);
    if (w != iface_->watched_.end() && w->second.failed) {
        attach_failed_ = true;  // found dead while we were idle (check_lazy_peers)
        return Status::kConnectionReset;
    }
    std::shared_ptr<RemoteSegment> remote = std::move(pending_remote_);
    std::string why;
    Status s = Status::kOk;
    if (remote == nullptr) s = iface_->map_remote(remote_uid_, address_, &remote, &why, true);
    if (s == Status::kOk) {
        // The segment must still be the one this lane was created on, with our slot in it.
        const SegmentHeader* h = remote->header;
        const SenderSlot& slot = reinterpret_cast<const SenderSlot*>(
            remote->base + h->sender_table_offset)[sender_slot_];
        SegmentGeometry g = geometry_of(*h);
        g.max_senders = remote->max_senders;
        if (remote->pid != verified_pid_ || remote->failed ||
            std::memcmp(&g, &geometry_, sizeof(g)) != 0 ||
            slot.state.load(std::memory_order_acquire) != kSlotActive || slot.pid != getpid() ||
            slot.uid != iface_->uid_) {
            s = Status::kConnectionReset;
            why = "shm: the peer's segment no longer holds this lane's sender slot";
        }
    }
    if (s != Status::kOk) {
        attach_failed_ = true;
        log_printf(LogLevel::kInfo, "shm: lane to peer %016llx cannot start: %s",
                   static_cast<unsigned long long>(remote_uid_), why.c_str());
        // A peer that is gone is failed as a watched one would be (once, from progress).
        iface_->pending_failures_.push_back(remote_uid_);
        return Status::kConnectionReset;
    }
    bind(remote);
    if (granted_pio_slot_ != kNoPioSlot) {
        // Announce the ring through the shared FIFO first, as connect() does for a lane
        // attached at once; if the FIFO is full, the send waits like any other.
        uint8_t msg[5];
        msg[0] = static_cast<uint8_t>(ShmControl::kPioOpen);
        std::memcpy(msg + 1, &granted_pio_slot_, 4);
        const Status sent = am_send(kShmControlAm, msg, sizeof(msg), nullptr, 0);
        if (sent != Status::kOk) {
            std::erase(remote_->our_slots, sender_slot_);
            pending_remote_ = std::move(remote_);
            remote_ = iface_->unattached_;
            return sent;
        }
        use_pio_ring(granted_pio_slot_);
    }
    attached_ = true;
    iface_->drop_lazy_lane(remote_uid_);
    return Status::kOk;
}

void ShmEndpoint::release_unattached() {
    std::shared_ptr<RemoteSegment> remote = std::move(pending_remote_);
    std::string why;
    if (remote == nullptr && !attach_failed_ &&
        iface_->map_remote(remote_uid_, address_, &remote, &why, false) != Status::kOk) {
        remote.reset();  // gone: nothing of ours is left to give back
    }
    if (remote != nullptr && !remote->failed && remote->pid == verified_pid_) {
        // The peer never saw a message on this slot, so nothing of its state refers to it.
        const SegmentHeader* h = remote->header;
        auto* slots = reinterpret_cast<SenderSlot*>(remote->base + h->sender_table_offset);
        SenderSlot& slot = slots[sender_slot_];
        if (slot.state.load(std::memory_order_acquire) == kSlotActive && slot.pid == getpid() &&
            slot.uid == iface_->uid_) {
            if (granted_pio_slot_ != kNoPioSlot && granted_pio_slot_ < h->pio_slots) {
                auto* pio = reinterpret_cast<PioSlot*>(remote->base + h->pio_table_offset);
                if (pio[granted_pio_slot_].sender_slot == sender_slot_) {
                    pio[granted_pio_slot_].consumed.store(0, std::memory_order_relaxed);
                    pio[granted_pio_slot_].state.store(kSlotFree, std::memory_order_release);
                }
            }
            slot.state.store(kSlotFree, std::memory_order_release);
        }
    }
    iface_->drop_lazy_lane(remote_uid_);
}

ShmEndpoint::~ShmEndpoint() { disconnect(); }

void ShmEndpoint::wake_peer() { iface_->wake(*remote_); }

inline CellHeader* ShmEndpoint::claim(size_t payload, uint64_t* pos) {
    if (pio_slot_ == kNoPioSlot) {
        CellHeader* c = ring_.claim_shared(remote_->header->fifo_head, pos, *claiming_);
        if (__builtin_expect(die_after_claim_ != 0, 0) && c != nullptr) iface_->test_claim_hook();
        return c;
    }
    const uint64_t need = pio_record_bytes(payload);
    const uint64_t offset = private_offset_;
    const uint64_t skip = offset + need > pio_bytes_ ? pio_bytes_ - offset : 0;
    if (private_head_ + skip + need - known_consumed_ > pio_bytes_) {
        known_consumed_ = consumed_->load(std::memory_order_acquire);
        if (private_head_ + skip + need - known_consumed_ > pio_bytes_) return nullptr;
    }
    if (skip != 0) {  // pad to the end of the ring, the record starts over at offset 0
        auto* pad = reinterpret_cast<CellHeader*>(pio_base_ + offset);
        pad->am_id = kPioSkipAm;
        pad->length = 0;
        publish_record(pad, private_head_);
        private_head_ += skip;
    }
    *pos = private_head_;
    private_head_ += need;
    const uint64_t start = skip != 0 ? 0 : offset;
    private_offset_ = pio_offset_after(start, need, pio_bytes_);
    return reinterpret_cast<CellHeader*>(pio_base_ + start);
}

inline uint8_t* ShmEndpoint::payload_of(CellHeader* cell, uint64_t pos, size_t length) const {
    // A PIO record's payload follows its header; a FIFO cell's is inline or in its cell.
    if (pio_slot_ != kNoPioSlot) return reinterpret_cast<uint8_t*>(cell + 1);
    return ring_.payload(pos, length);
}

inline void ShmEndpoint::publish_record(CellHeader* cell, uint64_t pos) {
    const uint64_t seq = pos ^ pio_key_;
    // Two literal orders: a run-time order argument compiles to the strongest one (xchg).
    if (__builtin_expect(publish_fence_, 0)) {
        cell->seq.store(seq, std::memory_order_seq_cst);
    } else {
        cell->seq.store(seq, std::memory_order_release);
    }
}

inline void ShmEndpoint::finish(CellHeader* cell, uint64_t pos) {
    if (pio_slot_ != kNoPioSlot) {
        publish_record(cell, pos);
    } else {
        RingView::publish(cell, pos);
    }
    // Only a receiver armed right now is woken (wake_if_armed()).
    if (__builtin_expect(remote_->header->armed.load(std::memory_order_seq_cst) != 0, 0)) {
        (void)wake_if_armed();
    }
}

Status ShmEndpoint::am_send_packed(AmId id, const void* hdr, size_t hdr_len, PackFn pack, void* arg,
                                   size_t length) {
    if (__builtin_expect(remote_->failed || disconnected_, 0)) {
        const Status s = attach();  // not attached yet, or failed (then it says so)
        if (s != Status::kOk) return s;
    }
    uint64_t pos;
    CellHeader* cell = claim(hdr_len + length, &pos);
    if (cell == nullptr) return Status::kNoResource;
    cell->flags = 0;
    cell->sender = sender_slot_;
    uint8_t* data = payload_of(cell, pos, hdr_len + length);
    std::memcpy(data, hdr, hdr_len);
    Status s = pack(arg, data + hdr_len, length);
    if (s != Status::kOk) {
        // The cell is claimed and must be published: turn it into a no-op for the receiver.
        // One byte travels right after the header (inline in a FIFO slot, as in a record).
        cell->am_id = kShmControlAm;
        cell->length = 1;
        reinterpret_cast<uint8_t*>(cell + 1)[0] = static_cast<uint8_t>(ShmControl::kNoop);
    } else {
        cell->am_id = id;
        cell->length = static_cast<uint32_t>(hdr_len + length);
    }
    finish(cell, pos);
    return s;
}

Status ShmEndpoint::am_send(AmId id, const void* hdr, size_t hdr_len, const void* payload,
                            size_t length) {
    // The short record of a small message on an attached PIO ring, with room known and no
    // fence to publish with: stores only, no call (a leaf that saves no registers; about 40
    // instructions less per 8-byte message than through claim(), callgrind, shm loopback).
    // Anything else (FIFO lane, not attached, ring end or room to ask for, a receiver to
    // wake, longer parts) goes to am_send_general(), a tail call.
    if (__builtin_expect(pio_slot_ != kNoPioSlot && !publish_fence_ && !disconnected_ &&
                             hdr_len <= kShortPart && length <= kShortPart,
                         1) &&
        __builtin_expect(!remote_->failed, 1)) {
        const uint64_t need = pio_record_bytes(hdr_len + length);
        const uint64_t head = private_head_;
        const uint64_t offset = private_offset_;
        if (__builtin_expect(
                offset + need <= pio_bytes_ && head + need - known_consumed_ <= pio_bytes_, 1)) {
            auto* cell = reinterpret_cast<CellHeader*>(pio_base_ + offset);
            cell->am_id = id;
            cell->flags = 0;
            cell->sender = sender_slot_;
            cell->length = static_cast<uint32_t>(hdr_len + length);
            auto* data = reinterpret_cast<uint8_t*>(cell + 1);
            common::copy_bytes(data, hdr, hdr_len);
            common::copy_bytes(data + hdr_len, payload, length);
            private_head_ = head + need;
            private_offset_ = pio_offset_after(offset, need, pio_bytes_);
            cell->seq.store(head ^ pio_key_, std::memory_order_release);
            if (__builtin_expect(remote_->header->armed.load(std::memory_order_seq_cst) != 0, 0)) {
                return wake_if_armed();
            }
            return Status::kOk;
        }
    }
    return am_send_general(id, hdr, hdr_len, payload, length);
}

Status ShmEndpoint::wake_if_armed() {
    // By one sender only: taking the flag makes the others (and our next sends) skip the
    // system call until the receiver arms again.
    std::atomic<uint32_t>& armed = remote_->header->armed;
    if (armed.exchange(0, std::memory_order_seq_cst) != 0) wake_peer();
    return Status::kOk;
}

Status ShmEndpoint::am_send_general(AmId id, const void* hdr, size_t hdr_len, const void* payload,
                                    size_t length) {
    if (__builtin_expect(remote_->failed || disconnected_, 0)) {
        const Status s = attach();  // not attached yet, or failed (then it says so)
        if (s != Status::kOk) return s;
    }
    uint64_t pos;
    CellHeader* cell = claim(hdr_len + length, &pos);
    if (cell == nullptr) return Status::kNoResource;
    cell->am_id = id;
    cell->flags = 0;
    cell->sender = sender_slot_;
    cell->length = static_cast<uint32_t>(hdr_len + length);
    uint8_t* data = payload_of(cell, pos, hdr_len + length);
    common::copy_bytes(data, hdr, hdr_len);
    common::copy_bytes(data + hdr_len, payload, length);
    finish(cell, pos);
    return Status::kOk;
}

void ShmEndpoint::disconnect() {
    if (disconnected_) return;
    if (listed_) iface_->forget_lane(this);
    listed_ = false;
    if (!attached_) {
        release_unattached();
        disconnected_ = true;
        return;
    }
    if (!remote_->failed) {
        // Ordered after every message of this lane, so the receiver frees the slots only
        // once it has consumed them. If the lane is full we give up after a short while:
        // the receiver reclaims the slots when this process exits.
        uint8_t msg = static_cast<uint8_t>(ShmControl::kDisconnect);
        for (int attempt = 0; attempt < 100000; ++attempt) {
            if (am_send(kShmControlAm, &msg, 1, nullptr, 0) != Status::kNoResource) break;
        }
    }
    disconnected_ = true;
    std::erase(remote_->our_slots, sender_slot_);
}

// ------------------------------------------------------------------------------------------
// Interface: set-up
// ------------------------------------------------------------------------------------------

ShmInterface::ShmInterface(const ShmConfig& config, uint64_t uid, uint16_t index, AmSink* sink)
    : config_(config), uid_(uid), index_(index), sink_(sink), cma_probe_value_(uid) {
    unattached_ = std::make_shared<RemoteSegment>();
    unattached_->failed = true;
}

Status ShmInterface::open(const ShmConfig& config, uint64_t worker_uid, uint16_t iface_index,
                          AmSink* sink, std::unique_ptr<ShmInterface>* out, std::string* why) {
    if (!geometry_within_bounds(config.geometry, why)) return Status::kInvalidParam;
    std::unique_ptr<ShmInterface> iface(new ShmInterface(config, worker_uid, iface_index, sink));
    Status s = iface->create_segment(why);
    if (s != Status::kOk) return s;
    *out = std::move(iface);
    return Status::kOk;
}

Status ShmInterface::create_segment(std::string* why) {
    const SegmentGeometry& g = config_.geometry;
    // memfd: mode 0600, no name in /dev/shm, so nothing is left behind even after SIGKILL.
    memfd_.reset(static_cast<int>(syscall(SYS_memfd_create, "swy-shm", MFD_CLOEXEC)));
    if (!memfd_) {
        *why = std::string("shm: memfd_create: ") + std::strerror(errno);
        return Status::kIoError;
    }
    fchmod(memfd_.get(), 0600);
    const uint64_t size = g.total_size();
    if (ftruncate(memfd_.get(), static_cast<off_t>(size)) != 0) {
        *why = std::string("shm: ftruncate: ") + std::strerror(errno);
        return Status::kIoError;
    }
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd_.get(), 0);
    if (p == MAP_FAILED) {
        *why = std::string("shm: mmap: ") + std::strerror(errno);
        return Status::kIoError;
    }
    base_ = static_cast<uint8_t*>(p);
    // Before the first touch: the receiver polls these cells, so they belong on its node.
    if (config_.place_segment) config_.place_segment(base_, size);
    header_ = new (base_) SegmentHeader{};
    header_->magic = kSegmentMagic;
    header_->version = kSegmentVersion;
    header_->owner_pid = getpid();
    header_->owner_uid = uid_;
    header_->total_size = size;
    header_->fifo_cells = g.fifo_cells;
    header_->fifo_cell_size = g.fifo_cell_size;
    header_->pio_slots = g.pio_slots;
    header_->pio_credits = g.pio_credits;
    header_->pio_cell_size = g.pio_cell_size;
    header_->max_senders = g.max_senders;
    header_->sender_table_offset = g.sender_table_offset();
    header_->pio_table_offset = g.pio_table_offset();
    header_->fifo_offset = g.fifo_offset();
    header_->pio_rings_offset = g.pio_rings_offset();
    // Senders may publish with plain release stores only if we can flush their store
    // buffers before we sleep: expedited global membarrier, which they register for.
    membarrier_registered_ =
        syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
    membarrier_works_ = membarrier_registered_ &&
                        syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) == 0;
    header_->publish_fence = membarrier_works_ ? 0 : 1;
    // The sender table is left as the memfd made it: zero bytes are a free slot, and its
    // pages are committed only as senders claim slots (the table may be megabytes).
    auto* pio = reinterpret_cast<PioSlot*>(base_ + g.pio_table_offset());
    for (uint32_t i = 0; i < g.pio_slots; ++i)
        new (&pio[i]) PioSlot{};
    fifo_ = RingView(base_ + g.fifo_offset(), g.fifo_cells, g.fifo_cell_size);
    fifo_.initialise();
    // PIO rings need no initialisation: a record is recognised by (position XOR its owner's
    // key), which zero-filled (or stale) bytes do not match. Their pages stay untouched until
    // a sender writes there.

    header_->cma_probe_address = reinterpret_cast<uint64_t>(&cma_probe_value_);
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC) != 0) {
        *why = std::string("shm: wake-up pipe: ") + std::strerror(errno);
        return Status::kIoError;
    }
    wake_pipe_[0].reset(pipe_fds[0]);
    wake_pipe_[1].reset(pipe_fds[1]);
    epoll_fd_.reset(epoll_create1(EPOLL_CLOEXEC));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = wake_pipe_[0].get();
    if (!epoll_fd_ || epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, wake_pipe_[0].get(), &ev) != 0) {
        *why = std::string("shm: epoll: ") + std::strerror(errno);
        return Status::kIoError;
    }
    if (!config_.watch_with_pidfd) {
        liveness_timer_.reset(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
        epoll_event tev{};
        tev.events = EPOLLIN;
        tev.data.fd = liveness_timer_.get();
        if (!liveness_timer_ ||
            epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, liveness_timer_.get(), &tev) != 0) {
            *why = std::string("shm: liveness timer: ") + std::strerror(errno);
            return Status::kIoError;
        }
    }
    last_check_ns_ = common::monotonic_coarse_ns();
    return Status::kOk;
}

ShmInterface::~ShmInterface() {
    reply_eps_.clear();
    // Lanes the application still holds must not reach back into us when they close.
    for (auto& [uid, lanes] : lanes_) {
        for (ShmEndpoint* lane : lanes)
            lane->forget_interface();
    }
    watched_.clear();  // closes the pidfds
    if (base_ != nullptr) munmap(base_, config_.geometry.total_size());
    memfd_.reset();
    wake_pipe_[0].reset();
    wake_pipe_[1].reset();
    epoll_fd_.reset();
}

std::vector<uint8_t> ShmInterface::address() const {
    ShmAddress a{};
    a.pid = getpid();
    a.memfd = memfd_.get();
    a.segment_size = config_.geometry.total_size();
    a.wake_fd = wake_pipe_[0].get();
    return encode_shm_address(a);
}

unsigned ShmInterface::pio_window_free() const {
    auto* pio = reinterpret_cast<PioSlot*>(base_ + config_.geometry.pio_table_offset());
    unsigned n = 0;
    for (uint32_t i = 0; i < config_.geometry.pio_slots; ++i) {
        n += pio[i].state.load(std::memory_order_acquire) == kSlotFree;
    }
    return n;
}

// ------------------------------------------------------------------------------------------
// Interface: connecting to peers
// ------------------------------------------------------------------------------------------

std::shared_ptr<RemoteSegment> ShmInterface::kept_remote(uint64_t uid) const {
    auto it = remotes_.find(uid);
    return it != remotes_.end() ? it->second.lock() : nullptr;
}

Status ShmInterface::map_remote(uint64_t uid, const ShmAddress& a,
                                std::shared_ptr<RemoteSegment>* out, std::string* why, bool keep) {
    const int pid = a.pid;
    const uint64_t size = a.segment_size;
    auto it = remotes_.find(uid);
    if (it != remotes_.end()) {
        if (auto existing = it->second.lock()) {
            *out = existing;
            return existing->failed ? Status::kConnectionReset : Status::kOk;
        }
    }
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, a.memfd);
    common::UniqueFd fd(::open(path, O_RDWR | O_CLOEXEC));
    if (!fd) {
        *why = std::string("shm: cannot open peer segment ") + path + ": " + std::strerror(errno);
        return errno == ENOENT || errno == ESRCH ? Status::kConnectionReset : Status::kUnreachable;
    }
    struct stat st {};
    if (fstat(fd.get(), &st) != 0 || static_cast<uint64_t>(st.st_size) < size ||
        size < sizeof(SegmentHeader)) {
        *why = "shm: peer segment is smaller than its address says";
        return Status::kMalformed;
    }
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    fd.reset();  // the mapping keeps the memory alive
    if (p == MAP_FAILED) {
        *why = std::string("shm: mmap of peer segment: ") + std::strerror(errno);
        return Status::kIoError;
    }
    auto remote = std::make_shared<RemoteSegment>();
    remote->uid = uid;
    remote->pid = pid;
    remote->base = static_cast<uint8_t*>(p);
    remote->size = size;
    remote->header = reinterpret_cast<SegmentHeader*>(p);
    remote->file_dev = st.st_dev;
    remote->file_ino = st.st_ino;
    const SegmentHeader* h = remote->header;
    const SegmentGeometry g = geometry_of(*h);
    // The geometry first, within the bounds our own configuration must keep (segment_bounds.h:
    // powers of two, cell sizes, sender count, ring and segment sizes), so that no product of
    // a hostile header's fields below can wrap and pass the size checks.
    std::string bad_geometry;
    // The kernel vouches that the file is one of process `pid`'s; its header must name that
    // very pid and uid, so a sender slot or an address cannot borrow another process.
    if (!geometry_within_bounds(g, &bad_geometry) || h->magic != kSegmentMagic ||
        h->version != kSegmentVersion || h->owner_uid != uid || h->owner_pid != pid ||
        h->total_size != size || g.total_size() != size || h->fifo_offset != g.fifo_offset() ||
        h->pio_rings_offset != g.pio_rings_offset() ||
        h->sender_table_offset != g.sender_table_offset() ||
        h->pio_table_offset != g.pio_table_offset()) {
        *why = "shm: peer segment header failed validation";
        return Status::kMalformed;
    }
    remote->max_senders = g.max_senders;
    remote->wake_fd_number = a.wake_fd;  // opened on the first wake-up (wake())
    if (keep) {
        remotes_[uid] = remote;
        watch(uid, pid, a.memfd, remote->file_dev, remote->file_ino);
    }
    *out = std::move(remote);
    return Status::kOk;
}

void ShmInterface::wake(RemoteSegment& remote) {
    if (!remote.wake_fd && !remote.wake_unavailable) {
        char path[64];
        std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", remote.pid, remote.wake_fd_number);
        remote.wake_fd.reset(::open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC));
        struct stat st {};
        // Alive after the open: the pid was not reused under us, the pipe is the peer's.
        if (!remote.wake_fd || fstat(remote.wake_fd.get(), &st) != 0 || !S_ISFIFO(st.st_mode) ||
            !process_alive(remote.uid, remote.pid)) {
            remote.wake_fd.reset();
            remote.wake_unavailable = true;
            log_printf(LogLevel::kWarn,
                       "shm: the wake-up pipe %s of peer %016llx is not a pipe we may open: it "
                       "cannot be woken from a blocking wait",
                       path, static_cast<unsigned long long>(remote.uid));
            return;
        }
    }
    char byte = 1;
    // Non-blocking and best effort: a full pipe already means a pending wake-up.
    if (remote.wake_fd) (void)!write(remote.wake_fd.get(), &byte, 1);
}

uint32_t ShmInterface::claim_sender_slot(RemoteSegment& remote) {
    SegmentHeader* h = remote.header;
    auto* slots = reinterpret_cast<SenderSlot*>(remote.base + h->sender_table_offset);
    const uint32_t n = remote.max_senders;
    // From the slot after the last one claimed: slots are taken in order and those freed
    // behind are found after the wrap, so creating k endpoints costs k CAS, not k^2/2.
    const uint32_t start = h->sender_hint.load(std::memory_order_relaxed) % n;
    for (uint32_t k = 0; k < n; ++k) {
        const uint32_t i = (start + k) % n;
        uint32_t expected = kSlotFree;
        if (slots[i].state.load(std::memory_order_relaxed) == kSlotFree &&
            slots[i].state.compare_exchange_strong(expected, kSlotClaimed)) {
            h->sender_hint.store(i + 1, std::memory_order_relaxed);
            uint32_t high = h->sender_high.load(std::memory_order_relaxed);
            while (high < i + 1 &&
                   !h->sender_high.compare_exchange_weak(high, i + 1, std::memory_order_release)) {}
            return i;
        }
    }
    return kSenderIndexLimit;
}

Status ShmInterface::connect(uint64_t remote_uid, const uint8_t* section, size_t length,
                             bool want_pio, std::unique_ptr<Endpoint>* out, std::string* why) {
    ShmAddress a{};
    if (!decode_shm_address(section, length, &a)) {
        *why = "shm: malformed address section";
        return Status::kMalformed;
    }
    // Mapped for as long as this call needs it, unless a lane keeps it mapped already: then
    // this lane is attached at once (it costs nothing more per peer).
    std::shared_ptr<RemoteSegment> remote;
    Status s = map_remote(remote_uid, a, &remote, why, false);
    if (s != Status::kOk) return s;
    const bool attach = kept_remote(remote_uid) == remote;

    // Register as a sender in the peer's table.
    auto* slots = reinterpret_cast<SenderSlot*>(remote->base + remote->header->sender_table_offset);
    const uint32_t slot = claim_sender_slot(*remote);
    if (slot == kSenderIndexLimit) {
        *why = "shm: the peer's sender table is full (" + std::to_string(remote->max_senders) +
               " slots, its SWY_SHM_MAX_SENDERS; each endpoint takes one, and each peer that "
               "answers it one in the other direction)";
        return Status::kNoResource;
    }
    uint32_t pio_slot = kNoPioSlot;
    if (want_pio) {
        auto* pio = reinterpret_cast<PioSlot*>(remote->base + remote->header->pio_table_offset);
        for (uint32_t i = 0; i < remote->header->pio_slots; ++i) {
            uint32_t expected = kSlotFree;
            if (pio[i].state.compare_exchange_strong(expected, kSlotClaimed)) {
                pio[i].sender_slot = slot;
                uint64_t key = 0;
                while (key == 0) {
                    if (getrandom(&key, sizeof(key), 0) != sizeof(key))
                        key = uid_ ^ (uint64_t{i} << 56) ^ 1;
                }
                pio[i].key = key;
                pio[i].consumed.store(0, std::memory_order_relaxed);
                pio[i].state.store(kSlotActive, std::memory_order_release);
                pio_slot = i;
                break;
            }
        }
    }
    slots[slot].pid = getpid();
    slots[slot].memfd = memfd_.get();
    slots[slot].uid = uid_;
    slots[slot].segment_size = config_.geometry.total_size();
    slots[slot].wake_fd = wake_pipe_[0].get();
    slots[slot].pio_slot = pio_slot;
    slots[slot].refused.store(0, std::memory_order_relaxed);
    slots[slot].claiming.store(kNoClaim, std::memory_order_relaxed);
    slots[slot].state.store(kSlotActive, std::memory_order_release);

    auto ep = std::make_unique<ShmEndpoint>(this, remote, a, static_cast<uint16_t>(slot), attach);
    if (pio_slot != kNoPioSlot && !attach) {
        ep->grant_pio_ring(pio_slot);  // announced with the first message
    } else if (pio_slot != kNoPioSlot) {
        // Announce the ring through the shared FIFO; the receiver polls it from then on, and
        // every later message of this lane goes through the ring, so order is kept.
        uint8_t msg[5];
        msg[0] = static_cast<uint8_t>(ShmControl::kPioOpen);
        std::memcpy(msg + 1, &pio_slot, 4);
        Status sent = Status::kNoResource;
        for (int attempt = 0; attempt < 1000000 && sent == Status::kNoResource; ++attempt) {
            sent = ep->am_send(kShmControlAm, msg, sizeof(msg), nullptr, 0);
        }
        if (sent != Status::kOk) {
            *why = "shm: peer FIFO stayed full while opening a PIO ring";
            return sent == Status::kNoResource ? Status::kTimedOut : sent;
        }
        ep->use_pio_ring(pio_slot);
    }
    if (const uint64_t probe = remote->header->cma_probe_address; probe != 0) {
        std::string cma_why;
        bool ok = cma::probe(config_.cma_mode, remote->pid, probe, &remote_uid, sizeof(remote_uid),
                             &cma_why) == Status::kOk;
        ep->set_cma(config_.cma_mode, ok, cma_why);
    }
    if (!attach) add_lazy_lane(*remote, a.memfd);
    remember_lane(remote_uid, ep.get());
    *out = std::move(ep);
    return Status::kOk;
}

}  // namespace swy::tl::shm

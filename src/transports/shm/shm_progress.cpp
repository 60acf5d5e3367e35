// Receive side of the shm transport: draining rings, control messages, peer liveness.
#include <linux/membarrier.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "common/clock.h"
#include "common/log.h"
#include "transports/shm/prefault.h"
#include "transports/shm/shm_address.h"
#include "transports/shm/shm_iface.h"

namespace swy::tl::shm {

using common::log_printf;
using common::LogLevel;

namespace {

constexpr unsigned kDrainBatch = 32;      // bound the work of one progress call per ring
constexpr uint32_t kLivenessEvery = 256;  // progress calls between clock reads

}  // namespace

unsigned ShmInterface::drain(RingView& ring, uint64_t& tail) {
    unsigned n = 0;
    while (n < kDrainBatch) {
        CellHeader* cell = ring.peek(tail);
        if (cell == nullptr) break;
        dispatch(cell, ring, tail);
        ring.release(cell, tail);
        ++tail;
        ++n;
    }
    return n;
}

// Inline: every record of a private ring and every FIFO cell goes through it.
inline void ShmInterface::deliver(uint16_t sender, uint8_t am_id, const uint8_t* data,
                                  uint32_t length) {
    if (__builtin_expect(am_id != kShmControlAm, 1)) {
        sink_->on_am(am_id, AmSource{index_, sender}, data, length);
    } else {
        handle_control(sender, data, length);
    }
}

inline unsigned ShmInterface::drain_private(ActiveRing& r) {
    if (r.dead) return 0;
    unsigned n = 0;
    while (n < kDrainBatch) {
        const uint64_t tail = r.tail;
        const uint64_t offset = r.offset;  // tail % bytes, kept without a division
        auto* cell = reinterpret_cast<CellHeader*>(r.base + offset);
        if (cell->seq.load(std::memory_order_acquire) != (tail ^ r.key)) break;
        const uint8_t am_id = cell->am_id;
        if (am_id == kPioSkipAm) {
            r.tail = tail + (r.bytes - offset);
            r.offset = 0;
        } else {
            // A record must end inside the ring and fit a PIO cell; a producer that says
            // otherwise is broken.
            // Read once: the peer may rewrite the header while we look at it.
            const uint32_t length = cell->length;
            if (length > r.bytes - offset - sizeof(CellHeader) ||
                length > config_.geometry.pio_cell_size) {
                log_printf(LogLevel::kError, "shm: PIO record overruns its ring; ring dropped");
                r.tail = UINT64_MAX / 2;  // never matches again
                break;
            }
            const uint64_t record = pio_record_bytes(length);
            // Past the record before its handler runs (fewer values live across the call);
            // the producer learns of it only through `consumed`, published after the
            // handler. The record ends inside the ring (checked above).
            r.tail = tail + record;
            r.offset = pio_offset_after(offset, record, r.bytes);
            // dispatch() without its checks: the length was checked above, and the sender is
            // the ring's own (known while the ring lives).
            deliver(r.sender, am_id, reinterpret_cast<const uint8_t*>(cell + 1), length);
            if (r.dead) return n + 1;  // its sender disconnected: the ring is gone
            ++n;
        }
        // Records are not written back: the producer counts free bytes (PioSlot::consumed).
        if (r.tail - r.published >= r.bytes / 4) {
            r.published = r.tail;
            r.consumed->store(r.tail, std::memory_order_release);
        }
    }
    // Found empty with consumption not yet published: publish it, so a producer waiting for
    // room (small rings, large records) is never left waiting on an idle receiver.
    if (n < kDrainBatch && r.tail != r.published) {
        r.published = r.tail;
        r.consumed->store(r.tail, std::memory_order_release);
    }
    return n;
}

unsigned ShmInterface::progress() {
    // An empty FIFO (the common case once PIO rings carry the small messages) costs a load
    // and a compare here, not a call.
    unsigned n = fifo_.peek(fifo_tail_) != nullptr ? drain(fifo_, fifo_tail_) : 0;
    for (size_t i = 0; i < active_rings_.size(); ++i)
        n += drain_private(active_rings_[i]);
    if (__builtin_expect(rings_changed_, 0)) activate_and_erase_rings();
    if (__builtin_expect(!pending_failures_.empty(), 0)) report_pending_failures();
    if (__builtin_expect(++progress_calls_ % kLivenessEvery == 0, 0)) {
        uint64_t now = common::monotonic_coarse_ns();
        if (now - last_check_ns_ >= config_.keepalive_ns) {
            last_check_ns_ = now;
            check_peers();
        }
    }
    return n;
}

void ShmInterface::activate_and_erase_rings() {
    std::erase_if(active_rings_, [](const ActiveRing& r) { return r.dead; });
    for (const ActiveRing& r : opened_rings_) {
        if (!r.dead) active_rings_.push_back(r);
    }
    opened_rings_.clear();
    rings_changed_ = false;
}

void ShmInterface::dispatch(CellHeader* cell, const RingView& ring, uint64_t pos) {
    const uint16_t sender = cell->sender;
    const uint32_t length = cell->length;
    const uint8_t am_id = cell->am_id;
    // Cells come from other processes: never trust a length or an index.
    if (sender >= config_.geometry.max_senders || length > ring.payload_capacity()) {
        log_printf(LogLevel::kError, "shm: dropping malformed cell (sender %u, length %u)", sender,
                   length);
        return;
    }
    const uint8_t* data = ring.payload(pos, length);  // length checked: inside the ring
    if (!sender_known(sender) && !resolve_sender(sender)) {
        log_printf(LogLevel::kError, "shm: dropping cell from unregistered sender slot %u", sender);
        return;
    }
    deliver(sender, am_id, data, length);
}

bool ShmInterface::resolve_sender(uint16_t sender) {
    auto* slots = reinterpret_cast<SenderSlot*>(base_ + config_.geometry.sender_table_offset());
    SenderSlot& slot = slots[sender];
    if (slot.state.load(std::memory_order_acquire) != kSlotActive) return false;
    if (sender >= senders_.size()) senders_.resize(size_t{sender} + 1);
    SenderInfo& info = senders_[sender];
    info.known = true;
    info.uid = slot.uid;
    info.pid = slot.pid;
    info.memfd = slot.memfd;
    info.segment_size = slot.segment_size;
    info.wake_fd = slot.wake_fd;
    info.pio_slot = slot.pio_slot;
    watch(info.uid, info.pid, info.memfd, 0, 0);
    return true;
}

void ShmInterface::handle_control(uint16_t sender, const uint8_t* data, size_t length) {
    if (length < 1) return;
    switch (static_cast<ShmControl>(data[0])) {
        case ShmControl::kPioOpen: {
            uint32_t pio_slot = 0;
            if (length != 5) return;
            std::memcpy(&pio_slot, data + 1, 4);
            const SegmentGeometry& g = config_.geometry;
            auto* pio = reinterpret_cast<PioSlot*>(base_ + g.pio_table_offset());
            // The slot must be one this sender claimed to the end: an unclaimed slot's zero
            // fields would otherwise match sender 0 and start a reader on an idle ring.
            if (pio_slot >= g.pio_slots ||
                pio[pio_slot].state.load(std::memory_order_acquire) != kSlotActive ||
                pio[pio_slot].sender_slot != sender) {
                log_printf(LogLevel::kError, "shm: bad PIO ring %u announced by sender %u",
                           pio_slot, sender);
                return;
            }
            // Once per ring: a second announcement would start a second reader at the ring's
            // first lap (its records delivered twice) and grow the list without bound.
            const auto live = [pio_slot](const ActiveRing& a) {
                return !a.dead && a.pio_slot == pio_slot;
            };
            if (std::any_of(active_rings_.begin(), active_rings_.end(), live) ||
                std::any_of(opened_rings_.begin(), opened_rings_.end(), live)) {
                log_printf(LogLevel::kError, "shm: PIO ring %u announced again by sender %u",
                           pio_slot, sender);
                return;
            }
            ActiveRing r{.base = base_ + g.pio_rings_offset() + pio_slot * g.pio_ring_bytes(),
                         .bytes = g.pio_ring_bytes(),
                         .key = pio[pio_slot].key,
                         .consumed = &pio[pio_slot].consumed,
                         .pio_slot = pio_slot,
                         .sender = sender};
            // The ring's first pass would otherwise fault on every page (see prefault.h).
            prefault(r.base, r.bytes, PrefaultAccess::kRead);
            opened_rings_.push_back(r);
            rings_changed_ = true;
            return;
        }
        case ShmControl::kDisconnect:
            release_sender(sender);
            sink_->on_sender_released(AmSource{index_, sender});
            return;
        case ShmControl::kNoop: return;
    }
}

void ShmInterface::release_sender(uint16_t sender) {
    const SegmentGeometry& g = config_.geometry;
    auto* slots = reinterpret_cast<SenderSlot*>(base_ + g.sender_table_offset());
    auto* pio = reinterpret_cast<PioSlot*>(base_ + g.pio_table_offset());
    for (std::vector<ActiveRing>* rings : {&active_rings_, &opened_rings_}) {
        for (ActiveRing& r : *rings) {
            if (!r.dead && pio[r.pio_slot].sender_slot == sender) {
                // The next owner picks a new key: what this one left in the ring is stale for
                // it. The ring may be the one being drained right now: mark it, erase it later.
                pio[r.pio_slot].consumed.store(0, std::memory_order_relaxed);
                pio[r.pio_slot].state.store(kSlotFree, std::memory_order_release);
                r.dead = true;
                rings_changed_ = true;
            }
        }
    }
    senders_[sender] = SenderInfo{};
    slots[sender].state.store(kSlotFree, std::memory_order_release);
}

Status ShmInterface::map_and_reply_ep(uint16_t sender, Endpoint** out) {
    *out = nullptr;
    if (!sender_known(sender)) return Status::kNotFound;
    SenderInfo& info = senders_[sender];
    if (info.reply != nullptr) {
        *out = info.reply;
        return Status::kOk;
    }
    // A lane we already have to that very process (the application's, or a reply lane opened
    // for another of its senders): no second slot in its table, and its PIO ring if it has
    // one. The pid must be the one the lane verified when it mapped the peer's segment, so a
    // slot that merely claims a uid is answered only through a lane of its own (below).
    if (ShmEndpoint* lane = lane_to(info.uid, info.pid); lane != nullptr) {
        info.reply = lane;
        *out = lane;
        return Status::kOk;
    }
    if (info.reply_refused) return Status::kNoResource;
    ShmAddress a{info.pid, info.memfd, info.segment_size, info.wake_fd, 0};
    std::vector<uint8_t> section = encode_shm_address(a);
    std::unique_ptr<Endpoint> ep;
    std::string why;
    // Held across connect(), so that a refusal can still wake the sender through it.
    std::shared_ptr<RemoteSegment> remote;
    std::string map_why;
    (void)map_remote(info.uid, a, &remote, &map_why);
    Status s = connect(info.uid, section.data(), section.size(), false, &ep, &why);
    if (s != Status::kOk) {
        log_printf(LogLevel::kWarn, "shm: no reply lane to sender %u: %s", sender, why.c_str());
        if (s == Status::kNoResource) {
            // Its table is full: what waits for our replies must fail, not wait forever.
            refuse_sender(sender, s);
            if (remote != nullptr) wake(*remote);
        }
        return s;
    }
    auto* raw = static_cast<ShmEndpoint*>(ep.release());
    reply_eps_[info.uid].reset(raw);
    senders_[sender].reply = raw;  // connect() may have grown senders_: index again
    *out = raw;
    return Status::kOk;
}

void ShmInterface::remember_lane(uint64_t uid, ShmEndpoint* lane) { lanes_[uid].push_back(lane); }

void ShmInterface::forget_lane(ShmEndpoint* lane) {
    auto it = lanes_.find(lane->remote_uid());
    if (it != lanes_.end()) {
        std::erase(it->second, lane);
        if (it->second.empty()) lanes_.erase(it);
    }
    for (SenderInfo& info : senders_) {
        if (info.reply == lane) info.reply = nullptr;
    }
}

ShmEndpoint* ShmInterface::lane_to(uint64_t uid, int pid) const {
    auto it = lanes_.find(uid);
    if (it == lanes_.end()) return nullptr;
    ShmEndpoint* found = nullptr;
    for (ShmEndpoint* lane : it->second) {
        if (!lane->usable() || lane->verified_pid() != pid) continue;
        if (lane->holds_pio_ring()) return lane;
        if (found == nullptr) found = lane;
    }
    return found;
}

Endpoint* ShmInterface::reply_endpoint(uint16_t sender) {
    Endpoint* ep = nullptr;
    (void)map_and_reply_ep(sender, &ep);
    return ep;
}

uint64_t ShmInterface::sender_uid(uint16_t sender) const {
    return sender_known(sender) ? senders_[sender].uid : 0;
}

int ShmInterface::sender_pid(uint16_t sender) {
    if (!sender_known(sender)) return 0;
    SenderInfo& info = senders_[sender];
    if (info.verified_pid < 0) {
        // What the slot says is the sender's claim; mapping its segment checks it.
        ShmAddress a{info.pid, info.memfd, info.segment_size, info.wake_fd, 0};
        std::shared_ptr<RemoteSegment> remote;
        std::string why;
        if (map_remote(info.uid, a, &remote, &why) == Status::kOk) {
            info.verified_pid = remote->pid;
        } else {
            info.verified_pid = 0;
            log_printf(LogLevel::kWarn, "shm: sender %u is not who it says: %s", sender,
                       why.c_str());
        }
    }
    return info.verified_pid;
}

// ------------------------------------------------------------------------------------------
// Liveness: every remote we map or that writes to us is watched through a pidfd.
// ------------------------------------------------------------------------------------------

void ShmInterface::watch(uint64_t uid, int pid, int memfd_number, uint64_t dev, uint64_t ino) {
    if (watched_.count(uid) != 0) return;
    Watched w;
    w.pid = pid;
    w.memfd_number = memfd_number;
    if (config_.watch_with_pidfd) {
        w.pidfd.reset(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
        if (!w.pidfd) {
            // ESRCH: it is already gone.
            w.failed = errno == ESRCH;
        } else {
            epoll_event ev{};
            ev.events = EPOLLIN;
            ev.data.fd = w.pidfd.get();
            epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, w.pidfd.get(), &ev);
        }
    } else {
        if (dev == 0 && ino == 0) {  // a sender: its file as the kernel names it now
            char path[64];
            std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, memfd_number);
            struct stat st {};
            if (stat(path, &st) == 0) {
                dev = st.st_dev;
                ino = st.st_ino;
            } else {
                w.failed = errno == ENOENT || errno == ESRCH;
            }
        }
        w.file_dev = dev;
        w.file_ino = ino;
        if (!liveness_timer_running_ && liveness_timer_) {
            const auto ns = static_cast<long>(std::max<uint64_t>(config_.keepalive_ns, 1'000'000));
            itimerspec its{};
            its.it_interval.tv_sec = ns / 1'000'000'000;
            its.it_interval.tv_nsec = ns % 1'000'000'000;
            its.it_value = its.it_interval;
            liveness_timer_running_ = timerfd_settime(liveness_timer_.get(), 0, &its, nullptr) == 0;
        }
    }
    const bool dead = w.failed;
    watched_[uid] = std::move(w);
    // Never report from here: watch() runs inside dispatch (a first message from a new
    // sender) or inside connect; progress reports it once no cell is being handled.
    if (dead) pending_failures_.push_back(uid);
}

bool ShmInterface::segment_file_held(int pid, int memfd, uint64_t dev, uint64_t ino) {
    // The kernel's link to the segment file exists exactly as long as the process that
    // created it holds the file open: gone (or a reused pid with other files) means dead. A
    // peer we may no longer reach counts as gone too: nothing of ours could reach it.
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, memfd);
    struct stat st {};
    if (stat(path, &st) == 0)
        return static_cast<uint64_t>(st.st_dev) == dev && static_cast<uint64_t>(st.st_ino) == ino;
    return errno == EINTR || errno == ENOMEM;  // cannot tell now: the next check will
}

void ShmInterface::report_pending_failures() {
    std::vector<uint64_t> uids;
    uids.swap(pending_failures_);
    for (uint64_t uid : uids)
        fail_remote(uid);
    std::vector<std::pair<uint64_t, Status>> refusals;
    refusals.swap(pending_refusals_);
    for (const auto& [uid, why] : refusals) {
        log_printf(LogLevel::kError,
                   "shm: no reply lane between us and peer %016llx (a sender table is full): "
                   "its requests fail with %s",
                   static_cast<unsigned long long>(uid), status_text(why));
        sink_->on_remote_failure(index_, uid, why);
    }
}

void ShmInterface::check_peers() {
    std::vector<uint64_t> dead;
    for (auto& [uid, w] : watched_) {
        if (w.failed) continue;
        if (w.pidfd) {
            pollfd pfd{w.pidfd.get(), POLLIN, 0};
            if (poll(&pfd, 1, 0) > 0) dead.push_back(uid);
        } else if (w.file_ino != 0 &&
                   !segment_file_held(w.pid, w.memfd_number, w.file_dev, w.file_ino)) {
            dead.push_back(uid);
        }
    }
    for (uint64_t uid : dead)
        fail_remote(uid);
    check_lazy_peers();
    check_stuck_fifo();
    check_refusals();
    if (!pending_failures_.empty() || !pending_refusals_.empty()) report_pending_failures();
}

void ShmInterface::fail_remote(uint64_t uid) {
    Watched& w = watched_[uid];
    if (w.pid == 0) {  // never watched: a peer only unattached lanes led to
        auto lazy = lazy_peers_.find(uid);
        if (lazy != lazy_peers_.end()) w.pid = lazy->second.pid;
    }
    if (w.pidfd) {
        epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, w.pidfd.get(), nullptr);
        w.pidfd.reset();
    }
    if (w.reported) return;
    w.failed = true;
    w.reported = true;
    // Drain what it managed to publish before dying, then forget its slots; a FIFO cell it
    // claimed but never published is remembered first (its slot may go to someone else),
    // then skipped so that the other senders' messages behind it flow again.
    drain(fifo_, fifo_tail_);
    for (size_t i = 0; i < active_rings_.size(); ++i)
        drain_private(active_rings_[i]);
    SenderSlot* slots = sender_table();
    for (uint32_t s = 0; s < senders_.size(); ++s) {
        if (senders_[s].known && senders_[s].uid == uid) {
            const uint64_t pos = slots[s].claiming.load(std::memory_order_acquire);
            if (pos != kNoClaim && pos >= fifo_tail_) orphan_claims_.push_back(pos);
            release_sender(static_cast<uint16_t>(s));
        }
    }
    while (skip_dead_claim())
        drain(fifo_, fifo_tail_);
    auto rit = remotes_.find(uid);
    if (rit != remotes_.end()) {
        if (auto remote = rit->second.lock()) remote->failed = true;
    }
    reply_eps_.erase(uid);
    log_printf(LogLevel::kInfo, "shm: peer %016llx (pid %d) is gone",
               static_cast<unsigned long long>(uid), w.pid);
    sink_->on_remote_failure(index_, uid, Status::kConnectionReset);
}

// ------------------------------------------------------------------------------------------
// Peers only unattached lanes lead to: checked without holding anything of theirs
// ------------------------------------------------------------------------------------------

void ShmInterface::add_lazy_lane(const RemoteSegment& remote, int memfd_number) {
    LazyPeer& p = lazy_peers_[remote.uid];
    p.pid = remote.pid;
    p.memfd_number = memfd_number;
    p.file_dev = remote.file_dev;
    p.file_ino = remote.file_ino;
    ++p.lanes;
}

void ShmInterface::drop_lazy_lane(uint64_t uid) {
    auto it = lazy_peers_.find(uid);
    if (it != lazy_peers_.end() && --it->second.lanes == 0) lazy_peers_.erase(it);
}

void ShmInterface::check_lazy_peers() {
    std::vector<uint64_t> dead;
    for (const auto& [uid, p] : lazy_peers_) {
        auto w = watched_.find(uid);
        if (w != watched_.end()) continue;  // watched (check_peers), or failed already
        if (!segment_file_held(p.pid, p.memfd_number, p.file_dev, p.file_ino)) dead.push_back(uid);
    }
    for (uint64_t uid : dead)
        fail_remote(uid);
}

// ------------------------------------------------------------------------------------------
// A FIFO cell claimed by a sender that died before publishing it
// ------------------------------------------------------------------------------------------

bool ShmInterface::process_alive(uint64_t uid, int pid) {
    auto it = watched_.find(uid);
    if (it != watched_.end()) {
        if (it->second.failed) return false;
        if (it->second.pidfd) {
            pollfd pfd{it->second.pidfd.get(), POLLIN, 0};
            return poll(&pfd, 1, 0) <= 0;
        }
        if (it->second.file_ino != 0) {
            return segment_file_held(it->second.pid, it->second.memfd_number, it->second.file_dev,
                                     it->second.file_ino);
        }
    }
    if (pid <= 0) return false;
    common::UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfd) return errno != ESRCH;  // cannot tell: assume alive (the safe side)
    pollfd pfd{pidfd.get(), POLLIN, 0};
    return poll(&pfd, 1, 0) <= 0;
}

bool ShmInterface::skip_dead_claim() {
    const uint64_t tail = fifo_tail_;
    CellHeader* cell = fifo_.cell(tail);
    // Published (drain takes it), or claimed by nobody yet: nothing to judge.
    if (cell->seq.load(std::memory_order_acquire) != tail) return false;
    if (header_->fifo_head.load(std::memory_order_acquire) <= tail) return false;
    // Claimed and unpublished. Its owner stored `claiming = tail` before its CAS and keeps it
    // until after it publishes: if a live sender's word names the cell, wait for it. A dead
    // one naming it may also have lost the CAS to someone, so it must be dead ones only.
    std::erase_if(orphan_claims_, [tail](uint64_t pos) { return pos < tail; });
    bool dead_claimer =
        std::find(orphan_claims_.begin(), orphan_claims_.end(), tail) != orphan_claims_.end();
    std::vector<uint32_t> dead_slots;
    SenderSlot* slots = sender_table();
    const uint32_t high = std::min(header_->sender_high.load(std::memory_order_acquire),
                                   config_.geometry.max_senders);
    for (uint32_t i = 0; i < high; ++i) {
        SenderSlot& slot = slots[i];
        if (slot.state.load(std::memory_order_acquire) != kSlotActive ||
            slot.claiming.load(std::memory_order_acquire) != tail) {
            continue;
        }
        if (process_alive(slot.uid, slot.pid)) return false;
        dead_claimer = true;
        dead_slots.push_back(i);
    }
    // A live owner whose word moved on has published: the cell is no longer ours to skip.
    if (!dead_claimer || cell->seq.load(std::memory_order_acquire) != tail) return false;
    log_printf(LogLevel::kWarn,
               "shm: skipping FIFO cell %llu, claimed by a sender that died before publishing it",
               static_cast<unsigned long long>(tail));
    fifo_.release(cell, tail);
    ++fifo_tail_;
    for (uint32_t i : dead_slots) {
        if (sender_known(static_cast<uint16_t>(i))) {
            pending_failures_.push_back(senders_[i].uid);  // reported from progress
        } else {
            // It died on its first message: nobody here knows it; free its slot.
            slots[i].state.store(kSlotFree, std::memory_order_release);
        }
    }
    return true;
}

void ShmInterface::check_stuck_fifo() {
    if (fifo_.peek(fifo_tail_) != nullptr) {
        stuck_tail_ = UINT64_MAX;
        return;
    }
    // Empty, or blocked: judged only once the tail has not moved for a whole interval, so a
    // sender preempted between claim and publish is simply waited for.
    if (stuck_tail_ != fifo_tail_) {
        stuck_tail_ = fifo_tail_;
        return;
    }
    while (skip_dead_claim())
        drain(fifo_, fifo_tail_);
}

void ShmInterface::test_claim_hook() {
    if (++test_claims_ == config_.test_die_after_claim) raise(SIGKILL);
}

// ------------------------------------------------------------------------------------------
// Reply lanes a sender table had no room for
// ------------------------------------------------------------------------------------------

void ShmInterface::refuse_sender(uint16_t sender, Status why) {
    SenderInfo& info = senders_[sender];
    info.reply_refused = true;
    sender_table()[sender].refused.store(static_cast<int32_t>(why), std::memory_order_release);
    if (std::find(refused_by_.begin(), refused_by_.end(), info.uid) == refused_by_.end()) {
        refused_by_.push_back(info.uid);
        pending_refusals_.push_back({info.uid, why});
    }
}

void ShmInterface::check_refusals() {
    for (auto& [uid, weak] : remotes_) {
        std::shared_ptr<RemoteSegment> remote = weak.lock();
        if (remote == nullptr || remote->failed) continue;
        auto* slots =
            reinterpret_cast<SenderSlot*>(remote->base + remote->header->sender_table_offset);
        for (uint16_t slot : remote->our_slots) {
            const int32_t refused = slots[slot].refused.load(std::memory_order_acquire);
            if (refused == 0) continue;
            if (std::find(refused_by_.begin(), refused_by_.end(), uid) == refused_by_.end()) {
                refused_by_.push_back(uid);
                // Only a refusal it may report: nothing the peer writes becomes a success.
                pending_refusals_.push_back({uid, Status::kNoResource});
            }
            break;
        }
    }
}

// ------------------------------------------------------------------------------------------
// Blocking waits
// ------------------------------------------------------------------------------------------

bool ShmInterface::arm() {
    header_->armed.store(1, std::memory_order_seq_cst);
    // PIO senders publish with release stores: make every CPU drain its store buffer, so a
    // message published before a sender saw `armed` is visible to the check below.
    if (membarrier_works_) syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0);
    // A sender that published before seeing the flag must be seen by us now.
    if (fifo_.peek(fifo_tail_) != nullptr) return false;
    if (!opened_rings_.empty()) return false;  // announced outside progress: drain it first
    for (auto& r : active_rings_) {
        auto* cell = reinterpret_cast<CellHeader*>(r.base + r.tail % r.bytes);
        if (cell->seq.load(std::memory_order_seq_cst) == (r.tail ^ r.key)) return false;
    }
    return true;
}

void ShmInterface::disarm() {
    header_->armed.store(0, std::memory_order_relaxed);
    // Drained whether or not a sender took the flag: one that took it during our last
    // drain may have written after it, and a byte left in the pipe keeps the worker's
    // level-triggered event fd readable (a blocking loop would spin).
    char buf[64];
    while (read(wake_pipe_[0].get(), buf, sizeof(buf)) > 0) {}
    if (liveness_timer_running_) {  // level-triggered: an unread expiry keeps the fd readable
        uint64_t expiries;
        (void)!read(liveness_timer_.get(), &expiries, sizeof(expiries));
    }
    // A pidfd that woke us is looked at by the next progress call (failures are reported
    // from progress only, where callbacks are expected).
    last_check_ns_ = 0;
    progress_calls_ = kLivenessEvery - 1;
}

}  // namespace swy::tl::shm

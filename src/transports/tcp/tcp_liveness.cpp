// Failure detection on established tcp connections, and what a sender may count as delivered.
//
// A slow peer must never be taken for a dead one (issue #18: with the kernel's
// TCP_USER_TIMEOUT at 6 s, 256 loaded processes aborted 11 620 live connections and lost
// messages whose sends had completed). So:
//  - idle connections: kernel keepalive (SWY_TCP_KEEPALIVE); the peer's kernel answers the
//    probes however busy or stopped its process is;
//  - connections with data waiting: check_liveness() fails them only when the peer's kernel
//    has said nothing at all (no ACK, no answer to a window probe) for SWY_TCP_USER_TIMEOUT;
//    a peer that answers with a zero window (its process is not reading) is alive;
//  - sends complete only once the peer's kernel acknowledged their bytes (accepted_bytes /
//    acknowledged_bytes, read by the worker): a connection that fails fails exactly the sends
//    it had not delivered. Asking the kernel (SIOCOUTQ) is a system call, so acknowledged()
//    asks only when the answer may have changed: after bytes arrived that were sent to us
//    after ours were written (every segment carries an ACK, so a reply brings the answer
//    along), else after a pause that starts at kAckFirstLookNs (kAckReplyLookNs when replies
//    brought the answer last time) and doubles while looks find nothing new (a pure ACK is
//    invisible until we ask). A worker blocked on the event fd is
//    woken for those looks by a timer armed only while someone waits (arm_ack_timer()).
//    Before any of that, every frame from the peer says how many of our data bytes it had
//    read when it wrote the frame (FrameHeader::read, note_peer_read()): a reply thus
//    completes the sends it answers with no system call at all (ping-pong), and the kernel
//    is asked only for what no frame covered (a one-way stream);
//  - an interface that goes away says goodbye on every connection, so its peers report
//    kEndpointClosed (an orderly exit) rather than kConnectionReset (a crash).
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>

#include <algorithm>
#include <new>

#include "common/clock.h"
#include "common/log.h"
#include "transports/tcp/tcp_connection.h"

namespace swy::tl::tcp {

using common::log_printf;
using common::LogLevel;

namespace {
/// How often check_liveness() runs (and how late it may notice a timeout).
constexpr uint64_t kLivenessPeriodNs = 500'000'000;
/// Progress calls between looks at the (vDSO) clock.
constexpr uint32_t kLivenessTickMask = 255;
/// First look at the acknowledgements after a wait begins (an ACK needs a round trip), and
/// the longest pause between looks while one is awaited (the pause doubles from the first
/// while looks find nothing new: a blocked worker wakes a few times per message, and a peer
/// that takes long costs one wake-up per kAckMaxPauseNs).
constexpr uint64_t kAckFirstLookNs = 20'000;
constexpr uint64_t kAckMaxPauseNs = 4'000'000;
/// First look when the previous wait on the connection ended with a reply that carried the
/// ACK (request/response traffic): the next reply most likely brings it too, so asking
/// before it comes is a wasted system call. A one-way stream, whose waits end by asking,
/// keeps the short first pause.
constexpr uint64_t kAckReplyLookNs = 1'000'000;
}  // namespace

uint64_t TcpEndpoint::accepted_bytes() const {
    if (iface_ == nullptr) return 0;
    const TcpInterface::Connection* c = iface_->conns_.lookup(conn_, generation_);
    return c == nullptr ? 0 : c->data_written + c->sendq.size();
}

uint64_t TcpEndpoint::acknowledged_bytes(uint64_t wanted) {
    if (iface_ == nullptr) return 0;
    TcpInterface::Connection* c = iface_->conns_.lookup(conn_, generation_);
    if (c == nullptr) return 0;
    return iface_->acknowledged(c, wanted);
}

uint64_t TcpInterface::acknowledged(Connection* c, uint64_t wanted) {
    // Known, or nothing more to learn: closed (close_connection() took the last value), or
    // everything written is acknowledged (what is wanted still waits in our queue, and flush()
    // or EPOLLOUT moves it; the next call then starts the wait).
    if (c->acked >= wanted || !c->fd || c->state != Connection::State::kOpen ||
        c->acked >= c->data_written) {
        return c->acked;
    }
    c->ack_wanted = std::max(c->ack_wanted, wanted);
    const uint64_t now = monotonic_ns();
    if (c->ack_look_ns == 0) {
        // A new wait: the first look after a round trip at the earliest (or when a reply
        // comes), and a timer for a blocking worker from the next arm().
        c->ack_pause_ns = c->ack_by_reply ? kAckReplyLookNs : kAckFirstLookNs;
        c->ack_look_ns = now + c->ack_pause_ns;
        if (!c->ack_watched) {
            try {
                ack_waits_.emplace_back(c->index, c->generation);
                c->ack_watched = true;
            } catch (const std::bad_alloc&) {
                // Not watched: arm_ack_timer() cannot see it, so look every time instead
                // (no wake-up would come for it).
                c->ack_look_ns = now;
            }
        }
    }
    const bool news = c->rx_since_look && c->rx_written > c->acked;
    if (!news && now < c->ack_look_ns) return c->acked;
    look_at_acks(c, now, news);
    return c->acked;
}

bool TcpInterface::note_peer_read(Connection* c, uint64_t read) {
    if (__builtin_expect(read <= c->acked, 1)) return true;
    if (read > c->data_written) {
        log_printf(LogLevel::kError,
                   "tcp: connection %u to %016llx claims to have read %llu bytes of the %llu "
                   "written: closing",
                   c->index, static_cast<unsigned long long>(c->peer_uid),
                   static_cast<unsigned long long>(read),
                   static_cast<unsigned long long>(c->data_written));
        fail(c, Status::kMalformed);
        return false;
    }
    c->acked = read;
    if (c->ack_look_ns != 0 && c->acked >= c->ack_wanted) end_ack_wait(c, true);
    return true;
}

void TcpInterface::end_ack_wait(Connection* c, bool by_reply) {
    c->ack_look_ns = 0;
    c->ack_by_reply = by_reply;
}

void TcpInterface::look_at_acks(Connection* c, uint64_t now, bool news) {
    const uint64_t before = c->acked;
    c->rx_since_look = false;
    ++kernel_ack_looks_;
    update_acked(c);
    if (c->acked >= c->ack_wanted) {
        end_ack_wait(c, news);
    } else {
        c->ack_pause_ns =
            c->acked != before ? kAckFirstLookNs : std::min(2 * c->ack_pause_ns, kAckMaxPauseNs);
        c->ack_look_ns = now + c->ack_pause_ns;
    }
}

bool TcpInterface::arm_ack_timer() {
    uint64_t next = UINT64_MAX;
    size_t keep = 0;
    const uint64_t now = ack_waits_.empty() ? 0 : monotonic_ns();
    bool learned = false;
    for (const auto& [index, generation] : ack_waits_) {
        Connection* c = conns_.lookup(index, generation);
        if (c == nullptr) continue;  // the slot went to another connection
        // A look that is due now is taken here: whoever waited may have stopped asking (its
        // endpoint closed), and a deadline left in the past would wake us at once, forever.
        // If it learns something, the worker must hear it before it sleeps: report work.
        if (c->state == Connection::State::kOpen && c->fd && c->ack_look_ns != 0 &&
            c->ack_look_ns <= now && c->acked < c->data_written) {
            const uint64_t before = c->acked;
            look_at_acks(c, now, false);
            learned = learned || c->acked != before;
        }
        // Nothing in flight that we could learn about (what is wanted still sits in our
        // queue: EPOLLOUT wakes us for it), or nobody waits: no timer for it.
        if (c->state != Connection::State::kOpen || c->ack_look_ns == 0 ||
            c->acked >= c->ack_wanted || c->acked >= c->data_written) {
            c->ack_watched = false;
            c->ack_look_ns = 0;
            continue;
        }
        next = std::min(next, c->ack_look_ns);
        ack_waits_[keep++] = {index, generation};
    }
    ack_waits_.resize(keep);
    if (next == UINT64_MAX) {
        if (ack_timer_set_) {
            const itimerspec off{};
            timerfd_settime(ack_timer_fd_.get(), 0, &off, nullptr);
            ack_timer_set_ = false;
        }
        return !learned;
    }
    if (!ack_timer_fd_) {
        // Made on first use: an interface nobody waits on for acknowledgements holds none.
        common::UniqueFd fd(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
        if (!fd) return false;
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = kAckTimerTag;
        if (epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd.get(), &ev) != 0) return false;
        ack_timer_fd_ = std::move(fd);
    }
    // Absolute: a deadline already past fires at once. Setting the timer also clears an
    // expiry nobody read, so the fd is readable only for this deadline.
    itimerspec its{};
    next = std::max<uint64_t>(next, 1);
    its.it_value.tv_sec = static_cast<time_t>(next / 1'000'000'000u);
    its.it_value.tv_nsec = static_cast<long>(next % 1'000'000'000u);
    if (timerfd_settime(ack_timer_fd_.get(), TFD_TIMER_ABSTIME, &its, nullptr) != 0) return false;
    ack_timer_set_ = true;
    return !learned;
}

void TcpInterface::update_acked(Connection* c) {
    if (!c->fd || c->state != Connection::State::kOpen) return;
    int outq = 0;
    if (ioctl(c->fd.get(), SIOCOUTQ, &outq) != 0 || outq < 0) return;
    const uint64_t unacked = std::min<uint64_t>(static_cast<uint64_t>(outq), c->data_written);
    c->acked = std::max(c->acked, c->data_written - unacked);
}

void TcpInterface::check_liveness() {
    if ((++liveness_tick_ & kLivenessTickMask) != 0) return;
    const uint64_t now = common::monotonic_coarse_ns();
    if (now < next_liveness_ns_) return;
    next_liveness_ns_ = now + std::min(kLivenessPeriodNs, config_.user_timeout_ns / 2);
    const uint64_t limit_ms = config_.user_timeout_ns / 1'000'000;
    // Backwards: fail() removes the connection it fails from live_ (and nothing else).
    for (size_t i = live_.size(); i-- > 0;) {
        if (i >= live_.size()) continue;
        Connection* c = conns_[live_[i]].get();
        if (c->state != Connection::State::kOpen || !c->fd) continue;
        tcp_info info{};
        socklen_t len = sizeof(info);
        if (getsockopt(c->fd.get(), IPPROTO_TCP, TCP_INFO, &info, &len) != 0) continue;
        // Something waits for the peer: in the kernel (in flight, or not sent for want of
        // window: SIOCOUTQ counts both), or still with us.
        int outq = 0;
        const bool waiting = info.tcpi_unacked != 0 || c->has_output() ||
                             (ioctl(c->fd.get(), SIOCOUTQ, &outq) == 0 && outq > 0);
        // And something of ours goes unanswered: data in flight, or two window probes in a row.
        // A peer that answers every probe of its closed window is alive but not reading; the
        // kernel backs those probes off to minutes apart, so their answers cannot be timed.
        const bool unanswered = info.tcpi_unacked != 0 || info.tcpi_probes >= 2;
        if (!waiting || !unanswered || info.tcpi_last_ack_recv < limit_ms) continue;
        log_printf(LogLevel::kWarn,
                   "tcp: connection %u to %016llx: nothing heard from the peer for %u ms with "
                   "data waiting (SWY_TCP_USER_TIMEOUT %llu ms): timed out",
                   c->index, static_cast<unsigned long long>(c->peer_uid), info.tcpi_last_ack_recv,
                   static_cast<unsigned long long>(limit_ms));
        fail(c, Status::kTimedOut);
    }
}

void TcpInterface::owe_ack(Connection* c) {
    // Every read that returned bytes comes here: what arrived carried the peer's ACK.
    c->rx_since_look = true;
    c->rx_written = c->data_written;
    if (c->ack_owed) return;
    c->ack_owed_epoch = epoch_;
    // Listed once: an entry may wait many passes (a long frame arriving) while sends clear
    // ack_owed and reads set it again.
    if (!c->ack_listed) {
        try {
            ack_owed_.push_back(c->index);
        } catch (const std::bad_alloc&) {
            return;  // out of memory: the kernel's delayed ACK will do
        }
        c->ack_listed = true;
    }
    c->ack_owed = true;
}

void TcpInterface::send_owed_acks(bool all) {
    size_t keep = 0;
    for (uint16_t index : ack_owed_) {
        Connection* c = conns_[index].get();
        if (!c->ack_owed || c->state != Connection::State::kOpen || !c->fd) {
            c->ack_owed = false;
            c->ack_listed = false;
            continue;
        }
        // Received in this very pass: a reply may follow. Inside a frame (a payload being
        // placed, or part of a frame in the buffer) the rest of it must still come, so this
        // is not the end of a burst, and the kernel acknowledges a stream by itself (once
        // more than a segment is unacknowledged when we read). A quick ACK after every pass
        // that read part of a frame cost up to ~18 system calls per 4 MiB message, and as
        // many ACKs for the sender to take in (issue #17); the pass after the frame ends
        // sends it.
        const bool mid_frame = c->place.active || (!c->recvq.empty() && !c->stalled);
        if (!all && (c->ack_owed_epoch == epoch_ || mid_frame)) {
            ack_owed_[keep++] = index;
            continue;
        }
        // Sends the delayed ACK now (the kernel leaves quick-ACK mode again by itself).
        const int one = 1;
        setsockopt(c->fd.get(), IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
        ++quick_acks_;
        c->ack_owed = false;
        c->ack_listed = false;
    }
    ack_owed_.resize(keep);
}

void TcpInterface::say_goodbye_all() {
    const uint8_t bye = static_cast<uint8_t>(TcpControl::kGoodbye);
    for (uint16_t index : live_) {
        Connection* c = conns_[index].get();
        if (c->state != Connection::State::kOpen || !c->handshake_done || c->goodbye_sent) {
            continue;
        }
        c->goodbye_sent = true;
        (void)send_control(c, &bye, 1);  // one non-blocking write; the close follows
    }
}

}  // namespace swy::tl::tcp

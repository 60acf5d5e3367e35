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
//    it had not delivered;
//  - an interface that goes away says goodbye on every connection, so its peers report
//    kEndpointClosed (an orderly exit) rather than kConnectionReset (a crash).
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

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
}  // namespace

uint64_t TcpEndpoint::accepted_bytes() const {
    if (iface_ == nullptr) return 0;
    const TcpInterface::Connection* c = iface_->conns_.lookup(conn_, generation_);
    return c == nullptr ? 0 : c->data_written + c->sendq.size();
}

uint64_t TcpEndpoint::acknowledged_bytes() {
    if (iface_ == nullptr) return 0;
    TcpInterface::Connection* c = iface_->conns_.lookup(conn_, generation_);
    if (c == nullptr) return 0;
    iface_->update_acked(c);
    return c->acked;
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
    if (c->ack_owed) return;
    try {
        ack_owed_.push_back(c->index);
    } catch (const std::bad_alloc&) {
        return;  // out of memory: the kernel's delayed ACK will do
    }
    c->ack_owed = true;
    c->ack_owed_epoch = epoch_;
}

void TcpInterface::send_owed_acks() {
    size_t keep = 0;
    for (uint16_t index : ack_owed_) {
        Connection* c = conns_[index].get();
        if (!c->ack_owed || c->state != Connection::State::kOpen || !c->fd) {
            c->ack_owed = false;
            continue;
        }
        if (c->ack_owed_epoch == epoch_) {  // received in this very pass: a reply may follow
            ack_owed_[keep++] = index;
            continue;
        }
        // Sends the delayed ACK now (the kernel leaves quick-ACK mode again by itself).
        const int one = 1;
        setsockopt(c->fd.get(), IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
        c->ack_owed = false;
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

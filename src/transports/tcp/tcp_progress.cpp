// Receive side of the tcp transport: accepting, reading and validating frames, closing and
// reporting failed connections, arming for blocking waits.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "transports/tcp/tcp_connection.h"

namespace swy::tl::tcp {

using common::LogLevel;
using common::log_printf;

namespace {

constexpr int kMaxEvents = 64;
constexpr size_t kMinRead = 16 * 1024;     // room offered to each recv()
constexpr size_t kReadBudget = 4u << 20;   // per connection and progress call: others get a turn

const char* check_text(FrameCheck c) {
    switch (c) {
    case FrameCheck::kOk: return "ok";
    case FrameCheck::kNeedMore: return "truncated";
    case FrameCheck::kBadMagic: return "bad magic";
    case FrameCheck::kBadVersion: return "unsupported version";
    case FrameCheck::kTooLong: return "length beyond the maximum";
    }
    return "?";
}

}  // namespace

unsigned TcpInterface::progress() {
    if (in_progress_) return 0;  // a sink callback called progress(): finish the outer pass first
    // An epoll_wait is a system call (~1 us here): on every call it would dominate the shm
    // hot path of every worker. With no connection open only a new peer can arrive (set-up
    // time): look every kIdlePollEvery calls. With connections, every kBusyPollEvery calls,
    // a few tens of nanoseconds against TCP's microseconds. A wake-up from the event fd
    // makes the next call look (disarm()).
    const uint32_t every = open_connections() == 0 ? kIdlePollEvery : kBusyPollEvery;
    if (++idle_polls_ % every != 0 && to_report_.empty()) return 0;
    in_progress_ = true;
    unsigned n = 0;
    if (__builtin_expect(!to_report_.empty(), 0)) report_failures();  // failed inside a send
    epoll_event events[kMaxEvents];
    const int k = epoll_wait(epoll_fd_, events, kMaxEvents, 0);
    for (int i = 0; i < k; ++i) {
        const uint64_t tag = events[i].data.u64;
        if (tag & kListenTag) {
            const size_t li = static_cast<size_t>(tag & 0xFFFF);
            if (li < listen_fds_.size()) n += accept_all(listen_fds_[li]);
            continue;
        }
        Connection* c = lookup(static_cast<uint16_t>(tag & 0xFFFF),
                               static_cast<uint32_t>(tag >> 16));
        if (c == nullptr || c->state != Connection::State::kOpen) continue;  // stale event
        if (events[i].events & EPOLLOUT) (void)flush(c);
        if (c->state == Connection::State::kOpen &&
            (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
            n += receive(c);
        }
    }
    if (!to_report_.empty()) report_failures();
    in_progress_ = false;
    return n;
}

unsigned TcpInterface::accept_all(int listen_fd) {
    unsigned n = 0;
    for (;;) {
        int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                // EMFILE and friends: the connection stays in the backlog; retried next time.
                log_printf(LogLevel::kWarn, "tcp: accept: %s", std::strerror(errno));
            }
            return n;
        }
        setup_socket(fd);
        uint16_t index = 0;
        if (add_connection(fd, false, 0, &index) == nullptr) {
            log_printf(LogLevel::kError, "tcp: refusing a connection: no free sender index");
            close(fd);
            continue;
        }
        ++n;
    }
}

unsigned TcpInterface::receive(Connection* c) {
    unsigned delivered = 0;
    size_t budget = kReadBudget;
    for (;;) {
        if (c->recvq.reserve_tail(kMinRead) == nullptr) {
            fail(c, Status::kNoMemory);
            return delivered;
        }
        const ssize_t r = recv(c->fd, c->recvq.tail_ptr(), c->recvq.tail_room(), MSG_DONTWAIT);
        if (r > 0) {
            c->recvq.commit(static_cast<size_t>(r));
            delivered += deliver_frames(c);
            if (c->state != Connection::State::kOpen) break;
            if (static_cast<size_t>(r) >= budget) break;  // still readable: epoll says so again
            budget -= static_cast<size_t>(r);
            continue;
        }
        if (r == 0) {
            on_eof(c);
            break;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        // ECONNRESET, ETIMEDOUT (keepalive or user timeout), EPIPE...
        log_printf(LogLevel::kInfo, "tcp: connection to %016llx: %s",
                   static_cast<unsigned long long>(c->peer_uid), std::strerror(errno));
        fail(c, Status::kConnectionReset);
        break;
    }
    if (c->state != Connection::State::kOpen) c->recvq.release();
    return delivered;
}

unsigned TcpInterface::deliver_frames(Connection* c) {
    unsigned n = 0;
    for (;;) {
        FrameHeader h{};
        const FrameCheck check = decode_frame_header(c->recvq.data(), c->recvq.size(), &h);
        if (check == FrameCheck::kNeedMore) return n;
        if (check != FrameCheck::kOk) {
            log_printf(LogLevel::kError, "tcp: malformed frame from %016llx (%s): closing",
                       static_cast<unsigned long long>(c->peer_uid), check_text(check));
            fail(c, Status::kMalformed);
            return n;
        }
        const size_t total = kFrameHeaderSize + h.length;
        if (c->recvq.size() < total) return n;  // the rest is still on its way
        const uint8_t* body = c->recvq.data() + kFrameHeaderSize;
        if (h.am_id == kTcpControlAm) {
            Status s = handle_control(c, body, h.length);
            if (s != Status::kOk) {
                fail(c, s);
                return n;
            }
        } else if (!c->hello_seen) {
            log_printf(LogLevel::kError, "tcp: message before hello on connection %u: closing",
                       c->index);
            fail(c, Status::kMalformed);
            return n;
        } else {
            // The body stays in the receive buffer during the call; a send from inside the
            // callback that fails this connection must not free it under the sink.
            delivering_ = c;
            sink_->on_am(h.am_id, AmSource{index_, c->index}, body, h.length);
            delivering_ = nullptr;
            ++n;
            if (c->state != Connection::State::kOpen) return n;
        }
        c->recvq.consume(total);
    }
}

Status TcpInterface::handle_control(Connection* c, const uint8_t* data, size_t length) {
    if (length < 1) return Status::kMalformed;
    switch (static_cast<TcpControl>(data[0])) {
    case TcpControl::kHello: {
        uint64_t uid = 0;
        if (c->hello_seen || !decode_hello(data, length, &uid)) return Status::kMalformed;
        if (c->outgoing && uid != c->peer_uid) {
            // The address led to some other worker (a stale address, or a loopback entry of a
            // peer on another host): this is not the peer we were asked to reach.
            log_printf(LogLevel::kError,
                       "tcp: connected to worker %016llx, expected %016llx: closing",
                       static_cast<unsigned long long>(uid),
                       static_cast<unsigned long long>(c->peer_uid));
            return Status::kUnreachable;
        }
        c->peer_uid = uid;
        c->hello_seen = true;
        return Status::kOk;
    }
    case TcpControl::kGoodbye:
        if (length != 1 || !c->hello_seen) return Status::kMalformed;
        c->goodbye_received = true;
        return Status::kOk;
    }
    return Status::kMalformed;
}

void TcpInterface::on_eof(Connection* c) {
    if (c->goodbye_sent || c->goodbye_received) {
        // Orderly: our side or theirs disconnected. Whatever we still had queued for a peer
        // endpoint that is gone is dropped with the connection.
        if (c->goodbye_received && !c->goodbye_sent) (void)flush(c);
        close_connection(c);
        return;
    }
    if (!c->recvq.empty()) {
        log_printf(LogLevel::kInfo, "tcp: connection %u closed inside a frame (%zu bytes)",
                   c->index, c->recvq.size());
    }
    fail(c, Status::kConnectionReset);
}

void TcpInterface::close_connection(Connection* c) {
    if (c->fd >= 0) {
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
        close(c->fd);
        c->fd = -1;
    }
    c->state = Connection::State::kClosed;
    c->watching_out = false;
    c->sendq.release();
    if (c != delivering_) c->recvq.release();  // else receive() releases it afterwards
}

void TcpInterface::fail(Connection* c, Status why) {
    if (c->state == Connection::State::kClosed) return;
    c->failure = why;
    close_connection(c);
    if (c->peer_uid == 0) {
        // Nobody we know (no hello yet): nothing to report upward.
        log_printf(LogLevel::kWarn, "tcp: closed unidentified connection %u: %s", c->index,
                   status_text(why));
        return;
    }
    if (c->goodbye_sent || c->goodbye_received) {
        // The endpoint that owned this connection is gone; a reset while closing (the peer
        // closed with our last replies unread) says nothing about the peer's health, and its
        // other connections will report a real failure themselves.
        c->failure = Status::kOk;
        return;
    }
    to_report_.push_back(c->index);
}

void TcpInterface::report_failures() {
    // A callback may fail more connections (sends inside on_remote_failure): loop until quiet.
    while (!to_report_.empty()) {
        std::vector<uint16_t> batch;
        batch.swap(to_report_);
        for (uint16_t index : batch) {
            Connection* c = conns_[index].get();
            if (!c->awaiting_report()) continue;
            c->reported = true;
            log_printf(LogLevel::kInfo, "tcp: peer %016llx lost: %s",
                       static_cast<unsigned long long>(c->peer_uid), status_text(c->failure));
            sink_->on_remote_failure(c->peer_uid, c->failure);
        }
    }
}

bool TcpInterface::arm() {
    if (!to_report_.empty()) return false;
    // receive() delivers every complete frame before it returns, so this only finds something
    // when a callback interrupted it; the epoll fd covers everything still in the kernel.
    for (const auto& c : conns_) {
        if (c->state != Connection::State::kOpen || c->recvq.size() < kFrameHeaderSize) continue;
        FrameHeader h{};
        FrameCheck check = decode_frame_header(c->recvq.data(), c->recvq.size(), &h);
        if (check != FrameCheck::kOk || c->recvq.size() >= kFrameHeaderSize + h.length) {
            return false;
        }
    }
    return true;
}

}  // namespace swy::tl::tcp

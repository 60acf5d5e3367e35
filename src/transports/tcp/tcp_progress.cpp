// Receive side of the tcp transport: accepting, reading and validating frames, closing and
// reporting failed connections, arming for blocking waits.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "common/log.h"
#include "common/socket.h"
#include "transports/tcp/tcp_connection.h"

namespace swy::tl::tcp {

using common::log_printf;
using common::LogLevel;

namespace {

constexpr int kMaxEvents = 64;
constexpr size_t kMinRead = 16 * 1024;    // room offered to each recv()
constexpr size_t kReadBudget = 4u << 20;  // per connection and progress call: others get a turn

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

template <typename F>
bool TcpInterface::deliver_or_stall(Connection* c, F&& deliver) {
    try {
        deliver();
        return true;
    } catch (const std::bad_alloc&) {
        // The sink could not keep the message (it allocates nothing before it can): leave it
        // in the receive buffer and stop reading this connection until a later progress call
        // finds memory again. Back-pressure, never a message dropped.
        if (!c->stalled && !c->stall_logged) {
            c->stall_logged = true;  // once per connection: retries stall again and again
            log_printf(LogLevel::kError,
                       "tcp: out of memory delivering a message from %016llx: holding it (and "
                       "the connection) until memory is available",
                       static_cast<unsigned long long>(c->peer_uid));
        }
        if (!c->stalled) {
            c->stalled = true;
            ++stalled_;
        }
        return false;
    }
}

void TcpInterface::retry_stalled() {
    for (size_t i = live_.size(); i-- > 0;) {
        if (i >= live_.size()) continue;
        Connection* c = conns_[live_[i]].get();
        if (!c->stalled) continue;
        c->stalled = false;
        --stalled_;
        (void)receive(c);
    }
}

void TcpInterface::prepare_receive() {
    uint32_t every = 1;
    while (every < config_.busy_poll_every && every < kIdlePollEvery)
        every <<= 1;
    busy_mask_ = every - 1;
    for (unsigned id = 0; id < 256; ++id) {
        const size_t n = id == kTcpControlAm ? 0 : sink_->placement_header(static_cast<AmId>(id));
        // A header we cannot keep aside is simply never placed: on_am() still works.
        place_header_[id] = n <= TcpPlacement::kMaxHeader ? static_cast<uint8_t>(n) : 0;
    }
}

unsigned TcpInterface::progress() {
    if (in_progress_) return 0;  // a sink callback called progress(): finish the outer pass first
    ++epoch_;                    // sends from now on start a new burst
    // Corked frames leave on every call, unthrottled: they are what the peer waits for.
    if (!corked_.empty()) flush_corked();
    // Then the ACKs a waiting sender may need (tcp_liveness.cpp), and now and then a look at
    // whether a peer with data waiting for it still answers.
    if (__builtin_expect(!ack_owed_.empty(), 0)) send_owed_acks(false);
    if (!live_.empty()) check_liveness();
    // Looking at the sockets is a system call (~1 us here). With no connection open only a
    // new peer can arrive (set-up time): look every kIdlePollEvery calls. With connections,
    // every busy_poll_every calls (1 when tcp is the only network). A wake-up from the event
    // fd makes the next call look (disarm()).
    const uint32_t mask = live_.empty() && connecting_.empty() ? kIdlePollEvery - 1 : busy_mask_;
    if ((++idle_polls_ & mask) != 0 && !reports_waiting()) return 0;
    in_progress_ = true;
    unsigned n = 0;
    if (__builtin_expect(reports_waiting(), 0)) report_failures();  // failed inside a send
    if (__builtin_expect(stalled_ != 0, 0)) retry_stalled();
    // With one or two connections a recv() on each is cheaper than epoll_wait + recv, and
    // finds the data in one system call instead of two. epoll still runs now and then, for
    // listening sockets (new peers) and EPOLLOUT.
    // Connections being set up are watched through epoll only (EPOLLOUT, deadlines).
    const bool direct = connecting_.empty() && live_.size() <= kDirectPollMax &&
                        (epoll_tick_++ & (kEpollEvery - 1)) != 0;
    n += direct ? poll_direct() : poll_epoll();
    if (__builtin_expect(!connecting_.empty(), 0)) check_connecting();
    // Handshake deadlines are coarse (seconds): a look every 1024 calls that reach here.
    if (__builtin_expect(!handshaking_.empty(), 0) && (++handshake_tick_ & 1023) == 0) {
        check_handshakes();
    }
    if (reports_waiting()) report_failures();
    in_progress_ = false;
    return n;
}

unsigned TcpInterface::poll_epoll() {
    unsigned n = 0;
    epoll_event events[kMaxEvents];
    const int k = epoll_wait(epoll_fd_.get(), events, kMaxEvents, 0);
    for (int i = 0; i < k; ++i) {
        const uint64_t tag = events[i].data.u64;
        if (tag == kTimerTag) {
            uint64_t expirations;
            (void)!read(timer_fd_.get(), &expirations, sizeof(expirations));  // deadlines: below
            continue;
        }
        if (tag == kAckTimerTag) {  // a look at acknowledgements is due (the worker asks)
            uint64_t expirations;
            (void)!read(ack_timer_fd_.get(), &expirations, sizeof(expirations));
            continue;
        }
        if (tag & kListenTag) {
            const size_t li = static_cast<size_t>(tag & 0xFFFF);
            if (li < listen_fds_.size()) n += accept_all(listen_fds_[li].get());
            continue;
        }
        Connection* c =
            lookup(static_cast<uint16_t>(tag & 0xFFFF), static_cast<uint32_t>(tag >> 16));
        if (c != nullptr && c->state == Connection::State::kConnecting) {
            connect_event(c);
            continue;
        }
        if (c == nullptr || c->state != Connection::State::kOpen) continue;  // stale event
        if (events[i].events & EPOLLOUT) {
            c->tx_full = false;  // room again: flush() and the next sends write
            (void)flush(c);
        }
        if (c->state == Connection::State::kOpen &&
            (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
            n += receive(c);
        }
    }
    return n;
}

unsigned TcpInterface::poll_direct() {
    // A callback may open or close connections (live_ changes): walk a copy.
    uint16_t snapshot[kDirectPollMax];
    const size_t count = std::min(live_.size(), kDirectPollMax);
    std::copy_n(live_.begin(), count, snapshot);
    // A connection whose kernel buffer is full waits for EPOLLOUT: one epoll_wait tells both
    // whether there is room and whether anything arrived, where the direct pass would ask
    // with a recv and a write that fails.
    for (size_t i = 0; i < count; ++i) {
        if (conns_[snapshot[i]]->tx_full) return poll_epoll();
    }
    unsigned n = 0;
    for (size_t i = 0; i < count; ++i) {
        Connection* c = conns_[snapshot[i]].get();
        if (c->state != Connection::State::kOpen) continue;
        // A queue the kernel had no room for: retry here rather than wait for the epoll pass.
        // (A watch left on an empty queue, after a refused large send, stays until the epoll
        // pass: switching it off and on again per retry would cost two system calls.)
        if (c->watching_out && c->has_output()) (void)flush(c);
        if (c->state == Connection::State::kOpen) n += receive(c);
    }
    return n;
}

void TcpInterface::flush_corked() {
    // flush() never calls the sink (a failure is reported later), so the list is stable.
    for (uint16_t index : corked_) {
        Connection* c = conns_[index].get();
        c->corked = false;
        if (c->state == Connection::State::kOpen) (void)flush(c);
    }
    corked_.clear();
}

unsigned TcpInterface::accept_all(int listen_fd) {
    unsigned n = 0;
    for (;;) {
        common::UniqueFd fd;
        std::string why;
        const Status s = common::accept_one(listen_fd, &fd, nullptr, &why);
        if (s != Status::kOk) {
            // EMFILE and friends: the connection stays in the backlog; retried next time.
            if (s != Status::kInProgress) log_printf(LogLevel::kWarn, "tcp: %s", why.c_str());
            return n;
        }
        setup_socket(fd.get());
        uint16_t index = 0;
        Connection* added = nullptr;
        try {
            added = add_connection(std::move(fd), false, 0, &index);
        } catch (const std::bad_alloc&) {
            // No memory for the connection's state: refuse it (the peer's endpoint fails)
            // rather than let the exception out of progress.
            log_printf(LogLevel::kError, "tcp: refusing a connection: out of memory");
            continue;
        }
        if (added == nullptr) {
            // The socket closes here: the peer sees the connection refused.
            log_printf(LogLevel::kError, "tcp: refusing a connection: no free sender index");
            continue;
        }
        ++n;
    }
}

unsigned TcpInterface::receive(Connection* c) {
    unsigned delivered = 0;
    size_t budget = kReadBudget;
    if (__builtin_expect(c->stalled, 0)) return 0;  // retry_stalled() resumes it
    if (__builtin_expect(!c->recvq.empty() && !c->place.active, 0)) {
        delivered += deliver_frames(c);  // what a stall left in the buffer goes first
        if (c->stalled) return delivered;
    }
    while (c->state == Connection::State::kOpen && budget > 0) {
        if (c->place.active) {
            const size_t before = c->place.done;
            delivered += receive_placed(c);
            if (c->place.active) break;  // the socket ran dry, or the connection closed
            budget -= std::min(budget, c->place.length - before);
            // The payload's last read may have brought (part of) the next frame's header:
            // parse it before reading more, so that if it is placed too, none of its payload
            // takes the receive buffer's detour.
            if (c->state == Connection::State::kOpen && !c->recvq.empty()) {
                delivered += deliver_frames(c);
                if (c->stalled) break;
            }
            continue;
        }
        if (c->recvq.reserve_tail(kMinRead) == nullptr) {
            fail(c, Status::kNoMemory);
            break;
        }
        size_t room = c->recvq.tail_room();
        // After a placed payload: read no further than the next frame's placement header
        // (what of it is not here yet), until that header is whole.
        const size_t header = kFrameHeaderSize + c->expect_header;
        if (c->expect_header != 0 && c->recvq.size() < header) {
            room = std::min(room, header - c->recvq.size());
        } else {
            c->expect_header = 0;
        }
        const ssize_t r = recv(c->fd.get(), c->recvq.tail_ptr(), room, MSG_DONTWAIT);
        if (r > 0) {
            ++socket_reads_;
            owe_ack(c);
            c->recvq.commit(static_cast<size_t>(r));
            if (c->recvq.size() >= header) c->expect_header = 0;
            delivered += deliver_frames(c);
            if (c->stalled) break;
            budget -= std::min(budget, static_cast<size_t>(r));
            // A short read emptied the socket: asking again would only return EAGAIN (a
            // system call on the latency path). Level-triggered epoll, or the next direct
            // pass, finds anything that arrives later.
            if (static_cast<size_t>(r) < room && !c->place.active) break;
            continue;
        }
        if (r == 0) {
            on_eof(c);
            break;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        // ECONNRESET, EPIPE...: reset. ETIMEDOUT is the keepalive or user timeout giving up
        // on a silent peer (a link down, a host gone): reported as such, so an application
        // can tell a dead link from a peer that closed on it.
        log_printf(LogLevel::kInfo, "tcp: connection to %016llx: %s",
                   static_cast<unsigned long long>(c->peer_uid), std::strerror(errno));
        fail(c, errno == ETIMEDOUT ? Status::kTimedOut : Status::kConnectionReset);
        break;
    }
    if (c->state != Connection::State::kOpen) {
        c->recvq.release();
    } else if (!c->place.active) {
        c->recvq.park();  // idle connections hold no receive buffer
    }
    return delivered;
}

bool TcpInterface::start_placement(Connection* c, const FrameHeader& h) {
    const size_t ph = place_header_[h.am_id];
    if (ph == 0 || h.length <= ph || c->recvq.size() < kFrameHeaderSize + ph) return false;
    const uint8_t* hdr = c->recvq.data() + kFrameHeaderSize;
    const size_t length = h.length - ph;
    uint8_t* dst = nullptr;
    try {
        dst = sink_->place_payload(h.am_id, AmSource{index_, c->index}, hdr, 0, length);
    } catch (const std::bad_alloc&) {
        return false;  // not placed: the message goes through on_am() (and may stall there)
    }
    if (dst == nullptr) return false;
    TcpPlacement& p = c->place;
    p.active = true;
    p.discard = false;
    p.id = h.am_id;
    p.hdr_len = static_cast<uint8_t>(ph);
    std::memcpy(p.hdr, hdr, ph);
    p.length = length;
    // The part of the payload that came with the header moves once; the rest is read in
    // place. The frame is incomplete (else on_am() would take it), so all of this fits.
    const size_t have = c->recvq.size() - kFrameHeaderSize - ph;
    if (have != 0) std::memcpy(dst, hdr + ph, have);
    p.done = have;
    c->recvq.consume(kFrameHeaderSize + ph + have);
    c->rx_data += kFrameHeaderSize + ph + have;
    return true;
}

unsigned TcpInterface::receive_placed(Connection* c) {
    TcpPlacement& p = c->place;
    // Fragments come in trains: the read that ends this payload also takes the next frame's
    // header (as far as its placement header, assuming the same kind of frame follows) into
    // the receive buffer, empty during a placement: one system call per fragment, not two.
    const size_t next_header = kFrameHeaderSize + place_header_[p.id];
    while (p.done < p.length) {
        uint8_t* dst = nullptr;
        size_t want = p.length - p.done;
        if (!p.discard) {
            dst = sink_->place_payload(p.id, AmSource{index_, c->index}, p.hdr, p.done, p.length);
            if (dst == nullptr) {
                log_printf(LogLevel::kDebug,
                           "tcp: destination of a placed message went away: dropping %zu bytes",
                           want);
                p.discard = true;
            }
        }
        ssize_t r;
        if (dst == nullptr) {
            // Read and drop through the receive buffer, which is empty during a placement.
            if (c->recvq.reserve_tail(kMinRead) == nullptr) {
                fail(c, Status::kNoMemory);
                return 0;
            }
            dst = c->recvq.tail_ptr();
            want = std::min(want, c->recvq.tail_room());
            r = recv(c->fd.get(), dst, want, MSG_DONTWAIT);
        } else {
            uint8_t* tail = c->recvq.reserve_tail(next_header);
            iovec iov[2] = {{dst, want}, {tail, next_header}};
            msghdr msg{};
            msg.msg_iov = iov;
            msg.msg_iovlen = tail != nullptr ? 2 : 1;  // no memory: the header comes next read
            r = recvmsg(c->fd.get(), &msg, MSG_DONTWAIT);
        }
        if (r > 0) {
            ++socket_reads_;
            owe_ack(c);
            const size_t got = std::min(static_cast<size_t>(r), want);
            p.done += got;
            c->rx_data += static_cast<uint64_t>(got);
            // Beyond the payload: the start of the next frame (counted in rx_data once it is
            // consumed, like anything else read into the receive buffer).
            c->recvq.commit(static_cast<size_t>(r) - got);
            if (got < want) return 0;  // drained; the next pass goes on
            continue;
        }
        if (r == 0) {
            on_eof(c);
            return 0;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
        log_printf(LogLevel::kInfo, "tcp: connection to %016llx: %s",
                   static_cast<unsigned long long>(c->peer_uid), std::strerror(errno));
        fail(c, errno == ETIMEDOUT ? Status::kTimedOut : Status::kConnectionReset);
        return 0;
    }
    p.active = false;
    // Fragments come in trains: read just the next header, so that if it is placed too its
    // payload goes straight to the destination as well.
    c->expect_header = place_header_[p.id];
    if (p.discard) return 0;
    delivering_ = c;
    try {
        sink_->on_am_placed(p.id, AmSource{index_, c->index}, p.hdr, p.length);
    } catch (const std::bad_alloc&) {
        // Its bytes are already in the destination: the message cannot be held back, so the
        // connection fails (both sides see an error) rather than lose it silently.
        delivering_ = nullptr;
        log_printf(LogLevel::kError, "tcp: out of memory completing a placed message: closing");
        fail(c, Status::kNoMemory);
        return 0;
    }
    delivering_ = nullptr;
    return 1;
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
        if (!note_peer_read(c, h.read)) return n;
        if (__builtin_expect(!c->handshake_done, 0) && h.am_id != kTcpControlAm) {
            // Refused on its header: an unauthenticated peer cannot make us buffer a body.
            if (c->hello_received && authenticated()) {
                fail(c, auth_failure(c, "a message before the proof"));
            } else {
                log_printf(LogLevel::kError,
                           "tcp: message before the handshake on connection %u: closing", c->index);
                fail(c, Status::kMalformed);
            }
            return n;
        }
        if (h.am_id == kTcpControlAm && h.length > kHelloAckMaxSize) {
            log_printf(LogLevel::kError,
                       "tcp: control frame of %u bytes on connection %u: "
                       "closing",
                       h.length, c->index);
            fail(c, Status::kMalformed);
            return n;
        }
        const size_t total = kFrameHeaderSize + h.length;
        if (c->recvq.size() < total) {
            // The rest is still on its way: into the sink's memory if it names a place.
            if (c->handshake_done && place_header_[h.am_id] != 0) (void)start_placement(c, h);
            return n;
        }
        const uint8_t* body = c->recvq.data() + kFrameHeaderSize;
        // Counted before the sink sees it: a reply sent from inside the callback tells the
        // peer that this frame arrived.
        const bool data = h.am_id != kTcpControlAm || !is_handshake_control(body, h.length);
        if (data) c->rx_data += total;
        if (h.am_id == kTcpControlAm) {
            Status s = handle_control(c, body, h.length);
            if (s != Status::kOk) {
                fail(c, s);
                return n;
            }
            if (c->state != Connection::State::kOpen) return n;  // a flush in it failed
        } else {
            // The body stays in the receive buffer during the call; a send from inside the
            // callback that fails this connection must not free it under the sink.
            delivering_ = c;
            const bool taken = deliver_or_stall(c, [&] {
                sink_->on_am(h.am_id, AmSource{index_, c->index}, body, h.length);
            });
            delivering_ = nullptr;
            if (!taken) {
                c->rx_data -= total;  // counted again when retry_stalled() delivers it
                return n;             // kept in the buffer
            }
            ++n;
            if (c->state != Connection::State::kOpen) return n;
        }
        c->recvq.consume(total);
    }
}

void TcpInterface::on_eof(Connection* c) {
    if (c->goodbye_received && c->locally_owned()) {
        // The peer closed in order (its endpoint or its worker went away; possibly racing an
        // attach, before it heard that our endpoint uses this connection too) while ours still
        // uses the connection: a failure of that endpoint, but not a crash.
        log_printf(LogLevel::kInfo, "tcp: peer %016llx closed its end of connection %u",
                   static_cast<unsigned long long>(c->peer_uid), c->index);
        fail(c, Status::kEndpointClosed);
        return;
    }
    if (c->goodbye_sent || c->goodbye_received) {
        // Orderly: our side or theirs disconnected. Whatever we still had queued for a peer
        // endpoint that is gone is dropped with the connection.
        if (c->goodbye_received && !c->goodbye_sent) (void)flush(c);
        close_connection(c);
        return;
    }
    log_printf(LogLevel::kInfo,
               "tcp: connection %u to %016llx closed without a goodbye: the peer crashed or "
               "was killed",
               c->index, static_cast<unsigned long long>(c->peer_uid));
    if (!c->recvq.empty() || c->place.active) {
        log_printf(LogLevel::kInfo, "tcp: connection %u closed inside a frame (%zu bytes)",
                   c->index, c->place.active ? c->place.done : c->recvq.size());
    }
    fail(c, Status::kConnectionReset);
}

void TcpInterface::close_connection(Connection* c) {
    std::erase(live_, c->index);
    if (c->state == Connection::State::kConnecting) std::erase(connecting_, c->index);
    c->place.active = false;
    if (c->stalled) {
        c->stalled = false;
        --stalled_;
    }
    update_acked(c);  // what the peer acknowledged stays readable (accepted_bytes et al.)
    drop_socket(c);
    if (c->state != Connection::State::kClosed) conns_.release(c->index);
    c->state = Connection::State::kClosed;
    c->sendq.release();
    if (c != delivering_) c->recvq.release();  // else receive() releases it afterwards
}

void TcpInterface::fail(Connection* c, Status why) {
    if (c->state == Connection::State::kClosed) return;
    log_printf(LogLevel::kDebug, "tcp: connection %u (%s, peer %016llx) failed: %s", c->index,
               c->outgoing ? "ours" : "accepted", static_cast<unsigned long long>(c->peer_uid),
               status_text(why));
    c->failure = why;
    close_connection(c);
    if (c->peer_uid == 0) {
        // Nobody we know (no hello yet): nothing to report upward. A connection closed before
        // it said anything is routine (the peer dropped a duplicate connection to us).
        // One we redirected to our own connection (goodbye_sent) may be reset by its peer.
        log_printf(c->hello_received && !c->goodbye_sent ? LogLevel::kWarn : LogLevel::kDebug,
                   "tcp: closed unidentified connection %u: %s", c->index, status_text(why));
        return;
    }
    if (c->goodbye_received && c->locally_owned()) {
        // The peer said goodbye while our endpoint still uses the connection: whatever ends
        // it now (its close, a reset for data it left unread), the peer left in order.
        c->failure = Status::kEndpointClosed;
        queue_report(c);
        return;
    }
    if ((c->goodbye_sent || c->goodbye_received) && !c->locally_owned()) {
        // The endpoint that owned this connection is gone; a reset while closing (the peer
        // closed with our last replies unread) says nothing about the peer's health, and its
        // other connections will report a real failure themselves.
        c->failure = Status::kOk;
        return;
    }
    queue_report(c);
}

void TcpInterface::queue_report(Connection* c) {
    try {
        to_report_.push_back(c->index);
    } catch (const std::bad_alloc&) {
        // Out of memory: report_failures() finds it by scanning the connections instead.
        report_scan_ = true;
    }
}

void TcpInterface::report_failures() {
    if (__builtin_expect(report_scan_, 0)) {
        report_scan_ = false;
        for (size_t i = 0; i < conns_.size(); ++i) {
            Connection* c = conns_[i].get();
            if (c != nullptr && c->awaiting_report()) queue_report(c);
        }
    }
    // A callback may fail more connections (sends inside on_remote_failure): loop until quiet.
    while (!to_report_.empty()) {
        std::vector<uint16_t> batch;
        batch.swap(to_report_);
        for (size_t i = 0; i < batch.size(); ++i) {
            Connection* c = conns_[batch[i]].get();
            if (!c->awaiting_report()) continue;
            c->reported = true;
            log_printf(LogLevel::kInfo, "tcp: peer %016llx lost: %s",
                       static_cast<unsigned long long>(c->peer_uid), status_text(c->failure));
            try {
                sink_->on_remote_failure(index_, connection_key(c->index, c->generation),
                                         c->failure);
            } catch (const std::bad_alloc&) {
                // Out of memory while failing what the peer carried: report it (and the rest
                // of the batch) again at the next progress call rather than lose the report.
                c->reported = false;
                to_report_.insert(to_report_.end(), batch.begin() + static_cast<long>(i),
                                  batch.end());
                return;
            }
        }
    }
}

bool TcpInterface::arm() {
    // Corked frames must leave before we sleep: the peer may be waiting for them. What the
    // kernel does not take is watched with EPOLLOUT, which wakes us.
    if (!corked_.empty()) flush_corked();
    if (!to_report_.empty()) return false;
    // So must the ACKs we owe (a peer may be waiting for delivery): sleeping ends this pass.
    if (!ack_owed_.empty()) {
        ++epoch_;
        send_owed_acks(true);
    }
    update_timer();  // a connect deadline must wake a blocking wait
    // A worker waiting for acknowledgements sleeps until the next look is due.
    if (!arm_ack_timer()) return false;
    // receive() delivers every complete frame before it returns, so this only finds something
    // when a callback interrupted it (or its read budget ran out); the epoll fd covers
    // everything still in the kernel.
    for (uint16_t index : live_) {
        const Connection* c = conns_[index].get();
        if (c->recvq.size() < kFrameHeaderSize) continue;
        FrameHeader h{};
        FrameCheck check = decode_frame_header(c->recvq.data(), c->recvq.size(), &h);
        if (check != FrameCheck::kOk || c->recvq.size() >= kFrameHeaderSize + h.length) {
            return false;
        }
    }
    return true;
}

}  // namespace swy::tl::tcp

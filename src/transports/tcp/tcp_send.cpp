// Send path of the tcp transport: direct sendmsg when nothing is queued, the per-connection
// queue and its limit otherwise, control frames and the orderly disconnect.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "transports/tcp/tcp_connection.h"

namespace swy::tl::tcp {

// ------------------------------------------------------------------------------------------
// Send path
// ------------------------------------------------------------------------------------------

void TcpInterface::watch_writable(Connection* c, bool on) {
    if (c->watching_out == on || !c->fd) return;
    epoll_event ev{};
    ev.events = EPOLLIN | (on ? EPOLLOUT : 0u);
    ev.data.u64 = (uint64_t{c->generation} << 16) | c->index;
    if (epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, c->fd.get(), &ev) == 0) c->watching_out = on;
}

void TcpInterface::note_kernel_full(Connection* c) {
    watch_writable(c, true);
    // Only with the watch in place: without it nothing would ever clear the flag.
    c->tx_full = c->watching_out;
}

void TcpInterface::drop_socket(Connection* c) {
    if (c->fd) {
        epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, c->fd.get(), nullptr);
        c->fd.reset();
    }
    c->watching_out = false;
    c->tx_full = false;
}

bool TcpInterface::flush(Connection* c) {
    if (c->state != Connection::State::kOpen) return true;  // connecting: nothing to write yet
    while (c->hs_off != c->hs_len) {
        ssize_t n = ::send(c->fd.get(), c->hs_buf + c->hs_off, c->hs_len - c->hs_off,
                           MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            c->hs_off = static_cast<uint8_t>(c->hs_off + n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            watch_writable(c, true);
            return true;
        }
        fail(c, Status::kConnectionReset);
        return false;
    }
    c->hs_off = c->hs_len = 0;
    // The kernel had no room at the last try: EPOLLOUT (watched) clears the flag and calls
    // us again; trying now would only fail once more.
    if (c->tx_full) return true;
    // Data frames (queued while connecting) wait for the handshake: with a key, nothing may
    // reach the peer before its proof checked out.
    while (c->handshake_done && !c->sendq.empty()) {
        ssize_t n =
            ::send(c->fd.get(), c->sendq.data(), c->sendq.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            c->sendq.consume(static_cast<size_t>(n));
            c->data_written += static_cast<uint64_t>(n);
            c->ack_owed = false;  // the segment carries our ACK
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            note_kernel_full(c);
            return true;
        }
        fail(c, Status::kConnectionReset);
        return false;
    }
    if (c->sendq.empty() || !c->handshake_done) {
        c->sendq.park();  // idle connections hold no send buffer
        watch_writable(c, false);
        if (c->closing() && !c->write_shut && c->sendq.empty()) {
            shutdown(c->fd.get(), SHUT_WR);
            c->write_shut = true;
        }
    } else {
        watch_writable(c, true);
    }
    return true;
}

Status TcpInterface::queue_frame(Connection* c, AmId id, const void* hdr, size_t hdr_len,
                                 const void* payload, size_t length) {
    const size_t frame = kFrameHeaderSize + hdr_len + length;
    if (!c->sendq.empty() && c->sendq.size() + frame > config_.sndbuf_limit) {
        if (!flush(c)) return Status::kConnectionReset;
        // Checked before anything is written: the caller parks the send and retries.
        if (!c->sendq.empty() && c->sendq.size() + frame > config_.sndbuf_limit) {
            return Status::kNoResource;
        }
    }
    uint8_t* dst = c->sendq.reserve_tail(frame);
    if (dst == nullptr) return Status::kNoMemory;
    encode_frame_header(dst, id, static_cast<uint32_t>(hdr_len + length), c->rx_data);
    if (hdr_len != 0) std::memcpy(dst + kFrameHeaderSize, hdr, hdr_len);
    if (length != 0) std::memcpy(dst + kFrameHeaderSize + hdr_len, payload, length);
    c->sendq.commit(frame);
    if (c->sendq.size() >= kCorkFlush) return flush(c) ? Status::kOk : Status::kConnectionReset;
    if (!c->corked) {
        c->corked = true;
        corked_.push_back(c->index);
    }
    return Status::kOk;
}

Status TcpInterface::send(Connection* c, AmId id, const void* hdr, size_t hdr_len,
                          const void* payload, size_t length) {
    const size_t body = hdr_len + length;
    if (__builtin_expect(!c->writable_now(), 0)) {
        if (!c->sendable()) return Status::kConnectionReset;
        if (body > kMaxFrameBody) return Status::kInvalidParam;
        // Connecting, or the handshake not done: the frame waits in the queue (within the
        // limit) and leaves once the handshake is done.
        return queue_frame(c, id, hdr, hdr_len, payload, length);
    }
    if (__builtin_expect(body > kMaxFrameBody, 0)) return Status::kInvalidParam;
    const size_t frame = kFrameHeaderSize + body;
    if (c->tx_full) {
        // No room in the kernel at the last try, and epoll has not reported any since: a
        // small frame waits in the queue, a large one for the caller's retry.
        if (frame <= kCorkMax) return queue_frame(c, id, hdr, hdr_len, payload, length);
        return Status::kNoResource;
    }
    if (frame <= kCorkMax) {
        // The second small send of one progress pass is a burst (a window of messages, a
        // reply after a receive): queue it, and the whole burst leaves in one system call at
        // the next progress. The first one goes out at once, so a lone message (ping-pong)
        // waits for nothing. Behind queued bytes a frame must queue anyway, to keep order.
        if (c->send_epoch == epoch_ || !c->sendq.empty()) {
            return queue_frame(c, id, hdr, hdr_len, payload, length);
        }
        c->send_epoch = epoch_;
    }
    uint8_t fh[kFrameHeaderSize];
    encode_frame_header(fh, id, static_cast<uint32_t>(body), c->rx_data);
    // One sendmsg straight from the caller's buffers, behind whatever is queued: a large
    // payload is never copied on its way in, only a tail the kernel had no room for.
    const size_t queued = c->sendq.size();
    iovec iov[4];
    int k = 0;
    if (queued != 0) iov[k++] = {c->sendq.data(), queued};
    iov[k++] = {fh, kFrameHeaderSize};
    if (hdr_len != 0) iov[k++] = {const_cast<void*>(hdr), hdr_len};
    if (length != 0) iov[k++] = {const_cast<void*>(payload), length};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(k);
    ssize_t n;
    do {
        n = sendmsg(c->fd.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            fail(c, Status::kConnectionReset);
            return Status::kConnectionReset;
        }
        n = 0;
    }
    size_t done = static_cast<size_t>(n);
    if (n > 0) {
        c->data_written += static_cast<uint64_t>(n);
        c->ack_owed = false;  // the segment carries our ACK
    }
    if (queued != 0) {
        const size_t from_queue = std::min(done, queued);
        c->sendq.consume(from_queue);
        c->sendq.park();  // went out whole: an idle connection holds no send buffer
        done -= from_queue;
        if (from_queue < queued) {
            // Not a byte of this frame went out: the caller retries after progress (EPOLLOUT)
            // drained the queue. (A small frame never gets here: it joins the queue.)
            note_kernel_full(c);
            return Status::kNoResource;
        }
    }
    if (done == frame) {
        if (queued != 0) watch_writable(c, false);
        return Status::kOk;
    }
    if (done == 0 && frame > kCorkMax) {
        // The kernel is full and nothing of this frame left: rather than copy it, let the
        // caller retry once progress (or EPOLLOUT, for a blocking wait) finds room.
        note_kernel_full(c);
        return Status::kNoResource;
    }
    // The kernel took part of the frame: the rest goes to the (now empty) queue, always
    // accepted, so one message never waits forever on a limit smaller than itself.
    uint8_t* dst = c->sendq.reserve_tail(frame - done);
    if (dst == nullptr) {
        // Part of a frame is on the wire and the rest cannot be kept: the stream is broken.
        fail(c, Status::kNoMemory);
        return Status::kNoMemory;
    }
    for (int i = queued != 0 ? 1 : 0; i < k; ++i) {
        const iovec& v = iov[i];
        const size_t skip = std::min(done, v.iov_len);
        done -= skip;
        const size_t rest = v.iov_len - skip;
        if (rest != 0) {
            std::memcpy(dst, static_cast<const uint8_t*>(v.iov_base) + skip, rest);
            dst += rest;
            c->sendq.commit(rest);
        }
    }
    note_kernel_full(c);  // a partial write filled the kernel's buffer
    return Status::kOk;
}

Status TcpInterface::send_packed(Connection* c, AmId id, const void* hdr, size_t hdr_len,
                                 Endpoint::PackFn pack, void* arg, size_t length) {
    if (!c->sendable()) return Status::kConnectionReset;
    const size_t body = hdr_len + length;
    if (body > kMaxFrameBody) return Status::kInvalidParam;
    if (!c->sendq.empty()) {
        if (!flush(c)) return Status::kConnectionReset;
        if (!c->sendq.empty() && c->sendq.size() + kFrameHeaderSize + body > config_.sndbuf_limit) {
            return Status::kNoResource;
        }
    }
    // Packed straight into the queue's tail (one copy, which the pack routine has to make
    // anyway), then written from there.
    uint8_t* dst = c->sendq.reserve_tail(kFrameHeaderSize + body);
    if (dst == nullptr) return Status::kNoMemory;
    encode_frame_header(dst, id, static_cast<uint32_t>(body), c->rx_data);
    if (hdr_len != 0) std::memcpy(dst + kFrameHeaderSize, hdr, hdr_len);
    Status s = pack(arg, dst + kFrameHeaderSize + hdr_len, length);
    if (s != Status::kOk) return s;  // not committed: nothing reaches the peer
    c->sendq.commit(kFrameHeaderSize + body);
    if (!flush(c)) return Status::kConnectionReset;
    return Status::kOk;
}

Status TcpInterface::send_control(Connection* c, const uint8_t* body, size_t length) {
    // Control frames bypass the limit: they are tiny and must not be refused.
    uint8_t fh[kFrameHeaderSize];
    encode_frame_header(fh, kTcpControlAm, static_cast<uint32_t>(length), c->rx_data);
    if (!c->sendq.append(fh, sizeof(fh)) || !c->sendq.append(body, length)) {
        return Status::kNoMemory;
    }
    return flush(c) ? Status::kOk : Status::kConnectionReset;
}

void TcpInterface::disconnect(Connection* c) {
    if (!c->sendable() || c->goodbye_sent) return;
    // From now on flush() shuts the write side down once the queue is empty (now or from
    // progress), unless the peer's endpoint uses the connection too (then at its goodbye);
    // the peer then closes, and our read side sees the EOF and closes quietly.
    c->goodbye_sent = true;
    const uint8_t bye = static_cast<uint8_t>(TcpControl::kGoodbye);
    (void)send_control(c, &bye, 1);
}

}  // namespace swy::tl::tcp

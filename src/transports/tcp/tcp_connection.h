// Internal to the tcp transport: one connection's state and its byte buffers.
#pragma once

#include <sys/socket.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "transports/tcp/tcp_iface.h"

namespace swy::tl::tcp {

/// epoll data of a listening socket: this bit | index into listen_fds_. Connections use
/// (generation << 16) | index, so a stale event for a reused slot is recognised.
inline constexpr uint64_t kListenTag = uint64_t{1} << 63;
/// epoll data of the connect-deadline timer.
inline constexpr uint64_t kTimerTag = uint64_t{1} << 62;
/// epoll data of the timer for the next look at acknowledgements (tcp_liveness.cpp).
inline constexpr uint64_t kAckTimerTag = uint64_t{1} << 61;

/// "1.2.3.4:5" / "[::1]:5", for log lines.
std::string entry_text(const TcpAddressEntry& e);
/// CLOCK_MONOTONIC in nanoseconds (connect deadlines).
uint64_t monotonic_ns();

/// One spare buffer an interface keeps for its byte queues: a queue that runs empty parks its
/// storage here (park()), and the next queue that needs room takes it, so idle connections
/// hold no buffer and a busy interface does not call malloc per message.
struct TcpInterface::SpareBuffer {
    uint8_t* buf = nullptr;
    size_t cap = 0;
    SpareBuffer() = default;
    SpareBuffer(const SpareBuffer&) = delete;
    SpareBuffer& operator=(const SpareBuffer&) = delete;
    ~SpareBuffer() { std::free(buf); }
};

/// A contiguous FIFO of bytes: append at the tail, consume at the head. Storage grows by
/// doubling and is compacted (one memmove of what is left) only when the tail needs room, so
/// each byte is moved at most a bounded number of times. Used for the send queue (written in
/// one send() from data()) and the receive buffer (frames parsed in place). Storage is taken
/// on demand (from the interface's spare buffer when it has one) and given back by park().
class TcpInterface::ByteQueue {
public:
    ByteQueue() = default;
    ByteQueue(const ByteQueue&) = delete;
    ByteQueue& operator=(const ByteQueue&) = delete;
    ~ByteQueue() { std::free(buf_); }

    /// Where park() leaves storage and reserve_tail() looks first (null: plain malloc/free).
    void set_spare(SpareBuffer* spare) { spare_ = spare; }
    /// Empty: hand the storage to the spare slot (or free it if the slot is taken, or if it
    /// grew beyond kSpareKeepMax: an idle interface keeps no buffer sized by a large frame).
    void park() {
        if (buf_ == nullptr || head_ != tail_) return;
        if (spare_ != nullptr && spare_->buf == nullptr && cap_ <= kSpareKeepMax) {
            spare_->buf = buf_;
            spare_->cap = cap_;
        } else {
            std::free(buf_);
        }
        buf_ = nullptr;
        cap_ = head_ = tail_ = 0;
    }

    size_t size() const { return tail_ - head_; }
    bool empty() const { return tail_ == head_; }
    uint8_t* data() { return buf_ + head_; }
    const uint8_t* data() const { return buf_ + head_; }
    size_t capacity() const { return cap_; }

    /// Room for @p n more bytes at the tail; returns where they go (null if out of memory).
    uint8_t* reserve_tail(size_t n) {
        if (cap_ - tail_ >= n) return buf_ + tail_;
        if (head_ != 0) {  // compact first: often enough on its own
            std::memmove(buf_, buf_ + head_, size());
            tail_ -= head_;
            head_ = 0;
            if (cap_ - tail_ >= n) return buf_ + tail_;
        }
        if (buf_ == nullptr && spare_ != nullptr && spare_->buf != nullptr && spare_->cap >= n) {
            buf_ = spare_->buf;
            cap_ = spare_->cap;
            spare_->buf = nullptr;
            spare_->cap = 0;
            return buf_;
        }
        size_t cap = cap_ == 0 ? 64 * 1024 : cap_;
        while (cap - tail_ < n)
            cap *= 2;
        auto* p = static_cast<uint8_t*>(std::realloc(buf_, cap));
        if (p == nullptr) return nullptr;
        buf_ = p;
        cap_ = cap;
        return buf_ + tail_;
    }
    /// Free bytes after the tail without moving anything.
    size_t tail_room() const { return cap_ - tail_; }
    uint8_t* tail_ptr() { return buf_ + tail_; }
    void commit(size_t n) { tail_ += n; }
    void unreserve(size_t n) { tail_ -= n; }  ///< drop the last n committed bytes
    bool append(const void* p, size_t n) {
        if (n == 0) return true;
        uint8_t* dst = reserve_tail(n);
        if (dst == nullptr) return false;
        std::memcpy(dst, p, n);
        tail_ += n;
        return true;
    }
    void consume(size_t n) {
        head_ += n;
        if (head_ == tail_) head_ = tail_ = 0;
    }
    /// Drop the contents and the storage (parked for reuse where possible).
    void release() {
        head_ = tail_ = 0;
        park();
    }

private:
    SpareBuffer* spare_ = nullptr;
    uint8_t* buf_ = nullptr;
    size_t cap_ = 0;
    size_t head_ = 0;
    size_t tail_ = 0;
};

/// A message whose payload is read straight into the sink's memory (zero-copy receive):
/// its header is kept here, so nothing of it lives in the receive buffer while the payload
/// trickles in over several progress calls.
struct TcpPlacement {
    static constexpr size_t kMaxHeader = 64;  ///< larger placement headers are not placed
    bool active = false;
    bool discard = false;  ///< the destination went away mid-payload: drop the rest
    AmId id = 0;
    uint8_t hdr_len = 0;
    uint8_t hdr[kMaxHeader] = {};
    size_t length = 0;  ///< payload bytes after the header
    size_t done = 0;    ///< payload bytes read so far
};

struct TcpInterface::Connection {
    /// kConnecting: an outgoing connection still trying the peer's addresses (fd is the
    /// current attempt's socket, or -1 between attempts). kOpen: connected; frames flow once
    /// handshake_done.
    enum class State : uint8_t { kConnecting, kOpen, kClosed };
    common::UniqueFd fd;
    uint16_t index = 0;
    uint32_t generation = 0;  ///< bumped when the slot is reused; endpoints check it
    State state = State::kClosed;
    bool outgoing = false;  ///< we connected (the owner endpoint lives in the worker)
    /// The handshake is complete on our side: the peer is who it claimed (and proved it, with
    /// a key). Before this nothing is delivered to the sink and no data frame is written.
    bool handshake_done = false;
    bool hello_received = false;    ///< acceptor: the connector's hello arrived (proof next)
    bool goodbye_sent = false;      ///< our owner endpoint disconnected: orderly close
    bool goodbye_received = false;  ///< the peer's endpoint disconnected: orderly close
    /// The peer has an endpoint of its own on this connection (it connected, or it attached
    /// with kAttach): after our goodbye the connection stays open for it until its goodbye.
    bool remote_owner = false;
    /// Outgoing, answered with kRedirect (both sides connected at once, and the peer's uid is
    /// lower): no socket; waits, until the connect deadline, for the peer's own connection,
    /// which the owner endpoint then moves to (adopt_accepted()).
    bool redirected = false;
    /// Outgoing: the acceptor proved the key (if any) and our proof is out, but it asked us
    /// (kHelloAckHold) to send no data before its verdict, kProceed or kRedirect: it is
    /// connecting to us too. handshake_done stays false meanwhile (nothing is written).
    bool held = false;
    /// Accepted: we answered with kHelloAckHold; the verdict goes out once the connector's
    /// proof checked out (tcp_pairing.cpp, peer_verified()).
    bool verdict_owed = false;
    /// kConnecting between two rounds of attempts over the peer's addresses (no socket): the
    /// next round starts at attempt_deadline_ns.
    bool retry_wait = false;
    /// An attempt of the current round got no answer in time (a lost SYN, a busy peer): worth
    /// another round. A round in which every address refused is not retried.
    bool round_timed_out = false;
    uint8_t rounds = 0;  ///< rounds of attempts begun (backoff between them)
    /// Worst local reason an attempt could not even start (kNoResource: out of descriptors);
    /// reported instead of kUnreachable when nothing else answered.
    Status local_failure = Status::kOk;
    bool write_shut = false;    ///< shutdown(SHUT_WR) done after the goodbye
    bool watching_out = false;  ///< EPOLLOUT is in the epoll set
    /// The kernel's send buffer was full at the last write and EPOLLOUT is watched: sends
    /// queue (small) or are refused (large) without a system call until epoll reports room
    /// (note_kernel_full(); progress polls such a connection through epoll).
    bool tx_full = false;
    bool reported = false;         ///< on_remote_failure was called (once per connection)
    Status failure = Status::kOk;  ///< why it failed, while waiting to be reported
    bool corked = false;           ///< on corked_: its queue goes out at the next progress
    /// Bytes after the frame header to read into the receive buffer next: the header of the
    /// next frame only, so that when it too is placed, none of its payload takes the
    /// receive buffer's detour (0: read as much as fits). Kept until that header is whole
    /// (the last read of a placed payload may have brought part of it).
    uint8_t expect_header = 0;
    uint64_t peer_uid = 0;     ///< acceptor: only set once the handshake is done
    uint64_t claimed_uid = 0;  ///< acceptor: the uid the hello claimed, until verified
    uint64_t key_epoch = 0;    ///< the interface's key epoch the handshake started under
    uint8_t own_nonce[kNonceSize] = {};
    uint8_t peer_nonce[kNonceSize] = {};
    /// Handshake frames, written before the send queue (which holds data frames queued
    /// while connecting; they must not overtake the proof). One frame at a time fits.
    uint8_t hs_buf[2 * (kFrameHeaderSize + kHelloAckMaxSize)] = {};
    uint8_t hs_len = 0;
    uint8_t hs_off = 0;
    /// kConnecting: the addresses to try, in order, and the deadlines (CLOCK_MONOTONIC ns).
    std::vector<TcpAddressEntry> targets;
    size_t next_target = 0;
    uint64_t attempt_deadline_ns = 0;
    uint64_t connect_deadline_ns = 0;
    /// kOpen and !handshake_done: closed (kTimedOut) if the handshake is not done by then.
    uint64_t handshake_deadline_ns = 0;
    std::string tried;        ///< "address: error, ..." for the failure's log line
    uint64_t send_epoch = 0;  ///< progress pass of the last direct send (burst detection)
    /// Bytes of sendq and direct sends the kernel took (handshake frames not counted), and
    /// of those the peer acknowledged as of the last look: data_written - SIOCOUTQ, which
    /// is conservative (SIOCOUTQ also counts unacknowledged handshake bytes).
    uint64_t data_written = 0;
    uint64_t acked = 0;
    /// Data bytes of the peer's (every frame but the handshake's) taken out of the socket:
    /// what our frame headers tell the peer (FrameHeader::read), so that its sends complete
    /// when our reply arrives, without a SIOCOUTQ. A frame counts once it is read whole (or
    /// its header is, for a placed one: then its payload as it lands).
    uint64_t rx_data = 0;
    /// Waiting for acknowledgements (TcpInterface::acknowledged): the highest position
    /// someone waits for, when to look next (CLOCK_MONOTONIC ns; 0: nobody waits) and the
    /// pause after that look (doubling while looks find nothing new); on ack_waits_.
    uint64_t ack_wanted = 0;
    uint64_t ack_look_ns = 0;
    uint64_t ack_pause_ns = 0;
    bool ack_watched = false;
    bool ack_by_reply = false;  ///< the last wait ended with a reply that carried the ACK
    /// Bytes arrived since the last look (any segment carries an ACK), and data_written at
    /// the latest arrival: only one that came after bytes not yet known acknowledged were
    /// written can acknowledge them.
    bool rx_since_look = false;
    uint64_t rx_written = 0;
    /// A message could not be delivered for want of memory: it waits in recvq, and the
    /// connection is not read until retry_stalled() got it through.
    bool stalled = false;
    bool stall_logged = false;
    /// Received bytes since we last sent (our next frame carries the ACK): a connection that
    /// has not sent by the next progress pass acknowledges at once (TCP_QUICKACK), so that a
    /// sender waiting for delivery is not held by the delayed-ACK timer; not while a frame
    /// is still arriving (its rest must come, and the kernel ACKs a stream by itself).
    bool ack_owed = false;
    uint64_t ack_owed_epoch = 0;
    bool ack_listed = false;  ///< on TcpInterface::ack_owed_ (once, however long it waits)
    ByteQueue sendq;
    ByteQueue recvq;
    TcpPlacement place;
    std::unique_ptr<TcpEndpoint> reply_ep;
    TcpEndpoint* owner_ep = nullptr;  ///< the endpoint connect() returned, while it exists

    /// Neither side has an endpoint on it any more: the write side shuts once the queue is out.
    bool closing() const { return goodbye_sent && !remote_owner; }
    /// Our own endpoint uses it (and has not disconnected).
    bool locally_owned() const { return owner_ep != nullptr && !goodbye_sent; }
    /// Sends are accepted (queued while connecting or handshaking).
    bool sendable() const { return state != State::kClosed && !closing(); }
    /// Data frames may be written to the socket now, straight behind the send queue.
    bool writable_now() const {
        return state == State::kOpen && handshake_done && !closing() && hs_off == hs_len;
    }
    bool has_output() const { return hs_off != hs_len || !sendq.empty(); }
    /// Failed, and the sink has not been told yet (the slot must not be reused before).
    bool awaiting_report() const { return failure != Status::kOk && !reported && peer_uid != 0; }
};

}  // namespace swy::tl::tcp

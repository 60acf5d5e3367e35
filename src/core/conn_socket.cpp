// Non-blocking handshake socket (see conn_socket.h).
#include "core/conn_socket.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace swy::core {

using common::socket_errno_status;

void ConnSocket::queue(const std::vector<uint8_t>& bytes) {
    if (sent_ == sendq_.size()) {
        sendq_.clear();
        sent_ = 0;
    }
    sendq_.insert(sendq_.end(), bytes.begin(), bytes.end());
}

Status ConnSocket::flush() {
    while (sent_ < sendq_.size()) {
        ssize_t n = ::send(fd_.get(), sendq_.data() + sent_, sendq_.size() - sent_, MSG_NOSIGNAL);
        if (n > 0) {
            sent_ += static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Status::kInProgress;
        return socket_errno_status(n < 0 ? errno : EPIPE);
    }
    return Status::kOk;
}

Status ConnSocket::receive() {
    uint8_t chunk[4096];
    for (;;) {
        ssize_t n = ::recv(fd_.get(), chunk, sizeof(chunk), 0);
        if (n > 0) {
            // A peer may not make us buffer more than one maximal frame plus a verdict.
            if (recvq_.size() + static_cast<size_t>(n) >
                2 * (kConnMaxBody + kConnFrameHeaderSize)) {
                return Status::kIoError;
            }
            recvq_.insert(recvq_.end(), chunk, chunk + n);
            continue;
        }
        if (n == 0) return Status::kEndpointClosed;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::kOk;
        return socket_errno_status(errno);
    }
}

Status ConnSocket::next_frame(ConnFrameHeader* header, std::vector<uint8_t>* body,
                              std::string* why) {
    ConnFrameHeader h;
    switch (decode_conn_frame(recvq_.data(), recvq_.size(), &h, why)) {
        case ConnFrameCheck::kNeedMore: return Status::kInProgress;
        case ConnFrameCheck::kBad: return Status::kMalformed;
        case ConnFrameCheck::kOk: break;
    }
    if (recvq_.size() - kConnFrameHeaderSize < h.length) return Status::kInProgress;
    const auto* start = recvq_.data() + kConnFrameHeaderSize;
    body->assign(start, start + h.length);
    recvq_.erase(recvq_.begin(),
                 recvq_.begin() + static_cast<long>(kConnFrameHeaderSize + h.length));
    *header = h;
    return Status::kOk;
}

void ConnSocket::shutdown_write() {
    if (fd_) ::shutdown(fd_.get(), SHUT_WR);
}

}  // namespace swy::core

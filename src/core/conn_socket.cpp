// Non-blocking handshake socket (see conn_socket.h).
#include "core/conn_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace swy::core {

namespace {
Status errno_status(int e) {
    switch (e) {
        case ECONNREFUSED:
        case EHOSTUNREACH:
        case ENETUNREACH:
        case ETIMEDOUT: return Status::kUnreachable;
        case ECONNRESET:
        case EPIPE: return Status::kConnectionReset;
        default: return Status::kIoError;
    }
}
}  // namespace

void ConnSocket::queue(const std::vector<uint8_t>& bytes) {
    if (sent_ == sendq_.size()) {
        sendq_.clear();
        sent_ = 0;
    }
    sendq_.insert(sendq_.end(), bytes.begin(), bytes.end());
}

Status ConnSocket::flush() {
    while (sent_ < sendq_.size()) {
        ssize_t n = ::send(fd_, sendq_.data() + sent_, sendq_.size() - sent_, MSG_NOSIGNAL);
        if (n > 0) {
            sent_ += static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Status::kInProgress;
        return errno_status(n < 0 ? errno : EPIPE);
    }
    return Status::kOk;
}

Status ConnSocket::receive() {
    uint8_t chunk[4096];
    for (;;) {
        ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
        if (n > 0) {
            // A peer may not make us buffer more than one maximal frame plus a verdict.
            if (recvq_.size() + static_cast<size_t>(n) > 2 * (kConnMaxBody + kConnFrameHeaderSize)) {
                return Status::kIoError;
            }
            recvq_.insert(recvq_.end(), chunk, chunk + n);
            continue;
        }
        if (n == 0) return Status::kEndpointClosed;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::kOk;
        return errno_status(errno);
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
    recvq_.erase(recvq_.begin(), recvq_.begin() + static_cast<long>(kConnFrameHeaderSize + h.length));
    *header = h;
    return Status::kOk;
}

void ConnSocket::shutdown_write() {
    if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

void ConnSocket::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

std::string describe_sockaddr(const sockaddr* sa, socklen_t length) {
    char ip[INET6_ADDRSTRLEN] = "?";
    if (sa == nullptr) return "?";
    if (sa->sa_family == AF_INET && length >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
        return std::string(ip) + ":" + std::to_string(ntohs(in->sin_port));
    }
    if (sa->sa_family == AF_INET6 && length >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
        const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        // Appended piecewise: GCC 12 at -O3 raises a false -Wrestrict on "[" + std::string.
        std::string text("[");
        text.append(ip).append("]:").append(std::to_string(ntohs(in6->sin6_port)));
        return text;
    }
    return "(address family " + std::to_string(sa->sa_family) + ")";
}

bool valid_inet_sockaddr(const sockaddr* sa, size_t length, std::string* why) {
    if (sa == nullptr || length < sizeof(sa_family_t)) {
        *why = "sockaddr is NULL or shorter than its family field";
        return false;
    }
    if (sa->sa_family == AF_INET) {
        if (length >= sizeof(sockaddr_in)) return true;
        *why = "sockaddr_length is shorter than a sockaddr_in";
        return false;
    }
    if (sa->sa_family == AF_INET6) {
        if (length >= sizeof(sockaddr_in6)) return true;
        *why = "sockaddr_length is shorter than a sockaddr_in6";
        return false;
    }
    *why = "sockaddr family must be AF_INET or AF_INET6";
    return false;
}

}  // namespace swy::core

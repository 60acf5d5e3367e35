// One non-blocking stream socket that carries a connection handshake (conn_wire.h): a queue of
// bytes to write, a buffer of bytes read, and frame extraction. Setup-time code: it allocates
// freely and makes a system call per operation. Not thread-safe (the worker serialises).
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/socket.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "core/conn_wire.h"

namespace swy::core {

class ConnSocket {
public:
    ConnSocket() = default;
    /// Takes ownership of @p fd (non-blocking, close-on-exec); @p peer names it in logs.
    ConnSocket(common::UniqueFd fd, std::string peer)
        : fd_(std::move(fd)), peer_(std::move(peer)) {}
    /// Take ownership of @p fd (closing any previous one).
    void adopt(common::UniqueFd fd, std::string peer) {
        fd_ = std::move(fd);
        peer_ = std::move(peer);
    }

    int fd() const { return fd_.get(); }
    bool open() const { return fd_.valid(); }
    const std::string& peer() const { return peer_; }
    bool send_pending() const { return sent_ < sendq_.size(); }

    /// Append bytes to the send queue (written by flush()).
    void queue(const std::vector<uint8_t>& bytes);
    /// Write what the kernel takes. kOk: queue empty; kInProgress: the rest later;
    /// kConnectionReset / kUnreachable (refused) / kIoError: the socket is dead.
    Status flush();
    /// Read everything available. kOk: nothing more now; kEndpointClosed: EOF (what was read
    /// before it is still buffered); kConnectionReset / kUnreachable / kIoError: dead.
    Status receive();
    /// Take the next complete frame out of the buffer. kOk: @p header and @p body filled;
    /// kInProgress: incomplete (read more); kMalformed: @p why says what (close the socket).
    Status next_frame(ConnFrameHeader* header, std::vector<uint8_t>* body, std::string* why);
    /// Bytes received and not yet taken as frames.
    size_t buffered() const { return recvq_.size(); }
    /// No more writes from us (the peer sees EOF once the queue is written).
    void shutdown_write();
    void close() { fd_.reset(); }

private:
    common::UniqueFd fd_;
    std::string peer_;
    std::vector<uint8_t> sendq_;
    size_t sent_ = 0;
    std::vector<uint8_t> recvq_;
};

// Kept under their old names for the connection manager (they live in common/socket.h).
using common::describe_sockaddr;
using common::valid_inet_sockaddr;

}  // namespace swy::core

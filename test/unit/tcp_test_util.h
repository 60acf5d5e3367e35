// Helpers shared by the tcp transport unit tests: deterministic payloads and a bounded
// progress loop over several interfaces.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <thread>
#include <vector>

#include "transports/tcp/tcp_iface.h"

namespace swy::tl::tcp::test {

/// @p n bytes of a pseudo-random pattern; different seeds give different payloads.
inline std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
    std::vector<uint8_t> v(n);
    uint32_t x = seed * 2654435761u + 1;
    for (auto& b : v) {
        x = x * 1664525u + 1013904223u;
        b = static_cast<uint8_t>(x >> 24);
    }
    return v;
}

/// Progresses every interface (null entries skipped) until @p done or 10 s pass; false on
/// timeout.
inline bool progress_until(std::initializer_list<TcpInterface*> ifaces,
                           const std::function<bool()>& done) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        for (TcpInterface* i : ifaces) {
            if (i != nullptr) i->progress();
        }
    }
    return true;
}

/// A plain socket connected to @p to's IPv4 loopback address (-1 if none answers): how the
/// tests play a peer that speaks the wire format by hand.
inline int raw_connect(const TcpInterface& to) {
    for (const TcpAddressEntry& e : to.listen_addresses()) {
        if (e.family != 4) continue;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in sin{};
        sin.sin_family = AF_INET;
        sin.sin_port = htons(e.port);
        std::memcpy(&sin.sin_addr, e.ip, 4);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&sin), sizeof(sin)) == 0) return fd;
        close(fd);
    }
    return -1;
}

/// Loopback addresses where a TCP connect hangs without an answer, as towards a blackholed
/// host: listeners with a backlog of 0 whose one queue slot a connection already holds, so
/// the kernel drops every further SYN. Deterministic, unlike unroutable addresses (which
/// some sandboxes refuse at once, and some proxy).
class Blackholes {
public:
    explicit Blackholes(size_t count) {
        for (size_t i = 0; i < count; ++i) {
            int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            sockaddr_in sin{};
            sin.sin_family = AF_INET;
            sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            socklen_t len = sizeof(sin);
            if (l < 0 || bind(l, reinterpret_cast<sockaddr*>(&sin), sizeof(sin)) != 0 ||
                listen(l, 0) != 0 || getsockname(l, reinterpret_cast<sockaddr*>(&sin), &len) != 0) {
                if (l >= 0) close(l);
                continue;
            }
            fds_.push_back(l);
            // Fill the accept queue: these connect (the queue holds one), later SYNs are dropped.
            for (int k = 0; k < 2; ++k) {
                int f = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
                (void)::connect(f, reinterpret_cast<sockaddr*>(&sin), sizeof(sin));
                fds_.push_back(f);
            }
            TcpAddressEntry e;
            e.family = 4;
            e.port = ntohs(sin.sin_port);
            e.ip[0] = 127;
            e.ip[3] = 1;
            entries_.push_back(e);
        }
        // Let the fillers' handshakes complete before anyone else knocks.
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ~Blackholes() {
        for (int fd : fds_)
            close(fd);
    }
    Blackholes(const Blackholes&) = delete;
    Blackholes& operator=(const Blackholes&) = delete;
    const std::vector<TcpAddressEntry>& entries() const { return entries_; }
    std::vector<uint8_t> section() const { return encode_tcp_address(entries_); }

private:
    std::vector<int> fds_;
    std::vector<TcpAddressEntry> entries_;
};

}  // namespace swy::tl::tcp::test

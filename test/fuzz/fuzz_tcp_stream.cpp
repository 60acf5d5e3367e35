// Fuzz target "tcp_stream": the tcp transport's receive path (tcp_progress.cpp: frame
// headers, hello and goodbye control frames, frame bodies, EOF inside a frame) exactly as a
// hostile peer reaches it. One tcp interface listens on loopback for the whole run; each
// input is written by a fresh client connection, which then closes its sending side. The
// interface must deliver only whole, in-bounds frames and close the connection; it must
// never crash, read past a frame, or keep a connection whose peer has gone.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "common/log.h"
#include "transports/tcp/tcp_iface.h"

#include "targets.h"

namespace {

using namespace swy;
using namespace swy::tl::tcp;

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "fuzz_tcp_stream: %s (errno %s)\n", what, std::strerror(errno));
    std::abort();
}

/// Reads every delivered byte (ASan flags any that lie outside the frame) and checks what
/// the transport promised the worker.
class CheckingSink final : public tl::AmSink {
public:
    void on_am(tl::AmId id, tl::AmSource, const uint8_t* data, size_t length) override {
        if (id == kTcpControlAm) fail("a control frame reached the sink");
        if (length > kMaxFrameBody) fail("a frame longer than kMaxFrameBody was delivered");
        if (length > 0 && data == nullptr) fail("a non-empty frame without data");
        unsigned sum = 0;
        for (size_t i = 0; i < length; ++i)
            sum += data[i];
        checksum_ += sum;
    }
    void on_remote_failure(uint16_t, uint64_t, Status) override {}
    unsigned checksum_ = 0;
};

struct Harness {
    CheckingSink sink;
    std::unique_ptr<TcpInterface> iface;
    sockaddr_in to{};

    unsigned inputs = 0;

    Harness() {
        common::set_log_level(static_cast<common::LogLevel>(-1));  // malformed input is the norm
        open();
    }

    // Closed connections keep their slot until 65535 were handed out, and progress() walks
    // the table: a fresh interface now and then keeps every input equally cheap.
    void open() {
        iface.reset();
        TcpConfig config;
        config.devices = {"lo"};
        std::string why;
        if (TcpInterface::open(config, 0x1234, 0, &sink, &iface, &why) != Status::kOk) {
            std::fprintf(stderr, "fuzz_tcp_stream: cannot listen on lo: %s\n", why.c_str());
            std::abort();
        }
        for (const TcpAddressEntry& e : iface->listen_addresses()) {
            if (e.family != 4) continue;
            to.sin_family = AF_INET;
            to.sin_port = htons(e.port);
            std::memcpy(&to.sin_addr, e.ip, 4);
            return;
        }
        fail("no IPv4 loopback listening address");
    }
};

/// Blocking connect that survives signals (libFuzzer's timer interrupts system calls): after
/// EINTR the connection goes on in the background, so wait for it and read its outcome.
void connect_to(int fd, const sockaddr_in& to) {
    if (connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0) return;
    if (errno != EINTR) fail("connect");
    pollfd p{fd, POLLOUT, 0};
    while (poll(&p, 1, -1) < 0) {
        if (errno != EINTR) fail("poll after connect");
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
        errno = err;
        fail("connect (after EINTR)");
    }
}

/// One pass as a worker makes it: the interface looks at its sockets only every few calls,
/// unless its event fd woke the worker (then disarm() makes the next call look).
void progress(TcpInterface* iface) {
    pollfd p{iface->event_fd(), POLLIN, 0};
    if (poll(&p, 1, 0) > 0) iface->disarm();
    iface->progress();
}

}  // namespace

int swy::fuzz::fuzz_tcp_stream(const uint8_t* data, size_t size) {
    static Harness h;
    if (++h.inputs % 1024 == 0) h.open();
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) fail("socket");
    connect_to(fd, h.to);
    // The interface may close on a bad header before reading the rest: EPIPE/ECONNRESET here
    // are fine, and so is a short write.
    size_t sent = 0;
    while (sent < size) {
        ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            sent += static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            progress(h.iface.get());  // let it read
            continue;
        }
        break;
    }
    shutdown(fd, SHUT_WR);
    // Progress until the interface has closed its side: our socket then reads EOF or a reset.
    for (unsigned i = 0;; ++i) {
        progress(h.iface.get());
        char sink[4096];
        ssize_t n = recv(fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) break;
        if (i > 2'000'000) fail("the interface kept a connection whose peer had closed");
    }
    close(fd);
    // Its close may be seen on the next passes; every connection must be gone by then.
    for (unsigned i = 0; i < 64 && h.iface->open_connections() != 0; ++i) {
        progress(h.iface.get());
    }
    if (h.iface->open_connections() != 0) fail("a closed connection is still open");
    return 0;
}

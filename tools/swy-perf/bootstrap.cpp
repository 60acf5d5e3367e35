#include "bootstrap.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace swy::perf {
namespace {

constexpr uint64_t kMaxBlob = 64u << 20;  // sanity limit on an address blob

}  // namespace

bool Bootstrap::start(const Options& opts) {
    if (opts.self_mode()) {
        role_ = Role::kSelf;
        return true;
    }
    if (opts.server_port < 0 && opts.client_port < 0 && launched_by_pmix()) {
        return start_launched();
    }
    // --server / --client: nothing to do before the worker exists (connect_sockaddr()).
    if (opts.server_port >= 0) {
        role_ = Role::kServer;
        sockaddr_mode_ = true;
        port_ = opts.server_port;
        return true;
    }
    if (opts.client_port >= 0) {
        role_ = Role::kClient;
        sockaddr_mode_ = true;
        host_ = opts.client_host;
        port_ = opts.client_port;
        return true;
    }
    int to_child[2], to_parent[2];
    if (::pipe(to_child) != 0 || ::pipe(to_parent) != 0) {
        std::perror("swy-perf: pipe");
        return false;
    }
    std::fflush(nullptr);  // do not print buffered output twice
    pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) {
        std::perror("swy-perf: fork");
        return false;
    }
    if (pid == 0) {
        // The server must not outlive a client that died.
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (::getppid() != parent) ::_exit(1);
        role_ = Role::kServer;
        rfd_ = to_child[0];
        wfd_ = to_parent[1];
        ::close(to_child[1]);
        ::close(to_parent[0]);
    } else {
        role_ = Role::kClient;
        child_pid_ = pid;
        rfd_ = to_parent[0];
        wfd_ = to_child[1];
        ::close(to_child[0]);
        ::close(to_parent[1]);
    }
    return true;
}

bool Bootstrap::write_all(const void* data, size_t length) {
    const char* p = static_cast<const char*>(data);
    while (length > 0) {
        ssize_t n = ::write(wfd_, p, length);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        length -= static_cast<size_t>(n);
    }
    return true;
}

bool Bootstrap::read_all(void* data, size_t length) {
    char* p = static_cast<char*>(data);
    while (length > 0) {
        ssize_t n = ::read(rfd_, p, length);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;  // 0: the peer closed the channel
        p += n;
        length -= static_cast<size_t>(n);
    }
    return true;
}

bool Bootstrap::send_blob(const void* data, size_t length) {
    uint8_t header[8];
    uint64_t len = length;
    for (int i = 7; i >= 0; --i, len >>= 8)
        header[i] = static_cast<uint8_t>(len);  // big-endian
    return write_all(header, sizeof header) && write_all(data, length);
}

bool Bootstrap::recv_blob(std::vector<uint8_t>* out) {
    uint8_t header[8];
    if (!read_all(header, sizeof header)) return false;
    uint64_t len = 0;
    for (uint8_t b : header)
        len = (len << 8) | b;
    if (len > kMaxBlob) {
        std::fprintf(stderr, "swy-perf: peer sent a %llu-byte address: protocol mismatch?\n",
                     static_cast<unsigned long long>(len));
        return false;
    }
    out->resize(len);
    return read_all(out->data(), len);
}

bool Bootstrap::exchange(const void* mine, size_t length, std::vector<uint8_t>* theirs) {
    bool ok = role_ == Role::kClient ? send_blob(mine, length) && recv_blob(theirs)
                                     : recv_blob(theirs) && send_blob(mine, length);
    if (!ok) std::fprintf(stderr, "swy-perf: address exchange with the peer failed\n");
    return ok;
}

bool Bootstrap::barrier(const std::function<void()>& idle) {
    if (role_ == Role::kSelf) return true;
    if (launched_) return barrier_launched();
    if (sockaddr_mode_) return barrier_sockaddr(idle);
    char token = 'b';
    if (!write_all(&token, 1)) return false;  // one byte: never blocks
    if (idle) {
        for (;;) {
            pollfd p{rfd_, POLLIN, 0};
            int n = ::poll(&p, 1, 0);
            if (n < 0 && errno != EINTR) return false;
            if (n > 0) break;  // readable, or hung up: read_all() tells which
            idle();
        }
    }
    return read_all(&token, 1) && token == 'b';
}

bool Bootstrap::peer_alive() const {
    // Launched: the launcher ends the job when a rank dies; the endpoint reports the rest.
    if (role_ == Role::kSelf || launched_) return true;
    if (sockaddr_mode_) return peer_alive_sockaddr();
    pollfd p{rfd_, POLLIN | POLLRDHUP, 0};
    if (::poll(&p, 1, 0) <= 0) return true;
    return (p.revents & (POLLHUP | POLLRDHUP | POLLERR)) == 0;
}

int Bootstrap::finish(bool kill_peer) {
    if (rfd_ >= 0) ::close(rfd_);
    if (wfd_ >= 0 && wfd_ != rfd_) ::close(wfd_);
    rfd_ = wfd_ = -1;
    if (child_pid_ <= 0) return 0;
    if (kill_peer) ::kill(child_pid_, SIGTERM);
    int status = 0;
    while (::waitpid(child_pid_, &status, 0) < 0 && errno == EINTR) {}
    child_pid_ = -1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
        if (!kill_peer) {
            std::fprintf(stderr, "swy-perf: server process died with signal %d\n",
                         WTERMSIG(status));
        }
        return 128 + WTERMSIG(status);
    }
    return 1;
}

Bootstrap::~Bootstrap() { finish(true); }

}  // namespace swy::perf

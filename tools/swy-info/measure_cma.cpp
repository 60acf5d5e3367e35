// Cross-memory attach: cost of one process_vm_readv call and bandwidth on large reads.
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

#include "measure.h"

namespace swy::info {
namespace {

constexpr size_t kRemoteBytes = size_t{64} << 20;
constexpr size_t kMidBytes = size_t{4} << 20;
constexpr int kCallBatches = 10;
constexpr int kCallsPerBatch = 1000;

/// What the child needs: its buffer (same address in both processes after fork) and the
/// pipe ends to report readiness and to wait for the parent.
struct CmaPeer {
    uint8_t* buffer;
    int ready_fd;       ///< child writes one byte once its buffer is filled
    int done_fd;        ///< child reads until EOF: the parent has finished
    int parent_fds[2];  ///< the parent's ends, closed in the child (else no EOF ever comes)
};

/// The child: fill its own copy of the buffer, say so, and stay alive until told.
int hold_buffer(void* arg) {
    auto* peer = static_cast<CmaPeer*>(arg);
    close(peer->parent_fds[0]);
    close(peer->parent_fds[1]);
    std::memset(peer->buffer, 0x3c, kRemoteBytes);
    char c = 1;
    if (write(peer->ready_fd, &c, 1) != 1) return 1;
    while (read(peer->done_fd, &c, 1) < 0 && errno == EINTR) {}
    return 0;
}

/// Read @p bytes of @p remote in @p pid into @p local, looping over partial reads.
/// 0 on success, else an errno value.
int read_all(pid_t pid, uint8_t* local, const uint8_t* remote, size_t bytes) {
    size_t done = 0;
    while (done < bytes) {
        iovec l{local + done, bytes - done};
        iovec r{const_cast<uint8_t*>(remote) + done, bytes - done};
        ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno;
        if (n == 0) return EIO;
        done += static_cast<size_t>(n);
    }
    return 0;
}

/// Best bandwidth (bytes per second) over @p runs reads of @p bytes; 0 on a failed read.
double best_bandwidth(pid_t pid, uint8_t* local, const uint8_t* remote, size_t bytes, int runs) {
    double best = 1e9;
    for (int run = 0; run < runs; ++run) {
        const double t0 = now_s();
        if (read_all(pid, local, remote, bytes) != 0) return 0;
        best = std::min(best, now_s() - t0);
    }
    return static_cast<double>(bytes) / best;
}

/// Best batch average of one 8-byte read; 0 on a failed read.
double best_call(pid_t pid, uint8_t* local, const uint8_t* remote) {
    double best = 1e9;
    for (int batch = 0; batch < kCallBatches; ++batch) {
        const double t0 = now_s();
        for (int i = 0; i < kCallsPerBatch; ++i) {
            if (read_all(pid, local, remote + (i & 63) * 64, 8) != 0) return 0;
        }
        best = std::min(best, (now_s() - t0) / kCallsPerBatch);
    }
    return best;
}

/// All three figures against a child that is ready; @p local holds kRemoteBytes.
CmaFigures measure_against(pid_t child, uint8_t* local, const uint8_t* remote) {
    CmaFigures f;
    int err = read_all(child, local, remote, 64);
    if (err != 0) {
        std::string why = std::string("process_vm_readv: ") + std::strerror(err);
        if (err == EPERM) why += " (ptrace policy)";
        f.call_s = f.bw_4m_Bps = f.bw_64m_Bps = Measured::failed(why);
        return f;
    }
    const double call = best_call(child, local, remote);
    const double mid = best_bandwidth(child, local, remote, kMidBytes, 16);
    const double big = best_bandwidth(child, local, remote, kRemoteBytes, 5);
    auto result = [](double v) {
        return v > 0 ? Measured::of(v) : Measured::failed("read failed");
    };
    f.call_s = result(call);
    f.bw_4m_Bps = result(mid);
    f.bw_64m_Bps = result(big);
    return f;
}

}  // namespace

CmaFigures measure_cma(const CpuPair& cpus) {
    CmaFigures f;
    auto fail_all = [&f](const char* why) {
        f.call_s = f.bw_4m_Bps = f.bw_64m_Bps = Measured::failed(why);
        return f;
    };
    // Mapped before the fork, so it has the same address in the child; each side's pages are
    // its own once written.
    void* remote =
        mmap(nullptr, kRemoteBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (remote == MAP_FAILED) return fail_all("cannot map 64 MiB");
    std::unique_ptr<uint8_t[]> local(new (std::nothrow) uint8_t[kRemoteBytes]);
    int ready[2];
    int done[2];
    if (!local || pipe(ready) != 0) {
        munmap(remote, kRemoteBytes);
        return fail_all("cannot allocate the local buffer or a pipe");
    }
    if (pipe(done) != 0) {
        close(ready[0]);
        close(ready[1]);
        munmap(remote, kRemoteBytes);
        return fail_all("cannot create a pipe");
    }
    std::memset(local.get(), 0, kRemoteBytes);

    PinGuard pin(cpus.self);
    CmaPeer peer{static_cast<uint8_t*>(remote), ready[1], done[0], {ready[0], done[1]}};
    pid_t child = start_peer(cpus.peer, hold_buffer, &peer);
    close(ready[1]);
    close(done[0]);
    char c = 0;
    ssize_t n;
    while ((n = read(ready[0], &c, 1)) < 0 && errno == EINTR) {}
    if (child < 0 || n != 1) {
        fail_all(child < 0 ? "fork failed" : "the peer process did not start");
    } else {
        f = measure_against(child, local.get(), static_cast<const uint8_t*>(remote));
    }
    close(done[1]);  // lets the child exit
    close(ready[0]);
    if (child > 0) finish_peer(child);
    munmap(remote, kRemoteBytes);
    return f;
}

}  // namespace swy::info

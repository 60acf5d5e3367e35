// Cross-memory attach as the library uses it: a rendezvous GET's receiver reads the sender's
// send buffer with process_vm_readv, one call per chunk of at most SWY_RNDV_FRAG_SIZE
// (512 KiB), into its receive buffer. So the peer here is a forked child that allocates and
// writes its buffer after the fork (its own pages, like another process's send buffer; a
// mapping inherited from the parent, as this probe used before, measured something else:
// 4 MiB reads of a 64 MiB region the child had filled, which disagreed with the GETs the
// library runs), the reads are of the sizes rendezvous uses (16 KiB to 512 KiB, one call
// each), and both buffers are warm, as a send buffer and a reused receive buffer are. The
// call's fixed cost and the bandwidth are the intercept and slope of a straight line through
// the best time at each size: exactly the two numbers the cost model reads (a GET costs
// cma_call_s + n / cma_bw_Bps per call).
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <new>
#include <string>

#include "measure.h"

namespace swy::info {
namespace {

/// The child's send buffer: the largest read (one GET chunk).
constexpr size_t kPeerBytes = size_t{512} << 10;
/// Sizes read, one process_vm_readv each; the line is fitted through these.
constexpr size_t kSizes[] = {16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 512 << 10};
constexpr int kBatches = 9;
/// Bytes per timed batch (at least 4 reads): long enough for the clock, short enough that a
/// quiet moment on a busy host holds a whole batch.
constexpr size_t kBatchBytes = size_t{4} << 20;

/// What the child needs: the pipe ends to hand over its buffer's address and to wait for the
/// parent.
struct CmaPeer {
    int address_fd;     ///< child writes its buffer's address once the buffer is filled
    int done_fd;        ///< child reads until EOF: the parent has finished
    int parent_fds[2];  ///< the parent's ends, closed in the child (else no EOF ever comes)
};

/// The child: allocate and fill a buffer of its own, say where it is, stay alive until told.
int hold_buffer(void* arg) {
    auto* peer = static_cast<CmaPeer*>(arg);
    close(peer->parent_fds[0]);
    close(peer->parent_fds[1]);
    void* buffer = std::aligned_alloc(4096, kPeerBytes);
    if (buffer == nullptr) return 1;
    std::memset(buffer, 0x3c, kPeerBytes);
    const auto address = reinterpret_cast<uint64_t>(buffer);
    if (write(peer->address_fd, &address, sizeof(address)) != sizeof(address)) return 1;
    char c;
    while (read(peer->done_fd, &c, 1) < 0 && errno == EINTR) {}
    std::free(buffer);
    return 0;
}

/// Read @p bytes at @p remote in @p pid into @p local, looping over partial reads.
/// 0 on success, else an errno value.
int read_all(pid_t pid, uint8_t* local, uint64_t remote, size_t bytes) {
    size_t done = 0;
    while (done < bytes) {
        iovec l{local + done, bytes - done};
        iovec r{reinterpret_cast<void*>(remote + done), bytes - done};
        ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno;
        if (n == 0) return EIO;
        done += static_cast<size_t>(n);
    }
    return 0;
}

/// Best batch average of one read of @p bytes (seconds); 0 on a failed read.
double best_read(pid_t pid, uint8_t* local, uint64_t remote, size_t bytes) {
    const int reads = static_cast<int>(std::max<size_t>(kBatchBytes / bytes, 4));
    double best = 1e9;
    for (int batch = 0; batch < kBatches; ++batch) {
        const double t0 = now_s();
        for (int i = 0; i < reads; ++i) {
            if (read_all(pid, local, remote, bytes) != 0) return 0;
        }
        best = std::min(best, (now_s() - t0) / reads);
    }
    return best;
}

}  // namespace

CmaLine fit_cma_line(const double* sizes, const double* seconds, size_t count) {
    double mean_n = 0;
    double mean_t = 0;
    for (size_t i = 0; i < count; ++i) {
        mean_n += sizes[i] / static_cast<double>(count);
        mean_t += seconds[i] / static_cast<double>(count);
    }
    double cov = 0;
    double var = 0;
    for (size_t i = 0; i < count; ++i) {
        cov += (sizes[i] - mean_n) * (seconds[i] - mean_t);
        var += (sizes[i] - mean_n) * (sizes[i] - mean_n);
    }
    CmaLine line;
    if (count < 2 || var <= 0 || cov <= 0) return line;  // no slope: not a measurement
    const double per_byte = cov / var;
    line.ok = true;
    line.bw_Bps = 1.0 / per_byte;
    // A noisy small size can put the intercept below zero; a call is never free, so the
    // fastest read's time above the line's bytes is the floor.
    double floor_s = seconds[0];
    for (size_t i = 1; i < count; ++i)
        floor_s = std::min(floor_s, seconds[i]);
    line.call_s = std::max(mean_t - per_byte * mean_n, std::min(floor_s, 1e-7));
    return line;
}

CmaFigures measure_cma(const CpuPair& cpus) {
    CmaFigures f;
    auto fail_all = [&f](const std::string& why) {
        f.call_s = f.bw_Bps = Measured::failed(why);
        return f;
    };
    std::unique_ptr<uint8_t[]> local(new (std::nothrow) uint8_t[kPeerBytes]);
    int address[2];
    int done[2];
    if (!local || pipe(address) != 0) return fail_all("cannot allocate the local buffer or a pipe");
    if (pipe(done) != 0) {
        close(address[0]);
        close(address[1]);
        return fail_all("cannot create a pipe");
    }
    std::memset(local.get(), 0, kPeerBytes);  // a receive buffer that was used before

    PinGuard pin(cpus.self);
    CmaPeer peer{address[1], done[0], {address[0], done[1]}};
    const pid_t child = start_peer(cpus.peer, hold_buffer, &peer);
    close(address[1]);
    close(done[0]);
    uint64_t remote = 0;
    ssize_t n;
    while ((n = read(address[0], &remote, sizeof(remote))) < 0 && errno == EINTR) {}
    if (child < 0 || n != sizeof(remote)) {
        fail_all(child < 0 ? "fork failed" : "the peer process did not start");
    } else if (const int err = read_all(child, local.get(), remote, 64); err != 0) {
        std::string why = std::string("process_vm_readv: ") + std::strerror(err);
        if (err == EPERM) why += " (ptrace policy)";
        fail_all(why);
    } else {
        constexpr size_t kCount = std::size(kSizes);
        double sizes[kCount];
        double seconds[kCount];
        bool read_ok = true;
        for (size_t i = 0; i < kCount && read_ok; ++i) {
            sizes[i] = static_cast<double>(kSizes[i]);
            seconds[i] = best_read(child, local.get(), remote, kSizes[i]);
            read_ok = seconds[i] > 0;
        }
        const CmaLine line = read_ok ? fit_cma_line(sizes, seconds, kCount) : CmaLine{};
        if (!read_ok) {
            fail_all("read failed");
        } else if (!line.ok) {
            fail_all("reads did not get slower with size (host too busy)");
        } else {
            f.call_s = Measured::of(line.call_s);
            f.bw_Bps = Measured::of(line.bw_Bps);
        }
    }
    close(done[1]);  // lets the child exit
    close(address[0]);
    if (child > 0) finish_peer(child);
    return f;
}

}  // namespace swy::info

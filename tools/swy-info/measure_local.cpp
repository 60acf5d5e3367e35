// Single-process measurements: memcpy bandwidth and the cost of claiming a cell.
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "measure.h"

namespace swy::info {
namespace {

constexpr size_t kBigBuffer = size_t{64} << 20;

/// Keeps the compiler from dropping or merging memory accesses across this point.
inline void clobber() { asm volatile("" ::: "memory"); }

/// A private anonymous mapping, touched so that page faults stay out of the timing.
class TouchedBuffer {
public:
    explicit TouchedBuffer(size_t bytes) : bytes_(bytes) {
        void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return;
        data_ = static_cast<uint8_t*>(p);
        std::memset(data_, 0x5a, bytes);
    }
    ~TouchedBuffer() {
        if (data_ != nullptr) munmap(data_, bytes_);
    }
    TouchedBuffer(const TouchedBuffer&) = delete;
    TouchedBuffer& operator=(const TouchedBuffer&) = delete;
    uint8_t* data() const { return data_; }

private:
    uint8_t* data_ = nullptr;
    size_t bytes_;
};

/// A cell as the sender writes it: the 16-byte header of tl::shm::CellHeader.
struct alignas(64) Cell {
    std::atomic<uint64_t> seq;
    uint8_t am_id;
    uint8_t flags;
    uint16_t sender;
    uint32_t length;
};

constexpr size_t kCells = 64;  // power of two
constexpr int kClaimIters = 1 << 22;
constexpr int kClaimRuns = 5;

/// Seconds per message of a claim + publish loop; @p shared selects the CAS-claimed head.
double claim_loop(bool shared) {
    static Cell cells[kCells];
    std::atomic<uint64_t> shared_head{0};
    uint64_t private_head = 0;
    double best = 1e9;
    for (int run = 0; run < kClaimRuns; ++run) {
        const double t0 = now_s();
        for (int i = 0; i < kClaimIters; ++i) {
            uint64_t h;
            if (shared) {
                h = shared_head.load(std::memory_order_relaxed);
                while (!shared_head.compare_exchange_weak(h, h + 1, std::memory_order_acq_rel,
                                                          std::memory_order_relaxed)) {}
            } else {
                h = private_head++;
            }
            Cell& c = cells[h & (kCells - 1)];
            c.am_id = 1;
            c.sender = 3;
            c.length = static_cast<uint32_t>(i);
            c.seq.store(h + 1, std::memory_order_release);
        }
        clobber();
        best = std::min(best, (now_s() - t0) / kClaimIters);
    }
    return best;
}

}  // namespace

Measured measure_memcpy_bw() {
    TouchedBuffer src(kBigBuffer);
    TouchedBuffer dst(kBigBuffer);
    if (src.data() == nullptr || dst.data() == nullptr) {
        return Measured::failed("cannot map 2 x 64 MiB");
    }
    double best = 1e9;
    for (int run = 0; run < 8; ++run) {
        const double t0 = now_s();
        std::memcpy(dst.data(), src.data(), kBigBuffer);
        clobber();
        best = std::min(best, now_s() - t0);
    }
    return Measured::of(static_cast<double>(kBigBuffer) / best);
}

ClaimFigures measure_claim_overheads() {
    ClaimFigures f;
    f.pio_s = Measured::of(claim_loop(false));
    f.bcopy_s = Measured::of(claim_loop(true));
    return f;
}

}  // namespace swy::info

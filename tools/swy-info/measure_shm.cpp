// Two-process measurements through a MAP_SHARED mapping: pipelined copy bandwidth and
// cache-line latency.
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

#include "measure.h"

namespace swy::info {
namespace {

// --- Copy bandwidth through a ring of cells ------------------------------------------------

constexpr size_t kBlock = 4096;                   // payload per cell
constexpr uint64_t kRingCells = 64;               // 256 KiB of cells
constexpr size_t kUserBuffer = size_t{64} << 20;  // each side's private buffer
constexpr uint64_t kBlocksPerPass = kUserBuffer / kBlock;
constexpr uint64_t kBlocksPerRun = kBlocksPerPass;  // 64 MiB per timed run
constexpr int kCopyRuns = 4;
constexpr double kCopyBudgetS = 2.0;  // runs after this are skipped (the first always counts)

/// The shared ring. Cell c is free for block k when seq[c] == k, holds block k when
/// seq[c] == k + 1; the consumer frees it for block k + kRingCells.
struct CopyRing {
    struct alignas(64) Slot {
        std::atomic<uint64_t> seq;
    };
    Slot slots[kRingCells];
    alignas(64) std::atomic<bool> stop;  ///< set by the producer after its last run
    alignas(64) uint8_t data[kRingCells][kBlock];
};

/// Where block @p k sits in a side's private buffer.
size_t block_offset(uint64_t k) { return (k % kBlocksPerPass) * kBlock; }

/// The consumer (child): copy every block out of the ring into a private buffer until the
/// producer says stop.
int copy_consumer(void* arg) {
    auto* ring = static_cast<CopyRing*>(arg);
    auto* dst = static_cast<uint8_t*>(
        mmap(nullptr, kUserBuffer, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (dst == MAP_FAILED) return 1;
    std::memset(dst, 0, kUserBuffer);
    for (uint64_t k = 0;; ++k) {
        CopyRing::Slot& slot = ring->slots[k % kRingCells];
        bool full = false;
        if (!spin_until([&] {
                full = slot.seq.load(std::memory_order_acquire) == k + 1;
                return full || ring->stop.load(std::memory_order_acquire);
            })) {
            return 1;
        }
        if (!full) return 0;
        std::memcpy(dst + block_offset(k), ring->data[k % kRingCells], kBlock);
        slot.seq.store(k + kRingCells, std::memory_order_release);
    }
    return 0;
}

// --- Cache-line ping-pong --------------------------------------------------------------------

constexpr int kPingBatches = 50;
constexpr uint64_t kPingsPerBatch = 2000;
constexpr double kPingBudgetS = 1.5;  // a busy peer CPU makes round trips take milliseconds
constexpr uint64_t kStop = UINT64_MAX;

/// The line both processes write: the parent odd values (or kStop), the child the next even
/// one.
struct alignas(64) PingLine {
    std::atomic<uint64_t> value;
};

/// The child: answer every odd value v with v + 1 until the parent writes kStop.
int pong(void* arg) {
    auto* line = static_cast<PingLine*>(arg);
    for (uint64_t v = 1;; v += 2) {
        uint64_t seen = 0;
        if (!spin_until([&] {
                seen = line->value.load(std::memory_order_acquire);
                return seen == v || seen == kStop;
            })) {
            return 1;
        }
        if (seen == kStop) return 0;
        line->value.store(v + 1, std::memory_order_release);
    }
}

}  // namespace

Measured measure_shm_copy_bw(const CpuPair& cpus) {
    if (cpus.peer < 0) return Measured::failed("needs two CPUs");
    SharedMap shared(sizeof(CopyRing));
    if (shared.data() == nullptr) return Measured::failed("cannot map the shared ring");
    auto* ring = new (shared.data()) CopyRing;
    for (uint64_t c = 0; c < kRingCells; ++c)
        ring->slots[c].seq.store(c);
    std::unique_ptr<uint8_t[]> src(new (std::nothrow) uint8_t[kUserBuffer]);
    if (!src) return Measured::failed("cannot allocate 64 MiB");
    std::memset(src.get(), 0x5a, kUserBuffer);

    PinGuard pin(cpus.self);
    pid_t child = start_peer(cpus.peer, copy_consumer, ring);
    if (child < 0) return Measured::failed("fork failed");
    double best = 1e9;
    bool ok = true;
    const double deadline = now_s() + kCopyBudgetS;
    for (int run = 0; run < kCopyRuns && ok && (run == 0 || now_s() < deadline); ++run) {
        const double t0 = now_s();
        const uint64_t first = run * kBlocksPerRun;
        for (uint64_t k = first; k < first + kBlocksPerRun && ok; ++k) {
            CopyRing::Slot& slot = ring->slots[k % kRingCells];
            ok = spin_until([&] { return slot.seq.load(std::memory_order_acquire) == k; });
            std::memcpy(ring->data[k % kRingCells], src.get() + block_offset(k), kBlock);
            slot.seq.store(k + 1, std::memory_order_release);
        }
        // The run ends when the child has freed the cell of its last block.
        const uint64_t last = first + kBlocksPerRun - 1;
        CopyRing::Slot& slot = ring->slots[last % kRingCells];
        ok = ok && spin_until([&] {
                 return slot.seq.load(std::memory_order_acquire) == last + kRingCells;
             });
        best = std::min(best, now_s() - t0);
    }
    ring->stop.store(true, std::memory_order_release);
    ok = finish_peer(child) && ok;
    if (!ok) return Measured::failed("the peer process stopped responding");
    return Measured::of(static_cast<double>(kBlocksPerRun * kBlock) / best);
}

Measured measure_fifo_latency(const CpuPair& cpus) {
    if (cpus.peer < 0) return Measured::failed("needs two CPUs");
    SharedMap shared(4096);
    if (shared.data() == nullptr) return Measured::failed("cannot map a shared page");
    auto* line = new (shared.data()) PingLine;
    line->value.store(0);

    PinGuard pin(cpus.self);
    pid_t child = start_peer(cpus.peer, pong, line);
    if (child < 0) return Measured::failed("fork failed");
    double best_round_trip = 1e9;
    bool ok = true;
    uint64_t v = 1;
    const double deadline = now_s() + kPingBudgetS;
    for (int batch = 0; batch < kPingBatches && ok && now_s() < deadline; ++batch) {
        const double t0 = now_s();
        uint64_t i = 0;
        for (; i < kPingsPerBatch && ok; ++i, v += 2) {
            line->value.store(v, std::memory_order_release);
            ok = spin_until([&] { return line->value.load(std::memory_order_acquire) == v + 1; });
            if ((i & 255) == 255 && now_s() > deadline) break;  // a starved batch: drop it
        }
        if (i == kPingsPerBatch) {
            best_round_trip = std::min(best_round_trip, (now_s() - t0) / kPingsPerBatch);
        }
    }
    line->value.store(kStop, std::memory_order_release);
    ok = finish_peer(child) && ok;
    if (!ok) return Measured::failed("the peer process stopped responding");
    if (best_round_trip == 1e9) {
        return Measured::failed("no batch finished in time: the CPUs are busy, retry when idle");
    }
    return Measured::of(best_round_trip / 2);
}

}  // namespace swy::info

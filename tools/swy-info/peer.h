// Plumbing for the two-process measurements of --calibrate: CPU pinning, shared mappings, a
// forked peer, and bounded spinning (so a dead peer ends a measurement instead of hanging it).
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>

namespace swy::info {

/// Two CPUs from this process's affinity mask for the two sides of a measurement.
struct CpuPair {
    int self = -1;  ///< CPU of the measuring (parent) process; -1 when there is none
    int peer = -1;  ///< CPU of the forked peer; -1 when only one CPU is allowed
};

/// The first two CPUs this process may run on.
CpuPair pick_cpus();

/// Pins the calling process to one CPU for its lifetime and restores the previous affinity
/// mask afterwards. A cpu of -1 leaves the affinity alone.
class PinGuard {
public:
    explicit PinGuard(int cpu);
    ~PinGuard();
    PinGuard(const PinGuard&) = delete;
    PinGuard& operator=(const PinGuard&) = delete;

private:
    cpu_set_t saved_;
    bool restore_ = false;
};

/// An anonymous MAP_SHARED mapping, inherited by a forked peer; zero-filled. data() is
/// nullptr when mmap failed.
class SharedMap {
public:
    explicit SharedMap(size_t bytes);
    ~SharedMap();
    SharedMap(const SharedMap&) = delete;
    SharedMap& operator=(const SharedMap&) = delete;
    void* data() const { return data_; }

private:
    void* data_ = nullptr;
    size_t bytes_ = 0;
};

/// Fork a child pinned to @p cpu (-1: not pinned) that runs @p body(@p arg) and exits with
/// its return value (0 = success). The child uses no stdio and exits with _exit, so buffered
/// output of the parent is not written twice. Returns the pid, or -1 if fork failed.
pid_t start_peer(int cpu, int (*body)(void*), void* arg);

/// Wait for @p pid; true if it exited with status 0.
bool finish_peer(pid_t pid);

/// Seconds on the monotonic clock.
inline double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

/// Tell the CPU we are spinning (lets an SMT sibling run; cheaper wake-up).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
}

/// Spin until @p done() is true; false if that takes more than @p limit_s seconds (the
/// clock is read only every few thousand tries, to keep the spin tight).
template <class Done>
bool spin_until(Done done, double limit_s = 5.0) {
    const double deadline = now_s() + limit_s;
    for (unsigned tries = 1;; ++tries) {
        if (done()) return true;
        cpu_relax();
        if ((tries & 0xfff) == 0 && now_s() > deadline) return false;
    }
}

}  // namespace swy::info

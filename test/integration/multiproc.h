// Multi-process test harness for the integration tests: fork N ranks that share one anonymous
// mapping (address exchange, barriers, scratch words), run a lambda in each, and report which
// rank failed and how. Header-only because test/CMakeLists.txt globs only *_test.cpp.
//
// Rules inside a rank (a forked child):
//   - never use gtest assertions (the child is not the test runner): use ICHECK*, which print
//     "rank R: file:line: ..." and _exit(1);
//   - every wait is bounded (request waits, barriers, address look-ups) and gives up as soon
//     as another rank failed, so one bug does not turn into a 60 s hang;
//   - the child _exit()s: it never returns into gtest, and exceptions are caught.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <new>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

namespace swy_itest {

constexpr int kMaxRanks = 16;
constexpr size_t kMaxAddressBytes = 16 * 1024;
constexpr int kNumBarriers = 8;
constexpr int kNumScratch = 512;

/// Exit codes of a rank (anything else non-zero is a failure too).
constexpr int kExitCheckFailed = 1;
constexpr int kExitAborted = 2;  ///< gave up because another rank failed
constexpr int kExitException = 3;

static_assert(std::atomic<uint32_t>::is_always_lock_free);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

// --------------------------------------------------------------------------------------------
// Failure reporting inside a rank
// --------------------------------------------------------------------------------------------

struct alignas(64) SharedBarrier {
    std::atomic<uint32_t> arrived;
    std::atomic<uint32_t> generation;
};

struct AddressSlot {
    std::atomic<uint32_t> ready;
    uint32_t length;
    unsigned char bytes[kMaxAddressBytes];
};

/// The region every rank maps (created before fork, MAP_SHARED|MAP_ANONYMOUS).
struct SharedArea {
    std::atomic<int> abort_rank;  ///< 0: all fine; r+1: rank r failed (set by it or the parent)
    SharedBarrier barriers[kNumBarriers];
    AddressSlot slots[kMaxRanks];
    std::atomic<uint64_t> scratch[kNumScratch];  ///< free for each test's own use
};

inline int g_rank = -1;               // this process's rank (-1 in the parent)
inline SharedArea* g_area = nullptr;  // mapping shared by parent and ranks

[[noreturn]] inline void die(int code, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

[[noreturn]] inline void die(int code, const char* file, int line, const char* fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "[rank %d pid %d] %s:%d: %s\n", g_rank, (int)getpid(), file, line, msg);
    fflush(stderr);
    if (g_area != nullptr && code != kExitAborted) {
        int expected = 0;
        g_area->abort_rank.compare_exchange_strong(expected, g_rank + 1);
    }
    _exit(code);
}

#define ICHECK(cond)                                                            \
    do {                                                                        \
        if (!(cond))                                                            \
            ::swy_itest::die(::swy_itest::kExitCheckFailed, __FILE__, __LINE__, \
                             "check failed: %s", #cond);                        \
    } while (0)

#define ICHECK_MSG(cond, ...)                                                                 \
    do {                                                                                      \
        if (!(cond))                                                                          \
            ::swy_itest::die(::swy_itest::kExitCheckFailed, __FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

/// Check that a swy_status_t expression equals @p expected; prints both as text.
#define ICHECK_STATUS(expr, expected)                                                         \
    do {                                                                                      \
        swy_status_t icheck_st_ = (expr);                                                     \
        swy_status_t icheck_ex_ = (expected);                                                 \
        if (icheck_st_ != icheck_ex_)                                                         \
            ::swy_itest::die(::swy_itest::kExitCheckFailed, __FILE__, __LINE__,               \
                             "%s returned %d (%s), expected %d (%s)", #expr, (int)icheck_st_, \
                             swy_status_string(icheck_st_), (int)icheck_ex_,                  \
                             swy_status_string(icheck_ex_));                                  \
    } while (0)

#define ICHECK_OK(expr) ICHECK_STATUS(expr, SWY_OK)

/// Exit quietly (code kExitAborted) if another rank already failed.
inline void exit_if_aborted() {
    if (g_area != nullptr && g_area->abort_rank.load(std::memory_order_acquire) != 0) {
        fprintf(stderr, "[rank %d] giving up: rank %d failed\n", g_rank,
                g_area->abort_rank.load() - 1);
        fflush(stderr);
        _exit(kExitAborted);
    }
}

using Clock = std::chrono::steady_clock;

inline Clock::time_point deadline_in(double seconds) {
    return Clock::now() +
           std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// --------------------------------------------------------------------------------------------
// Payload patterns: every byte depends on (size, rank, index) so a misplaced, stale or
// shifted payload is caught.
// --------------------------------------------------------------------------------------------

inline uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

inline uint64_t pattern_seed(size_t size, int rank, uint64_t index) {
    return mix64(mix64(size * 0x100000001b3ull) ^ mix64(((uint64_t)rank << 40) ^ index));
}

inline void fill_pattern(void* buf, size_t len, uint64_t seed) {
    auto* p = static_cast<unsigned char*>(buf);
    for (size_t i = 0; i < len; i += 8) {
        uint64_t v = mix64(seed + i / 8);
        size_t n = std::min<size_t>(8, len - i);
        memcpy(p + i, &v, n);
    }
}

/// @return @p len if the buffer holds the pattern, else the offset of the first wrong byte.
inline size_t verify_pattern(const void* buf, size_t len, uint64_t seed) {
    const auto* p = static_cast<const unsigned char*>(buf);
    for (size_t i = 0; i < len; i += 8) {
        uint64_t v = mix64(seed + i / 8);
        size_t n = std::min<size_t>(8, len - i);
        if (memcmp(p + i, &v, n) != 0) {
            for (size_t j = 0; j < n; ++j)
                if (p[i + j] != reinterpret_cast<const unsigned char*>(&v)[j]) return i + j;
        }
    }
    return len;
}

#define ICHECK_PATTERN(buf, len, seed, ...)                                                        \
    do {                                                                                           \
        size_t icheck_len_ = (len);                                                                \
        size_t icheck_bad_ = ::swy_itest::verify_pattern((buf), icheck_len_, (seed));              \
        if (icheck_bad_ != icheck_len_) {                                                          \
            char icheck_ctx_[512];                                                                 \
            snprintf(icheck_ctx_, sizeof(icheck_ctx_), __VA_ARGS__);                               \
            ::swy_itest::die(::swy_itest::kExitCheckFailed, __FILE__, __LINE__,                    \
                             "payload mismatch at byte %zu of %zu (%s)", icheck_bad_, icheck_len_, \
                             icheck_ctx_);                                                         \
        }                                                                                          \
    } while (0)

/// Guard bytes after a receive buffer, to prove nothing was written past it.
constexpr unsigned char kGuardByte = 0xA5;
constexpr size_t kGuardBytes = 64;

inline bool guard_intact(const unsigned char* p, size_t n = kGuardBytes) {
    for (size_t i = 0; i < n; ++i)
        if (p[i] != kGuardByte) return false;
    return true;
}

// --------------------------------------------------------------------------------------------
// Requests
// --------------------------------------------------------------------------------------------

/// Progress @p worker until @p req completes or @p timeout_s passes (then the rank fails).
/// Does not free the request. @return its final status.
inline swy_status_t wait_request(swy_worker_h worker, swy_request_h req, const char* what,
                                 double timeout_s = 30.0) {
    ICHECK_MSG(req != nullptr, "wait_request(%s): NULL request", what);
    auto deadline = deadline_in(timeout_s);
    unsigned spins = 0;
    for (;;) {
        swy_status_t st = swy_request_test(req);
        if (st != SWY_INPROGRESS) return st;
        swy_worker_progress(worker);
        if ((++spins & 0x3ff) == 0) {
            exit_if_aborted();
            ICHECK_MSG(Clock::now() < deadline, "timed out after %.0f s waiting for %s", timeout_s,
                       what);
            sched_yield();  // ranks may outnumber cores
        }
    }
}

/// A send in flight.
struct Send {
    swy_status_t status = SWY_INPROGRESS;  ///< final status once done
    swy_request_h req = nullptr;
    bool done = false;
};

inline Send post_send(swy_ep_h ep, const void* buf, size_t len, swy_tag_t tag, uint32_t flags = 0) {
    Send s;
    swy_request_params_t params{};
    params.field_mask = SWY_REQ_PARAM_FIELD_FLAGS | SWY_REQ_PARAM_FIELD_MEMTYPE;
    params.flags = flags;
    params.memtype = SWY_MEMTYPE_HOST;
    swy_status_t st = swy_tag_send_nb(ep, buf, len, tag, &params, &s.req);
    if (st == SWY_INPROGRESS) {
        ICHECK_MSG(s.req != nullptr, "swy_tag_send_nb returned SWY_INPROGRESS with no request");
    } else {
        ICHECK_MSG(s.req == nullptr, "swy_tag_send_nb returned %d (%s) but set a request", (int)st,
                   swy_status_string(st));
        s.status = st;
        s.done = true;
    }
    return s;
}

/// Wait for a send and free its request. @return the final status.
inline swy_status_t finish_send(swy_worker_h worker, Send& s, double timeout_s = 30.0) {
    if (!s.done) {
        s.status = wait_request(worker, s.req, "send", timeout_s);
        swy_request_free(s.req);
        s.req = nullptr;
        s.done = true;
    }
    return s.status;
}

/// Send and wait; the rank fails unless it completes with SWY_OK.
inline void send_blocking(swy_worker_h worker, swy_ep_h ep, const void* buf, size_t len,
                          swy_tag_t tag, uint32_t flags = 0) {
    Send s = post_send(ep, buf, len, tag, flags);
    swy_status_t st = finish_send(worker, s);
    ICHECK_MSG(st == SWY_OK, "send of %zu bytes tag 0x%llx completed with %d (%s)", len,
               (unsigned long long)tag, (int)st, swy_status_string(st));
}

/// A receive in flight.
struct Recv {
    swy_status_t status = SWY_INPROGRESS;
    swy_request_h req = nullptr;
    swy_tag_recv_info_t info{};
    bool done = false;
};

inline void adopt_recv_result(Recv& r, swy_status_t st, swy_tag_recv_info_t* info,
                              const char* call) {
    if (st == SWY_INPROGRESS) {
        ICHECK_MSG(r.req != nullptr, "%s returned SWY_INPROGRESS with no request", call);
    } else {
        ICHECK_MSG(r.req == nullptr, "%s returned %d (%s) but set a request", call, (int)st,
                   swy_status_string(st));
        r.status = st;
        r.info = *info;
        r.done = true;
    }
}

inline Recv post_recv(swy_worker_h worker, void* buf, size_t len, swy_tag_t tag,
                      swy_tag_t mask = ~(swy_tag_t)0) {
    Recv r;
    swy_tag_recv_info_t info{~(swy_tag_t)0, ~(size_t)0};
    swy_request_params_t params{};
    params.field_mask = SWY_REQ_PARAM_FIELD_MEMTYPE | SWY_REQ_PARAM_FIELD_RECV_INFO;
    params.memtype = SWY_MEMTYPE_HOST;
    params.recv_info = &info;
    swy_status_t st = swy_tag_recv_nb(worker, buf, len, tag, mask, &params, &r.req);
    adopt_recv_result(r, st, &info, "swy_tag_recv_nb");
    return r;
}

/// Wait for a receive, fetch what it matched, free the request. @return the final status.
inline swy_status_t finish_recv(swy_worker_h worker, Recv& r, double timeout_s = 30.0) {
    if (!r.done) {
        r.status = wait_request(worker, r.req, "receive", timeout_s);
        if (r.status == SWY_OK || r.status == SWY_ERR_MESSAGE_TRUNCATED)
            ICHECK_OK(swy_request_recv_info(r.req, &r.info));
        swy_request_free(r.req);
        r.req = nullptr;
        r.done = true;
    }
    return r.status;
}

// --------------------------------------------------------------------------------------------
// The world as seen from inside one rank
// --------------------------------------------------------------------------------------------

class World {
public:
    World(int rank, int nranks, SharedArea* area) : rank_(rank), nranks_(nranks), area_(area) {}

    int rank() const { return rank_; }
    int size() const { return nranks_; }

    /// Wait until @p parties ranks (default: all) reached barrier @p id. Progresses @p worker
    /// while waiting, if given, so that a peer blocked on us can finish.
    void barrier(swy_worker_h worker = nullptr, int id = 0, int parties = -1,
                 double timeout_s = 30.0) {
        ICHECK(id >= 0 && id < kNumBarriers);
        if (parties < 0) parties = nranks_;
        SharedBarrier& b = area_->barriers[id];
        uint32_t gen = b.generation.load(std::memory_order_acquire);
        if (b.arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == (uint32_t)parties) {
            b.arrived.store(0, std::memory_order_relaxed);
            b.generation.fetch_add(1, std::memory_order_release);
            return;
        }
        auto deadline = deadline_in(timeout_s);
        unsigned spins = 0;
        while (b.generation.load(std::memory_order_acquire) == gen) {
            if (worker != nullptr) swy_worker_progress(worker);
            if ((++spins & 0xff) == 0) {
                exit_if_aborted();
                ICHECK_MSG(Clock::now() < deadline, "timed out in barrier %d (%d parties)", id,
                           parties);
                sched_yield();
            }
        }
    }

    /// Publish this rank's worker address (once per rank).
    void publish_address(const void* addr, size_t len) {
        AddressSlot& s = area_->slots[rank_];
        ICHECK_MSG(len <= kMaxAddressBytes, "address of %zu bytes does not fit the slot", len);
        ICHECK_MSG(s.ready.load() == 0, "rank %d published its address twice", rank_);
        memcpy(s.bytes, addr, len);
        s.length = (uint32_t)len;
        s.ready.store(1, std::memory_order_release);
    }

    /// Wait for @p rank's published address and copy it out.
    std::vector<unsigned char> address_of(int rank, double timeout_s = 30.0) {
        ICHECK(rank >= 0 && rank < nranks_);
        AddressSlot& s = area_->slots[rank];
        auto deadline = deadline_in(timeout_s);
        while (s.ready.load(std::memory_order_acquire) == 0) {
            exit_if_aborted();
            ICHECK_MSG(Clock::now() < deadline, "timed out waiting for rank %d's address", rank);
            sched_yield();
        }
        return std::vector<unsigned char>(s.bytes, s.bytes + s.length);
    }

    /// Scratch words shared by all ranks (zero at start), for a test's own signalling.
    std::atomic<uint64_t>& scratch(int i) {
        ICHECK(i >= 0 && i < kNumScratch);
        return area_->scratch[i];
    }

    /// Spin (progressing @p worker if given) until scratch(i) >= value.
    void wait_scratch_at_least(int i, uint64_t value, swy_worker_h worker = nullptr,
                               double timeout_s = 30.0) {
        auto deadline = deadline_in(timeout_s);
        unsigned spins = 0;
        while (scratch(i).load(std::memory_order_acquire) < value) {
            if (worker != nullptr) swy_worker_progress(worker);
            if ((++spins & 0xff) == 0) {
                exit_if_aborted();
                ICHECK_MSG(Clock::now() < deadline, "timed out waiting for scratch[%d] >= %llu", i,
                           (unsigned long long)value);
                sched_yield();
            }
        }
    }

private:
    int rank_;
    int nranks_;
    SharedArea* area_;
};

// --------------------------------------------------------------------------------------------
// A rank's context, worker and endpoints
// --------------------------------------------------------------------------------------------

struct NodeOptions {
    /// Configuration overrides, applied with swy_config_set() on top of the environment.
    std::vector<std::pair<std::string, std::string>> config{{"TLS", "shm"}};
    swy_thread_mode_t thread_mode = SWY_THREAD_MODE_SINGLE;
};

/// Context + worker of one rank and its endpoints to other ranks (indexed by rank).
class Node {
public:
    Node(World& world, const NodeOptions& opts = {}) : world_(world), eps_(world.size(), nullptr) {
        swy_config_h cfg = nullptr;
        ICHECK_OK(swy_config_read(&cfg));
        for (const auto& [name, value] : opts.config) {
            swy_status_t st = swy_config_set(cfg, name.c_str(), value.c_str());
            ICHECK_MSG(st == SWY_OK, "swy_config_set(%s=%s) returned %d (%s)", name.c_str(),
                       value.c_str(), (int)st, swy_status_string(st));
        }
        swy_context_params_t cp{};
        cp.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG;
        cp.config = cfg;
        ICHECK_OK(swy_context_create(&cp, &context_));
        swy_config_release(cfg);
        swy_worker_params_t wp{};
        wp.field_mask = SWY_WORKER_PARAM_FIELD_THREAD_MODE;
        wp.thread_mode = opts.thread_mode;
        ICHECK_OK(swy_worker_create(context_, &wp, &worker_));
    }

    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;

    /// Best-effort cleanup for early exits; tests call finish() for the checked teardown.
    ~Node() {
        if (worker_ != nullptr) swy_worker_destroy(worker_);
        if (context_ != nullptr) swy_context_destroy(context_);
    }

    swy_worker_h worker() const { return worker_; }
    swy_context_h context() const { return context_; }
    swy_ep_h ep(int rank) const {
        ICHECK_MSG(eps_.at(rank) != nullptr, "no endpoint to rank %d", rank);
        return eps_[rank];
    }

    /// Publish this worker's address in the shared area.
    void publish() {
        void* addr = nullptr;
        size_t len = 0;
        ICHECK_OK(swy_worker_get_address(worker_, &addr, &len));
        ICHECK(addr != nullptr && len > 0);
        world_.publish_address(addr, len);
        swy_worker_release_address(worker_, addr);
    }

    /// Create an endpoint to @p rank (its address must be published). @p tweak may set flags
    /// and the error callback.
    swy_ep_h connect(int rank, uint32_t flags = 0, swy_ep_error_cb_t err_cb = nullptr,
                     void* err_arg = nullptr) {
        std::vector<unsigned char> addr = world_.address_of(rank);
        swy_ep_params_t p{};
        p.field_mask = SWY_EP_PARAM_FIELD_FLAGS | SWY_EP_PARAM_FIELD_REMOTE_ADDRESS |
                       SWY_EP_PARAM_FIELD_ERR_HANDLER;
        p.remote_address = addr.data();
        p.remote_address_length = addr.size();
        p.flags = flags;
        p.err_cb = err_cb;
        p.err_arg = err_arg;
        swy_ep_h ep = nullptr;
        swy_status_t st = swy_ep_create(worker_, &p, &ep);
        ICHECK_MSG(st == SWY_OK, "swy_ep_create to rank %d returned %d (%s)", rank, (int)st,
                   swy_status_string(st));
        ICHECK(ep != nullptr);
        ICHECK_MSG(eps_[rank] == nullptr, "second endpoint to rank %d", rank);
        eps_[rank] = ep;
        return ep;
    }

    /// Publish, wait for everybody, connect to every other rank (and to self if asked),
    /// then a progressing barrier so wire-up messages, if any, are through.
    void connect_all(bool include_self = false) {
        publish();
        for (int r = 0; r < world_.size(); ++r)
            if (r != world_.rank() || include_self) connect(r);
        world_.barrier(worker_);
    }

    swy_ep_attr_t query(int rank) const {
        swy_ep_attr_t a{};
        a.field_mask = SWY_EP_ATTR_FIELD_LANE | SWY_EP_ATTR_FIELD_PIO_DETAIL;
        ICHECK_OK(swy_ep_query(ep(rank), &a));
        return a;
    }

    /// Close the endpoint to @p rank and wait for the close to finish.
    void close(int rank, swy_ep_close_mode_t mode = SWY_EP_CLOSE_FLUSH, double timeout_s = 30.0) {
        swy_request_h req = nullptr;
        swy_status_t st = swy_ep_close_nb(ep(rank), mode, &req);
        eps_[rank] = nullptr;
        if (st == SWY_INPROGRESS) {
            ICHECK(req != nullptr);
            st = wait_request(worker_, req, "endpoint close", timeout_s);
            swy_request_free(req);
        }
        ICHECK_MSG(st == SWY_OK, "closing the endpoint to rank %d gave %d (%s)", rank, (int)st,
                   swy_status_string(st));
    }

    /// Checked, collective teardown: barrier, close every endpoint, barrier (progressing, so
    /// peers can finish their closes), destroy worker and context. @p parties: ranks taking
    /// part (default: all; fewer when a rank is expected to be dead).
    void finish(int parties = -1, int barrier_id = 0) {
        world_.barrier(worker_, barrier_id, parties);
        for (int r = 0; r < (int)eps_.size(); ++r)
            if (eps_[r] != nullptr) close(r);
        world_.barrier(worker_, barrier_id, parties);
        swy_worker_destroy(worker_);
        worker_ = nullptr;
        swy_context_destroy(context_);
        context_ = nullptr;
    }

    /// Forget an endpoint without closing it (the worker closes it with force on destroy).
    void forget(int rank) { eps_.at(rank) = nullptr; }

private:
    World& world_;
    swy_context_h context_ = nullptr;
    swy_worker_h worker_ = nullptr;
    std::vector<swy_ep_h> eps_;
};

// --------------------------------------------------------------------------------------------
// The parent side: fork, wait with a timeout, report
// --------------------------------------------------------------------------------------------

struct RunOptions {
    double timeout_s = 60.0;
    /// Ranks expected to die by a signal (rank → signal). Such a rank must die by it.
    std::map<int, int> expected_signal;
};

inline std::string describe_status(int wstatus) {
    char buf[128];
    if (WIFEXITED(wstatus)) {
        int code = WEXITSTATUS(wstatus);
        const char* why = code == kExitCheckFailed ? " (check failed)"
                          : code == kExitAborted   ? " (gave up: another rank failed)"
                          : code == kExitException ? " (exception)"
                                                   : "";
        snprintf(buf, sizeof(buf), "exited with code %d%s", code, why);
    } else if (WIFSIGNALED(wstatus)) {
        snprintf(buf, sizeof(buf), "killed by signal %d (%s)", WTERMSIG(wstatus),
                 strsignal(WTERMSIG(wstatus)));
    } else {
        snprintf(buf, sizeof(buf), "wait status 0x%x", wstatus);
    }
    return buf;
}

/// Run @p body in @p nranks forked processes. Succeeds only if every rank exits with 0 (or
/// dies by its expected signal) within the timeout.
inline ::testing::AssertionResult run_ranks(int nranks, const std::function<void(World&)>& body,
                                            const RunOptions& opts = {}) {
    if (nranks < 1 || nranks > kMaxRanks)
        return ::testing::AssertionFailure() << "bad rank count " << nranks;
    void* mem = mmap(nullptr, sizeof(SharedArea), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return ::testing::AssertionFailure() << "mmap: " << strerror(errno);
    auto* area = new (mem) SharedArea();  // anonymous memory is zero; placement-new for form
    pid_t parent = getpid();

    fflush(nullptr);  // no buffered output duplicated into the children
    std::vector<pid_t> pids(nranks, -1);
    for (int r = 0; r < nranks; ++r) {
        pid_t pid = fork();
        if (pid < 0) {
            for (int k = 0; k < r; ++k)
                kill(pids[k], SIGKILL);
            for (int k = 0; k < r; ++k)
                waitpid(pids[k], nullptr, 0);
            munmap(mem, sizeof(SharedArea));
            return ::testing::AssertionFailure() << "fork: " << strerror(errno);
        }
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(kExitAborted);
            g_rank = r;
            g_area = area;
            int code = 0;
            try {
                World world(r, nranks, area);
                body(world);
            } catch (const std::exception& e) {
                fprintf(stderr, "[rank %d] exception: %s\n", r, e.what());
                code = kExitException;
            } catch (...) {
                fprintf(stderr, "[rank %d] unknown exception\n", r);
                code = kExitException;
            }
            if (code != 0) {
                int expected = 0;
                area->abort_rank.compare_exchange_strong(expected, r + 1);
            }
            fflush(nullptr);
            _exit(code);
        }
        pids[r] = pid;
    }

    std::vector<int> wstatus(nranks, 0);
    std::vector<bool> reaped(nranks, false);
    std::vector<bool> hung(nranks, false);  // still running at the timeout
    int left = nranks;
    auto deadline = deadline_in(opts.timeout_s);
    bool timed_out = false;
    while (left > 0) {
        int st = 0;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid > 0) {
            auto it = std::find(pids.begin(), pids.end(), pid);
            if (it == pids.end()) continue;  // not ours
            int r = (int)(it - pids.begin());
            wstatus[r] = st;
            reaped[r] = true;
            --left;
            auto exp = opts.expected_signal.find(r);
            bool ok = exp == opts.expected_signal.end()
                          ? (WIFEXITED(st) && WEXITSTATUS(st) == 0)
                          : (WIFSIGNALED(st) && WTERMSIG(st) == exp->second);
            if (!ok) {  // let the others give up now rather than at their own timeouts
                int expected = 0;
                area->abort_rank.compare_exchange_strong(expected, r + 1);
            }
            continue;
        }
        if (Clock::now() >= deadline) {
            timed_out = true;
            for (int r = 0; r < nranks; ++r)
                if (!reaped[r]) {
                    kill(pids[r], SIGKILL);
                    hung[r] = true;
                }
            for (int r = 0; r < nranks; ++r)
                if (!reaped[r]) {
                    waitpid(pids[r], &wstatus[r], 0);
                    reaped[r] = true;
                }
            break;
        }
        usleep(2000);
    }

    // Report: the rank that failed first is the likely culprit; others usually just gave up.
    int first_failed = area->abort_rank.load() - 1;
    munmap(mem, sizeof(SharedArea));
    std::string report;
    bool all_ok = !timed_out;
    for (int r = 0; r < nranks; ++r) {
        int st = wstatus[r];
        auto exp = opts.expected_signal.find(r);
        bool ok = exp == opts.expected_signal.end()
                      ? (WIFEXITED(st) && WEXITSTATUS(st) == 0)
                      : (WIFSIGNALED(st) && WTERMSIG(st) == exp->second);
        if (!ok) all_ok = false;
        report += "  rank " + std::to_string(r) + ": " + describe_status(st);
        if (exp != opts.expected_signal.end())
            report += " (expected signal " + std::to_string(exp->second) + ")";
        if (hung[r]) report += " (still running at the timeout: hung?)";
        if (r == first_failed) report += "  <-- failed first";
        report += "\n";
    }
    if (all_ok) return ::testing::AssertionSuccess();
    auto failure = ::testing::AssertionFailure();
    if (timed_out)
        failure << "timed out after " << opts.timeout_s << " s; killed the ranks still running\n";
    return failure << "ranks (see stderr for their messages):\n" << report;
}

/// Names in /dev/shm that start with "swy" (to check that nothing is left behind).
inline std::set<std::string> swy_shm_files() {
    std::set<std::string> out;
    if (DIR* d = opendir("/dev/shm")) {
        while (dirent* e = readdir(d))
            if (strncmp(e->d_name, "swy", 3) == 0) out.insert(e->d_name);
        closedir(d);
    }
    return out;
}

// --------------------------------------------------------------------------------------------
// Common helpers for the tests
// --------------------------------------------------------------------------------------------

/// Sizes around the protocol boundaries an endpoint reports, plus powers of two up to
/// @p max_pow2 and a few odd sizes. Sorted, unique.
inline std::vector<size_t> boundary_sizes(const std::vector<swy_ep_attr_t>& attrs,
                                          size_t max_pow2 = 4u << 20) {
    std::set<size_t> s{0, 1, 2, 7, 8, 9, 8191, 8193, 65537, 1000003};
    auto around = [&](size_t v) {
        if (v == 0 || v == SIZE_MAX || v > (64u << 20)) return;
        s.insert(v - 1);
        s.insert(v);
        s.insert(v + 1);
    };
    for (const auto& a : attrs) {
        around(a.pio_max_size);
        around(a.bcopy_max_size);
        if (a.bcopy_max_size > 0 && a.bcopy_max_size < (32u << 20)) around(2 * a.bcopy_max_size);
    }
    for (size_t p = 2; p <= max_pow2; p *= 2)
        s.insert(p);
    return std::vector<size_t>(s.begin(), s.end());
}

/// Publish a few attributes of rank's endpoint in scratch words [base + 4*rank, +4).
inline void publish_attr(World& w, int base, const swy_ep_attr_t& a) {
    w.scratch(base + 4 * w.rank() + 0).store(a.pio_max_size);
    w.scratch(base + 4 * w.rank() + 1).store(a.bcopy_max_size);
    w.scratch(base + 4 * w.rank() + 2).store((uint64_t)a.pio);
    w.scratch(base + 4 * w.rank() + 3).store(1, std::memory_order_release);
}

inline swy_ep_attr_t read_attr(World& w, int base, int rank) {
    w.wait_scratch_at_least(base + 4 * rank + 3, 1);
    swy_ep_attr_t a{};
    a.field_mask = SWY_EP_ATTR_FIELD_LANE | SWY_EP_ATTR_FIELD_PIO_DETAIL;
    a.pio_max_size = w.scratch(base + 4 * rank + 0).load();
    a.bcopy_max_size = w.scratch(base + 4 * rank + 1).load();
    a.pio = (int)w.scratch(base + 4 * rank + 2).load();
    return a;
}

/// Progress @p worker until a probe for (tag, mask) finds a message (without removing it).
inline swy_tag_recv_info_t wait_for_unexpected(swy_worker_h worker, swy_tag_t tag,
                                               swy_tag_t mask = ~(swy_tag_t)0,
                                               double timeout_s = 30.0) {
    auto deadline = deadline_in(timeout_s);
    swy_tag_recv_info_t info{};
    unsigned spins = 0;
    for (;;) {
        swy_message_h unused = nullptr;
        swy_status_t st = swy_tag_probe_nb(worker, tag, mask, 0, &info, &unused);
        if (st == SWY_OK) return info;
        ICHECK_MSG(st == SWY_ERR_NO_MESSAGE, "swy_tag_probe_nb returned %d (%s)", (int)st,
                   swy_status_string(st));
        swy_worker_progress(worker);
        if ((++spins & 0xff) == 0) {
            exit_if_aborted();
            ICHECK_MSG(Clock::now() < deadline,
                       "timed out: no unexpected message with tag 0x%llx arrived",
                       (unsigned long long)tag);
            sched_yield();
        }
    }
}

/// Progress @p worker until a non-removing probe for (tag, mask) finds a message or
/// @p max_s passes. @return whether it was found. For tests that want the unexpected path
/// without making their own verdict depend on probe working.
inline bool progress_until_unexpected(swy_worker_h worker, swy_tag_t tag, swy_tag_t mask,
                                      double max_s) {
    auto deadline = deadline_in(max_s);
    swy_tag_recv_info_t info{};
    swy_message_h unused = nullptr;
    for (;;) {
        if (swy_tag_probe_nb(worker, tag, mask, 0, &info, &unused) == SWY_OK) return true;
        swy_worker_progress(worker);
        if (Clock::now() >= deadline) return false;
    }
}

}  // namespace swy_itest

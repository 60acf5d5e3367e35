// Worker lifetime: the memory a worker lives in (inert in a fork()ed child) and what its
// destruction owes the application (every request completed, unfreed ones counted).
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

#include "common/log.h"
#include "core/worker.h"

#if defined(__SANITIZE_ADDRESS__)
#define SWY_LSAN_ROOTS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SWY_LSAN_ROOTS 1
#endif
#endif
#ifdef SWY_LSAN_ROOTS
#include <sanitizer/lsan_interface.h>
#endif

namespace swy::core {

using common::log_printf;
using common::LogLevel;

namespace {
size_t mapped_size(size_t size) {
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return (size + page - 1) / page * page;
}

// LeakSanitizer scans the heap, stacks and globals for pointers, not anonymous mappings: a
// worker in its own pages would make everything it owns look leaked (a worker alive at exit,
// or one a test keeps in a static). Its pages are a root region while it lives.
void lsan_track(void* p, size_t size, bool alive) {
#ifdef SWY_LSAN_ROOTS
    if (alive) {
        __lsan_register_root_region(p, size);
    } else {
        __lsan_unregister_root_region(p, size);
    }
#else
    (void)p;
    (void)size;
    (void)alive;
#endif
}
}  // namespace

namespace {
/// The page header in front of a worker. Wiped with the rest in a fork()ed child.
struct LifetimeHeader {
    uint32_t live;            ///< Worker::kLiveMark while the worker exists in this process
    uint32_t refusal_logged;  ///< an inherited copy's refusal was logged once
};
static_assert(sizeof(LifetimeHeader) <= Worker::kLifetimeHeaderBytes);

LifetimeHeader* header_of(const Worker* w) {
    return reinterpret_cast<LifetimeHeader*>(
        const_cast<unsigned char*>(reinterpret_cast<const unsigned char*>(w)) -
        Worker::kLifetimeHeaderBytes);
}
}  // namespace

static_assert(Worker::kLifetimeHeaderBytes % alignof(Worker) == 0);

void* Worker::operator new(size_t size, const std::nothrow_t&) noexcept {
    // Its own pages, wiped in a fork()ed child: there the header's live mark reads 0 and
    // every call refuses the worker before touching a lane. (A child that kept a copy could
    // otherwise drain the parent's rings or write on its connections.)
    const size_t total = mapped_size(size + kLifetimeHeaderBytes);
    void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    if (madvise(p, total, MADV_WIPEONFORK) != 0) {
        // Linux < 4.14: no fork detection; the worker works as before.
        log_printf(LogLevel::kDebug,
                   "madvise(MADV_WIPEONFORK): %s; a fork()ed child's copy "
                   "of this worker will not be detected",
                   std::strerror(errno));
    }
    lsan_track(p, total, true);
    auto* header = static_cast<LifetimeHeader*>(p);
    header->live = kLiveMark;
    return static_cast<unsigned char*>(p) + kLifetimeHeaderBytes;
}

void* Worker::operator new(size_t size) {
    void* p = operator new(size, std::nothrow);
    if (p == nullptr) throw std::bad_alloc();
    return p;
}

void Worker::operator delete(void* p, size_t size) noexcept {
    if (p == nullptr) return;
    void* base = static_cast<unsigned char*>(p) - kLifetimeHeaderBytes;
    const size_t total = mapped_size(size + kLifetimeHeaderBytes);
    lsan_track(base, total, false);
    munmap(base, total);
}

bool Worker::first_refusal(Worker* w) noexcept {
    LifetimeHeader* h = header_of(w);
    return std::exchange(h->refusal_logged, 1u) == 0;
}

void Worker::abandon(Worker* w) {
    // Only this process's copy of the pages goes: no destructor (it would close the parent's
    // endpoints and release its shared-memory senders). What the copy pointed to stays
    // allocated in this process, as after any fork().
    void* base = header_of(w);
    const size_t total = mapped_size(sizeof(Worker) + kLifetimeHeaderBytes);
    lsan_track(base, total, false);
    munmap(base, total);
}

void Worker::cancel_outstanding() {
    // As inside progress: a callback that waits is refused (in_callback()), and one that
    // closes an endpoint defers its deletion.
    ++progress_depth_;
    pool_.for_each_in_use([this](Request* r) {
        if (r->completed) return;
        r->queue = 0;  // its endpoint's queues went with the endpoint
        if (r->kind == RequestKind::kRecv && !r->matched) {
            matcher_.cancel(r);
            r->matched = true;
        }
        complete(r, Status::kCanceled);
    });
    run_deferred();
    --progress_depth_;
}

void Worker::warn_unfreed() const {
    size_t unfreed = 0;
    const_cast<RequestPool&>(pool_).for_each_in_use([&](const Request* r) {
        if (r->user_owned && !r->user_freed) ++unfreed;
    });
    if (unfreed != 0) {
        log_printf(LogLevel::kWarn,
                   "swy_worker_destroy: %zu request(s) were never freed with "
                   "swy_request_free(); their handles are invalid from now on",
                   unfreed);
    }
}

}  // namespace swy::core

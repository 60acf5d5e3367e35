// /proc/self/pagemap reader (page_identity.h).
#include "transports/verbs/page_identity.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace swy::tl::verbs {

namespace {

constexpr uint64_t kPresent = uint64_t{1} << 63;
constexpr uint64_t kPfnMask = (uint64_t{1} << 55) - 1;

}  // namespace

std::unique_ptr<PagemapIdentity> PagemapIdentity::open(std::string* why) {
    const long ps = sysconf(_SC_PAGESIZE);
    if (ps <= 0) {
        *why = "sysconf(_SC_PAGESIZE) failed";
        return nullptr;
    }
    common::UniqueFd fd(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
    if (!fd) {
        *why = std::string("cannot open /proc/self/pagemap: ") + std::strerror(errno);
        return nullptr;
    }
    std::unique_ptr<PagemapIdentity> id(
        new PagemapIdentity(std::move(fd), static_cast<size_t>(ps)));
    // A private page of our own, written to, is present: only hidden PFNs read as 0.
    void* probe =
        mmap(nullptr, id->page_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (probe == MAP_FAILED) {
        *why = std::string("mmap of a probe page: ") + std::strerror(errno);
        return nullptr;
    }
    *static_cast<volatile uint8_t*>(probe) = 1;
    uint64_t frame = kNoFrame;
    const bool read = id->frames(reinterpret_cast<uintptr_t>(probe), 1, &frame);
    munmap(probe, id->page_size_);
    if (!read) {
        *why = "cannot read /proc/self/pagemap";
        return nullptr;
    }
    if (frame == kNoFrame) {
        *why = "/proc/self/pagemap hides page frame numbers (needs CAP_SYS_ADMIN)";
        return nullptr;
    }
    return id;
}

PagemapIdentity::~PagemapIdentity() = default;

bool PagemapIdentity::frames(uintptr_t page_address, size_t pages, uint64_t* out) {
    const uint64_t first = page_address / page_size_;
    if (pages > (SIZE_MAX / sizeof(uint64_t)) || first > (INT64_MAX / sizeof(uint64_t))) {
        return false;
    }
    auto* bytes = reinterpret_cast<char*>(out);
    const size_t total = pages * sizeof(uint64_t);
    size_t done = 0;
    while (done < total) {
        const ssize_t n = pread(fd_.get(), bytes + done, total - done,
                                static_cast<off_t>(first * sizeof(uint64_t) + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;  // past the end of the address space, or an I/O error
        done += static_cast<size_t>(n);
    }
    for (size_t i = 0; i < pages; ++i) {
        out[i] = (out[i] & kPresent) != 0 ? (out[i] & kPfnMask) : kNoFrame;
    }
    return true;
}

}  // namespace swy::tl::verbs

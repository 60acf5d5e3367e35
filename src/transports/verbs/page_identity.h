// Which physical page frames back a range of this process's memory, read from
// /proc/self/pagemap. The registration cache (reg_cache.h) compares them on every hit: a
// registration pins its pages, so as long as the same frames are mapped at the same addresses
// the registration still describes the buffer (docs/verbs.md, "Registration").
//
// No libibverbs here: this file is compiled and unit-tested on every host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "common/unique_fd.h"

namespace swy::tl::verbs {

/// The page frames behind virtual memory, one number per base page. Implementations: the
/// pagemap reader below, and fakes in unit tests.
class PageIdentity {
public:
    virtual ~PageIdentity() = default;
    /// Size of the pages frames() reports on (4 KiB on x86-64: pagemap has one entry per base
    /// page, also inside a transparent huge page).
    virtual size_t page_size() const = 0;
    /// Frame numbers of the @p pages pages starting at @p page_address (a multiple of
    /// page_size()) into @p out[0 .. pages). A page that is not present (never touched,
    /// swapped out, dropped by madvise) reads as kNoFrame. Returns false when the frames cannot
    /// be read at all (the caller then treats the range as unknown). Not thread-safe.
    virtual bool frames(uintptr_t page_address, size_t pages, uint64_t* out) = 0;

    /// "No page here, or we may not see which": never equal to a real frame for the cache.
    static constexpr uint64_t kNoFrame = 0;
};

/// PageIdentity over /proc/self/pagemap (8 bytes per page: bit 63 present, bits 0-54 PFN).
/// The kernel shows PFNs only to readers with CAP_SYS_ADMIN in the initial user namespace
/// (checked against the credentials of whoever opened the file); others read PFN 0. The file is
/// the opening process's: a forked child must open its own (as it must open its own verbs
/// device: a worker is not usable across fork).
class PagemapIdentity final : public PageIdentity {
public:
    /// Open /proc/self/pagemap and check, on a page of our own that we just touched, that it
    /// reports a present page with a non-zero PFN. Null when it cannot (no pagemap, or PFNs
    /// hidden: no CAP_SYS_ADMIN); @p why then says which.
    static std::unique_ptr<PagemapIdentity> open(std::string* why);
    ~PagemapIdentity() override;
    PagemapIdentity(const PagemapIdentity&) = delete;
    PagemapIdentity& operator=(const PagemapIdentity&) = delete;

    size_t page_size() const override { return page_size_; }
    /// One pread per call (the kernel walks the page tables of the range); kNoFrame for
    /// entries without the present bit (a swapped page's entry holds a swap slot, not a PFN).
    bool frames(uintptr_t page_address, size_t pages, uint64_t* out) override;

private:
    PagemapIdentity(common::UniqueFd fd, size_t page_size)
        : fd_(std::move(fd)), page_size_(page_size) {}
    common::UniqueFd fd_;  // /proc/self/pagemap
    size_t page_size_;
};

}  // namespace swy::tl::verbs

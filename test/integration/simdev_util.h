// Helpers for the integration tests that move messages through simulated device memory
// (SWY_MEMTYPES=host,simdev). The CPU must never touch a simdev buffer -- its pages are
// PROT_NONE, so a stray load or store kills the rank with SIGSEGV, which is the point -- so
// every fill, check and guard goes through swy_mem_copy() and a host staging buffer.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <switchyard/memtype.h>

#include "multiproc.h"
#include "proto_table_text.h"

namespace swy_itest {

inline const char* memtype_name(swy_memtype_t t) {
    switch (t) {
        case SWY_MEMTYPE_HOST: return "host";
        case SWY_MEMTYPE_SIMDEV: return "simdev";
        case SWY_MEMTYPE_DMABUF: return "dmabuf";
        case SWY_MEMTYPE_CUDA: return "cuda";
        default: return "unknown";
    }
}

/// Configuration of a rank that can use simdev memory: TLS, MEMTYPES=host,simdev and,
/// if not empty, the PROTO allow-list.
inline std::vector<std::pair<std::string, std::string>> simdev_config(
    const std::string& tls, const std::string& proto = "") {
    std::vector<std::pair<std::string, std::string>> c{{"TLS", tls}, {"MEMTYPES", "host,simdev"}};
    if (!proto.empty()) c.push_back({"PROTO", proto});
    return c;
}

/// A message buffer of @p size bytes followed by kGuardBytes guard bytes, in host memory
/// (malloc) or in memory of a device type (swy_mem_alloc). The guard is written at
/// construction; fill() and check() go through swy_mem_copy() for device memory. Destroy
/// it before its context (Node::finish()).
class TestBuffer {
public:
    TestBuffer(swy_context_h ctx, swy_memtype_t type, size_t size)
        : ctx_(ctx), type_(type), size_(size) {
        const size_t total = size + kGuardBytes;
        if (type == SWY_MEMTYPE_HOST) {
            ptr_ = static_cast<unsigned char*>(malloc(total));
            ICHECK_MSG(ptr_ != nullptr, "malloc(%zu) failed", total);
        } else {
            void* p = nullptr;
            swy_status_t st = swy_mem_alloc(ctx, type, total, &p);
            ICHECK_MSG(st == SWY_OK && p != nullptr, "swy_mem_alloc(%s, %zu) returned %d (%s)",
                       memtype_name(type), total, (int)st, swy_status_string(st));
            ptr_ = static_cast<unsigned char*>(p);
        }
        std::vector<unsigned char> guard(kGuardBytes, kGuardByte);
        put(size_, guard.data(), kGuardBytes);
    }
    ~TestBuffer() {
        if (ptr_ == nullptr) return;
        if (type_ == SWY_MEMTYPE_HOST) {
            free(ptr_);
        } else {
            swy_status_t st = swy_mem_free(ctx_, ptr_);
            ICHECK_MSG(st == SWY_OK, "swy_mem_free returned %d (%s)", (int)st,
                       swy_status_string(st));
        }
    }
    TestBuffer(const TestBuffer&) = delete;
    TestBuffer& operator=(const TestBuffer&) = delete;
    TestBuffer(TestBuffer&& o) noexcept
        : ctx_(o.ctx_), type_(o.type_), size_(o.size_), ptr_(std::exchange(o.ptr_, nullptr)) {}

    unsigned char* data() const { return ptr_; }
    size_t size() const { return size_; }
    swy_memtype_t type() const { return type_; }
    bool device() const { return type_ != SWY_MEMTYPE_HOST; }

    /// Write the pattern for @p seed into [0, size).
    void fill(uint64_t seed) {
        std::vector<unsigned char> host(size_);
        fill_pattern(host.data(), size_, seed);
        put(0, host.data(), size_);
    }

    /// Copy [0, size + guard) out to host memory.
    std::vector<unsigned char> read_all() const {
        std::vector<unsigned char> host(size_ + kGuardBytes);
        if (type_ == SWY_MEMTYPE_HOST) {
            memcpy(host.data(), ptr_, host.size());
        } else {
            swy_status_t st =
                swy_mem_copy(ctx_, host.data(), SWY_MEMTYPE_HOST, ptr_, type_, host.size());
            ICHECK_MSG(st == SWY_OK, "swy_mem_copy out of a %zu-byte %s buffer returned %d (%s)",
                       size_, memtype_name(type_), (int)st, swy_status_string(st));
        }
        return host;
    }

    /// The first @p valid bytes hold the pattern for @p seed and the guard is intact.
    /// @p what names the transfer in the failure message.
    void check(size_t valid, uint64_t seed, const char* what) const {
        ICHECK(valid <= size_);
        std::vector<unsigned char> host = read_all();
        ICHECK_PATTERN(host.data(), valid, seed, "%s, %s buffer", what, memtype_name(type_));
        ICHECK_MSG(guard_intact(host.data() + size_),
                   "%s: the receive wrote past the end of its %zu-byte %s buffer", what, size_,
                   memtype_name(type_));
    }

private:
    void put(size_t offset, const void* src, size_t n) {
        if (n == 0) return;
        if (type_ == SWY_MEMTYPE_HOST) {
            memcpy(ptr_ + offset, src, n);
            return;
        }
        swy_status_t st = swy_mem_copy(ctx_, ptr_ + offset, type_, src, SWY_MEMTYPE_HOST, n);
        ICHECK_MSG(st == SWY_OK, "swy_mem_copy into a %s buffer returned %d (%s)",
                   memtype_name(type_), (int)st, swy_status_string(st));
    }

    swy_context_h ctx_;
    swy_memtype_t type_;
    size_t size_;
    unsigned char* ptr_ = nullptr;
};

/// As post_send() of multiproc.h, with the buffer's memory type stated.
inline Send post_send_mt(swy_ep_h ep, const void* buf, size_t len, swy_memtype_t memtype,
                         swy_tag_t tag, uint32_t flags = 0) {
    Send s;
    swy_request_params_t params{};
    params.field_mask = SWY_REQ_PARAM_FIELD_FLAGS | SWY_REQ_PARAM_FIELD_MEMTYPE;
    params.flags = flags;
    params.memtype = memtype;
    swy_status_t st = swy_tag_send_nb(ep, buf, len, tag, &params, &s.req);
    if (st == SWY_INPROGRESS) {
        ICHECK_MSG(s.req != nullptr, "swy_tag_send_nb returned SWY_INPROGRESS with no request");
    } else {
        ICHECK_MSG(s.req == nullptr, "swy_tag_send_nb returned %d (%s) but set a request", (int)st,
                   swy_status_string(st));
        ICHECK_MSG(st == SWY_OK, "swy_tag_send_nb(%zu bytes, %s) returned %d (%s)", len,
                   memtype_name(memtype), (int)st, swy_status_string(st));
        s.status = st;
        s.done = true;
    }
    return s;
}

/// As post_recv() of multiproc.h, with the buffer's memory type stated.
inline Recv post_recv_mt(swy_worker_h worker, void* buf, size_t len, swy_memtype_t memtype,
                         swy_tag_t tag, swy_tag_t mask = ~(swy_tag_t)0) {
    Recv r;
    swy_tag_recv_info_t info{~(swy_tag_t)0, ~(size_t)0};
    swy_request_params_t params{};
    params.field_mask = SWY_REQ_PARAM_FIELD_MEMTYPE | SWY_REQ_PARAM_FIELD_RECV_INFO;
    params.memtype = memtype;
    params.recv_info = &info;
    swy_status_t st = swy_tag_recv_nb(worker, buf, len, tag, mask, &params, &r.req);
    ICHECK_MSG(st == SWY_OK || st == SWY_INPROGRESS || st == SWY_ERR_MESSAGE_TRUNCATED,
               "swy_tag_recv_nb(%zu bytes, %s) returned %d (%s)", len, memtype_name(memtype),
               (int)st, swy_status_string(st));
    adopt_recv_result(r, st, &info, "swy_tag_recv_nb");
    return r;
}

// ------------------------------------------------------------------------------------------
// Size lists (the protocol tables are parsed by proto_table_text.h)
// ------------------------------------------------------------------------------------------

/// Share a size list from rank 0 with the other ranks through scratch words
/// [base, base + 1 + count): rank 0 passes its list, the others receive it.
inline std::vector<size_t> share_sizes(World& w, int base, const std::vector<size_t>& mine) {
    if (w.rank() == 0) {
        ICHECK((int)mine.size() + base + 1 <= kNumScratch);
        for (size_t i = 0; i < mine.size(); ++i)
            w.scratch(base + 1 + (int)i).store(mine[i]);
        w.scratch(base).store(mine.size() + 1, std::memory_order_release);
        return mine;
    }
    w.wait_scratch_at_least(base, 1);
    const size_t n = w.scratch(base).load(std::memory_order_acquire) - 1;
    std::vector<size_t> out(n);
    for (size_t i = 0; i < n; ++i)
        out[i] = w.scratch(base + 1 + (int)i).load();
    return out;
}

}  // namespace swy_itest

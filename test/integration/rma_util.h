// Helpers of the one-sided integration tests: expose memory, exchange packed keys through the
// shared area, finish operations, and the request parameters they use.
#pragma once

#include <switchyard/rma.h>

#include <cstring>
#include <vector>

#include "multiproc.h"

namespace swy_itest {

inline uint64_t addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

/// Memory a rank exposes: allocated by swy_mem_map or registered in place.
struct Exposed {
    swy_mem_h mem = nullptr;
    unsigned char* base = nullptr;
    size_t length = 0;
    std::vector<unsigned char> owned;  ///< registered memory lives here
};

inline Exposed expose(swy_context_h ctx, bool allocated, size_t length,
                      uint32_t access = SWY_ACCESS_REMOTE_READ | SWY_ACCESS_REMOTE_WRITE |
                                        SWY_ACCESS_REMOTE_ATOMIC) {
    Exposed e;
    e.length = length;
    swy_mem_map_params_t p{};
    p.field_mask = SWY_MEM_MAP_FIELD_LENGTH | SWY_MEM_MAP_FIELD_FLAGS | SWY_MEM_MAP_FIELD_ACCESS;
    p.length = length;
    p.access = access;
    if (allocated) {
        p.flags = SWY_MEM_MAP_ALLOCATE;
    } else {
        e.owned.resize(length + 64);  // + room past the range, to see that nothing lands there
        p.field_mask |= SWY_MEM_MAP_FIELD_ADDRESS;
        p.address = e.owned.data();
    }
    ICHECK_OK(swy_mem_map(ctx, &p, &e.mem));
    swy_mem_attr_t a{};
    a.field_mask = SWY_MEM_ATTR_FIELD_ADDRESS;
    ICHECK_OK(swy_mem_query(e.mem, &a));
    e.base = static_cast<unsigned char*>(a.address);
    return e;
}

/// Scratch words of key @p which (0 or 1) of @p rank: 8 words of bytes, then a ready flag.
inline int key_scratch(int which, int rank) { return 64 + (which * kMaxRanks + rank) * 9; }
/// Scratch word with the base address of key @p which of @p rank.
inline int base_scratch(int which, int rank) { return 400 + which * kMaxRanks + rank; }

/// Pack a key for @p e and publish it (and its base address) as key @p which of this rank.
inline void publish_key(World& w, int which, swy_context_h ctx, const Exposed& e) {
    ICHECK(which == 0 || which == 1);
    void* buf = nullptr;
    size_t len = 0;
    w.scratch(base_scratch(which, w.rank())).store(addr(e.base), std::memory_order_relaxed);
    ICHECK_OK(swy_rkey_pack(ctx, e.mem, &buf, &len));
    ICHECK_MSG(len <= 64, "packed key of %zu bytes", len);
    uint64_t words[8] = {};
    std::memcpy(words, buf, len);
    swy_rkey_buffer_release(buf);
    const int base = key_scratch(which, w.rank());
    for (int i = 0; i < 8; ++i)
        w.scratch(base + i).store(words[i], std::memory_order_relaxed);
    w.scratch(base + 8).store(len, std::memory_order_release);
}

/// Key @p which of @p rank, as packed (waits until published).
inline std::vector<unsigned char> key_bytes(World& w, int which, int rank) {
    const int base = key_scratch(which, rank);
    w.wait_scratch_at_least(base + 8, 1);
    const size_t len = w.scratch(base + 8).load(std::memory_order_acquire);
    uint64_t words[8];
    for (int i = 0; i < 8; ++i)
        words[i] = w.scratch(base + i).load(std::memory_order_relaxed);
    std::vector<unsigned char> out(len);
    std::memcpy(out.data(), words, len);
    return out;
}

/// Base address of key @p which of @p rank (after key_bytes()).
inline uint64_t remote_base(World& w, int which, int rank) {
    return w.scratch(base_scratch(which, rank)).load(std::memory_order_relaxed);
}

inline swy_rkey_h unpack(swy_ep_h ep, const std::vector<unsigned char>& bytes) {
    swy_rkey_h k = nullptr;
    ICHECK_OK(swy_ep_rkey_unpack(ep, bytes.data(), bytes.size(), &k));
    return k;
}

/// The end of an operation: its immediate status, or the request's once it completes.
inline swy_status_t finish_op(swy_worker_h worker, swy_status_t st, swy_request_h req,
                              const char* what) {
    if (st != SWY_INPROGRESS) return st;
    st = wait_request(worker, req, what);
    swy_request_free(req);
    return st;
}

/// Request parameters with a datatype (contiguous when @p dt is SWY_DATATYPE_CONTIG).
inline swy_request_params_t dt_params(swy_datatype_t dt, uint32_t flags = 0) {
    swy_request_params_t p{};
    p.field_mask = SWY_REQ_PARAM_FIELD_DATATYPE | SWY_REQ_PARAM_FIELD_FLAGS;
    p.datatype = dt;
    p.flags = flags;
    return p;
}

inline swy_status_t put(swy_worker_h w, swy_ep_h ep, const void* buf, size_t count, uint64_t raddr,
                        swy_rkey_h k, swy_datatype_t dt = SWY_DATATYPE_CONTIG, uint32_t flags = 0) {
    swy_request_params_t p = dt_params(dt, flags);
    swy_request_h req = nullptr;
    return finish_op(w, swy_put_nb(ep, buf, count, raddr, k, &p, &req), req, "put");
}

inline swy_status_t get(swy_worker_h w, swy_ep_h ep, void* buf, size_t count, uint64_t raddr,
                        swy_rkey_h k, swy_datatype_t dt = SWY_DATATYPE_CONTIG) {
    swy_request_params_t p = dt_params(dt);
    swy_request_h req = nullptr;
    return finish_op(w, swy_get_nb(ep, buf, count, raddr, k, &p, &req), req, "get");
}

inline swy_status_t atomic(swy_worker_h w, swy_ep_h ep, swy_atomic_op_t op, size_t size,
                           uint64_t operand, uint64_t compare, void* result, uint64_t raddr,
                           swy_rkey_h k) {
    uint32_t op32 = static_cast<uint32_t>(operand), cmp32 = static_cast<uint32_t>(compare);
    const void* o = size == 4 ? static_cast<const void*>(&op32) : &operand;
    const void* c = size == 4 ? static_cast<const void*>(&cmp32) : &compare;
    swy_request_h req = nullptr;
    return finish_op(w,
                     swy_atomic_nb(ep, op, size, o, op == SWY_ATOMIC_OP_CSWAP ? c : nullptr, result,
                                   raddr, k, nullptr, &req),
                     req, "atomic");
}

inline swy_status_t flush(swy_worker_h w, swy_ep_h ep) {
    swy_request_h req = nullptr;
    return finish_op(w, swy_ep_flush_nb(ep, nullptr, &req), req, "flush");
}

}  // namespace swy_itest

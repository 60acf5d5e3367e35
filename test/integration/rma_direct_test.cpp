// One-sided operations on the direct paths: over self (the owner is this process) and over
// shm at 2 and 4 processes (memory allocated by swy_mem_map is mapped by the initiator;
// registered memory is reached by CMA). Every payload is verified byte by byte at the target
// and at the initiator; every rejected operation is checked to leave the target unchanged.
#include <string>
#include <vector>

#include "rma_util.h"

namespace swy_itest {
namespace {

constexpr size_t k64MiB = size_t{64} << 20;

NodeOptions tls(const char* t) {
    NodeOptions o;
    o.config = {{"TLS", t}};
    return o;
}

/// Each rank exposes memory; rank r puts into rank r+1's (a ring; over self the ring is the
/// one rank), the target checks every byte and the guard after it, then r gets it back.
void put_get_sizes(World& w, const NodeOptions& opts, bool allocated, size_t max_size) {
    const bool self = w.size() == 1;
    Node n(w, opts);
    n.connect_all(/*include_self=*/self);
    const int right = (w.rank() + 1) % w.size();
    const int left = (w.rank() + w.size() - 1) % w.size();
    if (!allocated && !self && n.query(right).cma == 0) {
        fprintf(stderr,
                "[rma] rank %d: no CMA to rank %d here: registered memory goes to the "
                "message path, not tested here\n",
                w.rank(), right);
        n.finish();
        return;
    }
    const size_t region = max_size + 16;
    Exposed mine = expose(n.context(), allocated, region);
    publish_key(w, 0, n.context(), mine);
    swy_rkey_h k = unpack(n.ep(right), key_bytes(w, 0, right));
    const uint64_t rbase = remote_base(w, 0, right);
    swy_worker_h wk = n.worker();
    uint64_t idx = 0;
    for (size_t size : {size_t{0}, size_t{1}, size_t{8}, size_t{4095}, size_t{4096}, size_t{4097},
                        size_t{1} << 20, k64MiB}) {
        if (size > max_size) continue;
        ++idx;
        const size_t off = size < 4096 ? 3 : 0;  // small ones unaligned
        std::memset(mine.base, 0xEE, region);
        w.barrier(wk);
        std::vector<unsigned char> out(size + 1);
        fill_pattern(out.data(), size, pattern_seed(size, w.rank(), idx));
        swy_status_t st = put(wk, n.ep(right), size ? out.data() : nullptr, size, rbase + off, k);
        ICHECK_MSG(st == SWY_OK, "put of %zu bytes: %d (%s)", size, (int)st, swy_status_string(st));
        ICHECK_OK(flush(wk, n.ep(right)));
        w.barrier(wk);
        ICHECK_PATTERN(mine.base + off, size, pattern_seed(size, left, idx),
                       "target of a %zu-byte put from rank %d", size, left);
        for (size_t i = 0; i < off; ++i)
            ICHECK_MSG(mine.base[i] == 0xEE, "byte %zu before", i);
        for (size_t i = off + size; i < region; ++i) {
            ICHECK_MSG(mine.base[i] == 0xEE, "byte %zu after a %zu-byte put changed", i, size);
        }
        std::vector<unsigned char> in(size + kGuardBytes, kGuardByte);
        st = get(wk, n.ep(right), size ? in.data() : nullptr, size, rbase + off, k);
        ICHECK_MSG(st == SWY_OK, "get of %zu bytes: %d (%s)", size, (int)st, swy_status_string(st));
        ICHECK_PATTERN(in.data(), size, pattern_seed(size, w.rank(), idx),
                       "initiator of a %zu-byte get", size);
        ICHECK_MSG(guard_intact(in.data() + size), "get of %zu bytes wrote past the buffer", size);
        w.barrier(wk);  // the target overwrites its region for the next size only after this
    }
    w.barrier(wk);
    swy_rkey_destroy(k);
    ICHECK_OK(swy_mem_unmap(n.context(), mine.mem));
    n.finish();
}

TEST(RmaSelf, PutGetEverySizeAllocated) {
    EXPECT_TRUE(run_ranks(1, [](World& w) { put_get_sizes(w, tls("self"), true, k64MiB); }));
}
TEST(RmaSelf, PutGetEverySizeRegistered) {
    EXPECT_TRUE(run_ranks(1, [](World& w) { put_get_sizes(w, tls("self"), false, k64MiB); }));
}
TEST(RmaShm, PutGetEverySizeAllocatedTwoProcesses) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { put_get_sizes(w, tls("shm,cma"), true, k64MiB); }));
}
TEST(RmaShm, PutGetEverySizeRegisteredTwoProcesses) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { put_get_sizes(w, tls("shm,cma"), false, k64MiB); }));
}
TEST(RmaShm, PutGetAllocatedFourProcesses) {
    EXPECT_TRUE(run_ranks(4, [](World& w) { put_get_sizes(w, tls("shm,cma"), true, 1u << 20); }));
}
TEST(RmaShm, PutGetRegisteredFourProcesses) {
    EXPECT_TRUE(run_ranks(4, [](World& w) { put_get_sizes(w, tls("shm,cma"), false, 1u << 20); }));
}

// ---- non-contiguous ----

/// A generic datatype: every other 8-byte block of a buffer (an MPI vector).
struct Strided {
    unsigned char* base;
    size_t blocks;
};
void* strided_start(void*, const void* buffer, size_t count) {
    return new Strided{static_cast<unsigned char*>(const_cast<void*>(buffer)), count};
}
void* strided_start_unpack(void*, void* buffer, size_t count) {
    return new Strided{static_cast<unsigned char*>(buffer), count};
}
size_t strided_size(void* state) { return static_cast<Strided*>(state)->blocks * 8; }
size_t strided_pack(void* state, size_t offset, void* dest, size_t max) {
    auto* s = static_cast<Strided*>(state);
    size_t done = 0;
    for (; done < max && offset + done < s->blocks * 8; ++done) {
        const size_t o = offset + done;
        static_cast<unsigned char*>(dest)[done] = s->base[(o / 8) * 16 + o % 8];
    }
    return done;
}
swy_status_t strided_unpack(void* state, size_t offset, const void* src, size_t length) {
    auto* s = static_cast<Strided*>(state);
    for (size_t i = 0; i < length; ++i) {
        const size_t o = offset + i;
        s->base[(o / 8) * 16 + o % 8] = static_cast<const unsigned char*>(src)[i];
    }
    return SWY_OK;
}
void strided_finish(void* state) { delete static_cast<Strided*>(state); }

void iov_and_generic(World& w, const NodeOptions& opts) {
    const bool self = w.size() == 1;
    Node n(w, opts);
    n.connect_all(self);
    const int right = (w.rank() + 1) % w.size();
    const int left = (w.rank() + w.size() - 1) % w.size();
    Exposed mine = expose(n.context(), true, 1 << 20);
    publish_key(w, 0, n.context(), mine);
    swy_rkey_h k = unpack(n.ep(right), key_bytes(w, 0, right));
    const uint64_t rbase = remote_base(w, 0, right);
    swy_worker_h wk = n.worker();

    // iov: 300 entries of 0..97 bytes (every 7th empty, with a NULL buffer).
    std::vector<std::vector<unsigned char>> parts(300);
    std::vector<swy_dt_iov_t> iov(300);
    std::vector<unsigned char> flat;
    for (size_t i = 0; i < parts.size(); ++i) {
        parts[i].resize(i % 7 == 0 ? 0 : (i * 31) % 98);
        fill_pattern(parts[i].data(), parts[i].size(), pattern_seed(i, w.rank(), 7));
        iov[i] = {parts[i].empty() ? nullptr : parts[i].data(), parts[i].size()};
        flat.insert(flat.end(), parts[i].begin(), parts[i].end());
    }
    std::memset(mine.base, 0, mine.length);
    w.barrier(wk);
    ICHECK_OK(put(wk, n.ep(right), iov.data(), iov.size(), rbase + 5, k, SWY_DATATYPE_IOV));
    ICHECK_OK(flush(wk, n.ep(right)));
    w.barrier(wk);
    {
        // What the left neighbour's iov packs to, built the same way.
        std::vector<unsigned char> expect;
        for (size_t i = 0; i < parts.size(); ++i) {
            std::vector<unsigned char> p(i % 7 == 0 ? 0 : (i * 31) % 98);
            fill_pattern(p.data(), p.size(), pattern_seed(i, left, 7));
            expect.insert(expect.end(), p.begin(), p.end());
        }
        ICHECK(std::memcmp(mine.base + 5, expect.data(), expect.size()) == 0);
        ICHECK(mine.base[5 + expect.size()] == 0 && mine.base[4] == 0);
    }
    // Get it back scattered into a fresh iov.
    std::vector<std::vector<unsigned char>> back(parts.size());
    std::vector<swy_dt_iov_t> back_iov(parts.size());
    for (size_t i = 0; i < parts.size(); ++i) {
        back[i].assign(parts[i].size(), 0);
        back_iov[i] = {back[i].empty() ? nullptr : back[i].data(), back[i].size()};
    }
    ICHECK_OK(
        get(wk, n.ep(right), back_iov.data(), back_iov.size(), rbase + 5, k, SWY_DATATYPE_IOV));
    for (size_t i = 0; i < parts.size(); ++i)
        ICHECK_MSG(back[i] == parts[i], "iov entry %zu", i);

    // Generic: 1000 blocks of 8 bytes out of a 16 KB-strided buffer.
    swy_dt_generic_ops_t ops{strided_start, strided_start_unpack, strided_size,
                             strided_pack,  strided_unpack,       strided_finish};
    swy_datatype_t dt = 0;
    ICHECK_OK(swy_dt_create_generic(&ops, nullptr, &dt));
    const size_t blocks = 1000;
    std::vector<unsigned char> src(blocks * 16), dst(blocks * 16, 0x5A);
    fill_pattern(src.data(), src.size(), pattern_seed(1, w.rank(), 9));
    w.barrier(wk);
    ICHECK_OK(put(wk, n.ep(right), src.data(), blocks, rbase + 4096, k, dt));
    ICHECK_OK(flush(wk, n.ep(right)));
    w.barrier(wk);
    {
        std::vector<unsigned char> lsrc(blocks * 16);
        fill_pattern(lsrc.data(), lsrc.size(), pattern_seed(1, left, 9));
        for (size_t b = 0; b < blocks; ++b) {
            ICHECK_MSG(std::memcmp(mine.base + 4096 + b * 8, lsrc.data() + b * 16, 8) == 0,
                       "generic block %zu", b);
        }
    }
    ICHECK_OK(get(wk, n.ep(right), dst.data(), blocks, rbase + 4096, k, dt));
    for (size_t b = 0; b < blocks; ++b) {
        ICHECK_MSG(std::memcmp(dst.data() + b * 16, src.data() + b * 16, 8) == 0, "block %zu", b);
        ICHECK_MSG(dst[b * 16 + 8] == 0x5A, "gap of block %zu written", b);
    }
    w.barrier(wk);
    swy_dt_destroy(dt);
    swy_rkey_destroy(k);
    ICHECK_OK(swy_mem_unmap(n.context(), mine.mem));
    n.finish();
}

TEST(RmaSelf, IovAndGenericDatatypes) {
    EXPECT_TRUE(run_ranks(1, [](World& w) { iov_and_generic(w, tls("self")); }));
}
TEST(RmaShm, IovAndGenericDatatypes) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { iov_and_generic(w, tls("shm,cma")); }));
}

// ---- atomics ----

/// Every op, 32 and 64 bit, fetching and posted, on the right neighbour's words; the results
/// and the final words are checked against the same arithmetic done locally.
void atomics_exact(World& w, const NodeOptions& opts) {
    const bool self = w.size() == 1;
    Node n(w, opts);
    n.connect_all(self);
    const int right = (w.rank() + 1) % w.size();
    Exposed mine = expose(n.context(), true, 4096);
    std::memset(mine.base, 0, 4096);
    publish_key(w, 0, n.context(), mine);
    swy_rkey_h k = unpack(n.ep(right), key_bytes(w, 0, right));
    const uint64_t rbase = remote_base(w, 0, right);
    swy_worker_h wk = n.worker();
    w.barrier(wk);
    const swy_atomic_op_t ops[] = {SWY_ATOMIC_OP_ADD, SWY_ATOMIC_OP_AND,  SWY_ATOMIC_OP_OR,
                                   SWY_ATOMIC_OP_XOR, SWY_ATOMIC_OP_SWAP, SWY_ATOMIC_OP_CSWAP};
    int word = 0;
    for (size_t size : {size_t{4}, size_t{8}}) {
        const uint64_t mask = size == 4 ? 0xffffffffull : ~0ull;
        for (bool fetching : {true, false}) {
            for (swy_atomic_op_t op : ops) {
                const uint64_t raddr = rbase + 64 + 8 * word++;
                uint64_t model = 0x0123456789abcdefull & mask;
                uint64_t init = model;
                ICHECK_OK(put(wk, n.ep(right), &init, size, raddr, k));
                for (int i = 0; i < 5; ++i) {
                    const uint64_t operand = (0x9e3779b97f4a7c15ull * (i + 1)) & mask;
                    // CSWAP: match on even steps, miss on odd ones.
                    const uint64_t compare = i % 2 == 0 ? model : (model ^ 1);
                    uint64_t result = 0xdeadbeefdeadbeefull;
                    ICHECK_OK(atomic(wk, n.ep(right), op, size, operand, compare,
                                     fetching ? &result : nullptr, raddr, k));
                    if (fetching) {
                        const uint64_t got =
                            size == 4 ? (result & mask) | (0xdeadbeefdeadbeefull & ~mask) : result;
                        ICHECK_MSG((got & mask) == model,
                                   "op %d size %zu step %d: old %llx "
                                   "want %llx",
                                   (int)op, size, i, (unsigned long long)got,
                                   (unsigned long long)model);
                        if (size == 4) {
                            ICHECK_MSG(result >> 32 == 0xdeadbeefull,
                                       "a 4-byte result wrote past 4 bytes");
                        }
                    }
                    switch (op) {
                        case SWY_ATOMIC_OP_ADD: model = (model + operand) & mask; break;
                        case SWY_ATOMIC_OP_AND: model &= operand; break;
                        case SWY_ATOMIC_OP_OR: model |= operand; break;
                        case SWY_ATOMIC_OP_XOR: model ^= operand; break;
                        case SWY_ATOMIC_OP_SWAP: model = operand; break;
                        case SWY_ATOMIC_OP_CSWAP:
                            if (compare == model) model = operand;
                            break;
                    }
                }
                ICHECK_OK(flush(wk, n.ep(right)));
                uint64_t final_value = 0;
                ICHECK_OK(get(wk, n.ep(right), &final_value, size, raddr, k));
                ICHECK_MSG(final_value == model, "op %d size %zu fetching %d: %llx want %llx",
                           (int)op, size, (int)fetching, (unsigned long long)final_value,
                           (unsigned long long)model);
            }
        }
    }
    w.barrier(wk);
    swy_rkey_destroy(k);
    ICHECK_OK(swy_mem_unmap(n.context(), mine.mem));
    n.finish();
}

TEST(RmaSelf, AtomicsEveryOpExact) {
    EXPECT_TRUE(run_ranks(1, [](World& w) { atomics_exact(w, tls("self")); }));
}
TEST(RmaShm, AtomicsEveryOpExact) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { atomics_exact(w, tls("shm,cma")); }));
}

TEST(RmaShm, FourProcessesAddToOneWordExactly) {
    constexpr int kAdds = 20000;
    EXPECT_TRUE(run_ranks(4, [](World& w) {
        Node n(w, tls("shm,cma"));
        n.connect_all();
        swy_worker_h wk = n.worker();
        Exposed mine;
        if (w.rank() == 0) {
            mine = expose(n.context(), true, 4096);
            publish_key(w, 0, n.context(), mine);
        }
        swy_rkey_h k = nullptr;
        uint64_t raddr = 0;
        if (w.rank() != 0) {
            k = unpack(n.ep(0), key_bytes(w, 0, 0));
            raddr = remote_base(w, 0, 0) + 128;
        }
        w.barrier(wk);
        for (int i = 0; i < kAdds; ++i) {
            const uint64_t v = uint64_t(w.rank() + 1) << 20 | 1;
            if (w.rank() == 0) {
                // The owner's own CPU atomics are atomic with the peers' (atomicity mode cpu).
                __atomic_fetch_add(reinterpret_cast<uint64_t*>(mine.base + 128), v,
                                   __ATOMIC_SEQ_CST);
            } else if (i % 2 == 0) {
                ICHECK_OK(atomic(wk, n.ep(0), SWY_ATOMIC_OP_ADD, 8, v, 0, nullptr, raddr, k));
            } else {
                uint64_t old = 0;
                ICHECK_OK(atomic(wk, n.ep(0), SWY_ATOMIC_OP_ADD, 8, v, 0, &old, raddr, k));
            }
        }
        if (w.rank() != 0) ICHECK_OK(flush(wk, n.ep(0)));
        w.barrier(wk);
        if (w.rank() == 0) {
            uint64_t want = 0;
            for (int r = 0; r < 4; ++r)
                want += uint64_t(kAdds) * ((uint64_t(r + 1) << 20) | 1);
            uint64_t got = 0;
            std::memcpy(&got, mine.base + 128, 8);
            ICHECK_MSG(got == want, "sum %llu want %llu", (unsigned long long)got,
                       (unsigned long long)want);
        }
        w.barrier(wk);
        if (k != nullptr) swy_rkey_destroy(k);
        if (w.rank() == 0) ICHECK_OK(swy_mem_unmap(n.context(), mine.mem));
        n.finish();
    }));
}

}  // namespace
}  // namespace swy_itest

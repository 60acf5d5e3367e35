/* OpenSHMEM over Open MPI's `spml ucx`, run over Switchyard's UCP library (contrib/ucp):
 * put/get of every size class into the symmetric heap (shmem_malloc: memory the library
 * allocated with ucp_mem_map(ALLOCATE|FIXED)) and into a static symmetric array (registered
 * memory), each byte checked, and the atomics spml ucx maps to ucp_atomic_op_nbx (ADD, AND, OR,
 * XOR, SWAP, CSWAP; fetching and not; 32 and 64 bit), each with a result that only a correct,
 * atomic execution gives. Any PE count >= 2. Prints "shmem_rma: OK (<n> PEs)" on PE 0.
 */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "PE %d: %s:%d: ", shmem_my_pe(), __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
            ++failures;                                                           \
        }                                                                         \
    } while (0)

/* The byte `i` of what PE `pe` writes in round `round`: differs between PEs, rounds and
 * positions, and is never the fill byte. */
static unsigned char pattern(int pe, int round, size_t i) {
    return (unsigned char)(1 + (pe * 131 + round * 17 + i * 7 + (i >> 8)) % 251);
}

enum { kFill = 0xEE, kMaxBytes = 1 << 20 };

/* Sizes around the usual protocol edges (one cache line, a page, the 8 KiB and 64 KiB eager
 * limits) and a large one. */
static const size_t kSizes[] = {1,    7,    8,    63,   64,    65,    4095,  4096,
                                4097, 8191, 8192, 8193, 65535, 65536, 65537, 1 << 20};
enum { kNumSizes = sizeof kSizes / sizeof kSizes[0] };

static unsigned char static_area[70000];

/* Each PE puts `bytes` of its pattern into its right neighbour's `sym` (with a guard byte
 * after it), then gets its left neighbour's copy back from there; both checked byte by byte. */
static void put_get_round(unsigned char* sym, size_t capacity, size_t bytes, int round) {
    const int me = shmem_my_pe(), n = shmem_n_pes();
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    if (bytes + 1 > capacity) return;
    memset(sym, kFill, bytes + 1);
    unsigned char* src = malloc(bytes);
    unsigned char* back = malloc(bytes + 1);
    for (size_t i = 0; i < bytes; ++i)
        src[i] = pattern(me, round, i);
    shmem_barrier_all(); /* every PE has filled its area */
    shmem_putmem(sym, src, bytes, right);
    shmem_barrier_all(); /* barrier completes the puts (quiet) */
    size_t bad = 0;
    for (size_t i = 0; i < bytes; ++i)
        bad += sym[i] != pattern(left, round, i);
    CHECK(bad == 0, "put of %zu bytes from PE %d: %zu bytes wrong", bytes, left, bad);
    CHECK(sym[bytes] == kFill, "put of %zu bytes wrote past its end", bytes);
    memset(back, kFill, bytes + 1);
    shmem_getmem(back, sym, bytes, right); /* right holds my pattern */
    bad = 0;
    for (size_t i = 0; i < bytes; ++i)
        bad += back[i] != pattern(me, round, i);
    CHECK(bad == 0, "get of %zu bytes from PE %d: %zu bytes wrong", bytes, right, bad);
    CHECK(back[bytes] == kFill, "get of %zu bytes wrote past its end", bytes);
    free(src);
    free(back);
    shmem_barrier_all();
}

/* Typed puts (shmem_long_p / _g) and a non-blocking put completed by shmem_quiet. */
static void scalar_round(long* cell) {
    const int me = shmem_my_pe(), n = shmem_n_pes();
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    *cell = -1;
    shmem_barrier_all();
    shmem_long_p(cell, 1000L * me + 7, right);
    shmem_quiet();
    shmem_barrier_all();
    CHECK(*cell == 1000L * left + 7, "shmem_long_p: %ld, expected %ld", *cell, 1000L * left + 7);
    const long got = shmem_long_g(cell, left);
    CHECK(got == 1000L * ((left + n - 1) % n) + 7, "shmem_long_g: %ld", got);
    shmem_barrier_all();
}

/* Atomics on PE 0's words by every PE: 32-bit (int) and 64-bit (long long). */
static void atomics_round(int* i32, long long* i64, int* fetched32, long long* fetched64) {
    const int me = shmem_my_pe(), n = shmem_n_pes();
    enum { kIters = 50 };
    const long long big = 1LL << 40; /* exercises the upper half of 64-bit words */

    /* fetch-add and add: the sum of everything added, and distinct fetched values. */
    if (me == 0) {
        *i32 = 0;
        *i64 = big;
    }
    shmem_barrier_all();
    int last32 = -1;
    long long last64 = -1;
    for (int k = 0; k < kIters; ++k) {
        const int f32 = shmem_int_atomic_fetch_add(i32, 1, 0);
        const long long f64 = shmem_longlong_atomic_fetch_add(i64, big, 0);
        CHECK(f32 > last32 && f32 >= 0 && f32 < 3 * n * kIters, "fetch_add32 fetched %d", f32);
        CHECK(f64 > last64 && f64 % big == 0, "fetch_add64 fetched %lld", f64);
        last32 = f32;
        last64 = f64;
        shmem_int_atomic_add(i32, 2, 0);
    }
    shmem_barrier_all();
    if (me == 0) {
        CHECK(*i32 == 3 * n * kIters, "add32 total %d, expected %d", *i32, 3 * n * kIters);
        CHECK(*i64 == big * (1 + n * kIters), "add64 total %lld", *i64);
    }
    shmem_barrier_all();

    /* or / xor / and (the sized calls: OpenSHMEM defines bitwise atomics on those; not fetching:
       Open MPI 4.1.4's fetching ones overrun its stack and lose the operation, over UCX too): each PE owns bits; the final word
       shows every PE's operation. */
    if (me == 0) {
        *i32 = 0;
        *i64 = 0;
    }
    shmem_barrier_all();
    const unsigned bit = 1u << (me % 31);
    shmem_int32_atomic_or((int32_t*)i32, (int32_t)bit, 0);
    shmem_int64_atomic_or((int64_t*)i64, (int64_t)((uint64_t)bit << 32 | bit), 0);
    shmem_barrier_all();
    unsigned want = 0;
    for (int p = 0; p < n; ++p)
        want |= 1u << (p % 31);
    if (me == 0) {
        CHECK((unsigned)*i32 == want, "or32 gave %#x, expected %#x", (unsigned)*i32, want);
        CHECK((uint64_t)*i64 == ((uint64_t)want << 32 | want), "or64 gave %#llx",
              (unsigned long long)*i64);
    }
    shmem_barrier_all();
    shmem_int32_atomic_xor((int32_t*)i32, 0x5A5A0000, 0); /* n xors of the same mask: parity of n */
    shmem_int64_atomic_xor((int64_t*)i64, (int64_t)0x5A5A5A5A00000000ULL, 0);
    shmem_barrier_all();
    if (me == 0) {
        const unsigned x32 = (n % 2) ? 0x5A5A0000u : 0;
        const uint64_t x64 = (n % 2) ? 0x5A5A5A5A00000000ULL : 0;
        CHECK((unsigned)*i32 == (want ^ x32), "xor32 gave %#x", (unsigned)*i32);
        CHECK((uint64_t)*i64 == ((((uint64_t)want << 32) | want) ^ x64), "xor64 gave %#llx",
              (unsigned long long)*i64);
    }
    shmem_barrier_all();
    if (me == 0) {
        *i32 = -1;
        *i64 = -1;
    }
    shmem_barrier_all();
    shmem_int32_atomic_and((int32_t*)i32, (int32_t)~bit, 0);
    shmem_int64_atomic_and((int64_t*)i64, (int64_t) ~((uint64_t)bit << 32), 0);
    shmem_barrier_all();
    if (me == 0) {
        CHECK((unsigned)*i32 == ~want, "and32 gave %#x, expected %#x", (unsigned)*i32, ~want);
        CHECK((uint64_t)*i64 == ~((uint64_t)want << 32), "and64 gave %#llx",
              (unsigned long long)*i64);
    }
    shmem_barrier_all();

    /* swap: every PE swaps in its own value once; the values fetched plus the final one are
       exactly the initial one and every PE's (a lost or duplicated swap shows). */
    if (me == 0) {
        *i32 = -7;
        *i64 = -7;
    }
    shmem_barrier_all();
    fetched32[me] = shmem_int_atomic_swap(i32, me + 1, 0);
    fetched64[me] = shmem_longlong_atomic_swap(i64, big * (me + 1), 0);
    shmem_barrier_all();
    for (int p = 0; p < n; ++p) { /* gather everyone's fetched values on every PE */
        if (p != me) {
            fetched32[p] = shmem_int_g(&fetched32[p], p);
            fetched64[p] = shmem_longlong_g(&fetched64[p], p);
        }
    }
    const int final32 = shmem_int_g(i32, 0);
    const long long final64 = shmem_longlong_g(i64, 0);
    long long seen32 = final32 == -7 ? 0 : 1LL << final32, seen64 = 0;
    int initial32 = final32 == -7, initial64 = final64 == -7;
    if (final64 != -7) seen64 |= 1LL << (final64 / big);
    for (int p = 0; p < n; ++p) {
        if (fetched32[p] == -7) {
            ++initial32;
        } else {
            CHECK(!(seen32 & (1LL << fetched32[p])), "swap32 value %d seen twice", fetched32[p]);
            seen32 |= 1LL << fetched32[p];
        }
        if (fetched64[p] == -7) {
            ++initial64;
        } else {
            CHECK(!(seen64 & (1LL << (fetched64[p] / big))), "swap64 value seen twice");
            seen64 |= 1LL << (fetched64[p] / big);
        }
    }
    CHECK(initial32 == 1 && initial64 == 1, "swap: initial value seen %d/%d times", initial32,
          initial64);
    const long long all = ((1LL << n) - 1) << 1;
    CHECK(seen32 == all && seen64 == all, "swap: values %#llx/%#llx, expected %#llx", seen32,
          seen64, all);
    shmem_barrier_all();

    /* compare-and-swap: a CAS-loop increment by every PE; only a correct CSWAP counts each.
       64-bit only: Open MPI 4.1.4's 32-bit compare_swap stores 8 bytes into its 4-byte result
       (stack smashing, over UCX too); ucp_atomic_test covers the library's 32-bit CSWAP. */
    if (me == 0) {
        *i32 = 0;
        *i64 = big;
    }
    shmem_barrier_all();
    for (int k = 0; k < kIters; ++k) {
        long long old64 = shmem_longlong_g(i64, 0), prev64;
        while ((prev64 = shmem_longlong_atomic_compare_swap(i64, old64, old64 + big, 0)) != old64) {
            old64 = prev64;
        }
    }
    /* A compare that does not match changes nothing. */
    const long long miss = shmem_longlong_atomic_compare_swap(i64, -12345, 99, 0);
    CHECK(miss != -12345, "cswap64 with a wrong compare matched");
    shmem_barrier_all();
    if (me == 0) {
        CHECK(*i64 == big * (1 + n * kIters), "cswap64 loop total %lld", *i64);
    }
    shmem_barrier_all();
}

int main(void) {
    shmem_init();
    const int me = shmem_my_pe(), n = shmem_n_pes();
    if (n < 2) {
        if (me == 0) fprintf(stderr, "shmem_rma: needs at least 2 PEs\n");
        shmem_finalize();
        return 1;
    }
    unsigned char* heap = shmem_malloc(kMaxBytes + 1);
    long* cell = shmem_malloc(sizeof *cell);
    int* i32 = shmem_malloc(sizeof *i32);
    long long* i64 = shmem_malloc(sizeof *i64);
    int* fetched32 = shmem_calloc((size_t)n, sizeof *fetched32);
    long long* fetched64 = shmem_calloc((size_t)n, sizeof *fetched64);
    CHECK(heap && cell && i32 && i64 && fetched32 && fetched64, "shmem_malloc failed");
    if (failures == 0) {
        for (int s = 0; s < kNumSizes; ++s) {
            put_get_round(heap, kMaxBytes + 1, kSizes[s], s);
            put_get_round(static_area, sizeof static_area, kSizes[s], s + 100);
        }
        scalar_round(cell);
        atomics_round(i32, i64, fetched32, fetched64);
    }
    shmem_barrier_all();
    shmem_free(fetched64);
    shmem_free(fetched32);
    shmem_free(i64);
    shmem_free(i32);
    shmem_free(cell);
    shmem_free(heap);
    if (failures == 0 && me == 0) printf("shmem_rma: OK (%d PEs)\n", n);
    fflush(stdout);
    shmem_finalize();
    return failures == 0 ? 0 : 1;
}

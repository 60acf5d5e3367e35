/* Shared helpers for the MPI integration suite.
 *
 * The programs in this directory are plain MPI: they run under any PML (ob1, ucx, swy) so a
 * failure can be told apart from a bug in the test by rerunning with --mca pml ob1. Every
 * check aborts the whole job with a message naming the rank and the line, so mpiexec exits
 * non-zero and CTest reports the failure; nothing is only printed.
 */
#ifndef SWY_MPITEST_H
#define SWY_MPITEST_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints where and what failed, then ends the whole job. */
static inline void mt_fail_prefix(const char* file, int line, const char* cond) {
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "FAIL rank %d %s:%d: ", rank, file, line);
    if (cond) fprintf(stderr, "check '%s' failed: ", cond);
}

static inline void mt_fail_abort(void) {
    fprintf(stderr, "\n");
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1); /* MPI_Abort does not return; this says so to the compiler */
}

#define MT_FAIL(...)                              \
    do {                                          \
        mt_fail_prefix(__FILE__, __LINE__, NULL); \
        fprintf(stderr, __VA_ARGS__);             \
        mt_fail_abort();                          \
    } while (0)

#define MT_CHECK(cond, ...)                            \
    do {                                               \
        if (!(cond)) {                                 \
            mt_fail_prefix(__FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);              \
            mt_fail_abort();                           \
        }                                              \
    } while (0)

/* MPI calls are checked even though the default handler aborts: tests that switch to
 * MPI_ERRORS_RETURN must not let an error pass silently. */
#define MT_MPI(call)                                                \
    do {                                                            \
        int mt_rc_ = (call);                                        \
        if (mt_rc_ != MPI_SUCCESS) {                                \
            char mt_msg_[MPI_MAX_ERROR_STRING];                     \
            int mt_len_ = 0;                                        \
            MPI_Error_string(mt_rc_, mt_msg_, &mt_len_);            \
            MT_FAIL("%s returned %d (%s)", #call, mt_rc_, mt_msg_); \
        }                                                           \
    } while (0)

/* The pattern is a stream of 64-bit words, word k = mix(k, seed): every word differs from its
 * neighbours and from the same word of another seed, so a fragment delivered at the wrong
 * offset or a message delivered to the wrong receive is detected, not only a missing byte.
 * Word-wide so that filling and checking 64 MiB stays cheap next to moving it. */
static inline uint64_t mt_pattern_word(uint64_t k, uint32_t seed) {
    uint64_t x = k * 0x9e3779b97f4a7c15ull ^ ((uint64_t)seed << 32 | seed) ^ 0xd1b54a32d192ed03ull;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    return x ^ (x >> 29);
}

static inline uint8_t mt_pattern_byte(size_t i, uint32_t seed) {
    return (uint8_t)(mt_pattern_word(i / 8, seed) >> (8 * (i % 8)));
}

static inline void mt_fill(void* buf, size_t len, uint32_t seed) {
    uint8_t* p = (uint8_t*)buf;
    size_t words = len / 8;
    for (size_t k = 0; k < words; ++k) {
        uint64_t w = mt_pattern_word(k, seed);
        memcpy(p + 8 * k, &w, 8); /* byte order as mt_pattern_byte on little-endian hosts */
    }
    for (size_t i = 8 * words; i < len; ++i)
        p[i] = mt_pattern_byte(i, seed);
}

/* Returns the offset of the first byte that differs from the pattern, or -1. */
static inline long mt_verify(const void* buf, size_t len, uint32_t seed) {
    const uint8_t* p = (const uint8_t*)buf;
    size_t start = len - len % 8; /* where the byte-wise scan begins: the tail, or a bad word */
    for (size_t k = 0; k < len / 8; ++k) {
        uint64_t w;
        memcpy(&w, p + 8 * k, 8);
        if (w != mt_pattern_word(k, seed)) {
            start = 8 * k;
            break;
        }
    }
    for (size_t i = start; i < len; ++i)
        if (p[i] != mt_pattern_byte(i, seed)) return (long)i;
    return -1;
}

/* Fails the job unless buf holds the pattern; names what was being checked. */
#define MT_EXPECT_PATTERN(buf, len, seed, what)                                             \
    do {                                                                                    \
        long mt_bad_ = mt_verify((buf), (len), (seed));                                     \
        if (mt_bad_ >= 0)                                                                   \
            MT_FAIL("%s: %zu-byte payload differs at offset %ld (got 0x%02x, want 0x%02x)", \
                    (what), (size_t)(len), mt_bad_, ((const uint8_t*)(buf))[mt_bad_],       \
                    mt_pattern_byte((size_t)mt_bad_, (seed)));                              \
    } while (0)

/* Guard bytes after a receive buffer: a receive must never write past what it was given. */
enum { MT_GUARD = 64, MT_GUARD_BYTE = 0xA5 };

static inline void mt_set_guard(void* after, size_t len) { memset(after, MT_GUARD_BYTE, len); }

static inline int mt_guard_intact(const void* after, size_t len) {
    const uint8_t* p = (const uint8_t*)after;
    for (size_t i = 0; i < len; ++i)
        if (p[i] != MT_GUARD_BYTE) return 0;
    return 1;
}

static inline void* mt_malloc(size_t len) {
    void* p = malloc(len ? len : 1);
    if (!p) MT_FAIL("out of memory allocating %zu bytes", len);
    return p;
}

static inline int mt_rank(void) {
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

static inline int mt_size(void) {
    int s;
    MPI_Comm_size(MPI_COMM_WORLD, &s);
    return s;
}

/* Rank 0 prints the verdict once every rank has reached the end; CTest looks at the exit
 * code, the line is for people reading the log. */
static inline void mt_pass(const char* name) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (mt_rank() == 0) printf("PASS %s (%d ranks)\n", name, mt_size());
}

#endif

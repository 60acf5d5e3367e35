/* Message sizes for the MPI suite: every small size, powers of two up to a maximum, and
 * n-1, n, n+1 around each Switchyard protocol boundary.
 *
 * The default boundaries are what `swy-info --proto` prints on a host without a calibration
 * file (built-in cost figures) and with the default SWY_SHM_* geometry:
 *   8224     bcopy fragment, through a PIO ring or the shared FIFO (SWY_SHM_PIO_CELL_SIZE and
 *            SWY_SHM_CELL_SIZE 8256 - 32 B first-fragment header)
 *   8240     largest eager_short (PIO) message and largest single FIFO packet (8256 - 16 B of
 *            sync-header room): an 8 KiB MPI message travels in one packet (issue 17)
 *   8256     one FIFO cell / PIO record of message
 *   65504    bcopy fragment of the self transport (rank sending to itself)
 *   103087   eager_bcopy -> rndv_get_cma on endpoints with and without PIO (first rendezvous
 *            size; both carry 8224-byte fragments)
 *   131072   SWY_RNDV_SPLIT_MIN: rendezvous GET split between both processes
 *   524288   SWY_RNDV_FRAG_SIZE: one GET chunk
 *   8388608  most bytes one progress call pulls
 * The two rendezvous thresholds are the "thresholds:" lines of `swy-info --proto` under the
 * built-in figures (SWY_CALIBRATION_FILE=/dev/null); test/protocol/mpi_edges_test.cpp fails when
 * the selector moves them away from this list, so the suite keeps crossing today's edges.
 * (On a lane with CMA the selector never picks rndv_pipeline: it is only the fallback of a
 * refused GET, which pingpong.cma_refused and pingpong.rndv_pipeline cross.)
 * A calibrated host (swy-info --calibrate) moves the cost-model boundaries; the suite also
 * runs with pinned thresholds (SWY_PIO_MAX, SWY_RNDV_THRESH) and names them through
 * MT_EDGES, so the edges under test are the ones in force whatever this table says.
 *
 * Environment: MT_EDGES (comma list, K/M suffixes) replaces the default boundaries,
 * MT_EXTRA_EDGES adds to them, MT_MAX_SIZE caps the largest size (default 64M).
 */
#ifndef SWY_MT_SIZES_H
#define SWY_MT_SIZES_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const char* const mt_default_edges = "8224,8240,8256,65504,103087,131072,524288,8388608";

static inline size_t mt_parse_size(const char* s, char** end) {
    size_t v = (size_t)strtoull(s, end, 10);
    switch (**end) {
        case 'k':
        case 'K':
            v <<= 10;
            ++*end;
            break;
        case 'm':
        case 'M':
            v <<= 20;
            ++*end;
            break;
        case 'g':
        case 'G':
            v <<= 30;
            ++*end;
            break;
        default: break;
    }
    return v;
}

static int mt_cmp_size(const void* a, const void* b) {
    size_t x = *(const size_t*)a, y = *(const size_t*)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    size_t* v;
    size_t n, cap;
} mt_sizes_t;

static inline void mt_sizes_add(mt_sizes_t* s, size_t x) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->v = (size_t*)realloc(s->v, s->cap * sizeof(size_t));
        if (!s->v) abort();
    }
    s->v[s->n++] = x;
}

static inline void mt_sizes_add_edges(mt_sizes_t* s, const char* list) {
    const char* p = list;
    while (p && *p) {
        char* end;
        size_t e = mt_parse_size(p, &end);
        if (end == p) break; /* not a number: stop rather than loop */
        if (e > 0) mt_sizes_add(s, e - 1);
        mt_sizes_add(s, e);
        mt_sizes_add(s, e + 1);
        p = (*end == ',') ? end + 1 : end;
    }
}

/* Builds the sorted, de-duplicated list; sizes above the maximum are dropped. */
static inline mt_sizes_t mt_sizes_build(void) {
    mt_sizes_t s = {0, 0, 0};
    size_t max = 64u << 20;
    const char* m = getenv("MT_MAX_SIZE");
    if (m && *m) {
        char* end;
        max = mt_parse_size(m, &end);
    }
    for (size_t i = 0; i <= 16; ++i)
        mt_sizes_add(&s, i);
    for (size_t p = 32; p <= max; p <<= 1)
        mt_sizes_add(&s, p);
    const char* edges = getenv("MT_EDGES");
    mt_sizes_add_edges(&s, edges ? edges : mt_default_edges);
    mt_sizes_add_edges(&s, getenv("MT_EXTRA_EDGES"));
    qsort(s.v, s.n, sizeof(size_t), mt_cmp_size);
    size_t out = 0;
    for (size_t i = 0; i < s.n; ++i)
        if (s.v[i] <= max && (out == 0 || s.v[i] != s.v[out - 1])) s.v[out++] = s.v[i];
    s.n = out;
    return s;
}

static inline size_t mt_sizes_max(const mt_sizes_t* s) { return s->n ? s->v[s->n - 1] : 0; }

#endif

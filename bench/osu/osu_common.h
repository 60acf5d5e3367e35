/* Options, buffers and output shared by the OSU-style benchmarks in bench/osu/.
 *
 * These programs are written for Switchyard (not copied from the OSU micro-benchmarks) but
 * measure the same way and print the same table shape, so results line up with OSU's:
 *   - sizes are powers of two from min to max (0 first when min is 0);
 *   - messages up to the "large" size (8 KiB) run more iterations than bigger ones;
 *   - a warm-up phase (connection setup, first-touch, registration) is not timed.
 * Plain MPI: they run over any PML.
 */
#ifndef SWY_OSU_COMMON_H
#define SWY_OSU_COMMON_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    size_t min_size, max_size;
    int iters_small, iters_large; /* timed iterations at or below / above large_size */
    int warmup_small, warmup_large;
    size_t large_size;
    int window;
} osu_opts_t;

/* Options a program adds to the common ones (the one-sided programs: window flavour,
 * synchronisation, data type). A letter here takes precedence over the common -w, which then
 * stays available as -W. */
typedef struct {
    const char* letters;                              /* getopt form, e.g. "w:s:" */
    int (*handle)(int c, const char* arg, void* ctx); /* returns 0 when it accepts the value */
    void (*usage)(void* ctx);                         /* prints the program's own option lines */
    void* ctx;
} osu_extra_opts_t;

static inline void osu_usage(const char* prog, const osu_opts_t* d, const osu_extra_opts_t* x) {
    const int w_taken = x && strchr(x->letters, 'w') != NULL;
    fprintf(stderr,
            "usage: %s [-m [min:]max] [-i iters] [-I iters_large] [-x warmup] [-X warmup_large]\n"
            "          [%s window] [-l large_size]%s\n"
            "  -m  message sizes, powers of two from min to max (default %zu:%zu; K/M suffixes)\n"
            "  -i  timed iterations up to large_size (default %d); -I above it (default %d)\n"
            "  -x  untimed warm-up iterations up to large_size (default %d); -X above (%d)\n"
            "  %s  messages in flight per round, bandwidth tests (default %d)\n"
            "  -l  the size above which the large counts apply (default %zu)\n",
            prog, w_taken ? "-W" : "-w", x ? " [options below]" : "", d->min_size, d->max_size,
            d->iters_small, d->iters_large, d->warmup_small, d->warmup_large, w_taken ? "-W" : "-w",
            d->window, d->large_size);
    if (x && x->usage) x->usage(x->ctx);
}

static inline size_t osu_parse_size(const char* s, char** end) {
    size_t v = (size_t)strtoull(s, end, 10);
    if (**end == 'k' || **end == 'K')
        v <<= 10, ++*end;
    else if (**end == 'm' || **end == 'M')
        v <<= 20, ++*end;
    return v;
}

/* Parses argv into *o (which holds the program's defaults) and the program's own options
 * through *x (may be NULL). Returns 0, or 1 after printing usage on rank 0 (the caller
 * finalizes and exits). */
static inline int osu_parse(int argc, char** argv, osu_opts_t* o, const osu_extra_opts_t* x) {
    const osu_opts_t defaults = *o;
    const int w_taken = x && strchr(x->letters, 'w') != NULL;
    char optstring[64];
    snprintf(optstring, sizeof optstring, "m:i:I:x:X:W:l:h%s%s",
             w_taken ? "" : "w:", x ? x->letters : "");
    int c, rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    while ((c = getopt(argc, argv, optstring)) != -1) {
        char* end = NULL;
        if (x && c != ':' && c != '?' && strchr(x->letters, c) != NULL) {
            if (x->handle(c, optarg, x->ctx) == 0) continue;
            if (rank == 0) osu_usage(argv[0], &defaults, x);
            return 1;
        }
        switch (c) {
            case 'm': {
                size_t a = osu_parse_size(optarg, &end);
                if (*end == ':') {
                    o->min_size = a;
                    o->max_size = osu_parse_size(end + 1, &end);
                } else {
                    o->max_size = a;
                }
                break;
            }
            case 'i': o->iters_small = atoi(optarg); break;
            case 'I': o->iters_large = atoi(optarg); break;
            case 'x': o->warmup_small = atoi(optarg); break;
            case 'X': o->warmup_large = atoi(optarg); break;
            case 'w':
            case 'W': o->window = atoi(optarg); break;
            case 'l': o->large_size = osu_parse_size(optarg, &end); break;
            default:
                if (rank == 0) osu_usage(argv[0], &defaults, x);
                return 1;
        }
    }
    if (o->iters_small < 1 || o->iters_large < 1 || o->window < 1 || o->min_size > o->max_size) {
        if (rank == 0) osu_usage(argv[0], &defaults, x);
        return 1;
    }
    return 0;
}

/* Which rank counts a program accepts. */
typedef enum { OSU_TWO_RANKS, OSU_EVEN_RANKS } osu_ranks_t;

/* MPI_Init, rank and size, options parsed over the defaults already in *o and the program's
 * own options through *x (may be NULL). Returns 0 to go on; otherwise the usage or rank-count
 * error was printed, MPI is finalized and the program should return the value (1). */
static inline int osu_start_with(int* argc, char*** argv, osu_opts_t* o, osu_ranks_t ranks,
                                 const osu_extra_opts_t* x, int* rank, int* np) {
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, np);
    const int ranks_ok = ranks == OSU_TWO_RANKS ? *np == 2 : (*np >= 2 && *np % 2 == 0);
    if (osu_parse(*argc, *argv, o, x) != 0 || !ranks_ok) {
        if (!ranks_ok && *rank == 0)
            fprintf(stderr, "%s: %s\n", (*argv)[0],
                    ranks == OSU_TWO_RANKS ? "run with exactly 2 ranks"
                                           : "needs an even number of ranks");
        MPI_Finalize();
        return 1;
    }
    return 0;
}

/* osu_start_with() for a program without options of its own. */
static inline int osu_start(int* argc, char*** argv, osu_opts_t* o, osu_ranks_t ranks, int* rank,
                            int* np) {
    return osu_start_with(argc, argv, o, ranks, NULL, rank, np);
}

/* Next size of the sweep: 0 -> 1 -> 2 -> 4 ... */
static inline size_t osu_next_size(size_t s) { return s ? 2 * s : 1; }

static inline int osu_iters(const osu_opts_t* o, size_t s) {
    return s > o->large_size ? o->iters_large : o->iters_small;
}

static inline int osu_warmup(const osu_opts_t* o, size_t s) {
    return s > o->large_size ? o->warmup_large : o->warmup_small;
}

/* Page-aligned and touched, so first-touch page faults do not land in the timed loop. */
static inline void* osu_alloc(size_t len) {
    void* p = NULL;
    if (posix_memalign(&p, 4096, len ? len : 1) != 0) {
        fprintf(stderr, "osu: cannot allocate %zu bytes\n", len);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(p, 'a', len ? len : 1);
    return p;
}

/* Buffer slots for a window of messages of up to max bytes. Every message in flight gets its
 * own slot while that costs at most 64 MiB; beyond that slots are reused round robin (as
 * OSU reuses one buffer): several sends from one buffer are legal, several receives into
 * one only garble contents that no benchmark reads, and 4 MiB x 64 x 2 buffers x 2 ranks
 * would be 1 GiB on a shared machine. */
static inline int osu_slots(const osu_opts_t* o) {
    const size_t cap = 64u << 20;
    size_t n = o->max_size ? cap / o->max_size : (size_t)o->window;
    if (n < 1) n = 1;
    return n < (size_t)o->window ? (int)n : o->window;
}

static inline void osu_header(const char* title, const char* columns) {
    printf("# %s (Switchyard bench/osu)\n", title);
    printf("%s\n", columns);
    fflush(stdout);
}

#endif

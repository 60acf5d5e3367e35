/* Memory and bandwidth of a derived-datatype transfer: rank 0 sends one strided
 * MPI_Type_vector (blocks of `block` doubles every `stride` doubles, `size` packed bytes in
 * all) to rank 1, which receives it into the same strided layout. Both buffers are allocated
 * and touched before the measurement, so what it reports is only what the MPI library (the
 * PML and whatever it runs over) allocates to move the message: each rank's peak resident set
 * (VmHWM) increase across the transfer. A PML that packs the whole message into a temporary
 * shows about `size` per rank; a streaming one a few pipeline fragments.
 *
 * The received data is checked element by element (gaps untouched too), so a fast but wrong
 * transfer cannot pass. With -i N it then times N rounds of `window` nonblocking transfers
 * of a `-m` byte vector (default 4 MiB) and prints the bandwidth in MB/s (10^6 bytes, as
 * osu_bw).
 *
 * With -L KiB it exits with status 3 when a rank's peak RSS grew by more than that: the MPI
 * suite runs it so (mpi.dt_rss_smoke), so a PML that copies whole messages again fails.
 *
 * Usage: mpirun -np 2 swy_mpi_dt_rss [-s size] [-b block] [-t stride] [-i iters] [-m bw_size]
 *                                    [-w window] [-L max_kib]
 * Sizes take K/M/G suffixes. Plain MPI: runs over any PML (compare with --mca pml ob1).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    size_t size;       /* packed bytes of the checked transfer */
    int block, stride; /* in doubles */
    int iters;         /* bandwidth rounds (0: no bandwidth run) */
    size_t bw_size;    /* packed bytes per bandwidth message */
    int window;
    long max_growth_kib; /* -L: fail above this peak RSS increase (0: no limit) */
} opts_t;

static size_t parse_size(const char* s) {
    char* end = NULL;
    size_t v = (size_t)strtoull(s, &end, 10);
    switch (*end) {
        case 'k':
        case 'K': return v << 10;
        case 'm':
        case 'M': return v << 20;
        case 'g':
        case 'G': return v << 30;
        default: return v;
    }
}

/* Peak resident set size of this process in KiB (VmHWM), or -1 if /proc is unreadable. */
static long peak_rss_kib(void) {
    FILE* f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    if (f == NULL) return -1;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "VmHWM:", 6) == 0) {
            kib = strtol(line + 6, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kib;
}

/* Lower VmHWM to the current RSS (Linux >= 4.0: "5" to clear_refs), so the increase we
 * measure is not hidden under an earlier peak (start-up, buffer setup). Best effort. */
static void reset_peak_rss(void) {
    FILE* f = fopen("/proc/self/clear_refs", "w");
    if (f == NULL) return;
    fputs("5", f);
    fclose(f);
}

/* The value of packed element i: distinct per element and not a small integer, so a
 * misplaced or missing element shows. */
static double value_at(size_t i) { return (double)(i * 2654435761u % 1000003u) + 0.25; }

static const double kGap = -1.5; /* what the receiver's gaps hold before and after */

/* A vector of `nblocks` blocks, one element per message. */
static MPI_Datatype make_vector(size_t nblocks, const opts_t* o) {
    MPI_Datatype t;
    MPI_Type_vector((int)nblocks, o->block, o->stride, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    return t;
}

static void fill_sender(double* buf, size_t nblocks, const opts_t* o) {
    for (size_t b = 0; b < nblocks; ++b) {
        double* at = buf + b * (size_t)o->stride;
        for (int k = 0; k < o->block; ++k)
            at[k] = value_at(b * (size_t)o->block + (size_t)k);
        for (int k = o->block; k < o->stride; ++k)
            at[k] = 0.0; /* never sent */
    }
}

/* Number of wrong doubles in the receiver's buffer (data and gaps). */
static size_t count_errors(const double* buf, size_t nblocks, const opts_t* o) {
    size_t bad = 0;
    for (size_t b = 0; b < nblocks; ++b) {
        const double* at = buf + b * (size_t)o->stride;
        for (int k = 0; k < o->block; ++k)
            bad += at[k] != value_at(b * (size_t)o->block + (size_t)k);
        for (int k = o->block; k < o->stride; ++k)
            bad += at[k] != kGap;
    }
    return bad;
}

static int parse(int argc, char** argv, opts_t* o) {
    int c;
    while ((c = getopt(argc, argv, "s:b:t:i:m:w:L:h")) != -1) {
        switch (c) {
            case 's': o->size = parse_size(optarg); break;
            case 'b': o->block = atoi(optarg); break;
            case 't': o->stride = atoi(optarg); break;
            case 'i': o->iters = atoi(optarg); break;
            case 'm': o->bw_size = parse_size(optarg); break;
            case 'w': o->window = atoi(optarg); break;
            case 'L': o->max_growth_kib = atol(optarg); break;
            default: return 1;
        }
    }
    const size_t block_bytes = (size_t)o->block * sizeof(double);
    if (o->block < 1 || o->stride <= o->block || o->window < 1 || o->iters < 0 ||
        o->size < block_bytes || o->size / block_bytes > INT32_MAX || o->max_growth_kib < 0 ||
        (o->iters > 0 && (o->bw_size < block_bytes || o->bw_size / block_bytes > INT32_MAX))) {
        return 1;
    }
    return 0;
}

/* The checked transfer; rank 0 prints each rank's peak RSS increase. @return 0 if the data
 * arrived intact (and within -L), 1 if not, 3 if a rank grew more than -L allows. */
static int rss_run(int rank, const opts_t* o) {
    const size_t nblocks = o->size / ((size_t)o->block * sizeof(double));
    const size_t packed = nblocks * (size_t)o->block * sizeof(double);
    const size_t span = nblocks * (size_t)o->stride;
    double* buf = (double*)malloc(span * sizeof(double));
    if (buf == NULL) {
        fprintf(stderr, "rank %d: cannot allocate %zu bytes\n", rank, span * sizeof(double));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank == 0) {
        fill_sender(buf, nblocks, o);
    } else {
        for (size_t i = 0; i < span; ++i)
            buf[i] = kGap;
    }
    MPI_Datatype vec = make_vector(nblocks, o);
    /* Warm up the connection with a small message of the same type, so the measurement
     * sees the transfer and not connection setup. */
    MPI_Datatype small = make_vector(nblocks < 16 ? nblocks : 16, o);
    if (rank == 0) {
        MPI_Send(buf, 1, small, 1, 1, MPI_COMM_WORLD);
    } else {
        MPI_Recv(buf, 1, small, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Type_free(&small);

    MPI_Barrier(MPI_COMM_WORLD);
    reset_peak_rss();
    const long before = peak_rss_kib();
    const double t0 = MPI_Wtime();
    if (rank == 0) {
        MPI_Send(buf, 1, vec, 1, 2, MPI_COMM_WORLD);
    } else {
        MPI_Status st;
        int n = 0;
        MPI_Recv(buf, 1, vec, 0, 2, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, vec, &n);
        if (n != 1) {
            fprintf(stderr, "rank 1: MPI_Get_count says %d vectors, want 1\n", n);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    const double secs = MPI_Wtime() - t0;
    const long after = peak_rss_kib();
    long bad = rank == 1 ? (long)count_errors(buf, nblocks, o) : 0;

    long growth[2] = {after - before, 0};
    long all[4] = {0, 0, 0, 0};
    growth[1] = bad;
    MPI_Gather(growth, 2, MPI_LONG, all, 2, MPI_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("# %zu packed bytes (%zu blocks of %d doubles every %d), %zu-byte buffers\n", packed,
               nblocks, o->block, o->stride, span * sizeof(double));
        printf("transfer_s %.3f (%.1f MB/s)\n", secs, (double)packed / secs / 1e6);
        printf("peak_rss_increase_kib rank0 %ld rank1 %ld\n", all[0], all[2]);
        printf("data %s (%ld wrong doubles)\n", all[3] == 0 ? "ok" : "CORRUPT", all[3]);
        fflush(stdout);
    }
    MPI_Type_free(&vec);
    free(buf);
    int rc = all[3] == 0 ? 0 : 1;
    if (rank == 0 && rc == 0 && o->max_growth_kib > 0 &&
        (all[0] > o->max_growth_kib || all[2] > o->max_growth_kib)) {
        printf("peak RSS grew by more than the %ld KiB allowed (-L)\n", o->max_growth_kib);
        rc = 3;
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return rc;
}

/* Bandwidth of `window` vectors in flight, then an acknowledgement, `iters` times (after
 * iters / 10 + 1 untimed rounds). */
static void bw_run(int rank, const opts_t* o) {
    const size_t nblocks = o->bw_size / ((size_t)o->block * sizeof(double));
    const size_t packed = nblocks * (size_t)o->block * sizeof(double);
    const size_t span = nblocks * (size_t)o->stride;
    double* buf = (double*)malloc(span * sizeof(double) * (size_t)o->window);
    MPI_Request* rq = (MPI_Request*)malloc(sizeof(MPI_Request) * (size_t)o->window);
    if (buf == NULL || rq == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
    for (size_t w = 0; w < (size_t)o->window; ++w)
        fill_sender(buf + w * span, nblocks, o);
    MPI_Datatype vec = make_vector(nblocks, o);
    const int warm = o->iters / 10 + 1;
    double t0 = 0;
    int ack = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < warm + o->iters; ++i) {
        if (i == warm) t0 = MPI_Wtime();
        for (int w = 0; w < o->window; ++w) {
            double* at = buf + (size_t)w * span;
            if (rank == 0) {
                MPI_Isend(at, 1, vec, 1, 3, MPI_COMM_WORLD, &rq[w]);
            } else {
                MPI_Irecv(at, 1, vec, 0, 3, MPI_COMM_WORLD, &rq[w]);
            }
        }
        MPI_Waitall(o->window, rq, MPI_STATUSES_IGNORE);
        if (rank == 0) {
            MPI_Recv(&ack, 1, MPI_INT, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Send(&ack, 1, MPI_INT, 0, 4, MPI_COMM_WORLD);
        }
    }
    const double secs = MPI_Wtime() - t0;
    if (rank == 0) {
        printf("bandwidth_mb_s %zu %.1f\n", packed,
               (double)packed * o->window * o->iters / secs / 1e6);
        fflush(stdout);
    }
    MPI_Type_free(&vec);
    free(rq);
    free(buf);
}

int main(int argc, char** argv) {
    int rank, np;
    opts_t o = {1ull << 30, 4, 5, 0, 4u << 20, 8, 0};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np != 2 || parse(argc, argv, &o) != 0) {
        if (rank == 0) {
            fprintf(stderr,
                    "usage: mpirun -np 2 %s [-s size] [-b block] [-t stride] [-i iters] "
                    "[-m bw_size] [-w window] [-L max_kib]\n"
                    "  -s  packed bytes of the checked transfer (default 1G; K/M/G suffixes)\n"
                    "  -b  doubles per block (default 4); -t  doubles from block to block "
                    "(default 5, > block)\n"
                    "  -i  bandwidth rounds after the check (default 0: none); -m  packed "
                    "bytes per bandwidth message (default 4M); -w  messages per round (8)\n"
                    "  -L  exit 3 if a rank's peak RSS grows by more than this many KiB\n",
                    argv[0]);
        }
        MPI_Finalize();
        return 1;
    }
    int rc = rss_run(rank, &o);
    if (rc == 0 && o.iters > 0) bw_run(rank, &o);
    MPI_Finalize();
    return rc;
}

/* All-to-all latency: every rank calls MPI_Alltoall with `size` bytes per peer, `iters`
 * times after `warmup` untimed calls, and times each call on its own. Prints, per size, the
 * median, the mean and the minimum time of one call (µs), each the largest over the ranks (the
 * collective ends when its slowest rank does). With as many ranks as cores or more, the
 * median is the figure to read: one descheduled rank makes single calls slow, and the mean
 * hides how often. Two more columns say what a call cost the host, summed over the ranks:
 * the CPU time (user and system, µs) and the context switches per call. With more ranks than
 * cores the cores are always busy, so a call takes at least that CPU time over the cores,
 * and the CPU time moves far less with other load on the host than the clock does.
 * bench/compare-alltoall.sh runs it over pml swy, ob1 and ucx.
 *
 *   swy_osu_alltoall [-m [min:]max] [-i iters] [-I iters_large] [-x warmup] [-X warmup_large]
 *                    [-S size,size,...]
 *
 * -S replaces the power-of-two sweep by a list of sizes (K/M suffixes). */
#include <sys/resource.h>

#include "osu_common.h"

enum { kMaxSizes = 32 };

typedef struct {
    size_t sizes[kMaxSizes];
    int count;
} size_list_t;

static int parse_sizes(int c, const char* arg, void* ctx) {
    size_list_t* l = (size_list_t*)ctx;
    (void)c;
    l->count = 0;
    while (*arg != '\0') {
        char* end = NULL;
        if (l->count == kMaxSizes) return 1;
        l->sizes[l->count++] = osu_parse_size(arg, &end);
        if (end == arg || (*end != ',' && *end != '\0')) return 1;
        arg = *end == ',' ? end + 1 : end;
    }
    return l->count > 0 ? 0 : 1;
}

static void sizes_usage(void* ctx) {
    (void)ctx;
    fprintf(stderr, "  -S  comma-separated sizes instead of the sweep (e.g. 8,64K)\n");
}

static int by_value(const void* a, const void* b) {
    const double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

/* CPU time (user and system, µs) and context switches of this process so far. */
static void usage_now(double* cpu_us, double* switches) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    *cpu_us = (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 +
              (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
    *switches = (double)(u.ru_nvcsw + u.ru_nivcsw);
}

/* One size: warm-up, then `iters` timed calls; rank 0 prints the row. */
static void run_size(size_t s, int iters, int warm, char* sbuf, char* rbuf, double* t) {
    for (int i = 0; i < warm; ++i)
        MPI_Alltoall(sbuf, (int)s, MPI_CHAR, rbuf, (int)s, MPI_CHAR, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double sum = 0, cpu0, cpu1, sw0, sw1;
    usage_now(&cpu0, &sw0);
    for (int i = 0; i < iters; ++i) {
        const double t0 = MPI_Wtime();
        MPI_Alltoall(sbuf, (int)s, MPI_CHAR, rbuf, (int)s, MPI_CHAR, MPI_COMM_WORLD);
        t[i] = (MPI_Wtime() - t0) * 1e6;
        sum += t[i];
    }
    usage_now(&cpu1, &sw1);
    qsort(t, (size_t)iters, sizeof(double), by_value);
    double mine[3] = {t[iters / 2], sum / iters, t[0]}, worst[3];
    MPI_Reduce(mine, worst, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    double cost[2] = {(cpu1 - cpu0) / iters, (sw1 - sw0) / iters}, total[2];
    MPI_Reduce(cost, total, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        printf("%-10zu%14.2f%14.2f%14.2f%14.1f%12.1f\n", s, worst[0], worst[1], worst[2], total[0],
               total[1]);
        fflush(stdout);
    }
}

int main(int argc, char** argv) {
    int rank, np;
    osu_opts_t o = {8, 64u << 10, 100, 20, 10, 3, 8192, 1};
    size_list_t list = {{0}, 0};
    const osu_extra_opts_t extra = {"S:", parse_sizes, sizes_usage, &list};
    if (osu_start_with(&argc, &argv, &o, OSU_EVEN_RANKS, &extra, &rank, &np) != 0) return 1;
    if (list.count == 0) {
        for (size_t s = o.min_size ? o.min_size : 1; s <= o.max_size && list.count < kMaxSizes;
             s = osu_next_size(s))
            list.sizes[list.count++] = s;
    }
    size_t largest = 1;
    for (int i = 0; i < list.count; ++i)
        if (list.sizes[i] > largest) largest = list.sizes[i];
    char* sbuf = (char*)osu_alloc(largest * (size_t)np);
    char* rbuf = (char*)osu_alloc(largest * (size_t)np);
    const int most = o.iters_small > o.iters_large ? o.iters_small : o.iters_large;
    double* t = (double*)malloc((size_t)most * sizeof(double));
    if (rank == 0) {
        printf("# MPI All-to-All Latency Test (Switchyard bench/osu)\n");
        printf(
            "# [ ranks: %d ] times: the largest over the ranks; CPU and switches per call: "
            "the sum over the ranks\n",
            np);
        printf("# Size         Median(us)      Avg(us)      Min(us)    CPU(us)  Switches\n");
        fflush(stdout);
    }
    for (int i = 0; i < list.count; ++i) {
        const size_t s = list.sizes[i];
        run_size(s, osu_iters(&o, s), osu_warmup(&o, s), sbuf, rbuf, t);
    }
    free(t);
    free(rbuf);
    free(sbuf);
    MPI_Finalize();
    return 0;
}

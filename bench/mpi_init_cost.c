/* MPI_Init time and per-peer cost of a PML (issue #18): run with pml swy and with ob1.
 *
 *   mpirun -np 16 [--mca pml swy|ob1 ...] swy_mpi_init_cost
 *
 * Prints, from rank 0: the slowest rank's MPI_Init time, and rank 0's descriptors and
 * mappings after MPI_Init and after an MPI_Alltoall (which touches every peer), so the
 * per-peer cost shows as the difference divided by the number of peers. bench/mpi-init.sh
 * runs both PMLs interleaved, best of N. */
#include <dirent.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int count_fds(void) {
    int n = -3; /* ".", ".." and the listing's own descriptor */
    DIR* d = opendir("/proc/self/fd");
    if (d == NULL) return -1;
    while (readdir(d) != NULL)
        ++n;
    closedir(d);
    return n;
}

static int count_maps(long* rss_kib) {
    int n = 0;
    char line[512];
    FILE* f = fopen("/proc/self/maps", "r");
    if (f == NULL) return -1;
    while (fgets(line, sizeof(line), f) != NULL)
        ++n;
    fclose(f);
    *rss_kib = 0;
    f = fopen("/proc/self/status", "r");
    if (f != NULL) {
        while (fgets(line, sizeof(line), f) != NULL)
            if (sscanf(line, "VmRSS: %ld", rss_kib) == 1) break;
        fclose(f);
    }
    return n;
}

int main(int argc, char** argv) {
    const double t0 = now();
    MPI_Init(&argc, &argv);
    const double init_s = now() - t0;
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double slowest = 0;
    MPI_Reduce(&init_s, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    long rss_init = 0, rss_all = 0;
    const int fds_init = count_fds();
    const int maps_init = count_maps(&rss_init);
    int* out = calloc((size_t)size, sizeof(int));
    int* in = calloc((size_t)size, sizeof(int));
    for (int i = 0; i < size; ++i)
        out[i] = rank * size + i;
    MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; ++i)
        if (in[i] != i * size + rank) {
            fprintf(stderr, "rank %d: alltoall gave %d from %d\n", rank, in[i], i);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    const int fds_all = count_fds();
    const int maps_all = count_maps(&rss_all);
    if (rank == 0)
        printf(
            "np %d  MPI_Init %.1f ms (slowest rank)  rank 0 after init: %d fds %d maps %ld KiB; "
            "after alltoall: %d fds %d maps %ld KiB\n",
            size, 1e3 * slowest, fds_init, maps_init, rss_init, fds_all, maps_all, rss_all);
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}

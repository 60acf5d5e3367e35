/*
 * OSU-style ping-pong latency (half round trip) for a few sizes. Not a test: prints numbers.
 * Usage: latency [iterations [max_size]]   (-np 2)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int iters = argc > 1 ? atoi(argv[1]) : 20000;
    long max_size = argc > 2 ? atol(argv[2]) : 1 << 20;
    size_t sizes[] = {0, 8, 64, 1024, 8192, 65536, 1 << 20};
    char* buf = calloc(1, 1 << 20);
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); ++k) {
        int n = (int)sizes[k];
        if (n > max_size) break;
        int it = n >= 65536 ? iters / 20 : iters, warm = it / 10;
        double t0 = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < it + warm; ++i) {
            if (i == warm) t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(buf, n, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, n, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(buf, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            }
        }
        double us = (MPI_Wtime() - t0) * 1e6 / (2.0 * it);
        if (rank == 0) printf("%8d B  %9.2f us\n", n, us);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}

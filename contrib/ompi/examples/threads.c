/*
 * MPI_THREAD_MULTIPLE over pml swy: 4 threads per rank ping-pong concurrently on their own
 * tags (one blocking, one nonblocking pattern), payload checked. Run with -np 2.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { THREADS = 4, ITERS = 2000 };
static int rank, errors[THREADS];

static void* worker(void* arg) {
    int t = (int)(long)arg, peer = 1 - rank;
    int n = 1 + t * 3000; /* thread 3 sends 36 KB messages */
    int* buf = malloc(n * sizeof(int));
    for (int it = 0; it < ITERS; ++it) {
        if (rank == 0) {
            for (int i = 0; i < n; ++i)
                buf[i] = it * 31 + i + t;
            if (t % 2) {
                MPI_Send(buf, n, MPI_INT, peer, t, MPI_COMM_WORLD);
                MPI_Recv(buf, n, MPI_INT, peer, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Request r[2];
                int* in = malloc(n * sizeof(int));
                MPI_Irecv(in, n, MPI_INT, peer, t, MPI_COMM_WORLD, &r[0]);
                MPI_Isend(buf, n, MPI_INT, peer, t, MPI_COMM_WORLD, &r[1]);
                MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
                memcpy(buf, in, n * sizeof(int));
                free(in);
            }
            for (int i = 0; i < n; ++i)
                if (buf[i] != it * 31 + i + t + 1) {
                    errors[t]++;
                    break;
                }
        } else {
            MPI_Recv(buf, n, MPI_INT, peer, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int i = 0; i < n; ++i)
                buf[i] += 1;
            MPI_Send(buf, n, MPI_INT, peer, t, MPI_COMM_WORLD);
        }
    }
    free(buf);
    return NULL;
}

int main(int argc, char** argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (provided != MPI_THREAD_MULTIPLE) {
        if (rank == 0) printf("threads: MPI_THREAD_MULTIPLE not provided (%d): FAIL\n", provided);
        MPI_Finalize();
        return 1;
    }
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; ++t)
        pthread_create(&th[t], NULL, worker, (void*)t);
    int mine = 0, all = 0;
    for (int t = 0; t < THREADS; ++t) {
        pthread_join(th[t], NULL);
        mine += errors[t];
    }
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("threads: %d threads x %d round trips: %s\n", THREADS, ITERS, all ? "FAIL" : "PASS");
    MPI_Finalize();
    return all ? 1 : 0;
}

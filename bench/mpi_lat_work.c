/* The work of one osu_latency iteration without the wait: what bench/callgrind-mpi.sh counts.
 *
 *   mpiexec -n 2 [--mca pml ...] swy_mpi_lat_work [-i iters] [-s bytes]
 *
 * Rank 0 and rank 1 ping-pong a message of -s bytes (default 8) with blocking MPI_Send and
 * MPI_Recv, as osu_latency does, -i times (default 1000). Rank 1 raises a counter in a page
 * both ranks map (a file in /dev/shm, outside MPI) once its MPI_Send has returned, and rank 0
 * waits for that counter, outside MPI, between its MPI_Send and its MPI_Recv: the reply is
 * then in the transport when rank 0 starts to receive, so its MPI_Recv finds it on its first
 * progress pass instead of spinning a number of empty passes that depends on the clock (and
 * on a loaded machine's scheduler). Under callgrind with collection toggled on MPI_Send and
 * MPI_Recv, rank 0's instruction count is the same from run to run: the per-message
 * software cost of a PML, send plus receive. The receive is still posted before progress
 * finds the message, as in osu_latency: the same expected-receive path. (An eager send's
 * data is in the shared-memory queue when MPI_Send returns, for pml swy, ob1 + vader and
 * UCX sm alike.) Each round's payload is checked on both ranks. */
#include <fcntl.h>
#include <mpi.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void fail(const char* what) {
    fprintf(stderr, "swy_mpi_lat_work: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The counter rank 1 raises after each MPI_Send, in a /dev/shm page rank 0 names. */
static _Atomic int* map_reply_counter(int rank) {
    char path[64] = "";
    if (rank == 0) snprintf(path, sizeof(path), "/dev/shm/swy_mpi_lat_work.%d", (int)getpid());
    MPI_Bcast(path, (int)sizeof(path), MPI_CHAR, 0, MPI_COMM_WORLD);
    int fd = open(path, O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ftruncate(fd, 4096) != 0) fail("cannot create the counter page in /dev/shm");
    void* p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) fail("cannot map the counter page");
    MPI_Barrier(MPI_COMM_WORLD); /* both mapped it: the name can go */
    if (rank == 0) unlink(path);
    return (_Atomic int*)p;
}

int main(int argc, char** argv) {
    int iters = 1000, size = 8, opt, rank, np;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    while ((opt = getopt(argc, argv, "i:s:")) != -1) {
        switch (opt) {
            case 'i': iters = atoi(optarg); break;
            case 's': size = atoi(optarg); break;
            default: fail("usage: [-i iters] [-s bytes]");
        }
    }
    if (np != 2) fail("needs exactly 2 ranks");
    if (iters < 1 || size < 1) fail("-i and -s must be positive");
    _Atomic int* replied = map_reply_counter(rank);
    unsigned char* sbuf = malloc((size_t)size);
    unsigned char* rbuf = malloc((size_t)size);
    if (sbuf == NULL || rbuf == NULL) fail("out of memory");
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iters; ++i) {
        /* The payload of round i from rank r: bytes (i + r + k) mod 256. */
        for (int k = 0; k < size; ++k)
            sbuf[k] = (unsigned char)(i + rank + k);
        const int peer = 1 - rank;
        if (rank == 0) {
            MPI_Send(sbuf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            while (atomic_load_explicit(replied, memory_order_acquire) <= i)
                sched_yield();
            MPI_Recv(rbuf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            atomic_store_explicit(replied, i + 1, memory_order_release);
        }
        for (int k = 0; k < size; ++k)
            if (rbuf[k] != (unsigned char)(i + peer + k)) fail("payload differs");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("swy_mpi_lat_work: %d iterations of %d bytes, payloads checked\n", iters, size);
    munmap((void*)replied, 4096);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}

/* MPI_THREAD_MULTIPLE: several threads of each rank exchange messages with the peer at the
 * same time (pml swy then runs its worker in multi-thread mode). Each thread uses its own
 * tag on a shared communicator and also its own duplicate, so matching across threads is
 * exercised both ways; sizes cover eager and rendezvous; every payload is checked. */
#include "mpitest.h"

#include <pthread.h>

enum { kThreads = 4, kRounds = 40 };
static const size_t kSizes[] = {0, 8, 4065, 30000, 400000};
enum { kNumSizes = sizeof kSizes / sizeof kSizes[0] };

typedef struct {
    int id, me, peer;
    MPI_Comm own;
} thread_arg_t;

static void* worker(void* p) {
    const thread_arg_t* a = (const thread_arg_t*)p;
    uint8_t* sbuf = (uint8_t*)mt_malloc(kSizes[kNumSizes - 1]);
    uint8_t* rbuf = (uint8_t*)mt_malloc(kSizes[kNumSizes - 1]);
    for (int round = 0; round < kRounds; ++round) {
        const size_t n = kSizes[(round + a->id) % kNumSizes];
        const MPI_Comm comm = round % 2 ? a->own : MPI_COMM_WORLD;
        const uint32_t seed = (uint32_t)(a->me * 100000 + a->id * 1000 + round);
        const uint32_t peer_seed = (uint32_t)(a->peer * 100000 + a->id * 1000 + round);
        MPI_Request rq[2];
        MPI_Status st[2];
        int count;
        mt_fill(sbuf, n, seed);
        MT_MPI(MPI_Irecv(rbuf, (int)n, MPI_BYTE, a->peer, a->id, comm, &rq[0]));
        MT_MPI(MPI_Isend(sbuf, (int)n, MPI_BYTE, a->peer, a->id, comm, &rq[1]));
        MT_MPI(MPI_Waitall(2, rq, st));
        MT_MPI(MPI_Get_count(&st[0], MPI_BYTE, &count));
        MT_CHECK(count == (int)n && st[0].MPI_TAG == a->id, "thread %d round %d: count %d tag %d",
                 a->id, round, count, st[0].MPI_TAG);
        MT_EXPECT_PATTERN(rbuf, n, peer_seed, "threaded exchange");
    }
    free(sbuf);
    free(rbuf);
    return NULL;
}

int main(int argc, char** argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MT_CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE not provided (got %d)",
             provided);
    MT_CHECK(mt_size() == 2, "run with exactly 2 ranks");
    const int me = mt_rank();
    pthread_t t[kThreads];
    thread_arg_t args[kThreads];
    for (int i = 0; i < kThreads; ++i) {
        args[i] = (thread_arg_t){i, me, 1 - me, MPI_COMM_NULL};
        MT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &args[i].own)); /* collective: from the main thread */
    }
    for (int i = 0; i < kThreads; ++i)
        MT_CHECK(pthread_create(&t[i], NULL, worker, &args[i]) == 0, "pthread_create");
    for (int i = 0; i < kThreads; ++i)
        pthread_join(t[i], NULL);
    for (int i = 0; i < kThreads; ++i)
        MT_MPI(MPI_Comm_free(&args[i].own));
    mt_pass("threads");
    MPI_Finalize();
    return 0;
}

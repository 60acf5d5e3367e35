/* MPI_Compare_and_swap latency: rank 0 compares and swaps one 8-byte integer (MPI_LONG_LONG)
 * in rank 1's window and completes it as -s says (default: flush, as OSU's osu_cas_latency);
 * the figure is microseconds per compare_and_swap. One size: 8 bytes. */
#include "osu_rma.h"

typedef struct {
    long long swap, compare, result;
} cas_ctx_t;

static void cas(void* ctx, const osu_win_t* w, int target, size_t offset, size_t size) {
    cas_ctx_t* c = (cas_ctx_t*)ctx;
    (void)size;
    MPI_Compare_and_swap(&c->swap, &c->compare, &c->result, MPI_LONG_LONG, target,
                         w->peer_disp + (MPI_Aint)offset, w->win);
}

int main(int argc, char** argv) {
    int rank;
    osu_opts_t o = {8, 8, 10000, 1000, 100, 10, 8192, 1};
    osu_rma_opts_t r = {OSU_WIN_ALLOCATE, OSU_SYNC_FLUSH, OSU_SYNC_ALL, 0, OSU_TYPE_LONG_LONG, 2};
    if (osu_rma_start(&argc, &argv, &o, &r, &rank) != 0) return 1;
    cas_ctx_t c = {1, 0, 0};
    osu_win_t w;
    osu_win_open(&w, r.win, sizeof(long long), rank);
    if (rank == 0)
        osu_rma_header("MPI_Compare_and_swap Latency Test", &r, "MPI_LONG_LONG",
                       "# Size          Latency (us)");
    osu_rma_row(&r, rank, sizeof(long long),
                osu_rma_latency_us(&r, &w, rank, sizeof(long long), osu_warmup(&o, 8),
                                   osu_iters(&o, 8), cas, &c));
    osu_win_close(&w);
    MPI_Finalize();
    return 0;
}

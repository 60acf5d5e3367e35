/* MPI_Accumulate latency: rank 0 adds (MPI_SUM) `size` bytes of -T elements (default char,
 * as OSU's osu_acc_latency) into rank 1's window and completes it as -s says (default:
 * flush); the figure is microseconds per accumulate. Sizes below one element are skipped. */
#include "osu_rma.h"

typedef struct {
    char* buf;
    MPI_Datatype type;
    size_t type_size;
} acc_ctx_t;

static void acc(void* ctx, const osu_win_t* w, int target, size_t offset, size_t size) {
    const acc_ctx_t* a = (const acc_ctx_t*)ctx;
    const int count = (int)(size / a->type_size);
    MPI_Accumulate(a->buf + offset, count, a->type, target, w->peer_disp + (MPI_Aint)offset, count,
                   a->type, MPI_SUM, w->win);
}

int main(int argc, char** argv) {
    int rank, type_size;
    osu_opts_t o = {1, 4u << 20, 10000, 1000, 100, 10, 8192, 1};
    osu_rma_opts_t r = {OSU_WIN_ALLOCATE, OSU_SYNC_FLUSH, OSU_SYNC_ALL, 1, OSU_TYPE_CHAR, 2};
    if (osu_rma_start(&argc, &argv, &o, &r, &rank) != 0) return 1;
    const MPI_Datatype types[] = {MPI_CHAR, MPI_INT, MPI_LONG_LONG, MPI_DOUBLE};
    acc_ctx_t a = {(char*)osu_alloc(o.max_size), types[r.type], 0};
    MPI_Type_size(a.type, &type_size);
    a.type_size = (size_t)type_size;
    memset(a.buf, 0, o.max_size); /* adding zeros keeps doubles finite */
    osu_win_t w;
    osu_win_open(&w, r.win, o.max_size, rank);
    if (rank == 0)
        osu_rma_header("MPI_Accumulate Latency Test", &r, osu_type_calls[r.type],
                       "# Size          Latency (us)");

    for (size_t s = o.min_size; s <= o.max_size; s = osu_next_size(s)) {
        if (s < a.type_size) continue;
        osu_rma_row(
            &r, rank, s,
            osu_rma_latency_us(&r, &w, rank, s, osu_warmup(&o, s), osu_iters(&o, s), acc, &a));
    }
    osu_win_close(&w);
    free(a.buf);
    MPI_Finalize();
    return 0;
}

/* Flush semantics, with nothing but a message to say "done": in one lock_all epoch that stays
 * open throughout, each rank writes to its right neighbour, flushes, and sends it a message;
 * the neighbour, on receiving it, must already see every byte (after MPI_Win_sync, by plain
 * loads in the unified model, else by a get from itself). Variants:
 *   put + flush, put + flush_all, rput + wait + flush, accumulate + flush_all,
 *   put + flush_local, then the source overwritten, then flush: the target sees the values
 *   from before the overwrite (flush_local means the source was no longer needed);
 * and the other way round: the target stores into its own window, MPI_Win_sync, sends a
 * message, and the origin's get + flush must return the new values.
 * At 8 bytes and 128 KiB (a rendezvous-sized transfer), in every window flavour.
 */
#include "rmatest.h"

enum {
    V_PUT_FLUSH,
    V_PUT_FLUSH_ALL,
    V_RPUT,
    V_ACC_FLUSH_ALL,
    V_FLUSH_LOCAL,
    V_REVERSE,
    kNVariants
};
static const char* const kVariantNames[kNVariants] = {"put+flush",
                                                      "put+flush_all",
                                                      "rput+wait+flush",
                                                      "accumulate+flush_all",
                                                      "put+flush_local+overwrite+flush",
                                                      "local store+sync, remote get+flush"};

static const size_t kSizes[] = {1, 16384};
enum { kRegion = 16384, kNRegions = kNVariants * 2 };

static long before(size_t i, int r) { return rt_value(i, 10u + (unsigned)r); }
static long written(size_t i, int r, int v) {
    return rt_value(i, 100u + 10u * (unsigned)v + (unsigned)r);
}

/* What region (variant v, size s) of rank r must hold once the write has happened. */
static long expected(int v, size_t i, int writer, int owner) {
    if (v == V_ACC_FLUSH_ALL) return before(i, owner) + written(i, writer, v);
    return written(i, writer, v);
}

static void check_region(const rt_win* w, long* tmp, int v, size_t s, size_t n, int writer) {
    const int me = mt_rank();
    const size_t at = (size_t)(v * 2 + (int)s) * kRegion;
    const long* mem = (const long*)w->base + at;
    if (!w->unified) { /* the public copy, through the window itself */
        MT_MPI(MPI_Get(tmp, (int)n, MPI_LONG, me, rt_disp(w, me, at * sizeof(long)), (int)n,
                       MPI_LONG, w->win));
        MT_MPI(MPI_Win_flush(me, w->win));
        mem = tmp;
    }
    for (size_t i = 0; i < n; ++i)
        MT_CHECK(mem[i] == expected(v, i, writer, me),
                 "%s window, %s, %zu longs: element %zu is %ld after the message, want %ld",
                 rt_flavour_names[w->flavour], kVariantNames[v], n, i, mem[i],
                 expected(v, i, writer, me));
}

static void run(rt_flavour f, int me, int np) {
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    rt_win w;
    rt_win_open(&w, f, kNRegions * (size_t)kRegion * sizeof(long), sizeof(long), MPI_INFO_NULL,
                MPI_COMM_WORLD);
    long* mine = (long*)w.base;
    rt_local_begin(&w);
    for (size_t r = 0; r < kNRegions; ++r)
        for (size_t i = 0; i < kRegion; ++i)
            mine[r * kRegion + i] = before(i, me);
    rt_local_end(&w);
    long* src = (long*)mt_malloc(kRegion * sizeof(long));
    long* tmp = (long*)mt_malloc(kRegion * sizeof(long));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MT_MPI(MPI_Win_lock_all(0, w.win));
    for (int v = 0; v < kNVariants; ++v)
        for (size_t s = 0; s < 2; ++s) {
            const size_t n = kSizes[s], at = (size_t)(v * 2 + (int)s) * kRegion;
            const MPI_Aint d = rt_disp(&w, right, at * sizeof(long));
            const int tag = v * 2 + (int)s;
            int token = tag;
            if (v == V_REVERSE) {
                /* This rank stores into its own window for its left neighbour to read. */
                for (size_t i = 0; i < n; ++i)
                    mine[at + i] = written(i, me, v);
                MT_MPI(MPI_Win_sync(w.win));
                MT_MPI(MPI_Sendrecv_replace(&token, 1, MPI_INT, left, tag, right, tag,
                                            MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                MT_MPI(MPI_Get(tmp, (int)n, MPI_LONG, right, d, (int)n, MPI_LONG, w.win));
                MT_MPI(MPI_Win_flush(right, w.win));
                for (size_t i = 0; i < n; ++i)
                    MT_CHECK(tmp[i] == written(i, right, v),
                             "%s window, %s, %zu longs: element %zu is %ld, want %ld",
                             rt_flavour_names[f], kVariantNames[v], n, i, tmp[i],
                             written(i, right, v));
                continue;
            }
            for (size_t i = 0; i < n; ++i)
                src[i] = written(i, me, v);
            switch (v) {
                case V_PUT_FLUSH:
                    MT_MPI(MPI_Put(src, (int)n, MPI_LONG, right, d, (int)n, MPI_LONG, w.win));
                    MT_MPI(MPI_Win_flush(right, w.win));
                    break;
                case V_PUT_FLUSH_ALL:
                    MT_MPI(MPI_Put(src, (int)n, MPI_LONG, right, d, (int)n, MPI_LONG, w.win));
                    MT_MPI(MPI_Win_flush_all(w.win));
                    break;
                case V_RPUT: {
                    MPI_Request rq;
                    MT_MPI(MPI_Rput(src, (int)n, MPI_LONG, right, d, (int)n, MPI_LONG, w.win, &rq));
                    MT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
                    MT_MPI(MPI_Win_flush(right, w.win));
                    break;
                }
                case V_ACC_FLUSH_ALL:
                    MT_MPI(MPI_Accumulate(src, (int)n, MPI_LONG, right, d, (int)n, MPI_LONG,
                                          MPI_SUM, w.win));
                    MT_MPI(MPI_Win_flush_all(w.win));
                    break;
                default:
                    MT_MPI(MPI_Put(src, (int)n, MPI_LONG, right, d, (int)n, MPI_LONG, w.win));
                    MT_MPI(MPI_Win_flush_local(right, w.win));
                    for (size_t i = 0; i < n; ++i)
                        src[i] = -1; /* must not reach the target */
                    MT_MPI(MPI_Win_flush(right, w.win));
                    break;
            }
            MT_MPI(MPI_Sendrecv_replace(&token, 1, MPI_INT, right, tag, left, tag, MPI_COMM_WORLD,
                                        MPI_STATUS_IGNORE));
            MT_MPI(MPI_Win_sync(w.win));
            check_region(&w, tmp, v, s, n, left);
        }
    MT_MPI(MPI_Win_unlock_all(w.win));
    free(src);
    free(tmp);
    rt_win_close(&w);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    const int me = mt_rank(), np = mt_size();
    for (int f = 0; f < RT_NFLAVOURS; ++f)
        run((rt_flavour)f, me, np);
    mt_pass("rma_flush");
    MPI_Finalize();
    return 0;
}

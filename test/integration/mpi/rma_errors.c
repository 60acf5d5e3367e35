/* Out-of-window access under MPI_ERRORS_RETURN: every kind of operation, straddling the end
 * of the target's window, wholly past it, far past it and before it (a negative
 * displacement), and for dynamic windows at an address no region covers, must return an
 * error of class MPI_ERR_RMA_RANGE (MPI_ERR_DISP is accepted too, MPI's class for a bad
 * displacement), and must write nothing: the target's window, the guard memory around it
 * (create and dynamic, whose memory the program allocates) and, in a shared window, the next
 * rank's segment all keep their contents. Afterwards the epoch closes normally and a valid
 * operation still works. A target rank that does not exist gives MPI_ERR_RANK.
 *
 * argv: the flavours to run (default all four). Open MPI's own components do not all check
 * ranges (pt2pt and ucx write out of bounds), so CMake registers this program only for the
 * components that do, with the flavours where they do.
 */
#include "rmatest.h"

enum { kLongs = 64 };

typedef struct {
    const char* what;
    long first; /* element displacement of the access */
    int count;
} access;

static const access kAccesses[] = {
    {"straddling the end", kLongs - 4, 8},
    {"just past the end", kLongs, 1},
    {"far past the end", 100000, 2},
    {"before the start", -1, 1},
};
enum { kNAccesses = sizeof kAccesses / sizeof kAccesses[0] };

static const char* const kOps[] = {
    "put",  "get",  "accumulate",  "get_accumulate", "fetch_and_op", "compare_and_swap",
    "rput", "rget", "raccumulate", "rget_accumulate"};
enum { kNOps = sizeof kOps / sizeof kOps[0] };

static int issue(int op, MPI_Win win, int target, MPI_Aint d, int count, long* buf, long* res) {
    MPI_Request rq = MPI_REQUEST_NULL;
    int rc;
    switch (op) {
        case 0: return MPI_Put(buf, count, MPI_LONG, target, d, count, MPI_LONG, win);
        case 1: return MPI_Get(res, count, MPI_LONG, target, d, count, MPI_LONG, win);
        case 2:
            return MPI_Accumulate(buf, count, MPI_LONG, target, d, count, MPI_LONG, MPI_SUM, win);
        case 3:
            return MPI_Get_accumulate(buf, count, MPI_LONG, res, count, MPI_LONG, target, d, count,
                                      MPI_LONG, MPI_SUM, win);
        case 4: return MPI_Fetch_and_op(buf, res, MPI_LONG, target, d, MPI_SUM, win);
        case 5: return MPI_Compare_and_swap(buf, buf + 1, res, MPI_LONG, target, d, win);
        case 6: rc = MPI_Rput(buf, count, MPI_LONG, target, d, count, MPI_LONG, win, &rq); break;
        case 7: rc = MPI_Rget(res, count, MPI_LONG, target, d, count, MPI_LONG, win, &rq); break;
        case 8:
            rc = MPI_Raccumulate(buf, count, MPI_LONG, target, d, count, MPI_LONG, MPI_SUM, win,
                                 &rq);
            break;
        default:
            rc = MPI_Rget_accumulate(buf, count, MPI_LONG, res, count, MPI_LONG, target, d, count,
                                     MPI_LONG, MPI_SUM, win, &rq);
            break;
    }
    /* A failed call leaves the request undefined; a successful one may report the error
     * when it completes. */
    if (rc == MPI_SUCCESS && rq != MPI_REQUEST_NULL) rc = MPI_Wait(&rq, MPI_STATUS_IGNORE);
    return rc;
}

static void run(rt_flavour f, int me, int np) {
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    rt_win w;
    rt_win_open(&w, f, kLongs * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD);
    MT_MPI(MPI_Win_set_errhandler(w.win, MPI_ERRORS_RETURN));
    long* mine = (long*)w.base;
    rt_local_begin(&w);
    for (size_t i = 0; i < kLongs; ++i)
        mine[i] = rt_value(i, 40u + (unsigned)me);
    rt_local_end(&w);
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    long buf[16], res[16];
    for (int i = 0; i < 16; ++i)
        buf[i] = 1000 + i;
    MT_MPI(MPI_Win_lock_all(0, w.win));
    for (int a = 0; a < kNAccesses + (f == RT_DYNAMIC); ++a)
        for (int op = 0; op < kNOps; ++op) {
            if (a == 0 && (op == 4 || op == 5)) continue; /* one element cannot straddle */
            const int count = a < kNAccesses ? kAccesses[a].count : 1;
            MPI_Aint d;
            if (a < kNAccesses) {
                const long first = kAccesses[a].first;
                d = f == RT_DYNAMIC ? MPI_Aint_add(w.remote[right], (MPI_Aint)(first * 8))
                                    : (MPI_Aint)first;
            } else {
                d = (MPI_Aint)(uintptr_t)buf; /* an address of ours, attached by nobody */
            }
            const int rc = issue(op, w.win, right, d, count, buf, res);
            int cls = MPI_SUCCESS;
            MPI_Error_class(rc, &cls);
            MT_CHECK(cls == MPI_ERR_RMA_RANGE || cls == MPI_ERR_DISP,
                     "%s window, %s %s: returned class %d (MPI_ERR_RMA_RANGE is %d)",
                     rt_flavour_names[f], kOps[op],
                     a < kNAccesses ? kAccesses[a].what : "at an unattached address", cls,
                     MPI_ERR_RMA_RANGE);
        }
    /* A rank that does not exist. */
    int cls = MPI_SUCCESS;
    MPI_Error_class(MPI_Put(buf, 1, MPI_LONG, np, 0, 1, MPI_LONG, w.win), &cls);
    MT_CHECK(cls == MPI_ERR_RANK, "%s window: put to rank %d returned class %d",
             rt_flavour_names[f], np, cls);
    /* The epoch still works: a valid put to the last element. */
    const long last = 4242 + me;
    MT_MPI(MPI_Put(&last, 1, MPI_LONG, right, rt_disp(&w, right, (kLongs - 1) * sizeof(long)), 1,
                   MPI_LONG, w.win));
    MT_MPI(MPI_Win_flush_all(w.win));
    MT_MPI(MPI_Win_unlock_all(w.win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    rt_local_begin(&w);
    for (size_t i = 0; i < kLongs; ++i) {
        const long want = i == kLongs - 1 ? 4242 + left : rt_value(i, 40u + (unsigned)me);
        MT_CHECK(mine[i] == want,
                 "%s window: element %zu is %ld, want %ld (an out-of-window access wrote it)",
                 rt_flavour_names[f], i, mine[i], want);
    }
    rt_local_end(&w);
    rt_win_close(&w); /* checks the guards */
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    const int me = mt_rank(), np = mt_size();
    if (argc < 2) {
        for (int f = 0; f < RT_NFLAVOURS; ++f)
            run((rt_flavour)f, me, np);
    } else {
        for (int i = 1; i < argc; ++i)
            run(rt_flavour_parse(argv[i]), me, np);
    }
    mt_pass("rma_errors");
    MPI_Finalize();
    return 0;
}

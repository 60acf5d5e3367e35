/* Derived datatypes at every protocol edge: packed sizes n-1, n, n+1 around each boundary a
 * non-contiguous message crosses (one packet -> fragments, fragment counts, eager ->
 * rendezvous pipeline), plus tiny and large sizes, for both shapes of dt_shapes.h and three
 * pairings: non-contiguous on both sides, non-contiguous sender to a contiguous receive, and
 * contiguous sender to a non-contiguous receive. Each runs with the receive posted first and
 * with the message arriving first (unexpected), rotating through the send calls (Send, Ssend,
 * Isend, Issend) and the receive calls (Recv, Irecv). Every byte of the receive buffer is
 * checked against Open MPI's own unpack of the pattern, including the gaps the type skips
 * and guard bytes past its end.
 *
 * The boundaries come from MT_EDGES (comma list, as mt_sizes.h) or the default below: the
 * geometry of an shm endpoint with a PIO ring and the built-in cost figures (one packet up to
 * 8240 bytes, then 8224-byte fragments, as through the FIFO; rendezvous from 103087, as
 * mt_sizes.h lists it).
 * MT_MAX_SIZE caps the largest size (default 1M + 3).
 */
#include "dt_shapes.h"
#include "mt_sizes.h"

static const char* const kDefaultEdges = "8224,8240,16448,103087";

enum { kPostedFirst, kUnexpected, kNumOrders };
enum { kBothNonContig, kNonContigToContig, kContigToNonContig, kNumPairings };
static const char* const kPairingNames[kNumPairings] = {"nc->nc", "nc->contig", "contig->nc"};
enum { kGap = 0xC3 };

static mt_sizes_t edge_sizes(void) {
    mt_sizes_t s = {0, 0, 0};
    size_t max = (1u << 20) + 3;
    const char* m = getenv("MT_MAX_SIZE");
    if (m && *m) {
        char* end;
        max = mt_parse_size(m, &end);
    }
    const size_t small[] = {0, 1, 2, 8, 9, 10, 17};
    for (size_t i = 0; i < sizeof small / sizeof small[0]; ++i)
        mt_sizes_add(&s, small[i]);
    mt_sizes_add(&s, max);
    const char* edges = getenv("MT_EDGES");
    mt_sizes_add_edges(&s, edges && *edges ? edges : kDefaultEdges);
    qsort(s.v, s.n, sizeof(size_t), mt_cmp_size);
    size_t out = 0;
    for (size_t i = 0; i < s.n; ++i)
        if (s.v[i] <= max && (out == 0 || s.v[i] != s.v[out - 1])) s.v[out++] = s.v[i];
    s.n = out;
    return s;
}

/* Rank 0 sends `n` packed bytes to rank 1; `step` rotates the calls used. */
static void transfer(int me, dt_shape_t shape, int pairing, int order, size_t n, int step,
                     uint8_t* buf, uint8_t* want) {
    dt_layout_t send = pairing == kContigToNonContig ? dt_contig(n) : dt_make(shape, n);
    dt_layout_t recv = pairing == kNonContigToContig ? dt_contig(n) : dt_make(shape, n);
    const uint32_t seed = (uint32_t)(n * 131 + (size_t)shape * 17 + (size_t)pairing * 5 + order);
    const int tag = 10 + order;
    char what[160];
    snprintf(what, sizeof what, "%s %s, %zu bytes, %s, step %d", dt_shape_names[shape],
             kPairingNames[pairing], n, order == kPostedFirst ? "posted first" : "unexpected",
             step);
    MPI_Request rq = MPI_REQUEST_NULL;
    MPI_Status st;
    if (me == 0) {
        dt_fill(buf, &send, seed, 0x11);
        if (order == kPostedFirst) {
            MT_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* the receive is posted */
            if (step % 3 == 0) {
                MT_MPI(MPI_Send(buf, send.count, send.type, 1, tag, MPI_COMM_WORLD));
            } else if (step % 3 == 1) {
                MT_MPI(MPI_Ssend(buf, send.count, send.type, 1, tag, MPI_COMM_WORLD));
            } else {
                MT_MPI(MPI_Isend(buf, send.count, send.type, 1, tag, MPI_COMM_WORLD, &rq));
                MT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
            }
        } else {
            if (step % 2 == 0) {
                MT_MPI(MPI_Isend(buf, send.count, send.type, 1, tag, MPI_COMM_WORLD, &rq));
            } else {
                MT_MPI(MPI_Issend(buf, send.count, send.type, 1, tag, MPI_COMM_WORLD, &rq));
            }
            MT_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* sent before the receive is posted */
            MT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        }
    } else {
        memset(buf, kGap, recv.span + MT_GUARD);
        if (order == kPostedFirst) {
            MT_MPI(MPI_Irecv(buf, recv.count, recv.type, 0, tag, MPI_COMM_WORLD, &rq));
            MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
            MT_MPI(MPI_Wait(&rq, &st));
        } else {
            MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
            if (step % 2 == 0) {
                MT_MPI(MPI_Recv(buf, recv.count, recv.type, 0, tag, MPI_COMM_WORLD, &st));
            } else {
                MT_MPI(MPI_Irecv(buf, recv.count, recv.type, 0, tag, MPI_COMM_WORLD, &rq));
                MT_MPI(MPI_Wait(&rq, &st));
            }
        }
        int bytes = -1;
        MT_MPI(MPI_Get_count(&st, MPI_BYTE, &bytes));
        MT_CHECK((size_t)bytes == n, "%s: MPI_Get_count says %d bytes", what, bytes);
        if (pairing != kNonContigToContig && shape == DT_BYTES) {
            int elements = -1;
            MT_MPI(MPI_Get_elements(&st, recv.type, &elements));
            MT_CHECK((size_t)elements == n, "%s: MPI_Get_elements says %d", what, elements);
        }
        dt_fill(want, &recv, seed, kGap);
        dt_expect_image(buf, want, recv.span, what);
        for (size_t i = 0; i < MT_GUARD; ++i)
            MT_CHECK(buf[recv.span + i] == kGap, "%s: byte %zu past the buffer was written", what,
                     i);
    }
    dt_free(&send);
    dt_free(&recv);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MT_CHECK(mt_size() == 2, "run with exactly 2 ranks");
    const int me = mt_rank();
    mt_sizes_t sizes = edge_sizes();
    const size_t max = mt_sizes_max(&sizes);
    /* Room for the widest layout (strided bytes: 3 bytes of memory per packed byte). */
    const size_t room = max * DT_BYTE_EXTENT + DT_RECORD_EXTENT + MT_GUARD;
    uint8_t* buf = (uint8_t*)mt_malloc(room);
    uint8_t* want = (uint8_t*)mt_malloc(room);
    int step = 0;
    for (int shape = 0; shape < DT_NSHAPES; ++shape)
        for (int pairing = 0; pairing < kNumPairings; ++pairing)
            for (size_t i = 0; i < sizes.n; ++i)
                for (int order = 0; order < kNumOrders; ++order)
                    transfer(me, (dt_shape_t)shape, pairing, order, sizes.v[i], step++, buf, want);
    free(buf);
    free(want);
    free(sizes.v);
    mt_pass("datatypes_edges");
    MPI_Finalize();
    return 0;
}

/* Derived datatypes through every MPI path that has its own code in a PML, at an eager and a
 * rendezvous size: truncation (MPI_ERR_TRUNCATE, nothing written outside the type's bytes),
 * short messages (MPI_Get_count / MPI_Get_elements on partial types), zero counts, probe and
 * matched probe (MPI_Mprobe/MPI_Mrecv, MPI_Improbe/MPI_Imrecv), persistent requests
 * restarted with new data, buffered sends, a type freed while its operation is in flight,
 * and predefined pair types (MPI_DOUBLE_INT, MPI_SHORT_INT), which are non-contiguous too.
 * Rank 0 sends, rank 1 receives; every byte of the receive buffer, gaps included, is checked
 * against Open MPI's own unpack of the pattern (dt_shapes.h).
 */
#include "dt_shapes.h"

/* Eager (one packet or a few fragments) and rendezvous (pipeline) packed sizes; multiples of
 * 9 so that record arrays have no trailing bytes and a prefix of one is another. */
static const size_t kSizes[] = {99, 300006};
enum { kNumSizes = sizeof kSizes / sizeof kSizes[0], kGap = 0xC3 };

static uint8_t* g_buf;  /* the transfer buffer of this rank */
static uint8_t* g_want; /* the expected image (receiver) */
static size_t g_room;

static int error_class(int rc) {
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

/* Receiver: clear the buffer so untouched bytes are recognisable. */
static void clear_recv(size_t span) { memset(g_buf, kGap, span + MT_GUARD); }

/* Receiver: the buffer must hold what (image_layout, seed) unpacks to, gaps untouched, and
 * nothing past span_checked. */
static void expect(const dt_layout_t* image, uint32_t seed, size_t span_checked, const char* what) {
    memset(g_want, kGap, span_checked);
    dt_fill(g_want, image, seed, kGap);
    dt_expect_image(g_buf, g_want, span_checked, what);
    for (size_t i = 0; i < MT_GUARD; ++i)
        MT_CHECK(g_buf[span_checked + i] == kGap, "%s: byte %zu past the buffer written", what, i);
}

/* Receiver of a truncated message: MPI leaves the buffer's contents open (pml swy delivers
 * the leading bytes, pml ucx none), but nothing outside the type's own bytes may change and
 * what did arrive must be the message's. */
static void expect_truncated(const dt_layout_t* l, uint32_t seed, const char* what) {
    memset(g_want, kGap, l->span);
    dt_fill(g_want, l, seed, kGap);
    for (size_t i = 0; i < l->span; ++i)
        MT_CHECK(g_buf[i] == g_want[i] || g_buf[i] == kGap,
                 "%s: byte %zu of %zu is 0x%02x, want 0x%02x or untouched", what, i, l->span,
                 g_buf[i], g_want[i]);
    for (size_t i = 0; i < MT_GUARD; ++i)
        MT_CHECK(g_buf[l->span + i] == kGap, "%s: byte %zu past the buffer written", what, i);
}

static void truncation(int me, dt_shape_t shape, size_t n) {
    const size_t room = shape == DT_BYTES ? n - 1 : n - DT_RECORD_PACKED;
    for (int how = 0; how < 2; ++how) {
        const uint32_t seed = (uint32_t)(n + shape * 3 + how);
        char what[128];
        snprintf(what, sizeof what, "truncation %s %zu into %zu (%s)", dt_shape_names[shape], n,
                 room, how ? "Irecv" : "Recv");
        if (me == 0) {
            dt_layout_t l = dt_make(shape, n);
            dt_fill(g_buf, &l, seed, 0x11);
            int rc = MPI_Send(g_buf, l.count, l.type, 1, 20, MPI_COMM_WORLD);
            MT_CHECK(rc == MPI_SUCCESS, "%s: the sender got error %d", what, rc);
            dt_free(&l);
        } else {
            dt_layout_t l = dt_make(shape, room);
            MPI_Status st;
            int rc;
            clear_recv(l.span);
            if (how == 0) {
                rc = MPI_Recv(g_buf, l.count, l.type, 0, 20, MPI_COMM_WORLD, &st);
            } else {
                MPI_Request rq;
                MT_MPI(MPI_Irecv(g_buf, l.count, l.type, 0, 20, MPI_COMM_WORLD, &rq));
                rc = MPI_Wait(&rq, &st);
            }
            MT_CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "%s: error class %d, want %d", what,
                     error_class(rc), MPI_ERR_TRUNCATE);
            expect_truncated(&l, seed, what);
            dt_free(&l);
        }
    }
}

/* A message shorter than the receive: counts report what arrived, the rest is untouched. */
static void short_message(int me, size_t n) {
    const size_t j = n / DT_RECORD_PACKED / 2; /* whole records sent, plus one char */
    const size_t sent_records = j * DT_RECORD_PACKED + 1, sent_bytes = n / 2;
    const uint32_t seed = (uint32_t)n + 40;
    if (me == 0) {
        mt_fill(g_buf, sent_records, seed);
        MT_MPI(MPI_Send(g_buf, (int)sent_records, MPI_BYTE, 1, 21, MPI_COMM_WORLD));
        dt_layout_t b = dt_make(DT_BYTES, sent_bytes);
        dt_fill(g_buf, &b, seed + 1, 0x11);
        MT_MPI(MPI_Send(g_buf, b.count, b.type, 1, 22, MPI_COMM_WORLD));
        dt_free(&b);
        return;
    }
    char what[96];
    MPI_Status st;
    int count = -2, elements = -2;
    /* Records: j whole ones, then the char of record j (a partial record). */
    dt_layout_t r = dt_make(DT_RECORDS, n);
    clear_recv(r.span);
    MT_MPI(MPI_Recv(g_buf, r.count, r.type, 0, 21, MPI_COMM_WORLD, &st));
    snprintf(what, sizeof what, "%zu bytes into %zu bytes of records", sent_records, n);
    MT_MPI(MPI_Get_count(&st, r.type, &count));
    MT_MPI(MPI_Get_elements(&st, r.type, &elements));
    MT_CHECK(count == MPI_UNDEFINED, "%s: MPI_Get_count %d, want MPI_UNDEFINED", what, count);
    MT_CHECK(elements == (int)(2 * j + 1), "%s: MPI_Get_elements %d, want %zu", what, elements,
             2 * j + 1);
    dt_layout_t whole = dt_make(DT_RECORDS, j * DT_RECORD_PACKED);
    memset(g_want, kGap, r.span + MT_GUARD);
    dt_fill(g_want, &whole, seed, kGap);
    g_want[j * DT_RECORD_EXTENT] = mt_pattern_byte(j * DT_RECORD_PACKED, seed);
    dt_expect_image(g_buf, g_want, r.span + MT_GUARD, what);
    dt_free(&whole);
    dt_free(&r);
    /* Strided bytes: a prefix of the type is the type with a smaller count. */
    dt_layout_t b = dt_make(DT_BYTES, n);
    clear_recv(b.span);
    MT_MPI(MPI_Recv(g_buf, b.count, b.type, 0, 22, MPI_COMM_WORLD, &st));
    snprintf(what, sizeof what, "%zu bytes into %zu strided bytes", sent_bytes, n);
    MT_MPI(MPI_Get_count(&st, b.type, &count));
    MT_MPI(MPI_Get_elements(&st, b.type, &elements));
    MT_CHECK(count == (int)sent_bytes && elements == (int)sent_bytes,
             "%s: MPI_Get_count %d, MPI_Get_elements %d", what, count, elements);
    dt_layout_t prefix = dt_make(DT_BYTES, sent_bytes);
    expect(&prefix, seed + 1, b.span, what);
    dt_free(&prefix);
    dt_free(&b);
}

static void zero_count(int me) {
    dt_layout_t l = dt_make(DT_RECORDS, 5 * DT_RECORD_PACKED);
    if (me == 0) {
        MT_MPI(MPI_Send(g_buf, 0, l.type, 1, 23, MPI_COMM_WORLD));
        MT_MPI(MPI_Send(g_buf, 0, l.type, 1, 24, MPI_COMM_WORLD));
    } else {
        MPI_Status st;
        int count = -1;
        clear_recv(l.span);
        MT_MPI(MPI_Recv(g_buf, 0, l.type, 0, 23, MPI_COMM_WORLD, &st));
        MT_MPI(MPI_Get_count(&st, l.type, &count));
        MT_CHECK(count == 0, "zero count into zero count: MPI_Get_count %d", count);
        MT_MPI(MPI_Recv(g_buf, l.count, l.type, 0, 24, MPI_COMM_WORLD, &st));
        MT_MPI(MPI_Get_count(&st, l.type, &count));
        MT_CHECK(count == 0, "zero count into a type: MPI_Get_count %d", count);
        dt_layout_t none = dt_make(DT_RECORDS, 0);
        expect(&none, 0, l.span, "zero count");
        dt_free(&none);
    }
    dt_free(&l);
}

/* MPI_Probe, then MPI_Mprobe + MPI_Mrecv and MPI_Improbe + MPI_Imrecv into a derived type. */
static void probes(int me, size_t n) {
    for (int how = 0; how < 2; ++how) {
        const uint32_t seed = (uint32_t)n + 50 + (uint32_t)how;
        dt_layout_t l = dt_make(how ? DT_BYTES : DT_RECORDS, n);
        if (me == 0) {
            dt_fill(g_buf, &l, seed, 0x11);
            MT_MPI(MPI_Send(g_buf, l.count, l.type, 1, 25, MPI_COMM_WORLD));
            dt_free(&l);
            continue;
        }
        char what[96];
        snprintf(what, sizeof what, "%s of %zu bytes", how ? "Improbe+Imrecv" : "Mprobe+Mrecv", n);
        MPI_Status st;
        int bytes = -1;
        MT_MPI(MPI_Probe(0, 25, MPI_COMM_WORLD, &st));
        MT_MPI(MPI_Get_count(&st, MPI_BYTE, &bytes));
        MT_CHECK((size_t)bytes == n, "%s: MPI_Probe says %d bytes", what, bytes);
        MPI_Message msg;
        clear_recv(l.span);
        if (how == 0) {
            MT_MPI(MPI_Mprobe(0, 25, MPI_COMM_WORLD, &msg, &st));
            MT_MPI(MPI_Mrecv(g_buf, l.count, l.type, &msg, &st));
        } else {
            int found = 0;
            while (!found)
                MT_MPI(MPI_Improbe(0, 25, MPI_COMM_WORLD, &found, &msg, &st));
            MPI_Request rq;
            MT_MPI(MPI_Imrecv(g_buf, l.count, l.type, &msg, &rq));
            MT_MPI(MPI_Wait(&rq, &st));
        }
        MT_MPI(MPI_Get_count(&st, MPI_BYTE, &bytes));
        MT_CHECK((size_t)bytes == n, "%s: received %d bytes", what, bytes);
        expect(&l, seed, l.span, what);
        dt_free(&l);
    }
}

/* Persistent requests started three times with new data each time; the last round uses a
 * synchronous persistent send. */
static void persistent(int me, size_t n) {
    dt_layout_t l = dt_make(DT_RECORDS, n);
    MPI_Request rq;
    if (me == 0) {
        MPI_Request srq;
        MT_MPI(MPI_Send_init(g_buf, l.count, l.type, 1, 26, MPI_COMM_WORLD, &rq));
        MT_MPI(MPI_Ssend_init(g_buf, l.count, l.type, 1, 26, MPI_COMM_WORLD, &srq));
        for (int round = 0; round < 3; ++round) {
            dt_fill(g_buf, &l, (uint32_t)(n + 60 + round), 0x11);
            MPI_Request* which = round == 2 ? &srq : &rq;
            MT_MPI(MPI_Start(which));
            MT_MPI(MPI_Wait(which, MPI_STATUS_IGNORE));
            MT_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* the receiver checked this round */
        }
        MT_MPI(MPI_Request_free(&srq));
    } else {
        MT_MPI(MPI_Recv_init(g_buf, l.count, l.type, 0, 26, MPI_COMM_WORLD, &rq));
        for (int round = 0; round < 3; ++round) {
            char what[64];
            snprintf(what, sizeof what, "persistent round %d, %zu bytes", round, n);
            clear_recv(l.span);
            MT_MPI(MPI_Start(&rq));
            MT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
            expect(&l, (uint32_t)(n + 60 + round), l.span, what);
            MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        }
    }
    MT_MPI(MPI_Request_free(&rq));
    dt_free(&l);
}

static void buffered(int me, size_t n) {
    dt_layout_t l = dt_make(DT_RECORDS, n);
    const uint32_t seed = (uint32_t)n + 70;
    if (me == 0) {
        int size = 0;
        MT_MPI(MPI_Pack_size(l.count, l.type, MPI_COMM_WORLD, &size));
        const int room = size + MPI_BSEND_OVERHEAD;
        void* pool = mt_malloc((size_t)room);
        MT_MPI(MPI_Buffer_attach(pool, room));
        dt_fill(g_buf, &l, seed, 0x11);
        MT_MPI(MPI_Bsend(g_buf, l.count, l.type, 1, 27, MPI_COMM_WORLD));
        memset(g_buf, 0x22, l.span); /* the send owns a copy now */
        int detached = 0;
        void* back = NULL;
        MT_MPI(MPI_Buffer_detach(&back, &detached)); /* waits for the buffered send */
        free(pool);
    } else {
        clear_recv(l.span);
        MT_MPI(MPI_Recv(g_buf, l.count, l.type, 0, 27, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        expect(&l, seed, l.span, "buffered send");
    }
    dt_free(&l);
}

/* MPI_Type_free of a duplicate right after MPI_Isend / MPI_Irecv: the operation keeps it. */
static void freed_in_flight(int me, size_t n) {
    dt_layout_t l = dt_make(DT_RECORDS, n);
    const uint32_t seed = (uint32_t)n + 80;
    MPI_Datatype dup;
    MPI_Request rq;
    MT_MPI(MPI_Type_dup(l.type, &dup));
    if (me == 0) {
        dt_fill(g_buf, &l, seed, 0x11);
        MT_MPI(MPI_Isend(g_buf, l.count, dup, 1, 28, MPI_COMM_WORLD, &rq));
        MT_MPI(MPI_Type_free(&dup));
        MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        MT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    } else {
        clear_recv(l.span);
        MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        MT_MPI(MPI_Irecv(g_buf, l.count, dup, 0, 28, MPI_COMM_WORLD, &rq));
        MT_MPI(MPI_Type_free(&dup));
        MT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        expect(&l, seed, l.span, "type freed in flight");
    }
    dt_free(&l);
}

/* Arrays of MPI_DOUBLE_INT (12 bytes in 16) and MPI_SHORT_INT (6 in 8): predefined, yet
 * non-contiguous for more than one element. */
static void predefined_pairs(int me, size_t n) {
    const MPI_Datatype types[2] = {MPI_DOUBLE_INT, MPI_SHORT_INT};
    for (int t = 0; t < 2; ++t) {
        MPI_Aint lb, extent;
        int size;
        MT_MPI(MPI_Type_get_extent(types[t], &lb, &extent));
        MT_MPI(MPI_Type_size(types[t], &size));
        const int count = (int)(n / (size_t)size);
        dt_layout_t l = {types[t], count, (size_t)count * (size_t)size,
                         (size_t)count * (size_t)extent};
        const uint32_t seed = (uint32_t)n + 90 + (uint32_t)t;
        if (me == 0) {
            dt_fill(g_buf, &l, seed, 0x11);
            MT_MPI(MPI_Send(g_buf, l.count, l.type, 1, 29, MPI_COMM_WORLD));
        } else {
            char what[64];
            snprintf(what, sizeof what, "%d x %s", count, t ? "MPI_SHORT_INT" : "MPI_DOUBLE_INT");
            MPI_Status st;
            int got = -1;
            clear_recv(l.span);
            MT_MPI(MPI_Recv(g_buf, l.count, l.type, 0, 29, MPI_COMM_WORLD, &st));
            MT_MPI(MPI_Get_count(&st, l.type, &got));
            MT_CHECK(got == count, "%s: MPI_Get_count %d", what, got);
            expect(&l, seed, l.span, what);
        }
    }
}

/* Each rank to itself (the self transport): derived on both sides, and contiguous to
 * derived, the send started before the receive is posted. */
static void to_self(int me, size_t n) {
    dt_layout_t l = dt_make(DT_RECORDS, n);
    uint8_t* src = (uint8_t*)mt_malloc(l.span);
    for (int contig = 0; contig < 2; ++contig) {
        const uint32_t seed = (uint32_t)(n + 110 + (size_t)contig * 2 + (size_t)me);
        dt_layout_t send = contig ? dt_contig(n) : l;
        char what[64];
        snprintf(what, sizeof what, "rank %d to itself, %zu bytes, %s", me, n,
                 contig ? "contig->nc" : "nc->nc");
        dt_fill(src, &send, seed, 0x11);
        clear_recv(l.span);
        MPI_Request rq;
        MT_MPI(MPI_Isend(src, send.count, send.type, me, 31, MPI_COMM_WORLD, &rq));
        MT_MPI(MPI_Recv(g_buf, l.count, l.type, me, 31, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        expect(&l, seed, l.span, what);
    }
    free(src);
    dt_free(&l);
}

/* A type used and never freed: MPI_Finalize must still shut down cleanly (the PML drops what
 * it cached on the type while it is loaded). */
static void leaked_type(int me) {
    dt_layout_t l = dt_make(DT_RECORDS, 99);
    const uint32_t seed = 100;
    if (me == 0) {
        dt_fill(g_buf, &l, seed, 0x11);
        MT_MPI(MPI_Send(g_buf, l.count, l.type, 1, 30, MPI_COMM_WORLD));
    } else {
        clear_recv(l.span);
        MT_MPI(MPI_Recv(g_buf, l.count, l.type, 0, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        expect(&l, seed, l.span, "leaked type");
    }
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MT_CHECK(mt_size() == 2, "run with exactly 2 ranks");
    MT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    const int me = mt_rank();
    g_room = kSizes[kNumSizes - 1] * DT_BYTE_EXTENT + DT_RECORD_EXTENT + MT_GUARD;
    g_buf = (uint8_t*)mt_malloc(g_room);
    g_want = (uint8_t*)mt_malloc(g_room);
    zero_count(me);
    for (int i = 0; i < kNumSizes; ++i) {
        const size_t n = kSizes[i];
        for (int shape = 0; shape < DT_NSHAPES; ++shape)
            truncation(me, (dt_shape_t)shape, n);
        short_message(me, n);
        probes(me, n);
        persistent(me, n);
        buffered(me, n);
        freed_in_flight(me, n);
        predefined_pairs(me, n);
        to_self(me, n);
    }
    leaked_type(me);
    free(g_buf);
    free(g_want);
    mt_pass("datatypes_modes");
    MPI_Finalize();
    return 0;
}

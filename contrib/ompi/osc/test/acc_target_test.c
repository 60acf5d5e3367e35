/*
 * The accumulate target as a hostile peer sees it: requests, well-formed and malformed, are
 * handed to ompi_osc_swy_acc_handle_request against a window of 64 ints, and each check
 * asserts the reply the target sends (status and old values) and the window's bytes after.
 * A malformed request must be answered with an error and change nothing; one too short to
 * name an operation must get no answer at all.
 *
 * The origin's side gets hostile replies: stale or unknown operation ids, the wrong sender,
 * values for an operation that wanted none or that fall outside its results; only the right
 * reply completes the operation, and nothing is written outside its result buffer.
 *
 * Built from osc_swy_acc_target.c, osc_swy_acc_op.c and osc_swy_acc_apply.c with the
 * Switchyard calls they make replaced by the recorders below (no worker, no peer): the reply
 * is the header the target passes to swy_am_send_nb. Runs as a singleton MPI process (Open
 * MPI's ops and datatypes need MPI_Init).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "osc_swy_acc_apply.h"
#include "osc_swy_acc_op.h"
#include "osc_swy_acc_wire.h"
#include "osc_swy_accumulate.h"

/* ---- Switchyard stand-ins: record the reply ----------------------------------------------- */

static unsigned char g_reply[SWY_AM_MAX_HEADER];
static size_t g_reply_length;
static size_t g_reply_data_length;
static int g_replies;

swy_status_t swy_am_send_nb(swy_ep_h ep, uint16_t id, const void* header, size_t header_length,
                            const void* data, size_t count, const swy_request_params_t* params,
                            swy_request_h* req) {
    (void)ep;
    (void)params;
    (void)data;
    *req = NULL;
    if (id != OSC_SWY_AM_ID || header_length > sizeof(g_reply)) {
        fprintf(stderr, "unexpected send: id %u, header %zu\n", id, header_length);
        exit(1);
    }
    memcpy(g_reply, header, header_length);
    g_reply_length = header_length;
    g_reply_data_length = count;
    ++g_replies;
    return SWY_OK;
}
swy_status_t swy_request_free(swy_request_h req) {
    (void)req;
    return SWY_OK;
}
void swy_am_data_release(swy_worker_h worker, void* data) {
    (void)worker;
    (void)data;
}
swy_status_t swy_am_recv_data_nb(swy_worker_h worker, void* data_desc, void* buffer, size_t count,
                                 const swy_request_params_t* params, swy_request_h* req) {
    (void)worker;
    (void)data_desc;
    (void)buffer;
    (void)count;
    (void)params;
    *req = NULL;
    return SWY_ERR_UNSUPPORTED; /* rendezvous is not exercised here */
}
const char* swy_status_string(swy_status_t status) {
    (void)status;
    return "stub";
}

/* Stand-ins for the rest of osc swy that osc_swy_acc_op.c calls. */
void ompi_osc_swy_request_release_ref(ompi_osc_swy_request_t* req) { (void)req; }
void ompi_osc_swy_progress_step(unsigned* countdown) { (void)countdown; }

/* ---- the window ----------------------------------------------------------------------------- */

enum { WIN_INTS = 64 };
static int32_t g_window[WIN_INTS];
static ompi_osc_swy_module_t g_module;
static ompi_osc_swy_ctrl_t g_ctrl;
static ompi_osc_swy_acc_state_t g_acc;
static ompi_osc_swy_peer_t g_peers[2];
static int g_failures;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fprintf(stderr, "\n");                                          \
            ++g_failures;                                                   \
        }                                                                   \
    } while (0)

static void reset_window(void) {
    for (int i = 0; i < WIN_INTS; ++i)
        g_window[i] = 100 + i;
}

static uint64_t addr_of(int index) { return (uint64_t)(uintptr_t)&g_window[index]; }

/* A request: fixed header, then segments, then operand bytes (inline, as a small one is). */
typedef struct {
    osc_swy_acc_request_t req;
    unsigned char payload[SWY_AM_MAX_HEADER - sizeof(osc_swy_acc_request_t)];
    size_t payload_length;
} msg_t;

static void msg_init(msg_t* m, uint8_t kind, uint8_t op, uint16_t element_type) {
    memset(m, 0, sizeof(*m));
    m->req.am.win_id = 7;
    m->req.am.source = 1;
    m->req.am.kind = OSC_SWY_AM_KIND_ACC_REQUEST;
    m->req.op_id = 0x1234;
    m->req.kind = kind;
    m->req.op = op;
    m->req.element_type = element_type;
    m->req.version = OSC_SWY_ACC_WIRE_VERSION;
}

static void msg_segment(msg_t* m, uint64_t addr, uint64_t count) {
    osc_swy_acc_segment_t s = {addr, count};
    memcpy(m->payload + m->payload_length, &s, sizeof(s));
    m->payload_length += sizeof(s);
    ++m->req.segment_count;
}

static void msg_bytes(msg_t* m, const void* bytes, size_t n) {
    memcpy(m->payload + m->payload_length, bytes, n);
    m->payload_length += n;
}

/* Deliver @p m (its header cut to @p header_length if not 0) and return the reply status;
 * -1 when no reply was sent. */
static int deliver(msg_t* m, size_t header_length) {
    unsigned char wire[SWY_AM_MAX_HEADER];
    memcpy(wire, &m->req, sizeof(m->req));
    memcpy(wire + sizeof(m->req), m->payload, m->payload_length);
    size_t length = header_length ? header_length : sizeof(m->req) + m->payload_length;
    const int before = g_replies;
    swy_am_recv_param_t param = {.field_mask = SWY_AM_RECV_PARAM_FIELD_FLAGS, .flags = 0};
    ompi_osc_swy_acc_handle_request(&g_module, 1, wire, length, NULL, 0, &param);
    if (g_replies == before) return -1;
    osc_swy_acc_reply_t reply;
    memcpy(&reply, g_reply, sizeof(reply));
    CHECK(reply.op_id == m->req.op_id, "reply names op %llx", (unsigned long long)reply.op_id);
    CHECK(reply.am.kind == OSC_SWY_AM_KIND_ACC_REPLY, "reply kind %u", reply.am.kind);
    return reply.status;
}

static int window_untouched(void) {
    for (int i = 0; i < WIN_INTS; ++i)
        if (g_window[i] != 100 + i) return 0;
    return 1;
}

/* The request is refused with @p status and the window keeps its bytes. */
static void expect_refused(msg_t* m, int status, const char* what) {
    reset_window();
    int got = deliver(m, 0);
    CHECK(got == status, "%s: status %d, expected %d", what, got, status);
    CHECK(window_untouched(), "%s: the window changed", what);
}

/* ---- the origin: hostile replies ------------------------------------------------------------ */

/* Deliver a reply from rank @p source for @p op_id with status 0 and @p n value bytes. */
static void reply_from(int source, uint64_t op_id, uint64_t offset, const void* values, size_t n,
                       uint8_t version) {
    unsigned char wire[SWY_AM_MAX_HEADER];
    osc_swy_acc_reply_t r;
    memset(&r, 0, sizeof(r));
    r.am.win_id = 7;
    r.am.source = source;
    r.am.kind = OSC_SWY_AM_KIND_ACC_REPLY;
    r.op_id = op_id;
    r.result_offset = offset;
    r.version = version;
    memcpy(wire, &r, sizeof(r));
    memcpy(wire + sizeof(r), values, n);
    swy_am_recv_param_t param = {.field_mask = SWY_AM_RECV_PARAM_FIELD_FLAGS, .flags = 0};
    ompi_osc_swy_acc_handle_reply(&g_module, source, wire, sizeof(r) + n, NULL, 0, &param);
}

static void check_replies(void) {
    OBJ_CONSTRUCT(&g_acc.lock, opal_mutex_t);
    g_acc.peers = calloc(2, sizeof(*g_acc.peers));
    /* A get_accumulate of 2 ints to rank 1 with one request outstanding; its results go to
     * the middle of a guarded buffer. */
    int32_t results[6] = {-1, -1, -1, -1, -1, -1};
    uint64_t op_id = 0;
    ompi_osc_swy_acc_op_t* op = ompi_osc_swy_acc_op_alloc(&g_acc, &op_id);
    CHECK(op != NULL, "op_alloc");
    op->target = 1;
    op->pending = 1;
    op->results = (unsigned char*)&results[2];
    op->results_length = 8;
    g_acc.peers[1].outstanding = 1;
    const int32_t vals[4] = {11, 22, 33, 44};
    const uint64_t before = g_acc.refused;

    reply_from(1, op_id + ((uint64_t)1 << 32), 0, vals, 8, OSC_SWY_ACC_WIRE_VERSION);
    CHECK(op->busy && op->pending == 1, "a reply with a stale generation completed the op");
    reply_from(1, op_id + 1, 0, vals, 8, OSC_SWY_ACC_WIRE_VERSION);
    CHECK(op->busy && op->pending == 1, "a reply for another slot completed the op");
    reply_from(0, op_id, 0, vals, 8, OSC_SWY_ACC_WIRE_VERSION);
    CHECK(op->busy && op->pending == 1, "a reply from the wrong rank completed the op");
    reply_from(1, op_id, 0, vals, 8, 9);
    CHECK(op->busy && op->pending == 1, "a reply of another version completed the op");
    CHECK(g_acc.refused == before + 4, "refused %llu replies, expected 4",
          (unsigned long long)(g_acc.refused - before));
    CHECK(results[2] == -1 && results[3] == -1, "a refused reply wrote results");

    /* Values past the end of the results fail the operation and write nothing. */
    reply_from(1, op_id, 4, vals, 8, OSC_SWY_ACC_WIRE_VERSION);
    CHECK(!op->busy, "the operation did not end");
    CHECK(g_acc.peers[1].error == MPI_ERR_OTHER, "error %d", g_acc.peers[1].error);
    CHECK(g_acc.peers[1].outstanding == 0, "outstanding %d", g_acc.peers[1].outstanding);
    for (int i = 0; i < 6; ++i)
        CHECK(results[i] == -1, "results[%d] = %d", i, results[i]);

    /* The right reply, on a fresh operation: its values land in place, nothing around them. */
    op = ompi_osc_swy_acc_op_alloc(&g_acc, &op_id);
    op->target = 1;
    op->pending = 1;
    op->results = (unsigned char*)&results[2];
    op->results_length = 8;
    g_acc.peers[1].outstanding = 1;
    g_acc.peers[1].error = MPI_SUCCESS;
    reply_from(1, op_id, 0, vals, 8, OSC_SWY_ACC_WIRE_VERSION);
    CHECK(!op->busy && g_acc.peers[1].error == MPI_SUCCESS, "a valid reply failed");
    CHECK(results[1] == -1 && results[2] == 11 && results[3] == 22 && results[4] == -1,
          "results %d %d %d %d", results[1], results[2], results[3], results[4]);
    /* Its id is dead now: a duplicate changes nothing. */
    reply_from(1, op_id, 0, vals + 2, 8, OSC_SWY_ACC_WIRE_VERSION);
    CHECK(results[2] == 11 && g_acc.peers[1].outstanding == 0, "a duplicate reply was taken");
    ompi_osc_swy_acc_ops_fini(&g_acc);
    free(g_acc.peers);
    OBJ_DESTRUCT(&g_acc.lock);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    g_module.win_id = 7;
    g_module.rank = 0;
    g_module.nranks = 2;
    g_module.flavor = MPI_WIN_FLAVOR_CREATE;
    g_module.base = (char*)g_window;
    g_module.size = sizeof(g_window);
    g_module.ctrl = &g_ctrl;
    g_module.acc = &g_acc;
    g_module.peers = g_peers;
    const uint16_t t_int = (uint16_t)(&ompi_mpi_int.dt)->id;
    const uint16_t t_double = (uint16_t)(&ompi_mpi_double.dt)->id;
    const uint16_t t_short = (uint16_t)(&ompi_mpi_short.dt)->id;
    msg_t m;

    /* Well-formed: SUM of 2 ints at [3], [4]; get_accumulate returns the old values. */
    int32_t two[2] = {5, 7};
    msg_init(&m, OSC_SWY_ACC_KIND_GET_ACCUMULATE, OSC_SWY_ACC_OP_SUM, t_int);
    msg_segment(&m, addr_of(3), 2);
    msg_bytes(&m, two, sizeof(two));
    reset_window();
    CHECK(deliver(&m, 0) == MPI_SUCCESS, "valid get_accumulate refused");
    CHECK(g_window[3] == 108 && g_window[4] == 111, "sums %d %d", g_window[3], g_window[4]);
    int32_t old[2];
    memcpy(old, g_reply + sizeof(osc_swy_acc_reply_t), sizeof(old));
    CHECK(g_reply_length == sizeof(osc_swy_acc_reply_t) + 8 && old[0] == 103 && old[1] == 104,
          "old values %d %d (reply %zu bytes)", old[0], old[1], g_reply_length);

    /* Well-formed: compare_and_swap of a short (lock path) that matches. */
    short cas[2] = {-1, 100}; /* operand, compare: [0] of the window as shorts is 100 */
    msg_init(&m, OSC_SWY_ACC_KIND_CAS, OSC_SWY_ACC_OP_REPLACE, t_short);
    msg_segment(&m, addr_of(0), 1);
    msg_bytes(&m, cas, sizeof(cas));
    reset_window();
    CHECK(deliver(&m, 0) == MPI_SUCCESS, "valid compare_and_swap refused");
    short first;
    memcpy(&first, g_window, sizeof(first));
    CHECK(first == -1, "cas result %d", first);

    /* Too short to answer: dropped, no reply. */
    msg_init(&m, OSC_SWY_ACC_KIND_ACCUMULATE, OSC_SWY_ACC_OP_SUM, t_int);
    reset_window();
    CHECK(deliver(&m, sizeof(osc_swy_acc_request_t) - 1) == -1, "a short header was answered");
    CHECK(window_untouched(), "short header changed the window");

    /* Header fields. */
    msg_init(&m, OSC_SWY_ACC_KIND_ACCUMULATE, OSC_SWY_ACC_OP_SUM, t_int);
    msg_segment(&m, addr_of(0), 1);
    msg_bytes(&m, two, 4);
    m.req.version = 2;
    expect_refused(&m, MPI_ERR_OTHER, "version 2");
    m.req.version = OSC_SWY_ACC_WIRE_VERSION;
    m.req.reserved[3] = 1;
    expect_refused(&m, MPI_ERR_OTHER, "reserved byte set");
    m.req.reserved[3] = 0;
    m.req.kind = 9;
    expect_refused(&m, MPI_ERR_OTHER, "unknown kind");
    m.req.kind = OSC_SWY_ACC_KIND_ACCUMULATE;
    m.req.op = 0;
    expect_refused(&m, MPI_ERR_OP, "op 0");
    m.req.op = OSC_SWY_ACC_OP_COUNT;
    expect_refused(&m, MPI_ERR_OP, "op past the last");
    m.req.op = OSC_SWY_ACC_OP_SUM;
    m.req.element_type = 0xffff;
    expect_refused(&m, MPI_ERR_TYPE, "element type 0xffff");
    m.req.element_type = 0; /* MPI_DATATYPE_NULL's slot */
    expect_refused(&m, MPI_ERR_TYPE, "element type 0");

    /* An op MPI does not define on the type. */
    double d = 1.0;
    msg_init(&m, OSC_SWY_ACC_KIND_ACCUMULATE, OSC_SWY_ACC_OP_BAND, t_double);
    msg_segment(&m, addr_of(0), 1);
    msg_bytes(&m, &d, sizeof(d));
    expect_refused(&m, MPI_ERR_OP, "BAND on double");

    /* Segment lists. */
    msg_init(&m, OSC_SWY_ACC_KIND_ACCUMULATE, OSC_SWY_ACC_OP_SUM, t_int);
    msg_bytes(&m, two, 4);
    expect_refused(&m, MPI_ERR_OTHER, "no segment");
    m.req.segment_count = 1000000; /* far more than the payload holds */
    expect_refused(&m, MPI_ERR_OTHER, "segment count beyond the payload");

    msg_init(&m, OSC_SWY_ACC_KIND_ACCUMULATE, OSC_SWY_ACC_OP_SUM, t_int);
    msg_segment(&m, addr_of(0), 0);
    expect_refused(&m, MPI_ERR_OTHER, "a segment of 0 elements");

    msg_init(&m, OSC_SWY_ACC_KIND_ACCUMULATE, OSC_SWY_ACC_OP_NO_OP, t_int);
    msg_segment(&m, addr_of(0), (uint64_t)1 << 40);
    expect_refused(&m, MPI_ERR_OTHER, "2^40 elements");

    /* Addresses: a valid first segment must not be applied when a later one is outside. */
    msg_init(&m, OSC_SWY_ACC_KIND_ACCUMULATE, OSC_SWY_ACC_OP_SUM, t_int);
    msg_segment(&m, addr_of(0), 1);
    msg_segment(&m, addr_of(WIN_INTS - 1), 2); /* one int past the end */
    msg_bytes(&m, two, 4);
    msg_bytes(&m, two, 8);
    expect_refused(&m, MPI_ERR_RMA_RANGE, "segment running past the window");

    msg_init(&m, OSC_SWY_ACC_KIND_ACCUMULATE, OSC_SWY_ACC_OP_SUM, t_int);
    msg_segment(&m, addr_of(0) - 4, 1);
    msg_bytes(&m, two, 4);
    expect_refused(&m, MPI_ERR_RMA_RANGE, "segment before the window");

    msg_init(&m, OSC_SWY_ACC_KIND_ACCUMULATE, OSC_SWY_ACC_OP_SUM, t_int);
    msg_segment(&m, UINT64_MAX - 3, 2);
    msg_bytes(&m, two, 8);
    expect_refused(&m, MPI_ERR_RMA_RANGE, "segment wrapping the address space");

    /* Operand lengths. */
    msg_init(&m, OSC_SWY_ACC_KIND_ACCUMULATE, OSC_SWY_ACC_OP_SUM, t_int);
    msg_segment(&m, addr_of(0), 2);
    msg_bytes(&m, two, 7);
    expect_refused(&m, MPI_ERR_OTHER, "operands one byte short");
    msg_bytes(&m, two, 2);
    expect_refused(&m, MPI_ERR_OTHER, "operands one byte long");

    msg_init(&m, OSC_SWY_ACC_KIND_ACCUMULATE, OSC_SWY_ACC_OP_NO_OP, t_int);
    msg_segment(&m, addr_of(0), 1);
    msg_bytes(&m, two, 4);
    expect_refused(&m, MPI_ERR_OTHER, "operands with MPI_NO_OP");

    /* compare_and_swap takes exactly one element. */
    msg_init(&m, OSC_SWY_ACC_KIND_CAS, OSC_SWY_ACC_OP_REPLACE, t_int);
    msg_segment(&m, addr_of(0), 2);
    msg_bytes(&m, two, 8);
    expect_refused(&m, MPI_ERR_OTHER, "compare_and_swap of 2 elements");

    /* Payload inline and as data at once. */
    msg_init(&m, OSC_SWY_ACC_KIND_ACCUMULATE, OSC_SWY_ACC_OP_SUM, t_int);
    msg_segment(&m, addr_of(0), 1);
    msg_bytes(&m, two, 4);
    {
        unsigned char wire[SWY_AM_MAX_HEADER];
        memcpy(wire, &m.req, sizeof(m.req));
        memcpy(wire + sizeof(m.req), m.payload, m.payload_length);
        unsigned char data[4] = {0};
        swy_am_recv_param_t param = {.field_mask = SWY_AM_RECV_PARAM_FIELD_FLAGS, .flags = 0};
        reset_window();
        g_replies = 0;
        ompi_osc_swy_acc_handle_request(&g_module, 1, wire, sizeof(m.req) + m.payload_length, data,
                                        sizeof(data), &param);
        osc_swy_acc_reply_t reply;
        memcpy(&reply, g_reply, sizeof(reply));
        CHECK(g_replies == 1 && reply.status == MPI_ERR_OTHER, "inline and data: status %d",
              reply.status);
        CHECK(window_untouched(), "inline and data: the window changed");
    }

    CHECK(g_acc.refused >= 20, "refused counter %llu", (unsigned long long)g_acc.refused);
    check_replies();
    MPI_Finalize();
    if (g_failures) {
        fprintf(stderr, "acc_target_test: %d failure(s)\n", g_failures);
        return 1;
    }
    printf("acc_target_test: passed\n");
    return 0;
}

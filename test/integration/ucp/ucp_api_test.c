/* The UCP compatibility library called directly, one process, an endpoint to itself: what the
 * MPI consumers rely on without exercising it on purpose.
 *   - field_mask: fields without their bit hold garbage and are never read;
 *   - callbacks never run inside the initiating call (NO_IMM_CMPL, old-style receives), and
 *     run from ucp_worker_progress;
 *   - request_init once per pooled object, request_size bytes of consumer space at the
 *     pointer, caller-provided request memory (UCP_OP_ATTR_FIELD_REQUEST);
 *   - 64-bit tags with masks, probe with and without removal, message receive;
 *   - contiguous, iov and generic datatypes across the eager/rendezvous boundary, with a
 *     generic pack that stops at element boundaries (as MPICH's does);
 *   - an address that is not a Switchyard one is refused with a status, not a crash;
 *     unsupported calls return a status.
 * Exit status 0 on success; every failure prints the line and exits 1. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ucp/api/ucp.h>

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fprintf(stderr, "\n");                                          \
            exit(1);                                                        \
        }                                                                   \
    } while (0)

typedef struct {
    uint64_t magic; /* set by request_init */
    int done;
    ucs_status_t status;
    ucp_tag_recv_info_t info;
} consumer_req_t;

enum { kMagic = 0x5eed };
static int g_inits;
static int g_in_call; /* 1 while inside an initiating call */

static void req_init(void* r) {
    consumer_req_t* c = r;
    c->magic = kMagic;
    c->done = 0;
    ++g_inits;
}

static void send_cb(void* r, ucs_status_t status, void* user_data) {
    CHECK(!g_in_call, "send callback ran inside the initiating call");
    consumer_req_t* c = r;
    c->done = 1;
    c->status = status;
    CHECK(user_data == (void*)0x1234, "user_data %p", user_data);
}

static void recv_cb(void* r, ucs_status_t status, const ucp_tag_recv_info_t* info,
                    void* user_data) {
    (void)user_data;
    CHECK(!g_in_call, "receive callback ran inside the initiating call");
    consumer_req_t* c = r;
    c->done = 1;
    c->status = status;
    c->info = *info;
}

static void old_recv_cb(void* r, ucs_status_t status, ucp_tag_recv_info_t* info) {
    recv_cb(r, status, info, NULL);
}

static ucs_status_t wait_req(ucp_worker_h w, void* r) {
    if (r == NULL) return UCS_OK;
    if (UCS_PTR_IS_ERR(r)) return UCS_PTR_STATUS(r);
    ucs_status_t s;
    while ((s = ucp_request_check_status(r)) == UCS_INPROGRESS)
        ucp_worker_progress(w);
    return s;
}

/* A generic datatype over int32 elements that, like MPICH, packs and unpacks whole elements
 * only: a pack stops short at an element edge; an unpack of a partial element fails. */
typedef struct {
    int32_t* buf;
    size_t count;
} dt_state_t;
static void* dt_start(void* ctx, const void* buf, size_t count) {
    (void)ctx;
    dt_state_t* s = malloc(sizeof(*s));
    s->buf = (int32_t*)buf;
    s->count = count;
    return s;
}
static void* dt_start_unpack(void* ctx, void* buf, size_t count) {
    return dt_start(ctx, buf, count);
}
static size_t dt_size(void* st) { return ((dt_state_t*)st)->count * 4; }
static size_t dt_pack(void* st, size_t off, void* dest, size_t max) {
    dt_state_t* s = st;
    size_t total = s->count * 4;
    CHECK(off % 4 == 0, "pack at offset %zu inside an element", off);
    size_t n = (max < total - off ? max : total - off) / 4 * 4;
    memcpy(dest, (char*)s->buf + off, n);
    return n;
}
static ucs_status_t dt_unpack(void* st, size_t off, const void* src, size_t len) {
    dt_state_t* s = st;
    if (off % 4 != 0 || len % 4 != 0) return UCS_ERR_MESSAGE_TRUNCATED;
    CHECK(off + len <= s->count * 4, "unpack past the end");
    memcpy((char*)s->buf + off, src, len);
    return UCS_OK;
}
static void dt_finish(void* st) { free(st); }

int main(void) {
    /* field_mask: garbage in every unmasked field. */
    ucp_params_t params;
    memset(&params, 0xA5, sizeof(params));
    params.field_mask =
        UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_REQUEST_SIZE | UCP_PARAM_FIELD_REQUEST_INIT;
    params.features = UCP_FEATURE_TAG;
    params.request_size = sizeof(consumer_req_t);
    params.request_init = req_init;
    ucp_config_t* config;
    CHECK(ucp_config_read(NULL, NULL, &config) == UCS_OK, "config");
    ucp_context_h ctx;
    CHECK(ucp_init(&params, config, &ctx) == UCS_OK, "ucp_init");
    ucp_config_release(config);
    unsigned major, minor, rel;
    ucp_get_version(&major, &minor, &rel);
    CHECK(major == 1 && minor == 13, "version %u.%u", major, minor);

    ucp_context_attr_t cattr;
    memset(&cattr, 0xA5, sizeof(cattr));
    cattr.field_mask = UCP_ATTR_FIELD_REQUEST_SIZE;
    CHECK(ucp_context_query(ctx, &cattr) == UCS_OK, "context query");
    CHECK(cattr.request_size > 0 && cattr.request_size % 16 == 0, "request size %zu",
          cattr.request_size);

    ucp_worker_params_t wp;
    memset(&wp, 0xA5, sizeof(wp));
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_MULTI;
    ucp_worker_h w;
    CHECK(ucp_worker_create(ctx, &wp, &w) == UCS_OK, "worker");
    ucp_worker_attr_t wattr = {.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE};
    CHECK(ucp_worker_query(w, &wattr) == UCS_OK && wattr.thread_mode == UCS_THREAD_MODE_MULTI,
          "thread mode %d", (int)wattr.thread_mode);

    ucp_address_t* addr;
    size_t addr_len;
    CHECK(ucp_worker_get_address(w, &addr, &addr_len) == UCS_OK, "address");

    /* An address that is not a Switchyard one is refused with a status. */
    uint8_t bogus[256];
    memset(bogus, 0x42, sizeof(bogus));
    ucp_ep_params_t ep_params;
    memset(&ep_params, 0xA5, sizeof(ep_params));
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address = (ucp_address_t*)bogus;
    ucp_ep_h ep;
    CHECK(ucp_ep_create(w, &ep_params, &ep) == UCS_ERR_INVALID_ADDR, "bogus address accepted");
    ep_params.address = addr;
    CHECK(ucp_ep_create(w, &ep_params, &ep) == UCS_OK, "ep to self");
    ucp_worker_release_address(w, addr);

    /* 64-bit tags: sender tags differing only in the top bit. */
    const ucp_tag_t hi = 0x8000000000000001ull, lo = 0x0000000000000001ull;
    const size_t sizes[] = {0, 1, 8, 4095, 4096, 4097, 65536, 300001, 2u << 20};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        const size_t n = sizes[i];
        uint8_t* sbuf = malloc(n + 1);
        uint8_t* rbuf = malloc(n + 16);
        for (size_t k = 0; k < n; ++k)
            sbuf[k] = (uint8_t)(k * 7 + i);
        memset(rbuf, 0xEE, n + 16);

        /* Receive first (expected), NO_IMM_CMPL, pooled request with callback. */
        ucp_request_param_t rp;
        memset(&rp, 0xA5, sizeof(rp));
        rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
        rp.cb.recv = recv_cb;
        g_in_call = 1;
        void* rr = ucp_tag_recv_nbx(w, rbuf, n + 16, hi, UINT64_MAX, &rp);
        g_in_call = 0;
        CHECK(rr != NULL && !UCS_PTR_IS_ERR(rr), "recv returned %p", rr);
        consumer_req_t* rc = rr;
        CHECK(rc->magic == kMagic, "request_init not run on the consumer's space");

        /* A send to the other tag first: must not match. */
        ucp_request_param_t sp;
        memset(&sp, 0xA5, sizeof(sp));
        sp.op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
        sp.cb.send = send_cb;
        sp.user_data = (void*)0x1234;
        g_in_call = 1;
        void* s1 = ucp_tag_send_nbx(ep, sbuf, n, lo, &sp);
        void* s2 = ucp_tag_send_nbx(ep, sbuf, n, hi, &sp);
        g_in_call = 0;
        CHECK(s1 != NULL && s2 != NULL && !UCS_PTR_IS_ERR(s1) && !UCS_PTR_IS_ERR(s2),
              "NO_IMM_CMPL send returned no request");
        CHECK(wait_req(w, s2) == UCS_OK && wait_req(w, rr) == UCS_OK, "send/recv %zu", n);
        CHECK(rc->done && rc->info.sender_tag == hi && rc->info.length == n,
              "recv info tag %llx length %zu", (unsigned long long)rc->info.sender_tag,
              rc->info.length);
        CHECK(memcmp(rbuf, sbuf, n) == 0, "payload %zu", n);
        CHECK(rbuf[n] == 0xEE, "byte past the message written");
        ucp_request_free(rr);
        ucp_request_free(s2);

        /* Probe (no removal, then removal) and message receive of the lo-tagged one, into
         * caller-provided request memory. */
        ucp_tag_recv_info_t pinfo;
        ucp_tag_message_h msg = NULL;
        while ((msg = ucp_tag_probe_nb(w, lo, UINT64_MAX, 0, &pinfo)) == NULL)
            ucp_worker_progress(w);
        CHECK(pinfo.length == n, "probe length %zu", pinfo.length);
        msg = ucp_tag_probe_nb(w, lo, UINT64_MAX, 1, &pinfo);
        CHECK(msg != NULL, "probe with removal");
        CHECK(ucp_tag_probe_nb(w, lo, UINT64_MAX, 0, &pinfo) == NULL, "removed message seen");
        uint8_t* mem = aligned_alloc(16, cattr.request_size + sizeof(consumer_req_t) + 16);
        memset(rbuf, 0xEE, n + 16);
        ucp_request_param_t mp = {.op_attr_mask = UCP_OP_ATTR_FIELD_REQUEST,
                                  .request = mem + cattr.request_size};
        void* mr = ucp_tag_msg_recv_nbx(w, rbuf, n + 16, msg, &mp);
        CHECK(!UCS_PTR_IS_ERR(mr), "msg recv");
        CHECK(mr == NULL || mr == mem + cattr.request_size, "request not the caller's memory");
        CHECK(wait_req(w, mr) == UCS_OK && memcmp(rbuf, sbuf, n) == 0, "mrecv payload %zu", n);
        CHECK(wait_req(w, s1) == UCS_OK, "first send");
        ucp_request_free(s1);
        free(mem);

        /* Old-style receive: always a request, callback from progress. */
        g_in_call = 1;
        void* s3 = ucp_tag_send_nb(ep, sbuf, n, ucp_dt_make_contig(1), 77, NULL);
        void* r3 = ucp_tag_recv_nb(w, rbuf, n, ucp_dt_make_contig(1), 77, UINT64_MAX, old_recv_cb);
        g_in_call = 0;
        CHECK(r3 != NULL && !UCS_PTR_IS_ERR(r3), "old recv must return a request");
        CHECK(wait_req(w, r3) == UCS_OK && ((consumer_req_t*)r3)->done, "old recv");
        CHECK(wait_req(w, s3) == UCS_OK, "old send");
        if (s3 != NULL) ucp_request_free(s3);
        ucp_request_free(r3);
        free(sbuf);
        free(rbuf);
    }

    /* Generic and iov datatypes, 1 000 003 int32 elements (rendezvous) and 3 (eager). */
    ucp_generic_dt_ops_t ops = {dt_start, dt_start_unpack, dt_size, dt_pack, dt_unpack, dt_finish};
    ucp_datatype_t gdt;
    CHECK(ucp_dt_create_generic(&ops, NULL, &gdt) == UCS_OK, "generic");
    const size_t counts[] = {3, 1000003};
    for (size_t i = 0; i < 2; ++i) {
        const size_t c = counts[i];
        int32_t* src = malloc(c * 4);
        int32_t* dst = calloc(c, 4);
        for (size_t k = 0; k < c; ++k)
            src[k] = (int32_t)(k * 2654435761u);
        ucp_request_param_t gp = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE, .datatype = gdt};
        void* gr = ucp_tag_recv_nbx(w, dst, c, 5, UINT64_MAX, &gp);
        /* Send as an iov of two uneven halves (not element-aligned). */
        ucp_dt_iov_t iov[2] = {{src, c * 4 / 2 + 1},
                               {(char*)src + c * 4 / 2 + 1, c * 4 - c * 4 / 2 - 1}};
        ucp_request_param_t ip = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE,
                                  .datatype = ucp_dt_make_iov()};
        void* gs = ucp_tag_send_nbx(ep, iov, 2, 5, &ip);
        CHECK(wait_req(w, gs) == UCS_OK && wait_req(w, gr) == UCS_OK, "generic %zu", c);
        CHECK(memcmp(src, dst, c * 4) == 0, "generic payload %zu", c);
        if (gs) ucp_request_free(gs);
        if (gr) ucp_request_free(gr);
        /* And the other way: generic send (packs stopping at element edges), contiguous
         * receive. */
        memset(dst, 0, c * 4);
        gr = ucp_tag_recv_nbx(w, dst, c * 4, 6, UINT64_MAX, NULL);
        gs = ucp_tag_send_nbx(ep, src, c, 6, &gp);
        CHECK(wait_req(w, gs) == UCS_OK && wait_req(w, gr) == UCS_OK, "generic send %zu", c);
        CHECK(memcmp(src, dst, c * 4) == 0, "generic send payload %zu", c);
        if (gs) ucp_request_free(gs);
        if (gr) ucp_request_free(gr);
        free(src);
        free(dst);
    }
    ucp_dt_destroy(gdt);

    /* Cancel an unmatched receive: completes with UCS_ERR_CANCELED from progress. */
    char cbuf[8];
    void* cr = ucp_tag_recv_nbx(w, cbuf, sizeof(cbuf), 999, UINT64_MAX, NULL);
    ucp_request_cancel(w, cr);
    CHECK(wait_req(w, cr) == UCS_ERR_CANCELED, "cancel");
    ucp_request_free(cr);

    /* Unsupported: a sockaddr endpoint and ep modify give a status. */
    ucp_ep_params_t sp2 = {.field_mask = UCP_EP_PARAM_FIELD_FLAGS,
                           .flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER};
    ucp_ep_h ep2;
    CHECK(ucp_ep_create(w, &sp2, &ep2) == UCS_ERR_UNSUPPORTED, "sockaddr ep");
    CHECK(UCS_PTR_STATUS(ucp_ep_modify_nb(ep, &sp2)) == UCS_ERR_UNSUPPORTED, "ep modify");
    CHECK(strlen(ucs_status_string(UCS_ERR_CANCELED)) > 0, "status string");

    CHECK(wait_req(w, ucp_ep_close_nb(ep, UCP_EP_CLOSE_MODE_FLUSH)) == UCS_OK, "close");
    CHECK(g_inits > 0 && g_inits < 64, "request_init ran %d times (pooled objects)", g_inits);
    ucp_worker_destroy(w);
    ucp_cleanup(ctx);
    printf("PASS ucp_api_test (request_init %d times)\n", g_inits);
    return 0;
}

/* The one-sided half of the UCP library through the UCP API itself, between two processes
 * (fork; addresses and keys exchanged over a socketpair): ucp_mem_map in each mode (allocated,
 * registered, FIXED, zero-length, unmasked garbage fields ignored, SWY_UCP_MEM_MAP=0), keys
 * (pack/unpack, a foreign key refused, ucp_rkey_ptr), put/get in every call form across sizes
 * (each byte checked, guard bytes untouched), atomics ADD/AND/OR/XOR/SWAP/CSWAP at 32 and 64
 * bits through ucp_atomic_op_nbx, ucp_atomic_post and ucp_atomic_fetch_nb on allocated and
 * registered memory (results checked step by step), and active messages of both APIs (contig,
 * a 2-entry iov, eager and rendezvous sizes, data kept and released, ucp_am_recv_data_nbx). Exit status 0 = pass.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

static int me;
static int failures;

#define CHECK(cond, ...)                                                 \
    do {                                                                 \
        if (!(cond)) {                                                   \
            fprintf(stderr, "rank %d: %s:%d: ", me, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                \
            fputc('\n', stderr);                                         \
            ++failures;                                                  \
        }                                                                \
    } while (0)

static ucp_worker_h worker;
static ucp_ep_h ep;
static int sock;

/* ---- out-of-band exchange and synchronisation over the socketpair ---- */

static void xchg(const void* out, size_t len, void** in, size_t* in_len) {
    uint64_t l = len;
    if (write(sock, &l, sizeof l) != sizeof l || write(sock, out, len) != (ssize_t)len) exit(3);
    size_t got = 0;
    while (got < sizeof l) {
        ssize_t r = read(sock, (char*)&l + got, sizeof l - got);
        if (r > 0)
            got += (size_t)r;
        else if (r == 0 || errno != EAGAIN)
            exit(3);
        else
            ucp_worker_progress(worker);
    }
    *in = malloc(l);
    *in_len = l;
    got = 0;
    while (got < l) {
        ssize_t r = read(sock, (char*)*in + got, l - got);
        if (r > 0)
            got += (size_t)r;
        else if (r == 0 || errno != EAGAIN)
            exit(3);
        else
            ucp_worker_progress(worker);
    }
}

/* Both processes progress until both arrived. */
static void barrier(void) {
    char c = 'b';
    void* in;
    size_t n;
    xchg(&c, 1, &in, &n);
    free(in);
}

static ucs_status_t wait_req(ucs_status_ptr_t r) {
    if (r == NULL) return UCS_OK;
    if (UCS_PTR_IS_ERR(r)) return UCS_PTR_STATUS(r);
    ucs_status_t s;
    while ((s = ucp_request_check_status(r)) == UCS_INPROGRESS)
        ucp_worker_progress(worker);
    ucp_request_free(r);
    return s;
}

static void flush(void) {
    ucs_status_t s = wait_req(ucp_ep_flush_nb(ep, 0, NULL));
    CHECK(s == UCS_OK, "flush: %s", ucs_status_string(s));
}

static unsigned char pattern(int rank, size_t size, size_t i) {
    return (unsigned char)(1 + (rank * 97 + size * 13 + i * 7 + (i >> 9)) % 251);
}

/* ---- memory ---- */

enum { kRegion = (1 << 20) + 4096 };
static const size_t kSizes[] = {1, 8, 63, 4095, 4096, 4097, 65536, 65537, 1 << 20};
enum { kNumSizes = sizeof kSizes / sizeof kSizes[0] };

typedef struct {
    ucp_mem_h memh;
    unsigned char* base;
    ucp_rkey_h rkey; /* the peer's region of the same kind */
    uint64_t remote; /* its address */
} region_t;

static void map_region(ucp_context_h ctx, region_t* r, int allocate) {
    ucp_mem_map_params_t p;
    memset(&p, 0xA5, sizeof p); /* garbage in every unmasked field */
    p.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    p.length = kRegion;
    p.flags = UCP_MEM_MAP_ALLOCATE;
    if (!allocate) {
        r->base = aligned_alloc(4096, kRegion);
        memset(r->base, 0, kRegion);
        p.field_mask |= UCP_MEM_MAP_PARAM_FIELD_ADDRESS;
        p.address = r->base;
        p.flags = 0;
    }
    ucs_status_t s = ucp_mem_map(ctx, &p, &r->memh);
    CHECK(s == UCS_OK, "ucp_mem_map(%s): %s", allocate ? "allocate" : "register",
          ucs_status_string(s));
    ucp_mem_attr_t a = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH |
                                      UCP_MEM_ATTR_FIELD_MEM_TYPE};
    s = ucp_mem_query(r->memh, &a);
    CHECK(s == UCS_OK && a.length >= kRegion && a.mem_type == UCS_MEMORY_TYPE_HOST,
          "ucp_mem_query");
    CHECK(allocate || a.address == r->base, "registered memory moved");
    r->base = a.address;
    if (allocate) {
        for (size_t i = 0; i < kRegion; ++i)
            CHECK(r->base[i] == 0, "allocated memory not zero");
    }
    void* packed;
    size_t packed_len;
    s = ucp_rkey_pack(ctx, r->memh, &packed, &packed_len);
    CHECK(s == UCS_OK, "ucp_rkey_pack: %s", ucs_status_string(s));
    struct {
        uint64_t address;
        char key[4096];
    } out;
    out.address = (uint64_t)(uintptr_t)r->base;
    memcpy(out.key, packed, packed_len);
    ucp_rkey_buffer_release(packed);
    void* in;
    size_t in_len;
    xchg(&out, sizeof(uint64_t) + packed_len, &in, &in_len);
    memcpy(&r->remote, in, sizeof(uint64_t));
    s = ucp_ep_rkey_unpack(ep, (char*)in + sizeof(uint64_t), &r->rkey);
    CHECK(s == UCS_OK, "ucp_ep_rkey_unpack: %s", ucs_status_string(s));
    free(in);
}

/* FIXED at a page-aligned address found free; zero length; a foreign key refused. */
static void map_modes(ucp_context_h ctx) {
    void* hole = mmap(NULL, 1 << 16, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(hole, 1 << 16);
    ucp_mem_map_params_t p = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                                            UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                                            UCP_MEM_MAP_PARAM_FIELD_FLAGS,
                              .address = hole,
                              .length = 1 << 16,
                              .flags = UCP_MEM_MAP_ALLOCATE | UCP_MEM_MAP_FIXED};
    ucp_mem_h memh;
    ucs_status_t s = ucp_mem_map(ctx, &p, &memh);
    CHECK(s == UCS_OK, "ucp_mem_map(FIXED): %s", ucs_status_string(s));
    if (s == UCS_OK) {
        ucp_mem_attr_t a = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS};
        ucp_mem_query(memh, &a);
        CHECK(a.address == hole, "FIXED mapping at %p, asked %p", a.address, hole);
        ((char*)hole)[100] = 1; /* it is there and writable */
        ucp_mem_advise_params_t adv = {.field_mask = UCP_MEM_ADVISE_PARAM_FIELD_ADDRESS |
                                                     UCP_MEM_ADVISE_PARAM_FIELD_LENGTH |
                                                     UCP_MEM_ADVISE_PARAM_FIELD_ADVICE,
                                       .address = hole,
                                       .length = 4096,
                                       .advice = UCP_MADV_WILLNEED};
        CHECK(ucp_mem_advise(ctx, memh, &adv) == UCS_OK, "ucp_mem_advise");
        adv.length = 1 << 20;
        CHECK(ucp_mem_advise(ctx, memh, &adv) == UCS_ERR_INVALID_PARAM,
              "ucp_mem_advise outside the mapping accepted");
        CHECK(ucp_mem_unmap(ctx, memh) == UCS_OK, "ucp_mem_unmap(FIXED)");
    }
    p.flags = UCP_MEM_MAP_FIXED; /* FIXED without ALLOCATE: UCP's "error" */
    CHECK(ucp_mem_map(ctx, &p, &memh) == UCS_ERR_INVALID_PARAM, "FIXED without ALLOCATE");

    /* Zero length: a handle and a key that serve only zero-byte operations. */
    p.flags = 0;
    p.length = 0;
    s = ucp_mem_map(ctx, &p, &memh);
    CHECK(s == UCS_OK, "zero-length ucp_mem_map: %s", ucs_status_string(s));
    void* packed;
    size_t len;
    CHECK(ucp_rkey_pack(ctx, memh, &packed, &len) == UCS_OK, "zero-length pack");
    void* in;
    size_t in_len;
    xchg(packed, len, &in, &in_len);
    ucp_rkey_buffer_release(packed);
    ucp_rkey_h zkey;
    CHECK(ucp_ep_rkey_unpack(ep, in, &zkey) == UCS_OK, "zero-length unpack");
    free(in);
    char c = 0;
    CHECK(wait_req(ucp_put_nb(ep, &c, 0, 0, zkey, NULL)) == UCS_OK, "zero-byte put");
    CHECK(ucp_put_nbi(ep, &c, 1, 0, zkey) == UCS_ERR_INVALID_PARAM, "1-byte put on empty key");
    ucp_rkey_destroy(zkey);
    barrier();
    CHECK(ucp_mem_unmap(ctx, memh) == UCS_OK, "zero-length unmap");

    /* A key of real UCX (or any garbage) is refused, not dereferenced. */
    unsigned char garbage[256];
    memset(garbage, 0xAB, sizeof garbage);
    ucp_rkey_h bad;
    CHECK(ucp_ep_rkey_unpack(ep, garbage, &bad) == UCS_ERR_INVALID_PARAM, "garbage key accepted");
}

/* ---- put / get ---- */

static int cb_count;
static void send_cb(void* req, ucs_status_t status) {
    (void)req;
    CHECK(status == UCS_OK, "callback status %s", ucs_status_string(status));
    ++cb_count;
}
static void send_nbx_cb(void* req, ucs_status_t status, void* user) {
    (void)req;
    CHECK(status == UCS_OK && user == &cb_count, "nbx callback");
    ++cb_count;
}

/* Writes pattern(me) of every size to the peer's region (one call form per size), then reads
 * back what the peer wrote here and what this rank wrote there. */
static void put_get(region_t* r, const char* what) {
    const int peer = 1 - me;
    unsigned char* src = malloc(1 << 20);
    unsigned char* dst = malloc((1 << 20) + 1);
    for (int k = 0; k < kNumSizes; ++k) {
        const size_t size = kSizes[k];
        for (size_t i = 0; i < size; ++i)
            src[i] = pattern(me, size, i);
        memset(r->base, 0xEE, size + 1);
        barrier();
        ucs_status_t s;
        switch (k % 4) {
            case 0: s = wait_req(ucp_put_nb(ep, src, size, r->remote, r->rkey, send_cb)); break;
            case 1: {
                ucp_request_param_t p = {
                    .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
                    .cb.send = send_nbx_cb,
                    .user_data = &cb_count};
                s = wait_req(ucp_put_nbx(ep, src, size, r->remote, r->rkey, &p));
                break;
            }
            case 2: s = ucp_put(ep, src, size, r->remote, r->rkey); break;
            default:
                s = ucp_put_nbi(ep, src, size, r->remote, r->rkey);
                if (s == UCS_INPROGRESS) s = UCS_OK;
        }
        CHECK(s == UCS_OK, "%s put of %zu: %s", what, size, ucs_status_string(s));
        flush();
        barrier();
        size_t bad = 0;
        for (size_t i = 0; i < size; ++i)
            bad += r->base[i] != pattern(peer, size, i);
        CHECK(bad == 0, "%s put of %zu bytes: %zu wrong", what, size, bad);
        CHECK(r->base[size] == 0xEE, "%s put of %zu wrote past its end", what, size);
        memset(dst, 0xEE, size + 1);
        switch (k % 3) {
            case 0: s = wait_req(ucp_get_nb(ep, dst, size, r->remote, r->rkey, send_cb)); break;
            case 1: {
                ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL};
                ucs_status_ptr_t q = ucp_get_nbx(ep, dst, size, r->remote, r->rkey, &p);
                CHECK(q != NULL && !UCS_PTR_IS_ERR(q), "NO_IMM_CMPL get returned no request");
                s = wait_req(q);
                break;
            }
            default:
                s = ucp_get_nbi(ep, dst, size, r->remote, r->rkey);
                if (s == UCS_INPROGRESS || s == UCS_OK) {
                    flush();
                    s = UCS_OK;
                }
        }
        CHECK(s == UCS_OK, "%s get of %zu: %s", what, size, ucs_status_string(s));
        bad = 0;
        for (size_t i = 0; i < size; ++i)
            bad += dst[i] != pattern(me, size, i);
        CHECK(bad == 0, "%s get of %zu bytes: %zu wrong", what, size, bad);
        CHECK(dst[size] == 0xEE, "%s get of %zu wrote past its end", what, size);
        barrier();
    }
    /* Outside the peer's range: refused before anything moves. */
    CHECK(ucp_put_nbi(ep, src, 16, r->remote + kRegion - 8, r->rkey) != UCS_OK,
          "%s put across the end accepted", what);
    free(src);
    free(dst);
}

/* ---- atomics ---- */

static uint64_t op64(ucp_atomic_op_t op, uint64_t operand, uint64_t* reply, uint64_t remote,
                     ucp_rkey_h rkey, size_t size) {
    uint64_t old = reply ? *reply : 0;
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE,
                             .datatype = ucp_dt_make_contig(size)};
    if (reply != NULL) {
        p.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        p.reply_buffer = &old;
    }
    uint32_t operand32 = (uint32_t)operand;
    const void* buf = size == 4 ? (const void*)&operand32 : (const void*)&operand;
    ucs_status_t s = wait_req(ucp_atomic_op_nbx(ep, op, buf, 1, remote, rkey, &p));
    CHECK(s == UCS_OK, "atomic op %d size %zu: %s", (int)op, size, ucs_status_string(s));
    if (size == 4) old &= 0xffffffffu;
    return old;
}

static void atomics(region_t* r, const char* what) {
    const int peer = 1 - me;
    memset(r->base, 0, 256); /* the words the peer works on start at 0 */
    barrier();
    for (size_t size = 4; size <= 8; size += 4) {
        /* Each rank owns the word at offset 64*rank+size of the peer's region. */
        const uint64_t addr = r->remote + 64 * (uint64_t)me + size * 2;
        const uint64_t mask = size == 4 ? 0xffffffffu : ~0ull;
        const uint64_t big = size == 4 ? 0x80000001u : 0x8000000100000003ull;
        uint64_t reply = big;
        uint64_t v = op64(UCP_ATOMIC_OP_SWAP, big, &reply, addr, r->rkey, size);
        CHECK(v == 0, "%s swap%zu fetched %#llx", what, size * 8, (unsigned long long)v);
        v = op64(UCP_ATOMIC_OP_ADD, 5, &reply, addr, r->rkey, size);
        CHECK(v == big, "%s fadd%zu fetched %#llx", what, size * 8, (unsigned long long)v);
        op64(UCP_ATOMIC_OP_ADD, 10, NULL, addr, r->rkey, size); /* posted */
        v = op64(UCP_ATOMIC_OP_AND, 0xff0f, &reply, addr, r->rkey, size);
        CHECK(v == ((big + 15) & mask), "%s fand%zu fetched %#llx", what, size * 8,
              (unsigned long long)v);
        v = op64(UCP_ATOMIC_OP_OR, 0x30000, &reply, addr, r->rkey, size);
        const uint64_t after_and = (big + 15) & 0xff0f;
        CHECK(v == after_and, "%s for%zu fetched %#llx", what, size * 8, (unsigned long long)v);
        v = op64(UCP_ATOMIC_OP_XOR, 0x11, &reply, addr, r->rkey, size);
        CHECK(v == (after_and | 0x30000), "%s fxor%zu fetched %#llx", what, size * 8,
              (unsigned long long)v);
        const uint64_t cur = (after_and | 0x30000) ^ 0x11;
        reply = 77; /* CSWAP: reply in = new value; compare = operand */
        v = op64(UCP_ATOMIC_OP_CSWAP, cur + 1, &reply, addr, r->rkey, size); /* no match */
        CHECK(v == cur, "%s cswap%zu (miss) fetched %#llx", what, size * 8, (unsigned long long)v);
        reply = mask; /* all ones: the upper half of 64-bit words is written too */
        v = op64(UCP_ATOMIC_OP_CSWAP, cur, &reply, addr, r->rkey, size);
        CHECK(v == cur, "%s cswap%zu (hit) fetched %#llx", what, size * 8, (unsigned long long)v);
        /* The compatibility calls on the same word. */
        CHECK(ucp_atomic_post(ep, UCP_ATOMIC_POST_OP_XOR, 0xf0, size, addr, r->rkey) == UCS_OK,
              "ucp_atomic_post");
        uint64_t result = 0;
        ucs_status_t s = wait_req(ucp_atomic_fetch_nb(ep, UCP_ATOMIC_FETCH_OP_FADD, 1, &result,
                                                      size, addr, r->rkey, send_cb));
        if (size == 4) result &= mask;
        CHECK(s == UCS_OK && result == (mask ^ 0xf0), "%s ucp_atomic_fetch_nb%zu: %#llx", what,
              size * 8, (unsigned long long)result);
        result = mask ^ 0xf0; /* CSWAP through the old call: *result is the value swapped in */
        uint64_t swap_in = 12345;
        memcpy(&result, &swap_in, size);
        s = wait_req(ucp_atomic_fetch_nb(ep, UCP_ATOMIC_FETCH_OP_CSWAP, (mask ^ 0xf0) + 1, &result,
                                         size, addr, r->rkey, NULL));
        if (size == 4) result &= mask;
        CHECK(s == UCS_OK && result == (((mask ^ 0xf0) + 1) & mask), "%s fetch_nb cswap%zu: %#llx",
              what, size * 8, (unsigned long long)result);
        flush();
        barrier();
        /* The owner sees the final value in its own memory. */
        uint64_t mine = 0;
        memcpy(&mine, r->base + 64 * peer + size * 2, size);
        CHECK(mine == 12345, "%s word%zu written by the peer holds %#llx", what, size * 8,
              (unsigned long long)mine);
        barrier();
    }
    uint32_t operand = 1;
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE,
                             .datatype = ucp_dt_make_contig(2)};
    CHECK(UCS_PTR_IS_ERR(
              ucp_atomic_op_nbx(ep, UCP_ATOMIC_OP_ADD, &operand, 1, r->remote, r->rkey, &p)),
          "2-byte atomic accepted");
}

/* ---- active messages ---- */

enum { kAmId = 7, kAmMessages = 4 };
static int am_received;
static void* am_kept;
static size_t am_kept_len;

typedef struct {
    uint32_t seq;
    uint32_t length; /* bytes of pattern after the header */
} am_head_t;

static ucs_status_t am_cb(void* arg, void* data, size_t length, ucp_ep_h reply_ep, unsigned flags) {
    (void)arg;
    (void)reply_ep;
    am_head_t h;
    CHECK(length >= sizeof h, "AM of %zu bytes", length);
    memcpy(&h, data, sizeof h);
    CHECK(h.length + sizeof h == length, "AM %u: %zu bytes, header says %u", h.seq, length,
          h.length);
    const unsigned char* p = (const unsigned char*)data + sizeof h;
    size_t bad = 0;
    for (size_t i = 0; i < h.length; ++i)
        bad += p[i] != pattern(1 - me, h.length, i);
    CHECK(bad == 0, "AM %u: %zu bytes wrong", h.seq, bad);
    ++am_received;
    if (h.seq == 1 && (flags & UCP_CB_PARAM_FLAG_DATA)) { /* keep the large one */
        am_kept = data;
        am_kept_len = length;
        return UCS_INPROGRESS;
    }
    return UCS_OK;
}

static void active_messages(void) {
    CHECK(ucp_worker_set_am_handler(worker, kAmId, am_cb, NULL, UCP_AM_FLAG_WHOLE_MSG) == UCS_OK,
          "set_am_handler");
    barrier();
    static const uint32_t lengths[kAmMessages] = {100, 1 << 20, 200000, 0};
    for (uint32_t k = 0; k < kAmMessages; ++k) {
        const uint32_t n = lengths[k];
        am_head_t h = {k, n};
        unsigned char* payload = malloc(n + sizeof h);
        for (size_t i = 0; i < n; ++i)
            payload[sizeof h + i] = pattern(me, n, i);
        memcpy(payload, &h, sizeof h);
        ucs_status_ptr_t r;
        if (k == 2) { /* a 2-entry iov: header, then data (as MPICH sends) */
            ucp_dt_iov_t iov[2] = {{&h, sizeof h}, {payload + sizeof h, n}};
            r = ucp_am_send_nb(ep, kAmId, iov, 2, ucp_dt_make_iov(), send_cb, 0);
        } else {
            r = ucp_am_send_nb(ep, kAmId, payload, n + sizeof h, ucp_dt_make_contig(1), send_cb, 0);
        }
        CHECK(wait_req(r) == UCS_OK, "am_send_nb %u", k);
        free(payload);
    }
    while (am_received < kAmMessages)
        ucp_worker_progress(worker);
    if (am_kept != NULL) { /* still intact after the handler returned */
        am_head_t h;
        memcpy(&h, am_kept, sizeof h);
        CHECK(h.seq == 1 && am_kept_len == (1u << 20) + sizeof h, "kept AM changed");
        ucp_am_data_release(worker, am_kept);
    }
    barrier();
    CHECK(ucp_worker_set_am_handler(worker, kAmId, NULL, NULL, 0) == UCS_OK, "clear handler");
}

/* ---- active messages, new API (ucp_am_send_nbx, ucp_worker_set_am_recv_handler) ---- */

enum { kAmNbxId = 9, kAmNbxMessages = 3 };
static int nbx_received;

/* One rendezvous message being received (several may be in flight: a completion is delivered
 * from ucp_worker_progress, possibly after the next message's handler ran). */
typedef struct {
    uint32_t seq;
    size_t length;
    unsigned char data[];
} nbx_rndv_t;

static void nbx_check(uint32_t seq, const unsigned char* p, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i)
        bad += p[i] != pattern(1 - me, n, i);
    CHECK(bad == 0, "nbx AM %u: %zu of %zu bytes wrong", seq, bad, n);
}

static void nbx_rndv_done(void* req, ucs_status_t status, size_t length, void* user) {
    (void)req;
    nbx_rndv_t* m = user;
    CHECK(status == UCS_OK && length == m->length, "recv_data_nbx: %s, %zu bytes",
          ucs_status_string(status), length);
    nbx_check(m->seq, m->data, m->length);
    free(m);
    ++nbx_received;
}

static ucs_status_t nbx_cb(void* arg, const void* header, size_t header_length, void* data,
                           size_t length, const ucp_am_recv_param_t* param) {
    CHECK(arg == &nbx_received && header_length == sizeof(uint32_t), "nbx handler arguments");
    uint32_t seq;
    memcpy(&seq, header, sizeof seq);
    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        nbx_check(seq, data, length);
        ++nbx_received;
        return UCS_OK;
    }
    nbx_rndv_t* m = malloc(sizeof(*m) + length);
    m->seq = seq;
    m->length = length;
    ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
        .cb.recv_am = nbx_rndv_done,
        .user_data = m};
    ucs_status_ptr_t r = ucp_am_recv_data_nbx(worker, data, m->data, length, &p);
    CHECK(!UCS_PTR_IS_ERR(r), "ucp_am_recv_data_nbx failed");
    if (r == NULL) {
        nbx_rndv_done(NULL, UCS_OK, length, m);
    } else if (!UCS_PTR_IS_ERR(r)) {
        ucp_request_free(r); /* its callback still runs */
    }
    return UCS_OK;
}

static void active_messages_nbx(void) {
    ucp_am_handler_param_t hp = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                      UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS,
        .id = kAmNbxId,
        .flags = UCP_AM_FLAG_WHOLE_MSG,
        .cb = nbx_cb,
        .arg = &nbx_received};
    CHECK(ucp_worker_set_am_recv_handler(worker, &hp) == UCS_OK, "set_am_recv_handler");
    barrier();
    static const size_t lengths[kAmNbxMessages] = {64, 1 << 20, 300000};
    for (uint32_t k = 0; k < kAmNbxMessages; ++k) {
        const size_t n = lengths[k];
        unsigned char* payload = malloc(n);
        for (size_t i = 0; i < n; ++i)
            payload[i] = pattern(me, n, i);
        ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                                 UCP_OP_ATTR_FIELD_USER_DATA |
                                                 UCP_OP_ATTR_FIELD_FLAGS,
                                 .flags = k == 2 ? UCP_AM_SEND_FLAG_RNDV : 0,
                                 .cb.send = send_nbx_cb,
                                 .user_data = &cb_count};
        CHECK(wait_req(ucp_am_send_nbx(ep, kAmNbxId, &k, sizeof k, payload, n, &p)) == UCS_OK,
              "am_send_nbx %u", k);
        free(payload);
    }
    while (nbx_received < kAmNbxMessages)
        ucp_worker_progress(worker);
    barrier();
}

/* ---- main ---- */

static ucp_context_h init_context(void) {
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                           .features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 |
                                       UCP_FEATURE_AM | UCP_FEATURE_TAG};
    ucp_context_h ctx;
    if (ucp_init(&params, NULL, &ctx) != UCS_OK) exit(4);
    return ctx;
}

static int run(void) {
    ucp_context_h ctx = init_context();
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SINGLE};
    if (ucp_worker_create(ctx, &wp, &worker) != UCS_OK) return 4;
    ucp_address_t* addr;
    size_t addr_len;
    if (ucp_worker_get_address(worker, &addr, &addr_len) != UCS_OK) return 4;
    void* peer_addr;
    size_t peer_len;
    xchg(addr, addr_len, &peer_addr, &peer_len);
    ucp_worker_release_address(worker, addr);
    ucp_ep_params_t ep_params = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
                                 .address = peer_addr};
    if (ucp_ep_create(worker, &ep_params, &ep) != UCS_OK) return 4;
    free(peer_addr);

    region_t alloc_region = {0}, reg_region = {0};
    map_region(ctx, &alloc_region, 1);
    map_region(ctx, &reg_region, 0);
    map_modes(ctx);

    /* Same host: allocated memory is mapped here, registered memory is not; over tcp
       (UCP_RMA_TEST_TCP=1, with SWY_TLS=tcp,self) neither is. */
    const int tcp = getenv("UCP_RMA_TEST_TCP") != NULL;
    void* direct = NULL;
    ucs_status_t s = ucp_rkey_ptr(alloc_region.rkey, alloc_region.remote + 8, &direct);
    CHECK(tcp ? s == UCS_ERR_UNREACHABLE : (s == UCS_OK && direct != NULL),
          "ucp_rkey_ptr on allocated memory: %s", ucs_status_string(s));
    if (s == UCS_OK) { /* the peer's zero-filled memory, through the pointer */
        CHECK(*(volatile unsigned char*)direct == 0, "ucp_rkey_ptr memory not the peer's");
    }
    s = ucp_rkey_ptr(reg_region.rkey, reg_region.remote, &direct);
    CHECK(s == UCS_ERR_UNREACHABLE, "ucp_rkey_ptr on registered memory: %s", ucs_status_string(s));

    put_get(&alloc_region, "allocated");
    put_get(&reg_region, "registered");
    atomics(&alloc_region, "allocated");
    atomics(&reg_region, "registered");
    active_messages();
    active_messages_nbx();

    /* SWY_UCP_MEM_MAP=0: every mapping refused as MPICH expects to fall back. */
    setenv("SWY_UCP_MEM_MAP", "0", 1);
    ucp_context_h off = init_context();
    ucp_mem_map_params_t p = {
        .field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS,
        .length = 4096,
        .flags = UCP_MEM_MAP_ALLOCATE};
    ucp_mem_h memh;
    CHECK(ucp_mem_map(off, &p, &memh) == UCS_ERR_UNSUPPORTED, "SWY_UCP_MEM_MAP=0 mapped");
    ucp_cleanup(off);
    unsetenv("SWY_UCP_MEM_MAP");

    barrier();
    ucp_rkey_destroy(alloc_region.rkey);
    ucp_rkey_destroy(reg_region.rkey);
    flush();
    barrier();
    wait_req(ucp_ep_close_nb(ep, UCP_EP_CLOSE_MODE_FLUSH));
    CHECK(ucp_mem_unmap(ctx, alloc_region.memh) == UCS_OK, "unmap allocated");
    CHECK(ucp_mem_unmap(ctx, reg_region.memh) == UCS_OK, "unmap registered");
    free(reg_region.base);
    ucp_worker_destroy(worker);
    ucp_cleanup(ctx);
    CHECK(cb_count > 0, "no completion callback ran");
    return failures == 0 ? 0 : 1;
}

int main(void) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 2;
    const pid_t child = fork();
    if (child < 0) return 2;
    me = child == 0 ? 1 : 0;
    sock = sv[me];
    close(sv[1 - me]);
    fcntl(sock, F_SETFL, O_NONBLOCK);
    const int rc = run();
    if (me == 1) _exit(rc);
    int status = 0;
    waitpid(child, &status, 0);
    const int child_rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    if (rc == 0 && child_rc == 0) printf("ucp_rma_test: OK\n");
    return rc != 0 ? rc : child_rc;
}

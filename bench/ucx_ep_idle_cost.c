/* The peer of swy_ep_idle_cost (ep_idle_cost.cpp): the idle cost of ucp_ep_create and the
 * time to wire up 1 024 endpoints, measured the same way (N endpoints from one worker to one
 * worker in another process; memory, descriptors and mappings per endpoint before any
 * message; then 1 024 created and a first message answered on each).
 *
 *   UCX_TLS=sm,self ucx_ep_idle_cost N      (or UCX_TLS=tcp,self)
 *
 * Built only where libucx-dev is installed; a benchmark, not part of CI. */
#include <dirent.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#define FIRST_TAG 0x1000ull
#define DONE_TAG 0x2000ull
#define QUIT_TAG 0x3000ull

static ucp_context_h context;
static ucp_worker_h worker;

static void fail(const char* what, ucs_status_t st) {
    fprintf(stderr, "ucx_ep_idle_cost: %s: %s\n", what, ucs_status_string(st));
    exit(1);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void open_worker(void) {
    ucp_params_t p = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_TAG};
    ucs_status_t st = ucp_init(&p, NULL, &context);
    if (st != UCS_OK) fail("ucp_init", st);
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SINGLE};
    st = ucp_worker_create(context, &wp, &worker);
    if (st != UCS_OK) fail("ucp_worker_create", st);
}

static ucs_status_t wait_req(void* req) {
    if (req == NULL) return UCS_OK;
    if (UCS_PTR_IS_ERR(req)) return UCS_PTR_STATUS(req);
    ucs_status_t st;
    while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS)
        ucp_worker_progress(worker);
    ucp_request_free(req);
    return st;
}

static ucp_ep_h connect_to(const void* addr) {
    ucp_ep_params_t p = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
                         .address = (const ucp_address_t*)addr};
    ucp_ep_h ep = NULL;
    ucs_status_t st = ucp_ep_create(worker, &p, &ep);
    if (st != UCS_OK) fail("ucp_ep_create", st);
    return ep;
}

static void close_ep(ucp_ep_h ep) {
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                             .flags = UCP_EP_CLOSE_FLAG_FORCE};
    (void)wait_req(ucp_ep_close_nbx(ep, &p));
}

static void* send_tag(ucp_ep_h ep, const void* buf, size_t len, uint64_t tag) {
    ucp_request_param_t p = {.op_attr_mask = 0};
    return ucp_tag_send_nbx(ep, buf, len, tag, &p);
}

static ucp_tag_t recv_tag(void* buf, size_t len, uint64_t tag, uint64_t mask) {
    ucp_tag_recv_info_t info = {0};
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_RECV_INFO,
                             .recv_info.tag_info = &info};
    void* req = ucp_tag_recv_nbx(worker, buf, len, tag, mask, &p);
    if (UCS_PTR_IS_ERR(req)) fail("recv", UCS_PTR_STATUS(req));
    if (req != NULL) { /* recv_info is filled only on immediate completion: ask the request */
        while (ucp_tag_recv_request_test(req, &info) == UCS_INPROGRESS)
            ucp_worker_progress(worker);
        ucp_request_free(req);
    }
    return info.sender_tag;
}

struct usage {
    long rss_kib;
    size_t heap;
    int fds, maps;
};

static struct usage usage_now(void) {
    struct usage u = {0, 0, -3, 0};
    char line[512];
    FILE* f = fopen("/proc/self/status", "r");
    if (f != NULL) {
        while (fgets(line, sizeof(line), f) != NULL)
            if (sscanf(line, "VmRSS: %ld", &u.rss_kib) == 1) break;
        fclose(f);
    }
    f = fopen("/proc/self/maps", "r");
    if (f != NULL) {
        while (fgets(line, sizeof(line), f) != NULL)
            ++u.maps;
        fclose(f);
    }
    DIR* d = opendir("/proc/self/fd");
    if (d != NULL) {
        while (readdir(d) != NULL)
            ++u.fds;
        closedir(d);
    }
    u.heap = mallinfo2().uordblks;
    return u;
}

static void exchange_address(int wfd, int rfd, void** remote, size_t* remote_len) {
    ucp_address_t* addr = NULL;
    size_t len = 0;
    ucs_status_t st = ucp_worker_get_address(worker, &addr, &len);
    if (st != UCS_OK) fail("ucp_worker_get_address", st);
    uint32_t l32 = (uint32_t)len, r32 = 0;
    if (write(wfd, &l32, 4) != 4 || write(wfd, addr, len) != (ssize_t)len) exit(1);
    ucp_worker_release_address(worker, addr);
    if (read(rfd, &r32, 4) != 4) exit(1);
    *remote = malloc(r32);
    *remote_len = r32;
    if (read(rfd, *remote, r32) != (ssize_t)r32) exit(1);
}

static void target(int wfd, int rfd) {
    open_worker();
    void* origin = NULL;
    size_t olen = 0;
    exchange_address(wfd, rfd, &origin, &olen);
    ucp_ep_h back = connect_to(origin);
    for (;;) {
        uint64_t count = 0, x;
        if (recv_tag(&count, sizeof(count), 0, 0) == QUIT_TAG) break;
        for (uint64_t i = 1; i < count; ++i)
            recv_tag(&x, sizeof(x), FIRST_TAG, ~0ull);
        if (wait_req(send_tag(back, &count, sizeof(count), DONE_TAG)) != UCS_OK) exit(1);
    }
    close_ep(back);
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    _exit(0);
}

static void round_trip(ucp_ep_h* eps, size_t n) {
    void** reqs = calloc(n, sizeof(void*));
    uint64_t count = n, done = 0;
    for (size_t i = 0; i < n; ++i)
        reqs[i] = send_tag(eps[i], &count, sizeof(count), FIRST_TAG);
    recv_tag(&done, sizeof(done), DONE_TAG, ~0ull);
    for (size_t i = 0; i < n; ++i)
        if (wait_req(reqs[i]) != UCS_OK) fail("first message", UCS_ERR_IO_ERROR);
    free(reqs);
}

int main(int argc, char** argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    int to_origin[2], from_origin[2];
    if (pipe(to_origin) != 0 || pipe(from_origin) != 0) return 1;
    pid_t child = fork();
    if (child == 0) {
        /* A time limit (ep-scale.sh) that ends the origin ends the target too. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        target(to_origin[1], from_origin[0]);
    }
    open_worker();
    void* taddr = NULL;
    size_t tlen = 0;
    exchange_address(from_origin[1], to_origin[0], &taddr, &tlen);
    ucp_ep_h keep = connect_to(taddr);
    round_trip(&keep, 1);

    ucp_ep_h* eps = calloc((size_t)(n > 1024 ? n : 1024), sizeof(ucp_ep_h));
    struct usage before = usage_now();
    double t0 = now();
    for (int i = 0; i < n; ++i)
        eps[i] = connect_to(taddr);
    double us = (now() - t0) * 1e6;
    for (int i = 0; i < 100; ++i)
        ucp_worker_progress(worker);
    struct usage after = usage_now();
    printf("  %8d %12.0f %12.0f %10.3f %10.3f %12.2f   (UCX %s)\n", n,
           (double)(after.rss_kib - before.rss_kib) * 1024.0 / n,
           ((double)after.heap - (double)before.heap) / n, (double)(after.fds - before.fds) / n,
           (double)(after.maps - before.maps) / n, us / n,
           getenv("UCX_TLS") ? getenv("UCX_TLS") : "default");
    for (int i = 0; i < n; ++i)
        close_ep(eps[i]);
    double best = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
        t0 = now();
        for (int i = 0; i < 1024; ++i)
            eps[i] = connect_to(taddr);
        round_trip(eps, 1024);
        double s = now() - t0;
        if (s < best) best = s;
        for (int i = 0; i < 1024; ++i)
            close_ep(eps[i]);
    }
    printf("# 1024 endpoints wired up (created + first message answered): %.3f s (best of 3)\n",
           best);
    uint64_t zero = 0;
    (void)wait_req(send_tag(keep, &zero, sizeof(zero), QUIT_TAG));
    int status = 0;
    while (waitpid(child, &status, WNOHANG) == 0)
        ucp_worker_progress(worker);
    close_ep(keep);
    free(eps);
    free(taddr);
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    return 0;
}

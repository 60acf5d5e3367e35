// Idle cost of an endpoint, and the time to wire up many (issue #18).
//
//   swy_ep_idle_cost [shm|tcp] [N...]      (default: shm 1 100 1000 10000)
//
// One process (the origin) creates N endpoints to one worker in another process (the
// target), all from one worker. The representative case of a rank talking to many peers is N
// peers, but N processes per measurement do not fit a test machine; what grows with N once
// the peer is connected is what an endpoint costs beyond its peer (the per-peer cost of shm
// — one mapping and one pidfd per peer worker, the wake-up pipe only once the peer had to be
// woken — shows in swy_mpi_init_cost's descriptors and mappings, bench/ep-scale.sh). Each
// measurement should run in a process of its own (ep-scale.sh does): endpoints closed by an
// earlier one may still be releasing. Printed per endpoint: host memory (RSS and heap
// growth), descriptors and mappings, after creating them and before any message; then the
// time to create 1 024 endpoints and exchange a first message on each (each sends 8 bytes,
// the target answers once it has all of them), best of 3. bench/ucx_ep_idle_cost.c measures
// ucp_ep_create the same way.
#include <dirent.h>
#include <malloc.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <switchyard/switchyard.h>

namespace {

using Clock = std::chrono::steady_clock;

constexpr swy_tag_t kFirstTag = 0x1000;
constexpr swy_tag_t kDoneTag = 0x2000;
constexpr swy_tag_t kQuitTag = 0x3000;

[[noreturn]] void die(const char* what, swy_status_t st) {
    std::fprintf(stderr, "swy_ep_idle_cost: %s: %s\n", what, swy_status_string(st));
    std::exit(1);
}

void check(swy_status_t st, const char* what) {
    if (st != SWY_OK && st != SWY_INPROGRESS) die(what, st);
}

struct Node {
    swy_context_h context = nullptr;
    swy_worker_h worker = nullptr;
};

Node open_node(const char* tls) {
    Node n;
    swy_config_h cfg = nullptr;
    check(swy_config_read(&cfg), "swy_config_read");
    check(swy_config_set(cfg, "TLS", tls), "swy_config_set TLS");
    swy_context_params_t cp{};
    cp.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG;
    cp.config = cfg;
    check(swy_context_create(&cp, &n.context), "swy_context_create");
    swy_config_release(cfg);
    swy_worker_params_t wp{};
    check(swy_worker_create(n.context, &wp, &n.worker), "swy_worker_create");
    return n;
}

void close_node(Node& n) {
    swy_worker_destroy(n.worker);
    swy_context_destroy(n.context);
}

swy_status_t wait(swy_worker_h w, swy_request_h req) {
    swy_status_t st;
    while ((st = swy_request_test(req)) == SWY_INPROGRESS)
        swy_worker_progress(w);
    swy_request_free(req);
    return st;
}

swy_status_t send(swy_worker_h w, swy_ep_h ep, const void* buf, size_t len, swy_tag_t tag,
                  swy_request_h* req) {
    swy_request_params_t p{};
    *req = nullptr;
    swy_status_t st = swy_tag_send_nb(ep, buf, len, tag, &p, req);
    (void)w;
    return st;
}

void recv_blocking(swy_worker_h w, void* buf, size_t len, swy_tag_t tag, swy_tag_t mask) {
    swy_request_params_t p{};
    swy_request_h req = nullptr;
    swy_status_t st = swy_tag_recv_nb(w, buf, len, tag, mask, &p, &req);
    if (st == SWY_INPROGRESS) st = wait(w, req);
    check(st, "receive");
}

swy_ep_h connect(swy_worker_h w, const std::vector<unsigned char>& addr) {
    swy_ep_params_t p{};
    p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
    p.remote_address = addr.data();
    p.remote_address_length = addr.size();
    swy_ep_h ep = nullptr;
    check(swy_ep_create(w, &p, &ep), "swy_ep_create");
    return ep;
}

void close_all(swy_worker_h w, std::vector<swy_ep_h>& eps) {
    for (swy_ep_h ep : eps) {
        swy_request_h req = nullptr;
        if (swy_ep_close_nb(ep, SWY_EP_CLOSE_FORCE, &req) == SWY_INPROGRESS) (void)wait(w, req);
    }
    eps.clear();
}

// ---- what this process holds ----

struct Usage {
    long rss_kib = 0;
    size_t heap = 0;
    int fds = 0;
    int maps = 0;
};

Usage usage() {
    Usage u;
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("VmRSS:", 0) == 0) u.rss_kib = std::atol(line.c_str() + 6);
    u.heap = mallinfo2().uordblks;
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);)
        ++u.maps;
    if (DIR* d = opendir("/proc/self/fd")) {
        while (readdir(d) != nullptr)
            ++u.fds;
        closedir(d);
        u.fds -= 3;  // ".", ".." and the listing's own descriptor
    }
    return u;
}

// ---- the target: one worker that answers ----

[[noreturn]] void target(const char* tls, int to_origin, int from_origin) {
    Node n = open_node(tls);
    void* addr = nullptr;
    size_t len = 0;
    check(swy_worker_get_address(n.worker, &addr, &len), "swy_worker_get_address");
    const uint32_t len32 = static_cast<uint32_t>(len);
    if (write(to_origin, &len32, 4) != 4 || write(to_origin, addr, len) != (ssize_t)len) _exit(1);
    swy_worker_release_address(n.worker, addr);
    std::vector<unsigned char> origin_addr;
    uint32_t olen = 0;
    if (read(from_origin, &olen, 4) != 4) _exit(1);
    origin_addr.resize(olen);
    if (read(from_origin, origin_addr.data(), olen) != (ssize_t)olen) _exit(1);
    swy_ep_h back = connect(n.worker, origin_addr);
    // Rounds: receive `count` first messages (their tags say how many), answer once.
    for (;;) {
        uint64_t count = 0;
        swy_request_params_t p{};
        swy_request_h req = nullptr;
        swy_tag_recv_info_t info{};
        p.field_mask = SWY_REQ_PARAM_FIELD_RECV_INFO;
        p.recv_info = &info;
        swy_status_t st = swy_tag_recv_nb(n.worker, &count, sizeof(count), 0, 0, &p, &req);
        if (st == SWY_INPROGRESS) {
            while (swy_request_test(req) == SWY_INPROGRESS)
                swy_worker_progress(n.worker);
            check(swy_request_recv_info(req, &info), "recv info");
            swy_request_free(req);
        }
        if (info.sender_tag == kQuitTag) break;
        for (uint64_t i = 1; i < count; ++i) {
            uint64_t x;
            recv_blocking(n.worker, &x, sizeof(x), kFirstTag, ~swy_tag_t{0});
        }
        swy_request_h sreq = nullptr;
        uint64_t done = count;
        st = send(n.worker, back, &done, sizeof(done), kDoneTag, &sreq);
        if (st == SWY_INPROGRESS) st = wait(n.worker, sreq);
        check(st, "answer");
    }
    std::vector<swy_ep_h> eps{back};
    close_all(n.worker, eps);
    close_node(n);
    _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
    const char* tls = argc > 1 ? argv[1] : "shm";
    std::vector<int> counts;
    for (int i = 2; i < argc; ++i)
        counts.push_back(std::atoi(argv[i]));
    if (counts.empty()) counts = {1, 100, 1000, 10000};
    // tcp endpoints hold descriptors: allow as many as the hard limit does.
    rlimit rl{};
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);

    int to_origin[2], from_origin[2];
    if (pipe(to_origin) != 0 || pipe(from_origin) != 0) return 1;
    const pid_t child = fork();
    if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);  // a time limit that ends the origin ends the target
        target(tls, to_origin[1], from_origin[0]);
    }

    Node n = open_node(tls);
    uint32_t len = 0;
    if (read(to_origin[0], &len, 4) != 4) return 1;
    std::vector<unsigned char> target_addr(len);
    if (read(to_origin[0], target_addr.data(), len) != (ssize_t)len) return 1;
    {
        void* addr = nullptr;
        size_t alen = 0;
        check(swy_worker_get_address(n.worker, &addr, &alen), "swy_worker_get_address");
        const uint32_t a32 = static_cast<uint32_t>(alen);
        if (write(from_origin[1], &a32, 4) != 4 ||
            write(from_origin[1], addr, alen) != (ssize_t)alen)
            return 1;
        swy_worker_release_address(n.worker, addr);
    }
    // One endpoint and one round first, so that what every endpoint shares (the peer's
    // mapping, its descriptors, the reply lane) is not counted against the first N.
    std::vector<swy_ep_h> keep{connect(n.worker, target_addr)};
    auto round = [&](std::vector<swy_ep_h>& eps) {
        std::vector<swy_request_h> reqs;
        uint64_t count = eps.size();
        for (size_t i = 0; i < eps.size(); ++i) {
            swy_request_h req = nullptr;
            swy_status_t st = send(n.worker, eps[i], &count, sizeof(count), kFirstTag, &req);
            check(st, "first message");
            if (st == SWY_INPROGRESS) reqs.push_back(req);
        }
        uint64_t done = 0;
        recv_blocking(n.worker, &done, sizeof(done), kDoneTag, ~swy_tag_t{0});
        for (swy_request_h r : reqs)
            check(wait(n.worker, r), "first message");
    };
    round(keep);

    std::printf("# Switchyard %s: N endpoints from one worker to one worker in another process\n",
                tls);
    std::printf("# %8s %12s %12s %10s %10s %12s\n", "N", "rss B/ep", "heap B/ep", "fds/ep",
                "maps/ep", "create us/ep");
    for (int count : counts) {
        const Usage before = usage();
        std::vector<swy_ep_h> eps;
        eps.reserve(count);
        const auto t0 = Clock::now();
        for (int i = 0; i < count; ++i)
            eps.push_back(connect(n.worker, target_addr));
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        for (int i = 0; i < 100; ++i)
            swy_worker_progress(n.worker);
        const Usage after = usage();
        std::printf("  %8d %12.0f %12.0f %10.3f %10.3f %12.2f\n", count,
                    (after.rss_kib - before.rss_kib) * 1024.0 / count,
                    (static_cast<double>(after.heap) - static_cast<double>(before.heap)) / count,
                    static_cast<double>(after.fds - before.fds) / count,
                    static_cast<double>(after.maps - before.maps) / count, us / count);
        std::fflush(stdout);
        close_all(n.worker, eps);
    }
    // 1 024 endpoints wired up: created, and a first message on each answered.
    double best = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
        std::vector<swy_ep_h> eps;
        const auto t0 = Clock::now();
        for (int i = 0; i < 1024; ++i)
            eps.push_back(connect(n.worker, target_addr));
        round(eps);
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        best = std::min(best, s);
        close_all(n.worker, eps);
    }
    std::printf(
        "# 1024 endpoints wired up (created + first message answered): %.3f s (best of 3)\n", best);
    // Tell the target to stop.
    swy_request_h req = nullptr;
    uint64_t zero = 0;
    swy_status_t st = send(n.worker, keep[0], &zero, sizeof(zero), kQuitTag, &req);
    if (st == SWY_INPROGRESS) (void)wait(n.worker, req);
    int status = 0;
    while (waitpid(child, &status, WNOHANG) == 0)
        swy_worker_progress(n.worker);
    close_all(n.worker, keep);
    close_node(n);
    return 0;
}

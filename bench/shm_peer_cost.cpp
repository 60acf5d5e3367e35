// What an shm peer costs a process (issue #18, "Scale"): one origin creates an endpoint to
// each of P workers in P other processes, and reports per peer the mappings, descriptors
// (pidfds among them) and resident memory it gained: after creating the endpoints (nothing
// sent: lanes attach on their first message), then after one 8-byte message to every peer.
//
//   swy_shm_peer_cost [P...]        (default: 1 8 32)
//
// Set SWY_SHM_PEER_WATCH=poll to see the descriptor-free liveness check; run one P per
// process for clean numbers (each P here forks its targets afresh).
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <switchyard/switchyard.h>

namespace {

constexpr swy_tag_t kFirstTag = 0x1000;
constexpr swy_tag_t kQuitTag = 0x2000;

void check(swy_status_t st, const char* what) {
    if (st == SWY_OK || st == SWY_INPROGRESS) return;
    std::fprintf(stderr, "swy_shm_peer_cost: %s: %s\n", what, swy_status_string(st));
    std::exit(1);
}

struct Node {
    swy_context_h context = nullptr;
    swy_worker_h worker = nullptr;
};

Node open_node() {
    Node n;
    swy_config_h cfg = nullptr;
    check(swy_config_read(&cfg), "swy_config_read");
    check(swy_config_set(cfg, "TLS", "shm"), "swy_config_set TLS");
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

void wait(swy_worker_h w, swy_request_h req, const char* what) {
    swy_status_t st;
    while ((st = swy_request_test(req)) == SWY_INPROGRESS)
        swy_worker_progress(w);
    swy_request_free(req);
    check(st, what);
}

void receive(swy_worker_h w, swy_tag_t tag) {
    uint64_t x = 0;
    swy_request_params_t p{};
    swy_request_h req = nullptr;
    swy_status_t st = swy_tag_recv_nb(w, &x, sizeof(x), tag, ~swy_tag_t{0}, &p, &req);
    if (st == SWY_INPROGRESS) wait(w, req, "receive");
}

void send(swy_worker_h w, swy_ep_h ep, swy_tag_t tag) {
    uint64_t x = 1;
    swy_request_params_t p{};
    swy_request_h req = nullptr;
    swy_status_t st = swy_tag_send_nb(ep, &x, sizeof(x), tag, &p, &req);
    if (st == SWY_INPROGRESS) wait(w, req, "send");
    check(st, "send");
}

struct Usage {
    long rss_kib = 0;
    int fds = 0;
    int pidfds = 0;
    int maps = 0;
    int peer_maps = 0;  // swy-shm segment mappings
};

Usage usage() {
    Usage u;
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("VmRSS:", 0) == 0) u.rss_kib = std::atol(line.c_str() + 6);
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);) {
        ++u.maps;
        if (line.find("memfd:swy-shm") != std::string::npos) ++u.peer_maps;
    }
    if (DIR* d = opendir("/proc/self/fd")) {
        while (dirent* e = readdir(d)) {
            if (e->d_name[0] == '.') continue;
            ++u.fds;
            char path[300], target[128] = {};
            std::snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
            if (readlink(path, target, sizeof(target) - 1) > 0 &&
                (std::strstr(target, "[pidfd]") != nullptr ||
                 std::strncmp(target, "pidfd:", 6) == 0))
                ++u.pidfds;
        }
        closedir(d);
        --u.fds;  // the listing's own descriptor
    }
    return u;
}

void print(const char* when, int peers, const Usage& a, const Usage& b) {
    std::printf(
        "  %5d  %-22s %9.2f %9.2f %9.2f %11.2f %11.0f\n", peers, when,
        static_cast<double>(b.peer_maps - a.peer_maps) / peers,
        static_cast<double>(b.maps - a.maps) / peers, static_cast<double>(b.fds - a.fds) / peers,
        static_cast<double>(b.pidfds - a.pidfds) / peers, (b.rss_kib - a.rss_kib) * 1024.0 / peers);
}

[[noreturn]] void target(int to_origin) {
    Node n = open_node();
    void* addr = nullptr;
    size_t len = 0;
    check(swy_worker_get_address(n.worker, &addr, &len), "swy_worker_get_address");
    const uint32_t len32 = static_cast<uint32_t>(len);
    if (write(to_origin, &len32, 4) != 4 || write(to_origin, addr, len) != (ssize_t)len) _exit(1);
    swy_worker_release_address(n.worker, addr);
    receive(n.worker, kFirstTag);
    receive(n.worker, kQuitTag);
    close_node(n);
    _exit(0);
}

void measure(int peers) {
    std::vector<std::vector<unsigned char>> addrs;
    std::vector<pid_t> children;
    for (int i = 0; i < peers; ++i) {
        int fds[2];
        if (pipe(fds) != 0) std::exit(1);
        const pid_t child = fork();
        if (child == 0) target(fds[1]);
        children.push_back(child);
        uint32_t len = 0;
        if (read(fds[0], &len, 4) != 4) std::exit(1);
        std::vector<unsigned char> a(len);
        if (read(fds[0], a.data(), len) != (ssize_t)len) std::exit(1);
        addrs.push_back(std::move(a));
        close(fds[0]);
        close(fds[1]);
    }
    Node n = open_node();
    const Usage start = usage();
    std::vector<swy_ep_h> eps;
    for (const auto& a : addrs) {
        swy_ep_params_t p{};
        p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
        p.remote_address = a.data();
        p.remote_address_length = a.size();
        swy_ep_h ep = nullptr;
        check(swy_ep_create(n.worker, &p, &ep), "swy_ep_create");
        eps.push_back(ep);
    }
    const Usage created = usage();
    for (swy_ep_h ep : eps)
        send(n.worker, ep, kFirstTag);
    for (int i = 0; i < 100; ++i)
        swy_worker_progress(n.worker);
    const Usage messaged = usage();
    print("endpoints created", peers, start, created);
    print("one message to each", peers, start, messaged);
    std::fflush(stdout);
    for (swy_ep_h ep : eps)
        send(n.worker, ep, kQuitTag);
    for (pid_t c : children) {
        int status = 0;
        while (waitpid(c, &status, WNOHANG) == 0)
            swy_worker_progress(n.worker);
    }
    for (swy_ep_h ep : eps) {
        swy_request_h req = nullptr;
        if (swy_ep_close_nb(ep, SWY_EP_CLOSE_FORCE, &req) == SWY_INPROGRESS)
            wait(n.worker, req, "close");
    }
    close_node(n);
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> counts;
    for (int i = 1; i < argc; ++i)
        counts.push_back(std::atoi(argv[i]));
    if (counts.empty()) counts = {1, 8, 32};
    const char* watch = std::getenv("SWY_SHM_PEER_WATCH");
    std::printf("# shm: per peer, in the origin (SWY_SHM_PEER_WATCH=%s)\n",
                watch != nullptr ? watch : "default");
    std::printf("# %5s  %-22s %9s %9s %9s %11s %11s\n", "peers", "", "segments", "maps", "fds",
                "pidfds", "rss B");
    for (int p : counts)
        measure(p);
    return 0;
}

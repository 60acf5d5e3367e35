// Idle cost of tcp endpoints: a server process (one worker) and a client that creates N
// endpoints to it, sends one 8-byte message on each (so every connection is wired up and has
// carried traffic), and then reports what the client holds per endpoint: resident memory
// (RSS, /proc/self/statm) and file descriptors (/proc/self/fd), against the same client
// before the endpoints existed. Then every endpoint is closed and the memory left behind by
// closed connections is reported too, and what a second open/close cycle of as many
// endpoints adds to it (about nothing when what the first left is kept for reuse).
//
//   tcp_idle_cost [N...]          default: 1 100 1000
//
// Plain program (no Google Benchmark): the figures are memory, not time. Run with
// SWY_TLS=tcp,self and SWY_NET_DEVICES=lo (set here when unset).
#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <switchyard/switchyard.h>

namespace {

#define CHECK(expr)                                                            \
    do {                                                                       \
        swy_status_t st_ = (expr);                                             \
        if (st_ != SWY_OK) {                                                   \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, \
                         swy_status_string(st_));                              \
            std::exit(1);                                                      \
        }                                                                      \
    } while (0)

long rss_bytes() {
    long pages = 0, resident = 0;
    FILE* f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr) return 0;
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
    return resident * sysconf(_SC_PAGESIZE);
}

/// Heap bytes in use (what the process holds, whether or not the pages went back to the OS).
long heap_bytes() { return static_cast<long>(mallinfo2().uordblks); }

int open_fds() {
    int n = 0;
    DIR* d = opendir("/proc/self/fd");
    if (d == nullptr) return 0;
    while (readdir(d) != nullptr)
        ++n;
    closedir(d);
    return n - 3;  // ".", ".." and the directory itself
}

void wait_done(swy_worker_h w, swy_request_h req) {
    if (req == nullptr) return;
    while (swy_request_test(req) == SWY_INPROGRESS)
        swy_worker_progress(w);
    swy_request_free(req);
}

struct Node {
    swy_context_h ctx = nullptr;
    swy_worker_h worker = nullptr;
    Node() {
        swy_context_params_t cp{};
        CHECK(swy_context_create(&cp, &ctx));
        swy_worker_params_t wp{};
        CHECK(swy_worker_create(ctx, &wp, &worker));
    }
    ~Node() {
        swy_worker_destroy(worker);
        swy_context_destroy(ctx);
    }
};

/// The server: receives @p n messages (one per client endpoint) twice, saying so on
/// @p done_fd after each batch, then stays until killed.
[[noreturn]] void serve(int addr_fd, int done_fd, size_t n) {
    Node node;
    void* addr = nullptr;
    size_t len = 0;
    CHECK(swy_worker_get_address(node.worker, &addr, &len));
    (void)!write(addr_fd, &len, sizeof(len));
    (void)!write(addr_fd, addr, len);
    uint64_t buf = 0;
    for (int batch = 0; batch < 2; ++batch) {
        for (size_t i = 0; i < n; ++i) {
            swy_request_h r = nullptr;
            swy_status_t st =
                swy_tag_recv_nb(node.worker, &buf, sizeof(buf), 7, ~0ull, nullptr, &r);
            if (st != SWY_OK && st != SWY_INPROGRESS) std::exit(2);
            wait_done(node.worker, r);
        }
        char c = 1;
        (void)!write(done_fd, &c, 1);
    }
    for (;;)
        swy_worker_progress(node.worker);
}

/// Opens @p n endpoints to @p addr, sends one message on each, waits until the server says
/// it received them all (@p done_fd), and closes them all; @p idle (if not null) gets the
/// heap, RSS and fds while they were all open and idle.
struct Snapshot {
    long rss = 0, heap = 0;
    int fds = 0;
};
void open_use_close(swy_worker_h worker, const std::vector<unsigned char>& addr, size_t n,
                    int done_fd, Snapshot* idle) {
    std::vector<swy_ep_h> eps(n);
    for (size_t i = 0; i < n; ++i) {
        swy_ep_params_t p{};
        p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
        p.remote_address = addr.data();
        p.remote_address_length = addr.size();
        CHECK(swy_ep_create(worker, &p, &eps[i]));
    }
    const uint64_t payload = 42;
    for (size_t i = 0; i < n; ++i) {
        swy_request_h r = nullptr;
        swy_status_t st = swy_tag_send_nb(eps[i], &payload, sizeof(payload), 7, nullptr, &r);
        if (st != SWY_OK && st != SWY_INPROGRESS) CHECK(st);
        wait_done(worker, r);
    }
    char c = 0;
    while (read(done_fd, &c, 1) != 1)
        swy_worker_progress(worker);  // queued sends go out from progress
    for (int i = 0; i < 1000; ++i)
        swy_worker_progress(worker);
    if (idle != nullptr) *idle = {rss_bytes(), heap_bytes(), open_fds()};
    for (swy_ep_h ep : eps) {
        swy_request_h r = nullptr;
        if (swy_ep_close_nb(ep, SWY_EP_CLOSE_FLUSH, &r) == SWY_INPROGRESS) wait_done(worker, r);
    }
    for (int i = 0; i < 1000; ++i)
        swy_worker_progress(worker);
}

void measure(size_t n) {
    int addr_pipe[2], done_pipe[2];
    if (pipe(addr_pipe) != 0 || pipe(done_pipe) != 0) std::exit(1);
    const pid_t server = fork();
    if (server == 0) serve(addr_pipe[1], done_pipe[1], n);
    size_t len = 0;
    (void)!read(addr_pipe[0], &len, sizeof(len));
    std::vector<unsigned char> addr(len);
    for (size_t got = 0; got < len;) {
        const ssize_t r = read(addr_pipe[0], addr.data() + got, len - got);
        if (r <= 0) std::exit(1);
        got += static_cast<size_t>(r);
    }
    Node node;
    const long rss0 = rss_bytes();
    const long heap0 = heap_bytes();
    const int fds0 = open_fds();
    fcntl(done_pipe[0], F_SETFL, O_NONBLOCK);
    Snapshot idle;
    open_use_close(node.worker, addr, n, done_pipe[0], &idle);
    const long heap2 = heap_bytes();
    const int fds2 = open_fds();
    // A second cycle: what the first left behind is reused when it does not grow the heap.
    open_use_close(node.worker, addr, n, done_pipe[0], nullptr);
    const long heap3 = heap_bytes();
    std::printf(
        "%6zu endpoints, per idle endpoint: %7.0f B RSS, %7.0f B heap, %4.2f fds; "
        "per closed endpoint left behind: %6.0f B heap, %4.2f fds; "
        "a second open/close cycle adds %5.0f B heap\n",
        n, double(idle.rss - rss0) / double(n), double(idle.heap - heap0) / double(n),
        double(idle.fds - fds0) / double(n), double(heap2 - heap0) / double(n),
        double(fds2 - fds0) / double(n), double(heap3 - heap2) / double(n));
    std::fflush(stdout);
    kill(server, SIGKILL);
    waitpid(server, nullptr, 0);
    close(addr_pipe[0]);
    close(addr_pipe[1]);
    close(done_pipe[0]);
    close(done_pipe[1]);
}

}  // namespace

int main(int argc, char** argv) {
    setenv("SWY_TLS", "tcp,self", 0);
    setenv("SWY_NET_DEVICES", "lo", 0);
    rlimit rl{};
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    std::vector<size_t> counts{1, 100, 1000};
    if (argc > 1) {
        counts.clear();
        for (int i = 1; i < argc; ++i)
            counts.push_back(std::strtoull(argv[i], nullptr, 10));
    }
    for (size_t n : counts)
        measure(n);
    return 0;
}

// Connection scale of the verbs transport (issue #18): one hub worker and PROCS × WORKERS
// peer workers (default 8 × 32 = 256, in PROCS processes), every peer connected to the hub
// and the hub to every peer, all exchanging traffic at once in both directions, every byte
// checked. Run inside the Soft-RoCE VM by test/verbs/run-vm.sh (exit 77 without a device).
//
//   verbs_conn_scale [PROCS [WORKERS [MESSAGES]]]
//
// What must hold, and fails without the fixes it covers:
//   * every connection is made and every message arrives intact (the hub's 64th connection
//     used to be refused: its SRQ held 64 × 64 buffers);
//   * one RC connection per pair: the hub has exactly one QP per peer, both when the peer
//     connected first (the hub's endpoint joins) and when the hub did (the peer's joins);
//   * no RNR: the device's RNR counters do not move (credits are lent, never overrun);
//   * no CQ overflow: an overflow is a CQ error that fails every QP on it, so messages would
//     fail; also checked through the device's counters where they exist.
// It prints the hub's connections, QPs, completion groups, CQ entries and receive buffer bytes
// (the per-connection host memory docs/verbs.md quotes).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <switchyard/switchyard.h>

#include "core/address.h"
#include "core/worker.h"
#include "transports/verbs/verbs_open.h"
#include "transports/verbs/verbs_transport.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr swy_tag_t kToHub = 1ull << 40;
constexpr swy_tag_t kToPeer = 2ull << 40;
constexpr swy_tag_t kHello = 3ull << 40;
// Eager short, eager bcopy at and around the 8 KiB buffer, multi-fragment, rendezvous.
constexpr size_t kSizes[] = {8, 247, 249, 4000, 8176, 8177, 20000, 70000};
constexpr double kTimeoutS = 400;

size_t size_of(int seq) { return kSizes[static_cast<size_t>(seq) % std::size(kSizes)]; }
uint8_t pattern(int peer, int seq, size_t i, int direction) {
    return static_cast<uint8_t>(i * 131 + static_cast<size_t>(peer) * 7 +
                                static_cast<size_t>(seq) * 17 + static_cast<size_t>(direction));
}
swy_tag_t tag_of(swy_tag_t kind, int peer, int seq) {
    return kind | (static_cast<swy_tag_t>(peer) << 16) | static_cast<swy_tag_t>(seq);
}

[[noreturn]] void die(const char* what) {
    std::fprintf(stderr, "verbs_conn_scale[%d]: FAILED: %s\n", getpid(), what);
    std::exit(1);
}

bool write_all(int fd, const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    while (n > 0) {
        ssize_t k = write(fd, b, n);
        if (k <= 0) return false;
        b += k, n -= static_cast<size_t>(k);
    }
    return true;
}
bool read_all(int fd, void* p, size_t n) {
    auto* b = static_cast<uint8_t*>(p);
    while (n > 0) {
        ssize_t k = read(fd, b, n);
        if (k <= 0) return false;
        b += k, n -= static_cast<size_t>(k);
    }
    return true;
}
void send_blob(int fd, const std::vector<uint8_t>& v) {
    const uint32_t n = static_cast<uint32_t>(v.size());
    if (!write_all(fd, &n, 4) || !write_all(fd, v.data(), n)) die("pipe write");
}
std::vector<uint8_t> read_blob(int fd) {
    uint32_t n = 0;
    if (!read_all(fd, &n, 4) || n > 65536) die("pipe read");
    std::vector<uint8_t> v(n);
    if (!read_all(fd, v.data(), n)) die("pipe read");
    return v;
}

swy_context_h make_context() {
    swy_config_h cfg = nullptr;
    if (swy_config_read(&cfg) != SWY_OK) die("swy_config_read");
    swy_config_set(cfg, "TLS", "verbs,self");
    swy_context_params_t cp{};
    cp.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG;
    cp.config = cfg;
    swy_context_h ctx = nullptr;
    if (swy_context_create(&cp, &ctx) != SWY_OK) die("swy_context_create");
    swy_config_release(cfg);
    return ctx;
}

swy_worker_h make_worker(swy_context_h ctx, std::vector<uint8_t>* address) {
    swy_worker_params_t wp{SWY_WORKER_PARAM_FIELD_THREAD_MODE, SWY_THREAD_MODE_SINGLE};
    swy_worker_h w = nullptr;
    if (swy_worker_create(ctx, &wp, &w) != SWY_OK) die("swy_worker_create");
    void* a = nullptr;
    size_t n = 0;
    if (swy_worker_get_address(w, &a, &n) != SWY_OK) die("swy_worker_get_address");
    address->assign(static_cast<uint8_t*>(a), static_cast<uint8_t*>(a) + n);
    swy_worker_release_address(w, a);
    return w;
}

bool has_verbs(const std::vector<uint8_t>& address) {
    swy::core::WorkerAddress a;
    std::string why;
    return swy::core::decode_address(address.data(), address.size(), &a, &why) ==
               swy::Status::kOk &&
           a.find(swy::tl::verbs::kAddressSection) != nullptr;
}

int endpoint_failures = 0;
void on_ep_error(void*, swy_ep_h, swy_status_t st) {
    ++endpoint_failures;
    std::fprintf(stderr, "verbs_conn_scale[%d]: endpoint failed: status %d\n", getpid(),
                 static_cast<int>(st));
}

swy_ep_h connect(swy_worker_h w, const std::vector<uint8_t>& to) {
    swy_ep_params_t p{};
    p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS | SWY_EP_PARAM_FIELD_ERR_HANDLER;
    p.remote_address = to.data();
    p.remote_address_length = to.size();
    p.err_cb = on_ep_error;
    swy_ep_h ep = nullptr;
    if (swy_ep_create(w, &p, &ep) != SWY_OK) die("swy_ep_create");
    return ep;
}

/// Outstanding requests; a receive's buffer is checked when it completes.
struct Pending {
    swy_request_h req = nullptr;
    std::vector<uint8_t> buffer;
    int peer = 0, seq = 0, direction = 0;  // direction: pattern of the receive (0: none, a send)
    bool recv = false;
};

/// The hub's peer processes: one that exits early (a failure) ends the hub's waits at once.
std::vector<pid_t> children;

void check_children() {
    for (pid_t& pid : children) {
        int status = 0;
        if (pid <= 0 || waitpid(pid, &status, WNOHANG) != pid) continue;
        pid = -1;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die("a peer process failed");
    }
}

/// Progress @p workers until every request in @p list completed; checks and frees them.
void complete_all(const std::vector<swy_worker_h>& workers, std::vector<Pending>* list,
                  const char* what) {
    const auto end = Clock::now() + std::chrono::duration<double>(kTimeoutS);
    size_t done = 0;
    unsigned rounds = 0;
    std::vector<bool> finished(list->size(), false);
    for (size_t i = 0; i < list->size(); ++i) {
        if ((*list)[i].req == nullptr) finished[i] = true, ++done;
    }
    while (done < list->size()) {
        if (Clock::now() > end) {
            std::fprintf(stderr, "verbs_conn_scale[%d]: %s: %zu of %zu requests still open\n",
                         getpid(), what, list->size() - done, list->size());
            die("timed out");
        }
        for (swy_worker_h w : workers)
            swy_worker_progress(w);
        if (endpoint_failures != 0) die("an endpoint failed");
        if ((++rounds & 1023) == 0) check_children();
        for (size_t i = 0; i < list->size(); ++i) {
            if (finished[i]) continue;
            Pending& p = (*list)[i];
            const swy_status_t st = swy_request_test(p.req);
            if (st == SWY_INPROGRESS) continue;
            if (st != SWY_OK) {
                std::fprintf(stderr, "verbs_conn_scale[%d]: %s: peer %d seq %d: status %d\n",
                             getpid(), what, p.peer, p.seq, static_cast<int>(st));
                die("a request failed");
            }
            swy_request_free(p.req);
            finished[i] = true;
            ++done;
        }
    }
    for (const Pending& p : *list) {
        if (!p.recv) continue;
        const size_t n = size_of(p.seq);
        for (size_t i = 0; i < n; ++i) {
            if (p.buffer[i] != pattern(p.peer, p.seq, i, p.direction)) {
                std::fprintf(stderr, "verbs_conn_scale[%d]: %s: peer %d seq %d byte %zu wrong\n",
                             getpid(), what, p.peer, p.seq, i);
                die("payload corrupted");
            }
        }
        if (p.buffer[n] != 0xEE) die("wrote past the receive");
    }
    list->clear();
}

Pending post_recv(swy_worker_h w, swy_tag_t kind, int peer, int seq, int direction) {
    Pending p;
    p.recv = true;
    p.peer = peer, p.seq = seq, p.direction = direction;
    p.buffer.assign(size_of(seq) + 1, 0xEE);
    if (swy_tag_recv_nb(w, p.buffer.data(), size_of(seq), tag_of(kind, peer, seq), ~0ull, nullptr,
                        &p.req) < 0) {
        die("swy_tag_recv_nb");
    }
    return p;
}

Pending post_send(swy_ep_h ep, swy_tag_t kind, int peer, int seq, int direction) {
    Pending p;
    p.peer = peer, p.seq = seq;
    p.buffer.resize(size_of(seq));
    for (size_t i = 0; i < p.buffer.size(); ++i)
        p.buffer[i] = pattern(peer, seq, i, direction);
    if (swy_tag_send_nb(ep, p.buffer.data(), p.buffer.size(), tag_of(kind, peer, seq), nullptr,
                        &p.req) < 0) {
        die("swy_tag_send_nb");
    }
    return p;
}

/// The RNR and CQ-error counters of the first RDMA device (rxe: hw_counters); -1 if none.
long long device_counter(const char* name) {
    const char* dev = std::getenv("RXE_VM_DEV");
    const std::string path = std::string("/sys/class/infiniband/") + (dev ? dev : "rxe0") +
                             "/ports/1/hw_counters/" + name;
    std::ifstream f(path);
    long long v = -1;
    if (!(f >> v)) return -1;
    return v;
}

swy::tl::verbs::ScaleReport report_of(swy_worker_h w) {
    swy::tl::verbs::ScaleReport r;
    swy::tl::verbs::scale_report(
        reinterpret_cast<const swy::core::Worker*>(w)->interface_named("verbs"), &r);
    return r;
}

// ------------------------------------------------------------------------------ a peer process
// Peer p = proc * workers + k. Even peers connect to the hub before the hub connects to them
// (the hub's endpoint joins their connection); odd peers after (theirs joins the hub's).
int run_peers(int proc, int workers, int messages, int to_hub, int from_hub) {
    swy_context_h ctx = make_context();
    std::vector<swy_worker_h> ws(static_cast<size_t>(workers));
    for (int k = 0; k < workers; ++k) {
        std::vector<uint8_t> address;
        ws[static_cast<size_t>(k)] = make_worker(ctx, &address);
        send_blob(to_hub, address);
    }
    const std::vector<uint8_t> hub = read_blob(from_hub);
    std::vector<swy_ep_h> eps(static_cast<size_t>(workers), nullptr);
    std::vector<Pending> list;
    // Phase 1: even peers connect and say hello; odd ones wait for the hub's hello first.
    for (int k = 0; k < workers; ++k) {
        const int peer = proc * workers + k;
        if (peer % 2 == 0) {
            eps[static_cast<size_t>(k)] = connect(ws[static_cast<size_t>(k)], hub);
            list.push_back(post_send(eps[static_cast<size_t>(k)], kHello, peer, 0, 3));
        } else {
            list.push_back(post_recv(ws[static_cast<size_t>(k)], kHello, peer, 0, 4));
        }
    }
    complete_all(ws, &list, "hello");
    for (int k = 0; k < workers; ++k) {
        const int peer = proc * workers + k;
        if (peer % 2 != 0) eps[static_cast<size_t>(k)] = connect(ws[static_cast<size_t>(k)], hub);
    }
    // Phase 2: everything at once, both directions.
    for (int k = 0; k < workers; ++k) {
        const int peer = proc * workers + k;
        for (int s = 0; s < messages; ++s) {
            list.push_back(post_recv(ws[static_cast<size_t>(k)], kToPeer, peer, s, 2));
            list.push_back(post_send(eps[static_cast<size_t>(k)], kToHub, peer, s, 1));
        }
    }
    complete_all(ws, &list, "traffic");
    // Keep answering until the hub has everything (it says so), then close.
    char go = 0;
    const int flags = fcntl(from_hub, F_GETFL);
    fcntl(from_hub, F_SETFL, flags | O_NONBLOCK);
    const auto end = Clock::now() + std::chrono::duration<double>(kTimeoutS);
    while (read(from_hub, &go, 1) != 1) {
        if (Clock::now() > end) die("the hub never finished");
        for (swy_worker_h w : ws)
            swy_worker_progress(w);
    }
    for (size_t k = 0; k < eps.size(); ++k) {
        swy_request_h req = nullptr;
        swy_ep_close_nb(eps[k], SWY_EP_CLOSE_FLUSH, &req);
        if (req != nullptr) {
            swy_request_wait(ws[k], req);
            swy_request_free(req);
        }
    }
    for (swy_worker_h w : ws)
        swy_worker_destroy(w);
    swy_context_destroy(ctx);
    return endpoint_failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    const int procs = argc > 1 ? std::atoi(argv[1]) : 8;
    const int workers = argc > 2 ? std::atoi(argv[2]) : 32;
    const int messages = argc > 3 ? std::atoi(argv[3]) : 8;
    const int peers = procs * workers;
    if (procs < 1 || workers < 1 || messages < 1 || peers > 0xFFFF) {
        std::fprintf(stderr, "usage: verbs_conn_scale [PROCS [WORKERS [MESSAGES]]]\n");
        return 2;
    }
    const auto t0 = Clock::now();
    std::vector<int> to_child(static_cast<size_t>(procs)), from_child(static_cast<size_t>(procs));
    std::vector<pid_t> pids;
    for (int p = 0; p < procs; ++p) {
        int down[2], up[2];
        if (pipe(down) != 0 || pipe(up) != 0) die("pipe");
        const pid_t pid = fork();
        if (pid < 0) die("fork");
        if (pid == 0) {
            close(down[1]);
            close(up[0]);
            std::exit(run_peers(p, workers, messages, up[1], down[0]));
        }
        close(down[0]);
        close(up[1]);
        to_child[static_cast<size_t>(p)] = down[1];
        from_child[static_cast<size_t>(p)] = up[0];
        pids.push_back(pid);
    }
    children = pids;
    swy_context_h ctx = make_context();
    std::vector<uint8_t> hub_address;
    swy_worker_h hub = make_worker(ctx, &hub_address);
    if (!has_verbs(hub_address)) {
        std::printf("verbs_conn_scale: SKIP: no RDMA device (the verbs transport did not open)\n");
        for (pid_t pid : pids)
            kill(pid, SIGKILL);
        for (pid_t pid : pids)
            waitpid(pid, nullptr, 0);
        return 77;
    }
    std::vector<std::vector<uint8_t>> addresses;
    for (int p = 0; p < procs; ++p) {
        for (int k = 0; k < workers; ++k)
            addresses.push_back(read_blob(from_child[static_cast<size_t>(p)]));
        send_blob(to_child[static_cast<size_t>(p)], hub_address);
    }
    const long long rnr0 = device_counter("rcvd_rnr_err");
    const long long snd_rnr0 = device_counter("send_rnr_err");
    const std::vector<swy_worker_h> hubs{hub};
    std::vector<swy_ep_h> eps(static_cast<size_t>(peers), nullptr);
    std::vector<Pending> list;
    // Phase 1: hellos from the even peers (they connected first); the hub connects to the odd
    // ones first and says hello.
    for (int peer = 0; peer < peers; ++peer) {
        if (peer % 2 == 0) {
            list.push_back(post_recv(hub, kHello, peer, 0, 3));
        } else {
            eps[static_cast<size_t>(peer)] = connect(hub, addresses[static_cast<size_t>(peer)]);
            list.push_back(post_send(eps[static_cast<size_t>(peer)], kHello, peer, 0, 4));
        }
    }
    complete_all(hubs, &list, "hello");
    for (int peer = 0; peer < peers; peer += 2)
        eps[static_cast<size_t>(peer)] = connect(hub, addresses[static_cast<size_t>(peer)]);
    const auto t_connected = Clock::now();
    // Phase 2: everything at once.
    for (int peer = 0; peer < peers; ++peer) {
        for (int s = 0; s < messages; ++s) {
            list.push_back(post_recv(hub, kToHub, peer, s, 1));
            list.push_back(post_send(eps[static_cast<size_t>(peer)], kToPeer, peer, s, 2));
        }
    }
    complete_all(hubs, &list, "traffic");
    const auto t_traffic = Clock::now();
    const swy::tl::verbs::ScaleReport r = report_of(hub);
    const int hub_failures = endpoint_failures;
    // The hub closes first (its goodbyes leave the connections to the peers' endpoints), then
    // the peers close theirs and go.
    for (swy_ep_h ep : eps) {
        swy_request_h req = nullptr;
        swy_ep_close_nb(ep, SWY_EP_CLOSE_FLUSH, &req);
        if (req != nullptr) {
            swy_request_wait(hub, req);
            swy_request_free(req);
        }
    }
    for (int p = 0; p < procs; ++p) {
        const char go = 1;
        write_all(to_child[static_cast<size_t>(p)], &go, 1);
    }
    // Serve the peers' closes while they go.
    int failed_children = 0;
    size_t reaped = 0;
    const auto end = Clock::now() + std::chrono::duration<double>(kTimeoutS);
    std::vector<bool> gone(pids.size(), false);
    while (reaped < pids.size() && Clock::now() < end) {
        swy_worker_progress(hub);
        for (size_t i = 0; i < pids.size(); ++i) {
            int status = 0;
            if (gone[i] || waitpid(pids[i], &status, WNOHANG) != pids[i]) continue;
            gone[i] = true;
            ++reaped;
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed_children;
        }
    }
    if (reaped < pids.size()) die("peer processes did not finish");
    const swy::tl::verbs::ScaleReport after = report_of(hub);
    const long long rnr = device_counter("rcvd_rnr_err");
    const long long snd_rnr = device_counter("send_rnr_err");
    swy_worker_destroy(hub);
    swy_context_destroy(ctx);

    const double s_connect = std::chrono::duration<double>(t_connected - t0).count();
    const double s_traffic = std::chrono::duration<double>(t_traffic - t_connected).count();
    std::printf(
        "verbs_conn_scale: %d peers in %d processes, %d messages each way per peer (%zu sizes "
        "8 B..70000 B)\n"
        "  hub: %u connections, %u QPs (%u shared by both directions), %u completion groups, "
        "%llu CQ entries, %llu SRQ entries\n"
        "  hub receive buffers: %llu (%llu granted, largest grant %u), %.1f MiB = %.1f KiB per "
        "connection\n"
        "  RNR counters: received %lld -> %lld, sent %lld -> %lld\n"
        "  set-up + hellos %.1f s, traffic %.1f s\n",
        peers, procs, messages, std::size(kSizes), r.connections, r.qps, r.shared, r.groups,
        static_cast<unsigned long long>(r.cq_entries),
        static_cast<unsigned long long>(r.srq_entries),
        static_cast<unsigned long long>(r.rx_buffers),
        static_cast<unsigned long long>(r.rx_granted), r.max_credits_lent,
        static_cast<double>(r.rx_bytes) / (1 << 20),
        static_cast<double>(r.rx_bytes) / 1024.0 / std::max(1u, r.connections), rnr0, rnr, snd_rnr0,
        snd_rnr, s_connect, s_traffic);
    int failures = 0;
    auto check = [&](bool ok, const char* what) {
        if (!ok) {
            std::printf("  FAILED: %s\n", what);
            ++failures;
        }
    };
    check(failed_children == 0, "every peer process exits 0");
    check(hub_failures == 0, "no endpoint of the hub failed");
    check(endpoint_failures == hub_failures, "closing reports no failure");
    check(after.connections == 0, "every connection closed in order once both sides closed");
    check(r.qps == static_cast<uint32_t>(peers), "one QP per pair on the hub");
    check(r.connections == static_cast<uint32_t>(peers), "one connection per pair on the hub");
    check(r.shared == static_cast<uint32_t>(peers), "every connection serves both endpoints");
    check(rnr == rnr0 && snd_rnr == snd_rnr0, "no RNR (device counters unchanged)");
    std::printf("verbs_conn_scale: %s\n", failures == 0 ? "ok" : "FAILED");
    return failures == 0 ? 0 : 1;
}

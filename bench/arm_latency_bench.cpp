// 8-byte messages over shm, with and without an earlier swy_worker_arm() by the receiver: an
// arm lasts until the next progress, so a worker that armed once (even with an arm that
// returned BUSY) must not make its peers' sends slower for the rest of its life.
// RoundTrip8B: ping-pong between two processes (one iteration: a round trip; needs two idle
// cores to mean anything). SendReceive8BOneThread: two workers in one thread (one iteration:
// a send and its receive), free of scheduling noise.
//   arm_latency_bench --benchmark_filter=SendReceive
// Arguments: 0 = never armed, 1 = armed once (SWY_OK), 2 = armed once while a message was
// waiting (SWY_ERR_BUSY).
#include <benchmark/benchmark.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include <switchyard/switchyard.h>

namespace {

constexpr swy_tag_t kPing = 1;
constexpr swy_tag_t kStop = 2;
constexpr swy_tag_t kPending = 3;

/// Address exchange between the two processes (anonymous shared mapping made before fork).
struct Shared {
    std::atomic<uint32_t> ready[2];
    uint32_t length[2];
    unsigned char address[2][8192];
};

struct Side {
    swy_context_h context = nullptr;
    swy_worker_h worker = nullptr;
    swy_ep_h ep = nullptr;
};

void fail(const char* what, swy_status_t st) {
    std::fprintf(stderr, "arm_latency_bench: %s: %s\n", what, swy_status_string(st));
    std::exit(1);
}

Side open_side(Shared* sh, int me) {
    Side s;
    swy_config_h cfg = nullptr;
    if (swy_status_t st = swy_config_read(&cfg); st != SWY_OK) fail("config", st);
    swy_config_set(cfg, "TLS", "shm");
    swy_context_params_t cp{};
    cp.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG;
    cp.config = cfg;
    if (swy_status_t st = swy_context_create(&cp, &s.context); st != SWY_OK) fail("context", st);
    swy_config_release(cfg);
    if (swy_status_t st = swy_worker_create(s.context, nullptr, &s.worker); st != SWY_OK)
        fail("worker", st);
    void* addr = nullptr;
    size_t len = 0;
    if (swy_status_t st = swy_worker_get_address(s.worker, &addr, &len); st != SWY_OK)
        fail("address", st);
    if (len > sizeof(sh->address[me])) fail("address too long", SWY_ERR_NO_RESOURCE);
    std::memcpy(sh->address[me], addr, len);
    sh->length[me] = static_cast<uint32_t>(len);
    sh->ready[me].store(1, std::memory_order_release);
    swy_worker_release_address(s.worker, addr);
    const int peer = 1 - me;
    while (sh->ready[peer].load(std::memory_order_acquire) == 0)
        sched_yield();
    swy_ep_params_t ep{};
    ep.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep.remote_address = sh->address[peer];
    ep.remote_address_length = sh->length[peer];
    if (swy_status_t st = swy_ep_create(s.worker, &ep, &s.ep); st != SWY_OK) fail("ep", st);
    return s;
}

void wait_req(swy_worker_h w, swy_status_t st, swy_request_h req) {
    if (st == SWY_INPROGRESS) {
        while ((st = swy_request_test(req)) == SWY_INPROGRESS)
            swy_worker_progress(w);
        swy_request_free(req);
    }
    if (st != SWY_OK) fail("request", st);
}

void send8(const Side& s, uint64_t v, swy_tag_t tag) {
    swy_request_h req = nullptr;
    wait_req(s.worker, swy_tag_send_nb(s.ep, &v, sizeof(v), tag, nullptr, &req), req);
}

uint64_t recv8(const Side& s, swy_tag_t* tag) {
    uint64_t v = 0;
    swy_tag_recv_info_t info{};
    swy_request_params_t p{};
    p.field_mask = SWY_REQ_PARAM_FIELD_RECV_INFO;
    p.recv_info = &info;
    swy_request_h req = nullptr;
    swy_status_t st = swy_tag_recv_nb(s.worker, &v, sizeof(v), 0, 0, &p, &req);
    if (st == SWY_INPROGRESS) {
        while ((st = swy_request_test(req)) == SWY_INPROGRESS)
            swy_worker_progress(s.worker);
        swy_request_recv_info(req, &info);
        swy_request_free(req);
    }
    if (st != SWY_OK) fail("recv", st);
    *tag = info.sender_tag;
    return v;
}

/// Each side: the arm the variant asks for, then the loop.
void arm_as_asked(const Side& s, int variant) {
    if (variant == 1) {
        while (swy_worker_progress(s.worker) > 0) {}
        if (swy_worker_arm(s.worker) != SWY_OK) fail("arm (expected OK)", SWY_ERR_BUSY);
    } else if (variant == 2) {
        send8(s, 0, kPending);
        usleep(50000);  // the peer's message is in our lane now
        if (swy_status_t st = swy_worker_arm(s.worker); st != SWY_ERR_BUSY)
            fail("arm (expected BUSY)", st);
        swy_tag_t tag = 0;
        recv8(s, &tag);
        if (tag != kPending) fail("pending message", SWY_ERR_INVALID_PARAM);
    }
}

void RoundTrip8B(benchmark::State& state) {
    const int variant = static_cast<int>(state.range(0));
    void* mem =
        mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) fail("mmap", SWY_ERR_NO_MEMORY);
    auto* sh = new (mem) Shared();
    std::fflush(nullptr);
    const pid_t child = fork();
    if (child == 0) {  // echo until told to stop
        Side s = open_side(sh, 1);
        arm_as_asked(s, variant);
        for (;;) {
            swy_tag_t tag = 0;
            const uint64_t v = recv8(s, &tag);
            if (tag == kStop) break;
            send8(s, v, kPing);
        }
        _exit(0);  // no teardown: the parent outlives us and reports nothing of ours
    }
    Side s = open_side(sh, 0);
    arm_as_asked(s, variant);
    uint64_t n = 0;
    for (auto _ : state) {
        send8(s, ++n, kPing);
        swy_tag_t tag = 0;
        benchmark::DoNotOptimize(recv8(s, &tag));
    }
    send8(s, 0, kStop);
    int status = 0;
    while (waitpid(child, &status, 0) < 0) {}
    swy_worker_destroy(s.worker);
    swy_context_destroy(s.context);
    munmap(mem, sizeof(Shared));
    state.SetLabel(variant == 0 ? "never armed" : variant == 1 ? "armed once" : "BUSY arm once");
}
BENCHMARK(RoundTrip8B)->Arg(0)->Arg(1)->Arg(2)->MinTime(0.5)->UseRealTime();

/// Two workers of one process, one thread: send 8 B from A to B, receive it on B. No
/// scheduler in the measurement (a ping-pong between processes needs two idle cores), and it
/// holds exactly what the regression was about: the sender's cost of a message to a worker
/// that once called swy_worker_arm() (and progressed since).
void SendReceive8BOneThread(benchmark::State& state) {
    const int variant = static_cast<int>(state.range(0));
    void* mem =
        mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) fail("mmap", SWY_ERR_NO_MEMORY);
    auto* sh = new (mem) Shared();
    // Side 1 publishes first, so side 0 (which waits for it) can be made second, and then
    // side 1 connects back to side 0's address: no thread needed.
    Side b;
    {
        swy_config_h cfg = nullptr;
        swy_config_read(&cfg);
        swy_config_set(cfg, "TLS", "shm");
        swy_context_params_t cp{};
        cp.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG;
        cp.config = cfg;
        if (swy_status_t st = swy_context_create(&cp, &b.context); st != SWY_OK) fail("ctx", st);
        swy_config_release(cfg);
        if (swy_status_t st = swy_worker_create(b.context, nullptr, &b.worker); st != SWY_OK)
            fail("worker", st);
        void* addr = nullptr;
        size_t len = 0;
        swy_worker_get_address(b.worker, &addr, &len);
        std::memcpy(sh->address[1], addr, len);
        sh->length[1] = static_cast<uint32_t>(len);
        sh->ready[1].store(1);
        swy_worker_release_address(b.worker, addr);
    }
    Side a = open_side(sh, 0);
    if (variant == 1) {
        while (swy_worker_progress(b.worker) > 0) {}
        if (swy_status_t st = swy_worker_arm(b.worker); st != SWY_OK) fail("arm", st);
    } else if (variant == 2) {
        send8(a, 0, kPending);
        if (swy_status_t st = swy_worker_arm(b.worker); st != SWY_ERR_BUSY) fail("arm", st);
    }
    uint64_t n = 0;
    for (auto _ : state) {
        send8(a, ++n, kPing);
        swy_tag_t tag = 0;
        benchmark::DoNotOptimize(recv8(b, &tag));
    }
    swy_worker_destroy(a.worker);
    swy_worker_destroy(b.worker);
    swy_context_destroy(a.context);
    swy_context_destroy(b.context);
    munmap(mem, sizeof(Shared));
    state.SetLabel(variant == 0 ? "never armed" : variant == 1 ? "armed once" : "BUSY arm once");
}
BENCHMARK(SendReceive8BOneThread)->Arg(0)->Arg(1)->Arg(2)->MinTime(0.5);

}  // namespace

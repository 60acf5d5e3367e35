// pmix_ring: started by mpirun with N ranks, each rank connects to its ring neighbour through
// the PMIx bootstrap (switchyard/bootstrap.h) and passes messages of growing sizes round the
// ring; every byte of every message is checked, and so are the bootstrap's own promises
// (rank/size, one cached endpoint per rank, bad ranks refused, barrier, teardown).
// Exit status 0 only if every check passed; a failing rank says what failed on stderr.
// Prints, per rank, the start-up cost: bootstrap init, first endpoint (on-demand address
// fetch) and time to the first received message, all from just before init.
#include <switchyard/bootstrap.h>
#include <switchyard/switchyard.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

int failures = 0;

bool expect(bool ok, const char* what, unsigned rank) {
    if (!ok) {
        std::fprintf(stderr, "pmix_ring rank %u: FAILED: %s\n", rank, what);
        ++failures;
    }
    return ok;
}

bool ok_status(swy_status_t s, const char* what, unsigned rank) {
    if (s == SWY_OK) return true;
    std::fprintf(stderr, "pmix_ring rank %u: %s: %s\n", rank, what, swy_status_string(s));
    ++failures;
    return false;
}

/// Byte @p i of the message rank @p from sends in round @p round: differs per sender, round
/// and position, so a message delivered to the wrong rank, twice or shifted is caught.
uint8_t pattern(unsigned from, unsigned round, size_t i) {
    return static_cast<uint8_t>((i * 131u) ^ (from * 29u) ^ (round * 7u) ^ (i >> 8));
}

swy_tag_t tag_of(unsigned from, unsigned round) { return (swy_tag_t{round} << 32) | from; }

/// Complete a request that a *_nb call returned (or not).
swy_status_t finish(swy_worker_h worker, swy_status_t s, swy_request_h req) {
    if (s != SWY_INPROGRESS) return s;
    s = swy_request_wait(worker, req);
    swy_request_free(req);
    return s;
}

}  // namespace

int main() {
    swy_context_h context = nullptr;
    swy_worker_h worker = nullptr;
    swy_bootstrap_h boot = nullptr;
    // Every exit tears down (a sanitizer build then reports real leaks only).
    auto teardown = [&](int rc) {
        if (boot != nullptr) swy_bootstrap_finalize(boot);
        if (worker != nullptr) swy_worker_destroy(worker);
        if (context != nullptr) swy_context_destroy(context);
        return rc;
    };
    if (swy_context_create(nullptr, &context) != SWY_OK ||
        swy_worker_create(context, nullptr, &worker) != SWY_OK) {
        std::fprintf(stderr, "pmix_ring: cannot create context and worker\n");
        return teardown(1);
    }
    const Clock::time_point t_boot = Clock::now();
    swy_status_t s = swy_bootstrap_pmix_init(worker, &boot);
    if (s != SWY_OK) {
        std::fprintf(stderr, "pmix_ring: swy_bootstrap_pmix_init: %s\n", swy_status_string(s));
        return teardown(s == SWY_ERR_UNSUPPORTED ? 77 : 1);
    }
    const double init_ms = ms_since(t_boot);
    uint32_t rank = 0, size = 0;
    ok_status(swy_bootstrap_rank(boot, &rank), "rank", 0);
    ok_status(swy_bootstrap_size(boot, &size), "size", rank);
    const char* env_size = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (env_size != nullptr) {
        expect(size == static_cast<uint32_t>(std::atoi(env_size)), "size matches the launcher",
               rank);
    }
    expect(size >= 1 && rank < size, "rank within size", rank);
    const unsigned next = (rank + 1) % size, prev = (rank + size - 1) % size;

    swy_ep_h ep = nullptr, again = nullptr, bad = nullptr;
    if (!ok_status(swy_bootstrap_ep(boot, next, nullptr, &ep), "endpoint to next", rank)) {
        return teardown(1);
    }
    const double ep_ms = ms_since(t_boot);
    ok_status(swy_bootstrap_ep(boot, next, nullptr, &again), "endpoint again", rank);
    expect(again == ep, "a second swy_bootstrap_ep returns the cached endpoint", rank);
    expect(swy_bootstrap_ep(boot, size, nullptr, &bad) == SWY_ERR_INVALID_PARAM,
           "a rank outside the job is refused", rank);

    // Sizes cross every protocol: empty, PIO-small, bcopy, fragmented, rendezvous.
    const size_t sizes[] = {0, 1, 8, 100, 4096, 8193, 65536, 262144, 1 << 20, 3000001};
    unsigned round = 0;
    double first_ms = 0;
    for (size_t len : sizes) {
        for (unsigned rep = 0; rep < 3; ++rep, ++round) {
            std::vector<uint8_t> out(len), in(len + 64, 0xEE);
            for (size_t i = 0; i < len; ++i)
                out[i] = pattern(rank, round, i);
            swy_request_h rreq = nullptr, sreq = nullptr;
            swy_tag_recv_info_t info{};
            swy_request_params_t rparams{};
            rparams.field_mask = SWY_REQ_PARAM_FIELD_RECV_INFO;
            rparams.recv_info = &info;
            swy_status_t rs = swy_tag_recv_nb(worker, in.data(), len, tag_of(prev, round),
                                              ~swy_tag_t{0}, &rparams, &rreq);
            swy_status_t ss =
                swy_tag_send_nb(ep, out.data(), len, tag_of(rank, round), nullptr, &sreq);
            ss = finish(worker, ss, sreq);
            if (rs == SWY_INPROGRESS) {
                rs = swy_request_wait(worker, rreq);
                if (swy_request_recv_info(rreq, &info) != SWY_OK) info.length = SIZE_MAX;
                swy_request_free(rreq);
            }
            if (round == 0) first_ms = ms_since(t_boot);
            if (!ok_status(ss, "send", rank) || !ok_status(rs, "receive", rank)) break;
            expect(info.length == len && info.sender_tag == tag_of(prev, round),
                   "receive reports the sender's length and tag", rank);
            size_t bad_at = len;
            for (size_t i = 0; i < len && bad_at == len; ++i) {
                if (in[i] != pattern(prev, round, i)) bad_at = i;
            }
            if (bad_at != len) {
                std::fprintf(stderr,
                             "pmix_ring rank %u: %zu-byte message from %u: byte %zu is "
                             "%u, expected %u\n",
                             rank, len, prev, bad_at, in[bad_at], pattern(prev, round, bad_at));
                ++failures;
            }
            for (size_t i = len; i < in.size(); ++i) {
                if (in[i] != 0xEE) {
                    expect(false, "nothing written past the message", rank);
                    break;
                }
            }
        }
        if (failures) break;
    }

    // An endpoint to ourselves is an ordinary cached endpoint too.
    swy_ep_h self_ep = nullptr;
    if (ok_status(swy_bootstrap_ep(boot, rank, nullptr, &self_ep), "endpoint to self", rank)) {
        uint64_t value = 0x5157000000000000ull | rank, got = 0;
        swy_request_h rreq = nullptr, sreq = nullptr;
        swy_status_t rs =
            swy_tag_recv_nb(worker, &got, sizeof got, 7, ~swy_tag_t{0}, nullptr, &rreq);
        swy_status_t ss = swy_tag_send_nb(self_ep, &value, sizeof value, 7, nullptr, &sreq);
        ok_status(finish(worker, ss, sreq), "send to self", rank);
        ok_status(finish(worker, rs, rreq), "receive from self", rank);
        expect(got == value, "message to self arrives intact", rank);
    }

    ok_status(swy_bootstrap_barrier(boot), "barrier before close", rank);
    ok_status(swy_bootstrap_close_endpoints(boot, SWY_EP_CLOSE_FLUSH), "close endpoints", rank);
    ok_status(swy_bootstrap_barrier(boot), "barrier after close", rank);
    std::printf(
        "pmix_ring rank %u/%u: init %.2f ms, first endpoint %.2f ms, first message "
        "%.2f ms, %u rounds, %s\n",
        rank, size, init_ms, ep_ms, first_ms, round, failures ? "FAILED" : "ok");
    std::fflush(stdout);
    ok_status(swy_bootstrap_finalize(boot), "finalize", rank);
    boot = nullptr;
    return teardown(failures ? 1 : 0);
}

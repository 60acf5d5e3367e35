// The measurements: ping-pong latency, windowed bandwidth / message rate (receiver acks each
// window, as OSU does) and bidirectional bandwidth. Both processes run the same code with
// their own role; only the client's figures are reported.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <switchyard/switchyard.h>

#include "bootstrap.h"
#include "options.h"
#include "session.h"

namespace swy::perf {

struct Result {
    size_t size = 0;
    size_t iters = 0;       ///< measured round trips (lat) or messages per direction
    double latency_us = 0;  ///< lat: one-way (mean); streaming: time per message
    /// lat: one-way median (half the median round trip, as ib_send_lat's t_typical); 0 for
    /// the streaming tests.
    double latency_median_us = 0;
    double bandwidth_MBps = 0;  ///< 10^6 B/s (bibw: both directions together)
    double msg_rate_Mps = 0;    ///< 10^6 messages/s
};

class Runner {
public:
    Runner(const Options& opts, Session& session, Bootstrap& boot)
        : opts_(opts), session_(session), boot_(boot) {}

    /// Run one size. Returns false (message printed) on a failed operation or --check.
    bool run_size(size_t size, Result* out);

private:
    struct Buffers;

    bool run_lat(size_t size, size_t warmup, size_t iters, double* elapsed_us,
                 double* median_round_trip_us);
    bool run_stream(size_t size, size_t warmup, size_t iters, double* elapsed_us);
    bool lat_iteration(Buffers& b, size_t size, uint64_t msg);
    /// One direction of a round trip in one process, resolved once per size: the workers,
    /// the endpoint, the tag and the params of both calls.
    struct LoopbackLeg {
        swy_worker_h rx = nullptr;  ///< receives (progressed first)
        swy_worker_h tx = nullptr;  ///< sends
        swy_ep_h ep = nullptr;      ///< tx's endpoint to rx
        swy_tag_t tag = 0;
        swy_request_params_t recv_params{};
        swy_request_params_t send_params{};
    };
    /// The ping leg (client worker to server worker), or the pong with @p back.
    LoopbackLeg loopback_leg_of(const Buffers& b, swy_tag_t tag, bool back) const;
    /// One leg of a round trip in one process (--loopback, --tls self) without --check: what
    /// one iteration of ucx_perftest -l's tag_lat loop does (post the receive, send, progress
    /// until the receive is done, free it), with no work per message beyond it
    /// (bench/callgrind-small.sh compares the two loops).
    bool loopback_leg(Buffers& b, size_t size, const LoopbackLeg& leg);
    /// run_lat() in one process without --check: loopback_leg() pings and pongs.
    bool run_lat_loopback(Buffers& b, size_t size, size_t warmup, size_t iters, double* elapsed_us,
                          double* median_round_trip_us);
    /// The median of round_trips_us_ (reordered) into @p median_round_trip_us.
    bool median_of_round_trips(double* median_round_trip_us);
    bool stream_round(Buffers& b, size_t size, uint64_t first_msg, size_t count);
    /// Message rate (--test mr): the client keeps `window` sends in flight and the server
    /// `window` receives posted, continuously, with one confirmation at the end (as
    /// ucx_perftest's tag_bw does), instead of bw's per-window acknowledgement.
    bool stream_continuous(Buffers& b, size_t size, uint64_t first_msg, size_t total);

    // Hot-path helpers: post with retry on SWY_ERR_NO_RESOURCE, wait by busy progress.
    // @p memtype is stated on every operation (never left to detection).
    // @p back: the pong direction, which --loopback sends on the server worker's endpoint
    // and receives on the client worker (otherwise the same endpoint and worker).
    bool post_send(const void* buf, size_t len, swy_memtype_t memtype, swy_tag_t tag,
                   swy_request_h* req, bool back = false);
    bool post_recv(void* buf, size_t len, swy_memtype_t memtype, swy_tag_t tag,
                   swy_tag_recv_info_t* info, swy_request_h* req, swy_status_t* imm_status,
                   bool back = false);
    // @p owner / @p back: the worker the request belongs to, progressed first (--loopback).
    bool wait(swy_request_h req, swy_status_t* status, swy_worker_h owner = nullptr);
    bool wait_recv(swy_request_h req, swy_status_t imm_status, swy_tag_recv_info_t* info,
                   size_t size, bool back = false);
    bool verify(const void* buf, size_t size, uint64_t msg, unsigned direction);
    // --check on any memory type: device buffers go through a host staging buffer and
    // swy_mem_copy(); the CPU never touches them.
    bool fill_send(Buffers& b, size_t slot, size_t size, uint64_t msg, unsigned direction);
    bool verify_recv(Buffers& b, size_t slot, size_t size, uint64_t msg, unsigned direction);
    void allocate_buffers(Buffers& b, size_t size, size_t slots);
    [[gnu::cold, gnu::noinline]] bool peer_gone();

    const Options& opts_;
    Session& session_;
    Bootstrap& boot_;
    std::vector<swy_request_h> sends_;
    std::vector<swy_request_h> recvs_;
    std::vector<swy_status_t> recv_imm_;
    std::vector<swy_tag_recv_info_t> recv_info_;
    std::vector<double> round_trips_us_;  ///< lat: one entry per measured round trip
};

}  // namespace swy::perf

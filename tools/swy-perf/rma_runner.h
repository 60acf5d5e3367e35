// The one-sided tests (--test put_lat, put_bw, get_lat, get_bw, fadd_lat, cswap_lat, add_mr),
// as ucx_perftest's ucp_put_lat, ucp_put_bw, ucp_get, ucp_fadd, ucp_cswap and ucp_add run them.
// The client operates on the server's memory; the server only progresses (its worker executes
// what the transport cannot do directly) and, with --check, verifies or fills its memory when
// the client asks between windows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "control.h"
#include "options.h"
#include "runner.h"

namespace swy::perf {

class RmaRunner {
public:
    RmaRunner(const Options& opts, Session& session, Bootstrap& boot)
        : opts_(opts), ctl_(session, boot) {}

    /// Run one size (both processes call it). Returns false (message printed) on a failed
    /// operation or --check.
    bool run_size(size_t size, Result* out);

private:
    /// Per-size state: the memory both sides map and the peer's as this side names it.
    struct Setup {
        size_t size = 0;
        size_t slots = 1;    ///< --check: one target slot per operation of a window
        size_t window = 1;   ///< operations per window (bw tests), in flight (add_mr)
        MappedBuffer local;  ///< source of puts, destination of gets
        MappedBuffer exposed;
        RemoteRegion peer;
        uint64_t next_msg = 0;  ///< index of the next operation (patterns, expected values)
    };

    bool setup(Setup& st, size_t size);
    void teardown(Setup& st);

    // Client side of each test for @p ops operations; appends per-operation times to
    // op_times_ when @p timed (latency tests).
    bool client_phase(Setup& st, size_t ops, bool timed);
    bool put_pingpong(Setup& st);  ///< both sides, one round trip
    bool bw_window(Setup& st, size_t count);
    bool get_one(Setup& st);
    bool fetching_atomic(Setup& st);
    bool posted_adds(Setup& st, size_t ops);
    /// Server side: answer the client's requests until the end of the phase.
    bool server_phase(Setup& st);

    // Helpers.
    bool post_rma(const Setup& st, bool put, void* local, uint64_t remote, swy_request_h* req);
    bool wait_mark(const Setup& st, unsigned char mark);
    bool verify_pingpong(const Setup& st, uint64_t msg, unsigned dir);
    bool flush();
    bool wait_requests(size_t count);
    bool fill_slots(Setup& st, unsigned char* base, uint64_t first, size_t count, unsigned dir);
    bool verify_slots(Setup& st, const unsigned char* base, uint64_t first, size_t count,
                      unsigned dir);
    bool verify_counter(Setup& st, uint64_t expected);
    uint64_t remote_slot(const Setup& st, size_t j) const;

    const Options& opts_;
    Control ctl_;
    std::vector<swy_request_h> reqs_;
    std::vector<double> op_times_;
};

}  // namespace swy::perf

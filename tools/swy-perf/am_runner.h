// The active-message tests (--test am_lat, am_bw), as ucx_perftest's ucp_am_lat and ucp_am_bw
// run them: a handler counts (and with --check verifies) each message; large messages arrive
// as rendezvous descriptors the handler pulls into its buffer with swy_am_recv_data_nb().
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "control.h"
#include "options.h"
#include "runner.h"

namespace swy::perf {

class AmRunner {
public:
    AmRunner(const Options& opts, Session& session, Bootstrap& boot);
    ~AmRunner();

    /// Run one size (both processes call it). Returns false (message printed) on a failed
    /// operation or --check.
    bool run_size(size_t size, Result* out);

private:
    /// A rendezvous receive in flight: which message, into which slot.
    struct Pull {
        AmRunner* runner = nullptr;
        uint64_t msg = 0;
        unsigned char* buffer = nullptr;
    };

    static swy_status_t on_message(void* arg, const void* header, size_t header_length, void* data,
                                   size_t length, const swy_am_recv_param_t* param);
    static void on_pulled(swy_request_h req, swy_status_t status, const swy_tag_recv_info_t* info,
                          void* user_data);
    /// A message's data is complete in @p data: verify it (--check) and count it.
    void arrived(uint64_t msg, const void* data, size_t length);

    bool send(uint16_t id, const unsigned char* data, swy_request_h* req);
    bool wait_arrivals(uint64_t count);
    bool pingpong();
    bool stream(size_t ops);
    bool server_phase();

    const Options& opts_;
    Control ctl_;
    bool handlers_set_ = false;
    // Per size:
    size_t size_ = 0;
    size_t slots_ = 1;   ///< --check: a buffer per message in flight
    size_t window_ = 1;  ///< am_bw: sends in flight
    unsigned dir_in_ = 0;
    std::vector<unsigned char> send_buf_, recv_buf_;
    std::vector<Pull> pulls_;
    std::vector<swy_request_h> reqs_;
    uint64_t next_send_ = 0;  ///< index of our next message
    uint64_t received_ = 0;   ///< handler calls (messages begun to arrive)
    uint64_t arrivals_ = 0;   ///< messages complete here
    bool failed_ = false;     ///< a check or a pull failed in a callback
    std::vector<double> op_times_;
};

}  // namespace swy::perf

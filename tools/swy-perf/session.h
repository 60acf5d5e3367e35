// The Switchyard objects of one swy-perf process: context, worker and the endpoint to the
// peer (or to itself for --tls self). Public C API only.
#pragma once

#include <string>

#include <switchyard/switchyard.h>

#include "bootstrap.h"
#include "options.h"

namespace swy::perf {

class Session {
public:
    /// Create context (SWY_TLS from --tls), worker, exchange addresses, connect.
    /// Returns false with a message printed.
    bool open(const Options& opts, Bootstrap& boot);

    /// Flush-close the endpoint (progressing until done). Returns false on an error.
    bool close_endpoint();

    /// Close the endpoint if still open, destroy worker and context. Safe to call twice.
    void close();
    ~Session() { close(); }

    swy_worker_h worker() const { return worker_; }
    swy_ep_h ep() const { return ep_; }

    /// Set from the endpoint error callback (peer died, connection lost).
    bool failed() const { return failed_status_ != SWY_OK; }
    swy_status_t failed_status() const { return failed_status_; }

    /// "# transport shm, pio yes, credits 128, pio_max 1000 B" (empty if the query failed).
    std::string describe() const;

    /// The endpoint's protocol table for host memory ("" if unavailable).
    std::string protocol_table() const;

private:
    static void on_ep_error(void* arg, swy_ep_h ep, swy_status_t status);

    swy_context_h context_ = nullptr;
    swy_worker_h worker_ = nullptr;
    swy_ep_h ep_ = nullptr;
    swy_status_t failed_status_ = SWY_OK;
};

} // namespace swy::perf

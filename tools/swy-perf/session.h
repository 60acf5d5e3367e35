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
    /// Create context (SWY_TLS from --tls; SWY_MEMTYPES extended with the --memtype types),
    /// check that this process can allocate its buffers' memory type, create the worker,
    /// exchange addresses, connect. Returns false with a message printed.
    bool open(const Options& opts, Bootstrap& boot);

    /// Flush-close the endpoint (progressing until done). Returns false on an error.
    bool close_endpoint();

    /// Close the endpoint if still open, destroy worker and context. Safe to call twice.
    void close();
    ~Session() { close(); }

    swy_context_h context() const { return context_; }
    /// The worker receives and active messages arrive on (--loopback: the server worker).
    swy_worker_h worker() const { return worker_; }
    /// The endpoint sends go out on (--loopback: client worker to server worker).
    swy_ep_h ep() const { return ep_; }
    /// --loopback: the client worker (pong receives) and the server worker's endpoint back
    /// to it (pong sends); otherwise worker() and ep().
    swy_worker_h back_worker() const { return client_worker_ ? client_worker_ : worker_; }
    swy_ep_h back_ep() const { return back_ep_ ? back_ep_ : ep_; }

    /// One round of progress for this process. --loopback: @p first (default: worker()),
    /// and the other worker when @p first had nothing to do, and on every 8th turn in any
    /// case (a busy worker may be waiting on the other: a rendezvous reports events while
    /// it waits). A loop that waits for a request on one worker names it, so an idle peer
    /// worker is not polled on every turn (ucx_perftest -l polls its one worker).
    void progress(swy_worker_h first = nullptr) {
        if (client_worker_ == nullptr) {
            swy_worker_progress(worker_);
            return;
        }
        swy_worker_h a = first != nullptr ? first : worker_;
        if (swy_worker_progress(a) == 0 || (++turns_ & 7) == 0) {
            swy_worker_progress(a == worker_ ? client_worker_ : worker_);
        }
    }

    /// Set from the endpoint error callback (peer died, connection lost).
    bool failed() const { return failed_status_ != SWY_OK; }
    swy_status_t failed_status() const { return failed_status_; }

    /// "# transport shm, pio yes, credits 128, pio_max 1000 B" (empty if the query failed).
    std::string describe() const;

    /// Memory types of this process's send and receive buffers (see Options::memtype).
    swy_memtype_t send_memtype() const { return send_memtype_; }
    swy_memtype_t recv_memtype() const { return recv_memtype_; }

    /// The endpoint's protocol table for the memory type the client sends from, i.e. the
    /// SENDER of --memtype ("" if unavailable).
    std::string protocol_table() const;

private:
    static void on_ep_error(void* arg, swy_ep_h ep, swy_status_t status);
    bool configure_memtypes(const Options& opts, swy_config_h config);
    bool check_memtype(swy_memtype_t type, const std::string& name);
    bool open_loopback(const swy_worker_params_t& wparams);
    bool close_loopback_endpoints();

    swy_context_h context_ = nullptr;
    swy_worker_h worker_ = nullptr;
    swy_ep_h ep_ = nullptr;
    swy_worker_h client_worker_ = nullptr;  ///< --loopback: the second worker
    swy_ep_h back_ep_ = nullptr;            ///< --loopback: server worker -> client worker
    unsigned turns_ = 0;                    ///< --loopback: progress() calls
    Bootstrap* launcher_ = nullptr;         ///< launched mode: owns ep_ and must go before worker_
    Bootstrap* sockaddr_boot_ = nullptr;    ///< --server/--client: closes ep_ with the peer
    swy_status_t failed_status_ = SWY_OK;
    swy_memtype_t send_memtype_ = SWY_MEMTYPE_HOST;
    swy_memtype_t recv_memtype_ = SWY_MEMTYPE_HOST;
    swy_memtype_t table_memtype_ = SWY_MEMTYPE_HOST;  ///< the SENDER's type
};

}  // namespace swy::perf

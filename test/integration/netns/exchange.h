// One rank of a multi-host exchange test: connects to every other rank, runs rounds of a ring
// or all-to-all exchange with every byte verified, and survives failed peers when asked to.
#pragma once

#include <switchyard/switchyard.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "exchange_options.h"

namespace swy::netns {

class Exchange {
public:
    explicit Exchange(const ExchangeOptions& opts) : opts_(opts) {}
    ~Exchange();
    Exchange(const Exchange&) = delete;
    Exchange& operator=(const Exchange&) = delete;

    /// Context, worker, address published, every peer's address collected, endpoints created.
    bool setup();
    /// Every iteration over every size. False on a wrong byte, an unexplained failure or a hang.
    bool run_rounds();
    /// Two-phase barrier (see exchange.cpp): afterwards a peer's failure is its normal exit.
    bool finish();
    /// Closes the endpoints; false if a close hung.
    bool close_endpoints();
    void print_summary(bool ok) const;

private:
    struct Peer {
        Exchange* owner = nullptr;
        int rank = -1;
        swy_ep_h ep = nullptr;
        bool failed = false;    // its endpoint reported an error
        bool finished = false;  // its first barrier message arrived: it is done with the rounds
        swy_status_t failure = SWY_OK;
    };
    /// One posted send or receive of a round.
    struct Op {
        int peer = -1;
        bool is_recv = false;
        swy_request_h req = nullptr;
        std::vector<uint8_t> storage;  // the op's own buffer: only a window's worth lives at once
        uint8_t* buf = nullptr;
        size_t length = 0;
        swy_tag_t tag = 0;
        uint64_t seed = 0;
        bool done = false;
        bool cancel_tried = false;
        swy_status_t status = SWY_INPROGRESS;
        swy_tag_recv_info_t info{};
    };

    static void on_ep_error(void* arg, swy_ep_h ep, swy_status_t status);
    /// Progresses until the --wait-for file exists (false after --timeout seconds).
    bool wait_for_go();
    bool live(int r) const { return !peers_[static_cast<size_t>(r)].failed; }
    void progress_or_wait();
    void post_recv(Op* op);
    void post_send(Op* op);
    /// Progresses until every op completed; cancels receives from peers that failed. False on
    /// timeout (prints what is still pending).
    bool complete(std::vector<Op>* ops, const char* what);
    /// True if a failed op is explained by its peer's endpoint failure; else prints and counts.
    bool failure_explained(const Op& op, const char* what);
    /// Checks the outcome of every op; counts and prints errors. Returns false on any error.
    bool judge(const std::vector<Op>& ops, const char* what);
    bool run_round(unsigned iter, unsigned size_index);
    /// One window of a round: @p count (source, target) pairs posted together and completed.
    bool run_steps(unsigned iter, unsigned size_index, const std::pair<int, int>* steps,
                   size_t count);
    bool barrier_phase(unsigned phase);
    double seconds() const;

    ExchangeOptions opts_;
    swy_context_h context_ = nullptr;
    swy_worker_h worker_ = nullptr;
    std::vector<Peer> peers_;  // indexed by rank; our own entry has no endpoint
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    uint64_t bytes_verified_ = 0;
    uint64_t messages_verified_ = 0;
    uint64_t lost_ = 0;  // operations with a failed peer that did not complete
    unsigned errors_ = 0;
    unsigned idle_ = 0;
};

}  // namespace swy::netns

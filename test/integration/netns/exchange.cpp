#include "exchange.h"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "address_dir.h"
#include "payload.h"

namespace swy::netns {
namespace {

// Tags: data messages carry (iteration, size index, source rank), so a message can only match
// the receive of its own round and sender; barrier messages set the top bit.
constexpr swy_tag_t kBarrierBit = swy_tag_t{1} << 63;
constexpr swy_tag_t kExactMask = ~swy_tag_t{0};

swy_tag_t data_tag(unsigned iter, unsigned size_index, int src) {
    return (swy_tag_t{iter & 0x7FFFFFFFu} << 32) | (swy_tag_t{size_index} << 16) |
           static_cast<swy_tag_t>(src);
}

swy_tag_t barrier_tag(unsigned phase, int src) {
    return kBarrierBit | (swy_tag_t{phase} << 16) | static_cast<swy_tag_t>(src);
}

// A send or receive towards a failed peer may end in any of these; anything else is a bug.
bool is_failure_status(swy_status_t s) {
    return s == SWY_ERR_CONNECTION_RESET || s == SWY_ERR_CANCELED || s == SWY_ERR_ENDPOINT_CLOSED ||
           s == SWY_ERR_UNREACHABLE || s == SWY_ERR_TIMED_OUT || s == SWY_ERR_IO;
}

}  // namespace

Exchange::~Exchange() {
    if (worker_ != nullptr) swy_worker_destroy(worker_);
    if (context_ != nullptr) swy_context_destroy(context_);
}

double Exchange::seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Exchange::on_ep_error(void* arg, swy_ep_h /*ep*/, swy_status_t status) {
    auto* p = static_cast<Peer*>(arg);
    if (p->failed) return;
    p->failed = true;
    p->failure = status;
    if (p->finished) {
        // The peer finished every round and passed the first barrier: it is allowed to leave.
        std::printf("rank %d: ep to rank %d closed after it finished: %s\n", p->owner->opts_.rank,
                    p->rank, swy_status_string(status));
    } else {
        std::printf("rank %d: ep to rank %d failed: %s (at %.2f s)\n", p->owner->opts_.rank,
                    p->rank, swy_status_string(status), p->owner->seconds());
        if (!p->owner->opts_.tolerate_failures) ++p->owner->errors_;
    }
    std::fflush(stdout);
}

bool Exchange::setup() {
    const int me = opts_.rank;
    swy_status_t s = swy_context_create(nullptr, &context_);
    if (s == SWY_OK) s = swy_worker_create(context_, nullptr, &worker_);
    if (s != SWY_OK) {
        std::fprintf(stderr, "rank %d: cannot create context/worker: %s\n", me,
                     swy_status_string(s));
        return false;
    }
    void* addr = nullptr;
    size_t addr_len = 0;
    s = swy_worker_get_address(worker_, &addr, &addr_len);
    if (s != SWY_OK) {
        std::fprintf(stderr, "rank %d: swy_worker_get_address: %s\n", me, swy_status_string(s));
        return false;
    }
    const bool published = publish_address(opts_.dir, me, addr, addr_len);
    swy_worker_release_address(worker_, addr);
    std::vector<std::vector<uint8_t>> addresses;
    if (!published || !collect_addresses(opts_.dir, opts_.size, opts_.timeout_s, &addresses)) {
        return false;
    }

    peers_.resize(static_cast<size_t>(opts_.size));
    std::string transports;
    for (int r = 0; r < opts_.size; ++r) {
        Peer& p = peers_[static_cast<size_t>(r)];
        p.owner = this;
        p.rank = r;
        if (r == me) continue;
        swy_ep_params_t params{};
        params.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS | SWY_EP_PARAM_FIELD_ERR_HANDLER;
        params.remote_address = addresses[static_cast<size_t>(r)].data();
        params.remote_address_length = addresses[static_cast<size_t>(r)].size();
        params.err_cb = &Exchange::on_ep_error;
        params.err_arg = &p;
        s = swy_ep_create(worker_, &params, &p.ep);
        if (s != SWY_OK) {
            std::fprintf(stderr, "rank %d: cannot connect to rank %d: %s\n", me, r,
                         swy_status_string(s));
            return false;
        }
        swy_ep_attr_t attr{};
        attr.field_mask = SWY_EP_ATTR_FIELD_LANE | SWY_EP_ATTR_FIELD_PIO_DETAIL;
        if (swy_ep_query(p.ep, &attr) == SWY_OK) {
            // Appends, not operator+: GCC 12 -O3 warns falsely (-Wrestrict) on " " + string.
            transports.append(" ").append(std::to_string(r)).append("=").append(attr.transport);
        }
    }
    std::printf("rank %d: connected to %d ranks, transports:%s\n", me, opts_.size - 1,
                transports.c_str());
    std::fflush(stdout);
    if (!opts_.wait_for.empty() && !wait_for_go()) return false;
    start_ = std::chrono::steady_clock::now();  // times reported from here: the rounds
    return true;
}

bool Exchange::wait_for_go() {
    // Keep progressing meanwhile: peers that connected to us expect their connections served.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(opts_.timeout_s);
    while (access(opts_.wait_for.c_str(), F_OK) != 0) {
        if (std::chrono::steady_clock::now() > deadline) {
            std::printf("rank %d: %s did not appear within %u s\n", opts_.rank,
                        opts_.wait_for.c_str(), opts_.timeout_s);
            return false;
        }
        // Nothing to do but serve connections: sleep on the event fd between progress calls
        // rather than poll (128 ranks polling on two cores starve the launcher).
        for (int i = 0; i < 16; ++i) {
            if (swy_worker_progress(worker_) == 0) (void)swy_worker_wait(worker_, 20);
        }
    }
    std::printf("rank %d: %s is there, starting the rounds\n", opts_.rank, opts_.wait_for.c_str());
    return true;
}

void Exchange::progress_or_wait() {
    if (swy_worker_progress(worker_) != 0) {
        idle_ = 0;
        return;
    }
    // Many ranks share few cores: after a few idle polls, sleep on the event fd until a
    // message or connection needs us; polling longer only takes the core from the ranks that
    // have data to move. The timeout is a backstop: the event fd wakes the wait.
    if (++idle_ >= 16) {
        idle_ = 0;
        (void)swy_worker_wait(worker_, 50);
    }
}

void Exchange::post_recv(Op* op) {
    swy_request_params_t params{};
    params.field_mask = SWY_REQ_PARAM_FIELD_MEMTYPE | SWY_REQ_PARAM_FIELD_RECV_INFO;
    params.memtype = SWY_MEMTYPE_HOST;
    params.recv_info = &op->info;
    swy_status_t s =
        swy_tag_recv_nb(worker_, op->buf, op->length, op->tag, kExactMask, &params, &op->req);
    if (s != SWY_INPROGRESS) {
        op->done = true;
        op->status = s;
        op->req = nullptr;
    }
}

void Exchange::post_send(Op* op) {
    swy_request_params_t params{};
    params.field_mask = SWY_REQ_PARAM_FIELD_MEMTYPE;
    params.memtype = SWY_MEMTYPE_HOST;
    swy_status_t s = swy_tag_send_nb(peers_[static_cast<size_t>(op->peer)].ep, op->buf, op->length,
                                     op->tag, &params, &op->req);
    if (s != SWY_INPROGRESS) {
        op->done = true;
        op->status = s;
        op->req = nullptr;
    }
}

bool Exchange::complete(std::vector<Op>* ops, const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(opts_.timeout_s);
    for (;;) {
        bool all_done = true;
        for (Op& op : *ops) {
            if (op.done) continue;
            swy_status_t s = swy_request_test(op.req);
            if (s != SWY_INPROGRESS) {
                if (op.is_recv && s == SWY_OK) (void)swy_request_recv_info(op.req, &op.info);
                swy_request_free(op.req);
                op.req = nullptr;
                op.done = true;
                op.status = s;
                continue;
            }
            all_done = false;
            const Peer& p = peers_[static_cast<size_t>(op.peer)];
            // Nothing more will come from a failed peer. A receive it already matched (data
            // arriving) refuses the cancel and must then fail by itself.
            if (op.is_recv && p.failed && !op.cancel_tried) {
                op.cancel_tried = true;
                (void)swy_request_cancel(worker_, op.req);
            }
        }
        if (all_done) return true;
        if (std::chrono::steady_clock::now() > deadline) break;
        progress_or_wait();
    }
    std::printf("rank %d: %s: timed out after %u s; still pending:\n", opts_.rank, what,
                opts_.timeout_s);
    for (Op& op : *ops) {
        if (op.done) continue;
        const Peer& p = peers_[static_cast<size_t>(op.peer)];
        std::printf("rank %d:   %s rank %d, %zu bytes, tag %016" PRIx64 "%s%s\n", opts_.rank,
                    op.is_recv ? "receive from" : "send to", op.peer, op.length, op.tag,
                    p.failed ? " (its endpoint failed" : " (its endpoint is up",
                    op.cancel_tried ? ", cancel refused)" : ")");
        // The request is abandoned: freeing it lets the worker release it on completion.
        swy_request_free(op.req);
        op.req = nullptr;
    }
    std::fflush(stdout);
    ++errors_;
    return false;
}

bool Exchange::failure_explained(const Op& op, const char* what) {
    // A failed operation must be explained by its endpoint's error callback, which may run in
    // a later progress call than the request's completion: give it a moment.
    const Peer& p = peers_[static_cast<size_t>(op.peer)];
    const auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!p.failed && is_failure_status(op.status) && std::chrono::steady_clock::now() < grace) {
        progress_or_wait();
    }
    if (p.failed && is_failure_status(op.status)) {
        ++lost_;
        return true;
    }
    std::printf("rank %d: %s: %s rank %d (%zu bytes) failed: %s%s\n", opts_.rank, what,
                op.is_recv ? "receive from" : "send to", op.peer, op.length,
                swy_status_string(op.status),
                p.failed ? "" : " while its endpoint reported no error");
    ++errors_;
    return false;
}

bool Exchange::judge(const std::vector<Op>& ops, const char* what) {
    const unsigned errors_before = errors_;
    for (const Op& op : ops) {
        if (op.status != SWY_OK) {
            (void)failure_explained(op, what);
            continue;
        }
        if (!op.is_recv) continue;
        if (op.info.length != op.length || op.info.sender_tag != op.tag) {
            std::printf("rank %d: %s: receive from rank %d got %zu bytes with tag %016" PRIx64
                        ", expected %zu bytes with tag %016" PRIx64 "\n",
                        opts_.rank, what, op.peer, op.info.length, op.info.sender_tag, op.length,
                        op.tag);
            ++errors_;
            continue;
        }
        const size_t bad = payload_check(op.buf, op.length, op.seed);
        if (bad != op.length) {
            std::printf(
                "rank %d: %s: message from rank %d (%zu bytes): byte %zu is 0x%02x, "
                "expected 0x%02x\n",
                opts_.rank, what, op.peer, op.length, bad, op.buf[bad], payload_byte(op.seed, bad));
            ++errors_;
            continue;
        }
        bytes_verified_ += op.length;
        ++messages_verified_;
    }
    std::fflush(stdout);
    return errors_ == errors_before && (opts_.tolerate_failures || errors_ == 0);
}

bool Exchange::run_round(unsigned iter, unsigned size_index) {
    const int me = opts_.rank, n = opts_.size;
    // Peers in shift order: at step k, send to rank me+k and receive from me-k, so that every
    // rank's window of steps pairs with the same window on its peers (a pairwise exchange).
    std::vector<std::pair<int, int>> steps;  // (source, target)
    if (opts_.pattern == Pattern::kRing) {
        steps.emplace_back((me + n - 1) % n, (me + 1) % n);
    } else {
        for (int k = 1; k < n; ++k)
            steps.emplace_back((me + n - k) % n, (me + k) % n);
    }
    // A window bounds the buffers in flight (every rank of a 128-rank all-to-all of 1 MiB
    // messages would otherwise hold 254 MiB); 0 posts every step at once.
    const size_t window = opts_.window == 0 ? steps.size() : opts_.window;
    bool ok = true;
    for (size_t first = 0; first < steps.size(); first += window) {
        const size_t last = std::min(steps.size(), first + window);
        ok = run_steps(iter, size_index, steps.data() + first, last - first) && ok;
        if (!ok && !opts_.tolerate_failures) return false;
    }
    return ok;
}

bool Exchange::run_steps(unsigned iter, unsigned size_index, const std::pair<int, int>* steps,
                         size_t count) {
    const int me = opts_.rank;
    const size_t length = opts_.sizes[size_index];
    std::vector<Op> ops;
    ops.reserve(2 * count);  // post_recv keeps &op->info
    // Receives first, so that most messages land in a posted buffer.
    for (size_t i = 0; i < count; ++i) {
        const int src = steps[i].first;
        if (!live(src) && opts_.tolerate_failures) continue;
        Op& op = ops.emplace_back();
        op.peer = src;
        op.is_recv = true;
        op.storage.resize(std::max<size_t>(length, 1));
        op.buf = op.storage.data();
        op.length = length;
        op.tag = data_tag(iter, size_index, src);
        op.seed = payload_seed(src, me, iter, size_index);
        post_recv(&op);
    }
    for (size_t i = 0; i < count; ++i) {
        const int dst = steps[i].second;
        if (!live(dst) && opts_.tolerate_failures) continue;
        Op& op = ops.emplace_back();
        op.peer = dst;
        op.storage.resize(std::max<size_t>(length, 1));
        op.buf = op.storage.data();
        op.length = length;
        op.tag = data_tag(iter, size_index, me);
        op.seed = payload_seed(me, dst, iter, size_index);
        payload_fill(op.buf, length, op.seed);
        post_send(&op);
    }
    char what[96];
    std::snprintf(what, sizeof(what), "iteration %u, %zu bytes", iter, length);
    const bool completed = complete(&ops, what);
    return judge(ops, what) && completed;
}

bool Exchange::run_rounds() {
    for (unsigned iter = 0; iter < opts_.iters; ++iter) {
        for (unsigned si = 0; si < opts_.sizes.size(); ++si) {
            if (!run_round(iter, si)) return false;
        }
        if ((iter + 1) % opts_.progress_every == 0 || iter + 1 == opts_.iters) {
            std::string live_list;
            for (int r = 0; r < opts_.size; ++r) {
                if (r != opts_.rank && live(r)) live_list.append(" ").append(std::to_string(r));
            }
            std::printf("rank %d: iteration %u/%u done at %.2f s, %" PRIu64
                        " bytes verified, live peers:%s\n",
                        opts_.rank, iter + 1, opts_.iters, seconds(), bytes_verified_,
                        live_list.empty() ? " none" : live_list.c_str());
            std::fflush(stdout);
        }
    }
    return true;
}

// Phase 0 tells every peer that this rank has finished its rounds (a later failure of its
// endpoint is then its normal exit); phase 1 is sent only after phase 0 arrived from every
// live peer, so no rank leaves before every other has seen it finish.
bool Exchange::barrier_phase(unsigned phase) {
    const int me = opts_.rank;
    std::vector<Op> ops;
    ops.reserve(2 * static_cast<size_t>(opts_.size));
    std::vector<uint64_t> in(static_cast<size_t>(opts_.size), 0);
    uint64_t out = static_cast<uint64_t>(me);  // the payload is the sender's rank
    for (int r = 0; r < opts_.size; ++r) {
        if (r == me || !live(r)) continue;
        Op& op = ops.emplace_back();
        op.peer = r;
        op.is_recv = true;
        op.buf = reinterpret_cast<uint8_t*>(&in[static_cast<size_t>(r)]);
        op.length = sizeof(uint64_t);
        op.tag = barrier_tag(phase, r);
        post_recv(&op);
    }
    for (int r = 0; r < opts_.size; ++r) {
        if (r == me || !live(r)) continue;
        Op& op = ops.emplace_back();
        op.peer = r;
        op.buf = reinterpret_cast<uint8_t*>(&out);
        op.length = sizeof(uint64_t);
        op.tag = barrier_tag(phase, me);
        post_send(&op);
    }
    const char* what = phase == 0 ? "barrier (finished)" : "barrier (leaving)";
    bool ok = complete(&ops, what);
    for (const Op& op : ops) {
        if (op.status != SWY_OK) {
            ok = failure_explained(op, what) && ok;
            continue;
        }
        if (!op.is_recv) continue;
        if (op.info.length != sizeof(uint64_t) ||
            in[static_cast<size_t>(op.peer)] != static_cast<uint64_t>(op.peer)) {
            std::printf("rank %d: %s: bad message from rank %d\n", me, what, op.peer);
            ++errors_;
            ok = false;
        }
        if (phase == 0) peers_[static_cast<size_t>(op.peer)].finished = true;
    }
    std::fflush(stdout);
    return ok && (opts_.tolerate_failures || errors_ == 0);
}

bool Exchange::finish() { return barrier_phase(0) && barrier_phase(1); }

bool Exchange::close_endpoints() {
    bool ok = true;
    for (Peer& p : peers_) {
        if (p.ep == nullptr) continue;
        swy_request_h req = nullptr;
        swy_status_t s =
            swy_ep_close_nb(p.ep, p.failed ? SWY_EP_CLOSE_FORCE : SWY_EP_CLOSE_FLUSH, &req);
        p.ep = nullptr;
        if (s != SWY_INPROGRESS) continue;  // closed, or failed: nothing left to wait for
        const auto deadline =
            std::chrono::steady_clock::now() + std::chrono::seconds(opts_.timeout_s);
        while (swy_request_test(req) == SWY_INPROGRESS) {
            if (std::chrono::steady_clock::now() > deadline) {
                std::printf("rank %d: closing the ep to rank %d hung for %u s\n", opts_.rank,
                            p.rank, opts_.timeout_s);
                ++errors_;
                ok = false;
                break;
            }
            progress_or_wait();
        }
        swy_request_free(req);
    }
    std::fflush(stdout);
    return ok;
}

void Exchange::print_summary(bool ok) const {
    std::string failed;
    for (const Peer& p : peers_) {
        if (p.failed && !p.finished) failed.append(" ").append(std::to_string(p.rank));
    }
    const double t = seconds();
    std::printf("rank %d: %s: %s, %d ranks, %u iterations, %zu sizes, %" PRIu64
                " messages and %" PRIu64
                " bytes verified in %.2f s (%.1f MB/s received), "
                "%" PRIu64 " operations lost to failed peers, %u errors, failed eps:%s\n",
                opts_.rank, ok && errors_ == 0 ? "PASS" : "FAIL", pattern_name(opts_.pattern),
                opts_.size, opts_.iters, opts_.sizes.size(), messages_verified_, bytes_verified_, t,
                t > 0 ? static_cast<double>(bytes_verified_) / t / 1e6 : 0.0, lost_, errors_,
                failed.empty() ? " none" : failed.c_str());
    std::fflush(stdout);
}

}  // namespace swy::netns

#include "am_runner.h"

#include <algorithm>
#include <cstdio>

#include "pattern.h"

namespace swy::perf {
namespace {

constexpr uint16_t kAmPing = 1;  ///< client -> server (am_bw, am_lat)
constexpr uint16_t kAmPong = 2;  ///< server -> client (am_lat)
constexpr size_t kCheckMemoryCap = size_t{256} << 20;

}  // namespace

AmRunner::AmRunner(const Options& opts, Session& session, Bootstrap& boot)
    : opts_(opts), ctl_(session, boot) {}

AmRunner::~AmRunner() {
    if (!handlers_set_) return;
    swy_worker_h worker = ctl_.session().worker();
    if (worker == nullptr) return;
    swy_worker_set_am_handler(worker, kAmPing, nullptr, nullptr, 0);
    swy_worker_set_am_handler(worker, kAmPong, nullptr, nullptr, 0);
}

void AmRunner::arrived(uint64_t msg, const void* data, size_t length) {
    if (opts_.check) {
        size_t offset = 0;
        unsigned expected = 0, got = 0;
        if (length != size_) {
            std::fprintf(stderr, "swy-perf: check failed: message %llu has %zu B, expected %zu\n",
                         static_cast<unsigned long long>(msg), length, size_);
            failed_ = true;
        } else if (!pattern_verify(data, length, pattern_seed(msg, size_, dir_in_), &offset,
                                   &expected, &got)) {
            std::fprintf(stderr,
                         "swy-perf: check failed: %s size %zu, message %llu, offset %zu: "
                         "expected 0x%02x, got 0x%02x\n",
                         test_name(opts_.test), size_, static_cast<unsigned long long>(msg), offset,
                         expected, got);
            failed_ = true;
        }
    }
    ++arrivals_;
}

swy_status_t AmRunner::on_message(void* arg, const void*, size_t, void* data, size_t length,
                                  const swy_am_recv_param_t* param) {
    auto* self = static_cast<AmRunner*>(arg);
    const uint64_t msg = self->received_++;
    const bool rndv = (param->field_mask & SWY_AM_RECV_PARAM_FIELD_FLAGS) != 0 &&
                      (param->flags & SWY_AM_RECV_FLAG_RNDV) != 0;
    if (!rndv) {
        self->arrived(msg, data, length);
        return SWY_OK;
    }
    // Rendezvous: pull into our buffer (a slot per message in flight with --check).
    Pull& pull = self->pulls_[msg % self->slots_];
    pull.runner = self;
    pull.msg = msg;
    pull.buffer = self->recv_buf_.data() + (msg % self->slots_) * self->size_;
    swy_request_params_t params{};
    params.field_mask = SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA |
                        SWY_REQ_PARAM_FIELD_MEMTYPE | SWY_REQ_PARAM_FIELD_RECV_INFO;
    params.recv_cb = &AmRunner::on_pulled;
    params.user_data = &pull;
    params.memtype = SWY_MEMTYPE_HOST;
    swy_tag_recv_info_t info{};
    params.recv_info = &info;
    swy_request_h req = nullptr;
    swy_status_t s = swy_am_recv_data_nb(self->ctl_.session().worker(), data, pull.buffer,
                                         self->size_, &params, &req);
    if (s == SWY_OK) {
        self->arrived(msg, pull.buffer, info.length);
    } else if (s == SWY_INPROGRESS) {
        swy_request_free(req);  // on_pulled still runs
    } else {
        std::fprintf(stderr, "swy-perf: swy_am_recv_data_nb(%zu B): %s\n", self->size_,
                     swy_status_string(s));
        self->failed_ = true;
    }
    return SWY_OK;
}

void AmRunner::on_pulled(swy_request_h, swy_status_t status, const swy_tag_recv_info_t* info,
                         void* user_data) {
    auto* pull = static_cast<Pull*>(user_data);
    AmRunner* self = pull->runner;
    if (status != SWY_OK) {
        std::fprintf(stderr, "swy-perf: rendezvous receive of message %llu: %s\n",
                     static_cast<unsigned long long>(pull->msg), swy_status_string(status));
        self->failed_ = true;
        ++self->arrivals_;
        return;
    }
    self->arrived(pull->msg, pull->buffer, info != nullptr ? info->length : self->size_);
}

bool AmRunner::send(uint16_t id, const unsigned char* data, swy_request_h* req) {
    swy_request_params_t params{};
    params.field_mask = SWY_REQ_PARAM_FIELD_MEMTYPE;
    params.memtype = SWY_MEMTYPE_HOST;
    *req = nullptr;
    swy_status_t s = swy_am_send_nb(ctl_.session().ep(), id, nullptr, 0, data, size_, &params, req);
    if (s == SWY_OK || s == SWY_INPROGRESS) return true;
    std::fprintf(stderr, "swy-perf: swy_am_send_nb(%zu B): %s\n", size_, swy_status_string(s));
    return false;
}

bool AmRunner::wait_arrivals(uint64_t count) {
    while (arrivals_ < count && !failed_) {
        if (!ctl_.progress()) return false;
    }
    return !failed_;
}

// ---- am_lat ----------------------------------------------------------------------------------

bool AmRunner::pingpong() {
    const uint64_t msg = next_send_++;
    const bool client = ctl_.boot().role() == Role::kClient;
    if (!client && !wait_arrivals(msg + 1)) return false;
    if (opts_.check)
        pattern_fill(send_buf_.data(), size_, pattern_seed(msg, size_, client ? 0 : 1));
    swy_request_h req = nullptr;
    if (!send(client ? kAmPing : kAmPong, send_buf_.data(), &req)) return false;
    if (req != nullptr && !ctl_.complete(SWY_INPROGRESS, req, "active message send")) {
        return false;
    }
    return !client || wait_arrivals(msg + 1);
}

// ---- am_bw -----------------------------------------------------------------------------------

bool AmRunner::stream(size_t ops) {
    const uint64_t first = next_send_;
    for (size_t i = 0; i < ops; ++i) {
        swy_request_h& slot = reqs_[i % window_];
        if (slot != nullptr) {
            swy_request_h req = slot;
            slot = nullptr;
            if (!ctl_.complete(SWY_INPROGRESS, req, "active message send")) return false;
        }
        unsigned char* data = send_buf_.data() + (i % slots_) * size_;
        if (opts_.check) pattern_fill(data, size_, pattern_seed(first + i, size_, 0));
        if (!send(kAmPing, data, &slot)) return false;
        if (failed_) return false;
    }
    for (swy_request_h& slot : reqs_) {
        if (slot == nullptr) continue;
        swy_request_h req = slot;
        slot = nullptr;
        if (!ctl_.complete(SWY_INPROGRESS, req, "active message send")) return false;
    }
    next_send_ += ops;
    // The receiver confirms it has them all (self: we are the receiver).
    if (ctl_.boot().role() == Role::kSelf) return wait_arrivals(next_send_);
    return ctl_.request(CtlMessage{CtlMessage::kDone, 0, 0, next_send_});
}

bool AmRunner::server_phase() {
    CtlMessage msg;
    if (!ctl_.next_request(&msg)) return false;
    if (msg.kind != CtlMessage::kDone) {
        std::fprintf(stderr, "swy-perf: unexpected control message %u\n", msg.kind);
        return false;
    }
    const bool ok = wait_arrivals(msg.count);
    return ctl_.reply(ok) && ok;
}

// ---- driver ----------------------------------------------------------------------------------

bool AmRunner::run_size(size_t size, Result* out) {
    const size_t iters = opts_.iters ? opts_.iters : default_iters(opts_, size);
    const size_t warmup = opts_.warmup != SIZE_MAX ? opts_.warmup : default_warmup(opts_, size);
    swy_worker_h worker = ctl_.session().worker();
    Bootstrap& boot = ctl_.boot();
    const Role role = boot.role();
    if (!boot.barrier([this] { ctl_.session().progress(); })) {
        std::fprintf(stderr, "swy-perf: the peer went away before size %zu\n", size);
        return false;
    }
    const bool lat = opts_.test == TestKind::kAmLat;
    size_ = size;
    window_ = lat ? 1 : opts_.window;
    slots_ = 1;
    if (opts_.check && !lat) {
        slots_ = std::clamp<size_t>(kCheckMemoryCap / std::max<size_t>(size, 1), 1, window_);
        window_ = slots_;
    }
    send_buf_.assign(std::max<size_t>(size * slots_, 1), 0);
    recv_buf_.assign(std::max<size_t>(size * slots_, 1), 0);
    pulls_.assign(slots_, Pull{});
    reqs_.assign(window_, nullptr);
    next_send_ = received_ = arrivals_ = 0;
    failed_ = false;
    dir_in_ = role == Role::kClient && lat ? 1 : 0;
    if (!handlers_set_) {
        for (uint16_t id : {kAmPing, kAmPong}) {
            swy_status_t s = swy_worker_set_am_handler(worker, id, &AmRunner::on_message, this, 0);
            if (s != SWY_OK) {
                std::fprintf(stderr, "swy-perf: swy_worker_set_am_handler: %s\n",
                             swy_status_string(s));
                return false;
            }
        }
        handlers_set_ = true;
    }
    // Both sides have their handlers before the first message.
    if (!boot.barrier([this] { ctl_.session().progress(); })) return false;

    op_times_.clear();
    op_times_.reserve(lat ? iters : 0);
    PhaseClock clock;
    for (int phase = 0; phase < 2; ++phase) {
        const size_t ops = phase == 0 ? warmup : iters;
        clock.start();
        if (lat) {
            uint64_t last = clock.start_ticks;
            for (size_t i = 0; i < ops; ++i) {
                if (!pingpong()) return false;
                if (phase == 1) {
                    const uint64_t t = ticks();
                    op_times_.push_back(static_cast<double>(t - last));
                    last = t;
                }
            }
        } else if (role == Role::kServer) {
            if (!server_phase()) return false;
        } else if (!stream(ops)) {
            return false;
        }
        clock.stop();
    }
    fill_result(opts_, size, iters, clock.elapsed_us(), median_of(op_times_) * clock.us_per_tick(),
                out);
    return true;
}

}  // namespace swy::perf

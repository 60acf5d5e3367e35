#include "rma_runner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "pattern.h"

namespace swy::perf {
namespace {

// --check needs one target slot per operation of a window; cap what that costs per side.
constexpr size_t kCheckMemoryCap = size_t{256} << 20;

// put_lat: the value of the last byte of iteration @p msg. Never 0 (fresh memory) and never
// the previous iteration's value, so a poller cannot mistake old data for new.
unsigned char mark_of(uint64_t msg) { return static_cast<unsigned char>(1 + msg % 255); }

// Every operation states host memory (no detection), as ucx_perftest passes its memory type.
// Built once: these tests time operations of a few ten nanoseconds.
const swy_request_params_t kHostParams = [] {
    swy_request_params_t params{};
    params.field_mask = SWY_REQ_PARAM_FIELD_MEMTYPE;
    params.memtype = SWY_MEMTYPE_HOST;
    return params;
}();

}  // namespace

uint64_t RmaRunner::remote_slot(const Setup& st, size_t j) const {
    return st.peer.address + (j % st.slots) * st.size;
}

bool RmaRunner::setup(Setup& st, size_t size) {
    const bool bw = opts_.test == TestKind::kPutBw || opts_.test == TestKind::kGetBw;
    st.size = size;
    st.window = bw || opts_.test == TestKind::kAddMr ? opts_.window : 1;
    if (opts_.check && bw) {
        st.slots = std::clamp<size_t>(kCheckMemoryCap / std::max<size_t>(size, 1), 1, st.window);
        st.window = st.slots;
    }
    const size_t bytes = std::max<size_t>(size * st.slots, 8);
    swy_context_h context = ctl_.session().context();
    if (!st.local.map(context, bytes, opts_.register_memory) ||
        !st.exposed.map(context, bytes, opts_.register_memory)) {
        return false;
    }
    reqs_.assign(st.window, nullptr);
    return exchange_keys(ctl_, st.exposed, &st.peer);
}

void RmaRunner::teardown(Setup& st) {
    // Our key to the peer's memory goes before the peer unmaps it, and ours stays mapped
    // until the peer is done with it.
    if (st.peer.rkey != nullptr) swy_rkey_destroy(st.peer.rkey);
    st.peer.rkey = nullptr;
    ctl_.boot().barrier([this] { ctl_.session().progress(); });
    st.local.release();
    st.exposed.release();
}

bool RmaRunner::post_rma(const Setup& st, bool put, void* local, uint64_t remote,
                         swy_request_h* req) {
    swy_ep_h ep = ctl_.session().ep();
    for (;;) {
        *req = nullptr;
        swy_status_t s =
            put ? swy_put_nb(ep, local, st.size, remote, st.peer.rkey, &kHostParams, req)
                : swy_get_nb(ep, local, st.size, remote, st.peer.rkey, &kHostParams, req);
        if (s == SWY_OK || s == SWY_INPROGRESS) return true;
        if (s != SWY_ERR_NO_RESOURCE) {
            std::fprintf(stderr, "swy-perf: %s(%zu B): %s\n", put ? "swy_put_nb" : "swy_get_nb",
                         st.size, swy_status_string(s));
            return false;
        }
        if (!ctl_.progress()) return false;
    }
}

bool RmaRunner::flush() {
    swy_request_params_t params{};
    swy_request_h req = nullptr;
    swy_status_t s = swy_ep_flush_nb(ctl_.session().ep(), &params, &req);
    return ctl_.complete(s, req, "swy_ep_flush_nb");
}

bool RmaRunner::wait_requests(size_t count) {
    const char* what = opts_.test == TestKind::kGetBw ? "get" : "put";
    for (size_t j = 0; j < count; ++j) {
        if (reqs_[j] == nullptr) continue;
        swy_request_h req = reqs_[j];
        reqs_[j] = nullptr;
        if (!ctl_.complete(SWY_INPROGRESS, req, what)) return false;
    }
    return true;
}

bool RmaRunner::fill_slots(Setup& st, unsigned char* base, uint64_t first, size_t count,
                           unsigned dir) {
    for (size_t j = 0; j < count; ++j) {
        pattern_fill(base + (j % st.slots) * st.size, st.size,
                     pattern_seed(first + j, st.size, dir));
    }
    return true;
}

bool RmaRunner::verify_slots(Setup& st, const unsigned char* base, uint64_t first, size_t count,
                             unsigned dir) {
    for (size_t j = 0; j < count; ++j) {
        size_t offset;
        unsigned expected, got;
        if (!pattern_verify(base + (j % st.slots) * st.size, st.size,
                            pattern_seed(first + j, st.size, dir), &offset, &expected, &got)) {
            std::fprintf(stderr,
                         "swy-perf: check failed: %s size %zu, operation %llu, offset %zu: "
                         "expected 0x%02x, got 0x%02x\n",
                         test_name(opts_.test), st.size, static_cast<unsigned long long>(first + j),
                         offset, expected, got);
            return false;
        }
    }
    return true;
}

bool RmaRunner::verify_counter(Setup& st, uint64_t expected) {
    uint64_t value;
    if (st.size == 4) {
        value = __atomic_load_n(reinterpret_cast<uint32_t*>(st.exposed.get()), __ATOMIC_ACQUIRE);
        expected = static_cast<uint32_t>(expected);
    } else {
        value = __atomic_load_n(reinterpret_cast<uint64_t*>(st.exposed.get()), __ATOMIC_ACQUIRE);
    }
    if (value == expected) return true;
    std::fprintf(stderr, "swy-perf: check failed: %s final counter %llu, expected %llu\n",
                 test_name(opts_.test), static_cast<unsigned long long>(value),
                 static_cast<unsigned long long>(expected));
    return false;
}

// ---- put_lat ---------------------------------------------------------------------------------

bool RmaRunner::wait_mark(const Setup& st, unsigned char mark) {
    const unsigned char* last = st.exposed.get() + st.size - 1;
    while (__atomic_load_n(last, __ATOMIC_ACQUIRE) != mark) {
        if (!ctl_.progress()) return false;
    }
    return true;
}

// A put is one copy with no order among its bytes (memcpy may store the tail first): the last
// byte can land before the rest. Give the rest a moment before calling it a failure.
bool RmaRunner::verify_pingpong(const Setup& st, uint64_t msg, unsigned dir) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    const uint64_t seed = pattern_seed(msg, st.size, dir);
    size_t offset = 0;
    unsigned expected = 0, got = 0;
    for (;;) {
        if (pattern_verify(st.exposed.get(), st.size - 1, seed, &offset, &expected, &got)) {
            return true;
        }
        if (std::chrono::steady_clock::now() > deadline) break;
        if (!ctl_.progress()) return false;
    }
    std::fprintf(stderr,
                 "swy-perf: check failed: put_lat size %zu, iteration %llu (%s), offset %zu: "
                 "expected 0x%02x, got 0x%02x\n",
                 st.size, static_cast<unsigned long long>(msg),
                 dir == 0 ? "client to server" : "server to client", offset, expected, got);
    return false;
}

bool RmaRunner::put_pingpong(Setup& st) {
    const uint64_t msg = st.next_msg++;
    const unsigned char mark = mark_of(msg);
    const bool client = ctl_.boot().role() == Role::kClient;
    unsigned char* src = st.local.get();
    if (!client) {
        if (!wait_mark(st, mark)) return false;
        if (opts_.check && !verify_pingpong(st, msg, 0)) return false;
    }
    if (opts_.check) pattern_fill(src, st.size, pattern_seed(msg, st.size, client ? 0 : 1));
    src[st.size - 1] = mark;
    swy_request_h req = nullptr;
    if (!post_rma(st, true, src, st.peer.address, &req)) return false;
    if (req != nullptr && !ctl_.complete(SWY_INPROGRESS, req, "put")) return false;
    if (client) {
        if (!wait_mark(st, mark)) return false;
        if (opts_.check && !verify_pingpong(st, msg, 1)) return false;
    }
    return true;
}

// ---- put_bw, get_bw, get_lat -----------------------------------------------------------------

bool RmaRunner::bw_window(Setup& st, size_t count) {
    const bool put = opts_.test == TestKind::kPutBw;
    const bool self = ctl_.boot().role() == Role::kSelf;
    const uint64_t first = st.next_msg;
    if (opts_.check) {
        if (put) {
            fill_slots(st, st.local.get(), first, count, 0);
        } else if (self) {
            fill_slots(st, st.exposed.get(), first, count, 0);
        } else if (!ctl_.request(CtlMessage{CtlMessage::kFill, 0, first, count})) {
            return false;
        }
    }
    for (size_t j = 0; j < count; ++j) {
        unsigned char* local = st.local.get() + (j % st.slots) * st.size;
        if (!post_rma(st, put, local, remote_slot(st, j), &reqs_[j])) return false;
    }
    if (!wait_requests(count) || !flush()) return false;
    st.next_msg += count;
    if (!opts_.check) return true;
    if (!put) return verify_slots(st, st.local.get(), first, count, 0);
    if (self) return verify_slots(st, st.exposed.get(), first, count, 0);
    return ctl_.request(CtlMessage{CtlMessage::kVerify, 0, first, count});
}

bool RmaRunner::get_one(Setup& st) {
    const uint64_t msg = st.next_msg;
    if (opts_.check) {
        if (ctl_.boot().role() == Role::kSelf) {
            fill_slots(st, st.exposed.get(), msg, 1, 0);
        } else if (!ctl_.request(CtlMessage{CtlMessage::kFill, 0, msg, 1})) {
            return false;
        }
    }
    swy_request_h req = nullptr;
    if (!post_rma(st, false, st.local.get(), st.peer.address, &req)) return false;
    if (req != nullptr && !ctl_.complete(SWY_INPROGRESS, req, "get")) return false;
    ++st.next_msg;
    return !opts_.check || verify_slots(st, st.local.get(), msg, 1, 0);
}

// ---- atomics ---------------------------------------------------------------------------------

// The counter starts at 0 for each size; operation n finds n there (fadd adds 1; cswap
// replaces n by n+1), so every fetched value and the final one are known.
bool RmaRunner::fetching_atomic(Setup& st) {
    const uint64_t msg = st.next_msg++;
    const bool cswap = opts_.test == TestKind::kCswapLat;
    uint64_t operand = cswap ? msg + 1 : 1, compare = msg, result = ~uint64_t{0};
    uint32_t operand32 = static_cast<uint32_t>(operand), compare32 = static_cast<uint32_t>(msg);
    uint32_t result32 = ~uint32_t{0};
    const bool narrow = st.size == 4;
    swy_request_h req = nullptr;
    swy_status_t s =
        swy_atomic_nb(ctl_.session().ep(), cswap ? SWY_ATOMIC_OP_CSWAP : SWY_ATOMIC_OP_ADD, st.size,
                      narrow ? static_cast<const void*>(&operand32) : &operand,
                      cswap ? (narrow ? static_cast<const void*>(&compare32) : &compare) : nullptr,
                      narrow ? static_cast<void*>(&result32) : &result, st.peer.address,
                      st.peer.rkey, &kHostParams, &req);
    if (!ctl_.complete(s, req, "swy_atomic_nb")) return false;
    if (!opts_.check) return true;
    const uint64_t got = narrow ? result32 : result;
    const uint64_t want = narrow ? static_cast<uint32_t>(msg) : msg;
    if (got == want) return true;
    std::fprintf(stderr, "swy-perf: check failed: %s operation %llu fetched %llu, expected %llu\n",
                 test_name(opts_.test), static_cast<unsigned long long>(msg),
                 static_cast<unsigned long long>(got), static_cast<unsigned long long>(want));
    return false;
}

// add_mr: posted adds, `window` requests at most outstanding (most complete at once), one
// flush at the end of the phase (as ucx_perftest's ucp_add).
bool RmaRunner::posted_adds(Setup& st, size_t ops) {
    const uint64_t one64 = 1;
    const uint32_t one32 = 1;
    const void* operand = st.size == 4 ? static_cast<const void*>(&one32) : &one64;
    swy_ep_h ep = ctl_.session().ep();
    for (size_t i = 0; i < ops; ++i) {
        swy_request_h& slot = reqs_[i % st.window];
        if (slot != nullptr) {
            swy_request_h req = slot;
            slot = nullptr;
            if (!ctl_.complete(SWY_INPROGRESS, req, "atomic add")) return false;
        }
        for (;;) {
            swy_status_t s =
                swy_atomic_nb(ep, SWY_ATOMIC_OP_ADD, st.size, operand, nullptr, nullptr,
                              st.peer.address, st.peer.rkey, &kHostParams, &slot);
            if (s == SWY_OK || s == SWY_INPROGRESS) break;
            if (s != SWY_ERR_NO_RESOURCE) {
                std::fprintf(stderr, "swy-perf: swy_atomic_nb(ADD): %s\n", swy_status_string(s));
                return false;
            }
            if (!ctl_.progress()) return false;
        }
        if (slot != nullptr && swy_request_test(slot) != SWY_INPROGRESS) {
            swy_request_h req = slot;
            slot = nullptr;
            if (!ctl_.complete(SWY_INPROGRESS, req, "atomic add")) return false;
        }
    }
    st.next_msg += ops;
    return wait_requests(st.window) && flush();
}

// ---- phases ----------------------------------------------------------------------------------

bool RmaRunner::client_phase(Setup& st, size_t ops, bool timed) {
    switch (opts_.test) {
        case TestKind::kPutBw:
        case TestKind::kGetBw:
            while (ops > 0) {
                const size_t count = std::min(st.window, ops);
                if (!bw_window(st, count)) return false;
                ops -= count;
            }
            return true;
        case TestKind::kAddMr: return posted_adds(st, ops);
        default: break;
    }
    // One operation at a time: put_lat, get_lat, fadd_lat, cswap_lat; samples in ticks.
    uint64_t last = ticks();
    for (size_t i = 0; i < ops; ++i) {
        bool ok = opts_.test == TestKind::kPutLat   ? put_pingpong(st)
                  : opts_.test == TestKind::kGetLat ? get_one(st)
                                                    : fetching_atomic(st);
        if (!ok) return false;
        if (timed) {
            const uint64_t t = ticks();
            op_times_.push_back(static_cast<double>(t - last));
            last = t;
        }
    }
    return true;
}

bool RmaRunner::server_phase(Setup& st) {
    for (;;) {
        CtlMessage msg;
        if (!ctl_.next_request(&msg)) return false;
        bool ok = true;
        // A client's count never exceeds its window, which fits our slots (same options).
        const size_t count = static_cast<size_t>(std::min<uint64_t>(msg.count, st.slots));
        switch (msg.kind) {
            case CtlMessage::kFill: fill_slots(st, st.exposed.get(), msg.first, count, 0); break;
            case CtlMessage::kVerify:
                ok = verify_slots(st, st.exposed.get(), msg.first, count, 0);
                break;
            case CtlMessage::kDone:
                ok = !opts_.check || !opts_.is_atomic() || verify_counter(st, msg.count);
                break;
            default:
                std::fprintf(stderr, "swy-perf: unknown control message %u\n", msg.kind);
                ok = false;
        }
        if (!ctl_.reply(ok) || !ok) return false;
        if (msg.kind == CtlMessage::kDone) return true;
    }
}

bool RmaRunner::run_size(size_t size, Result* out) {
    const size_t iters = opts_.iters ? opts_.iters : default_iters(opts_, size);
    const size_t warmup = opts_.warmup != SIZE_MAX ? opts_.warmup : default_warmup(opts_, size);
    Bootstrap& boot = ctl_.boot();
    if (!boot.barrier([this] { ctl_.session().progress(); })) {
        std::fprintf(stderr, "swy-perf: the peer went away before size %zu\n", size);
        return false;
    }
    Setup st;
    if (!setup(st, size)) return false;
    const Role role = boot.role();
    // put_lat is symmetric; in the other tests the server answers requests until "done".
    const bool serving = role == Role::kServer && opts_.test != TestKind::kPutLat;
    const bool notify = role == Role::kClient && opts_.test != TestKind::kPutLat;
    op_times_.clear();
    op_times_.reserve(opts_.is_latency() ? iters : 0);
    PhaseClock clock;
    // Warm-up, then the measured phase; each ends with the client's "done".
    for (int phase = 0; phase < 2; ++phase) {
        const size_t ops = phase == 0 ? warmup : iters;
        if (serving) {
            if (!server_phase(st)) return false;
            continue;
        }
        clock.start();
        if (!client_phase(st, ops, phase == 1 && opts_.is_latency())) return false;
        clock.stop();
        if (notify && !ctl_.request(CtlMessage{CtlMessage::kDone, 0, 0, st.next_msg})) {
            return false;
        }
        if (role == Role::kSelf && opts_.check && opts_.is_atomic() &&
            !verify_counter(st, st.next_msg)) {
            return false;
        }
    }
    teardown(st);
    fill_result(opts_, size, iters, clock.elapsed_us(), median_of(op_times_) * clock.us_per_tick(),
                out);
    return true;
}

}  // namespace swy::perf

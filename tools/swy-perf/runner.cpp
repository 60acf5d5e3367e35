#include "runner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

#include <switchyard/memtype.h>

#include "pattern.h"

namespace swy::perf {
namespace {

// One tag per test, exact match (full mask). The low byte tells data from acks.
constexpr swy_tag_t kTagBase = 0x5357595045524600ull;  // "SWYPERF\0"
constexpr swy_tag_t kTagPing = kTagBase | 0x01;
constexpr swy_tag_t kTagPong = kTagBase | 0x02;
constexpr swy_tag_t kTagData = kTagBase | 0x11;  // client → server stream
constexpr swy_tag_t kTagBack = kTagBase | 0x12;  // server → client stream (bibw)
constexpr swy_tag_t kTagAck = kTagBase | 0x13;
constexpr swy_tag_t kFullMask = ~swy_tag_t{0};
constexpr size_t kAckSize = 4;
// --check needs one buffer per message in flight; cap what that costs per side.
constexpr size_t kCheckMemoryCap = size_t{256} << 20;

// A message buffer: host memory from aligned_alloc(), or memory of another type from
// swy_mem_alloc() (which the CPU may not be allowed to touch). Faulted in before timing.
class Memory {
public:
    Memory() = default;
    Memory(swy_context_h context, swy_memtype_t type, size_t bytes);
    Memory(Memory&& other) noexcept { *this = std::move(other); }
    Memory& operator=(Memory&& other) noexcept {
        std::swap(context_, other.context_);
        std::swap(type_, other.type_);
        std::swap(ptr_, other.ptr_);
        return *this;
    }
    ~Memory();

    unsigned char* get() const { return ptr_; }
    swy_memtype_t type() const { return type_; }
    bool device() const { return type_ != SWY_MEMTYPE_HOST; }

private:
    swy_context_h context_ = nullptr;
    swy_memtype_t type_ = SWY_MEMTYPE_HOST;
    unsigned char* ptr_ = nullptr;
};

Memory::Memory(swy_context_h context, swy_memtype_t type, size_t bytes)
    : context_(context), type_(type) {
    size_t rounded = (std::max<size_t>(bytes, 1) + 4095) / 4096 * 4096;
    if (type == SWY_MEMTYPE_HOST) {
        ptr_ = static_cast<unsigned char*>(std::aligned_alloc(4096, rounded));
        if (!ptr_) {
            std::fprintf(stderr, "swy-perf: cannot allocate %zu bytes\n", bytes);
            std::exit(1);
        }
        std::memset(ptr_, 0, rounded);  // fault the pages in before timing
        return;
    }
    void* p = nullptr;
    swy_status_t s = swy_mem_alloc(context, type, rounded, &p);
    if (s != SWY_OK) {
        std::fprintf(stderr, "swy-perf: swy_mem_alloc(%zu B) failed: %s\n", rounded,
                     swy_status_string(s));
        std::exit(1);
    }
    ptr_ = static_cast<unsigned char*>(p);
    // Fault the device pages in as well, the only way allowed: copies from a zeroed buffer.
    const size_t chunk = std::min<size_t>(rounded, size_t{4} << 20);
    std::unique_ptr<unsigned char[]> zeros(new unsigned char[chunk]());
    for (size_t off = 0; off < rounded; off += chunk) {
        size_t n = std::min(chunk, rounded - off);
        s = swy_mem_copy(context, ptr_ + off, type, zeros.get(), SWY_MEMTYPE_HOST, n);
        if (s != SWY_OK) {
            std::fprintf(stderr, "swy-perf: swy_mem_copy into a new buffer failed: %s\n",
                         swy_status_string(s));
            std::exit(1);
        }
    }
}

Memory::~Memory() {
    if (!ptr_) return;
    if (type_ == SWY_MEMTYPE_HOST) {
        std::free(ptr_);
    } else {
        swy_mem_free(context_, ptr_);
    }
}

double now_us() {
    using namespace std::chrono;
    return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

/// Per-size buffers: @c slots send and receive buffers of @c size bytes each.
struct Runner::Buffers {
    size_t size = 0;
    size_t slots = 1;
    Memory send, recv;
    Memory stage;  ///< --check with device buffers: the pattern's host copy (size bytes)
    unsigned char* send_slot(size_t i) { return send.get() + (i % slots) * size; }
    unsigned char* recv_slot(size_t i) { return recv.get() + (i % slots) * size; }
    unsigned char ack_out[kAckSize] = {'a', 'c', 'k', 0};
    unsigned char ack_in[kAckSize] = {};
};

bool Runner::peer_gone() {
    if (session_.failed()) {
        std::fprintf(stderr, "swy-perf: endpoint failed: %s\n",
                     swy_status_string(session_.failed_status()));
        return true;
    }
    if (!boot_.peer_alive()) {
        std::fprintf(stderr, "swy-perf: the peer process went away\n");
        return true;
    }
    return false;
}

bool Runner::post_send(const void* buf, size_t len, swy_memtype_t memtype, swy_tag_t tag,
                       swy_request_h* req, bool back) {
    // Only the fields field_mask names are read: no need to zero the rest on every call
    // (this loop is what bench/callgrind-small.sh counts).
    swy_request_params_t params;
    params.field_mask = SWY_REQ_PARAM_FIELD_MEMTYPE;
    params.memtype = memtype;
    for (unsigned spins = 1;; ++spins) {
        swy_status_t s =
            swy_tag_send_nb(back ? session_.back_ep() : session_.ep(), buf, len, tag, &params, req);
        if (s == SWY_OK || s == SWY_INPROGRESS) return true;
        if (s != SWY_ERR_NO_RESOURCE) {
            std::fprintf(stderr, "swy-perf: swy_tag_send_nb(%zu B): %s\n", len,
                         swy_status_string(s));
            return false;
        }
        session_.progress();
        if ((spins & 0xffff) == 0 && peer_gone()) return false;
    }
}

bool Runner::post_recv(void* buf, size_t len, swy_memtype_t memtype, swy_tag_t tag,
                       swy_tag_recv_info_t* info, swy_request_h* req, swy_status_t* imm_status,
                       bool back) {
    swy_request_params_t params;  // as in post_send: only the named fields are read
    params.field_mask = SWY_REQ_PARAM_FIELD_MEMTYPE | SWY_REQ_PARAM_FIELD_RECV_INFO;
    params.memtype = memtype;
    params.recv_info = info;
    for (unsigned spins = 1;; ++spins) {
        swy_status_t s = swy_tag_recv_nb(back ? session_.back_worker() : session_.worker(), buf,
                                         len, tag, kFullMask, &params, req);
        if (s != SWY_ERR_NO_RESOURCE) {
            if (s < 0 && s != SWY_ERR_MESSAGE_TRUNCATED) {
                std::fprintf(stderr, "swy-perf: swy_tag_recv_nb(%zu B): %s\n", len,
                             swy_status_string(s));
                return false;
            }
            *imm_status = s;  // SWY_OK, SWY_INPROGRESS or a truncation reported in wait_recv()
            return true;
        }
        session_.progress();
        if ((spins & 0xffff) == 0 && peer_gone()) return false;
    }
}

bool Runner::wait(swy_request_h req, swy_status_t* status, swy_worker_h owner) {
    if (!req) {
        *status = SWY_OK;
        return true;
    }
    swy_status_t s;
    for (unsigned spins = 1; (s = swy_request_test(req)) == SWY_INPROGRESS; ++spins) {
        session_.progress(owner);
        if ((spins & 0xffff) == 0 && peer_gone()) return false;
    }
    *status = s;
    return true;
}

bool Runner::wait_recv(swy_request_h req, swy_status_t imm_status, swy_tag_recv_info_t* info,
                       size_t size, bool back) {
    swy_status_t s = imm_status;
    if (req) {
        if (!wait(req, &s, back ? session_.back_worker() : session_.worker())) return false;
        if (s == SWY_OK && opts_.check) swy_request_recv_info(req, info);
        swy_request_free(req);
    }
    if (s != SWY_OK) {
        std::fprintf(stderr, "swy-perf: receive of %zu B completed with %s\n", size,
                     swy_status_string(s));
        return false;
    }
    if (opts_.check && info->length != size) {
        std::fprintf(stderr, "swy-perf: check failed: expected a %zu-byte message, got %zu B\n",
                     size, info->length);
        return false;
    }
    return true;
}

bool Runner::verify(const void* buf, size_t size, uint64_t msg, unsigned direction) {
    size_t offset;
    unsigned expected, got;
    if (pattern_verify(buf, size, pattern_seed(msg, size, direction), &offset, &expected, &got)) {
        return true;
    }
    std::fprintf(stderr,
                 "swy-perf: check failed: size %zu, message %llu (%s), offset %zu: "
                 "expected 0x%02x, got 0x%02x\n",
                 size, static_cast<unsigned long long>(msg),
                 direction == 0 ? "client to server" : "server to client", offset, expected, got);
    return false;
}

void Runner::allocate_buffers(Buffers& b, size_t size, size_t slots) {
    b.size = size;
    b.slots = slots;
    b.send = Memory(session_.context(), session_.send_memtype(), size * slots);
    b.recv = Memory(session_.context(), session_.recv_memtype(), size * slots);
    if (opts_.check && (b.send.device() || b.recv.device())) {
        b.stage = Memory(session_.context(), SWY_MEMTYPE_HOST, size);
    }
}

bool Runner::fill_send(Buffers& b, size_t slot, size_t size, uint64_t msg, unsigned direction) {
    const uint64_t seed = pattern_seed(msg, size, direction);
    if (!b.send.device()) {
        pattern_fill(b.send_slot(slot), size, seed);
        return true;
    }
    if (size == 0) return true;
    pattern_fill(b.stage.get(), size, seed);
    swy_status_t s = swy_mem_copy(session_.context(), b.send_slot(slot), b.send.type(),
                                  b.stage.get(), SWY_MEMTYPE_HOST, size);
    if (s == SWY_OK) return true;
    std::fprintf(stderr, "swy-perf: swy_mem_copy of the pattern into the send buffer: %s\n",
                 swy_status_string(s));
    return false;
}

bool Runner::verify_recv(Buffers& b, size_t slot, size_t size, uint64_t msg, unsigned direction) {
    if (!b.recv.device()) return verify(b.recv_slot(slot), size, msg, direction);
    if (size == 0) return true;
    swy_status_t s = swy_mem_copy(session_.context(), b.stage.get(), SWY_MEMTYPE_HOST,
                                  b.recv_slot(slot), b.recv.type(), size);
    if (s != SWY_OK) {
        std::fprintf(stderr, "swy-perf: swy_mem_copy out of the receive buffer: %s\n",
                     swy_status_string(s));
        return false;
    }
    return verify(b.stage.get(), size, msg, direction);
}

// ---- latency ---------------------------------------------------------------------------

Runner::LoopbackLeg Runner::loopback_leg_of(const Buffers& b, swy_tag_t tag, bool back) const {
    // The ping goes from the client worker (back_worker()) to the server worker (worker()),
    // the pong the other way; --tls self: one worker and endpoint for both.
    LoopbackLeg leg;
    leg.rx = back ? session_.back_worker() : session_.worker();
    leg.tx = back ? session_.worker() : session_.back_worker();
    leg.ep = back ? session_.back_ep() : session_.ep();
    leg.tag = tag;
    // No receive info: only --check reads it (and --check does not come here).
    leg.recv_params.field_mask = SWY_REQ_PARAM_FIELD_MEMTYPE;
    leg.recv_params.memtype = b.recv.type();
    leg.send_params.field_mask = SWY_REQ_PARAM_FIELD_MEMTYPE;
    leg.send_params.memtype = b.send.type();
    return leg;
}

bool Runner::loopback_leg(Buffers& b, size_t size, const LoopbackLeg& leg) {
    swy_request_h rreq = nullptr, sreq = nullptr;
    // One call each in the common case; post_recv()/post_send() (retry and error messages)
    // only when the library asks to retry or refuses.
    swy_status_t imm =
        swy_tag_recv_nb(leg.rx, b.recv_slot(0), size, leg.tag, kFullMask, &leg.recv_params, &rreq);
    if (__builtin_expect(imm < 0 && imm != SWY_ERR_MESSAGE_TRUNCATED, 0)) {
        swy_tag_recv_info_t info;
        if (!post_recv(b.recv_slot(0), size, b.recv.type(), leg.tag, &info, &rreq, &imm,
                       leg.rx != session_.worker())) {
            return false;
        }
    }
    swy_status_t s =
        swy_tag_send_nb(leg.ep, b.send_slot(0), size, leg.tag, &leg.send_params, &sreq);
    if (__builtin_expect(s < 0, 0) &&
        !post_send(b.send_slot(0), size, b.send.type(), leg.tag, &sreq, leg.ep != session_.ep())) {
        return false;
    }
    // Wait only for what did not complete in place (as ucx_perftest tests the pointer inline
    // before it waits).
    if (__builtin_expect(sreq != nullptr, 0)) {
        if (!wait(sreq, &s, leg.tx)) return false;
        swy_request_free(sreq);
        if (s != SWY_OK) {
            std::fprintf(stderr, "swy-perf: send completed with %s\n", swy_status_string(s));
            return false;
        }
    }
    if (rreq != nullptr) {
        // Progress first, then test: the message was just sent, so a receive that did not
        // complete at the call cannot have completed before the receiving worker progressed
        // (as ucx_perftest's loop: progress until the request says done). The sending worker
        // is progressed when the receiving one had nothing to do, and every 8th turn (a
        // rendezvous needs the sender's progress while the receiver reports events).
        // swy_request_test_free(): the test and, once done, the free in one call (as pml
        // swy's blocking receive polls; ucx_perftest tests the status inline, then frees).
        for (unsigned spins = 1;; ++spins) {
            if (swy_worker_progress(leg.rx) == 0 || (spins & 7) == 0) {
                swy_worker_progress(leg.tx);
            }
            if ((imm = swy_request_test_free(rreq, nullptr)) != SWY_INPROGRESS) break;
            if (__builtin_expect((spins & 0xffff) == 0, 0) && peer_gone()) return false;
        }
    }
    if (__builtin_expect(imm != SWY_OK, 0)) {
        std::fprintf(stderr, "swy-perf: receive of %zu B completed with %s\n", size,
                     swy_status_string(imm));
        return false;
    }
    return true;
}

bool Runner::run_lat_loopback(Buffers& b, size_t size, size_t warmup, size_t iters,
                              double* elapsed_us, double* median_round_trip_us) {
    const LoopbackLeg ping = loopback_leg_of(b, kTagPing, false);
    const LoopbackLeg pong = loopback_leg_of(b, kTagPong, true);
    for (size_t i = 0; i < warmup; ++i) {
        if (!loopback_leg(b, size, ping) || !loopback_leg(b, size, pong)) return false;
    }
    // One clock read per round trip, kept for the median (ucx_perftest reads its clock and
    // fills its timing queue once per iteration too).
    round_trips_us_.assign(iters, 0.0);
    double* out = round_trips_us_.data();
    const double start = now_us();
    double last = start;
    for (size_t i = 0; i < iters; ++i) {
        if (!loopback_leg(b, size, ping) || !loopback_leg(b, size, pong)) return false;
        const double t = now_us();
        out[i] = t - last;
        last = t;
    }
    *elapsed_us = last - start;
    return median_of_round_trips(median_round_trip_us);
}

bool Runner::median_of_round_trips(double* median_round_trip_us) {
    *median_round_trip_us = 0;
    if (!round_trips_us_.empty()) {
        auto mid = round_trips_us_.begin() + static_cast<long>(round_trips_us_.size() / 2);
        std::nth_element(round_trips_us_.begin(), mid, round_trips_us_.end());
        *median_round_trip_us = *mid;
    }
    return true;
}

bool Runner::lat_iteration(Buffers& b, size_t size, uint64_t msg) {
    Role role = boot_.role();
    bool check = opts_.check;
    swy_request_h sreq = nullptr, rreq = nullptr;
    swy_status_t imm, s;
    swy_tag_recv_info_t info{};

    if (role == Role::kClient) {
        // Post the pong receive first so the reply never waits in the unexpected queue.
        if (!post_recv(b.recv_slot(0), size, b.recv.type(), kTagPong, &info, &rreq, &imm)) {
            return false;
        }
        if (check && !fill_send(b, 0, size, msg, 0)) return false;
        if (!post_send(b.send_slot(0), size, b.send.type(), kTagPing, &sreq)) return false;
        if (!wait(sreq, &s)) return false;
        if (sreq) swy_request_free(sreq);
        if (s != SWY_OK) {
            std::fprintf(stderr, "swy-perf: send completed with %s\n", swy_status_string(s));
            return false;
        }
        if (!wait_recv(rreq, imm, &info, size)) return false;
        return !check || verify_recv(b, 0, size, msg, 1);
    }

    // Server, or --tls self where this one worker plays both parts in turn.
    if (!post_recv(b.recv_slot(0), size, b.recv.type(), kTagPing, &info, &rreq, &imm)) {
        return false;
    }
    if (role == Role::kSelf) {
        if (check && !fill_send(b, 0, size, msg, 0)) return false;
        // --loopback: the ping leaves from the client worker (back_worker()).
        if (!post_send(b.send_slot(0), size, b.send.type(), kTagPing, &sreq) ||
            !wait(sreq, &s, session_.back_worker())) {
            return false;
        }
        if (sreq) swy_request_free(sreq);
        sreq = nullptr;
    }
    if (!wait_recv(rreq, imm, &info, size)) return false;
    if (check && !verify_recv(b, 0, size, msg, 0)) return false;

    // Pong. In self mode the reply goes from the receive buffer's twin (send slot) back into
    // the receive buffer, after the ping was checked.
    unsigned char* reply = b.send_slot(0);
    if (role == Role::kSelf) {
        rreq = nullptr;
        // --loopback: the pong goes back from the server worker to the client worker.
        if (!post_recv(b.recv_slot(0), size, b.recv.type(), kTagPong, &info, &rreq, &imm, true)) {
            return false;
        }
    }
    if (check && !fill_send(b, 0, size, msg, 1)) return false;
    if (!post_send(reply, size, b.send.type(), kTagPong, &sreq, role == Role::kSelf) ||
        !wait(sreq, &s, session_.worker())) {
        return false;
    }
    if (sreq) swy_request_free(sreq);
    if (s != SWY_OK) {
        std::fprintf(stderr, "swy-perf: send completed with %s\n", swy_status_string(s));
        return false;
    }
    if (role == Role::kSelf) {
        if (!wait_recv(rreq, imm, &info, size, true)) return false;
        if (check && !verify_recv(b, 0, size, msg, 1)) return false;
    }
    return true;
}

bool Runner::run_lat(size_t size, size_t warmup, size_t iters, double* elapsed_us,
                     double* median_round_trip_us) {
    Buffers b;
    allocate_buffers(b, size, 1);
    // --loopback and --tls self without --check: the loop of ucx_perftest -l.
    if (boot_.role() == Role::kSelf && !opts_.check) {
        return run_lat_loopback(b, size, warmup, iters, elapsed_us, median_round_trip_us);
    }
    uint64_t msg = 0;
    for (size_t i = 0; i < warmup; ++i, ++msg) {
        if (!lat_iteration(b, size, msg)) return false;
    }
    // One clock read per round trip (vDSO, no system call; ib_send_lat reads the TSC per
    // iteration too) gives the median beside the mean. Reserved up front: the loop must not
    // allocate.
    round_trips_us_.clear();
    round_trips_us_.reserve(iters);
    const double start = now_us();
    double last = start;
    for (size_t i = 0; i < iters; ++i, ++msg) {
        if (!lat_iteration(b, size, msg)) return false;
        const double t = now_us();
        round_trips_us_.push_back(t - last);
        last = t;
    }
    *elapsed_us = last - start;
    return median_of_round_trips(median_round_trip_us);
}

// ---- streaming (bw, mr, bibw) -----------------------------------------------------------

bool Runner::stream_round(Buffers& b, size_t size, uint64_t first, size_t count) {
    Role role = boot_.role();
    bool bibw = opts_.test == TestKind::kBibw && role != Role::kSelf;
    bool sends = role != Role::kServer || bibw;
    bool recvs = role != Role::kClient || bibw;
    // Which stream this side sends and receives (direction 0: client → server).
    swy_tag_t out_tag = role == Role::kServer ? kTagBack : kTagData;
    swy_tag_t in_tag = role == Role::kClient ? kTagBack : kTagData;
    unsigned out_dir = role == Role::kServer ? 1 : 0;
    unsigned in_dir = role == Role::kClient ? 1 : 0;
    bool check = opts_.check;
    swy_status_t s;

    swy_request_h ack_req = nullptr;
    swy_status_t ack_imm = SWY_OK;
    swy_tag_recv_info_t ack_info{};
    bool acked = !bibw && role != Role::kSelf;  // bw/mr: the receiver confirms each window
    if (acked && role == Role::kClient &&
        !post_recv(b.ack_in, kAckSize, SWY_MEMTYPE_HOST, kTagAck, &ack_info, &ack_req, &ack_imm)) {
        return false;
    }
    if (recvs) {
        for (size_t j = 0; j < count; ++j) {
            if (!post_recv(b.recv_slot(j), size, b.recv.type(), in_tag, &recv_info_[j], &recvs_[j],
                           &recv_imm_[j])) {
                return false;
            }
        }
    }
    if (sends) {
        for (size_t j = 0; j < count; ++j) {
            if (check && !fill_send(b, j, size, first + j, out_dir)) return false;
            if (!post_send(b.send_slot(j), size, b.send.type(), out_tag, &sends_[j])) {
                return false;
            }
        }
        // Requests complete in about the order they were posted: waiting in order costs
        // one test per request.
        for (size_t j = 0; j < count; ++j) {
            if (!wait(sends_[j], &s)) return false;
            if (sends_[j]) swy_request_free(sends_[j]);
            sends_[j] = nullptr;
            if (s != SWY_OK) {
                std::fprintf(stderr, "swy-perf: send completed with %s\n", swy_status_string(s));
                return false;
            }
        }
    }
    if (recvs) {
        for (size_t j = 0; j < count; ++j) {
            if (!wait_recv(recvs_[j], recv_imm_[j], &recv_info_[j], size)) return false;
            recvs_[j] = nullptr;
            if (check && !verify_recv(b, j, size, first + j, in_dir)) return false;
        }
    }
    if (acked && role == Role::kServer) {
        swy_request_h req = nullptr;
        if (!post_send(b.ack_out, kAckSize, SWY_MEMTYPE_HOST, kTagAck, &req) || !wait(req, &s)) {
            return false;
        }
        if (req) swy_request_free(req);
        if (s != SWY_OK) {
            std::fprintf(stderr, "swy-perf: ack send completed with %s\n", swy_status_string(s));
            return false;
        }
    }
    if (acked && role == Role::kClient) {
        ack_info.length = kAckSize;
        if (!wait_recv(ack_req, ack_imm, &ack_info, kAckSize)) return false;
    }
    return true;
}

bool Runner::stream_continuous(Buffers& b, size_t size, uint64_t first, size_t total) {
    const Role role = boot_.role();
    const size_t window = sends_.size();
    const bool check = opts_.check;
    swy_status_t s;
    if (role == Role::kClient) {
        swy_request_h ack_req = nullptr;
        swy_status_t ack_imm = SWY_OK;
        swy_tag_recv_info_t ack_info{};
        if (!post_recv(b.ack_in, kAckSize, SWY_MEMTYPE_HOST, kTagAck, &ack_info, &ack_req,
                       &ack_imm)) {
            return false;
        }
        for (size_t i = 0; i < total; ++i) {
            const size_t slot = i % window;
            if (sends_[slot] != nullptr) {
                if (!wait(sends_[slot], &s)) return false;
                swy_request_free(sends_[slot]);
                sends_[slot] = nullptr;
                if (s != SWY_OK) return false;
            }
            if (check && !fill_send(b, slot, size, first + i, 0)) return false;
            if (!post_send(b.send_slot(slot), size, b.send.type(), kTagData, &sends_[slot])) {
                return false;
            }
        }
        for (size_t slot = 0; slot < window; ++slot) {
            if (sends_[slot] == nullptr) continue;
            if (!wait(sends_[slot], &s)) return false;
            swy_request_free(sends_[slot]);
            sends_[slot] = nullptr;
            if (s != SWY_OK) return false;
        }
        ack_info.length = kAckSize;
        return wait_recv(ack_req, ack_imm, &ack_info, kAckSize);
    }
    const size_t posted = std::min(window, total);
    for (size_t j = 0; j < posted; ++j) {
        if (!post_recv(b.recv_slot(j), size, b.recv.type(), kTagData, &recv_info_[j], &recvs_[j],
                       &recv_imm_[j])) {
            return false;
        }
    }
    for (size_t i = 0; i < total; ++i) {
        const size_t slot = i % window;
        if (!wait_recv(recvs_[slot], recv_imm_[slot], &recv_info_[slot], size)) return false;
        recvs_[slot] = nullptr;
        if (check && !verify_recv(b, slot, size, first + i, 0)) return false;
        if (i + window < total && !post_recv(b.recv_slot(slot), size, b.recv.type(), kTagData,
                                             &recv_info_[slot], &recvs_[slot], &recv_imm_[slot])) {
            return false;
        }
    }
    swy_request_h req = nullptr;
    if (!post_send(b.ack_out, kAckSize, SWY_MEMTYPE_HOST, kTagAck, &req) || !wait(req, &s)) {
        return false;
    }
    if (req) swy_request_free(req);
    return s == SWY_OK;
}

bool Runner::run_stream(size_t size, size_t warmup, size_t iters, double* elapsed_us) {
    size_t window = opts_.window;
    Buffers b;
    size_t slots = 1;
    if (opts_.check) {
        // Every message in flight needs its own buffer to be checked (and, on the sending
        // side, to stay unchanged until it completes). Large sizes get a smaller window.
        window = std::clamp<size_t>(kCheckMemoryCap / std::max<size_t>(size, 1), 1, window);
        slots = window;
    }
    allocate_buffers(b, size, slots);
    sends_.assign(window, nullptr);
    recvs_.assign(window, nullptr);
    recv_imm_.assign(window, SWY_OK);
    recv_info_.assign(window, swy_tag_recv_info_t{});

    uint64_t msg = 0;
    const bool continuous = opts_.test == TestKind::kMr && boot_.role() != Role::kSelf;
    auto phase = [&](size_t messages) {
        if (continuous) {
            if (!stream_continuous(b, size, msg, messages)) return false;
            msg += messages;
            return true;
        }
        while (messages > 0) {
            size_t count = std::min(window, messages);
            if (!stream_round(b, size, msg, count)) return false;
            msg += count;
            messages -= count;
        }
        return true;
    };
    if (!phase(warmup)) return false;
    double start = now_us();
    if (!phase(iters)) return false;
    *elapsed_us = now_us() - start;
    return true;
}

bool Runner::run_size(size_t size, Result* out) {
    size_t iters = opts_.iters ? opts_.iters : default_iters(opts_, size);
    size_t warmup = opts_.warmup != SIZE_MAX ? opts_.warmup : default_warmup(opts_, size);
    // Start each size together: the previous size's last messages are all consumed.
    if (!boot_.barrier([this] { session_.progress(); })) {
        std::fprintf(stderr, "swy-perf: the peer went away before size %zu\n", size);
        return false;
    }
    double us = 0;
    double median_rtt_us = 0;
    bool ok = opts_.test == TestKind::kLat ? run_lat(size, warmup, iters, &us, &median_rtt_us)
                                           : run_stream(size, warmup, iters, &us);
    if (!ok) return false;
    us = std::max(us, 1e-3);
    out->size = size;
    out->iters = iters;
    double messages = static_cast<double>(iters);
    if (opts_.test == TestKind::kLat) {
        messages *= 2;  // a round trip is two one-way messages
    } else if (opts_.test == TestKind::kBibw && boot_.role() != Role::kSelf) {
        messages *= 2;  // both directions
    }
    out->latency_us = us / messages;
    out->latency_median_us = median_rtt_us / 2;
    out->msg_rate_Mps = messages / us;
    out->bandwidth_MBps = messages * static_cast<double>(size) / us;
    return true;
}

}  // namespace swy::perf

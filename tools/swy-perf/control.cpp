#include "control.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace swy::perf {

bool Control::peer_gone() {
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

bool Control::progress() {
    session_.progress();
    return (++spins_ & 0xffff) != 0 || !peer_gone();
}

bool Control::wait(swy_request_h req, swy_status_t* status) {
    swy_status_t s;
    while ((s = swy_request_test(req)) == SWY_INPROGRESS) {
        if (!progress()) {
            swy_request_free(req);
            return false;
        }
    }
    swy_request_free(req);
    *status = s;
    return true;
}

bool Control::complete(swy_status_t status, swy_request_h req, const char* what) {
    if (status == SWY_INPROGRESS && !wait(req, &status)) return false;
    if (status == SWY_OK) return true;
    std::fprintf(stderr, "swy-perf: %s: %s\n", what, swy_status_string(status));
    return false;
}

bool Control::send(const void* data, size_t length, swy_tag_t tag) {
    swy_request_params_t params{};
    params.field_mask = SWY_REQ_PARAM_FIELD_MEMTYPE;
    params.memtype = SWY_MEMTYPE_HOST;
    swy_request_h req = nullptr;
    swy_status_t s = swy_tag_send_nb(session_.ep(), data, length, tag, &params, &req);
    return complete(s, req, "control message send");
}

bool Control::recv(void* data, size_t capacity, swy_tag_t tag, size_t* length) {
    swy_tag_recv_info_t info{};
    swy_request_params_t params{};
    params.field_mask = SWY_REQ_PARAM_FIELD_MEMTYPE | SWY_REQ_PARAM_FIELD_RECV_INFO;
    params.memtype = SWY_MEMTYPE_HOST;
    params.recv_info = &info;
    swy_request_h req = nullptr;
    swy_status_t s =
        swy_tag_recv_nb(session_.worker(), data, capacity, tag, ~swy_tag_t{0}, &params, &req);
    if (s == SWY_INPROGRESS) {
        while ((s = swy_request_test(req)) == SWY_INPROGRESS) {
            if (!progress()) {
                swy_request_free(req);
                return false;
            }
        }
        if (s == SWY_OK) swy_request_recv_info(req, &info);
        swy_request_free(req);
    }
    if (s != SWY_OK) {
        std::fprintf(stderr, "swy-perf: control message receive: %s\n", swy_status_string(s));
        return false;
    }
    *length = info.length;
    return true;
}

bool Control::request(const CtlMessage& msg) {
    unsigned char answer = 0;
    size_t length = 0;
    if (!send(&msg, sizeof msg, kCtlTagRequest)) return false;
    if (!recv(&answer, 1, kCtlTagReply, &length)) return false;
    if (length != 1 || answer != 1) {
        std::fprintf(stderr, "swy-perf: the server reported a failure (see its message)\n");
        return false;
    }
    return true;
}

bool Control::next_request(CtlMessage* msg) {
    size_t length = 0;
    if (!recv(msg, sizeof *msg, kCtlTagRequest, &length)) return false;
    if (length != sizeof *msg) {
        std::fprintf(stderr, "swy-perf: malformed control message (%zu B)\n", length);
        return false;
    }
    return true;
}

bool Control::reply(bool ok) {
    unsigned char answer = ok ? 1 : 0;
    return send(&answer, 1, kCtlTagReply);
}

// ---- memory --------------------------------------------------------------------------------

bool MappedBuffer::map(swy_context_h context, size_t bytes, bool register_in_place) {
    release();
    context_ = context;
    length_ = (std::max<size_t>(bytes, 1) + 4095) / 4096 * 4096;
    swy_mem_map_params_t params{};
    params.field_mask = SWY_MEM_MAP_FIELD_LENGTH | SWY_MEM_MAP_FIELD_ACCESS;
    params.length = length_;
    params.access = SWY_ACCESS_REMOTE_READ | SWY_ACCESS_REMOTE_WRITE | SWY_ACCESS_REMOTE_ATOMIC;
    if (register_in_place) {
        owned_ = std::aligned_alloc(4096, length_);
        if (owned_ == nullptr) {
            std::fprintf(stderr, "swy-perf: cannot allocate %zu bytes\n", length_);
            return false;
        }
        std::memset(owned_, 0, length_);  // fault the pages in before timing
        params.field_mask |= SWY_MEM_MAP_FIELD_ADDRESS | SWY_MEM_MAP_FIELD_MEMTYPE;
        params.address = owned_;
        params.memtype = SWY_MEMTYPE_HOST;
    } else {
        params.field_mask |= SWY_MEM_MAP_FIELD_FLAGS;
        params.flags = SWY_MEM_MAP_ALLOCATE;
    }
    swy_status_t s = swy_mem_map(context, &params, &memh_);
    if (s != SWY_OK) {
        std::fprintf(stderr, "swy-perf: swy_mem_map(%zu B%s): %s\n", length_,
                     register_in_place ? ", registered" : ", allocated", swy_status_string(s));
        memh_ = nullptr;
        release();
        return false;
    }
    if (register_in_place) {
        ptr_ = static_cast<unsigned char*>(owned_);
        return true;
    }
    swy_mem_attr_t attr{};
    attr.field_mask = SWY_MEM_ATTR_FIELD_ADDRESS | SWY_MEM_ATTR_FIELD_LENGTH;
    s = swy_mem_query(memh_, &attr);
    if (s != SWY_OK || attr.address == nullptr || attr.length < length_) {
        std::fprintf(stderr, "swy-perf: swy_mem_query: %s\n", swy_status_string(s));
        release();
        return false;
    }
    ptr_ = static_cast<unsigned char*>(attr.address);
    std::memset(ptr_, 0, length_);  // zero-filled already; this faults the pages in
    return true;
}

void MappedBuffer::release() {
    if (memh_ != nullptr) swy_mem_unmap(context_, memh_);
    std::free(owned_);
    memh_ = nullptr;
    owned_ = nullptr;
    ptr_ = nullptr;
}

bool exchange_keys(Control& ctl, const MappedBuffer& mine, RemoteRegion* peer) {
    Session& session = ctl.session();
    void* packed = nullptr;
    size_t packed_length = 0;
    swy_status_t s = swy_rkey_pack(session.context(), mine.memh(), &packed, &packed_length);
    if (s != SWY_OK) {
        std::fprintf(stderr, "swy-perf: swy_rkey_pack: %s\n", swy_status_string(s));
        return false;
    }
    // address, length, key
    std::vector<unsigned char> out(16 + packed_length);
    const uint64_t address = reinterpret_cast<uintptr_t>(mine.get());
    const uint64_t length = mine.length();
    std::memcpy(out.data(), &address, 8);
    std::memcpy(out.data() + 8, &length, 8);
    std::memcpy(out.data() + 16, packed, packed_length);
    swy_rkey_buffer_release(packed);

    std::vector<unsigned char> in;
    if (ctl.boot().role() == Role::kSelf) {
        in = out;
    } else {
        // Both send first: a control message this small never waits for the receive.
        if (!ctl.send(out.data(), out.size(), kCtlTagKey)) return false;
        in.resize(64 << 10);
        size_t got = 0;
        if (!ctl.recv(in.data(), in.size(), kCtlTagKey, &got)) return false;
        if (got < 16 || got > in.size()) {
            std::fprintf(stderr, "swy-perf: malformed key message (%zu B)\n", got);
            return false;
        }
        in.resize(got);
    }
    std::memcpy(&peer->address, in.data(), 8);
    std::memcpy(&peer->length, in.data() + 8, 8);
    s = swy_ep_rkey_unpack(session.ep(), in.data() + 16, in.size() - 16, &peer->rkey);
    if (s != SWY_OK) {
        std::fprintf(stderr, "swy-perf: swy_ep_rkey_unpack: %s\n", swy_status_string(s));
        peer->rkey = nullptr;
        return false;
    }
    return true;
}

// ---- results -------------------------------------------------------------------------------

void fill_result(const Options& opts, size_t size, size_t ops, double elapsed_us,
                 double median_op_us, Result* out) {
    const double us = std::max(elapsed_us, 1e-3);
    // A ping-pong round trip is two one-way messages; the other tests count operations.
    const double messages = static_cast<double>(ops) * (opts.is_pingpong() ? 2 : 1);
    out->size = size;
    out->iters = ops;
    out->latency_us = us / messages;
    out->latency_median_us = opts.is_pingpong() ? median_op_us / 2 : median_op_us;
    out->msg_rate_Mps = messages / us;
    out->bandwidth_MBps = messages * static_cast<double>(size) / us;
}

double now_us() {
    using namespace std::chrono;
    return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

uint64_t ticks() {
#if defined(__x86_64__)
    return __rdtsc();
#else
    using namespace std::chrono;
    return static_cast<uint64_t>(
        duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count());
#endif
}

double median_of(std::vector<double>& samples) {
    if (samples.empty()) return 0;
    auto mid = samples.begin() + static_cast<long>(samples.size() / 2);
    std::nth_element(samples.begin(), mid, samples.end());
    return *mid;
}

}  // namespace swy::perf

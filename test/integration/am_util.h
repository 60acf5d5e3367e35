// Helpers of the active-message integration tests (am_*_test.cpp): posting AM sends, the
// eager limit of an endpoint, which rank a reply endpoint belongs to, and the checked payload
// patterns of headers and data. Header-only (test/CMakeLists.txt globs only *_test.cpp).
#pragma once

#include <switchyard/am.h>

#include <string>
#include <utility>
#include <vector>

#include "multiproc.h"

namespace swy_itest {

/// The transports the AM tests run over: SWY_TLS values (self runs in one process).
inline std::vector<std::pair<std::string, std::string>> am_config(const std::string& tls) {
    return {{"TLS", tls}};
}

/// Largest header + data an AM on @p ep carries eager.
inline size_t am_eager_max(swy_ep_h ep) {
    size_t max = 0;
    ICHECK_OK(swy_ep_am_eager_max(ep, &max));
    ICHECK_MSG(max > SWY_AM_MAX_HEADER, "eager AM limit %zu is below SWY_AM_MAX_HEADER", max);
    return max;
}

/// An AM send in flight.
struct AmSend {
    swy_request_h req = nullptr;
    swy_status_t status = SWY_INPROGRESS;
    bool done = false;
};

inline AmSend post_am(swy_ep_h ep, uint16_t id, const void* header, size_t header_length,
                      const void* data, size_t length, uint32_t flags = 0) {
    swy_request_params_t p{};
    p.field_mask = SWY_REQ_PARAM_FIELD_FLAGS;
    p.flags = flags;
    AmSend s;
    s.status = swy_am_send_nb(ep, id, header, header_length, data, length, &p, &s.req);
    if (s.status == SWY_INPROGRESS) {
        ICHECK_MSG(s.req != nullptr, "swy_am_send_nb returned SWY_INPROGRESS with no request");
    } else {
        ICHECK_MSG(s.req == nullptr, "swy_am_send_nb returned %s and a request",
                   swy_status_string(s.status));
        s.done = true;
    }
    return s;
}

/// True (and the request freed) once @p s completed.
inline bool am_send_done(AmSend& s) {
    if (s.done) return true;
    const swy_status_t st = swy_request_test(s.req);
    if (st == SWY_INPROGRESS) return false;
    s.status = st;
    swy_request_free(s.req);
    s.req = nullptr;
    s.done = true;
    return true;
}

inline swy_status_t finish_am(swy_worker_h worker, AmSend& s, double timeout_s = 30.0) {
    if (!s.done) {
        s.status = wait_request(worker, s.req, "active-message send", timeout_s);
        swy_request_free(s.req);
        s.req = nullptr;
        s.done = true;
    }
    return s.status;
}

/// Request params for swy_am_recv_data_nb that fill @p info on immediate completion.
inline swy_request_params_t recv_data_params(swy_tag_recv_info_t* info) {
    swy_request_params_t p{};
    p.field_mask = SWY_REQ_PARAM_FIELD_RECV_INFO;
    p.recv_info = info;
    return p;
}

/// A pull of rendezvous AM data into a buffer with guard bytes after it.
struct AmPull {
    std::vector<unsigned char> buffer;  ///< capacity + kGuardBytes
    size_t capacity = 0;
    swy_request_h req = nullptr;
    swy_status_t status = SWY_INPROGRESS;
    swy_tag_recv_info_t info{};
    bool done = false;
};

/// Bind @p pull (capacity bytes) to descriptor @p desc.
inline void start_pull(swy_worker_h worker, AmPull& pull, void* desc, size_t capacity) {
    pull.capacity = capacity;
    pull.buffer.assign(capacity + kGuardBytes, kGuardByte);
    swy_request_params_t p = recv_data_params(&pull.info);
    const swy_status_t st =
        swy_am_recv_data_nb(worker, desc, pull.buffer.data(), capacity, &p, &pull.req);
    if (st == SWY_INPROGRESS) {
        ICHECK(pull.req != nullptr);
    } else {
        ICHECK(pull.req == nullptr);
        pull.status = st;
        pull.done = true;
    }
}

inline bool pull_done(AmPull& pull) {
    if (pull.done) return true;
    const swy_status_t st = swy_request_test(pull.req);
    if (st == SWY_INPROGRESS) return false;
    pull.status = st;
    ICHECK_OK(swy_request_recv_info(pull.req, &pull.info));
    swy_request_free(pull.req);
    pull.req = nullptr;
    pull.done = true;
    return true;
}

/// The rank whose endpoint @p ep is (among @p n's), or -1.
inline int rank_of_ep(const Node& n, int nranks, swy_ep_h ep, const std::vector<bool>& have) {
    if (ep == nullptr) return -1;
    for (int r = 0; r < nranks; ++r)
        if (have[r] && n.ep(r) == ep) return r;
    return -1;
}

inline uint64_t header_seed(size_t header_length, int sender, uint64_t index) {
    return pattern_seed(header_length, sender, index | (1ull << 40));
}

}  // namespace swy_itest

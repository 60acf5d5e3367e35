// Endpoint::tag_send: the one-packet fast path of a tagged send, inline in the API call (a
// call layer and its saved registers were a tenth of a small message's send; callgrind,
// 8-byte shm loopback). Everything else goes out of line to Endpoint::tag_send_queued().
#pragma once

#include "core/endpoint.h"
#include "core/request_params.h"
#include "core/worker.h"
#include "protocols/wire.h"

namespace swy::core {

inline Status Endpoint::tag_send(const void* buffer, size_t length, uint64_t tag,
                                 const swy_request_params_t* params, Request** out) {
    // Nothing queued ahead of us, the whole message fits one packet, contiguous host memory,
    // no flag that asks for a request: straight to the lane, no request at all.
    if (__builtin_expect(!failed_ && fast_path_ && length <= fast_max_ && pending_.empty() &&
                             (request_params::flags(params) &
                              (SWY_REQ_FLAG_SYNC | SWY_REQ_FLAG_NO_IMM_COMPLETE)) == 0 &&
                             Worker::stated_datatype(params) == SWY_DATATYPE_CONTIG &&
                             worker_->host_without_detection(Worker::stated_memtype(params)),
                         1)) {
        // What the refusal below needs waits in memory across the lane's call, beside the
        // header whose address the lane is given (so the compiler cannot keep it in
        // registers there): not in saved registers, which cost the call around this path
        // a dozen instructions per message in pushes, pops and moves.
        struct {
            proto::EagerOnlyHeader h;
            Endpoint* ep;
            const void* buffer;
            size_t length;
            const swy_request_params_t* params;
            Request** out;
        } call{{tag}, this, buffer, length, params, out};
        *out = nullptr;
        const Status s =
            lane_->am_send(proto::kAmEagerOnly, &call.h, sizeof(call.h), buffer, length);
        // Sent (the common case) or refused for good: done, with no request. No room for
        // now (kNoResource): queued, in order.
        if (__builtin_expect(s != Status::kNoResource, 1)) return s;
        return call.ep->tag_send_queued(call.buffer, call.length, call.h.tag, call.params,
                                        call.out);
    }
    return tag_send_queued(buffer, length, tag, params, out);
}

}  // namespace swy::core

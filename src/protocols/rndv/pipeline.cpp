// Pipeline (rndv_pipeline): after the RTR, the sender sends the data through the lane in
// fragments (RndvDataHeader + payload), which the receiver places by offset and completes on.
// Every lane carries it, it touches only the two processes' own buffers, and memory the CPU
// must not touch is staged with its memory type's copy. It is also where GET and PUT fall
// back to when zero-copy is refused.
#include <algorithm>

#include "core/worker.h"
#include "protocols/rndv/rendezvous.h"
#include "protocols/rndv/stages.h"

namespace swy::proto::rndv {

using core::Request;

void pipeline_start_receive(Rendezvous& rv, Request* r) { rv.send_rtr(r, RndvScheme::kPipeline); }

void pipeline_start_push(Rendezvous& rv, Request* r) {
    r->set_stage(PipelineStage::kSending);
    rv.drive(r);
}

bool pipeline_progress(Request* r) {
    if (!r->in_stage(PipelineStage::kSending)) return true;
    Rendezvous& rv = r->worker->rndv();
    core::Endpoint* ep = r->ep;
    const size_t frag = ep->fragment_max();
    size_t budget = kProgressBudget;
    while (r->rndv_done < r->rndv_length && budget > 0) {
        RndvDataHeader h{r->peer_request, r->rndv_done};
        const size_t n = std::min(frag, r->rndv_length - r->rndv_done);
        const Status s = ep->send_payload(r, kAmRndvData, &h, sizeof(h), r->rndv_done, n);
        if (s == Status::kNoResource) return false;
        if (s != Status::kOk) {
            rv.finish_send(r, s);
            return true;
        }
        r->rndv_done += n;
        budget -= std::min(budget, n);
    }
    if (r->rndv_done < r->rndv_length) return false;
    rv.finish_send(r, r->rndv_status);
    return true;
}

}  // namespace swy::proto::rndv

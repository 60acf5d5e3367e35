// Non-contiguous data (iov and generic datatypes, switchyard/datatype.h) on the send side:
// the request gets a dt::DataView, the protocol comes from the endpoint's datatype table
// (eager packed into cells, or the pipeline), and every payload is packed from the view
// straight into the lane's cell. Out of line: the contiguous paths only test the datatype.
#include "common/log.h"
#include "core/endpoint.h"
#include "core/worker.h"

namespace swy::core {

using common::log_printf;
using common::LogLevel;

Status Worker::attach_datatype(Request* r, swy_datatype_t datatype, const void* buffer,
                               size_t count, bool for_pack, swy_memtype_t stated) {
    if (stated != SWY_MEMTYPE_UNKNOWN && stated != SWY_MEMTYPE_HOST) {
        log_printf(LogLevel::kError,
                   "non-contiguous data (iov, generic datatypes) must be host memory");
        return Status::kUnsupported;
    }
    dt::DataView* view = pool_.attach_view(r);
    const Status s = view->init(datatype, buffer, count, for_pack);
    // Every direct path (memcpy, PIO, zero-copy, tcp placement) declines a request whose
    // buffer is not plain CPU bytes; the staged paths use the view.
    r->memtype = static_cast<uint8_t>(mem::MemType::kHost);
    r->cpu_buffer = false;
    return s;
}

Status Endpoint::tag_send_datatype(const void* buffer, size_t count, uint64_t tag,
                                   const swy_request_params_t* params, Request** out) {
    Request* r = worker_->new_request(params);
    r->kind = RequestKind::kSend;
    r->ep = this;
    r->send_tag = tag;
    const Status s = worker_->attach_datatype(r, params->datatype, buffer, count, true,
                                              Worker::stated_memtype(params));
    if (s != Status::kOk) {
        worker_->pool().put(r);
        return s;
    }
    r->send_buffer = nullptr;  // nothing may read it as bytes
    r->length = r->view->length();
    return post_send(r, params->flags, out);
}

namespace {
struct PackArgs {
    dt::DataView* view;
    size_t offset;
};
Status pack_to_cell(void* arg, uint8_t* dst, size_t length) {
    auto* a = static_cast<PackArgs*>(arg);
    // A generic pack that stops short inside the data broke its contract: the cell would
    // carry garbage, so the send fails instead.
    return a->view->pack(a->offset, dst, length) == length ? Status::kOk : Status::kInvalidParam;
}
}  // namespace

Status Endpoint::send_packed(Request* r, tl::AmId id, const void* hdr, size_t hdr_len,
                             size_t offset, size_t length) {
    PackArgs a{r->view, offset};
    return lane_->am_send_packed(id, hdr, hdr_len, pack_to_cell, &a, length);
}

}  // namespace swy::core

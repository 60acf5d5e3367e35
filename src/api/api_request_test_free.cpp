// C API: swy_request_test_free, the test, match information and free of a polled request in
// one call (what a blocking receive's wait loop needs; pml swy's MPI_Recv).
#include <switchyard/switchyard.h>

#include "api/api_guard.h"
#include "api/api_handles.h"
#include "core/worker.h"

using namespace swy;

namespace {
swy_status_t test_free_body(core::Worker* w, core::Request* r, swy_tag_recv_info_t* info) {
    if (!r->completed) return SWY_INPROGRESS;
    const swy_status_t status = api::to_c(r->status);
    if (info != nullptr && r->kind == core::RequestKind::kRecv) *info = r->info;
    w->release(r);  // completed: back to the pool (or the caller's memory) at once
    return status;
}
}  // namespace

extern "C" swy_status_t swy_request_test_free(swy_request_h req, swy_tag_recv_info_t* info) {
    core::Request* r = nullptr;
    if (swy_status_t c = api::resolve(__func__, req, &r); __builtin_expect(c != SWY_OK, 0)) {
        return c;
    }
    return api::with_worker<test_free_body>(r->worker, r, info);
}

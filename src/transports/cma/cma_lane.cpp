#include "transports/cma/cma_lane.h"

namespace swy::tl::cma {

Status CmaLane::get_zcopy(void* local, const MemoryRegistration* /*local_reg*/, RemoteKey remote,
                          size_t length, const ZcopyCompletion& /*completion*/) {
    if (pid_ <= 0) return Status::kUnsupported;
    const Status s = read(mode_, pid_, local, remote.address, length);
    if (s == Status::kOk) proven_ = true;
    return s;
}

Status CmaLane::put_zcopy(const void* local, const MemoryRegistration* /*local_reg*/,
                          RemoteKey remote, size_t length, const ZcopyCompletion& /*completion*/) {
    if (pid_ <= 0) return Status::kUnsupported;
    const Status s = write(mode_, pid_, remote.address, local, length);
    if (s == Status::kOk) proven_ = true;
    return s;
}

}  // namespace swy::tl::cma

// Placeholder of the message path until it lands: every operation reports kUnsupported.
#include "protocols/rma/rma_engine.h"

namespace swy::rma {

Engine::~Engine() = default;

Status Engine::put(core::Endpoint*, const KeyIdentity&, uint64_t, const void*, size_t,
                   swy_datatype_t, const swy_request_params_t*, core::Request** out) {
    *out = nullptr;
    return Status::kUnsupported;
}
Status Engine::get(core::Endpoint*, const KeyIdentity&, uint64_t, void*, size_t, swy_datatype_t,
                   const swy_request_params_t*, core::Request** out) {
    *out = nullptr;
    return Status::kUnsupported;
}
Status Engine::atomic(core::Endpoint*, const KeyIdentity&, uint64_t, swy_atomic_op_t, size_t,
                      uint64_t, uint64_t, void*, const swy_request_params_t*, core::Request** out) {
    *out = nullptr;
    return Status::kUnsupported;
}
Status Engine::flush_ep(core::Endpoint*, const swy_request_params_t*, core::Request** out) {
    *out = nullptr;
    return Status::kOk;
}
Status Engine::flush_worker(const swy_request_params_t*, core::Request** out) {
    *out = nullptr;
    return Status::kOk;
}
void Engine::fence() {}
bool Engine::direct_allowed(const core::Endpoint*) const { return true; }
void Engine::record_error(core::Endpoint*, Status) {}
void Engine::on_am(tl::AmId, tl::AmSource, const uint8_t*, size_t) {}
unsigned Engine::progress() { return 0; }
void Engine::endpoint_failed(core::Endpoint*, Status) {}

}  // namespace swy::rma

// What the endpoint error callback saw: the record the failure tests (peer death over shm and
// tcp, memory pressure, slow peers, one-sided and active-message failures) pass as its argument.
#pragma once

#include <switchyard/switchyard.h>

namespace swy_itest {

/// How often the error callback ran, with the status and endpoint of its last call.
struct ErrorSeen {
    int calls = 0;
    swy_status_t status = SWY_OK;
    swy_ep_h ep = nullptr;
};

/// The error callback: @p arg is an ErrorSeen.
inline void on_ep_error(void* arg, swy_ep_h ep, swy_status_t status) {
    auto* seen = static_cast<ErrorSeen*>(arg);
    ++seen->calls;
    seen->status = status;
    seen->ep = ep;
}

}  // namespace swy_itest

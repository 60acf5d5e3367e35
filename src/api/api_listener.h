// C API glue shared between api_worker.cpp (swy_ep_create) and api_listener.cpp.
#pragma once

#include <switchyard/switchyard.h>

namespace swy::api {

/// swy_ep_create() for SWY_EP_FLAG_SOCKADDR and SWY_EP_FLAG_CONN_REQUEST (flags already
/// checked for contradictions; arguments not NULL).
swy_status_t ep_create_connected(swy_worker_h worker, const swy_ep_params_t* params, swy_ep_h* ep);

}  // namespace swy::api

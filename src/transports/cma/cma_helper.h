// CMA as the transport registry sees it: not a transport (it opens no interface) but a
// helper that SWY_TLS may name ("cma") and whose setting (SWY_CMA) is checked at worker
// creation. The shm transport reads the mode itself (cma::configured_mode) when it opens.
#pragma once

#include "transports/registry.h"

namespace swy::tl::cma {

/// The registry's entry for CMA (registry.cpp lists it in tls_helpers()).
extern const HelperEntry kHelper;

}  // namespace swy::tl::cma

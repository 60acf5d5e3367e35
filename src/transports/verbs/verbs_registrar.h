// Registrar (reg_cache.h) on ibv_reg_mr / ibv_dereg_mr in one protection domain.
#pragma once

#include <infiniband/verbs.h>

#include <memory>

#include "transports/verbs/reg_cache.h"

namespace swy::tl::verbs {

/// Registers in @p pd, which must outlive every registration made (the interface flushes its
/// cache before it deallocates the PD).
std::unique_ptr<Registrar> make_verbs_registrar(ibv_pd* pd);

}  // namespace swy::tl::verbs

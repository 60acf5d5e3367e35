/* osc swy: dynamic windows (attach/detach and the origin's region lookup). Internal. */
#ifndef OSC_SWY_DYNAMIC_H
#define OSC_SWY_DYNAMIC_H

#include "osc_swy.h"

/**
 * Find the region of @p target's dynamic window that holds [@p lo, @p hi) (addresses in the
 * target), reading the target's region table again when the cached copy may be stale.
 * @return OMPI_SUCCESS (*region set); OMPI_ERR_RMA_RANGE (no attached region holds it).
 */
int ompi_osc_swy_dyn_lookup(ompi_osc_swy_module_t* module, int target, uint64_t lo, uint64_t hi,
                            const ompi_osc_swy_dyn_entry_t** region);

/** Mark every peer's cached region table for re-validation (an epoch begins). */
void ompi_osc_swy_dyn_invalidate(ompi_osc_swy_module_t* module);

#endif /* OSC_SWY_DYNAMIC_H */

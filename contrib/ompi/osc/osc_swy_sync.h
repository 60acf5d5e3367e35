/* osc swy: completion helpers shared by the synchronisation calls. Internal. */
#ifndef OSC_SWY_SYNC_H
#define OSC_SWY_SYNC_H

#include "osc_swy.h"

/** Local completion of every operation to @p target (-1: all): origin buffers reusable, get
 *  results in place (MPI_Win_flush_local). */
int ompi_osc_swy_flush_local_target(ompi_osc_swy_module_t* module, int target);

#endif /* OSC_SWY_SYNC_H */

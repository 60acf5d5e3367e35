/*
 * osc swy: window lifetime (creation for every flavour, free, shared_query) and the layout of
 * the control area. Internal to the component.
 */
#ifndef OSC_SWY_WINDOW_H
#define OSC_SWY_WINDOW_H

#include "osc_swy.h"

/** Offset in a control area of post[@p rank]: times @p rank posted an exposure epoch that
 *  named the area's owner (the owner's MPI_Win_start waits on it). */
static inline size_t ompi_osc_swy_ctrl_post_off(int rank) {
    return sizeof(ompi_osc_swy_ctrl_t) + sizeof(uint64_t) * (size_t)rank;
}

/** Offset of complete[@p rank]: times @p rank completed an access epoch to the owner. */
static inline size_t ompi_osc_swy_ctrl_complete_off(int nranks, int rank) {
    return sizeof(ompi_osc_swy_ctrl_t) + sizeof(uint64_t) * ((size_t)nranks + (size_t)rank);
}

/** Offset of the dynamic window's region table. */
static inline size_t ompi_osc_swy_ctrl_regions_off(int nranks) {
    return sizeof(ompi_osc_swy_ctrl_t) + sizeof(uint64_t) * 2 * (size_t)nranks;
}

/** The 8-byte word at @p offset of this rank's own control area. */
static inline uint64_t* ompi_osc_swy_ctrl_word(ompi_osc_swy_module_t* module, size_t offset) {
    return (uint64_t*)((char*)module->ctrl + offset);
}

/** Build the module of a new window (osc_select): map memory and control area, exchange keys
 *  (and worker addresses when the worker is our own), connect, barrier. */
int ompi_osc_swy_window_create(struct ompi_win_t* win, void** base, size_t size, int disp_unit,
                               struct ompi_communicator_t* comm, struct opal_info_t* info,
                               int flavor, int* model);

/** Close the endpoints of the component's own worker (component finalize). */
void ompi_osc_swy_close_endpoints(void);

#endif /* OSC_SWY_WINDOW_H */

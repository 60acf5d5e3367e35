/*
 * osc swy: the accumulate family (accumulate, get_accumulate, fetch_and_op, compare_and_swap
 * and their request-based forms). Placeholder: every operation is refused with
 * OMPI_ERR_NOT_SUPPORTED until the real implementation replaces this file.
 */
#include "osc_swy.h"

int ompi_osc_swy_acc_init(ompi_osc_swy_module_t* module) {
    module->acc = NULL;
    return OMPI_SUCCESS;
}

void ompi_osc_swy_acc_fini(ompi_osc_swy_module_t* module) { module->acc = NULL; }

int ompi_osc_swy_acc_flush(ompi_osc_swy_module_t* module, int target) {
    (void)module;
    (void)target;
    return OMPI_SUCCESS;
}

swy_status_t ompi_osc_swy_acc_am_handler(ompi_osc_swy_module_t* module, int source,
                                         const void* header, size_t header_length, void* data,
                                         size_t data_length, const swy_am_recv_param_t* param) {
    (void)module;
    (void)source;
    (void)header;
    (void)header_length;
    (void)data;
    (void)data_length;
    (void)param;
    return SWY_OK;
}

int ompi_osc_swy_accumulate(const void* origin_addr, int origin_count, ompi_datatype_t* origin_dt,
                            int target, ptrdiff_t target_disp, int target_count,
                            ompi_datatype_t* target_dt, struct ompi_op_t* op,
                            struct ompi_win_t* win) {
    (void)origin_addr;
    (void)origin_count;
    (void)origin_dt;
    (void)target;
    (void)target_disp;
    (void)target_count;
    (void)target_dt;
    (void)op;
    (void)win;
    return OMPI_ERR_NOT_SUPPORTED;
}

int ompi_osc_swy_compare_and_swap(const void* origin_addr, const void* compare_addr,
                                  void* result_addr, ompi_datatype_t* dt, int target,
                                  ptrdiff_t target_disp, struct ompi_win_t* win) {
    (void)origin_addr;
    (void)compare_addr;
    (void)result_addr;
    (void)dt;
    (void)target;
    (void)target_disp;
    (void)win;
    return OMPI_ERR_NOT_SUPPORTED;
}

int ompi_osc_swy_fetch_and_op(const void* origin_addr, void* result_addr, ompi_datatype_t* dt,
                              int target, ptrdiff_t target_disp, struct ompi_op_t* op,
                              struct ompi_win_t* win) {
    (void)origin_addr;
    (void)result_addr;
    (void)dt;
    (void)target;
    (void)target_disp;
    (void)op;
    (void)win;
    return OMPI_ERR_NOT_SUPPORTED;
}

int ompi_osc_swy_get_accumulate(const void* origin_addr, int origin_count,
                                ompi_datatype_t* origin_dt, void* result_addr, int result_count,
                                ompi_datatype_t* result_dt, int target, ptrdiff_t target_disp,
                                int target_count, ompi_datatype_t* target_dt, struct ompi_op_t* op,
                                struct ompi_win_t* win) {
    (void)origin_addr;
    (void)origin_count;
    (void)origin_dt;
    (void)result_addr;
    (void)result_count;
    (void)result_dt;
    (void)target;
    (void)target_disp;
    (void)target_count;
    (void)target_dt;
    (void)op;
    (void)win;
    return OMPI_ERR_NOT_SUPPORTED;
}

int ompi_osc_swy_raccumulate(const void* origin_addr, int origin_count, ompi_datatype_t* origin_dt,
                             int target, ptrdiff_t target_disp, int target_count,
                             ompi_datatype_t* target_dt, struct ompi_op_t* op,
                             struct ompi_win_t* win, struct ompi_request_t** request) {
    (void)request;
    return ompi_osc_swy_accumulate(origin_addr, origin_count, origin_dt, target, target_disp,
                                   target_count, target_dt, op, win);
}

int ompi_osc_swy_rget_accumulate(const void* origin_addr, int origin_count,
                                 ompi_datatype_t* origin_dt, void* result_addr, int result_count,
                                 ompi_datatype_t* result_dt, int target, ptrdiff_t target_disp,
                                 int target_count, ompi_datatype_t* target_dt, struct ompi_op_t* op,
                                 struct ompi_win_t* win, struct ompi_request_t** request) {
    (void)request;
    return ompi_osc_swy_get_accumulate(origin_addr, origin_count, origin_dt, result_addr,
                                       result_count, result_dt, target, target_disp, target_count,
                                       target_dt, op, win);
}

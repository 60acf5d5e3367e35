// C API: generic datatypes (switchyard/datatype.h). Predefined ones need no object.
#include <switchyard/switchyard.h>

#include <cstring>
#include <new>
#include <string>

#include "api/api_guard.h"
#include "datatype/data_view.h"

using namespace swy;
using api::WorkerGuard;

extern "C" {

swy_status_t swy_dt_create_generic(const swy_dt_generic_ops_t* ops, void* context,
                                   swy_datatype_t* datatype) {
    if (ops == nullptr || datatype == nullptr || ops->start_pack == nullptr ||
        ops->start_unpack == nullptr || ops->packed_size == nullptr || ops->pack == nullptr ||
        ops->unpack == nullptr || ops->finish == nullptr) {
        return api::invalid(__func__, "ops, every callback in it and datatype must not be NULL");
    }
    auto* g = new (std::nothrow) dt::GenericType{*ops, context, dt::kGenericMagic};
    if (g == nullptr) return SWY_ERR_NO_MEMORY;
    static_assert(alignof(dt::GenericType) >= 8,
                  "the low 3 bits tell a handle from a predefined type");
    *datatype = static_cast<swy_datatype_t>(reinterpret_cast<uintptr_t>(g));
    return SWY_OK;
}

void swy_dt_destroy(swy_datatype_t datatype) {
    if (datatype == SWY_DATATYPE_CONTIG || datatype == SWY_DATATYPE_IOV || (datatype & 7) != 0) {
        return;
    }
    auto* g = reinterpret_cast<dt::GenericType*>(static_cast<uintptr_t>(datatype));
    if (g->magic != dt::kGenericMagic) return;
    g->magic = 0;
    delete g;
}

swy_status_t swy_ep_print_datatype_protocols(struct swy_ep* ep, char* buf, size_t buflen) {
    if (ep == nullptr || buf == nullptr || buflen == 0) {
        return api::invalid(__func__, "NULL argument");
    }
    core::Endpoint* e = nullptr;
    if (swy_status_t c = api::resolve(__func__, ep, &e); c != SWY_OK) return c;
    WorkerGuard guard(e->worker());
    if (e->datatype_table().empty()) return SWY_ERR_UNSUPPORTED;  // not wired yet
    const std::string text = e->datatype_table().print();
    std::strncpy(buf, text.c_str(), buflen - 1);
    buf[buflen - 1] = '\0';
    return text.size() < buflen ? SWY_OK : SWY_ERR_NO_RESOURCE;
}

}  // extern "C"

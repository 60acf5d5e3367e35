// C API: one-sided communication (switchyard/rma.h). Argument checks, then for each
// operation the key's direct path (protocols/rma/direct.h) when it has one and the engine
// allows it now, else the message path (rma::Engine).
#include <switchyard/rma.h>

#include <cstring>
#include <new>
#include <string>

#include "api/api_guard.h"
#include "core/context.h"
#include "core/endpoint.h"
#include "core/worker.h"
#include "datatype/data_view.h"
#include "protocols/rma/direct.h"
#include "protocols/rma/mem_table.h"
#include "protocols/rma/rkey.h"
#include "protocols/rma/rma_engine.h"

using namespace swy;
using api::WorkerGuard;

namespace {

core::Context* context_of(swy_context_h c) { return reinterpret_cast<core::Context*>(c); }

rma::Mapping* mapping_of(swy_mem_h m) {
    auto* p = reinterpret_cast<rma::Mapping*>(m);
    return p != nullptr && p->magic == rma::kMappingMagic ? p : nullptr;
}

rma::RemoteKey* key_of(swy_rkey_h k) {
    auto* p = reinterpret_cast<rma::RemoteKey*>(k);
    return p != nullptr && p->magic == rma::kRemoteKeyMagic ? p : nullptr;
}

constexpr uint64_t kMemMapFields = SWY_MEM_MAP_FIELD_ADDRESS | SWY_MEM_MAP_FIELD_LENGTH |
                                   SWY_MEM_MAP_FIELD_FLAGS | SWY_MEM_MAP_FIELD_ACCESS |
                                   SWY_MEM_MAP_FIELD_MEMTYPE;
constexpr uint32_t kMemMapFlags = SWY_MEM_MAP_ALLOCATE | SWY_MEM_MAP_FIXED;
constexpr uint64_t kMemAttrFields = SWY_MEM_ATTR_FIELD_ADDRESS | SWY_MEM_ATTR_FIELD_LENGTH |
                                    SWY_MEM_ATTR_FIELD_MEMTYPE | SWY_MEM_ATTR_FIELD_ACCESS |
                                    SWY_MEM_ATTR_FIELD_SHARED;
constexpr uint64_t kRequestFields = SWY_REQ_PARAM_FIELD_FLAGS | SWY_REQ_PARAM_FIELD_CALLBACK |
                                    SWY_REQ_PARAM_FIELD_USER_DATA | SWY_REQ_PARAM_FIELD_MEMTYPE |
                                    SWY_REQ_PARAM_FIELD_RECV_INFO | SWY_REQ_PARAM_FIELD_DATATYPE;

/// The request parameters as the library may read them: every field whose bit is not set
/// holds its default, so nothing below (nor the engine) reads a field the caller did not set.
struct Params {
    swy_request_params_t p{};
    bool valid = true;

    explicit Params(const swy_request_params_t* in) {
        p.memtype = SWY_MEMTYPE_UNKNOWN;
        p.datatype = SWY_DATATYPE_CONTIG;
        if (in == nullptr) return;
        const uint64_t m = in->field_mask;
        valid = (m & ~kRequestFields) == 0;
        p.field_mask = m;
        if ((m & SWY_REQ_PARAM_FIELD_FLAGS) != 0) p.flags = in->flags;
        if ((m & SWY_REQ_PARAM_FIELD_CALLBACK) != 0) p.send_cb = in->send_cb;
        if ((m & SWY_REQ_PARAM_FIELD_USER_DATA) != 0) p.user_data = in->user_data;
        if ((m & SWY_REQ_PARAM_FIELD_MEMTYPE) != 0) p.memtype = in->memtype;
        if ((m & SWY_REQ_PARAM_FIELD_DATATYPE) != 0) p.datatype = in->datatype;
    }
    bool no_imm() const { return (p.flags & SWY_REQ_FLAG_NO_IMM_COMPLETE) != 0; }
};

/// The end of an operation that completed inside the call: SWY_OK, or with
/// SWY_REQ_FLAG_NO_IMM_COMPLETE a request whose callback runs from the next progress (as tag
/// sends do).
swy_status_t done_now(core::Worker* w, const Params& params, Status s, swy_request_h* req) {
    *req = nullptr;
    if (s != Status::kOk || !params.no_imm()) return api::to_c(s);
    core::Request* r = w->new_request(&params.p);
    r->kind = core::RequestKind::kSend;
    r->user_owned = true;
    w->complete_later(r, Status::kOk);
    *req = api::handle_of(r);
    return SWY_INPROGRESS;
}

/// The engine's answer as the C API reports it.
swy_status_t engine_result(Status s, core::Request* r, swy_request_h* req) {
    *req = api::handle_of(r);
    return api::to_c(s);
}

/// Whether the local buffer is host memory the CPU may touch (the direct paths copy with it).
bool host_buffer(core::Worker* w, const Params& params, const dt::DataView& view) {
    if (w->host_without_detection(params.p.memtype)) return true;
    if (!view.contiguous()) return params.p.memtype == SWY_MEMTYPE_HOST;
    mem::MemType type = mem::MemType::kHost;
    bool cpu = false;
    return w->resolve_memtype(view.data(), view.length(), params.p.memtype, &type, &cpu) ==
               Status::kOk &&
           type == mem::MemType::kHost;
}

/// Common checks of put and get: the key, the endpoint it belongs to, the parameters, the
/// datatype and the range. On success @p view is initialised and @p e is the endpoint.
swy_status_t check_rma(const char* fn, swy_ep_h ep, const void* buffer, size_t count,
                       uint64_t remote_address, swy_rkey_h rkey, const Params& params,
                       swy_request_h* req, bool for_put, rma::RemoteKey** key, dt::DataView* view,
                       core::Endpoint** e) {
    if (ep == nullptr || req == nullptr) return api::invalid(fn, "ep and req must not be NULL");
    if (swy_status_t c = api::resolve(fn, ep, e); c != SWY_OK) return c;
    *key = key_of(rkey);
    if (*key == nullptr) return api::invalid(fn, "rkey is not an unpacked key");
    if ((*key)->ep_handle != reinterpret_cast<uintptr_t>(ep)) {
        return api::invalid(fn, "rkey was unpacked on another endpoint");
    }
    if (!params.valid) return api::invalid(fn, "unknown bits in params->field_mask");
    if (params.p.datatype == SWY_DATATYPE_CONTIG && buffer == nullptr && count != 0) {
        return api::invalid(fn, "buffer is NULL");
    }
    if (view->init(params.p.datatype, buffer, count, for_put) != Status::kOk) {
        return api::invalid(fn, "bad datatype or iov");
    }
    if (!(*key)->grants(remote_address, view->length(),
                        for_put ? rma::kAccessWrite : rma::kAccessRead)) {
        view->finish();
        return api::invalid(fn, for_put ? "outside the key's range or without remote write"
                                        : "outside the key's range or without remote read");
    }
    return SWY_OK;
}

/// swy_put_nb (@p put) and swy_get_nb: the key's direct path when it has one and the engine
/// allows it now, else the engine.
swy_status_t rma_transfer(const char* fn, swy_ep_h ep, void* buffer, size_t count,
                          uint64_t remote_address, swy_rkey_h rkey,
                          const swy_request_params_t* params, swy_request_h* req, bool put) {
    const Params p(params);
    rma::RemoteKey* key = nullptr;
    dt::DataView view;
    core::Endpoint* e = nullptr;
    swy_status_t c =
        check_rma(fn, ep, buffer, count, remote_address, rkey, p, req, put, &key, &view, &e);
    if (c != SWY_OK) return c;
    core::Worker* w = e->worker();
    WorkerGuard guard(w);
    // Where the owner's table is reachable, a stale or forged key fails here whichever path
    // would carry the operation: the direct operation checks the key itself, and an operation
    // for the engine is checked first. (A failed endpoint's operations go to the engine,
    // which fails them: a dead owner's memory stays mapped here, but is nobody's any more.)
    if (key->direct) {
        if (key->direct->moves(view) && host_buffer(w, p, view) && !e->failed() &&
            w->rma().direct_allowed(e)) {
            Status s = put ? key->direct->put(remote_address, view)
                           : key->direct->get(remote_address, view);
            view.finish();
            // kUnreachable / kUnsupported: CMA refused (ptrace policy); the engine carries it.
            if (s != Status::kUnreachable && s != Status::kUnsupported) {
                return done_now(w, p, s, req);
            }
        } else if (Status denied = key->direct->check(remote_address, view.length(),
                                                      put ? rma::kAccessWrite : rma::kAccessRead);
                   denied != Status::kOk) {
            view.finish();
            return api::to_c(denied);
        }
    }
    view.finish();
    core::Request* r = nullptr;
    Status s =
        put ? w->rma().put(e, key->fields.id, remote_address, buffer, count, p.p.datatype, &p.p, &r)
            : w->rma().get(e, key->fields.id, remote_address, buffer, count, p.p.datatype, &p.p,
                           &r);
    return engine_result(s, r, req);
}

}  // namespace

extern "C" {

// ------------------------------------------------------------------------------------------
// Memory
// ------------------------------------------------------------------------------------------

swy_status_t swy_mem_map(swy_context_h context, const swy_mem_map_params_t* params,
                         swy_mem_h* memh) {
    if (context == nullptr || params == nullptr || memh == nullptr) {
        return api::invalid(__func__, "context, params and memh must not be NULL");
    }
    const uint64_t m = params->field_mask;
    if ((m & ~kMemMapFields) != 0) return api::invalid(__func__, "unknown field_mask bits");
    if ((m & SWY_MEM_MAP_FIELD_LENGTH) == 0 || params->length == 0) {
        return api::invalid(__func__, "length is required and must be > 0");
    }
    const size_t length = params->length;
    void* address = (m & SWY_MEM_MAP_FIELD_ADDRESS) != 0 ? params->address : nullptr;
    const uint32_t flags = (m & SWY_MEM_MAP_FIELD_FLAGS) != 0 ? params->flags : 0;
    const uint32_t access = (m & SWY_MEM_MAP_FIELD_ACCESS) != 0 ? params->access : rma::kAccessAll;
    swy_memtype_t memtype =
        (m & SWY_MEM_MAP_FIELD_MEMTYPE) != 0 ? params->memtype : SWY_MEMTYPE_UNKNOWN;
    if ((flags & ~kMemMapFlags) != 0) return api::invalid(__func__, "unknown flags");
    if ((access & ~rma::kAccessAll) != 0) return api::invalid(__func__, "unknown access bits");
    const bool allocate = (flags & SWY_MEM_MAP_ALLOCATE) != 0;
    if ((flags & SWY_MEM_MAP_FIXED) != 0) {
        if (!allocate) return api::invalid(__func__, "SWY_MEM_MAP_FIXED needs ALLOCATE");
        if (address == nullptr || reinterpret_cast<uintptr_t>(address) % rma::page_size() != 0) {
            return api::invalid(__func__, "SWY_MEM_MAP_FIXED needs a page-aligned address");
        }
    }
    if (!allocate && address == nullptr) {
        return api::invalid(__func__, "address is required without SWY_MEM_MAP_ALLOCATE");
    }
    if (!allocate && reinterpret_cast<uintptr_t>(address) + length < length) {
        return api::invalid(__func__, "address + length wraps around");
    }
    if (memtype > SWY_MEMTYPE_CUDA) return api::invalid(__func__, "unknown memtype");
    core::Context* ctx = context_of(context);
    if (allocate) {
        if (memtype != SWY_MEMTYPE_UNKNOWN && memtype != SWY_MEMTYPE_HOST) {
            common::log_printf(common::LogLevel::kError,
                               "%s: SWY_MEM_MAP_ALLOCATE allocates host memory only", __func__);
            return SWY_ERR_UNSUPPORTED;
        }
        memtype = SWY_MEMTYPE_HOST;
    } else {
        if (memtype == SWY_MEMTYPE_UNKNOWN) {
            memtype = static_cast<swy_memtype_t>(ctx->memtypes().detect(address, length));
        }
        // Device memory (simdev, dma-buf, cuda) is not registered for remote access yet: the
        // direct paths copy with the CPU and the engine executes with it.
        if (memtype != SWY_MEMTYPE_HOST) {
            common::log_printf(common::LogLevel::kError,
                               "%s: only host memory can be mapped for remote access", __func__);
            return SWY_ERR_UNSUPPORTED;
        }
    }
    rma::Mapping* mapping = nullptr;
    std::string why;
    Status s = ctx->mem_table().map(address, length, flags, access, memtype, &mapping, &why);
    if (s != Status::kOk) {
        if (!why.empty())
            common::log_printf(common::LogLevel::kError, "%s: %s", __func__, why.c_str());
        return api::to_c(s);
    }
    *memh = reinterpret_cast<swy_mem_h>(mapping);
    return SWY_OK;
}

swy_status_t swy_mem_unmap(swy_context_h context, swy_mem_h memh) {
    if (context == nullptr || memh == nullptr) {
        return api::invalid(__func__, "context and memh must not be NULL");
    }
    Status s = context_of(context)->mem_table().unmap(reinterpret_cast<rma::Mapping*>(memh));
    if (s != Status::kOk) return api::invalid(__func__, "not a live mapping of this context");
    return SWY_OK;
}

swy_status_t swy_mem_query(swy_mem_h memh, swy_mem_attr_t* attr) {
    rma::Mapping* m = mapping_of(memh);
    if (m == nullptr || attr == nullptr) {
        return api::invalid(__func__, "memh must be a live mapping and attr not NULL");
    }
    const uint64_t want = attr->field_mask;
    if ((want & ~kMemAttrFields) != 0) return api::invalid(__func__, "unknown field_mask bits");
    if ((want & SWY_MEM_ATTR_FIELD_ADDRESS) != 0) attr->address = m->address;
    if ((want & SWY_MEM_ATTR_FIELD_LENGTH) != 0) attr->length = m->length;
    if ((want & SWY_MEM_ATTR_FIELD_MEMTYPE) != 0) attr->memtype = m->memtype;
    if ((want & SWY_MEM_ATTR_FIELD_ACCESS) != 0) attr->access = m->access;
    if ((want & SWY_MEM_ATTR_FIELD_SHARED) != 0) attr->shared = m->allocated ? 1 : 0;
    return SWY_OK;
}

// ------------------------------------------------------------------------------------------
// Remote keys
// ------------------------------------------------------------------------------------------

swy_status_t swy_rkey_pack(swy_context_h context, swy_mem_h memh, void** buffer, size_t* length) {
    rma::Mapping* m = mapping_of(memh);
    if (context == nullptr || m == nullptr || buffer == nullptr || length == nullptr) {
        return api::invalid(__func__, "context, a live memh, buffer and length are required");
    }
    auto* out = new (std::nothrow) uint8_t[rma::kPackedKeyBytes];
    if (out == nullptr) return SWY_ERR_NO_MEMORY;
    rma::encode_key(rma::key_of(context_of(context), *m), out);
    *buffer = out;
    *length = rma::kPackedKeyBytes;
    return SWY_OK;
}

void swy_rkey_buffer_release(void* buffer) { delete[] static_cast<uint8_t*>(buffer); }

swy_status_t swy_ep_rkey_unpack(swy_ep_h ep, const void* buffer, size_t length, swy_rkey_h* rkey) {
    if (ep == nullptr || buffer == nullptr || rkey == nullptr) {
        return api::invalid(__func__, "ep, buffer and rkey must not be NULL");
    }
    core::Endpoint* e = nullptr;
    if (swy_status_t c = api::resolve(__func__, ep, &e); c != SWY_OK) return c;
    rma::KeyFields fields;
    if (rma::decode_key(buffer, length, &fields) != Status::kOk) return SWY_ERR_MALFORMED;
    WorkerGuard guard(e->worker());
    auto* key = new (std::nothrow) rma::RemoteKey;
    if (key == nullptr) return SWY_ERR_NO_MEMORY;
    key->ep_handle = reinterpret_cast<uintptr_t>(ep);
    key->worker = e->worker();
    key->fields = fields;
    // A key unpacked before the endpoint is wired has no direct path (the lane decides).
    key->direct = rma::DirectPath::create(e, fields);
    key->magic = rma::kRemoteKeyMagic;
    *rkey = reinterpret_cast<swy_rkey_h>(key);
    return SWY_OK;
}

void swy_rkey_destroy(swy_rkey_h rkey) {
    rma::RemoteKey* key = key_of(rkey);
    if (key == nullptr) return;
    WorkerGuard guard(key->worker);
    key->magic = 0;
    delete key;
}

swy_status_t swy_rkey_ptr(swy_rkey_h rkey, uint64_t remote_address, void** local_ptr) {
    rma::RemoteKey* key = key_of(rkey);
    if (key == nullptr || local_ptr == nullptr) {
        return api::invalid(__func__, "rkey must be an unpacked key and local_ptr not NULL");
    }
    if (!key->grants(remote_address, 0, 0)) {
        return api::invalid(__func__, "remote_address is outside the key's range");
    }
    WorkerGuard guard(key->worker);
    if (core::SlotArena<core::Endpoint>::resolve(key->ep_handle) == nullptr) {
        return api::invalid(__func__, "the endpoint this rkey was unpacked on is closed");
    }
    if (!key->direct) return SWY_ERR_UNREACHABLE;
    return api::to_c(key->direct->pointer(remote_address, local_ptr));
}

// ------------------------------------------------------------------------------------------
// RMA
// ------------------------------------------------------------------------------------------

swy_status_t swy_put_nb(swy_ep_h ep, const void* buffer, size_t count, uint64_t remote_address,
                        swy_rkey_h rkey, const swy_request_params_t* params, swy_request_h* req) {
    return rma_transfer(__func__, ep, const_cast<void*>(buffer), count, remote_address, rkey,
                        params, req, true);
}

swy_status_t swy_get_nb(swy_ep_h ep, void* buffer, size_t count, uint64_t remote_address,
                        swy_rkey_h rkey, const swy_request_params_t* params, swy_request_h* req) {
    return rma_transfer(__func__, ep, buffer, count, remote_address, rkey, params, req, false);
}

swy_status_t swy_atomic_nb(swy_ep_h ep, swy_atomic_op_t op, size_t size, const void* operand,
                           const void* compare, void* result, uint64_t remote_address,
                           swy_rkey_h rkey, const swy_request_params_t* params,
                           swy_request_h* req) {
    const Params p(params);
    if (ep == nullptr || req == nullptr || operand == nullptr) {
        return api::invalid(__func__, "ep, req and operand must not be NULL");
    }
    rma::RemoteKey* key = key_of(rkey);
    if (key == nullptr) return api::invalid(__func__, "rkey is not an unpacked key");
    core::Endpoint* e = nullptr;
    if (swy_status_t c = api::resolve(__func__, ep, &e); c != SWY_OK) return c;
    if (key->ep_handle != reinterpret_cast<uintptr_t>(ep)) {
        return api::invalid(__func__, "rkey was unpacked on another endpoint");
    }
    if (!p.valid) return api::invalid(__func__, "unknown bits in params->field_mask");
    if (op < SWY_ATOMIC_OP_ADD || op > SWY_ATOMIC_OP_CSWAP) {
        return api::invalid(__func__, "unknown op");
    }
    if (size != 4 && size != 8) return api::invalid(__func__, "size must be 4 or 8");
    if (remote_address % size != 0) {
        return api::invalid(__func__, "remote_address is not aligned to size");
    }
    if (op == SWY_ATOMIC_OP_CSWAP && compare == nullptr) {
        return api::invalid(__func__, "CSWAP needs compare");
    }
    if (!key->grants(remote_address, size, rma::kAccessAtomic)) {
        return api::invalid(__func__, "outside the key's range or without remote atomic");
    }
    uint64_t value = 0;
    uint64_t expected = 0;
    if (size == 4) {
        uint32_t v32 = 0;
        std::memcpy(&v32, operand, 4);
        value = v32;
        if (compare != nullptr) {
            std::memcpy(&v32, compare, 4);
            expected = v32;
        }
    } else {
        std::memcpy(&value, operand, 8);
        if (compare != nullptr) std::memcpy(&expected, compare, 8);
    }
    core::Worker* w = e->worker();
    WorkerGuard guard(w);
    // As in swy_put_nb: the direct atomic checks the key itself; one for the engine is
    // checked first.
    const bool direct =
        key->direct && key->direct->atomics() && !e->failed() && w->rma().direct_allowed(e);
    if (key->direct && !direct) {
        const Status denied = key->direct->check(remote_address, size, rma::kAccessAtomic);
        if (denied != Status::kOk) return api::to_c(denied);
    }
    if (direct) {
        uint64_t old = 0;
        Status s = key->direct->atomic(remote_address, op, size, value, expected, &old);
        if (s == Status::kOk && result != nullptr) {
            if (size == 4) {
                const auto old32 = static_cast<uint32_t>(old);
                std::memcpy(result, &old32, 4);
            } else {
                std::memcpy(result, &old, 8);
            }
        }
        return done_now(w, p, s, req);
    }
    core::Request* r = nullptr;
    Status s = w->rma().atomic(e, key->fields.id, remote_address, op, size, value, expected, result,
                               &p.p, &r);
    return engine_result(s, r, req);
}

// ------------------------------------------------------------------------------------------
// Ordering and completion
// ------------------------------------------------------------------------------------------

swy_status_t swy_ep_flush_nb(swy_ep_h ep, const swy_request_params_t* params, swy_request_h* req) {
    const Params p(params);
    if (ep == nullptr || req == nullptr) return api::invalid(__func__, "ep and req are required");
    if (!p.valid) return api::invalid(__func__, "unknown bits in params->field_mask");
    core::Endpoint* e = nullptr;
    if (swy_status_t c = api::resolve(__func__, ep, &e); c != SWY_OK) return c;
    WorkerGuard guard(e->worker());
    core::Request* r = nullptr;
    Status s = e->worker()->rma().flush_ep(e, &p.p, &r);
    return engine_result(s, r, req);
}

swy_status_t swy_worker_flush_nb(swy_worker_h worker, const swy_request_params_t* params,
                                 swy_request_h* req) {
    const Params p(params);
    if (worker == nullptr || req == nullptr) {
        return api::invalid(__func__, "worker and req are required");
    }
    if (!p.valid) return api::invalid(__func__, "unknown bits in params->field_mask");
    core::Worker* w = nullptr;
    if (swy_status_t c = api::resolve(__func__, worker, &w); c != SWY_OK) return c;
    WorkerGuard guard(w);
    core::Request* r = nullptr;
    Status s = w->rma().flush_worker(&p.p, &r);
    return engine_result(s, r, req);
}

swy_status_t swy_worker_fence(swy_worker_h worker) {
    core::Worker* w = nullptr;
    if (swy_status_t c = api::resolve(__func__, worker, &w); c != SWY_OK) return c;
    WorkerGuard guard(w);
    w->rma().fence();
    return SWY_OK;
}

}  // extern "C"

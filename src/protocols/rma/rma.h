// One-sided operations (switchyard/rma.h): the seam between the two halves.
//
//  - Memory and keys (mem_table.*, rkey.*, direct.*): swy_mem_map / unmap / query, packing and
//    unpacking remote keys, swy_rkey_ptr, and the *direct* paths, where the initiator's CPU
//    moves the data itself and the target runs nothing: copies and CPU atomics on memory the
//    owner allocated with swy_mem_map and a same-host peer mapped, and process_vm_writev /
//    readv (CMA) into registered memory. Every direct access is checked first against the
//    owner's key table, which same-host peers map read-only, so a stale or forged key fails
//    with kAccessDenied before any byte moves.
//  - The message path (rma_engine.*): operations the target executes from its progress (any
//    lane: tcp, verbs, shm for atomics on registered memory, ...): put, get, atomics, flush,
//    fence. The target validates every request against its key table (validate_access)
//    before touching memory.
//
// The API layer (api/api_rma.cpp) unpacks arguments, then for each operation asks the key
// whether a direct path applies (and the engine whether ordering allows it), else calls the
// engine.
#pragma once

#include <switchyard/switchyard.h>

#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace swy::core {
class Context;
class Endpoint;
class Worker;
struct Request;
}  // namespace swy::core

namespace swy::rma {

/// Remote access rights (the public SWY_ACCESS_* bits).
inline constexpr uint32_t kAccessRead = SWY_ACCESS_REMOTE_READ;
inline constexpr uint32_t kAccessWrite = SWY_ACCESS_REMOTE_WRITE;
inline constexpr uint32_t kAccessAtomic = SWY_ACCESS_REMOTE_ATOMIC;
inline constexpr uint32_t kAccessAll = kAccessRead | kAccessWrite | kAccessAtomic;

/// What a remote key names in its owner's key table, as the key (a peer's bytes) says. The
/// owner checks every field again against its table; the initiator checks range and rights
/// itself first so that plain mistakes fail at once with kInvalidParam.
struct KeyIdentity {
    uint32_t slot = 0;    ///< entry in the owner's key table
    uint64_t secret = 0;  ///< random per mapping: a stale or forged key does not know it
    uint64_t base = 0;    ///< first byte of the range (owner's address)
    uint64_t length = 0;  ///< bytes in the range
    uint32_t access = 0;  ///< kAccess* bits granted
};

/// Target side, in the owner's process: if (slot, secret) names a live mapping of @p context
/// granting @p access over [address, address + length), set *local to the address to touch
/// and return kOk; kAccessDenied otherwise (stale, forged, out of range, without the right).
/// Thread safety: any thread (the table is shared by every worker of the context).
Status validate_access(core::Context* context, uint32_t slot, uint64_t secret, uint64_t address,
                       size_t length, uint32_t access, uint8_t** local);

}  // namespace swy::rma

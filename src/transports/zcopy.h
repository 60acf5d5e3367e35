// The zero-copy interface: what a lane offers beyond active messages. A lane says what it can
// do in LaneAttr::caps (bits below); one that moves bytes between user buffers without a copy
// through the lane's cells also hands out a ZcopyLane (tl::Endpoint::zcopy()). The rendezvous
// protocols (src/protocols/rndv/) are written once over this interface and run over CMA
// (transports/cma/cma_lane.h: keys are the verified pid plus an address) and verbs RDMA
// (transports/verbs/: memory registrations and rkeys) alike.
//
// Completion follows UCT: an operation returns kOk when it is done (the bytes moved, as CMA
// does in the call), kInProgress when a callback reports its end later (RDMA), any other
// status when it failed (no callback then).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace swy::tl {

/// Capability bits of a lane (LaneAttr::caps).
namespace cap {
inline constexpr uint32_t kAmShort = 1u << 0;   ///< PIO sends of small messages
inline constexpr uint32_t kAmBcopy = 1u << 1;   ///< sends copied through cells / buffers
inline constexpr uint32_t kGetZcopy = 1u << 2;  ///< ZcopyLane::get_zcopy reaches the peer
inline constexpr uint32_t kPutZcopy = 1u << 3;  ///< ZcopyLane::put_zcopy reaches the peer
/// The peer names its memory with keys from register_memory() (RDMA rkeys), and our side of
/// every zero-copy operation must be registered too. Without it (CMA) the lane's verified
/// peer is the key: nothing is registered, nothing is allocated per transfer.
inline constexpr uint32_t kRemoteKeys = 1u << 4;
/// Device memory exported as a dma-buf can be registered (ZcopyLane::register_dmabuf).
inline constexpr uint32_t kDeviceMemory = 1u << 5;
// Bits 8..15 are reserved for atomics (fetch-add, compare-swap) and 16.. for later operations.
}  // namespace cap

/// A registered memory range, for one transfer. Destroying it ends that use: the range is
/// deregistered, or its registration stays in the transport's registration cache, which
/// checks on every reuse that the same physical pages still back the range, so a later
/// transfer never reaches different pages through it (docs/verbs.md, "Registration").
/// Destroy registrations before the interface they came from.
class MemoryRegistration {
public:
    virtual ~MemoryRegistration() = default;
    virtual uint32_t lkey() const = 0;
    virtual uint32_t rkey() const = 0;
    virtual uint64_t address() const = 0;
    virtual size_t length() const = 0;
};

/// Access a registration grants (register_memory, register_dmabuf).
enum ZcopyAccess : unsigned {
    kZcopyLocal = 0,        ///< local use only: the source of our put
    kZcopyLocalWrite = 1,   ///< the lane writes into it (target of our get)
    kZcopyRemoteRead = 2,   ///< the peer reads it (source of the peer's get)
    kZcopyRemoteWrite = 4,  ///< the peer writes into it (target of the peer's put)
};

/// Completion of one zero-copy operation: @p cookie as given, the final status (kOk, or the
/// error that failed any part of it). Runs from the interface's progress, or (a put's posted
/// callback only) inside the call that started the operation.
using ZcopyCallback = void (*)(void* arg, uint64_t cookie, Status status);

/// Where the bytes are on the peer: an address in its memory and the key that grants access
/// (RDMA: the rkey of the peer's registration; CMA: unused, the lane's verified process is
/// the only one it ever reaches, whatever a peer sends).
struct RemoteKey {
    uint64_t address = 0;
    uint64_t key = 0;
};

/// What to call when an operation that returned kInProgress ends.
struct ZcopyCompletion {
    ZcopyCallback done = nullptr;  ///< the operation completed (kOk or its error)
    /// put only (may be null): every part of the put has been handed to the lane, so a message
    /// sent on the same lane from now on reaches the peer after the put's data (RDMA: an RC
    /// queue executes in order). Runs at most once, possibly before put_zcopy returns; never
    /// if the lane fails first (then @c done reports it).
    ZcopyCallback posted = nullptr;
    void* arg = nullptr;
    uint64_t cookie = 0;
};

/// The zero-copy operations of one lane. Not thread-safe (the worker serialises calls).
class ZcopyLane {
public:
    virtual ~ZcopyLane() = default;
    /// cap:: bits (the zero-copy ones of LaneAttr::caps).
    virtual uint32_t caps() const = 0;
    /// Largest range one get_zcopy/put_zcopy should move: a lane that copies in the call (CMA)
    /// keeps it small, so one progress call stays short; SIZE_MAX: post any range at once.
    virtual size_t max_zcopy() const = 0;
    /// Register [address, address + length) with @p access (ZcopyAccess bits). Only lanes with
    /// cap::kRemoteKeys need it. Errors: kUnsupported (no registration on this lane), kIoError
    /// (the device refused; @p why says why), kNoMemory.
    virtual Status register_memory(const void* /*address*/, size_t /*length*/, unsigned /*access*/,
                                   std::unique_ptr<MemoryRegistration>* /*out*/, std::string* why) {
        *why = "this lane needs no registration";
        return Status::kUnsupported;
    }
    /// Register device memory exported as a dma-buf: bytes [offset, offset + length) of the
    /// dma-buf @p fd, addressed in operations as @p iova onwards (the buffer's virtual address,
    /// so the same address arithmetic works as for host memory). @p fd stays the caller's (the
    /// registration holds its own reference). Errors: kUnsupported (no cap::kDeviceMemory),
    /// kIoError (the device refused; @p why says why), kNoMemory.
    virtual Status register_dmabuf(int /*fd*/, uint64_t /*offset*/, size_t /*length*/,
                                   uint64_t /*iova*/, unsigned /*access*/,
                                   std::unique_ptr<MemoryRegistration>* /*out*/, std::string* why) {
        *why = "this lane cannot register dma-buf memory";
        return Status::kUnsupported;
    }
    /// Read @p length bytes at @p remote on the peer into @p local. @p local_reg: the
    /// registration covering @p local (required with cap::kRemoteKeys, else ignored).
    /// kOk: done; kInProgress: @p completion.done runs once it is; kUnsupported: the peer may
    /// not be reached this way (ptrace policy); kConnectionReset: the peer is gone; kIoError:
    /// the range is not mapped there; kInvalidParam: @p local is outside @p local_reg.
    virtual Status get_zcopy(void* local, const MemoryRegistration* local_reg, RemoteKey remote,
                             size_t length, const ZcopyCompletion& completion) = 0;
    /// Write @p length bytes from @p local to @p remote on the peer; the mirror of get_zcopy.
    /// kOk also means posted (a later message arrives after the data).
    virtual Status put_zcopy(const void* local, const MemoryRegistration* local_reg,
                             RemoteKey remote, size_t length,
                             const ZcopyCompletion& completion) = 0;
    /// True once a get_zcopy or put_zcopy with the peer this lane reaches now has succeeded:
    /// the peer's policy lets us in, so a protocol may commit both sides to zero-copy before
    /// its own first transfer (a split GET asks for the split at once). False by default.
    virtual bool proven() const { return false; }
};

}  // namespace swy::tl

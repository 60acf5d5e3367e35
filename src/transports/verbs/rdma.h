// Zero-copy RDMA operations a lane may offer to the rendezvous protocol (src/core/
// rndv_verbs.cpp), kept free of libibverbs so the core compiles without it. The verbs
// endpoint implements it; the worker finds it with dynamic_cast on the rendezvous path only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace swy::tl {

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

/// Completion of one RDMA operation: @p cookie as given, the final status (kOk, or the error
/// that failed any part of it). Runs from the interface's progress.
using RdmaCallback = void (*)(void* arg, uint64_t cookie, Status status);

enum RdmaAccess : unsigned {
    kRdmaLocal = 0,            ///< local use only: the source of our WRITE
    kRdmaLocalWrite = 1,       ///< the NIC writes into it (target of our READ)
    kRdmaRemoteRead = 2,       ///< the peer reads it (source of the peer's READ)
    kRdmaRemoteWrite = 4,      ///< the peer writes into it (target of the peer's WRITE)
};

class RdmaEndpoint {
public:
    virtual ~RdmaEndpoint() = default;
    /// Register [address, address + length) with @p access (RdmaAccess bits).
    /// Errors: kIoError (the device refused; @p why says why), kNoMemory.
    virtual Status register_memory(const void* address, size_t length, unsigned access,
                                   std::unique_ptr<MemoryRegistration>* out,
                                   std::string* why) = 0;
    /// Register device memory exported as a dma-buf: bytes [offset, offset + length) of the
    /// dma-buf @p fd, addressed in RDMA operations as @p iova onwards (the buffer's virtual
    /// address, so the same address arithmetic works as for host memory). @p fd stays owned
    /// by the caller (the registration holds its own reference to the dma-buf).
    /// Errors: kUnsupported (this lane cannot: LaneAttr::rdma_device_memory is false),
    /// kIoError (the device refused; @p why says why), kNoMemory.
    virtual Status register_dmabuf(int /*fd*/, uint64_t /*offset*/, size_t /*length*/,
                                   uint64_t /*iova*/, unsigned /*access*/,
                                   std::unique_ptr<MemoryRegistration>* /*out*/,
                                   std::string* why) {
        *why = "this lane cannot register dma-buf memory";
        return Status::kUnsupported;
    }
    /// RDMA READ @p length bytes from the peer's (remote_address, rkey) into @p local at
    /// @p local_offset; fragmented internally; @p cb runs once when all of it completed.
    /// kOk: started; kConnectionReset: the connection failed (cb never runs).
    virtual Status get(const MemoryRegistration& local, size_t local_offset,
                       uint64_t remote_address, uint32_t rkey, size_t length, RdmaCallback cb,
                       void* arg, uint64_t cookie) = 0;
    /// RDMA WRITE, the mirror of get(). @p posted (may be null) runs once, with @p cookie
    /// and kOk, when the last WR of the WRITE has been handed to the send queue: before put()
    /// returns if the queue had room for every chunk, else from progress once the backlog
    /// drained. A SEND made on this endpoint after that is executed by the peer after the
    /// WRITE's data is placed (an RC responder executes requests in order), so it can tell
    /// the peer the data is there without waiting for @p cb. @p posted never runs if the
    /// connection fails first (then @p cb reports the failure). @p cb still runs once every
    /// chunk completed locally (the local buffer is no longer read).
    virtual Status put(const MemoryRegistration& local, size_t local_offset,
                       uint64_t remote_address, uint32_t rkey, size_t length, RdmaCallback cb,
                       RdmaCallback posted, void* arg, uint64_t cookie) = 0;
};

}  // namespace swy::tl

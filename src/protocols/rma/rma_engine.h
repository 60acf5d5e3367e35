// The message path of one-sided operations: put, get and atomics that the target executes
// from its progress, flush and fence. One Engine per worker (Worker::rma()). Works over every
// lane (self, shm, tcp, verbs): the requests are active messages (kAmRma* in protocols/wire.h),
// and the target validates each against its key table (rma::validate_access) before it touches
// memory.
//
// Completion of the calls below follows the C API: kOk (done at once, *out null),
// kInProgress (*out is a request of the endpoint's worker), or an error (nothing started).
#pragma once

#include <switchyard/switchyard.h>

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "protocols/rma/rma.h"
#include "transports/transport.h"

namespace swy::rma {

class Engine {
public:
    explicit Engine(core::Worker* worker) : worker_(worker) {}
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;
    ~Engine();

    // ---- initiator ----
    /// Write @p count items of @p buffer (@p datatype) to @p address under @p key at the peer
    /// of @p ep. Local completion: the buffer may be reused.
    Status put(core::Endpoint* ep, const KeyIdentity& key, uint64_t address, const void* buffer,
               size_t count, swy_datatype_t datatype, const swy_request_params_t* params,
               core::Request** out);
    /// Read into @p buffer. Completes once the data is there.
    Status get(core::Endpoint* ep, const KeyIdentity& key, uint64_t address, void* buffer,
               size_t count, swy_datatype_t datatype, const swy_request_params_t* params,
               core::Request** out);
    /// Atomic @p op on the @p size-byte (4 or 8) word at @p address; operands in the low
    /// @p size bytes. @p result null: posted; else it receives the old value.
    Status atomic(core::Endpoint* ep, const KeyIdentity& key, uint64_t address, swy_atomic_op_t op,
                  size_t size, uint64_t operand, uint64_t compare, void* result,
                  const swy_request_params_t* params, core::Request** out);
    /// Every operation started on @p ep before is complete at the target; the request ends
    /// with the first error the target reported since the last flush of @p ep.
    Status flush_ep(core::Endpoint* ep, const swy_request_params_t* params, core::Request** out);
    /// flush_ep for every endpoint of the worker.
    Status flush_worker(const swy_request_params_t* params, core::Request** out);
    /// Operations started after this are executed after those started before (per target).
    void fence();
    /// Whether a direct operation (the initiator's CPU, protocols/rma/direct.h) may run now on
    /// @p ep: false after a fence while operations the target executes are still outstanding
    /// on it (later ones then take the message path and queue behind them on the lane).
    bool direct_allowed(const core::Endpoint* ep) const;
    /// A direct operation on @p ep failed with @p why after it had been started (reported by
    /// the next flush of @p ep).
    void record_error(core::Endpoint* ep, Status why);

    // ---- worker hooks ----
    /// A kAmRma* message (either side).
    void on_am(tl::AmId id, tl::AmSource src, const uint8_t* data, size_t length);
    /// True when progress() has work (asked on every worker progress call: keep it cheap).
    bool busy() const { return busy_; }
    /// Continue what waits for lane credits (get replies, queued requests); @return events.
    unsigned progress();
    /// @p ep is going away or failed: its operations end with @p why.
    void endpoint_failed(core::Endpoint* ep, Status why);

private:
    core::Worker* worker_;
    bool busy_ = false;
};

}  // namespace swy::rma

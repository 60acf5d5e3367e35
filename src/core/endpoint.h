// Endpoint: a connection from a worker to one remote worker. Holds its lane (transport
// endpoint), the protocol table built at connect time, and the queues of operations that
// could not go out yet (pending) or wait for the peer (in flight).
#pragma once

#include <switchyard/switchyard.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/endpoint_tables.h"
#include "core/request.h"
#include "core/slot_arena.h"
#include "memtypes/memtype.h"
#include "protocols/proto_table.h"
#include "transports/transport.h"

namespace swy::core {

class Worker;

/// A FIFO of requests linked through Request::link.
class RequestQueue {
public:
    bool empty() const { return head_ == nullptr; }
    Request* front() const { return head_; }
    void push_back(Request* r);
    void remove(Request* r);
    Request* pop_front();

private:
    Request* head_ = nullptr;
    Request* tail_ = nullptr;
};

class Endpoint {
public:
    Endpoint(Worker* worker, std::unique_ptr<tl::Endpoint> lane, uint16_t iface_index,
             const swy_ep_params_t& params);
    /// An endpoint created from a sockaddr: no lane until wire(); sends wait on its pending
    /// queue, and their protocol is chosen when it is wired.
    Endpoint(Worker* worker, const swy_ep_params_t& params);
    ~Endpoint();

    /// Take the lane chosen at wire-up and build the protocol tables (once).
    void wire(std::unique_ptr<tl::Endpoint> lane, uint16_t iface_index);
    bool wired() const { return lane_ != nullptr; }

    Worker* worker() const { return worker_; }
    /// The application's handle for this endpoint: generation-checked (core/slot_arena.h;
    /// every Endpoint lives in its worker's arena), refused once the endpoint is closed.
    swy_ep_h handle() const;
    tl::Endpoint* lane() const { return lane_.get(); }
    /// Index of the lane's interface in the worker.
    uint16_t iface_index() const { return iface_index_; }
    /// The peer the lane sends to, in the form messages from it are checked against
    /// (Worker::peer_of); {iface, 0} (nobody) before wire-up.
    PeerRef peer() const { return {iface_index_, lane_ ? lane_->peer_key() : 0}; }
    /// The lane's attributes; before wire-up, empty ones (transport "").
    const tl::LaneAttr& lane_attr() const { return lane_ ? lane_->attr() : kUnwiredAttr; }
    /// 0 before wire-up (no worker has uid 0).
    uint64_t remote_uid() const { return lane_ ? lane_->remote_uid() : 0; }

    /// Largest payload sent as one packet with no fragment header (eager short or one-cell bcopy).
    size_t single_packet_max() const { return single_packet_max_; }
    /// Largest payload per fragment of a fragmented message.
    size_t fragment_max() const { return fragment_max_; }
    /// Largest host payload sent by eager PIO (0 without a PIO lane).
    size_t pio_max() const { return pio_max_; }

    /// The tables are shared with the worker's other endpoints whose lane gave the same
    /// (endpoint_tables.h): read-only. Empty before wire-up.
    const proto::ProtoTable& host_table() const { return table(mem::MemType::kHost); }
    /// Table for non-contiguous host data (iov and generic datatypes), by packed length:
    /// eager packs into the lane's cells, rendezvous is always the pipeline
    /// (protocols/datatype_table.h). Empty before wire-up.
    const proto::ProtoTable& datatype_table() const {
        return tables_ ? tables_->datatype : kUnwiredTables.datatype;
    }
    /// Table for sends from memory of @p type (empty if that type is not loaded).
    const proto::ProtoTable& table(mem::MemType type) const {
        return (tables_ ? *tables_ : kUnwiredTables).by_memtype[static_cast<size_t>(type)];
    }

    // ---- operations (implemented in protocols/, called by the API layer) ----
    /// A tagged send. Inline (core/endpoint_send.h): the common small message goes to the
    /// lane in one packet from the API call itself; everything else is tag_send_queued().
    inline Status tag_send(const void* buffer, size_t length, uint64_t tag,
                           const swy_request_params_t* params, Request** out);
    /// tag_send() for what its fast path does not take (or its lane refused for now): a
    /// request, protocol selection, the endpoint's queues; non-contiguous data.
    Status tag_send_queued(const void* buffer, size_t length, uint64_t tag,
                           const swy_request_params_t* params, Request** out);

    /// Send @p count items of the non-contiguous @p params->datatype at @p buffer (tag_send's
    /// path for iov and generic data, endpoint_datatype.cpp).
    Status tag_send_datatype(const void* buffer, size_t count, uint64_t tag,
                             const swy_request_params_t* params, Request** out);

    /// am_send from the user buffer: packed bytes [offset, offset + length) of the data,
    /// staged through the memory type's copy when the CPU must not touch it, packed straight
    /// into the lane's cell through the view for non-contiguous data.
    Status send_payload(Request* r, tl::AmId id, const void* hdr, size_t hdr_len, size_t offset,
                        size_t length);

    /// Retry pending sends; @return true if none is left to retry (sends awaiting delivery
    /// are on the worker's delivery list instead: complete_delivered()).
    bool progress_pending();
    /// Completes (kOk) the sends awaiting delivery that the lane now confirms; @return how
    /// many. Cheap while nothing new is known (the lane decides when to ask its kernel).
    unsigned complete_delivered();
    /// Sends still waiting for their lane to confirm delivery.
    bool awaiting_delivery() const { return awaiting_delivery_ != 0; }
    /// Called once every byte of send @p r went to the lane and no answer from the peer is
    /// due (remote_done): on a lane that confirms delivery (tcp) the send is not complete
    /// until the peer acknowledged its bytes, so it becomes in flight (remote_done false,
    /// delivery_mark set; the caller queues it) and true is returned. False elsewhere.
    bool await_delivery(Request* r) {
        if (__builtin_expect(!confirms_delivery_, 1)) return false;
        return start_delivery_wait(r);
    }

    /// Fail every outstanding operation and report the error once.
    void fail(Status why);
    bool failed() const { return failed_; }
    Status failure() const { return failure_; }

    RequestQueue& pending() { return pending_; }
    RequestQueue& in_flight() { return in_flight_; }
    bool idle() const { return pending_.empty() && in_flight_.empty(); }

    uint32_t next_message_id() { return ++message_ids_; }
    bool pio_granted() const { return lane_ && lane_->attr().pio; }

    // Bookkeeping used by Worker.
    Endpoint* next_in_worker = nullptr;
    Endpoint* prev_in_worker = nullptr;
    bool on_pending_list = false;
    bool on_delivery_list = false;  ///< on the worker's list of sends awaiting delivery
    bool closing = false;
    bool closed = false;  ///< closed; deleted by the worker once nothing runs inside it
    /// A fence waits for the target to finish one-sided operations started before it: until
    /// then, later ones must not take a direct path (rma::Engine sets and clears it; the API
    /// reads it on every direct operation, so it is a flag here, not a lookup there).
    bool rma_fence_pending = false;

private:
    static const tl::LaneAttr kUnwiredAttr;
    static const EndpointTables kUnwiredTables;
    /// Protocol, completion mode and message id of a send (needs the tables: wired only).
    void choose_protocol(Request* r);
    /// Shared tail of the sends: choose the protocol, push what the lane takes, and complete
    /// at once or hand the request to the caller (*out).
    Status post_send(Request* r, uint32_t flags, Request** out);
    /// send_payload() of non-contiguous data: each fragment packed into the cell.
    Status send_packed(Request* r, tl::AmId id, const void* hdr, size_t hdr_len, size_t offset,
                       size_t length);
    /// Send as much of @p r as the lane accepts now. kOk: all handed over; kNoResource: rest
    /// later; error: failed.
    Status push(Request* r);
    bool start_delivery_wait(Request* r);

    Worker* worker_;
    std::unique_ptr<tl::Endpoint> lane_;
    uint16_t iface_index_;
    swy_ep_error_cb_t err_cb_;
    void* err_arg_;
    size_t single_packet_max_ = 0;
    size_t fragment_max_ = 0;
    size_t pio_max_ = 0;
    size_t fast_max_ = 0;  // sizes up to here go eager in one packet (fast path)
    bool fast_path_ = false;
    bool confirms_delivery_ = false;  // lane_->attr().confirms_delivery
    size_t awaiting_delivery_ = 0;    // in_flight_ requests with a delivery_mark
    uint64_t delivery_wanted_ = 0;    // the highest delivery_mark given so far
    std::vector<Request*> delivered_scratch_;
    std::shared_ptr<const EndpointTables> tables_;  // null before wire-up
    RequestQueue pending_;
    RequestQueue in_flight_;
    uint32_t message_ids_ = 0;
    bool failed_ = false;
    bool error_reported_ = false;
    Status failure_ = Status::kOk;
};

inline swy_ep_h Endpoint::handle() const {
    return reinterpret_cast<swy_ep_h>(SlotArena<Endpoint>::handle_of(this));
}

}  // namespace swy::core

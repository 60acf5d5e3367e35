#include "core/worker.h"

#include <algorithm>

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/log.h"
#include "core/listener.h"
#include "core/topology.h"
#include "protocols/oversubscription.h"
#include "protocols/wire.h"
#include "transports/registry.h"

namespace swy::core {

using common::log_printf;
using common::LogLevel;

Worker::Worker(Context* context, const swy_worker_params_t* params)
    : context_(context),
      uid_(context->new_worker_uid()),
      thread_mode_(params != nullptr ? params->thread_mode : SWY_THREAD_MODE_SINGLE) {
    // Counted here, not at the end of create(): the destructor always uncounts, also for a
    // worker whose creation failed half-way (it used to drive the count below zero).
    context->live_workers++;
}

Status Worker::create(Context* context, const swy_worker_params_t* params, Worker** out,
                      std::string* why) {
    std::unique_ptr<Worker> w(new (std::nothrow) Worker(context, params));
    if (!w) return Status::kNoMemory;
    const common::Config& cfg = context->config();
    w->pio_max_eps_ = cfg.get_unsigned("PIO_MAX_EPS");
    w->pio_reserved_ = std::min<size_t>(cfg.get_unsigned("PIO_RESERVED"), w->pio_max_eps_);
    // SWY_RNDV_SCHEME=get promises a receiver that needs nothing from the sender: no split
    // (its tail is pushed by the sender, from the sender's progress). So does an
    // oversubscribed host, where the sender is likely descheduled and no other core is free
    // to copy at once anyway.
    w->rndv_.set_split_min(cfg.get_string("RNDV_SCHEME") == "get" ||
                                   proto::detect_oversubscription(cfg).busy
                               ? SIZE_MAX
                               : std::max<size_t>(cfg.get_size("RNDV_SPLIT_MIN"), 8192));
    w->rndv_.set_get_chunk(std::max<size_t>(cfg.get_size("RNDV_FRAG_SIZE"), 4096));
    w->unexpected_max_ = cfg.get_size("UNEXPECTED_MAX");
    w->unexpected_peer_max_ = cfg.get_size("UNEXPECTED_PEER_MAX");
    // Settings of what transports build on (SWY_CMA), checked whichever transports open.
    Status s = tl::check_helper_settings(cfg, why);
    if (s != Status::kOk) return s;
    s = w->open_interfaces(why);
    if (s != Status::kOk) return s;
    w->unexpected_by_sender_.resize(w->ifaces_.size());  // never again: descs point into it
    *out = w.release();
    return Status::kOk;
}

Status Worker::open_interfaces(std::string* why) {
    epoll_fd_.reset(epoll_create1(EPOLL_CLOEXEC));
    signal_fd_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!epoll_fd_ || !signal_fd_) {
        *why = std::string("epoll_create1/eventfd: ") + std::strerror(errno);
        return Status::kIoError;
    }
    const common::Config& cfg = context_->config();
    // Checked even without a transport that uses it: a key that cannot be used is a mistake
    // worth stopping for.
    if (const std::string hex = cfg.get_string("AUTH_KEY"); !hex.empty()) {
        std::string key_why;
        if (common::AuthKey::from_hex(hex, &auth_key_, &key_why) != Status::kOk) {
            *why = "SWY_AUTH_KEY: " + key_why;
            return Status::kInvalidParam;
        }
    }
    std::function<void(void*, size_t)> place_local_memory;
    // With one NUMA node there is nothing to place, and asking hwloc costs tens of
    // milliseconds per context: look at the kernel's node list first.
    if (cfg.get_bool("NUMA_PLACEMENT") && Topology::online_numa_nodes() != 1) {
        place_local_memory = [ctx = context_](void* base, size_t size) {
            const Topology* topo = ctx->topology();
            if (topo == nullptr || topo->numa_node_count() < 2) return;
            int node = topo->numa_node_of_caller();
            if (node >= 0) (void)topo->bind_to_numa_node(base, size, node);
        };
    }
    bool host_memory_lane_open = false;
    polled_.clear();  // the end mark goes after the interfaces
    for (const tl::TransportEntry* entry : tl::transports()) {
        if (!context_->transport_enabled(std::string(entry->name).c_str())) continue;
        const auto index = static_cast<uint16_t>(ifaces_.size());
        const tl::OpenParams params{
            .config = cfg,
            .costs = context_->costs(),
            .worker_uid = uid_,
            .iface_index = index,
            .sink = this,
            .auth_key = auth_key_,
            .tls_enabled =
                [ctx = context_](const char* name) { return ctx->transport_enabled(name); },
            .place_local_memory = place_local_memory,
            .host_memory_lane_open = host_memory_lane_open};
        std::unique_ptr<tl::Interface> iface;
        Status s = entry->open(params, &iface, why);
        if (s != Status::kOk) return s;
        if (iface == nullptr) continue;  // not here (no device, not built): the transport said why
        host_memory_lane_open = host_memory_lane_open || entry->polls_host_memory;
        transports_.push_back({entry, index});
        polled_.push_back(iface.get());
        ifaces_.push_back(std::move(iface));
    }
    polled_.push_back(nullptr);  // the poll loop's end mark
    std::stable_sort(transports_.begin(), transports_.end(),
                     [](const OpenTransport& a, const OpenTransport& b) {
                         return a.entry->priority > b.entry->priority;
                     });
    std::vector<int> fds{signal_fd_.get()};
    for (auto& iface : ifaces_)
        fds.push_back(iface->event_fd());
    for (int fd : fds) {
        if (fd < 0) continue;
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev);
    }
    return Status::kOk;
}

tl::Interface* Worker::interface_named(std::string_view name) const {
    for (const OpenTransport& t : transports_) {
        if (t.entry->name == name) return ifaces_[t.index].get();
    }
    return nullptr;
}

Worker::~Worker() {
    // Close what the application left open; its requests complete as canceled.
    while (endpoints_ != nullptr) {
        Request* req = nullptr;
        close_endpoint(endpoints_, SWY_EP_CLOSE_FORCE, &req);
        if (req != nullptr) release(req);
    }
    run_deferred();
    reap_endpoints();
    // Every request still outstanding (posted receives, rendezvous, one-sided, AM data
    // fetches) completes as canceled, its callback included.
    cancel_outstanding();
    warn_unfreed();
    rndv_.release_all();  // registrations go before the interface that holds their PD
    ifaces_.clear();
    epoll_fd_.reset();
    // An incomplete message a matched probe took out is no longer in the matcher: eager_
    // frees those (before the matcher's own are deleted below, which it may point to).
    eager_.free_probed();
    while (proto::UnexpectedMessage* m = matcher_.match_unexpected(0, 0, true)) {
        delete static_cast<UnexpectedDesc*>(m);
    }
    context_->live_workers--;
}

// ------------------------------------------------------------------------------------------
// Progress and blocking
// ------------------------------------------------------------------------------------------

unsigned Worker::poll() {
    // Progress is not re-entrant (a callback must not call it); the depth also tells
    // close_endpoint() whether an endpoint may be deleted right away.
    if (progress_depth_ != 0) return 0;
    ++progress_depth_;
    // Everything but the transports is rare: one word (side_work_, set by whoever queues such
    // work) says whether any of it may be waiting, tested before and after the transports;
    // the work itself is out of line (this function then keeps few registers, and a
    // message's poll saves and restores few).
    unsigned n = __builtin_expect(side_work_, 0) ? run_deferred_counted() : 0;
    // The poll loop's length is latency: a message that lands waits on average half a loop.
    // So a transport that knows it is idle (self with nothing queued) costs no call, and the
    // others are called in a plain walk (tcp throttles its system calls itself, and must
    // write what sends corked since the last call).
    // Null-terminated: the walk keeps one pointer live, no end.
    for (tl::Interface* const* p = polled_.data(); *p != nullptr; ++p) {
        if ((*p)->wants_progress()) n += (*p)->progress();
    }
    if (__builtin_expect(side_work_, 0)) return n + finish_poll_with_side_work();
    --progress_depth_;
    return n;
}

unsigned Worker::run_deferred_counted() {
    const auto n = static_cast<unsigned>(deferred_.size());
    if (n != 0) run_deferred();
    return n;
}

unsigned Worker::finish_poll_with_side_work() {
    const unsigned n = poll_side_work();
    --progress_depth_;
    if (!dead_eps_.empty()) reap_endpoints();
    // Cleared only when nothing is left: what the work above queued set it again, and the
    // state itself is what is asked here.
    side_work_ = conn_ != nullptr || !pending_eps_.empty() || !delivery_eps_.empty() ||
                 !control_backlog_.empty() || rndv_.busy() || rma_.busy() || !closing_.empty() ||
                 !deferred_.empty() || !dead_eps_.empty();
    return n;
}

unsigned Worker::poll_side_work() {
    unsigned n = 0;
    if (conn_ != nullptr) n += conn_->progress();
    if (!pending_eps_.empty()) {
        // Swap with a scratch vector kept across calls: no allocation on this path.
        pending_scratch_.clear();
        pending_scratch_.swap(pending_eps_);
        for (size_t i = 0; i < pending_scratch_.size(); ++i) {
            Endpoint* ep = pending_scratch_[i];
            if (ep == nullptr) continue;
            ep->on_pending_list = false;
            if (!ep->progress_pending()) mark_pending(ep);
        }
    }
    if (!delivery_eps_.empty()) n += check_deliveries();
    if (!control_backlog_.empty()) retry_control();
    if (rndv_.busy()) n += rndv_.progress();
    if (rma_.busy()) n += rma_.progress();
    if (!closing_.empty()) {
        for (size_t i = 0; i < closing_.size();) {
            Request* r = closing_[i];
            Endpoint* ep = r->ep;
            if (!ep->idle() && !ep->failed()) {
                ++i;
                continue;
            }
            closing_.erase(closing_.begin() + static_cast<long>(i));
            Request* dummy = nullptr;
            close_endpoint(ep, SWY_EP_CLOSE_FORCE, &dummy);
            complete(r, Status::kOk);
        }
    }
    return n;
}

void Worker::mark_pending(Endpoint* ep) {
    if (ep->on_pending_list) return;
    ep->on_pending_list = true;
    pending_eps_.push_back(ep);
    note_side_work();
}

void Worker::watch_delivery(Endpoint* ep) {
    if (ep->on_delivery_list) return;
    ep->on_delivery_list = true;
    delivery_eps_.push_back(ep);
    note_side_work();
}

unsigned Worker::check_deliveries() {
    // As for pending_eps_: a scratch vector kept across calls, and a completion callback may
    // send (watch_delivery) or close an endpoint (close_endpoint() clears it from both lists).
    unsigned n = 0;
    delivery_scratch_.clear();
    delivery_scratch_.swap(delivery_eps_);
    for (size_t i = 0; i < delivery_scratch_.size(); ++i) {
        Endpoint* ep = delivery_scratch_[i];
        if (ep == nullptr) continue;
        ep->on_delivery_list = false;
        if (!ep->awaiting_delivery() || ep->lane() == nullptr) continue;
        n += ep->complete_delivered();
        if (ep->awaiting_delivery()) watch_delivery(ep);
    }
    return n;
}

bool Worker::closing_ready() const {
    for (const Request* r : closing_) {
        if (r->ep->idle() || r->ep->failed()) return true;
    }
    return false;
}

void Worker::run_deferred() {
    while (!deferred_.empty()) {
        auto [r, s] = deferred_.front();
        deferred_.pop_front();
        complete(r, s);
    }
}

Status Worker::get_efd(int* fd) const {
    *fd = epoll_fd_.get();
    return Status::kOk;
}

Status Worker::arm() {
    const Status s = arm_interfaces();
    armed_ = s == Status::kOk;
    return s;
}

Status Worker::arm_interfaces() {
    // Sends awaiting delivery (delivery_eps_) are no reason: their lane wakes us when it is
    // worth asking again (tl::Endpoint::acknowledged_bytes), and a flush close that waits
    // for them (or for any reply) waits for an event too.
    if (!deferred_.empty() || !pending_eps_.empty() || !control_backlog_.empty() ||
        closing_ready() || rma_.busy()) {
        disarm();  // an earlier arm must not outlive this answer
        return Status::kBusy;
    }
    // A transport that finds work waiting leaves the others armed: undo them all, or their
    // senders would keep paying for wake-ups nobody waits for.
    for (auto& iface : ifaces_) {
        if (!iface->arm()) {
            disarm();
            return Status::kBusy;
        }
    }
    if (conn_ != nullptr && !conn_->arm()) {
        disarm();
        return Status::kBusy;
    }
    return Status::kOk;
}

void Worker::disarm() {
    armed_ = false;
    disarm_interfaces();
}

void Worker::disarm_interfaces() {
    for (auto& iface : ifaces_)
        iface->disarm();
    if (conn_ != nullptr) conn_->disarm();
    // Read whether or not a signal came: a flag set next to the write could only be set
    // before it (then a read may run between the two and leave the count readable for good)
    // or after it (then a wake-up may find the count but not yet the flag). One system call
    // per wake-up cycle, next to the transports' own.
    uint64_t count;
    (void)!read(signal_fd_.get(), &count, sizeof(count));
}

void Worker::signal() {
    const uint64_t one = 1;
    (void)!write(signal_fd_.get(), &one, sizeof(one));
}

Status Worker::wait(int timeout_ms) {
    std::unique_lock<std::recursive_mutex> guard(lock_, std::defer_lock);
    if (multi_threaded()) guard.lock();
    Status s = arm_interfaces();
    if (s == Status::kBusy) return Status::kOk;
    // Other threads may use the worker while this one sleeps.
    if (multi_threaded()) guard.unlock();
    pollfd pfd{epoll_fd_.get(), POLLIN, 0};
    int rc = ::poll(&pfd, 1, timeout_ms);
    if (multi_threaded()) guard.lock();
    disarm();
    if (rc == 0) return Status::kTimedOut;
    if (rc < 0 && errno != EINTR) return Status::kIoError;
    return Status::kOk;
}

std::vector<uint8_t> Worker::address() const {
    WorkerAddress a;
    a.worker_uid = uid_;
    a.host = context_->host();
    for (const tl::TransportEntry* entry : tl::transports()) {  // registry order, as before
        for (const OpenTransport& t : transports_) {
            if (t.entry == entry)
                a.sections.push_back({entry->address_section, ifaces_[t.index]->address()});
        }
    }
    return encode_address(a);
}

void Worker::query(swy_worker_attr_t* attr) const {
    if ((attr->field_mask & SWY_WORKER_ATTR_FIELD_REQUEST_SIZE) != 0) {
        attr->request_size = sizeof(Request);
        attr->request_alignment = alignof(Request);
    }
    if ((attr->field_mask & SWY_WORKER_ATTR_FIELD_PIO) == 0) return;
    attr->pio_endpoints_granted = static_cast<unsigned>(pio_granted_);
    attr->pio_endpoints_max = static_cast<unsigned>(pio_max_eps_);
    attr->pio_window_slots = 0;
    attr->pio_window_free = 0;
    for (const OpenTransport& t : transports_) {  // the first transport with a PIO window
        if (t.entry->pio_window != nullptr &&
            t.entry->pio_window(ifaces_[t.index].get(), &attr->pio_window_slots,
                                &attr->pio_window_free)) {
            break;
        }
    }
}

// ------------------------------------------------------------------------------------------
// Endpoints
// ------------------------------------------------------------------------------------------

Status Worker::create_endpoint(const swy_ep_params_t& params, Endpoint** out, std::string* why,
                               Endpoint* wire_into) {
    WorkerAddress remote;
    Status s = decode_address(params.remote_address, params.remote_address_length, &remote, why);
    if (s != Status::kOk) return s;

    std::unique_ptr<tl::Endpoint> lane;
    int iface_index = -1;
    const bool same_host = remote.host == context_->host();
    // PIO policy: first come, first served up to PIO_MAX_EPS - PIO_RESERVED; the reserved
    // rest only for endpoints that ask for low latency first.
    const bool pio_first = (params.flags & SWY_EP_FLAG_PIO_FIRST) != 0;
    const size_t pio_limit = pio_first ? pio_max_eps_ : pio_max_eps_ - pio_reserved_;
    // The highest priority transport that reaches the peer carries the endpoint.
    for (const OpenTransport& t : transports_) {
        const AddressSection* sec = remote.find(t.entry->address_section);
        if (sec == nullptr) continue;
        const tl::ReachQuery q{.local_uid = uid_,
                               .remote_uid = remote.worker_uid,
                               .same_host = same_host,
                               .section = sec->bytes.data(),
                               .section_length = sec->bytes.size()};
        if (!t.entry->can_reach(q)) continue;
        const tl::ConnectParams cp{.remote_uid = remote.worker_uid,
                                   .section = sec->bytes.data(),
                                   .section_length = sec->bytes.size(),
                                   .no_pio = (params.flags & SWY_EP_FLAG_NO_PIO) != 0,
                                   .pio_first = pio_first,
                                   .pio_quota_left = pio_granted_ < pio_limit};
        iface_index = t.index;
        s = t.entry->connect(ifaces_[t.index].get(), cp, &lane, why);
        break;
    }
    if (iface_index < 0) {
        *why = same_host ? "no enabled transport reaches the peer (check SWY_TLS)"
                         : "the peer runs on another host (or network namespace) and no network "
                           "transport is enabled";
        return Status::kUnreachable;
    }
    if (s != Status::kOk) return s;
    Endpoint* ep = wire_into;
    if (ep != nullptr) {
        ep->wire(std::move(lane), static_cast<uint16_t>(iface_index));
    } else {
        ep =
            endpoint_slots_.make(this, std::move(lane), static_cast<uint16_t>(iface_index), params);
    }
    if (ep->pio_granted()) ++pio_granted_;
    if (wire_into == nullptr) {
        ep->next_in_worker = endpoints_;
        if (endpoints_ != nullptr) endpoints_->prev_in_worker = ep;
        endpoints_ = ep;
    }
    am_.endpoint_wired(ep);  // replies to active messages from its peer go on it
    if (context_->config().get_bool("PROTO_INFO")) {
        const tl::LaneAttr& la = ep->lane_attr();
        const bool zcopy = (la.caps & tl::cap::kGetZcopy) != 0;
        const bool keys = (la.caps & tl::cap::kRemoteKeys) != 0;
        common::log_print_always(
            LogLevel::kInfo,
            "endpoint to %016llx over %s (pio %s, credits %u, zero-copy %s%s; costs: %s):\n%s",
            static_cast<unsigned long long>(ep->remote_uid()), la.transport,
            ep->pio_granted() ? "yes" : "no", la.credits,
            zcopy ? (keys ? "yes, remote keys" : "yes") : "no: ",
            zcopy ? "" : la.zcopy_reason.c_str(), context_->costs().source.c_str(),
            ep->host_table().print().c_str());
    }
    *out = ep;
    return Status::kOk;
}

Status Worker::close_endpoint(Endpoint* ep, swy_ep_close_mode_t mode, Request** req) {
    *req = nullptr;
    if (ep->closed) return Status::kOk;  // closed again from a callback of its own close
    if (mode == SWY_EP_CLOSE_FLUSH && !ep->idle() && !ep->failed()) {
        if (ep->closing) return Status::kBusy;
        ep->closing = true;
        Request* r = new_request(nullptr);
        r->kind = RequestKind::kClose;
        r->ep = ep;
        r->user_owned = true;
        closing_.push_back(r);
        note_side_work();
        *req = r;
        return Status::kInProgress;
    }
    ep->closed = true;
    // A flush close still waiting for this endpoint is overtaken by this one.
    for (size_t i = 0; i < closing_.size();) {
        Request* r = closing_[i];
        if (r->ep != ep) {
            ++i;
            continue;
        }
        closing_.erase(closing_.begin() + static_cast<long>(i));
        complete(r, Status::kCanceled);
    }
    ++progress_depth_;            // a callback closing another endpoint defers its deletion too
    ep->fail(Status::kCanceled);  // callbacks run here; they see the endpoint closed
    --progress_depth_;
    SlotArena<Endpoint>::retire(ep);  // the application's handle stops working now
    if (ep->pio_granted() && pio_granted_ > 0) --pio_granted_;
    if (ep->prev_in_worker != nullptr) ep->prev_in_worker->next_in_worker = ep->next_in_worker;
    if (ep->next_in_worker != nullptr) ep->next_in_worker->prev_in_worker = ep->prev_in_worker;
    if (endpoints_ == ep) endpoints_ = ep->next_in_worker;
    ep->prev_in_worker = ep->next_in_worker = nullptr;
    am_.endpoint_closed(ep, endpoints_);
    for (auto& p : pending_eps_) {
        if (p == ep) p = nullptr;
    }
    std::erase(pending_eps_, nullptr);
    for (auto& p : pending_scratch_) {  // a callback closed it while progress walks the list
        if (p == ep) p = nullptr;
    }
    std::erase(delivery_eps_, ep);
    for (auto& p : delivery_scratch_) {
        if (p == ep) p = nullptr;
    }
    // Deleted once no call of ours can still be running on it (end of progress, or ~Worker):
    // the close may come from a callback inside that endpoint's own code.
    dead_eps_.push_back(ep);
    note_side_work();
    if (progress_depth_ == 0) reap_endpoints();
    return Status::kOk;
}

void Worker::reap_endpoints() {
    std::vector<Endpoint*> dead;
    dead.swap(dead_eps_);
    for (Endpoint* ep : dead)
        endpoint_slots_.destroy(ep);
}

// ------------------------------------------------------------------------------------------
// Requests
// ------------------------------------------------------------------------------------------

void Worker::complete_fully(Request* r, Status status) {
    if (r->completed) return;
    r->status = status;
    r->completed = true;
    // A generic datatype's finish runs once, here, whichever way the operation ended (the
    // pool's put() covers requests completed before they were ever queued).
    if (__builtin_expect(r->view != nullptr, 0)) r->view->finish();
    if (r->ep != nullptr && r->queue != 0) {
        (r->queue == 1 ? r->ep->pending() : r->ep->in_flight()).remove(r);
    }
    if (r->user_owned) {
        // The callback may free this request and reuse its slot for a new one (the pool is
        // LIFO): only a request that is still this one goes back to the pool here. A request
        // in the caller's memory is never touched after its callback: a free there handed
        // the memory back, and it is never freed before completion (user_freed stays false).
        const uint32_t generation = r->generation;
        const bool external = r->external != nullptr;
        if (r->kind == RequestKind::kRecv) {
            if (r->recv_cb != nullptr) {
                r->recv_cb(r->handle(), static_cast<swy_status_t>(status), &r->info, r->user_data);
            }
        } else if (r->send_cb != nullptr) {
            r->send_cb(r->handle(), static_cast<swy_status_t>(status), r->user_data);
        }
        if (!external && r->generation == generation && r->user_freed) pool_.put(r);
    }
    // Not user owned: the call that created it is still running and will report the status.
}

void Worker::complete_later(Request* r, Status status) {
    deferred_.emplace_back(r, status);
    note_side_work();
}

Status Worker::cancel(Request* r) {
    if (r->completed) return Status::kOk;
    if (r->kind != RequestKind::kRecv || r->matched) return Status::kBusy;
    if (!matcher_.cancel(r)) return Status::kBusy;
    r->matched = true;  // no longer matchable
    complete_later(r, Status::kCanceled);
    return Status::kOk;
}

void Worker::send_control(tl::AmSource to, tl::AmId id, const void* hdr, size_t length) {
    if (control_backlog_.empty()) {
        tl::Endpoint* lane = ifaces_[to.iface]->reply_endpoint(to.sender);
        if (lane == nullptr) return;  // the sender is gone; nobody waits for this any more
        Status s = lane->am_send(id, hdr, length, nullptr, 0);
        if (s != Status::kNoResource) return;
    }
    const auto* p = static_cast<const uint8_t*>(hdr);
    control_backlog_.push_back({to, id, std::vector<uint8_t>(p, p + length)});
    note_side_work();
}

void Worker::retry_control() {
    while (!control_backlog_.empty()) {
        ControlMessage& m = control_backlog_.front();
        tl::Endpoint* lane = ifaces_[m.to.iface]->reply_endpoint(m.to.sender);
        if (lane != nullptr) {
            Status s = lane->am_send(m.id, m.bytes.data(), m.bytes.size(), nullptr, 0);
            if (s == Status::kNoResource) return;
        }
        control_backlog_.pop_front();
    }
}

void Worker::on_sender_released(tl::AmSource src) {
    // Its sender index may now go to another process: an RTS it left unmatched can never be
    // served (nor may its address be read in whoever takes the index next).
    rndv_.sender_released(src);
    rma_.sender_released(src);
    am_.sender_released();
    eager_.drop_sender(src, Status::kConnectionReset);
}

Status Worker::set_auth_key(const common::AuthKey& key) {
    auth_key_ = key;
    for (const OpenTransport& t : transports_) {
        if (t.entry->set_auth_key != nullptr) t.entry->set_auth_key(ifaces_[t.index].get(), key);
    }
    return Status::kOk;
}

void Worker::on_remote_failure(uint16_t iface, uint64_t peer_key, Status why) {
    // Only what that peer carried fails: endpoints whose lane goes to it, rendezvous and
    // reassembly it was part of. A network peer that claimed another worker's uid reaches
    // nothing beyond its own connection (its key is the connection, not the uid).
    const PeerRef peer{iface, peer_key};
    // Error callbacks may close endpoints (deletion waits for the end of progress): walk a
    // snapshot and skip the ones closed meanwhile.
    std::vector<Endpoint*> eps;
    for (Endpoint* ep = endpoints_; ep != nullptr; ep = ep->next_in_worker) {
        if (ep->wired() && ep->peer() == peer) eps.push_back(ep);
    }
    ++progress_depth_;
    for (Endpoint* ep : eps) {
        if (!ep->closed) ep->fail(why);
    }
    --progress_depth_;
    rndv_.fail_peer(peer, why);
    am_.sender_released();
    // Messages it had only partly sent can never complete.
    eager_.drop_peer(peer, why);
}

}  // namespace swy::core

/**
 * @file switchyard/switchyard.hpp
 * @brief Thin header-only RAII wrapper over the Switchyard C API (switchyard.h).
 *
 * Ownership: every object is move-only and releases its C handle in its destructor.
 * A child keeps its parent alive (Endpoint → Worker → Context), so destruction order cannot
 * go wrong: the last owner of a context destroys it after its last worker is gone.
 * A Request does NOT keep its worker alive (that would cost an atomic operation per message):
 * destroy requests before the last Worker/Endpoint object that owns their worker.
 *
 * Errors: constructors and factory helpers (Context, Worker, Worker::address, Endpoint,
 * MemoryRegion, MemoryRegion::pack, RemoteKey) throw swy::StatusError. Hot-path calls (send, recv, progress, wait, test) never throw;
 * they return swy_status_t or a Request that carries one.
 *
 * One-sided (switchyard/rma.h): a MemoryRegion maps memory and packs its key; a peer unpacks
 * it on its Endpoint to the owner as a RemoteKey and calls Endpoint::put/get/atomic, then
 * Endpoint::flush or Worker::flush for remote completion. Active messages (switchyard/am.h):
 * Worker::set_am_handler with a std::function, Endpoint::am_send, Worker::recv_data.
 * Datatypes (switchyard/datatype.h): an IovView passed to send/recv/put/get.
 * Probes: Worker::probe (MPI_Iprobe) and Worker::probe_take, which returns a Message for
 * Worker::recv(Message&&, ...) (MPI_Improbe/MPI_Mrecv). Callbacks: send/recv overloads taking
 * a SendCallback/RecvCallback (a C function pointer and its argument: nothing allocated per
 * message). Sleeping: Worker::wait, or Worker::event_fd + Worker::arm in an epoll loop.
 * Listener and Endpoint::connect/accept: client-server connection by sockaddr.
 *
 * Every handle type (Context, Worker, Endpoint, Listener, Request, Message, MemoryRegion,
 * RemoteKey) is [[nodiscard]]: dropping a returned Request would wait for (or abandon) the
 * operation at the end of the statement, which is never what was meant.
 *
 * Thread safety: as the C API (a worker is single-threaded unless created with
 * SWY_THREAD_MODE_MULTI).
 *
 * @code
 *   swy::Context ctx({{"TLS", "shm,self"}});
 *   swy::Worker worker(ctx);
 *   swy::Endpoint ep(worker, peer_address);
 *   swy::Request r = ep.send(buf, len, tag);
 *   if (r.wait() != SWY_OK) ...;
 * @endcode
 */
#ifndef SWITCHYARD_SWITCHYARD_HPP
#define SWITCHYARD_SWITCHYARD_HPP

#include <switchyard/switchyard.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace swy {

/// Full tag mask: the receive matches exactly one tag.
inline constexpr swy_tag_t kFullMask = ~swy_tag_t{0};

/// Error thrown by constructors and factory helpers (never by hot-path calls).
class StatusError : public std::runtime_error {
public:
    StatusError(swy_status_t status, const std::string& what)
        : std::runtime_error(what + ": " + swy_status_string(status)), status_(status) {}
    swy_status_t status() const noexcept { return status_; }

private:
    swy_status_t status_;
};

namespace detail {
inline void throw_if_error(swy_status_t status, const char* what) {
    if (status != SWY_OK) throw StatusError(status, what);
}
}  // namespace detail

/// Process-wide context (configuration, transports, memory types).
class [[nodiscard]] Context {
public:
    /// Configuration from the environment, then @p overrides as (name, value) pairs; names
    /// with or without "SWY_" (e.g. {"TLS", "shm,self"}).
    /// @throws StatusError from swy_config_read/swy_config_set/swy_context_create.
    explicit Context(std::initializer_list<std::pair<const char*, const char*>> overrides = {}) {
        swy_config_h config = nullptr;
        detail::throw_if_error(swy_config_read(&config), "swy_config_read");
        std::unique_ptr<swy_config, void (*)(swy_config_h)> guard(config, &swy_config_release);
        for (const auto& [name, value] : overrides) {
            swy_status_t s = swy_config_set(config, name, value);
            if (s != SWY_OK) {
                throw StatusError(s, std::string("swy_config_set ") + name + "=" + value);
            }
        }
        swy_context_params_t params{};
        params.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG;
        params.config = config;
        swy_context_h context = nullptr;
        detail::throw_if_error(swy_context_create(&params, &context), "swy_context_create");
        handle_.reset(context, &swy_context_destroy);
    }

    Context(Context&&) noexcept = default;
    Context& operator=(Context&&) noexcept = default;
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    swy_context_h get() const noexcept { return handle_.get(); }

private:
    friend class Worker;
    friend class MemoryRegion;
    std::shared_ptr<swy_context> handle_;
};

/// A list of (pointer, length) pieces sent or received as one message (SWY_DATATYPE_IOV).
/// The view and the memory it names must stay valid until the operation completes.
class IovView {
public:
    IovView() = default;
    IovView(std::initializer_list<swy_dt_iov_t> pieces) : pieces_(pieces) {}

    /// Append a piece (zero-length pieces are allowed and skipped).
    IovView& add(void* buffer, size_t length) {
        pieces_.push_back(swy_dt_iov_t{buffer, length});
        return *this;
    }
    IovView& add(const void* buffer, size_t length) {  // sends only read it
        return add(const_cast<void*>(buffer), length);
    }

    const swy_dt_iov_t* data() const noexcept { return pieces_.data(); }
    size_t count() const noexcept { return pieces_.size(); }
    /// Sum of the pieces' lengths: the message length.
    size_t length() const noexcept {
        size_t total = 0;
        for (const swy_dt_iov_t& p : pieces_)
            total += p.length;
        return total;
    }

private:
    std::vector<swy_dt_iov_t> pieces_;
};

/// One active message as its handler sees it (valid only during the handler call).
struct AmMessage {
    const void* header;    ///< the sender's header (copied at its send)
    size_t header_length;  ///< its length
    void* data;            ///< the data, or with rendezvous() a descriptor for recv_data
    size_t data_length;    ///< the data's length (the whole message's with rendezvous())
    uint32_t flags;        ///< enum swy_am_recv_flags
    swy_ep_h reply_ep;     ///< an endpoint back to the sender, or NULL (see am.h)

    /// data is a descriptor: pull it with Worker::recv_data (or drop it).
    bool rendezvous() const noexcept { return (flags & SWY_AM_RECV_FLAG_RNDV) != 0; }
    /// The handler may return SWY_INPROGRESS to keep data (release with release_data).
    bool keepable() const noexcept { return (flags & SWY_AM_RECV_FLAG_DATA_KEEPABLE) != 0; }
};

/// An active-message handler: SWY_OK when done with the data, SWY_INPROGRESS to keep it.
using AmHandler = std::function<swy_status_t(const AmMessage&)>;

namespace detail {
/// The handlers of one worker. Each on the heap (the C library holds its address); the table
/// lives as long as the C worker does (its deleter holds it), not just the Worker object.
using AmHandlerTable = std::vector<std::pair<uint16_t, std::unique_ptr<AmHandler>>>;

inline swy_status_t am_trampoline(void* arg, const void* header, size_t header_length, void* data,
                                  size_t data_length, const swy_am_recv_param_t* param) {
    AmMessage m{header, header_length, data, data_length, 0, nullptr};
    if ((param->field_mask & SWY_AM_RECV_PARAM_FIELD_FLAGS) != 0) m.flags = param->flags;
    if ((param->field_mask & SWY_AM_RECV_PARAM_FIELD_REPLY_EP) != 0) m.reply_ep = param->reply_ep;
    return (*static_cast<AmHandler*>(arg))(m);
}

/// Request params with only flags (and, when not contiguous, the datatype) set.
inline swy_request_params_t params_with(uint32_t flags, swy_datatype_t datatype) noexcept {
    swy_request_params_t params{};
    params.field_mask = SWY_REQ_PARAM_FIELD_FLAGS;
    params.flags = flags;
    if (datatype != SWY_DATATYPE_CONTIG) {
        params.field_mask |= SWY_REQ_PARAM_FIELD_DATATYPE;
        params.datatype = datatype;
    }
    return params;
}
}  // namespace detail

/// A completion callback for a send, put, get, atomic or flush (swy_send_cb_t) and its
/// argument. It runs from progress() once the operation completed in the background; not when
/// the call completes at once (the Request is then done already) unless the flags include
/// SWY_REQ_FLAG_NO_IMM_COMPLETE. The Request owns the C handle: the callback must not free it.
struct SendCallback {
    swy_send_cb_t fn;
    void* user_data = nullptr;
};

/// A completion callback for a receive (swy_recv_cb_t) and its argument; as SendCallback.
struct RecvCallback {
    swy_recv_cb_t fn;
    void* user_data = nullptr;
};

class Message;

/// Progress engine. Keeps its context alive.
class [[nodiscard]] Worker {
public:
    /// @throws StatusError from swy_worker_create.
    explicit Worker(const Context& context, swy_thread_mode_t mode = SWY_THREAD_MODE_SINGLE) {
        swy_worker_params_t params{};
        params.field_mask = SWY_WORKER_PARAM_FIELD_THREAD_MODE;
        params.thread_mode = mode;
        swy_worker_h worker = nullptr;
        detail::throw_if_error(swy_worker_create(context.get(), &params, &worker),
                               "swy_worker_create");
        // The deleter holds the context: it is released only after the worker is destroyed;
        // and the AM handlers, which the worker may call until then.
        am_ = std::make_shared<detail::AmHandlerTable>();
        handle_.reset(worker,
                      [ctx = context.handle_, am = am_](swy_worker_h w) { swy_worker_destroy(w); });
    }

    Worker(Worker&&) noexcept = default;
    Worker& operator=(Worker&&) noexcept = default;
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    swy_worker_h get() const noexcept { return handle_.get(); }

    /// This worker's address blob, for a peer's Endpoint. @throws StatusError.
    std::vector<std::byte> address() const {
        void* blob = nullptr;
        size_t length = 0;
        detail::throw_if_error(swy_worker_get_address(get(), &blob, &length),
                               "swy_worker_get_address");
        std::vector<std::byte> out(static_cast<std::byte*>(blob),
                                   static_cast<std::byte*>(blob) + length);
        swy_worker_release_address(get(), blob);
        return out;
    }

    /// One progress pass; the number of events processed.
    unsigned progress() noexcept { return swy_worker_progress(get()); }

    /// Block until an event or @p timeout_ms (-1: no limit): SWY_OK or SWY_ERR_TIMED_OUT.
    swy_status_t wait(int timeout_ms = -1) noexcept { return swy_worker_wait(get(), timeout_ms); }

    /// The event fd (swy_worker_get_efd) for the application's poll/epoll: readable when the
    /// worker may have work. Block on it only after arm() returned SWY_OK. @throws StatusError.
    int event_fd() const {
        int fd = -1;
        detail::throw_if_error(swy_worker_get_efd(get(), &fd), "swy_worker_get_efd");
        return fd;
    }
    /// Arm the event fd (swy_worker_arm): SWY_OK, safe to block on event_fd(); SWY_ERR_BUSY,
    /// events are pending: progress() first.
    swy_status_t arm() noexcept { return swy_worker_arm(get()); }
    /// Wake a thread blocked in wait() or in poll/epoll on event_fd() (swy_worker_signal):
    /// callable from any thread and from a signal handler.
    swy_status_t signal() noexcept { return swy_worker_signal(get()); }

    /// Probe for an unexpected message a receive with (@p tag, @p mask) would match
    /// (MPI_Iprobe; swy_tag_probe_nb without removing it): true, with the sender's tag and
    /// length in @p info if given, when there is one. Does not progress the worker.
    bool probe(swy_tag_t tag, swy_tag_t mask = kFullMask,
               swy_tag_recv_info_t* info = nullptr) noexcept {
        swy_tag_recv_info_t scratch{};
        return swy_tag_probe_nb(get(), tag, mask, 0, info ? info : &scratch, nullptr) == SWY_OK;
    }
    /// Matched probe (MPI_Improbe): take the message out of matching, so that no other
    /// receive can match it, and return it for recv(Message&&, ...); an empty Message (false)
    /// when there is none. Does not progress the worker.
    class Message probe_take(swy_tag_t tag, swy_tag_t mask = kFullMask,
                             swy_tag_recv_info_t* info = nullptr) noexcept;
    /// Receive a message taken by probe_take (swy_tag_msg_recv_nb, MPI_Mrecv); consumes it.
    class Request recv(class Message&& message, void* buffer, size_t length) noexcept;
    /// Post a tagged receive whose completion runs @p callback (see RecvCallback).
    class Request recv(void* buffer, size_t length, swy_tag_t tag, swy_tag_t mask,
                       RecvCallback callback, uint32_t flags = 0) noexcept;

    /// Post a tagged receive; see Request for the result. Never throws.
    class Request recv(void* buffer, size_t length, swy_tag_t tag,
                       swy_tag_t mask = kFullMask) noexcept;
    /// Receive into the pieces of @p iov (SWY_DATATYPE_IOV). Never throws.
    class Request recv(const IovView& iov, swy_tag_t tag, swy_tag_t mask = kFullMask) noexcept;

    /// Complete every put, get and atomic of every endpoint at its target (swy_worker_flush_nb).
    class Request flush() noexcept;
    /// Order operations started before against those started after (swy_worker_fence).
    swy_status_t fence() noexcept { return swy_worker_fence(get()); }

    /// Run @p handler for active messages with @p id (flags: enum swy_am_handler_flags);
    /// an empty handler removes it. The Worker keeps the function alive (as long as the C
    /// worker, which endpoints may outlive it with). It runs from progress() and must not call
    /// progress() itself. Never throws but for std::bad_alloc.
    swy_status_t set_am_handler(uint16_t id, AmHandler handler, uint32_t flags = 0) {
        if (!am_) return SWY_ERR_INVALID_PARAM;  // moved from
        auto slot = std::find_if(am_->begin(), am_->end(),
                                 [id](const auto& entry) { return entry.first == id; });
        if (!handler) {
            swy_status_t s = swy_worker_set_am_handler(get(), id, nullptr, nullptr, 0);
            if (s == SWY_OK && slot != am_->end()) am_->erase(slot);
            return s;
        }
        auto held = std::make_unique<AmHandler>(std::move(handler));
        swy_status_t s =
            swy_worker_set_am_handler(get(), id, &detail::am_trampoline, held.get(), flags);
        if (s != SWY_OK) return s;
        // The C worker calls the new function from now on: the old one may go.
        if (slot != am_->end()) {
            slot->second = std::move(held);
        } else {
            am_->emplace_back(id, std::move(held));
        }
        return SWY_OK;
    }

    /// Pull the data of a rendezvous active message (AmMessage::data of a rendezvous()
    /// message) into @p buffer; consumes the descriptor. Never throws.
    class Request recv_data(void* descriptor, void* buffer, size_t length) noexcept;
    /// Release data a handler kept, or drop a descriptor never received.
    void release_data(void* data) noexcept { swy_am_data_release(get(), data); }

private:
    friend class Endpoint;
    friend class Listener;
    friend class RemoteKey;
    std::shared_ptr<detail::AmHandlerTable> am_;
    std::shared_ptr<swy_worker> handle_;
};

/// One non-blocking operation, or the status of one that finished (or failed) immediately.
/// Destroying an unfinished request releases it (the operation still completes).
class [[nodiscard]] Request {
public:
    Request() = default;
    Request(Request&& other) noexcept
        : worker_(other.worker_),
          req_(std::exchange(other.req_, nullptr)),
          status_(other.status_),
          info_(other.info_) {}
    Request& operator=(Request&& other) noexcept {
        if (this != &other) {
            release();
            worker_ = other.worker_;
            req_ = std::exchange(other.req_, nullptr);
            status_ = other.status_;
            info_ = other.info_;
        }
        return *this;
    }
    Request(const Request&) = delete;
    Request& operator=(const Request&) = delete;
    ~Request() { release(); }

    /// SWY_INPROGRESS while running, else the final status. Does not progress the worker.
    swy_status_t test() noexcept {
        if (req_ && status_ == SWY_INPROGRESS) status_ = swy_request_test(req_);
        return status_;
    }
    bool done() noexcept { return test() != SWY_INPROGRESS; }

    /// Progress the worker until done; the final status.
    swy_status_t wait() noexcept {
        if (req_ && status_ == SWY_INPROGRESS) status_ = swy_request_wait(worker_, req_);
        return status_;
    }

    /// Receives, once done: the sender's tag and length. SWY_INPROGRESS if not done.
    swy_status_t recv_info(swy_tag_recv_info_t* info) noexcept {
        if (test() == SWY_INPROGRESS) return SWY_INPROGRESS;
        if (req_) return swy_request_recv_info(req_, info);
        *info = info_;
        return SWY_OK;
    }

    /// Cancel an unmatched receive (see swy_request_cancel).
    swy_status_t cancel() noexcept {
        return req_ ? swy_request_cancel(worker_, req_) : SWY_ERR_BUSY;
    }

    /// The C handle, or NULL if the operation completed (or failed) at once.
    swy_request_h get() const noexcept { return req_; }

private:
    friend class Worker;
    friend class Endpoint;

    // Result of a C call made with &info_ as params.recv_info.
    void adopt(swy_worker_h worker, swy_status_t posted, swy_request_h req) noexcept {
        worker_ = worker;
        req_ = posted == SWY_INPROGRESS ? req : nullptr;
        status_ = posted;
    }
    void release() noexcept {
        if (req_) swy_request_free(req_);
        req_ = nullptr;
    }

    swy_worker_h worker_ = nullptr;
    swy_request_h req_ = nullptr;
    swy_status_t status_ = SWY_OK;
    swy_tag_recv_info_t info_{};
};

inline Request Worker::recv(void* buffer, size_t length, swy_tag_t tag, swy_tag_t mask) noexcept {
    Request r;
    swy_request_params_t params{};
    params.field_mask = SWY_REQ_PARAM_FIELD_RECV_INFO;
    params.recv_info = &r.info_;
    swy_request_h req = nullptr;
    swy_status_t s = swy_tag_recv_nb(get(), buffer, length, tag, mask, &params, &req);
    r.adopt(get(), s, req);
    return r;
}

inline Request Worker::recv(const IovView& iov, swy_tag_t tag, swy_tag_t mask) noexcept {
    Request r;
    swy_request_params_t params = detail::params_with(0, SWY_DATATYPE_IOV);
    params.field_mask |= SWY_REQ_PARAM_FIELD_RECV_INFO;
    params.recv_info = &r.info_;
    swy_request_h req = nullptr;
    swy_status_t s = swy_tag_recv_nb(get(), const_cast<swy_dt_iov_t*>(iov.data()), iov.count(), tag,
                                     mask, &params, &req);
    r.adopt(get(), s, req);
    return r;
}

inline Request Worker::flush() noexcept {
    Request r;
    swy_request_h req = nullptr;
    swy_status_t s = swy_worker_flush_nb(get(), nullptr, &req);
    r.adopt(get(), s, req);
    return r;
}

inline Request Worker::recv_data(void* descriptor, void* buffer, size_t length) noexcept {
    Request r;
    swy_request_params_t params{};
    params.field_mask = SWY_REQ_PARAM_FIELD_RECV_INFO;
    params.recv_info = &r.info_;
    swy_request_h req = nullptr;
    swy_status_t s = swy_am_recv_data_nb(get(), descriptor, buffer, length, &params, &req);
    r.adopt(get(), s, req);
    return r;
}

/// A message taken out of matching by Worker::probe_take, waiting for Worker::recv(Message&&,
/// ...). Move-only; one that is destroyed without being received is received into nothing
/// (dropped: consumed as a truncated receive), so it never stays in the worker.
class [[nodiscard]] Message {
public:
    Message() = default;
    Message(Message&& other) noexcept
        : worker_(other.worker_), message_(std::exchange(other.message_, nullptr)) {}
    Message& operator=(Message&& other) noexcept {
        if (this != &other) {
            drop();
            worker_ = other.worker_;
            message_ = std::exchange(other.message_, nullptr);
        }
        return *this;
    }
    Message(const Message&) = delete;
    Message& operator=(const Message&) = delete;
    ~Message() { drop(); }

    /// True if a message was taken (and not received yet).
    explicit operator bool() const noexcept { return message_ != nullptr; }
    swy_message_h get() const noexcept { return message_; }

private:
    friend class Worker;
    void drop() noexcept {
        if (message_ == nullptr) return;
        swy_request_h req = nullptr;
        if (swy_tag_msg_recv_nb(worker_, nullptr, 0, std::exchange(message_, nullptr), nullptr,
                                &req) == SWY_INPROGRESS) {
            swy_request_free(req);  // finishes in the background
        }
    }

    swy_worker_h worker_ = nullptr;
    swy_message_h message_ = nullptr;
};

inline Message Worker::probe_take(swy_tag_t tag, swy_tag_t mask,
                                  swy_tag_recv_info_t* info) noexcept {
    Message m;
    swy_tag_recv_info_t scratch{};
    swy_message_h msg = nullptr;
    if (swy_tag_probe_nb(get(), tag, mask, 1, info ? info : &scratch, &msg) == SWY_OK) {
        m.worker_ = get();
        m.message_ = msg;
    }
    return m;
}

inline Request Worker::recv(Message&& message, void* buffer, size_t length) noexcept {
    Request r;
    if (!message) {
        r.status_ = SWY_ERR_INVALID_PARAM;  // nothing was taken
        return r;
    }
    swy_request_params_t params{};
    params.field_mask = SWY_REQ_PARAM_FIELD_RECV_INFO;
    params.recv_info = &r.info_;
    swy_request_h req = nullptr;
    swy_status_t s = swy_tag_msg_recv_nb(get(), buffer, length,
                                         std::exchange(message.message_, nullptr), &params, &req);
    r.adopt(get(), s, req);
    return r;
}

inline Request Worker::recv(void* buffer, size_t length, swy_tag_t tag, swy_tag_t mask,
                            RecvCallback callback, uint32_t flags) noexcept {
    Request r;
    swy_request_params_t params{};
    params.field_mask = SWY_REQ_PARAM_FIELD_RECV_INFO | SWY_REQ_PARAM_FIELD_CALLBACK |
                        SWY_REQ_PARAM_FIELD_USER_DATA | SWY_REQ_PARAM_FIELD_FLAGS;
    params.recv_info = &r.info_;
    params.recv_cb = callback.fn;
    params.user_data = callback.user_data;
    params.flags = flags;
    swy_request_h req = nullptr;
    swy_status_t s = swy_tag_recv_nb(get(), buffer, length, tag, mask, &params, &req);
    r.adopt(get(), s, req);
    return r;
}

/// Memory mapped for remote access (swy_mem_map), unmapped by the destructor: from then on
/// every key of it is refused. Keeps its context alive.
class [[nodiscard]] MemoryRegion {
public:
    /// Every remote right: read, write and atomic.
    static constexpr uint32_t kAllAccess =
        SWY_ACCESS_REMOTE_READ | SWY_ACCESS_REMOTE_WRITE | SWY_ACCESS_REMOTE_ATOMIC;

    /// Map with explicit parameters (field_mask and all). @throws StatusError.
    MemoryRegion(const Context& context, const swy_mem_map_params_t& params)
        : context_(context.handle_) {
        detail::throw_if_error(swy_mem_map(context_.get(), &params, &mem_), "swy_mem_map");
        swy_mem_attr_t attr{};
        attr.field_mask = SWY_MEM_ATTR_FIELD_ADDRESS | SWY_MEM_ATTR_FIELD_LENGTH;
        swy_status_t s = swy_mem_query(mem_, &attr);
        if (s != SWY_OK) {
            swy_mem_unmap(context_.get(), mem_);
            throw StatusError(s, "swy_mem_query");
        }
        address_ = attr.address;
        length_ = attr.length;
    }

    /// @p length bytes allocated by Switchyard (zero-filled; same-host peers map them).
    static MemoryRegion allocate(const Context& context, size_t length,
                                 uint32_t access = kAllAccess) {
        swy_mem_map_params_t params{};
        params.field_mask =
            SWY_MEM_MAP_FIELD_LENGTH | SWY_MEM_MAP_FIELD_FLAGS | SWY_MEM_MAP_FIELD_ACCESS;
        params.length = length;
        params.flags = SWY_MEM_MAP_ALLOCATE;
        params.access = access;
        return MemoryRegion(context, params);
    }

    /// The caller's memory at @p address, registered in place (it must outlive the region).
    static MemoryRegion register_memory(const Context& context, void* address, size_t length,
                                        uint32_t access = kAllAccess) {
        swy_mem_map_params_t params{};
        params.field_mask =
            SWY_MEM_MAP_FIELD_ADDRESS | SWY_MEM_MAP_FIELD_LENGTH | SWY_MEM_MAP_FIELD_ACCESS;
        params.address = address;
        params.length = length;
        params.access = access;
        return MemoryRegion(context, params);
    }

    MemoryRegion(MemoryRegion&& other) noexcept
        : context_(std::move(other.context_)),
          mem_(std::exchange(other.mem_, nullptr)),
          address_(other.address_),
          length_(other.length_) {}
    MemoryRegion& operator=(MemoryRegion&& other) noexcept {
        if (this != &other) {
            reset();
            context_ = std::move(other.context_);
            mem_ = std::exchange(other.mem_, nullptr);
            address_ = other.address_;
            length_ = other.length_;
        }
        return *this;
    }
    MemoryRegion(const MemoryRegion&) = delete;
    MemoryRegion& operator=(const MemoryRegion&) = delete;
    ~MemoryRegion() { reset(); }

    swy_mem_h get() const noexcept { return mem_; }
    /// Start of the mapped range (what peers name as remote_address, plus an offset).
    void* address() const noexcept { return address_; }
    /// The address as the uint64_t put/get/atomic take.
    uint64_t remote_address(size_t offset = 0) const noexcept {
        return reinterpret_cast<uint64_t>(address_) + offset;
    }
    size_t length() const noexcept { return length_; }

    /// The packed remote key, to send to peers. @throws StatusError.
    std::vector<uint8_t> pack() const {
        void* buffer = nullptr;
        size_t length = 0;
        detail::throw_if_error(swy_rkey_pack(context_.get(), mem_, &buffer, &length),
                               "swy_rkey_pack");
        std::vector<uint8_t> out(static_cast<uint8_t*>(buffer),
                                 static_cast<uint8_t*>(buffer) + length);
        swy_rkey_buffer_release(buffer);
        return out;
    }

    /// The fields @p attr->field_mask asks for (swy_mem_query). Never throws.
    swy_status_t query(swy_mem_attr_t* attr) const noexcept { return swy_mem_query(mem_, attr); }

private:
    void reset() noexcept {
        if (mem_) swy_mem_unmap(context_.get(), std::exchange(mem_, nullptr));
        context_.reset();
    }

    std::shared_ptr<swy_context> context_;
    swy_mem_h mem_ = nullptr;
    void* address_ = nullptr;
    size_t length_ = 0;
};

/// A peer's memory as unpacked on the Endpoint to that peer (swy_ep_rkey_unpack). Keeps the
/// worker alive, not the endpoint: destroy it before closing its Endpoint.
class [[nodiscard]] RemoteKey {
public:
    /// Unpack @p packed (from MemoryRegion::pack on the peer) for @p ep. @throws StatusError
    /// (SWY_ERR_MALFORMED for bytes that are not a key).
    RemoteKey(const class Endpoint& ep, const void* packed, size_t length);
    RemoteKey(const class Endpoint& ep, const std::vector<uint8_t>& packed)
        : RemoteKey(ep, packed.data(), packed.size()) {}

    RemoteKey(RemoteKey&& other) noexcept
        : worker_(std::move(other.worker_)), rkey_(std::exchange(other.rkey_, nullptr)) {}
    RemoteKey& operator=(RemoteKey&& other) noexcept {
        if (this != &other) {
            destroy();
            worker_ = std::move(other.worker_);
            rkey_ = std::exchange(other.rkey_, nullptr);
        }
        return *this;
    }
    RemoteKey(const RemoteKey&) = delete;
    RemoteKey& operator=(const RemoteKey&) = delete;
    ~RemoteKey() { destroy(); }

    swy_rkey_h get() const noexcept { return rkey_; }

    /// A local pointer to @p remote_address when the owner's memory is mapped here
    /// (swy_rkey_ptr); SWY_ERR_UNREACHABLE otherwise. Never throws.
    swy_status_t ptr(uint64_t remote_address, void** local) const noexcept {
        return swy_rkey_ptr(rkey_, remote_address, local);
    }
    /// As above; nullptr when it is not reachable directly.
    void* ptr(uint64_t remote_address) const noexcept {
        void* local = nullptr;
        return ptr(remote_address, &local) == SWY_OK ? local : nullptr;
    }

    /// Destroy now; afterwards the object is empty.
    void destroy() noexcept {
        if (rkey_) swy_rkey_destroy(std::exchange(rkey_, nullptr));
        worker_.reset();
    }

private:
    std::shared_ptr<swy_worker> worker_;
    swy_rkey_h rkey_ = nullptr;
};

/// Connection to one remote worker. Keeps its worker (and context) alive. The destructor
/// closes it with SWY_EP_CLOSE_FLUSH and waits for outstanding sends.
class [[nodiscard]] Endpoint {
public:
    /// Connect to the worker whose address is @p address. @throws StatusError.
    Endpoint(const Worker& worker, const void* address, size_t length, uint32_t flags = 0)
        : worker_(worker.handle_) {
        swy_ep_params_t params{};
        params.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS | SWY_EP_PARAM_FIELD_FLAGS;
        params.remote_address = address;
        params.remote_address_length = length;
        params.flags = flags;
        detail::throw_if_error(swy_ep_create(worker_.get(), &params, &ep_), "swy_ep_create");
    }
    Endpoint(const Worker& worker, const std::vector<std::byte>& address, uint32_t flags = 0)
        : Endpoint(worker, address.data(), address.size(), flags) {}

    /// Connect to a Listener at @p addr (IPv4 or IPv6). Usable at once: sends wait until the
    /// server accepted (see swy_ep_create, SWY_EP_FLAG_SOCKADDR). @throws StatusError.
    static Endpoint connect(const Worker& worker, const struct sockaddr* addr, size_t length,
                            uint32_t flags = 0, swy_ep_error_cb_t err_cb = nullptr,
                            void* err_arg = nullptr) {
        swy_ep_params_t params{};
        params.field_mask =
            SWY_EP_PARAM_FIELD_FLAGS | SWY_EP_PARAM_FIELD_SOCKADDR | SWY_EP_PARAM_FIELD_ERR_HANDLER;
        params.flags = flags | SWY_EP_FLAG_SOCKADDR;
        params.sockaddr = addr;
        params.sockaddr_length = length;
        params.err_cb = err_cb;
        params.err_arg = err_arg;
        return Endpoint(worker, params);
    }

    /// Connect to a Listener that holds @p auth_key (16 to 256 bytes; copied): both sides
    /// prove the key before this worker's address is sent (SWY_EP_FLAG_AUTH_KEY). A listener
    /// without it fails the endpoint with SWY_ERR_CONNECTION_RESET. @throws StatusError
    /// (SWY_ERR_INVALID_PARAM for a key of a bad length).
    static Endpoint connect(const Worker& worker, const struct sockaddr* addr, size_t length,
                            const void* auth_key, size_t auth_key_length, uint32_t flags = 0,
                            swy_ep_error_cb_t err_cb = nullptr, void* err_arg = nullptr) {
        swy_ep_params_t params{};
        params.field_mask = SWY_EP_PARAM_FIELD_FLAGS | SWY_EP_PARAM_FIELD_SOCKADDR |
                            SWY_EP_PARAM_FIELD_ERR_HANDLER | SWY_EP_PARAM_FIELD_AUTH_KEY;
        params.flags = flags | SWY_EP_FLAG_SOCKADDR | SWY_EP_FLAG_AUTH_KEY;
        params.sockaddr = addr;
        params.sockaddr_length = length;
        params.err_cb = err_cb;
        params.err_arg = err_arg;
        params.auth_key = auth_key;
        params.auth_key_length = auth_key_length;
        return Endpoint(worker, params);
    }

    /// Server side: accept a request a Listener offered (consumes it). @throws StatusError.
    static Endpoint accept(const Worker& worker, swy_conn_request_h request, uint32_t flags = 0,
                           swy_ep_error_cb_t err_cb = nullptr, void* err_arg = nullptr) {
        swy_ep_params_t params{};
        params.field_mask = SWY_EP_PARAM_FIELD_FLAGS | SWY_EP_PARAM_FIELD_CONN_REQUEST |
                            SWY_EP_PARAM_FIELD_ERR_HANDLER;
        params.flags = flags | SWY_EP_FLAG_CONN_REQUEST;
        params.conn_request = request;
        params.err_cb = err_cb;
        params.err_arg = err_arg;
        return Endpoint(worker, params);
    }

    Endpoint(Endpoint&& other) noexcept
        : worker_(std::move(other.worker_)), ep_(std::exchange(other.ep_, nullptr)) {}
    Endpoint& operator=(Endpoint&& other) noexcept {
        if (this != &other) {
            close();
            worker_ = std::move(other.worker_);
            ep_ = std::exchange(other.ep_, nullptr);
        }
        return *this;
    }
    Endpoint(const Endpoint&) = delete;
    Endpoint& operator=(const Endpoint&) = delete;
    ~Endpoint() { close(); }

    swy_ep_h get() const noexcept { return ep_; }

    /// Send @p length bytes with @p tag; the buffer must stay unchanged until the Request is
    /// done. Never throws.
    Request send(const void* buffer, size_t length, swy_tag_t tag, uint32_t flags = 0) noexcept {
        Request r;
        swy_request_params_t params{};
        params.field_mask = SWY_REQ_PARAM_FIELD_FLAGS;
        params.flags = flags;
        swy_request_h req = nullptr;
        swy_status_t s = swy_tag_send_nb(ep_, buffer, length, tag, &params, &req);
        r.adopt(worker_.get(), s, req);
        return r;
    }

    /// Send as above; its completion runs @p callback (see SendCallback). Never throws.
    Request send(const void* buffer, size_t length, swy_tag_t tag, SendCallback callback,
                 uint32_t flags = 0) noexcept {
        Request r;
        swy_request_params_t params{};
        params.field_mask = SWY_REQ_PARAM_FIELD_FLAGS | SWY_REQ_PARAM_FIELD_CALLBACK |
                            SWY_REQ_PARAM_FIELD_USER_DATA;
        params.flags = flags;
        params.send_cb = callback.fn;
        params.user_data = callback.user_data;
        swy_request_h req = nullptr;
        swy_status_t s = swy_tag_send_nb(ep_, buffer, length, tag, &params, &req);
        r.adopt(worker_.get(), s, req);
        return r;
    }

    /// Send the pieces of @p iov as one message (SWY_DATATYPE_IOV). Never throws.
    Request send(const IovView& iov, swy_tag_t tag, uint32_t flags = 0) noexcept {
        Request r;
        swy_request_params_t params = detail::params_with(flags, SWY_DATATYPE_IOV);
        swy_request_h req = nullptr;
        swy_status_t s = swy_tag_send_nb(ep_, iov.data(), iov.count(), tag, &params, &req);
        r.adopt(worker_.get(), s, req);
        return r;
    }

    /// Unpack a key the peer packed (MemoryRegion::pack). @throws StatusError.
    RemoteKey unpack(const std::vector<uint8_t>& packed) const { return RemoteKey(*this, packed); }

    /// Write @p length bytes of @p buffer to @p remote_address of @p key's memory (needs
    /// SWY_ACCESS_REMOTE_WRITE). Done: the buffer may be reused; flush() for remote
    /// completion. Never throws.
    Request put(const void* buffer, size_t length, uint64_t remote_address, const RemoteKey& key,
                uint32_t flags = 0) noexcept {
        return put_as(buffer, length, SWY_DATATYPE_CONTIG, remote_address, key, flags);
    }
    /// Write the pieces of @p iov, one after another, from @p remote_address on.
    Request put(const IovView& iov, uint64_t remote_address, const RemoteKey& key,
                uint32_t flags = 0) noexcept {
        return put_as(iov.data(), iov.count(), SWY_DATATYPE_IOV, remote_address, key, flags);
    }
    /// Read @p length bytes at @p remote_address into @p buffer (SWY_ACCESS_REMOTE_READ).
    Request get(void* buffer, size_t length, uint64_t remote_address, const RemoteKey& key,
                uint32_t flags = 0) noexcept {
        return get_as(buffer, length, SWY_DATATYPE_CONTIG, remote_address, key, flags);
    }
    /// Read into the pieces of @p iov, one after another, from @p remote_address on.
    Request get(const IovView& iov, uint64_t remote_address, const RemoteKey& key,
                uint32_t flags = 0) noexcept {
        return get_as(const_cast<swy_dt_iov_t*>(iov.data()), iov.count(), SWY_DATATYPE_IOV,
                      remote_address, key, flags);
    }

    /// Atomic @p op on the T-sized word (uint32_t or uint64_t, aligned) at @p remote_address
    /// (SWY_ACCESS_REMOTE_ATOMIC). @p operand and @p compare (CSWAP) are copied at the call.
    /// With @p result the old value lands there (it must stay valid until done); without,
    /// the atomic is posted (remote completion by flush()). Never throws.
    template <class T>
    Request atomic(swy_atomic_op_t op, T operand, uint64_t remote_address, const RemoteKey& key,
                   T* result = nullptr, T compare = T{}) noexcept {
        static_assert(std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>,
                      "atomics are on 32- or 64-bit words");
        Request r;
        swy_request_h req = nullptr;
        swy_status_t s = swy_atomic_nb(ep_, op, sizeof(T), &operand,
                                       op == SWY_ATOMIC_OP_CSWAP ? &compare : nullptr, result,
                                       remote_address, key.get(), nullptr, &req);
        r.adopt(worker_.get(), s, req);
        return r;
    }

    /// Complete every put, get and atomic of this endpoint at the target. Never throws.
    Request flush() noexcept {
        Request r;
        swy_request_h req = nullptr;
        swy_status_t s = swy_ep_flush_nb(ep_, nullptr, &req);
        r.adopt(worker_.get(), s, req);
        return r;
    }

    /// Send an active message to the peer's handler @p id: @p header (copied at the call, up
    /// to SWY_AM_MAX_HEADER bytes) and @p length bytes of @p data (flags: enum
    /// swy_am_send_flags, SWY_REQ_FLAG_NO_IMM_COMPLETE). Never throws.
    Request am_send(uint16_t id, const void* header, size_t header_length, const void* data,
                    size_t length, uint32_t flags = 0) noexcept {
        Request r;
        swy_request_params_t params = detail::params_with(flags, SWY_DATATYPE_CONTIG);
        swy_request_h req = nullptr;
        swy_status_t s =
            swy_am_send_nb(ep_, id, header, header_length, data, length, &params, &req);
        r.adopt(worker_.get(), s, req);
        return r;
    }
    /// Largest header + data sent eager on this endpoint (swy_ep_am_eager_max); 0 unknown.
    size_t am_eager_max() const noexcept {
        size_t max = 0;
        return swy_ep_am_eager_max(ep_, &max) == SWY_OK ? max : 0;
    }

    /// What the endpoint got at wire-up: the groups @p attr->field_mask asks for.
    swy_status_t query(swy_ep_attr_t* attr) const noexcept { return swy_ep_query(ep_, attr); }
    /// Every group of swy_ep_attr_t (SWY_EP_ATTR_FIELD_LANE | _PIO_DETAIL). @throws StatusError.
    swy_ep_attr_t query() const {
        swy_ep_attr_t attr{};
        attr.field_mask = SWY_EP_ATTR_FIELD_LANE | SWY_EP_ATTR_FIELD_PIO_DETAIL;
        detail::throw_if_error(swy_ep_query(ep_, &attr), "swy_ep_query");
        return attr;
    }

    /// Protocol table for @p memtype as text ("" if unavailable).
    std::string protocols(swy_memtype_t memtype = SWY_MEMTYPE_HOST) const {
        std::string buf(4096, '\0');
        for (;;) {
            swy_status_t s = swy_ep_print_protocols(ep_, memtype, buf.data(), buf.size());
            if (s == SWY_OK) return std::string(buf.c_str());
            if (s != SWY_ERR_NO_RESOURCE || buf.size() >= (1u << 20)) return {};
            buf.assign(buf.size() * 4, '\0');
        }
    }

    /// Close now (flush or force) and wait for it; afterwards the object is empty.
    /// Returns the close status (SWY_OK if already closed).
    swy_status_t close(swy_ep_close_mode_t mode = SWY_EP_CLOSE_FLUSH) noexcept {
        if (!ep_) return SWY_OK;
        swy_request_h req = nullptr;
        swy_status_t s = swy_ep_close_nb(std::exchange(ep_, nullptr), mode, &req);
        if (s == SWY_INPROGRESS) {
            s = swy_request_wait(worker_.get(), req);
            swy_request_free(req);
        }
        worker_.reset();
        return s;
    }

private:
    friend class RemoteKey;
    Endpoint(const Worker& worker, const swy_ep_params_t& params) : worker_(worker.handle_) {
        detail::throw_if_error(swy_ep_create(worker_.get(), &params, &ep_), "swy_ep_create");
    }
    Request put_as(const void* buffer, size_t count, swy_datatype_t datatype,
                   uint64_t remote_address, const RemoteKey& key, uint32_t flags) noexcept {
        Request r;
        swy_request_params_t params = detail::params_with(flags, datatype);
        swy_request_h req = nullptr;
        swy_status_t s = swy_put_nb(ep_, buffer, count, remote_address, key.get(), &params, &req);
        r.adopt(worker_.get(), s, req);
        return r;
    }
    Request get_as(void* buffer, size_t count, swy_datatype_t datatype, uint64_t remote_address,
                   const RemoteKey& key, uint32_t flags) noexcept {
        Request r;
        swy_request_params_t params = detail::params_with(flags, datatype);
        swy_request_h req = nullptr;
        swy_status_t s = swy_get_nb(ep_, buffer, count, remote_address, key.get(), &params, &req);
        r.adopt(worker_.get(), s, req);
        return r;
    }

    std::shared_ptr<swy_worker> worker_;
    swy_ep_h ep_ = nullptr;
};

inline RemoteKey::RemoteKey(const Endpoint& ep, const void* packed, size_t length)
    : worker_(ep.worker_) {
    detail::throw_if_error(swy_ep_rkey_unpack(ep.get(), packed, length, &rkey_),
                           "swy_ep_rkey_unpack");
}

/// Accepts connections on a sockaddr (see swy_listener_create). Keeps its worker alive; the
/// callback runs from Worker::progress() and answers with Endpoint::accept() or reject().
class [[nodiscard]] Listener {
public:
    using ConnectFn = std::function<void(swy_conn_request_h)>;

    /// Bind @p addr (port 0: the kernel chooses; see port()). With @p auth_key (16 to 256
    /// bytes; copied) clients must prove that key (SWY_LISTENER_FLAG_AUTH_KEY; see
    /// Endpoint::connect with a key); null: no authentication. @throws StatusError.
    Listener(const Worker& worker, const struct sockaddr* addr, size_t length, ConnectFn on_connect,
             const void* auth_key = nullptr, size_t auth_key_length = 0)
        : worker_(worker.handle_), fn_(std::make_unique<ConnectFn>(std::move(on_connect))) {
        swy_listener_params_t params{};
        params.field_mask =
            SWY_LISTENER_PARAM_FIELD_SOCKADDR | SWY_LISTENER_PARAM_FIELD_CONN_HANDLER;
        params.sockaddr = addr;
        params.sockaddr_length = length;
        params.on_connect = &Listener::trampoline;
        params.arg = fn_.get();  // on the heap: stays put when the Listener moves
        if (auth_key != nullptr) {
            params.field_mask |= SWY_LISTENER_PARAM_FIELD_FLAGS | SWY_LISTENER_PARAM_FIELD_AUTH_KEY;
            params.flags = SWY_LISTENER_FLAG_AUTH_KEY;
            params.auth_key = auth_key;
            params.auth_key_length = auth_key_length;
        }
        detail::throw_if_error(swy_listener_create(worker_.get(), &params, &listener_),
                               "swy_listener_create");
    }

    Listener(Listener&& other) noexcept
        : worker_(std::move(other.worker_)),
          fn_(std::move(other.fn_)),
          listener_(std::exchange(other.listener_, nullptr)) {}
    Listener& operator=(Listener&& other) noexcept {
        if (this != &other) {
            reset();
            worker_ = std::move(other.worker_);
            fn_ = std::move(other.fn_);
            listener_ = std::exchange(other.listener_, nullptr);
        }
        return *this;
    }
    Listener(const Listener&) = delete;
    Listener& operator=(const Listener&) = delete;
    ~Listener() { reset(); }

    swy_listener_h get() const noexcept { return listener_; }

    /// Bound address and port (with SWY_LISTENER_ATTR_FIELD_SOCKADDR). Never throws.
    swy_status_t query(swy_listener_attr_t* attr) const noexcept {
        return swy_listener_query(listener_, attr);
    }
    /// Bound port (host order), 0 on error.
    uint16_t port() const noexcept {
        swy_listener_attr_t attr{};
        attr.field_mask = SWY_LISTENER_ATTR_FIELD_SOCKADDR;
        return query(&attr) == SWY_OK ? attr.port : 0;
    }
    /// Refuse an offered request (its client's endpoint fails with SWY_ERR_CONNECTION_RESET).
    swy_status_t reject(swy_conn_request_h request) noexcept {
        return swy_listener_reject(listener_, request);
    }

private:
    static void trampoline(swy_conn_request_h request, void* arg) {
        (*static_cast<ConnectFn*>(arg))(request);
    }
    void reset() noexcept {
        if (listener_) swy_listener_destroy(std::exchange(listener_, nullptr));
        worker_.reset();
    }

    std::shared_ptr<swy_worker> worker_;
    std::unique_ptr<ConnectFn> fn_;
    swy_listener_h listener_ = nullptr;
};

}  // namespace swy

#endif

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
 * Errors: constructors and factory helpers (Context, Worker, Worker::address, Endpoint)
 * throw swy::StatusError. Hot-path calls (send, recv, progress, wait, test) never throw;
 * they return swy_status_t or a Request that carries one.
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

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
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
class Context {
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
    std::shared_ptr<swy_context> handle_;
};

/// Progress engine. Keeps its context alive.
class Worker {
public:
    /// @throws StatusError from swy_worker_create.
    explicit Worker(const Context& context, swy_thread_mode_t mode = SWY_THREAD_MODE_SINGLE) {
        swy_worker_params_t params{};
        params.field_mask = SWY_WORKER_PARAM_FIELD_THREAD_MODE;
        params.thread_mode = mode;
        swy_worker_h worker = nullptr;
        detail::throw_if_error(swy_worker_create(context.get(), &params, &worker),
                               "swy_worker_create");
        // The deleter holds the context: it is released only after the worker is destroyed.
        handle_.reset(worker, [ctx = context.handle_](swy_worker_h w) { swy_worker_destroy(w); });
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

    /// Post a tagged receive; see Request for the result. Never throws.
    class Request recv(void* buffer, size_t length, swy_tag_t tag,
                       swy_tag_t mask = kFullMask) noexcept;

private:
    friend class Endpoint;
    friend class Listener;
    std::shared_ptr<swy_worker> handle_;
};

/// One non-blocking operation, or the status of one that finished (or failed) immediately.
/// Destroying an unfinished request releases it (the operation still completes).
class Request {
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

/// Connection to one remote worker. Keeps its worker (and context) alive. The destructor
/// closes it with SWY_EP_CLOSE_FLUSH and waits for outstanding sends.
class Endpoint {
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
    Endpoint(const Worker& worker, const swy_ep_params_t& params) : worker_(worker.handle_) {
        detail::throw_if_error(swy_ep_create(worker_.get(), &params, &ep_), "swy_ep_create");
    }

    std::shared_ptr<swy_worker> worker_;
    swy_ep_h ep_ = nullptr;
};

/// Accepts connections on a sockaddr (see swy_listener_create). Keeps its worker alive; the
/// callback runs from Worker::progress() and answers with Endpoint::accept() or reject().
class Listener {
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

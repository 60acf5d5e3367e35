// Connection establishment through sockaddr (the client–server API): listeners, the
// connection requests they accept, and endpoints created from a sockaddr until they are wired.
//
// Protocol (conn_wire.h), on a TCP connection used only for this: the client sends a hello
// (its nonce), the server a challenge (its nonce, a commitment to its worker uid, and its
// proof of the key if the listener has one), the client its proof (if keyed) and its worker
// address, and the server, once the proof checked out and its application answered the
// request (or at once, see the rule below), a verdict: accept (with the server's worker
// address) or reject. The server's address goes out in the accept and nowhere else, so a
// client learns nothing of the server before the server's application accepted it. On accept
// the client wires its endpoint's lanes from the server's address with the worker's ordinary
// lane selection (shm/cma on the same host, tcp otherwise), exactly as if it had been created
// from that address, and the sends queued meanwhile go out. The server's endpoint is wired
// when it is created, from the client's address. The socket is then closed: messages never
// travel on it.
//
// Keys: a keyed listener closes a connection whose client does not prove the key (no key,
// another key) with "authentication failed from <addr>" in the log, before on_connect; a
// keyed client fails its endpoint (SWY_ERR_CONNECTION_RESET) when the server does not prove
// the key, before it sent its address.
//
// One endpoint per pair (the simultaneous-connect rule). A request from worker W is accepted
// without calling on_connect when this worker already has a live endpoint to W (created from
// W's address, from a sockaddr that turned out to be W, or from an earlier request of W): that
// endpoint serves W, and W's own endpoint is wired by the accept. So when A connects to B while
// B connects to A, each side ends up with exactly the endpoint its application created. To
// make that hold when both connects are in flight, a request is held back while any outgoing
// sockaddr endpoint of this worker has not yet received its challenge (whose uid commitment
// tells whether that connection reached the requesting worker; this lasts about one round
// trip), and while an earlier request of the same worker waits for the application. No uid
// tie-break is needed: every endpoint owns its own lanes, so no connection has to be torn
// down.
//
// Everything runs from worker progress (the sockets are in the worker's event fd, so blocking
// waits wake up); callbacks (on_connect, endpoint error callbacks) run from progress.
// Not thread-safe: the worker serialises calls.
#pragma once

#include <switchyard/switchyard.h>

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/auth.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "core/conn_socket.h"
#include "core/slot_arena.h"

namespace swy::core {

class ConnManager;
class Endpoint;
class Worker;

using ConnClock = std::chrono::steady_clock;

/// A listening socket (swy_listener_h).
struct Listener {
    ConnManager* manager = nullptr;
    common::UniqueFd fd;
    swy_listener_conn_cb_t on_connect = nullptr;
    void* arg = nullptr;
    sockaddr_storage bound{};
    socklen_t bound_length = 0;
    std::string name;     ///< bound address, for logs
    common::AuthKey key;  ///< empty: no authentication
};

/// A connection a listener accepted (swy_conn_request_h once offered to the application).
struct ConnRequest {
    enum class State : uint8_t {
        kAwaitHello,    ///< waiting for the client's hello
        kAwaitAddress,  ///< challenge sent; waiting for the client's proof and address
        kHeld,          ///< address arrived (proof checked); the one-endpoint-per-pair rule
                        ///< decides what next
        kOffered,       ///< on_connect called; waiting for the application to answer
        kClosing,       ///< verdict queued; waiting for it to be written and for the client's EOF
        kDone,          ///< socket closed; freed by the next progress
    };
    Listener* listener = nullptr;  ///< null once the listener is gone
    ConnManager* manager = nullptr;
    ConnSocket sock;
    State state = State::kAwaitHello;
    ConnClock::time_point deadline;
    sockaddr_storage peer{};
    socklen_t peer_length = 0;
    std::vector<uint8_t> peer_address;  ///< the client's worker address
    uint64_t peer_uid = 0;
    bool watching_out = false;
    uint8_t client_nonce[kConnNonceSize] = {};
    uint8_t server_nonce[kConnNonceSize] = {};
};

/// The handshake of an endpoint created from a sockaddr, until its lanes are wired.
struct Connector {
    enum class State : uint8_t { kConnecting, kHandshake, kDone };
    Endpoint* ep = nullptr;  ///< null once the endpoint is wired, failed or gone
    uint32_t ep_flags = 0;   ///< swy_ep_flags to wire with (PIO policy)
    ConnSocket sock;
    State state = State::kConnecting;
    Status early_failure = Status::kOk;  ///< connect() failed at once: reported from progress
    ConnClock::time_point deadline;
    uint64_t peer_uid = 0;  ///< the server's uid, once a commitment or the accept matched it
    bool watching_out = false;
    common::AuthKey key;  ///< empty: no authentication (SWY_EP_FLAG_AUTH_KEY not set)
    uint8_t nonce[kConnNonceSize] = {};
    bool challenged = false;  ///< the server's challenge arrived (and its proof checked out)
    ConnChallenge challenge;

    /// Whether this connection reached the worker @p uid (as far as we know yet).
    bool reaches(uint64_t uid) const;
};

class ConnManager {
public:
    /// Listener-only workers look at their sockets every this many progress calls (a power of
    /// two); while a handshake is in flight, on every call.
    static constexpr uint32_t kIdlePollEvery = 64;

    /// @p why on failure (epoll/timerfd creation).
    static Status create(Worker* worker, std::unique_ptr<ConnManager>* out, std::string* why);
    ~ConnManager();
    ConnManager(const ConnManager&) = delete;
    ConnManager& operator=(const ConnManager&) = delete;

    Worker* worker() const { return worker_; }
    /// epoll fd covering every socket and the deadline timer (inside the worker's epoll set).
    int event_fd() const { return epoll_fd_.get(); }
    /// Accept, read, write, decide, call back. @return events handled. Cheap when idle.
    unsigned progress();
    /// False if work is waiting that no fd would announce; arms the deadline timer.
    bool arm();
    /// After a wake-up: look at the sockets on the next progress call.
    void disarm() { tick_ = kIdlePollEvery - 1; }

    // ---- server side (listener.cpp) ----
    /// Bind and listen (@p params normalised by the API: clear bits, default fields).
    /// kInvalidParam (bad sockaddr or no callback), kIoError (socket calls,
    /// e.g. address in use), with @p why.
    Status listen(const swy_listener_params_t& params, Listener** out, std::string* why);
    /// Close the listener; requests not yet answered are rejected.
    void destroy_listener(Listener* listener);
    bool owns(const Listener* listener) const;
    /// The live request @p handle names, offered and not yet answered, or null.
    ConnRequest* offered_request(const void* handle) const;
    /// The application's handle of a listener / request of some manager (generation-checked
    /// by SlotArena<T>::resolve()).
    static void* handle_of(const Listener* l) {
        return reinterpret_cast<void*>(SlotArena<Listener>::handle_of(l));
    }
    static void* handle_of(const ConnRequest* r) {
        return reinterpret_cast<void*>(SlotArena<ConnRequest>::handle_of(r));
    }
    /// Create the server's endpoint for an offered request and send the accept. On failure the
    /// request is rejected and the error returned.
    Status accept_request(ConnRequest* request, const swy_ep_params_t& params, Endpoint** out,
                          std::string* why);
    void reject_request(ConnRequest* request);

    // ---- client side (connector.cpp) ----
    /// Create an unwired endpoint and start connecting to params.sockaddr. Connection errors
    /// are reported later, from progress, through the endpoint. kInvalidParam for a bad
    /// sockaddr, kIoError if no socket can be made.
    Status connect(const swy_ep_params_t& params, Endpoint** out, std::string* why);
    /// The endpoint is being deleted: drop its handshake.
    void forget_endpoint(const Endpoint* ep);

private:
    explicit ConnManager(Worker* worker) : worker_(worker) {}
    bool busy() const;
    void watch(int fd, bool want_out, bool* watching_out, bool add);
    void unwatch(int fd);
    ConnClock::time_point next_deadline() const;

    unsigned accept_all(Listener* l);
    unsigned progress_request(ConnRequest* r, ConnClock::time_point now);
    void read_hello(ConnRequest* r);
    void read_address(ConnRequest* r);
    void malformed_request(ConnRequest* r, const std::string& why);
    void send_verdict(ConnRequest* r, bool accept);
    void close_request(ConnRequest* r);
    enum class Decision : uint8_t { kOffer, kAutoAccept, kWait };
    Decision decide(const ConnRequest* r) const;
    unsigned decide_held();

    unsigned progress_connector(Connector* c, ConnClock::time_point now);
    void read_server_frames(Connector* c, bool eof);
    void fail_connector(Connector* c, Status why, const std::string& text, bool error = false);
    /// The server's challenge: check its proof and send our proof and address.
    bool answer_challenge(Connector* c, const std::vector<uint8_t>& body);

    Worker* worker_;
    common::UniqueFd epoll_fd_;
    common::UniqueFd timer_fd_;
    uint32_t tick_ = 0;
    /// Handshake deadlines (settings, read at create()): a client gives up
    /// (SWY_ERR_TIMED_OUT) when the whole handshake, connect included, took longer than
    /// SWY_SOCKADDR_CONNECT_TIMEOUT; a listener closes a connection that did not complete its
    /// hello and address within SWY_LISTENER_HELLO_TIMEOUT, and waits at most
    /// SWY_LISTENER_LINGER_TIMEOUT for a client to close after the verdict.
    ConnClock::duration connect_timeout_ = std::chrono::seconds(30);
    ConnClock::duration hello_timeout_ = std::chrono::seconds(10);
    ConnClock::duration linger_timeout_ = std::chrono::seconds(5);
    /// Listeners and requests live in slot arenas (core/slot_arena.h): their handles carry a
    /// generation, so a handle to a destroyed listener or a finished request is refused
    /// (swy_listener_query & co.) instead of followed into freed memory. Declared before the
    /// lists that own their objects, which go first.
    template <typename T>
    struct ArenaDelete {
        SlotArena<T>* arena;
        void operator()(T* p) const { arena->destroy(p); }
    };
    SlotArena<Listener> listener_slots_;
    SlotArena<ConnRequest> request_slots_;
    std::vector<std::unique_ptr<Listener, ArenaDelete<Listener>>> listeners_;
    std::vector<std::unique_ptr<ConnRequest, ArenaDelete<ConnRequest>>> requests_;
    std::vector<std::unique_ptr<Connector>> connectors_;
};

}  // namespace swy::core

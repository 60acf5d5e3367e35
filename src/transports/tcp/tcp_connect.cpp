// Connecting side of the tcp transport: connect() returns at once, and non-blocking connect()
// attempts on the peer's addresses proceed from progress() under one total deadline, so a
// peer whose addresses hang never stalls the worker (issue #12). Also the key switch.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "common/socket.h"
#include "transports/tcp/tcp_connection.h"

namespace swy::tl::tcp {

using common::log_printf;
using common::LogLevel;

Status TcpInterface::connect(uint64_t remote_uid, const uint8_t* section, size_t length,
                             bool /*want_pio: tcp has no PIO*/, std::unique_ptr<Endpoint>* out,
                             std::string* why) {
    std::vector<TcpAddressEntry> entries;
    if (!decode_tcp_address(section, length, &entries)) {
        *why = "tcp: malformed address section";
        return Status::kMalformed;
    }
    // Families we have addresses of first (an IPv6 entry is hopeless from an IPv4-only host);
    // otherwise the peer's order, which puts its loopback addresses last. We cannot tell here
    // whether the peer shares our host, so a loopback entry is simply tried in turn; the hello
    // answer catches the case where it leads to some other worker.
    bool have4 = false, have6 = false;
    for (const TcpAddressEntry& e : addresses_)
        (e.family == 4 ? have4 : have6) = true;
    std::stable_partition(entries.begin(), entries.end(),
                          [&](const TcpAddressEntry& e) { return e.family == 4 ? have4 : have6; });

    // One connection per pair of workers: a connection the peer made to us, that no endpoint
    // of ours uses yet, carries this endpoint too (no socket, no handshake, ready at once).
    if (Connection* shared = reusable_connection(remote_uid)) {
        auto ep = std::make_unique<TcpEndpoint>(this, shared->index, shared->generation, remote_uid,
                                                true);
        attach_owner(shared, ep.get());
        *out = std::move(ep);
        return Status::kOk;
    }

    Connection* c = new_slot();
    if (c == nullptr) {
        *why = "tcp: too many connections";
        return Status::kNoResource;
    }
    c->state = Connection::State::kConnecting;
    c->outgoing = true;
    c->peer_uid = remote_uid;
    c->targets = std::move(entries);
    c->connect_deadline_ns = monotonic_ns() + config_.connect_timeout_ns;
    // Our hello waits in the handshake buffer until a connection is up.
    uint8_t hello[kHelloSize];
    if (common::auth_nonce(c->own_nonce) != Status::kOk) {
        c->state = Connection::State::kClosed;
        conns_.release(c->index);
        *why = "tcp: no random bytes for the hello nonce";
        return Status::kIoError;
    }
    encode_hello(hello, uid_, c->own_nonce);
    (void)send_handshake(c, hello, sizeof(hello));
    connecting_.push_back(c->index);
    const Status s = start_attempts(c);
    if (s != Status::kInProgress && s != Status::kOk) {
        // Every address refused at once (nothing listens there), or no socket could be made
        // (out of descriptors: kNoResource): say so now rather than hand out an endpoint that
        // can only fail.
        std::erase(connecting_, c->index);
        c->state = Connection::State::kClosed;
        conns_.release(c->index);
        *why = (s == Status::kNoResource ? "tcp: out of resources connecting to the peer ("
                                         : "tcp: cannot connect to any address of the peer (") +
               c->tried + ")";
        c->targets.clear();
        c->tried.clear();
        return s == Status::kNoResource ? s : Status::kUnreachable;
    }
    auto ep = std::make_unique<TcpEndpoint>(this, c->index, c->generation, remote_uid, true);
    c->owner_ep = ep.get();
    *out = std::move(ep);
    return Status::kOk;
}

Status TcpInterface::start_attempts(Connection* c) {
    c->retry_wait = false;
    for (;;) {
        const uint64_t now = monotonic_ns();
        if (now >= c->connect_deadline_ns) return Status::kTimedOut;
        if (c->next_target == c->targets.size()) {
            // Every address tried. A refusal is an answer; an attempt that got none (a SYN or
            // its answer lost, a peer too busy to accept) is worth another round, after a
            // pause that doubles each round, within the total deadline.
            if (c->local_failure != Status::kOk) return c->local_failure;
            if (!c->round_timed_out || c->targets.empty()) return Status::kUnreachable;
            const unsigned shift = std::min<unsigned>(c->rounds, 6) - 1;
            const uint64_t pause = std::min(kRetryPauseNs << shift, kMaxRetryPauseNs);
            if (now + pause >= c->connect_deadline_ns) return Status::kTimedOut;
            c->next_target = 0;
            c->round_timed_out = false;
            c->retry_wait = true;
            c->attempt_deadline_ns = now + pause;
            return Status::kInProgress;
        }
        if (c->next_target == 0 && c->rounds < UINT8_MAX) ++c->rounds;
        const TcpAddressEntry& e = c->targets[c->next_target++];
        const common::SocketAddress to = common::SocketAddress::from_ip(e.family, e.ip, e.port);
        common::UniqueFd fd;
        std::string error;
        Status s = common::open_stream_socket(to.af(), &fd, &error);
        bool watched = false;
        if (s == Status::kOk) {
            // Watched before connect(): completion (or failure) always arrives as EPOLLOUT.
            epoll_event ev{};
            ev.events = EPOLLIN | EPOLLOUT;
            ev.data.u64 = (uint64_t{c->generation} << 16) | c->index;
            watched = epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd.get(), &ev) == 0;
            if (!watched) {
                error = std::string("epoll_ctl: ") + std::strerror(errno);
                s = Status::kIoError;
            }
        }
        if (s == Status::kOk) s = common::connect_start(fd.get(), to, &error);
        if (s == Status::kOk || s == Status::kInProgress) {
            c->fd = std::move(fd);
            c->watching_out = true;
            // An even share of what is left, within [kMinAttemptNs, kMaxAttemptNs], and never
            // past the total deadline.
            const uint64_t left = c->connect_deadline_ns - now;
            const uint64_t share = left / (c->targets.size() - c->next_target + 1);
            const uint64_t budget =
                std::min({std::max(share, kMinAttemptNs), config_.connect_attempt_ns, left});
            c->attempt_deadline_ns = now + budget;
            if (s == Status::kOk) {
                connected(c);
                return Status::kOk;
            }
            return Status::kInProgress;
        }
        if (watched) epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fd.get(), nullptr);
        // No socket at all (EMFILE: ulimit -n reached): not the peer's fault, and the
        // status says so (SWY_ERR_NO_RESOURCE) with the reason in the log line.
        if (s == Status::kNoResource) c->local_failure = Status::kNoResource;
        // The error names the address itself ("connect to ADDR: ..."); the list keeps one.
        const std::string prefix = "connect to " + to.text() + ": ";
        if (error.rfind(prefix, 0) == 0) error.erase(0, prefix.size());
        if (!c->tried.empty()) c->tried.append(", ");
        c->tried.append(entry_text(e)).append(": ").append(error);
    }
}

void TcpInterface::end_attempt(Connection* c, const char* error) {
    drop_socket(c);
    if (!c->tried.empty()) c->tried.append(", ");
    c->tried.append(entry_text(c->targets[c->next_target - 1])).append(": ").append(error);
    next_attempt(c);
}

void TcpInterface::next_attempt(Connection* c) {
    const Status s = start_attempts(c);
    if (s == Status::kOk || s == Status::kInProgress) return;
    log_printf(LogLevel::kWarn, "tcp: cannot connect to worker %016llx (%s, %u round%s): %s",
               static_cast<unsigned long long>(c->peer_uid),
               s == Status::kTimedOut     ? "connect timeout"
               : s == Status::kNoResource ? "out of resources"
                                          : "no address answered",
               c->rounds, c->rounds == 1 ? "" : "s", c->tried.c_str());
    fail(c, s);
}

void TcpInterface::connect_event(Connection* c) {
    // An event of an attempt that ended earlier in the same epoll batch carries the same tag
    // as the current one: act only if this socket really is done.
    (void)connect_settled(c);
}

bool TcpInterface::connect_settled(Connection* c) {
    if (!c->fd) return false;
    int err = 0;
    std::string error;
    const Status s = common::connect_result(c->fd.get(), &err, &error);
    if (s == Status::kInProgress) return false;
    if (s == Status::kOk) {
        connected(c);
    } else {
        end_attempt(c, error.c_str());
    }
    return true;
}

void TcpInterface::connected(Connection* c) {
    setup_socket(c->fd.get());
    std::erase(connecting_, c->index);
    c->state = Connection::State::kOpen;
    watch_handshake(c);
    c->targets.clear();
    c->targets.shrink_to_fit();
    c->tried.clear();
    live_.push_back(c->index);
    (void)flush(c);  // the hello; flush() also stops watching EPOLLOUT once it is out
}

void TcpInterface::check_connecting() {
    const uint64_t now = monotonic_ns();
    // end_attempt() changes the list: walk a copy.
    std::vector<uint16_t> snapshot = connecting_;
    for (uint16_t index : snapshot) {
        Connection* c = conns_[index].get();
        if (c->state != Connection::State::kConnecting || now < c->attempt_deadline_ns) continue;
        if (c->redirected) {
            log_printf(LogLevel::kWarn,
                       "tcp: worker %016llx asked us to use its connection to us, which did not "
                       "arrive within SWY_TCP_CONNECT_TIMEOUT",
                       static_cast<unsigned long long>(c->peer_uid));
            fail(c, Status::kTimedOut);
        } else if (c->retry_wait) {
            next_attempt(c);  // the pause between two rounds is over
        } else if (connect_settled(c)) {
            // The connection was made (or refused) while we were not looking: a process that
            // was not scheduled for a while (many ranks on few cores) must not take its own
            // lateness for the peer's silence.
            continue;
        } else {
            c->round_timed_out = true;
            end_attempt(c, "timed out");
        }
    }
}

void TcpInterface::update_timer() {
    uint64_t next = UINT64_MAX;
    for (uint16_t index : connecting_)
        next = std::min(next, conns_[index]->attempt_deadline_ns);
    if (next == UINT64_MAX && !timer_set_) return;
    itimerspec its{};
    if (next != UINT64_MAX) {
        next = std::max<uint64_t>(next, 1);
        its.it_value.tv_sec = static_cast<time_t>(next / 1'000'000'000u);
        its.it_value.tv_nsec = static_cast<long>(next % 1'000'000'000u);
    }
    timer_set_ = next != UINT64_MAX;
    timerfd_settime(timer_fd_.get(), TFD_TIMER_ABSTIME, &its, nullptr);
}

void TcpInterface::set_auth_key(const common::AuthKey& key) {
    if (key.bytes() == config_.auth_key.bytes()) return;
    config_.auth_key = key;
    ++key_epoch_;
    log_printf(LogLevel::kInfo, "tcp: %s",
               key.empty() ? "authentication off" : "authentication key installed");
    // Connections whose handshake used the old key (or none) are not authenticated with this
    // one: close them. Those still before any key-dependent step go on with the new key.
    for (auto& owned : conns_) {
        Connection* c = owned.get();
        if (c->state == Connection::State::kClosed) continue;
        if (!c->handshake_done && !c->hello_received && !c->held) continue;
        if (c->key_epoch == key_epoch_) continue;
        log_printf(LogLevel::kInfo,
                   "tcp: new authentication key: closing connection %u (worker %016llx)", c->index,
                   static_cast<unsigned long long>(c->peer_uid));
        fail(c, Status::kConnectionReset);
    }
}

}  // namespace swy::tl::tcp

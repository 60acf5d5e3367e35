// The connection manager's event loop: one epoll set for every listener, handshake socket and
// the deadline timer, polled from worker progress (see listener.h for the protocol).
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "core/listener.h"
#include "core/worker.h"

namespace swy::core {

Status ConnManager::create(Worker* worker, std::unique_ptr<ConnManager>* out, std::string* why) {
    std::unique_ptr<ConnManager> m(new (std::nothrow) ConnManager(worker));
    if (!m) return Status::kNoMemory;
    m->epoll_fd_.reset(epoll_create1(EPOLL_CLOEXEC));
    m->timer_fd_.reset(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    if (!m->epoll_fd_ || !m->timer_fd_) {
        *why = std::string("connection manager: ") + std::strerror(errno);
        return Status::kIoError;
    }
    const common::Config& cfg = worker->context()->config();
    m->connect_timeout_ = std::chrono::nanoseconds(cfg.get_time_ns("SOCKADDR_CONNECT_TIMEOUT"));
    m->hello_timeout_ = std::chrono::nanoseconds(cfg.get_time_ns("LISTENER_HELLO_TIMEOUT"));
    m->linger_timeout_ = std::chrono::nanoseconds(cfg.get_time_ns("LISTENER_LINGER_TIMEOUT"));
    bool unused = false;
    m->watch(m->timer_fd_.get(), false, &unused, true);
    *out = std::move(m);
    return Status::kOk;
}

ConnManager::~ConnManager() {
    // Endpoints are gone by now (the worker deletes them first); sockets, listeners
    // included, close with their owners. Clients still waiting see EOF and fail their
    // endpoints. The sockets go before the epoll set that watches them.
    connectors_.clear();
    requests_.clear();
    listeners_.clear();
}

void ConnManager::watch(int fd, bool want_out, bool* watching_out, bool add) {
    if (!add && *watching_out == want_out) return;
    epoll_event ev{};
    ev.events = EPOLLIN | (want_out ? EPOLLOUT : 0u);
    ev.data.fd = fd;
    epoll_ctl(epoll_fd_.get(), add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev);
    *watching_out = want_out;
}

void ConnManager::unwatch(int fd) {
    if (fd >= 0) epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fd, nullptr);
}

bool ConnManager::busy() const {
    if (!connectors_.empty()) return true;
    for (const auto& r : requests_) {
        if (r->state != ConnRequest::State::kOffered) return true;
    }
    return false;
}

ConnClock::time_point ConnManager::next_deadline() const {
    auto t = ConnClock::time_point::max();
    for (const auto& c : connectors_) {
        if (c->state != Connector::State::kDone) t = std::min(t, c->deadline);
    }
    for (const auto& r : requests_) {
        if (r->state != ConnRequest::State::kOffered && r->state != ConnRequest::State::kDone) {
            t = std::min(t, r->deadline);
        }
    }
    return t;
}

unsigned ConnManager::progress() {
    // Listener-only workers pay one counter increment per progress call most of the time.
    const bool in_flight = busy();
    if (!in_flight && (++tick_ & (kIdlePollEvery - 1)) != 0) return 0;
    epoll_event events[16];
    const int ready = epoll_wait(epoll_fd_.get(), events, 16, 0);
    if (ready <= 0 && !in_flight) return 0;
    uint64_t expirations = 0;
    while (::read(timer_fd_.get(), &expirations, sizeof(expirations)) > 0) {}
    const auto now = ConnClock::now();
    unsigned n = 0;
    // Indices, not iterators: callbacks below may add requests or connectors.
    for (size_t i = 0; i < listeners_.size(); ++i)
        n += accept_all(listeners_[i].get());
    for (size_t i = 0; i < connectors_.size(); ++i)
        n += progress_connector(connectors_[i].get(), now);
    for (size_t i = 0; i < requests_.size(); ++i)
        n += progress_request(requests_[i].get(), now);
    n += decide_held();
    std::erase_if(connectors_, [](const auto& c) { return c->state == Connector::State::kDone; });
    std::erase_if(requests_, [](const auto& r) { return r->state == ConnRequest::State::kDone; });
    return n;
}

bool ConnManager::arm() {
    for (const auto& c : connectors_) {
        if (c->early_failure != Status::kOk) return false;
    }
    // Deadlines must fire even if the application blocks without a timeout.
    const auto deadline = next_deadline();
    itimerspec spec{};
    if (deadline != ConnClock::time_point::max()) {
        auto left =
            std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - ConnClock::now());
        if (left.count() <= 0) return false;
        spec.it_value.tv_sec = static_cast<time_t>(left.count() / 1'000'000'000);
        spec.it_value.tv_nsec = static_cast<long>(left.count() % 1'000'000'000);
    }
    timerfd_settime(timer_fd_.get(), 0, &spec, nullptr);
    return true;
}

}  // namespace swy::core

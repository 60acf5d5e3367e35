// Verbs transport: set-up (device, PD, CQ, SRQ, buffer pools, handshake listener), the worker
// address section, and the endpoints' entry points.
#include "transports/verbs/verbs_iface.h"

#include "transports/verbs/lane_attr.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "common/log.h"
#include "transports/verbs/device_select.h"
#include "transports/verbs/verbs_connection.h"
#include "transports/verbs/verbs_registrar.h"

namespace swy::tl::verbs {

using common::log_printf;
using common::LogLevel;

namespace {

/// A registration through ibv_reg_dmabuf_mr (device memory: never cached, it has no pages
/// in pagemap to validate): owns the MR.
class VerbsRegistration final : public MemoryRegistration {
public:
    explicit VerbsRegistration(ibv_mr* mr) : mr_(mr) {}
    ~VerbsRegistration() override { ibv_dereg_mr(mr_); }
    uint32_t lkey() const override { return mr_->lkey; }
    uint32_t rkey() const override { return mr_->rkey; }
    uint64_t address() const override { return reinterpret_cast<uint64_t>(mr_->addr); }
    size_t length() const override { return mr_->length; }

private:
    ibv_mr* mr_;
};

/// One use of a registration-cache entry for one transfer. The cache pointer is declared
/// first so the handle (which releases into it) goes first.
class CachedRegistration final : public MemoryRegistration {
public:
    CachedRegistration(std::shared_ptr<RegCache> cache, RegCache::Handle handle, uint64_t address,
                       size_t length)
        : cache_(std::move(cache)),
          handle_(std::move(handle)),
          address_(address),
          length_(length) {}
    uint32_t lkey() const override { return handle_.lkey(); }
    uint32_t rkey() const override { return handle_.rkey(); }
    uint64_t address() const override { return address_; }
    size_t length() const override { return length_; }

private:
    std::shared_ptr<RegCache> cache_;
    RegCache::Handle handle_;
    uint64_t address_;
    size_t length_;
};

/// ibv_access_flags for ZcopyAccess bits.
int ibv_access(unsigned access) {
    int flags = 0;
    if ((access & kZcopyLocalWrite) != 0) flags |= IBV_ACCESS_LOCAL_WRITE;
    if ((access & kZcopyRemoteRead) != 0) flags |= IBV_ACCESS_REMOTE_READ;
    // Remote write requires local write (verbs rule).
    if ((access & kZcopyRemoteWrite) != 0)
        flags |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    return flags;
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Endpoint
// ------------------------------------------------------------------------------------------

VerbsEndpoint::VerbsEndpoint(VerbsInterface* iface, uint16_t conn, uint32_t generation,
                             uint64_t remote_uid, bool owner, const LaneAttr& attr)
    : iface_(iface),
      conn_(conn),
      generation_(generation),
      remote_uid_(remote_uid),
      owner_(owner),
      attr_(attr) {}

VerbsEndpoint::~VerbsEndpoint() {
    disconnect();
    if (owner_ && iface_ != nullptr) {
        VerbsInterface::Connection* c = iface_->lookup(conn_, generation_);
        if (c != nullptr && c->owner_ep == this) c->owner_ep = nullptr;
    }
}

Status VerbsEndpoint::am_send(AmId id, const void* hdr, size_t hdr_len, const void* payload,
                              size_t length) {
    if (__builtin_expect(iface_ == nullptr || disconnected_, 0)) return Status::kConnectionReset;
    VerbsInterface::Connection* c = iface_->lookup(conn_, generation_);
    if (__builtin_expect(c == nullptr, 0)) return Status::kConnectionReset;
    return iface_->send(c, id, hdr, hdr_len, payload, length, nullptr, nullptr);
}

Status VerbsEndpoint::am_send_packed(AmId id, const void* hdr, size_t hdr_len, PackFn pack,
                                     void* arg, size_t length) {
    if (iface_ == nullptr || disconnected_) return Status::kConnectionReset;
    VerbsInterface::Connection* c = iface_->lookup(conn_, generation_);
    if (c == nullptr) return Status::kConnectionReset;
    return iface_->send(c, id, hdr, hdr_len, nullptr, length, pack, arg);
}

void VerbsEndpoint::disconnect() {
    if (disconnected_ || !owner_) return;
    disconnected_ = true;
    if (iface_ == nullptr) return;
    if (VerbsInterface::Connection* c = iface_->lookup(conn_, generation_)) iface_->disconnect(c);
}

Status VerbsEndpoint::register_memory(const void* address, size_t length, unsigned access,
                                      std::unique_ptr<MemoryRegistration>* out, std::string* why) {
    if (iface_ == nullptr) return Status::kConnectionReset;
    RegCache::Handle handle;
    Status s = iface_->reg_cache_->acquire(address, length, access, &handle, why);
    if (s != Status::kOk) return s;
    // A zero-length buffer still gets a key: the cache registers one byte of it.
    out->reset(new CachedRegistration(iface_->reg_cache_, std::move(handle),
                                      reinterpret_cast<uint64_t>(address),
                                      std::max<size_t>(length, 1)));
    return Status::kOk;
}

Status VerbsEndpoint::register_dmabuf(int fd, uint64_t offset, size_t length, uint64_t iova,
                                      unsigned access, std::unique_ptr<MemoryRegistration>* out,
                                      std::string* why) {
    if (iface_ == nullptr) return Status::kConnectionReset;
    if ((attr_.caps & cap::kDeviceMemory) == 0) {
        *why = "ibv_reg_dmabuf_mr: " + iface_->port_.dmabuf_reason;
        return Status::kUnsupported;
    }
    ibv_mr* mr = ibv_reg_dmabuf_mr(iface_->pd_, offset, std::max<size_t>(length, 1), iova, fd,
                                   ibv_access(access));
    if (mr == nullptr) {
        *why = std::string("ibv_reg_dmabuf_mr: ") + std::strerror(errno);
        return errno == ENOMEM ? Status::kNoMemory : Status::kIoError;
    }
    out->reset(new VerbsRegistration(mr));
    return Status::kOk;
}

namespace {

/// Offset of @p local in @p reg, or false if [local, local + length) is not inside it.
bool offset_in(const MemoryRegistration* reg, const void* local, size_t length, size_t* offset) {
    if (reg == nullptr) return false;
    const auto address = reinterpret_cast<uint64_t>(local);
    if (address < reg->address() || address - reg->address() > reg->length()) return false;
    *offset = static_cast<size_t>(address - reg->address());
    return length <= reg->length() - *offset;
}

}  // namespace

Status VerbsEndpoint::get_zcopy(void* local, const MemoryRegistration* local_reg, RemoteKey remote,
                                size_t length, const ZcopyCompletion& completion) {
    if (iface_ == nullptr || disconnected_) return Status::kConnectionReset;
    size_t offset = 0;
    if (!offset_in(local_reg, local, length, &offset)) return Status::kInvalidParam;
    VerbsInterface::Connection* c = iface_->lookup(conn_, generation_);
    if (c == nullptr) return Status::kConnectionReset;
    const Status s = iface_->start_rdma(c, true, *local_reg, offset, remote.address,
                                        static_cast<uint32_t>(remote.key), length, completion.done,
                                        nullptr, completion.arg, completion.cookie);
    return s == Status::kOk ? Status::kInProgress : s;
}

Status VerbsEndpoint::put_zcopy(const void* local, const MemoryRegistration* local_reg,
                                RemoteKey remote, size_t length,
                                const ZcopyCompletion& completion) {
    if (iface_ == nullptr || disconnected_) return Status::kConnectionReset;
    size_t offset = 0;
    if (!offset_in(local_reg, local, length, &offset)) return Status::kInvalidParam;
    VerbsInterface::Connection* c = iface_->lookup(conn_, generation_);
    if (c == nullptr) return Status::kConnectionReset;
    const Status s = iface_->start_rdma(c, false, *local_reg, offset, remote.address,
                                        static_cast<uint32_t>(remote.key), length, completion.done,
                                        completion.posted, completion.arg, completion.cookie);
    return s == Status::kOk ? Status::kInProgress : s;
}

// ------------------------------------------------------------------------------------------
// Interface: set-up
// ------------------------------------------------------------------------------------------

VerbsInterface::VerbsInterface(const VerbsConfig& config, uint64_t uid, uint16_t index,
                               AmSink* sink)
    : config_(config), uid_(uid), index_(index), sink_(sink) {}

Status VerbsInterface::open(const VerbsConfig& config, uint64_t worker_uid, uint16_t iface_index,
                            AmSink* sink, std::unique_ptr<Interface>* out, std::string* why) {
    if (config.seg_size < 256 || config.seg_size > (1u << 30) || config.rx_credits == 0 ||
        config.rx_credits > 0x7FFF || config.bounce_buffers == 0 || config.sq_depth < 16) {
        *why =
            "verbs: SWY_VERBS_SEG_SIZE must be 256 B .. 1 GiB, SWY_VERBS_RX_CREDITS 1..32767, "
            "SWY_VERBS_BOUNCE_BUFFERS >= 1, SWY_VERBS_SQ_DEPTH >= 16";
        return Status::kInvalidParam;
    }
    if (config.dm_cell_size == 0 || config.dm_cell_size % DmCells::kCellAlign != 0 ||
        config.dm_cell_size > config.seg_size) {
        *why =
            "verbs: SWY_VERBS_DM_CELL_SIZE must be a non-zero multiple of 64 B, at most "
            "SWY_VERBS_SEG_SIZE";
        return Status::kInvalidParam;
    }
    std::unique_ptr<VerbsInterface> iface(
        new VerbsInterface(config, worker_uid, iface_index, sink));
    Status s = iface->setup(why);
    if (s != Status::kOk) return s;
    *out = std::move(iface);
    return Status::kOk;
}

Status VerbsInterface::setup(std::string* why) {
    Status s = open_device(config_, &dev_, &port_, why);
    if (s != Status::kOk) return s;
    ibv_context* ctx = dev_.context;
    const ibv_device_attr& da = dev_.device_attr;
    pd_ = ibv_alloc_pd(ctx);
    if (pd_ == nullptr) {
        *why = std::string("verbs: ibv_alloc_pd: ") + std::strerror(errno);
        return Status::kIoError;
    }
    probe_capabilities(ctx, pd_, config_.max_inline, &port_);
    std::unique_ptr<PageIdentity> identity = rcache_page_identity(config_, &rcache_reason_);
    reg_cache_ = std::make_shared<RegCache>(config_.rcache_limits, make_verbs_registrar(pd_),
                                            std::move(identity));
    max_inline_ = port_.max_inline;
    setup_dm_window();
    channel_ = ibv_create_comp_channel(ctx);
    if (channel_ == nullptr) {
        *why = std::string("verbs: ibv_create_comp_channel: ") + std::strerror(errno);
        return Status::kIoError;
    }
    fcntl(channel_->fd, F_SETFL, fcntl(channel_->fd, F_GETFL) | O_NONBLOCK);
    // Slots are made as connections come (ConnTable); only the credit words are per slot.
    max_connections_ = 4096;
    conns_ = common::ConnTable<Connection>(max_connections_, kWrGenerationMask);
    // The first completion group now: a device whose CQ or SRQ cannot hold one connection is
    // refused here, not at the first connect.
    s = create_group(why);
    if (s != Status::kOk) return s;
    // Send bounce buffers: one registered block.
    const size_t bounce_bytes = config_.seg_size * config_.bounce_buffers;
    bounce_memory_.reset(new (std::nothrow) uint8_t[bounce_bytes]);
    if (!bounce_memory_) return Status::kNoMemory;
    bounce_mr_ = ibv_reg_mr(pd_, bounce_memory_.get(), bounce_bytes, IBV_ACCESS_LOCAL_WRITE);
    if (bounce_mr_ == nullptr) {
        *why = std::string("verbs: registering bounce buffers: ") + std::strerror(errno);
        return Status::kIoError;
    }
    for (int32_t i = static_cast<int32_t>(config_.bounce_buffers) - 1; i >= 0; --i) {
        bounce_free_.push_back(i);
    }
    // Credit words: the peer of connection i RDMA-writes its freed-buffer count into word i.
    credit_words_.reset(new (std::nothrow) uint64_t[max_connections_]());
    if (!credit_words_) return Status::kNoMemory;
    credit_mr_ = ibv_reg_mr(pd_, credit_words_.get(), max_connections_ * sizeof(uint64_t),
                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (credit_mr_ == nullptr) {
        *why = std::string("verbs: registering credit words: ") + std::strerror(errno);
        return Status::kIoError;
    }
    const int rd_atomic = std::min(da.max_qp_rd_atom, da.max_qp_init_rd_atom);
    max_rd_atomic_ = static_cast<uint32_t>(std::clamp(rd_atomic, 1, 16));
    max_rdma_chunk_ = std::min<size_t>(dev_.port_attr.max_msg_sz, size_t{1} << 20);
    epoll_fd_.reset(epoll_create1(EPOLL_CLOEXEC));
    if (!epoll_fd_) {
        *why = std::string("verbs: epoll_create1: ") + std::strerror(errno);
        return Status::kIoError;
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kChannelTag;
    epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, channel_->fd, &ev);
    s = listen(why);
    if (s != Status::kOk) return s;

    attr_ = tl::verbs::lane_attr(config_, max_inline_, port_.dmabuf_mr, reg_cache_->active());
    if (reg_cache_->active()) {
        log_printf(LogLevel::kDebug,
                   "verbs: registration cache on (hits validated by page frames), at most %zu "
                   "entries and %zu bytes pinned",
                   config_.rcache_limits.max_entries, config_.rcache_limits.max_bytes);
    } else {
        log_printf(LogLevel::kDebug, "verbs: registration cache off (%s): registering per transfer",
                   rcache_reason_.c_str());
    }
    log_printf(LogLevel::kDebug, "verbs: %s:%d %s MTU %d GID[%d] %s (%s), inline %u, %s, %s",
               port_.device.c_str(), port_.port, port_.link_layer.c_str(), port_.active_mtu,
               port_.gid_index, port_.gid.c_str(), port_.gid_type.c_str(), max_inline_,
               port_.device_memory ? "device memory" : port_.device_memory_reason.c_str(),
               port_.dmabuf_mr ? "dma-buf MRs" : port_.dmabuf_reason.c_str());
    return Status::kOk;
}

Status VerbsInterface::listen(std::string* why) {
    common::UniqueFd fd;
    common::SocketAddress bound;
    Status s = listen_for_handshakes(dev_.gid, &fd, &bound, why);
    if (s != Status::kOk) return s;
    listen_fd_ = std::move(fd);
    listen_port_ = bound.port();
    listen_family_ = static_cast<uint8_t>(bound.family());
    std::memcpy(listen_ip_, bound.ip(), bound.family() == 4 ? 4 : 16);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kListenTag;
    epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, listen_fd_.get(), &ev);
    return Status::kOk;
}

VerbsInterface::~VerbsInterface() {
    // Goodbyes still in flight (endpoints closed just before the worker went away): give them
    // a moment to complete, so the peers see an orderly close rather than a failure.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    auto closing = [this] {
        for (const auto& c : conns_) {
            if (c && c->bye_sent && c->sq_used() != 0 && c->state == State::kReady) return true;
        }
        return false;
    };
    quiet_ = true;  // the worker is going away: nothing is delivered to it any more
    while (closing() && std::chrono::steady_clock::now() < deadline)
        drain_cq();
    for (auto& c : conns_) {
        if (!c) continue;
        if (c->owner_ep != nullptr) c->owner_ep->iface_ = nullptr;
        if (c->reply_ep) c->reply_ep->iface_ = nullptr;
        if (c->qp != nullptr) ibv_destroy_qp(c->qp);
    }
    conns_.clear();  // gives their device-memory slots back: the pool goes after them
    dm_pool_.reset();
    for (Group& g : groups_) {
        if (g.srq != nullptr) ibv_destroy_srq(g.srq);
        if (g.cq != nullptr) ibv_destroy_cq(g.cq);
    }
    if (channel_ != nullptr) ibv_destroy_comp_channel(channel_);
    for (RxBlock& b : rx_blocks_) {
        if (b.mr != nullptr) ibv_dereg_mr(b.mr);
    }
    if (reg_cache_ != nullptr) {
        reg_cache_->flush();
        if (reg_cache_.use_count() > 1) {
            // A registration outlives its interface (zcopy.h says it must not): the PD stays
            // allocated (ibv_dealloc_pd fails while MRs exist) and the cache deregisters later.
            log_printf(LogLevel::kDebug, "verbs: registrations still in use at close");
        }
        reg_cache_.reset();
    }
    if (bounce_mr_ != nullptr) ibv_dereg_mr(bounce_mr_);
    if (credit_mr_ != nullptr) ibv_dereg_mr(credit_mr_);
    if (pd_ != nullptr) ibv_dealloc_pd(pd_);
    listen_fd_.reset();
    epoll_fd_.reset();
}

std::vector<uint8_t> VerbsInterface::address() const {
    AddressSection a{};
    a.version = 1;
    a.family = listen_family_;
    a.port = listen_port_;
    std::memcpy(a.ip, listen_ip_, sizeof(a.ip));
    std::memcpy(a.gid, dev_.gid.data(), 16);
    std::strncpy(a.device, port_.device.c_str(), sizeof(a.device) - 1);
    a.max_message = static_cast<uint32_t>(config_.seg_size);
    a.rx_credits = config_.rx_credits;
    std::vector<uint8_t> out(sizeof(a));
    std::memcpy(out.data(), &a, sizeof(a));
    return out;
}

bool VerbsInterface::arm() {
    if (!stash_.empty() || !to_report_.empty() || !credit_due_.empty() || !rdma_backlog_.empty()) {
        return false;
    }
    bool idle = true;
    for (Group& g : groups_) {
        if (ibv_req_notify_cq(g.cq, 0) != 0) return false;
        // A completion that arrived before the request above raises no event: look once more.
        ibv_wc wc[16];
        const int n = ibv_poll_cq(g.cq, 16, wc);
        if (n > 0) {
            stash_.insert(stash_.end(), wc, wc + n);
            idle = false;
        }
    }
    return idle;
}

void VerbsInterface::disarm() {
    ibv_cq* cq = nullptr;
    void* ctx = nullptr;
    // Every event is acknowledged on the CQ it came from (a CQ with unacknowledged events
    // cannot be destroyed).
    while (ibv_get_cq_event(channel_, &cq, &ctx) == 0)
        ibv_ack_cq_events(cq, 1);
    // Look at the handshake sockets on the next progress call: a blocking wait may have been
    // woken by one of them.
    tick_ = kCmPollEvery - 1;
    cm_polled_ns_ = 0;
}

size_t VerbsInterface::connection_count() const {
    size_t n = 0;
    for (const auto& c : conns_)
        n += c ? 1 : 0;
    return n;
}

ScaleReport VerbsInterface::scale_report() const {
    ScaleReport r;
    for (const auto& c : conns_) {
        if (!c) continue;
        ++r.connections;
        if (c->qp != nullptr) ++r.qps;
        if (c->remote_owner && c->owner_ep != nullptr && !c->bye_sent) ++r.shared;
        r.max_credits_lent = std::max(r.max_credits_lent, c->credits);
    }
    r.groups = static_cast<uint32_t>(groups_.size());
    for (const Group& g : groups_) {
        r.cq_entries += g.cq_entries;
        r.srq_entries += g.srq_capacity;
        r.rx_buffers += g.rx_posted;
        r.rx_granted += g.rx_granted;
    }
    r.rx_bytes = r.rx_buffers * config_.seg_size;
    return r;
}

// ------------------------------------------------------------------------------------------
// Entry point used by the worker (verbs_open.h)
// ------------------------------------------------------------------------------------------

Status open(const VerbsConfig& config, uint64_t worker_uid, uint16_t iface_index, AmSink* sink,
            std::unique_ptr<Interface>* out, std::string* why) {
    return VerbsInterface::open(config, worker_uid, iface_index, sink, out, why);
}

SendStats send_stats(const Interface* verbs) {
    return static_cast<const VerbsInterface*>(verbs)->send_stats();
}

void set_auth_key(Interface* verbs, const common::AuthKey& key) {
    static_cast<VerbsInterface*>(verbs)->set_auth_key(key);
}

Status connect(Interface* verbs, uint64_t remote_uid, const uint8_t* section, size_t length,
               bool want_pio, bool pio_first, std::unique_ptr<Endpoint>* out, std::string* why) {
    // open() made every verbs interface there is.
    return static_cast<VerbsInterface*>(verbs)->connect_lane(remote_uid, section, length, want_pio,
                                                             pio_first, out, why);
}

bool scale_report(const Interface* iface, ScaleReport* out) {
    const auto* v = dynamic_cast<const VerbsInterface*>(iface);
    if (v == nullptr) return false;
    *out = v->scale_report();
    return true;
}

bool reg_cache_report(const Interface* iface, RegCacheReport* out) {
    const auto* v = dynamic_cast<const VerbsInterface*>(iface);
    if (v == nullptr) return false;
    out->active = v->reg_cache_active();
    out->reason = v->reg_cache_reason();
    out->stats = v->reg_cache_stats();
    return true;
}

std::unique_ptr<PageIdentity> rcache_page_identity(const VerbsConfig& config, std::string* why) {
    if (!config.rcache) {
        *why = "SWY_VERBS_RCACHE=off";
        return nullptr;
    }
    return PagemapIdentity::open(why);
}

}  // namespace swy::tl::verbs

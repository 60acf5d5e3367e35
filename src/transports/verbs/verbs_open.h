// Entry points of the verbs transport that the worker and swy-info call. They exist whether or
// not the library was built with libibverbs: without it, open() reports kUnsupported and
// probe() finds nothing (verbs_absent.cpp), so nothing above needs an #ifdef.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/auth.h"
#include "transports/transport.h"
#include "transports/verbs/lane_costs.h"
#include "transports/verbs/reg_cache.h"

namespace swy::tl::verbs {

/// Settings (SWY_NET_DEVICES, SWY_VERBS_*).
struct VerbsConfig {
    std::vector<std::string> devices{"all"};  ///< "rxe0:1", "rxe0", "all"
    int gid_index = -1;                       ///< -1: choose (RoCE v2 with IPv4 first)
    size_t seg_size = 8192;                   ///< receive/bounce buffer size (max_message)
    uint32_t rx_credits = 64;                 ///< receive buffers posted per connection
    uint32_t bounce_buffers = 256;            ///< registered send bounce buffers
    uint32_t max_inline = 256;                ///< inline (PIO) limit asked of the QP
    uint32_t sq_depth = 256;                  ///< send queue depth per QP
    size_t dm_cell_size = 2048;               ///< device-memory PIO: bytes per message cell
    uint32_t dm_slots = 16;                   ///< device-memory PIO: endpoints that get a slot
    uint32_t dm_reserved = 4;                 ///< of those, kept for SWY_EP_FLAG_PIO_FIRST
    bool dm_emulate = false;                  ///< testing aid: host memory stands in for DM
    uint64_t connect_timeout_ms = 2000;
    /// Shared key: handshakes carry proofs and a peer without the key is refused (empty: none).
    common::AuthKey auth_key;
    bool rcache = true;            ///< SWY_VERBS_RCACHE: auto (true) or off
    RegCacheLimits rcache_limits;  ///< SWY_VERBS_RCACHE_MAX, SWY_VERBS_RCACHE_ENTRIES
    /// Costs reported in the lanes' attributes (the worker fills them from the context's
    /// cost figures with verbs_lane_costs(), lane_costs.h).
    VerbsCosts costs;
};

/// What start-up found about one device port (swy-info, logs).
struct PortInfo {
    std::string device;
    int port = 0;
    std::string state;       ///< "ACTIVE", "DOWN", ...
    int active_mtu = 0;      ///< bytes
    std::string link_layer;  ///< "Ethernet" (RoCE) or "InfiniBand"
    std::string gid;         ///< chosen GID, text
    int gid_index = -1;
    std::string gid_type;  ///< "RoCE v2", ...
    uint16_t lid = 0;
    uint32_t max_inline = 0;     ///< inline limit the device accepted on a probe QP
    bool device_memory = false;  ///< ibv_alloc_dm works
    std::string device_memory_reason;
    size_t max_dm_size = 0;
    bool dmabuf_mr = false;  ///< ibv_reg_dmabuf_mr is supported (RDMA of device memory)
    std::string dmabuf_reason;
    bool usable = false;
    std::string why_not;  ///< when !usable
};

/// Look at every device and port (selected by @p config.devices) without opening an
/// interface. Empty when the library was built without verbs or no device exists; @p why
/// (optional) then says which.
std::vector<PortInfo> probe(const VerbsConfig& config, std::string* why);

/// Registration costs measured on one port (swy-info --calibrate), as the cost model uses them:
/// a fixed part and a rate. hit_* are a validated registration-cache hit (measured only where
/// the cache can run: hit_measured).
struct RegistrationFigures {
    double reg_s = 0;
    double reg_Bps = 0;
    bool hit_measured = false;
    double hit_s = 0;
    double hit_Bps = 0;
    std::string hit_why;  ///< why the hit was not measured
};

/// Register and deregister freshly mapped, touched buffers of 4 KiB and 16 MiB on the first
/// selected ACTIVE port (best of several) and fit a fixed cost and a rate; the same for a
/// validated registration-cache hit when the cache can run in this process (else hit_why says
/// why not: SWY_VERBS_RCACHE=off, page frames not visible). kNotFound when there
/// is no usable port, kUnsupported without libibverbs, kIoError when a call fails (@p why).
Status measure_registration(const VerbsConfig& config, RegistrationFigures* out, std::string* why);

/// Open the verbs interface on the first selected ACTIVE port.
/// Errors: kUnsupported (built without libibverbs), kNotFound (no device or no active port;
/// the worker logs this at debug level and goes on without verbs), kIoError (a verbs call
/// failed; @p why says which).
Status open(const VerbsConfig& config, uint64_t worker_uid, uint16_t iface_index, AmSink* sink,
            std::unique_ptr<Interface>* out, std::string* why);

/// Interface::connect() on an interface that open() returned, with the endpoint's PIO wish in
/// full: @p want_pio false (SWY_EP_FLAG_NO_PIO) takes no device-memory slot; @p pio_first
/// (SWY_EP_FLAG_PIO_FIRST) may take one of the reserved slots. Inline sends are per QP and
/// every endpoint gets them either way. Errors as Interface::connect(); kUnsupported when
/// built without libibverbs.
Status connect(Interface* verbs, uint64_t remote_uid, const uint8_t* section, size_t length,
               bool want_pio, bool pio_first, std::unique_ptr<Endpoint>* out, std::string* why);

/// Use @p key for the handshakes of @p verbs from now on (empty: none). A connection set up
/// before keeps its lane. No-op when built without libibverbs.
void set_auth_key(Interface* verbs, const common::AuthKey& key);

/// Messages an interface sent, by the path they took (tests and diagnostics).
struct SendStats {
    uint64_t inline_sends = 0;  ///< header+payload written into the work request
    uint64_t dm_sends = 0;      ///< stored into a device-memory cell
    uint64_t bounce_sends = 0;  ///< copied into a registered bounce buffer
};
/// The counts of an interface that open() returned (zeros when built without libibverbs).
SendStats send_stats(const Interface* verbs);

/// What an interface's connections hold now (tests, the scale test, docs/verbs.md's figures).
struct ScaleReport {
    uint32_t connections = 0;       ///< slots in use, any state
    uint32_t qps = 0;               ///< RC QPs (a connection that two endpoints share: one)
    uint32_t shared = 0;            ///< connections both workers hold an endpoint on
    uint32_t groups = 0;            ///< completion groups (one CQ + one SRQ each)
    uint64_t cq_entries = 0;        ///< CQEs of every group's CQ together
    uint64_t srq_entries = 0;       ///< work requests every group's SRQ can hold
    uint64_t rx_buffers = 0;        ///< receive buffers registered and posted
    uint64_t rx_granted = 0;        ///< of those, granted to connections (credits + goodbye)
    uint64_t rx_bytes = 0;          ///< host memory of the receive buffers
    uint32_t max_credits_lent = 0;  ///< the largest grant of any connection now
};
/// Fill @p out for @p iface; false (and @p out untouched) when it is not a verbs interface or
/// the library was built without libibverbs.
bool scale_report(const Interface* iface, ScaleReport* out);

/// Slot geometry of the device-memory PIO window: cells per slot (an endpoint may have this
/// many device-memory sends in flight).
inline constexpr uint32_t kDmCellsPerSlot = 4;

/// The registration cache of an open verbs interface (tests, logs).
struct RegCacheReport {
    bool active = false;  ///< lookups happen (else: per-transfer registration)
    std::string reason;   ///< why it is not active ("" when it is)
    RegCacheStats stats;
};

/// Fill @p out for @p iface. False (and @p out untouched) when @p iface is not a verbs
/// interface, or the library was built without libibverbs.
bool reg_cache_report(const Interface* iface, RegCacheReport* out);

/// The page-frame reader the registration cache validates hits with, as an interface opened
/// with @p config would get it: null when SWY_VERBS_RCACHE=off or PFNs are not visible to this
/// process (@p why says which; the cache then runs disabled). swy-info shows the answer.
std::unique_ptr<PageIdentity> rcache_page_identity(const VerbsConfig& config, std::string* why);

}  // namespace swy::tl::verbs

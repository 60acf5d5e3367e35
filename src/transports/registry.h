// Transport registry: what the worker, the endpoint lane choice, the worker address and
// swy-info need to know about a transport, declared by the transport in its own folder
// (src/transports/<name>/<name>_transport.cpp) and listed once in registry.cpp. Adding a
// transport is its folder plus one line there; nothing in src/core names a transport.
//
// Everything here runs at set-up time (worker creation, endpoint creation, swy-info); the
// progress loop only calls Interface::progress() on the interfaces these entries opened.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/auth.h"
#include "common/config.h"
#include "common/cost_figures.h"
#include "common/status.h"
#include "transports/transport.h"

namespace swy::tl {

/// What a transport's open() gets from the worker. Set-up time only; references are valid
/// for the duration of the call.
struct OpenParams {
    const common::Config& config;      ///< the context's configuration (typed reads: its entry)
    const common::CostFigures& costs;  ///< calibration file or built-in figures
    uint64_t worker_uid = 0;
    uint16_t iface_index = 0;         ///< AmSource::iface of what this interface receives
    AmSink* sink = nullptr;           ///< the worker
    const common::AuthKey& auth_key;  ///< SWY_AUTH_KEY (empty: none)
    /// Whether SWY_TLS enables @p name: a transport uses it for the helpers it builds on
    /// (tls_helpers(): shm asks for "cma"). Null: everything is enabled.
    std::function<bool(const char* name)> tls_enabled;
    /// Binds freshly mapped memory to the NUMA node of the calling thread (null: leave it to
    /// the kernel; SWY_NUMA_PLACEMENT=n or no topology).
    std::function<void(void*, size_t)> place_local_memory;
    /// An interface that reaches same-host peers through memory (and must be polled on every
    /// call) opened before this one: a transport whose polling costs a system call should
    /// look less often (tcp).
    bool host_memory_lane_open = false;
};

/// What lane selection knows about a peer when it asks an entry's can_reach().
struct ReachQuery {
    uint64_t local_uid = 0;
    uint64_t remote_uid = 0;
    bool same_host = false;            ///< boot id and network namespace are equal
    const uint8_t* section = nullptr;  ///< the peer's address section of this transport
    size_t section_length = 0;
};

/// What an entry's connect() gets besides the section.
struct ConnectParams {
    uint64_t remote_uid = 0;
    const uint8_t* section = nullptr;
    size_t section_length = 0;
    bool no_pio = false;     ///< SWY_EP_FLAG_NO_PIO
    bool pio_first = false;  ///< SWY_EP_FLAG_PIO_FIRST
    /// The worker's PIO quota (SWY_PIO_MAX_EPS less SWY_PIO_RESERVED unless pio_first) still
    /// has room: a transport with a shared PIO window grants one only then.
    bool pio_quota_left = false;
};

/// One transport, as it declares itself. All function pointers but the optional ones are set.
struct TransportEntry {
    std::string_view name;  ///< as SWY_TLS names it ("shm")
    /// Every variable in config_vars starts with it ("SHM_"); the typed settings of the
    /// transport are read from those at open().
    std::string_view config_prefix;
    /// Id of this transport's section in a worker address (one byte on the wire; unique).
    uint8_t address_section = 0;
    /// Lane selection order: of the transports that can reach a peer, the highest priority
    /// one carries the endpoint (self 40 > shm 30 > verbs 20 > tcp 10).
    int priority = 0;
    /// Reaches same-host peers through shared memory and is polled on every progress call.
    bool polls_host_memory = false;
    /// This transport's SWY_* variables (name, type, default, help); part of config_table().
    std::span<const common::ConfigVar> config_vars;
    /// The calibration figures this transport's cost function reads (name, default, range,
    /// help: transports/<name>/<name>_costs.h); part of common::cost_figure_table(), so they
    /// are keys of the calibration file. Each name starts with the transport's ("tcp_").
    std::span<const common::CostFigureVar> cost_figures;

    /// Open the interface. kOk with *out null: not opened here and that is fine (no device,
    /// not built; the transport logged why); an error fails worker creation with @p why.
    Status (*open)(const OpenParams& params, std::unique_ptr<Interface>* out, std::string* why);
    /// Whether this transport can carry an endpoint to the peer @p query describes (only asked
    /// when the peer's address has this transport's section).
    bool (*can_reach)(const ReachQuery& query);
    /// Interface::connect() with the endpoint's PIO wishes applied as this transport's
    /// policy wants (shared window, per-QP inline, none).
    Status (*connect)(Interface* iface, const ConnectParams& params, std::unique_ptr<Endpoint>* out,
                      std::string* why);

    // ---- optional (null: the transport has none) ----
    /// Switch the shared key its handshakes use (swy_worker_set_auth_key).
    void (*set_auth_key)(Interface* iface, const common::AuthKey& key) = nullptr;
    /// The PIO window of @p iface, for swy_worker_query(): false if it has none.
    bool (*pio_window)(const Interface* iface, unsigned* slots, unsigned* free) = nullptr;
    /// True if @p device (a SWY_NET_DEVICES entry) names a device of this transport, so that
    /// another transport may ignore it ("rxe0:1" is an RDMA port, not a network interface).
    bool (*claims_device)(std::string_view device) = nullptr;
    /// The costs this transport's lanes report (LaneAttr::costs), from the context's
    /// @p figures: the one place its figures come from (protocols/select.h reads only those).
    LaneCosts (*lane_costs)(const common::CostFigures& figures) = nullptr;
    /// "yes", or "no: <why>" for this transport on this host (swy-info; may probe devices).
    std::string (*availability)(const common::Config& config) = nullptr;
    /// Checks this transport's settings as its open() will read them, with every rule that
    /// ties several of them together (kInvalidParam with @p why naming the variables), so
    /// that a context is never created with settings its workers would refuse.
    Status (*check_config)(const common::Config& config, std::string* why) = nullptr;
};

/// Every transport, in the order their interfaces open (self, shm, tcp, verbs).
std::span<const TransportEntry* const> transports();

/// A name SWY_TLS accepts besides the transports: a helper that opens no interface of its own
/// but that a transport uses where SWY_TLS enables it (OpenParams::tls_enabled), e.g. "cma",
/// the zero-copy of shm lanes (transports/cma/cma_helper.h).
struct HelperEntry {
    std::string_view name;  ///< as SWY_TLS names it ("cma")
    /// Checks the helper's settings (kInvalidParam with @p why when one cannot mean anything).
    Status (*check_config)(const common::Config& config, std::string* why);
};

/// Every helper.
std::span<const HelperEntry* const> tls_helpers();

/// Checks the settings of every helper, also of those SWY_TLS leaves out (a value that
/// cannot mean anything is a mistake worth stopping for); worker creation calls it first.
Status check_helper_settings(const common::Config& config, std::string* why);

/// Checks, at context creation, the settings of every helper and of every transport that
/// @p enabled says SWY_TLS enables (TransportEntry::check_config): kInvalidParam with every
/// problem in @p why.
Status check_settings(const common::Config& config,
                      const std::function<bool(std::string_view name)>& enabled, std::string* why);

/// True if SWY_TLS may name @p name: a transport or a helper.
bool tls_name_known(std::string_view name);

/// Every name SWY_TLS accepts, for messages: "self, shm, tcp, verbs, cma".
std::string tls_names_text();

/// The entry named @p name, or null.
const TransportEntry* find_transport(std::string_view name);

/// True if some transport other than @p self claims @p device (TransportEntry::claims_device).
bool device_claimed_by_other(const TransportEntry& self, std::string_view device);

}  // namespace swy::tl

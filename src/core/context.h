// Context: configuration, enabled transports, host identity. One per process, usually.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "common/config.h"
#include "common/cost_figures.h"
#include "core/address.h"
#include "core/topology.h"
#include "memtypes/registry.h"
#include "protocols/rma/mem_table.h"
#include "protocols/rma/peer_tables.h"

namespace swy::core {

class Context {
public:
    /// Build from a configuration (already parsed). kInvalidParam with @p why on bad values.
    static Status create(const common::Config& config, Context** out, std::string* why);

    const common::Config& config() const { return config_; }
    const HostIdentity& host() const { return host_; }
    ~Context();
    bool transport_enabled(const char* name) const;
    /// Cost figures for protocol selection (calibration file or defaults).
    const common::CostFigures& costs() const { return costs_; }

    /// The machine's topology, loaded on first use (nullptr if hwloc cannot load it).
    const Topology* topology();

    /// A new random worker id (never 0).
    uint64_t new_worker_uid();

    /// Memory-type plugins loaded from SWY_MEMTYPES (detection, staging copies, dma-buf).
    mem::MemTypeRegistry& memtypes() const { return *memtypes_; }

    /// Memory mapped for remote access (swy_mem_map) and the key table peers check keys
    /// against. Thread safety: any thread.
    rma::MemTable& mem_table() { return mem_table_; }
    /// Peers' key tables mapped here (direct paths of keys unpacked on same-host lanes).
    rma::PeerTables& peer_tables() { return peer_tables_; }

    /// Keeps track of workers so that destroying a context with live workers is caught.
    std::atomic<int> live_workers{0};

private:
    explicit Context(const common::Config& config) : config_(config) {}
    common::Config config_;
    HostIdentity host_;
    common::CostFigures costs_;
    std::unique_ptr<Topology> topology_;
    bool topology_tried_ = false;
    std::mutex topology_lock_;
    std::vector<std::string> tls_;
    bool tls_all_ = true;
    bool tls_exclude_ = false;
    std::unique_ptr<mem::MemTypeRegistry> memtypes_;
    rma::MemTable mem_table_;
    rma::PeerTables peer_tables_;
};

}  // namespace swy::core

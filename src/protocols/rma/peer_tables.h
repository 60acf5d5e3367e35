// Peer key tables (mem_table.h) mapped read-only in this process, one mapping per peer table
// while any key unpacked to that peer uses it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "common/status.h"
#include "protocols/rma/mem_table.h"

namespace swy::rma {

/// A peer's key table mapped read-only here.
struct PeerTable {
    PeerTable() = default;
    PeerTable(const PeerTable&) = delete;
    PeerTable& operator=(const PeerTable&) = delete;
    ~PeerTable();
    int pid = 0;
    uint64_t table_id = 0;
    const uint8_t* base = nullptr;  ///< kKeyTableBytes
    const KeySlot* slots = nullptr;
};

/// Peer key tables mapped by this context, shared by every key unpacked to that peer (one
/// mapping per peer table while any key uses it). Thread safety: any thread.
class PeerTables {
public:
    /// The key table @p table_id of process @p pid (verified by the lane), opened through
    /// /proc/<pid>/fd/<fd> and checked (magic, version, size, owner pid, table id).
    /// kUnreachable when it cannot be opened or mapped; kMalformed when it is not that table.
    Status get(int pid, int fd, uint64_t table_id, std::shared_ptr<PeerTable>* out);

private:
    std::mutex lock_;
    std::map<std::pair<int, uint64_t>, std::weak_ptr<PeerTable>> tables_;
};

}  // namespace swy::rma

// The protocol tables of an endpoint (one per memory type, and the one for non-contiguous
// data), shared by every endpoint of a worker whose lane gave the same tables. Endpoints to
// many peers over one interface (tcp, verbs) have the same lane attributes, so their tables
// are equal: built once per endpoint as before, then interned here, so that an idle endpoint
// holds one pointer instead of six tables and their reason strings (about 800 bytes each;
// issue #18, the idle cost of an endpoint).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "memtypes/memtype.h"
#include "protocols/proto_table.h"

namespace swy::core {

/// Immutable once interned: endpoints share it.
struct EndpointTables {
    proto::ProtoTable by_memtype[mem::kMemTypeCount];
    proto::ProtoTable datatype;  ///< non-contiguous host data (protocols/datatype_table.h)
};

/// The distinct table sets a worker's endpoints use. Not thread-safe (the worker serialises
/// endpoint creation).
class EndpointTableCache {
public:
    /// Table sets kept at most; beyond, a set equal to none of them stays the endpoint's own.
    static constexpr size_t kMaxSets = 16;

    /// @p tables, or an equal set interned before (compared range by range, reasons too,
    /// so an endpoint's tables read exactly as if it had built its own).
    std::shared_ptr<const EndpointTables> intern(EndpointTables&& tables);
    /// Distinct sets held (tests).
    size_t size() const { return sets_.size(); }

private:
    std::vector<std::shared_ptr<const EndpointTables>> sets_;
};

}  // namespace swy::core

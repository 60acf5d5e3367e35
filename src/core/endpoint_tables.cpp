// Interning of endpoint protocol tables (endpoint_tables.h).
#include "core/endpoint_tables.h"

namespace swy::core {

namespace {

bool same_table(const proto::ProtoTable& a, const proto::ProtoTable& b) {
    const std::vector<proto::ProtoRange>& x = a.ranges();
    const std::vector<proto::ProtoRange>& y = b.ranges();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
        if (x[i].max_size != y[i].max_size || x[i].proto != y[i].proto ||
            x[i].reason != y[i].reason) {
            return false;
        }
    }
    return true;
}

bool same_tables(const EndpointTables& a, const EndpointTables& b) {
    for (size_t t = 0; t < mem::kMemTypeCount; ++t) {
        if (!same_table(a.by_memtype[t], b.by_memtype[t])) return false;
    }
    return same_table(a.datatype, b.datatype);
}

}  // namespace

std::shared_ptr<const EndpointTables> EndpointTableCache::intern(EndpointTables&& tables) {
    for (const std::shared_ptr<const EndpointTables>& s : sets_) {
        if (same_tables(*s, tables)) return s;
    }
    auto own = std::make_shared<const EndpointTables>(std::move(tables));
    if (sets_.size() < kMaxSets) sets_.push_back(own);
    return own;
}

}  // namespace swy::core

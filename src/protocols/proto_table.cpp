#include "protocols/proto_table.h"

#include <cstdint>
#include <cstdio>

#include "protocols/protocol.h"

namespace swy::proto {

const char* proto_name(ProtoId id) { return proto_info(id).name; }

bool proto_from_name(const std::string& name, ProtoId* out) {
    for (const ProtoInfo& info : kProtoInfo) {
        if (name == info.name) {
            *out = info.id;
            return true;
        }
    }
    return false;
}

void ProtoTable::add(size_t max_size, ProtoId proto, std::string reason, bool merge) {
    if (!ranges_.empty() && max_size <= ranges_.back().max_size) return;
    if (merge && !ranges_.empty() && ranges_.back().proto == proto) {
        ranges_.back().max_size = max_size;
        return;
    }
    ranges_.push_back({max_size, proto, std::move(reason)});
}

std::string ProtoTable::print() const {
    std::string out;
    size_t lo = 0;
    for (const ProtoRange& r : ranges_) {
        char line[512];
        char hi[32];
        if (r.max_size == SIZE_MAX) {
            std::snprintf(hi, sizeof(hi), "inf");
        } else {
            std::snprintf(hi, sizeof(hi), "%zu", r.max_size);
        }
        std::snprintf(line, sizeof(line), "%zu..%s %s  %s\n", lo, hi, proto_name(r.proto),
                      r.reason.c_str());
        out += line;
        if (r.max_size == SIZE_MAX) break;
        lo = r.max_size + 1;
    }
    return out;
}

}  // namespace swy::proto

#include "protocols/protocol.h"

#include "protocols/select.h"

namespace swy::proto {

double protocol_cost(ProtoId id, const LaneCaps& lane, size_t size) {
    double best = -1;
    for (const Candidate& c : candidates(lane)) {
        if (c.proto != id || size < c.min_size || size > c.max_size) continue;
        const double t = c.at(size);
        if (best < 0 || t < best) best = t;
    }
    return best;
}

}  // namespace swy::proto

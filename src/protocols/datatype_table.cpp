#include "protocols/datatype_table.h"

#include <cstdint>
#include <string>

#include "protocols/protocol.h"

namespace swy::proto {

ProtoTable datatype_table(const ProtoTable& host, size_t single_packet_max, size_t fragment_max) {
    ProtoTable t;
    const std::string one_packet = "non-contiguous: one packet, packed into the lane's cell";
    const std::string fragments = "non-contiguous: fragments of up to " +
                                  std::to_string(fragment_max) +
                                  " bytes, each packed into its cell as it is sent";
    const std::string pipeline =
        "non-contiguous: never zero-copy from or into the user's buffer; fragments packed as "
        "they are sent (bounded by the lane's cells), unpacked at their offset";
    size_t lo = 0;
    for (const ProtoRange& r : host.ranges()) {
        if (is_rendezvous(r.proto)) {
            t.add(r.max_size, ProtoId::kRndvPipeline, pipeline);
        } else {
            // Split an eager range where one packet ends: the two halves differ in how the
            // data goes, and tests and tools read the limit from here.
            if (lo <= single_packet_max && single_packet_max < r.max_size) {
                t.add(single_packet_max, r.proto, one_packet);
            }
            const bool single = r.max_size <= single_packet_max;
            t.add(r.max_size, r.proto, single ? one_packet : fragments, /*merge=*/single);
        }
        if (r.max_size == SIZE_MAX) break;
        lo = r.max_size + 1;
    }
    return t;
}

}  // namespace swy::proto

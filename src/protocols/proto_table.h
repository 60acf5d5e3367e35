// Protocol selection table of one endpoint, operation and memory type: sorted size ranges,
// each mapped to a protocol, with the reason it won. Built once when the endpoint connects;
// a lookup is a few compares.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace swy::proto {

enum class ProtoId : uint8_t {
    kEagerShort,    ///< PIO: header + payload stored into the peer's dedicated mapped cell
    kEagerBcopy,    ///< packed through shared cells / bounce buffers, fragmented
    kRndvGetCma,    ///< RTS, receiver pulls with process_vm_readv, ATS
    kRndvPutCma,    ///< RTS, RTR, sender pushes with process_vm_writev, FIN
    kRndvPipeline,  ///< RTS, fragments copied through host staging
    kRndvGetZcopy,  ///< RTS with an rkey, receiver pulls with RDMA READ, ATS (verbs)
    kRndvPutZcopy,  ///< RTS, RTR with an rkey, sender pushes with RDMA WRITE, FIN (verbs)
};
inline constexpr size_t kProtoCount = 7;

/// Stable name used in tables, SWY_PROTO and swy-perf output ("eager_short", ...).
const char* proto_name(ProtoId id);
/// Parse a name; false if unknown.
bool proto_from_name(const std::string& name, ProtoId* out);

struct ProtoRange {
    size_t max_size;  ///< inclusive upper bound of the range
    ProtoId proto;
    std::string reason;
};

class ProtoTable {
public:
    /// Append a range [previous max + 1, max_size]. Ranges must be added in increasing order;
    /// an adjacent range with the same protocol is merged unless @p merge is false (a range
    /// that differs in how the protocol runs, e.g. one packet or fragments).
    void add(size_t max_size, ProtoId proto, std::string reason, bool merge = true);

    ProtoId lookup(size_t size) const {
        for (const ProtoRange& r : ranges_) {
            if (size <= r.max_size) return r.proto;
        }
        return ranges_.back().proto;
    }
    const std::vector<ProtoRange>& ranges() const { return ranges_; }
    bool empty() const { return ranges_.empty(); }

    /// One line per range: "<lo>..<hi> <protocol>  <reason>", hi is "inf" for the last.
    std::string print() const;

private:
    std::vector<ProtoRange> ranges_;
};

}  // namespace swy::proto

#include "transports/verbs/settings.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "common/config.h"

namespace swy::tl::verbs {

Status config_from(const common::Config& cfg, VerbsConfig* out, std::string* why) {
    VerbsConfig& vc = *out;
    vc.devices = cfg.get_list("NET_DEVICES");
    vc.seg_size = cfg.get_size("VERBS_SEG_SIZE");
    vc.rx_credits = static_cast<uint32_t>(
        std::min<uint64_t>(cfg.get_unsigned("VERBS_RX_CREDITS"), UINT32_MAX));
    vc.max_inline = static_cast<uint32_t>(std::min<size_t>(cfg.get_size("VERBS_MAX_INLINE"), 4096));
    // Clamped, not wrapped: open() rejects a depth below 16 with a clear message.
    vc.sq_depth = static_cast<uint32_t>(
        std::min<uint64_t>(cfg.get_unsigned("VERBS_SQ_DEPTH"), 1u << 20));
    vc.dm_cell_size = cfg.get_size("VERBS_DM_CELL_SIZE");
    vc.dm_slots = static_cast<uint32_t>(std::min<uint64_t>(cfg.get_unsigned("VERBS_DM_SLOTS"), 4096));
    vc.dm_reserved = static_cast<uint32_t>(std::min<uint64_t>(cfg.get_unsigned("PIO_RESERVED"), 4096));
    vc.dm_emulate = cfg.get_bool("VERBS_DM_EMULATE");
    const std::string gid = cfg.get_string("VERBS_GID_INDEX");
    if (gid != "auto") {
        char* end = nullptr;
        const long v = std::strtol(gid.c_str(), &end, 10);
        if (gid.empty() || *end != '\0' || v < 0 || v > 0xFFFF) {
            *why = "SWY_VERBS_GID_INDEX must be auto or a GID table index";
            return Status::kInvalidParam;
        }
        vc.gid_index = static_cast<int>(v);
    }
    const std::string rcache = cfg.get_string("VERBS_RCACHE");
    if (rcache != "auto" && rcache != "off") {
        *why = "SWY_VERBS_RCACHE must be auto or off";
        return Status::kInvalidParam;
    }
    vc.rcache = rcache == "auto";
    vc.rcache_limits.max_bytes = cfg.get_size("VERBS_RCACHE_MAX");
    vc.rcache_limits.max_entries = cfg.get_unsigned("VERBS_RCACHE_ENTRIES");
    return Status::kOk;
}

}  // namespace swy::tl::verbs

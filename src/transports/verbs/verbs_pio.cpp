// Verbs transport: the PIO window — the device-memory pool made at start-up, a slot of it for
// the endpoints that get one, and the lane attributes that say what each endpoint got (inline
// size, device memory, cells). The send path that uses the cells is in verbs_progress.cpp.
#include <algorithm>

#include "common/log.h"
#include "transports/verbs/verbs_connection.h"

namespace swy::tl::verbs {

using common::log_printf;
using common::LogLevel;

void VerbsInterface::setup_dm_window() {
    const size_t slot_size = config_.dm_cell_size * kDmCellsPerSlot;
    std::unique_ptr<DmDevice> device;
    if (port_.device_memory) {
        device = make_dm_device(dev_.context, pd_, port_.max_dm_size);
    } else if (config_.dm_emulate) {
        // A testing aid: the same send path, from host memory (docs/verbs.md).
        device = make_emulated_dm_device(pd_, slot_size * config_.dm_slots);
    } else {
        dm_reason_ = port_.device_memory_reason;
        return;
    }
    if (config_.dm_slots == 0) {
        dm_reason_ = "SWY_VERBS_DM_SLOTS is 0";
        return;
    }
    std::string why;
    const Status s =
        DmPool::create(std::move(device), slot_size, config_.dm_slots,
                       std::min(config_.dm_reserved, config_.dm_slots), &dm_pool_, &why);
    if (s != Status::kOk) {
        dm_reason_ = why;
        log_printf(LogLevel::kDebug, "verbs: no device-memory PIO window: %s", why.c_str());
    }
}

Status VerbsInterface::take_dm_slot(Connection* c, bool want_pio, bool pio_first,
                                    std::string* window) {
    if (dm_pool_ == nullptr) {
        *window = "inline only: " + dm_reason_;
        return Status::kOk;
    }
    if (!want_pio) {
        *window = "inline only: the endpoint asked for no PIO (SWY_EP_FLAG_NO_PIO)";
        return Status::kOk;
    }
    std::string why;
    const Status s = DmCells::create(dm_pool_.get(), pio_first, config_.dm_cell_size, &c->dm, &why);
    if (s == Status::kNoResource) {
        *window = "inline only: " + why;
        return Status::kOk;
    }
    if (s != Status::kOk) return s;
    *window = std::string(dm_pool_->emulated() ? "emulated device memory (SWY_VERBS_DM_EMULATE)"
                                               : "device memory") +
              ": slot " + std::to_string(c->dm->slot()) + " of " +
              std::to_string(dm_pool_->slots()) + ", " + std::to_string(c->dm->cells()) +
              " cells of " + std::to_string(c->dm->cell_size()) + " B";
    return Status::kOk;
}

LaneAttr VerbsInterface::lane_attr(Connection* c, size_t peer_max_message, uint32_t peer_credits,
                                   const std::string& pio_window) const {
    LaneAttr attr = attr_;
    attr.max_message = std::min<size_t>(attr_.max_message, peer_max_message);
    attr.pio_inline_max = std::min<size_t>(max_inline_, attr.max_message);
    attr.credits = peer_credits;
    attr.pio_window = pio_window;
    c->max_message = attr.max_message;
    c->pio_max_message = attr.pio_inline_max;
    if (c->dm != nullptr) {
        // Device memory: larger PIO sends, but only as many in flight as the slot has cells.
        attr.pio = true;
        attr.pio_max_message =
            std::min(std::max(c->dm->cell_size(), attr.pio_inline_max), attr.max_message);
        attr.pio_credits = std::min(c->dm->cells(), peer_credits);
        attr.pio_dm_bytes = c->dm->cells() * c->dm->cell_size();
    } else {
        attr.pio_max_message = attr.pio_inline_max;
        attr.pio_credits = peer_credits;  // inline space is per WR: the credits are the limit
        attr.pio_dm_bytes = 0;
    }
    return attr;
}

}  // namespace swy::tl::verbs

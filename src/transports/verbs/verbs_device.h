// Device and port discovery of the verbs transport: which device/port SWY_NET_DEVICES selects,
// whether it is ACTIVE, its MTU, the GID to use, and what the device supports (inline size,
// device memory, dma-buf registration), probed once at start-up.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "transports/verbs/dm_pool.h"
#include "transports/verbs/verbs_open.h"

namespace swy::tl::verbs {

/// An opened device port. Owns the ibv_context.
struct DeviceHandle {
    ibv_context* context = nullptr;
    uint8_t port = 0;
    ibv_port_attr port_attr{};
    ibv_device_attr device_attr{};
    int gid_index = 0;
    std::array<uint8_t, 16> gid{};
    bool is_global = false;  ///< route with the GRH (RoCE, or a routed IB fabric)

    DeviceHandle() = default;
    DeviceHandle(const DeviceHandle&) = delete;
    DeviceHandle& operator=(const DeviceHandle&) = delete;
    ~DeviceHandle();
};

/// Open the first selected ACTIVE port. kNotFound when there is none (@p why lists what was
/// seen), kIoError when a verbs call fails. Fills @p info with what start-up found.
Status open_device(const VerbsConfig& config, DeviceHandle* out, PortInfo* info, std::string* why);

/// Probe what needs a protection domain: the largest inline size a QP accepts (up to
/// @p want), device memory (ibv_alloc_dm) and dma-buf registration (ibv_reg_dmabuf_mr).
void probe_capabilities(ibv_context* context, ibv_pd* pd, uint32_t want_inline, PortInfo* info);

/// The device-memory operations of @p context for a DmPool (verbs_dm.cpp): ibv_alloc_dm, a
/// zero-based ibv_reg_dm_mr in @p pd, ibv_memcpy_to_dm.
std::unique_ptr<DmDevice> make_dm_device(ibv_context* context, ibv_pd* pd, size_t max_size);
/// A testing aid (SWY_VERBS_DM_EMULATE): host memory registered in @p pd standing in for
/// device memory, so the device-memory send path runs on devices without it (rxe).
std::unique_ptr<DmDevice> make_emulated_dm_device(ibv_pd* pd, size_t max_size);

/// Bytes of an ibv_mtu value (IBV_MTU_1024 -> 1024).
int mtu_bytes(ibv_mtu mtu);

}  // namespace swy::tl::verbs

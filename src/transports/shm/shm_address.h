// The shm section of a worker address: how a peer maps our receive segment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace swy::tl::shm {

struct ShmAddress {
    int32_t pid;
    int32_t memfd;
    uint64_t segment_size;
    uint64_t cma_probe_address;  ///< 8 bytes holding the worker uid, for the CMA probe
};

inline constexpr uint8_t kShmAddressVersion = 2;

inline std::vector<uint8_t> encode_shm_address(const ShmAddress& a) {
    std::vector<uint8_t> out(1 + sizeof(ShmAddress));
    out[0] = kShmAddressVersion;
    std::memcpy(out.data() + 1, &a, sizeof(a));
    return out;
}

/// Validates the length, version and ranges; false on anything unexpected.
inline bool decode_shm_address(const uint8_t* data, size_t length, ShmAddress* out) {
    if (data == nullptr || length != 1 + sizeof(ShmAddress) || data[0] != kShmAddressVersion) {
        return false;
    }
    std::memcpy(out, data + 1, sizeof(ShmAddress));
    return out->pid > 0 && out->memfd >= 0 && out->segment_size >= 4096 &&
           out->segment_size < (uint64_t{1} << 40);
}

}  // namespace swy::tl::shm

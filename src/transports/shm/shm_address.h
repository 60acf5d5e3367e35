// The shm section of a worker address: how a peer maps our receive segment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace swy::tl::shm {

/// No pointer of ours travels in an address: the CMA probe's address is in the segment
/// header, which only a process allowed to map the segment can read.
struct ShmAddress {
    int32_t pid;
    int32_t memfd;
    uint64_t segment_size;
    int32_t wake_fd;   ///< our wake-up pipe; peers open it through /proc/PID/fd like the memfd
    int32_t reserved;  ///< 0
};

inline constexpr uint8_t kShmAddressVersion = 3;

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
    return out->pid > 0 && out->memfd >= 0 && out->wake_fd >= 0 && out->reserved == 0 &&
           out->segment_size >= 4096 && out->segment_size < (uint64_t{1} << 40);
}

}  // namespace swy::tl::shm

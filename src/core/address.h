// Worker address: the opaque blob an application passes between processes so that one worker
// can create an endpoint to another. It names the worker (a random 64-bit id), the host it
// runs on (boot id + network namespace: "same host" is never guessed from a hostname), and one
// section per transport that can reach it, tagged with the id the transport declares in its
// registry entry (TransportEntry::address_section): the address format knows no transport.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace swy::core {

/// Identity of the machine (and network namespace) a worker runs in.
struct HostIdentity {
    std::array<uint8_t, 16> boot_id{};
    uint64_t netns_inode = 0;
    bool operator==(const HostIdentity&) const = default;
    /// Read this process's identity from /proc.
    static HostIdentity local();
};

struct AddressSection {
    uint8_t transport;  ///< TransportEntry::address_section of the transport it belongs to
    std::vector<uint8_t> bytes;
};

struct WorkerAddress {
    uint64_t worker_uid = 0;
    HostIdentity host;
    std::vector<AddressSection> sections;

    /// The first section with transport id @p id, or null.
    const AddressSection* find(uint8_t id) const {
        for (const auto& s : sections) {
            if (s.transport == id) return &s;
        }
        return nullptr;
    }
};

/// Serialise. The format is versioned; see address.cpp.
std::vector<uint8_t> encode_address(const WorkerAddress& address);

/// Parse and validate (magic, version, every length against @p length). kMalformed with a
/// reason in @p why (required, not null) on any inconsistency; never reads past @p length.
Status decode_address(const void* data, size_t length, WorkerAddress* out, std::string* why);

}  // namespace swy::core

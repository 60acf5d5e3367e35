// Remote keys: the byte string swy_rkey_pack() makes for a mapping, its decoder (every byte of
// a peer's string is checked), and RemoteKey, what swy_ep_rkey_unpack() makes of it on one
// endpoint.
//
// Packed layout (version 1, 64 bytes, little-endian, no padding):
//   0  u32 magic "SWYK"       4  u8 version        5  u8 flags (bit 0: allocated segment)
//   6  u16 reserved (0)       8  u32 slot          12 i32 table fd (owner's descriptor)
//   16 i32 segment fd (-1 unless allocated)         20 u32 access (SWY_ACCESS_* bits)
//   24 u64 secret (!= 0)      32 u64 base          40 u64 length (> 0; base + length fits)
//   48 u64 table id (!= 0)    56 u64 reserved (0)
// Nothing in it is trusted: the fds and the table id only say where to look; the owner's key
// table (mapped through the lane's verified pid) or the owner's progress decides.
#pragma once

#include <switchyard/rma.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/status.h"
#include "protocols/rma/rma.h"

namespace swy::core {
class Context;
class Worker;
}  // namespace swy::core

namespace swy::rma {

struct Mapping;
class DirectPath;

inline constexpr uint32_t kKeyMagic = 0x4b595753u;  // "SWYK" read as little-endian bytes
inline constexpr uint8_t kKeyVersion = 1;
inline constexpr size_t kPackedKeyBytes = 64;
/// Packed flags.
inline constexpr uint8_t kKeyFlagAllocated = 1u << 0;
inline constexpr uint8_t kKeyKnownFlags = kKeyFlagAllocated;

/// Every field of a packed key.
struct KeyFields {
    KeyIdentity id;
    uint8_t flags = 0;
    int32_t table_fd = -1;
    int32_t segment_fd = -1;
    uint64_t table_id = 0;
    bool allocated() const { return (flags & kKeyFlagAllocated) != 0; }
};

/// Write the packed form of @p fields into @p out (kPackedKeyBytes).
void encode_key(const KeyFields& fields, uint8_t* out);

/// Decode a peer's byte string. kMalformed unless it is exactly kPackedKeyBytes long with the
/// magic, version 1, known flags, zero reserved bytes, a slot inside the table, non-zero
/// secret and table id, a length > 0 whose range does not wrap, known access bits, a table fd
/// >= 0, and a segment fd >= 0 exactly when the allocated flag is set.
Status decode_key(const void* buffer, size_t length, KeyFields* out);

/// The fields of a key for mapping @p m of @p context's table.
KeyFields key_of(core::Context* context, const Mapping& m);

/// An unpacked key: what swy_rkey_h points to. Bound to the endpoint it was unpacked on.
struct RemoteKey {
    RemoteKey();
    ~RemoteKey();
    uint64_t magic = 0;  ///< kRemoteKeyMagic while alive
    /// The handle (core/handle.h, generation included) of the endpoint it was unpacked on,
    /// never a pointer: the endpoint may be closed while the key lives, and a use then must
    /// be refused, not follow a dangling pointer (or reach a new endpoint in the same slot).
    uintptr_t ep_handle = 0;
    core::Worker* worker = nullptr;  ///< the endpoint's worker (outlives its keys)
    KeyFields fields;
    /// The direct path to the owner's memory (null: none, every operation goes to the engine).
    std::unique_ptr<DirectPath> direct;

    /// True if [address, address + length) is inside the key's range and @p access granted,
    /// as the key says (the owner checks again).
    bool grants(uint64_t address, uint64_t length, uint32_t access) const;
};
inline constexpr uint64_t kRemoteKeyMagic = 0x535759524b455921ull;  // "SWYRKEY!"

}  // namespace swy::rma

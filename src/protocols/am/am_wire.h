// Wire formats of user active messages (switchyard/am.h): kAmUserEager and kAmUserRts
// (protocols/wire.h). Plain structs with explicit sizes, static_asserted; the decoders in
// am_recv.cpp check every length against the packet before reading past a header.
#pragma once

#include <cstddef>
#include <cstdint>

#include "protocols/wire.h"

namespace swy::proto::am {

/// Version of the formats below (first byte of each header): a peer speaking another one is
/// dropped, not misread.
inline constexpr uint8_t kAmWireVersion = 1;

/// kAmUserEager: AmEagerHeader, then header_length bytes of user header, then the data (the
/// rest of the packet).
struct AmEagerHeader {
    uint8_t version;         ///< kAmWireVersion
    uint8_t reserved;        ///< 0
    uint16_t am_id;          ///< the handler's id
    uint32_t header_length;  ///< user header bytes after this struct (<= SWY_AM_MAX_HEADER)
};
static_assert(sizeof(AmEagerHeader) == 8);

/// kAmUserRts: AmRtsHeader, then exactly header_length bytes of user header. The rendezvous
/// part is the tag RTS (its tag unused, 0): the same protocols move the data.
struct AmRtsHeader {
    RtsHeader rts;
    uint8_t version;  ///< kAmWireVersion
    uint8_t reserved;
    uint16_t am_id;
    uint32_t header_length;
};
static_assert(sizeof(AmRtsHeader) == 56);
static_assert(offsetof(AmRtsHeader, version) == sizeof(RtsHeader));

}  // namespace swy::proto::am

#include "protocols/rma/rkey.h"

#include <cstring>

#include "core/context.h"
#include "protocols/rma/direct.h"
#include "protocols/rma/mem_table.h"

namespace swy::rma {

namespace {

template <typename T>
void put_le(uint8_t* out, T value) {
    for (size_t i = 0; i < sizeof(T); ++i) {
        out[i] = static_cast<uint8_t>(static_cast<uint64_t>(value) >> (8 * i));
    }
}

template <typename T>
T get_le(const uint8_t* in) {
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
        v |= uint64_t{in[i]} << (8 * i);
    return static_cast<T>(v);
}

// Field offsets of the packed layout (rkey.h).
constexpr size_t kOffMagic = 0, kOffVersion = 4, kOffFlags = 5, kOffReserved16 = 6, kOffSlot = 8,
                 kOffTableFd = 12, kOffSegmentFd = 16, kOffAccess = 20, kOffSecret = 24,
                 kOffBase = 32, kOffLength = 40, kOffTableId = 48, kOffReserved64 = 56;
static_assert(kOffReserved64 + 8 == kPackedKeyBytes);

}  // namespace

void encode_key(const KeyFields& f, uint8_t* out) {
    put_le<uint32_t>(out + kOffMagic, kKeyMagic);
    out[kOffVersion] = kKeyVersion;
    out[kOffFlags] = f.flags;
    put_le<uint16_t>(out + kOffReserved16, 0);
    put_le<uint32_t>(out + kOffSlot, f.id.slot);
    put_le<int32_t>(out + kOffTableFd, f.table_fd);
    put_le<int32_t>(out + kOffSegmentFd, f.segment_fd);
    put_le<uint32_t>(out + kOffAccess, f.id.access);
    put_le<uint64_t>(out + kOffSecret, f.id.secret);
    put_le<uint64_t>(out + kOffBase, f.id.base);
    put_le<uint64_t>(out + kOffLength, f.id.length);
    put_le<uint64_t>(out + kOffTableId, f.table_id);
    put_le<uint64_t>(out + kOffReserved64, 0);
}

Status decode_key(const void* buffer, size_t length, KeyFields* out) {
    if (buffer == nullptr || length != kPackedKeyBytes) return Status::kMalformed;
    const auto* in = static_cast<const uint8_t*>(buffer);
    KeyFields f;
    f.flags = in[kOffFlags];
    f.id.slot = get_le<uint32_t>(in + kOffSlot);
    f.table_fd = get_le<int32_t>(in + kOffTableFd);
    f.segment_fd = get_le<int32_t>(in + kOffSegmentFd);
    f.id.access = get_le<uint32_t>(in + kOffAccess);
    f.id.secret = get_le<uint64_t>(in + kOffSecret);
    f.id.base = get_le<uint64_t>(in + kOffBase);
    f.id.length = get_le<uint64_t>(in + kOffLength);
    f.table_id = get_le<uint64_t>(in + kOffTableId);
    const bool header_ok = get_le<uint32_t>(in + kOffMagic) == kKeyMagic &&
                           in[kOffVersion] == kKeyVersion && (f.flags & ~kKeyKnownFlags) == 0 &&
                           get_le<uint16_t>(in + kOffReserved16) == 0 &&
                           get_le<uint64_t>(in + kOffReserved64) == 0;
    const bool range_ok = f.id.length != 0 && f.id.base + f.id.length > f.id.base;
    const bool ids_ok = f.id.slot < kKeyTableSlots && f.id.secret != 0 && f.table_id != 0 &&
                        f.table_fd >= 0 && (f.id.access & ~kAccessAll) == 0 &&
                        (f.allocated() ? f.segment_fd >= 0 : f.segment_fd == -1);
    if (!header_ok || !range_ok || !ids_ok) return Status::kMalformed;
    *out = f;
    return Status::kOk;
}

KeyFields key_of(core::Context* context, const Mapping& m) {
    KeyFields f;
    f.id.slot = m.slot;
    f.id.secret = m.secret;
    f.id.base = reinterpret_cast<uint64_t>(m.address);
    f.id.length = m.length;
    f.id.access = m.access;
    f.flags = m.allocated ? kKeyFlagAllocated : 0;
    f.table_fd = context->mem_table().table_fd();
    f.segment_fd = m.allocated ? m.memfd.get() : -1;
    f.table_id = context->mem_table().table_id();
    return f;
}

RemoteKey::RemoteKey() = default;
RemoteKey::~RemoteKey() = default;

bool RemoteKey::grants(uint64_t address, uint64_t length, uint32_t access) const {
    SlotView view{fields.id.base, fields.id.length, fields.id.access, -1};
    return slot_grants(view, address, length, access);
}

}  // namespace swy::rma

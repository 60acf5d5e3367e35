#include "core/address.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstring>

namespace swy::core {
namespace {

constexpr uint32_t kAddressMagic = 0x41595753;  // "SWYA"
constexpr uint8_t kAddressVersion = 1;
constexpr size_t kMaxSections = 16;

struct WireHeader {
    uint32_t magic;
    uint8_t version;
    uint8_t section_count;
    uint16_t reserved;
    uint64_t worker_uid;
    uint8_t boot_id[16];
    uint64_t netns_inode;
};
static_assert(sizeof(WireHeader) == 40);

struct WireSection {
    uint8_t transport;
    uint8_t reserved;
    uint16_t length;
};
static_assert(sizeof(WireSection) == 4);

}  // namespace

HostIdentity HostIdentity::local() {
    HostIdentity id;
    if (FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
        char text[64] = {};
        if (std::fgets(text, sizeof(text), f) != nullptr) {
            size_t n = 0;
            for (const char* p = text; *p != '\0' && n < 32; ++p) {
                int v = -1;
                if (*p >= '0' && *p <= '9') v = *p - '0';
                if (*p >= 'a' && *p <= 'f') v = *p - 'a' + 10;
                if (v < 0) continue;
                id.boot_id[n / 2] =
                    static_cast<uint8_t>(id.boot_id[n / 2] | (v << (n % 2 ? 0 : 4)));
                ++n;
            }
        }
        std::fclose(f);
    }
    struct stat st {};
    if (stat("/proc/self/ns/net", &st) == 0) id.netns_inode = st.st_ino;
    return id;
}

std::vector<uint8_t> encode_address(const WorkerAddress& address) {
    WireHeader h{};
    h.magic = kAddressMagic;
    h.version = kAddressVersion;
    h.section_count = static_cast<uint8_t>(address.sections.size());
    h.worker_uid = address.worker_uid;
    std::memcpy(h.boot_id, address.host.boot_id.data(), 16);
    h.netns_inode = address.host.netns_inode;
    std::vector<uint8_t> out(sizeof(h));
    std::memcpy(out.data(), &h, sizeof(h));
    for (const auto& s : address.sections) {
        WireSection ws{s.transport, 0, static_cast<uint16_t>(s.bytes.size())};
        size_t at = out.size();
        out.resize(at + sizeof(ws) + s.bytes.size());
        std::memcpy(out.data() + at, &ws, sizeof(ws));
        if (!s.bytes.empty())
            std::memcpy(out.data() + at + sizeof(ws), s.bytes.data(), s.bytes.size());
    }
    return out;
}

Status decode_address(const void* data, size_t length, WorkerAddress* out, std::string* why) {
    const auto* p = static_cast<const uint8_t*>(data);
    WireHeader h{};
    if (p == nullptr || length < sizeof(h)) {
        *why = "address shorter than its header";
        return Status::kMalformed;
    }
    std::memcpy(&h, p, sizeof(h));
    if (h.magic != kAddressMagic) {
        *why = "not a Switchyard worker address (bad magic)";
        return Status::kMalformed;
    }
    if (h.version != kAddressVersion) {
        *why = "unsupported worker address version " + std::to_string(h.version);
        return Status::kMalformed;
    }
    if (h.section_count > kMaxSections || h.worker_uid == 0) {
        *why = "worker address has an invalid section count or worker id";
        return Status::kMalformed;
    }
    WorkerAddress a;
    a.worker_uid = h.worker_uid;
    std::memcpy(a.host.boot_id.data(), h.boot_id, 16);
    a.host.netns_inode = h.netns_inode;
    size_t at = sizeof(h);
    for (unsigned i = 0; i < h.section_count; ++i) {
        WireSection ws{};
        if (length - at < sizeof(ws)) {
            *why = "worker address truncated inside a section header";
            return Status::kMalformed;
        }
        std::memcpy(&ws, p + at, sizeof(ws));
        at += sizeof(ws);
        if (length - at < ws.length) {
            *why = "worker address section longer than the address";
            return Status::kMalformed;
        }
        AddressSection s;
        s.transport = ws.transport;
        s.bytes.assign(p + at, p + at + ws.length);
        at += ws.length;
        a.sections.push_back(std::move(s));
    }
    if (at != length) {
        *why = "worker address has trailing bytes";
        return Status::kMalformed;
    }
    *out = std::move(a);
    return Status::kOk;
}

}  // namespace swy::core

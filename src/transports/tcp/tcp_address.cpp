// Encoding and validating the tcp section of a worker address.
#include <cstring>

#include "transports/tcp/tcp_wire.h"

namespace swy::tl::tcp {

namespace {
size_t ip_bytes(uint8_t family) { return family == 4 ? 4 : 16; }
}  // namespace

std::vector<uint8_t> encode_tcp_address(const std::vector<TcpAddressEntry>& entries) {
    const size_t n = entries.size() < kMaxTcpAddresses ? entries.size() : kMaxTcpAddresses;
    std::vector<uint8_t> out;
    out.reserve(2 + n * 19);
    out.push_back(kTcpAddressVersion);
    out.push_back(static_cast<uint8_t>(n));
    for (size_t i = 0; i < n; ++i) {
        const TcpAddressEntry& e = entries[i];
        out.push_back(e.family);
        out.push_back(static_cast<uint8_t>(e.port >> 8));
        out.push_back(static_cast<uint8_t>(e.port & 0xFF));
        out.insert(out.end(), e.ip, e.ip + ip_bytes(e.family));
    }
    return out;
}

bool decode_tcp_address(const uint8_t* data, size_t length, std::vector<TcpAddressEntry>* out) {
    out->clear();
    if (data == nullptr || length < 2 || data[0] != kTcpAddressVersion) return false;
    const size_t count = data[1];
    if (count == 0 || count > kMaxTcpAddresses) return false;
    size_t pos = 2;
    std::vector<TcpAddressEntry> entries;
    entries.reserve(count);
    for (size_t i = 0; i < count; ++i) {
        if (length - pos < 3) return false;  // pos <= length holds throughout
        TcpAddressEntry e;
        e.family = data[pos];
        if (e.family != 4 && e.family != 6) return false;
        e.port = static_cast<uint16_t>((data[pos + 1] << 8) | data[pos + 2]);
        if (e.port == 0) return false;
        pos += 3;
        const size_t n = ip_bytes(e.family);
        if (length - pos < n) return false;
        std::memcpy(e.ip, data + pos, n);
        pos += n;
        entries.push_back(e);
    }
    if (pos != length) return false;  // trailing bytes: not something we wrote
    *out = std::move(entries);
    return true;
}

bool is_loopback(const TcpAddressEntry& e) {
    if (e.family == 4) return e.ip[0] == 127;
    static const uint8_t kV6Loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    static const uint8_t kV4Mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    if (std::memcmp(e.ip, kV6Loopback, 16) == 0) return true;
    return std::memcmp(e.ip, kV4Mapped, 12) == 0 && e.ip[12] == 127;
}

}  // namespace swy::tl::tcp

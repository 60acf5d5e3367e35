// Fuzz target "address": the worker-address decoder (core/address.cpp) and, through it, each
// transport's address-section decoder (tcp_address.cpp, shm_address.h).
//
// The first input byte picks what the rest is fed to: 0 a whole worker address (whose
// sections are then decoded by their transport's decoder, as swy_ep_create does), 1 a bare
// tcp section, 2 a bare shm section. Whatever decodes must re-encode to the very same bytes:
// a decoder that accepts something its encoder cannot produce has let junk through.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/address.h"
#include "transports/shm/shm_address.h"
#include "transports/tcp/tcp_wire.h"

#include "targets.h"
#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"

namespace {

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "fuzz_address: %s\n", what);
    std::abort();
}

void check_tcp(const uint8_t* data, size_t size) {
    std::vector<swy::tl::tcp::TcpAddressEntry> entries;
    if (!swy::tl::tcp::decode_tcp_address(data, size, &entries)) {
        if (!entries.empty()) fail("tcp section rejected but entries left behind");
        return;
    }
    if (entries.empty()) fail("tcp section accepted with no entry");
    for (const auto& e : entries)
        (void)swy::tl::tcp::is_loopback(e);
    std::vector<uint8_t> again = swy::tl::tcp::encode_tcp_address(entries);
    if (again.size() != size || std::memcmp(again.data(), data, size) != 0) {
        fail("tcp section does not re-encode to its own bytes");
    }
}

void check_shm(const uint8_t* data, size_t size) {
    swy::tl::shm::ShmAddress a{};
    if (!swy::tl::shm::decode_shm_address(data, size, &a)) return;
    std::vector<uint8_t> again = swy::tl::shm::encode_shm_address(a);
    if (again.size() != size || std::memcmp(again.data(), data, size) != 0) {
        fail("shm section does not re-encode to its own bytes");
    }
}

void check_address(const uint8_t* data, size_t size) {
    using namespace swy::core;
    WorkerAddress a;
    std::string why;
    if (decode_address(data, size, &a, &why) != swy::Status::kOk) {
        if (why.empty()) fail("address rejected without a reason");
        return;
    }
    // Reserved fields are not checked on decode (room for later versions) and encode as 0:
    // compare with them cleared. Header: 40 bytes, reserved at 6..7; section headers: 4
    // bytes {transport, reserved, uint16 length}.
    std::vector<uint8_t> expected(data, data + size);
    expected[6] = expected[7] = 0;
    size_t at = 40;
    for (const AddressSection& s : a.sections) {
        expected[at + 1] = 0;
        at += 4 + s.bytes.size();
    }
    std::vector<uint8_t> again = encode_address(a);
    if (again != expected) fail("address does not re-encode to its own bytes");
    for (const AddressSection& s : a.sections) {
        if (s.transport == swy::tl::tcp::kAddressSection) check_tcp(s.bytes.data(), s.bytes.size());
        if (s.transport == swy::tl::shm::kAddressSection) check_shm(s.bytes.data(), s.bytes.size());
    }
}

}  // namespace

int swy::fuzz::fuzz_address(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    // Copy to an exact-size heap buffer: a read one byte past the input is then an ASan error.
    std::vector<uint8_t> input(data + 1, data + size);
    const uint8_t* p = input.empty() ? nullptr : input.data();
    switch (data[0] % 3) {
        case 0: check_address(p, input.size()); break;
        case 1: check_tcp(p, input.size()); break;
        case 2: check_shm(p, input.size()); break;
    }
    return 0;
}

// Seeds of the "rkey" target: packed keys made by the library's own encoder (registered and
// allocated memory), and boundary cases (truncated, empty range, top of the address space).
#include "protocols/rma/rkey.h"
#include "targets.h"

namespace swy::fuzz {

std::vector<std::vector<uint8_t>> rkey_seeds() {
    auto packed = [](const rma::KeyFields& f) {
        std::vector<uint8_t> out(rma::kPackedKeyBytes);
        rma::encode_key(f, out.data());
        return out;
    };
    rma::KeyFields reg;
    reg.id = {3, 0x1122334455667788ull, 0x7f0000000000ull, 4096, rma::kAccessAll};
    reg.table_fd = 5;
    reg.table_id = 0x0badc0ffee0ddf00ull;
    rma::KeyFields alloc = reg;
    alloc.flags = rma::kKeyFlagAllocated;
    alloc.segment_fd = 7;
    rma::KeyFields top = reg;
    top.id.base = ~uint64_t{0} - 4096;
    top.id.length = 4096;
    std::vector<uint8_t> truncated = packed(reg);
    truncated.pop_back();
    rma::KeyFields self_table = reg;
    self_table.table_fd = 3;  // an fd number this process surely has open
    return {packed(reg), packed(alloc), packed(top), truncated, packed(self_table), {}};
}

}  // namespace swy::fuzz

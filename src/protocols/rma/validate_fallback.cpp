// Stand-in for validate_access until the key table (mem_table.cpp) is in this tree: no key is
// valid. Weak, so the real definition replaces it; delete this file once it is merged.
#include "protocols/rma/rma.h"

namespace swy::rma {

__attribute__((weak)) Status validate_access(core::Context*, uint32_t, uint64_t, uint64_t, size_t,
                                             uint32_t, uint8_t** local) {
    *local = nullptr;
    return Status::kAccessDenied;
}

}  // namespace swy::rma

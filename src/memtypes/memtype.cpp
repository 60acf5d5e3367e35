#include "memtypes/memtype.h"

namespace swy::mem {

const char* memtype_name(MemType type) {
    switch (type) {
        case MemType::kUnknown: return "unknown";
        case MemType::kHost: return "host";
        case MemType::kSimdev: return "simdev";
        case MemType::kDmabuf: return "dmabuf";
        case MemType::kCuda: return "cuda";
    }
    return "?";
}

}  // namespace swy::mem

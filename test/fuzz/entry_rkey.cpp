// libFuzzer entry point of the "rkey" target (see targets.h).
#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return swy::fuzz::fuzz_rkey(data, size);
}

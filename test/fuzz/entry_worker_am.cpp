// libFuzzer entry point of the "worker_am" target (see targets.h).
#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return swy::fuzz::fuzz_worker_am(data, size);
}

// libFuzzer entry point of the "tcp_stream" target (see targets.h).
#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return swy::fuzz::fuzz_tcp_stream(data, size);
}

// libFuzzer entry point of the "conn_wire" target (see targets.h).
#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return swy::fuzz::fuzz_conn_wire(data, size);
}

// The fuzz targets, as plain functions: libFuzzer reaches each through its own entry_<name>.cpp
// (LLVMFuzzerTestOneInput), the replay test (replay_test.cpp) calls them all from one gtest
// binary, and seeds.cpp makes their starting inputs from the real encoders.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace swy::fuzz {

/// Worker address and transport address sections (fuzz_address.cpp).
int fuzz_address(const uint8_t* data, size_t size);
/// tcp transport receive path on a real loopback connection (fuzz_tcp_stream.cpp).
int fuzz_tcp_stream(const uint8_t* data, size_t size);
/// Worker decoding of every active message id (fuzz_worker_am.cpp).
int fuzz_worker_am(const uint8_t* data, size_t size);
/// The listener handshake's frames, as client and as (keyed) listener (fuzz_conn_wire.cpp).
int fuzz_conn_wire(const uint8_t* data, size_t size);

/// Remote-key decoder and swy_ep_rkey_unpack on a self endpoint (fuzz_rkey.cpp).
int fuzz_rkey(const uint8_t* data, size_t size);
/// Seeds of the "rkey" target (fuzz_rkey_seeds.cpp).
std::vector<std::vector<uint8_t>> rkey_seeds();

/// Valid (and a few boundary) inputs for @p target ("address", "tcp_stream", "worker_am",
/// "conn_wire"), built with the encoders the library itself uses; empty for an unknown target.
std::vector<std::vector<uint8_t>> seeds(std::string_view target);

}  // namespace swy::fuzz

// Fuzz target "rkey": the remote-key decoder (protocols/rma/rkey.cpp) and swy_ep_rkey_unpack
// on a real endpoint (self lane), which sets up the key's direct path from a peer's bytes.
//
// Whatever decodes must re-encode to the very same bytes (a decoder that accepts what its
// encoder cannot produce has let junk through), swy_ep_rkey_unpack must agree with the
// decoder, and a key the fuzzer made up must never reach memory: swy_rkey_ptr on it is
// refused (the fuzzer cannot know the secret of the one live mapping).
#include <switchyard/rma.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "protocols/rma/rkey.h"
#include "targets.h"

namespace {

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "fuzz_rkey: %s\n", what);
    std::abort();
}

/// A context, worker and endpoint to itself over the self lane, with one live mapping, made
/// once per process.
struct Env {
    swy_context_h ctx = nullptr;
    swy_worker_h worker = nullptr;
    swy_ep_h ep = nullptr;
    swy_mem_h mem = nullptr;
    std::vector<uint8_t> key;

    Env() {
        swy_config_h cfg = nullptr;
        if (swy_config_read(&cfg) != SWY_OK) fail("config");
        swy_config_set(cfg, "TLS", "self");
        swy_context_params_t cp{};
        cp.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG;
        cp.config = cfg;
        if (swy_context_create(&cp, &ctx) != SWY_OK) fail("context");
        swy_config_release(cfg);
        swy_worker_params_t wp{};
        if (swy_worker_create(ctx, &wp, &worker) != SWY_OK) fail("worker");
        void* addr = nullptr;
        size_t len = 0;
        if (swy_worker_get_address(worker, &addr, &len) != SWY_OK) fail("address");
        swy_ep_params_t ep_params{};
        ep_params.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
        ep_params.remote_address = addr;
        ep_params.remote_address_length = len;
        if (swy_ep_create(worker, &ep_params, &ep) != SWY_OK) fail("endpoint");
        swy_worker_release_address(worker, addr);
        swy_mem_map_params_t mp{};
        mp.field_mask = SWY_MEM_MAP_FIELD_LENGTH | SWY_MEM_MAP_FIELD_FLAGS;
        mp.length = 4096;
        mp.flags = SWY_MEM_MAP_ALLOCATE;
        if (swy_mem_map(ctx, &mp, &mem) != SWY_OK) fail("mem_map");
        void* buf = nullptr;
        if (swy_rkey_pack(ctx, mem, &buf, &len) != SWY_OK) fail("rkey_pack");
        key.assign(static_cast<uint8_t*>(buf), static_cast<uint8_t*>(buf) + len);
        swy_rkey_buffer_release(buf);
    }
};

}  // namespace

int swy::fuzz::fuzz_rkey(const uint8_t* data, size_t size) {
    // Copy to an exact-size heap buffer: a read one byte past the input is then an ASan error.
    std::vector<uint8_t> input(data, data + size);
    const uint8_t* p = input.empty() ? nullptr : input.data();
    rma::KeyFields fields;
    const bool decoded = rma::decode_key(p, input.size(), &fields) == Status::kOk;
    if (decoded) {
        uint8_t again[rma::kPackedKeyBytes];
        rma::encode_key(fields, again);
        if (input.size() != sizeof(again) || std::memcmp(again, p, sizeof(again)) != 0) {
            fail("key does not re-encode to its own bytes");
        }
    }
    static Env env;
    if (p == nullptr) return 0;  // swy_ep_rkey_unpack refuses a NULL buffer as a bad argument
    swy_rkey_h key = nullptr;
    const swy_status_t st = swy_ep_rkey_unpack(env.ep, p, input.size(), &key);
    if ((st == SWY_OK) != decoded) fail("swy_ep_rkey_unpack disagrees with the decoder");
    if (st != SWY_OK) {
        if (st != SWY_ERR_MALFORMED) fail("swy_ep_rkey_unpack: neither OK nor MALFORMED");
        return 0;
    }
    void* ptr = nullptr;
    const swy_status_t ps = swy_rkey_ptr(key, fields.id.base, &ptr);
    if (ps == SWY_OK && input != env.key) fail("a made-up key reached memory");
    swy_rkey_destroy(key);
    return 0;
}

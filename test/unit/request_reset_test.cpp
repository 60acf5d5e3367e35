// RequestPool::reset() clears a reused request with one memset up to the fields a reuse keeps
// (handle generation, index, generation, worker, am_bytes) and then sets the defaults that
// are not zero bits. A field added with a non-zero default, or below the kept ones, would
// leave a reused request different from a new one: this compares the two byte for byte.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <new>

#include "core/request.h"

namespace swy::core {
namespace {

/// Bytes of a Request before its kept fields (what reset() must restore).
size_t cleared_bytes(const Request& r) {
    return static_cast<size_t>(reinterpret_cast<const unsigned char*>(&r.handle_generation) -
                               reinterpret_cast<const unsigned char*>(&r));
}

TEST(RequestReset, ReusedRequestEqualsANewOne) {
    // A new request built on zeroed memory: its padding is zero, its fields their defaults.
    alignas(Request) unsigned char fresh_memory[sizeof(Request)];
    std::memset(fresh_memory, 0, sizeof fresh_memory);
    auto* fresh = new (fresh_memory) Request;

    RequestPool pool;
    Request* r = pool.get(nullptr);
    const uint32_t index = r->index;
    r->handle_generation = 7;
    r->am_bytes.assign(16, 0x5a);
    // Scribble over every byte a use may have changed, then give it back and take it again
    // (the pool is LIFO: the same slot comes back).
    std::memset(static_cast<void*>(r), 0xab, cleared_bytes(*r));
    r->view = nullptr;  // put() acts on these two: no view, not in caller memory
    r->external = nullptr;
    pool.put(r);
    Request* again = pool.get(nullptr);
    ASSERT_EQ(again, r);

    ASSERT_EQ(cleared_bytes(*again), cleared_bytes(*fresh));
    ASSERT_EQ(cleared_bytes(*fresh), kRequestClearedBytes);
    EXPECT_EQ(std::memcmp(again, fresh, cleared_bytes(*fresh)), 0)
        << "a field before handle_generation has a default reset() does not set";
    // The kept fields are kept (the generation is new: never the one of the last use).
    EXPECT_EQ(again->index, index);
    EXPECT_EQ(again->handle_generation, 7);
    EXPECT_TRUE(again->am_bytes.empty());
    EXPECT_GE(again->am_bytes.capacity(), 16u);
    EXPECT_EQ(again->status, Status::kInProgress);
    EXPECT_EQ(again->memtype, 1);
    EXPECT_TRUE(again->cpu_buffer);
    EXPECT_TRUE(again->remote_done);
    pool.put(again);
    fresh->~Request();
}

}  // namespace
}  // namespace swy::core

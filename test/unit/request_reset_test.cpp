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
    r->cold_clean = false;  // what every use but the eager fast path's receive leaves
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

// A receive posted and completed on the fast path (Request::cold_clean) writes only the hot
// part: reset() then clears only that, and the request still equals a new one. One whose
// last use did not say so gets its cold part cleared too, whatever its hot part says.
TEST(RequestReset, ColdPartClearedUnlessTheLastUseLeftItClean) {
    alignas(Request) unsigned char fresh_memory[sizeof(Request)];
    std::memset(fresh_memory, 0, sizeof fresh_memory);
    auto* fresh = new (fresh_memory) Request;
    ASSERT_EQ(kRequestHotBytes % 16, 0u);
    ASSERT_LT(kRequestHotBytes, kRequestClearedBytes);

    RequestPool pool;
    Request* r = pool.get(nullptr);
    // The fast path's use: hot bytes only.
    std::memset(static_cast<void*>(r), 0xcd, kRequestHotBytes);
    r->view = nullptr;
    r->external = nullptr;
    r->cold_clean = true;
    pool.put(r);
    Request* again = pool.get(nullptr);
    ASSERT_EQ(again, r);
    EXPECT_EQ(std::memcmp(again, fresh, kRequestClearedBytes), 0)
        << "a hot byte not cleared (or a fast-path field placed past kRequestHotBytes)";
    EXPECT_FALSE(again->cold_clean);

    // Any other use: cold bytes written, not marked clean.
    auto* bytes = reinterpret_cast<unsigned char*>(again);
    std::memset(bytes + kRequestHotBytes, 0xef, kRequestClearedBytes - kRequestHotBytes);
    again->posted_alone = true;  // posted alone, then taken by another path (rendezvous)
    pool.put(again);
    Request* third = pool.get(nullptr);
    ASSERT_EQ(third, r);
    EXPECT_EQ(std::memcmp(third, fresh, kRequestClearedBytes), 0)
        << "the cold part of a request not marked clean was not cleared";
    pool.put(third);
    fresh->~Request();
}

}  // namespace
}  // namespace swy::core

// The CMA zero-copy lane (transports/cma/cma_lane.h): it reaches only the pid a transport
// verified, needs no registration, and copies in the call.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "transports/cma/cma_lane.h"

namespace swy::tl::cma {
namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 12));
    return v;
}

RemoteKey key_of(const void* p) { return {reinterpret_cast<uint64_t>(p), 0}; }

TEST(CmaLane, ALaneWithoutAVerifiedPidReachesNobody) {
    CmaLane lane;
    std::vector<uint8_t> secret = pattern(64, 1), out(64, 0);
    EXPECT_EQ(lane.caps(), 0u) << "no zero-copy capability without a verified process";
    EXPECT_EQ(lane.get_zcopy(out.data(), nullptr, key_of(secret.data()), out.size(), {}),
              Status::kUnsupported);
    EXPECT_EQ(lane.put_zcopy(secret.data(), nullptr, key_of(out.data()), out.size(), {}),
              Status::kUnsupported);
    EXPECT_EQ(out, std::vector<uint8_t>(64, 0)) << "a lane that reaches nobody copied something";
    lane.set(CmaMode::kForce, 0);  // a transport that could not verify its peer
    EXPECT_EQ(lane.caps(), 0u);
    EXPECT_EQ(lane.get_zcopy(out.data(), nullptr, key_of(secret.data()), out.size(), {}),
              Status::kUnsupported);
}

TEST(CmaLane, TheKeyOnTheWireCannotChooseTheProcess) {
    // A remote key's `key` half is what a peer sends: the lane ignores it and reaches only the
    // pid it was given. Here that is this process, so a key naming another pid still reads
    // our own buffer.
    CmaLane lane;
    lane.set(CmaMode::kForce, getpid());
    std::vector<uint8_t> src = pattern(4096, 3), out(4096, 0);
    const RemoteKey forged{reinterpret_cast<uint64_t>(src.data()), 1};  // "pid 1" on the wire
    ASSERT_EQ(lane.get_zcopy(out.data(), nullptr, forged, out.size(), {}), Status::kOk);
    EXPECT_EQ(out, src);
}

TEST(CmaLane, ReportsGetAndPutWithoutKeysAndCopiesInTheCall) {
    CmaLane lane;
    lane.set(CmaMode::kForce, getpid());
    EXPECT_EQ(lane.caps(), cap::kGetZcopy | cap::kPutZcopy)
        << "CMA needs no registration and hands out no keys";
    EXPECT_EQ(lane.max_zcopy(), size_t{4} << 20) << "4 MiB per call keeps progress calls short";
    std::string why;
    std::unique_ptr<MemoryRegistration> reg;
    EXPECT_EQ(lane.register_memory(nullptr, 1, kZcopyLocal, &reg, &why), Status::kUnsupported);
    // A transfer larger than one call, moved the way the protocols do: max_zcopy() at a time,
    // each call done when it returns (kOk, never kInProgress).
    const size_t total = (size_t{9} << 20) + 123;
    std::vector<uint8_t> src = pattern(total, 5), dst(total, 0), back(total, 0);
    size_t calls = 0;
    for (size_t done = 0; done < total;) {
        const size_t n = std::min(lane.max_zcopy(), total - done);
        ASSERT_EQ(lane.get_zcopy(dst.data() + done, nullptr, key_of(src.data() + done), n, {}),
                  Status::kOk);
        done += n;
        ++calls;
    }
    EXPECT_EQ(calls, 3u);
    EXPECT_EQ(dst, src);
    for (size_t done = 0; done < total;) {
        const size_t n = std::min(lane.max_zcopy(), total - done);
        ASSERT_EQ(lane.put_zcopy(src.data() + done, nullptr, key_of(back.data() + done), n, {}),
                  Status::kOk);
        done += n;
    }
    EXPECT_EQ(back, src);
}

TEST(CmaLane, DisabledOrRefusedCmaIsUnsupportedNotAnError) {
    std::vector<uint8_t> src = pattern(64, 9), out(64, 0);
    for (CmaMode mode : {CmaMode::kOff, CmaMode::kSimulateEperm}) {
        CmaLane lane;
        lane.set(mode, getpid());
        EXPECT_EQ(lane.get_zcopy(out.data(), nullptr, key_of(src.data()), out.size(), {}),
                  Status::kUnsupported);
        EXPECT_EQ(lane.put_zcopy(src.data(), nullptr, key_of(out.data()), out.size(), {}),
                  Status::kUnsupported);
    }
    EXPECT_EQ(out, std::vector<uint8_t>(64, 0));
}

TEST(CmaLane, AnUnmappedRemoteRangeIsAnIoError) {
    CmaLane lane;
    lane.set(CmaMode::kForce, getpid());
    std::vector<uint8_t> out(64, 0);
    EXPECT_EQ(lane.get_zcopy(out.data(), nullptr, {8, 0}, out.size(), {}), Status::kIoError);
}

// A split GET skips its probe page on a proven lane (protocols/rndv/get.cpp): only a copy
// that succeeded with the pid the lane reaches now proves it; refusals and bad ranges do not,
// and aiming the lane at another process forgets it.
TEST(CmaLane, IsProvenOnlyByASuccessfulCopyWithItsCurrentPid) {
    std::vector<uint8_t> src = pattern(64, 3), out(64, 0);
    CmaLane lane;
    EXPECT_FALSE(lane.proven());
    lane.set(CmaMode::kSimulateEperm, getpid());
    EXPECT_EQ(lane.get_zcopy(out.data(), nullptr, key_of(src.data()), out.size(), {}),
              Status::kUnsupported);
    EXPECT_FALSE(lane.proven());
    lane.set(CmaMode::kForce, getpid());
    EXPECT_EQ(lane.get_zcopy(out.data(), nullptr, {8, 0}, out.size(), {}), Status::kIoError);
    EXPECT_FALSE(lane.proven());
    EXPECT_EQ(lane.get_zcopy(out.data(), nullptr, key_of(src.data()), out.size(), {}), Status::kOk);
    EXPECT_TRUE(lane.proven());
    lane.set(CmaMode::kForce, getpid());  // re-aimed (a sender index taken by another process)
    EXPECT_FALSE(lane.proven());
    EXPECT_EQ(lane.put_zcopy(src.data(), nullptr, key_of(out.data()), out.size(), {}), Status::kOk);
    EXPECT_TRUE(lane.proven());
    EXPECT_EQ(out, src);
}

}  // namespace
}  // namespace swy::tl::cma

// Replays every fuzz target's seeds and its committed corpus (test/fuzz/corpus/<target>/:
// inputs that once crashed a decoder, kept as regression tests) through the same functions
// libFuzzer calls. Runs in every build, with or without clang; a target that finds a fault
// aborts, which fails the test.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "targets.h"

namespace swy::fuzz {
namespace {

using Target = int (*)(const uint8_t*, size_t);

/// Runs @p target on its seeds and corpus files; returns how many inputs it ran.
size_t replay(const std::string& name, Target target) {
    size_t count = 0;
    for (const auto& input : seeds(name)) {
        EXPECT_EQ(target(input.data(), input.size()), 0);
        ++count;
    }
    const std::filesystem::path dir = std::filesystem::path(SWY_FUZZ_CORPUS_DIR) / name;
    if (std::filesystem::is_directory(dir)) {
        for (const auto& entry : std::filesystem::directory_iterator(dir)) {
            if (!entry.is_regular_file()) continue;
            std::ifstream in(entry.path(), std::ios::binary);
            std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                       std::istreambuf_iterator<char>());
            SCOPED_TRACE(entry.path().string());
            EXPECT_EQ(target(bytes.data(), bytes.size()), 0);
            ++count;
        }
    }
    return count;
}

TEST(FuzzReplay, AddressSeedsAndCorpusDecodeWithoutFault) {
    EXPECT_GE(replay("address", &fuzz_address), 4u);
}

TEST(FuzzReplay, TcpStreamSeedsAndCorpusAreHandledWithoutFault) {
    EXPECT_GE(replay("tcp_stream", &fuzz_tcp_stream), 5u);
}

TEST(FuzzReplay, WorkerAmSeedsAndCorpusAreHandledWithoutFault) {
    EXPECT_GE(replay("worker_am", &fuzz_worker_am), 6u);
}

TEST(FuzzReplay, ConnWireSeedsAndCorpusDecodeWithoutFault) {
    EXPECT_GE(replay("conn_wire", &fuzz_conn_wire), 3u);
}

TEST(FuzzReplay, RkeySeedsAndCorpusAreHandledWithoutFault) {
    EXPECT_GE(replay("rkey", &fuzz_rkey), 5u);
}

}  // namespace
}  // namespace swy::fuzz

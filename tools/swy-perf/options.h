// Command-line options of swy-perf. The flag set is a contract (scripts depend on it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace swy::perf {

enum class TestKind {
    kLat,
    kBw,
    kBibw,
    kMr,
    // One-sided (rma_runner.cpp) and active messages (am_runner.cpp), as ucx_perftest's
    // ucp_put_lat, ucp_put_bw, ucp_get, ucp_fadd, ucp_cswap, ucp_add, ucp_am_lat, ucp_am_bw.
    kPutLat,
    kPutBw,
    kGetLat,
    kGetBw,
    kAmLat,
    kAmBw,
    kFaddLat,
    kCswapLat,
    kAddMr
};

struct Options {
    TestKind test = TestKind::kLat;
    std::string tls;            ///< empty: leave SWY_TLS as the environment has it
    std::vector<size_t> sizes;  ///< message sizes, in run order
    size_t iters = 0;           ///< 0: size-dependent default (see default_iters())
    size_t warmup = SIZE_MAX;   ///< SIZE_MAX: size-dependent default
    size_t window = 64;         ///< bw/bibw/mr: messages in flight per round
    bool check = false;         ///< fill and verify every byte of every message
    int cpus[2] = {-1, -1};     ///< cores for the client (sender) and the server
    bool csv = false;
    int server_port = -1;     ///< --server PORT
    std::string client_host;  ///< --client HOST:PORT
    int client_port = -1;
    /// --memtype: memory type of the client's (SENDER) and the server's (RECEIVER) message
    /// buffers: "host", "simdev" or "cuda". Each process sends and receives from its own
    /// buffers; --tls self sends from the first and receives into the second.
    std::string memtype[2] = {"host", "host"};
    /// One-sided tests: map user memory in place (swy_mem_map of an aligned_alloc() buffer)
    /// instead of letting swy_mem_map allocate it (SWY_MEM_MAP_ALLOCATE, the default).
    bool register_memory = false;
    /// --loopback: one process, two workers (a client and a server worker) connected over the
    /// chosen transport (shm unless --tls says otherwise), both progressed by one thread: the
    /// deterministic set-up that callgrind counts instructions per message in. With --tls
    /// self it is the self mode (one worker, endpoint to itself).
    bool loopback = false;

    /// One process, no peer process: --tls self or --loopback.
    bool self_mode() const { return tls == "self" || loopback; }
    /// --loopback over a transport other than self: two workers in this process.
    bool two_workers() const { return loopback && tls != "self"; }
    /// Latency tests: one operation (or ping-pong) at a time, a median column in the table.
    bool is_latency() const {
        return test == TestKind::kLat || test == TestKind::kPutLat || test == TestKind::kGetLat ||
               test == TestKind::kAmLat || test == TestKind::kFaddLat ||
               test == TestKind::kCswapLat;
    }
    bool is_streaming() const { return !is_latency(); }
    /// Ping-pong tests (latency is half a round trip); the other latency tests report the
    /// time of one operation, a round trip to the target and back, as ucx_perftest does.
    bool is_pingpong() const {
        return test == TestKind::kLat || test == TestKind::kPutLat || test == TestKind::kAmLat;
    }
    bool is_one_sided() const {
        return test == TestKind::kPutLat || test == TestKind::kPutBw || test == TestKind::kGetLat ||
               test == TestKind::kGetBw || is_atomic();
    }
    bool is_atomic() const {
        return test == TestKind::kFaddLat || test == TestKind::kCswapLat ||
               test == TestKind::kAddMr;
    }
    bool is_am() const { return test == TestKind::kAmLat || test == TestKind::kAmBw; }
    bool host_only() const { return memtype[0] == "host" && memtype[1] == "host"; }
};

/// Parse argv. On a bad flag prints a message and the usage text to stderr and exits 2;
/// on --help prints the usage to stdout and exits 0.
Options parse_options(int argc, char** argv);

/// Name of a test as used on the command line and in the CSV "test" column.
const char* test_name(TestKind kind);

/// Measured iterations for @p size when --iters was not given: enough that a size takes well
/// under a second on shared memory, at most 10000 round trips / 100000 streamed messages.
size_t default_iters(const Options& opts, size_t size);

/// Warm-up iterations for @p size when --warmup was not given.
size_t default_warmup(const Options& opts, size_t size);

/// Parse "1:4M" (powers of two from A to B) or "8,8191,8193". Suffixes K/M/G are powers of
/// 1024. Returns false on a malformed list.
bool parse_size_list(const std::string& text, std::vector<size_t>* out);

}  // namespace swy::perf

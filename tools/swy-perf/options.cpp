#include "options.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

namespace swy::perf {
namespace {

constexpr const char* kUsage =
    "usage: swy-perf [options]\n"
    "  --test lat|bw|bibw|mr   ping-pong latency (default), windowed bandwidth,\n"
    "                          bidirectional bandwidth, message rate\n"
    "         put_lat|put_bw|get_lat|get_bw|fadd_lat|cswap_lat|add_mr\n"
    "                          one-sided, into the server's memory (swy_mem_map, remote key):\n"
    "                          put_lat: ping-pong of puts, each side polling the last byte;\n"
    "                          put_bw/get_bw: windows of puts/gets, then a flush;\n"
    "                          get_lat: one get at a time; fadd_lat/cswap_lat: one fetching\n"
    "                          atomic at a time (sizes 4 or 8, default 8); add_mr: posted\n"
    "                          atomic adds (message rate). get_lat, fadd_lat and cswap_lat\n"
    "                          report the time of one operation (a round trip)\n"
    "         am_lat|am_bw     active messages: ping-pong, or a stream of --window in flight\n"
    "                          (handler on the server; header 0 B)\n"
    "  --tls LIST              SWY_TLS for both processes (\"self\": one process, one worker,\n"
    "                          endpoint to itself)\n"
    "  --loopback              one process, two workers (client and server) connected over\n"
    "                          --tls (default shm), both progressed by one thread (for\n"
    "                          instruction counts: bench/callgrind-small.sh); lat pings\n"
    "                          client -> server and pongs back; put_lat and am_lat are\n"
    "                          not available (as with --tls self)\n"
    "  --sizes A:B | a,b,c     powers of two from A to B, or a list (K/M/G suffixes)\n"
    "                          default 1:4M (mr: 1:64K)\n"
    "  --iters N               measured iterations per size (default: size-dependent)\n"
    "  --warmup N              warm-up iterations per size (default: size-dependent)\n"
    "  --window N              bw/bibw/mr: messages in flight per round (default 64)\n"
    "  --check                 fill a pattern per iteration and verify every byte\n"
    "                          (one-sided: in the target's memory; atomics: every fetched\n"
    "                          value and the final counter)\n"
    "  --register              one-sided: map user memory in place (registered) instead of\n"
    "                          memory allocated by swy_mem_map (SWY_MEM_MAP_ALLOCATE, default)\n"
    "  --cpus A,B              pin the client (sender) to core A and the server to core B\n"
    "  --csv                   CSV: test,size,iters,latency_us,bandwidth_MBps,msg_rate_Mps,"
    "protocol,\n"
    "                          latency_median_us (lat: latency_us is the mean one-way time,\n"
    "                          latency_median_us half the median round trip; 0 otherwise)\n"
    "  --memtype TYPE | SENDER:RECEIVER\n"
    "                          memory type of the message buffers: host (default), simdev,\n"
    "                          cuda. SENDER is the client's buffers, RECEIVER the server's;\n"
    "                          each process sends and receives from its own: bw/mr stream\n"
    "                          SENDER -> RECEIVER, lat pings SENDER -> RECEIVER and pongs\n"
    "                          RECEIVER -> SENDER, bibw streams both ways (window acks stay\n"
    "                          in host memory). With --tls self, sends come from SENDER and\n"
    "                          receives land in RECEIVER buffers. Both processes load the\n"
    "                          plugins (SWY_MEMTYPES); the protocol column is the table for\n"
    "                          SENDER memory (a device RECEIVER still turns rendezvous into\n"
    "                          the pipeline); --check stages through swy_mem_copy(). With\n"
    "                          --server/--client give both sides the same --memtype\n"
    "  --server PORT           run the server side; exchange addresses over TCP\n"
    "  --client HOST:PORT      run the client side against a --server\n"
    "  (with neither --server nor --client, swy-perf forks its own peer; started by a PMIx\n"
    "  launcher, e.g. mpirun -np 2 swy-perf ..., rank 0 is the server and rank 1 the client\n"
    "  and addresses travel through PMIx)\n";

[[noreturn]] void usage_error(const char* fmt, const char* arg) {
    std::fprintf(stderr, "swy-perf: ");
    std::fprintf(stderr, fmt, arg);
    std::fprintf(stderr, "\n%s", kUsage);
    std::exit(2);
}

bool parse_size(std::string_view text, size_t* out) {
    if (text.empty()) return false;
    size_t value = 0;
    size_t i = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
        size_t digit = static_cast<size_t>(text[i] - '0');
        if (value > (SIZE_MAX - digit) / 10) return false;
        value = value * 10 + digit;
    }
    if (i == 0) return false;
    unsigned shift = 0;
    if (i < text.size()) {
        switch (text[i]) {
            case 'k':
            case 'K': shift = 10; break;
            case 'm':
            case 'M': shift = 20; break;
            case 'g':
            case 'G': shift = 30; break;
            default: return false;
        }
        ++i;
        if (i < text.size() && (text[i] == 'b' || text[i] == 'B')) ++i;  // "4MB" as well
    }
    if (i != text.size()) return false;
    if (shift && value > (SIZE_MAX >> shift)) return false;
    *out = value << shift;
    return true;
}

size_t parse_count(const char* flag, const char* arg, size_t min) {
    size_t value;
    if (!parse_size(arg, &value) || value < min) usage_error("bad value for %s", flag);
    return value;
}

bool parse_one_sided_test(std::string_view t, TestKind* out) {
    static constexpr std::pair<std::string_view, TestKind> kTests[] = {
        {"put_lat", TestKind::kPutLat},   {"put_bw", TestKind::kPutBw},
        {"get_lat", TestKind::kGetLat},   {"get_bw", TestKind::kGetBw},
        {"am_lat", TestKind::kAmLat},     {"am_bw", TestKind::kAmBw},
        {"fadd_lat", TestKind::kFaddLat}, {"cswap_lat", TestKind::kCswapLat},
        {"add_mr", TestKind::kAddMr}};
    for (const auto& [name, kind] : kTests) {
        if (t == name) {
            *out = kind;
            return true;
        }
    }
    return false;
}

int parse_port(const char* text) {
    char* end = nullptr;
    errno = 0;
    long port = std::strtol(text, &end, 10);
    if (errno || end == text || *end || port <= 0 || port > 65535) return -1;
    return static_cast<int>(port);
}

// The one-sided and active-message tests: what they cannot do, refused before anything starts.
void validate_new_test_options(const Options& opts) {
    if (opts.register_memory && !opts.is_one_sided()) {
        usage_error("%s", "--register applies to the one-sided tests only");
    }
    if (!opts.is_one_sided() && !opts.is_am()) return;
    if (!opts.host_only())
        usage_error("%s", "--memtype: the one-sided and AM tests use host memory");
    if (opts.self_mode() && (opts.test == TestKind::kPutLat || opts.test == TestKind::kAmLat)) {
        usage_error(
            "--test %s is a ping-pong between two processes: not with --tls self or "
            "--loopback",
            test_name(opts.test));
    }
    for (size_t size : opts.sizes) {
        if (opts.is_atomic() && size != 4 && size != 8) {
            usage_error("--test %s: atomic operands are 4 or 8 bytes (--sizes 8)",
                        test_name(opts.test));
        }
        if (opts.test == TestKind::kPutLat && size == 0) {
            usage_error("%s", "--test put_lat polls the last byte: sizes from 1");
        }
    }
}

}  // namespace

bool parse_size_list(const std::string& text, std::vector<size_t>* out) {
    out->clear();
    std::string_view s(text);
    if (auto colon = s.find(':'); colon != std::string_view::npos) {
        size_t lo, hi;
        if (!parse_size(s.substr(0, colon), &lo) || !parse_size(s.substr(colon + 1), &hi) ||
            lo > hi) {
            return false;
        }
        // Powers of two from lo: 1:4M gives 1,2,4,...; a non-power start 3:16 gives 3,6,12.
        for (size_t v = lo; v <= hi;) {
            out->push_back(v);
            if (v == 0) {
                v = 1;
            } else if (v > SIZE_MAX / 2) {
                break;
            } else {
                v *= 2;
            }
        }
        return !out->empty();
    }
    while (!s.empty()) {
        size_t comma = s.find(',');
        size_t v;
        if (!parse_size(s.substr(0, comma), &v)) return false;
        out->push_back(v);
        if (comma == std::string_view::npos) break;
        s.remove_prefix(comma + 1);
        if (s.empty()) return false;  // trailing comma
    }
    return !out->empty();
}

const char* test_name(TestKind kind) {
    switch (kind) {
        case TestKind::kLat: return "lat";
        case TestKind::kBw: return "bw";
        case TestKind::kBibw: return "bibw";
        case TestKind::kMr: return "mr";
        case TestKind::kPutLat: return "put_lat";
        case TestKind::kPutBw: return "put_bw";
        case TestKind::kGetLat: return "get_lat";
        case TestKind::kGetBw: return "get_bw";
        case TestKind::kAmLat: return "am_lat";
        case TestKind::kAmBw: return "am_bw";
        case TestKind::kFaddLat: return "fadd_lat";
        case TestKind::kCswapLat: return "cswap_lat";
        case TestKind::kAddMr: return "add_mr";
    }
    return "?";
}

size_t default_iters(const Options& opts, size_t size) {
    size_t bytes = std::max<size_t>(size, 1);
    if (!opts.is_streaming()) {
        // Ping-pong: ~1 GiB moved each way caps the time for large sizes.
        return std::clamp<size_t>((size_t{1} << 30) / bytes, 10, 10000);
    }
    size_t n = std::clamp<size_t>((size_t{2} << 30) / bytes, 4 * opts.window, 100000);
    return (n + opts.window - 1) / opts.window * opts.window;
}

size_t default_warmup(const Options& opts, size_t size) {
    size_t iters = opts.iters ? opts.iters : default_iters(opts, size);
    size_t n = std::clamp<size_t>(iters / 10, 1, 1000);
    if (opts.is_streaming()) n = (n + opts.window - 1) / opts.window * opts.window;
    return n;
}

Options parse_options(int argc, char** argv) {
    Options opts;
    std::string sizes_text;
    for (int i = 1; i < argc; ++i) {
        std::string_view flag = argv[i];
        auto value = [&]() -> const char* {
            if (i + 1 >= argc) usage_error("%s needs a value", argv[i]);
            return argv[++i];
        };
        if (flag == "--help" || flag == "-h") {
            std::fputs(kUsage, stdout);
            std::exit(0);
        } else if (flag == "--test") {
            std::string_view t = value();
            if (t == "lat")
                opts.test = TestKind::kLat;
            else if (t == "bw")
                opts.test = TestKind::kBw;
            else if (t == "bibw")
                opts.test = TestKind::kBibw;
            else if (t == "mr")
                opts.test = TestKind::kMr;
            else if (!parse_one_sided_test(t, &opts.test))
                usage_error(
                    "unknown test '%s' (lat, bw, bibw, mr, put_lat, put_bw, get_lat, get_bw, "
                    "am_lat, am_bw, fadd_lat, cswap_lat, add_mr)",
                    argv[i]);
        } else if (flag == "--tls") {
            opts.tls = value();
            if (opts.tls.empty()) usage_error("%s", "--tls needs a non-empty list");
        } else if (flag == "--sizes") {
            sizes_text = value();
            if (!parse_size_list(sizes_text, &opts.sizes)) {
                usage_error("bad size list '%s'", sizes_text.c_str());
            }
        } else if (flag == "--iters") {
            opts.iters = parse_count("--iters", value(), 1);
        } else if (flag == "--warmup") {
            opts.warmup = parse_count("--warmup", value(), 0);
        } else if (flag == "--window") {
            opts.window = parse_count("--window", value(), 1);
        } else if (flag == "--check") {
            opts.check = true;
        } else if (flag == "--loopback") {
            opts.loopback = true;
        } else if (flag == "--register") {
            opts.register_memory = true;
        } else if (flag == "--csv") {
            opts.csv = true;
        } else if (flag == "--cpus") {
            const char* v = value();
            int a, b, n = 0;
            if (std::sscanf(v, "%d,%d%n", &a, &b, &n) != 2 || v[n] != '\0' || a < 0 || b < 0) {
                usage_error("bad --cpus '%s' (expected A,B)", v);
            }
            opts.cpus[0] = a;
            opts.cpus[1] = b;
        } else if (flag == "--memtype") {
            std::string_view m = value();
            size_t colon = m.find(':');
            std::string_view sender = m.substr(0, colon);
            std::string_view receiver = colon == std::string_view::npos ? m : m.substr(colon + 1);
            for (std::string_view t : {sender, receiver}) {
                if (t == "dmabuf") {
                    usage_error(
                        "--memtype '%s': swy-perf cannot allocate dma-buf memory (it "
                        "comes from an exporter); use host, simdev or cuda",
                        argv[i]);
                }
                if (t != "host" && t != "simdev" && t != "cuda") {
                    usage_error(
                        "unknown memory type in --memtype '%s' (host, simdev, cuda, "
                        "or SENDER:RECEIVER)",
                        argv[i]);
                }
            }
            opts.memtype[0] = std::string(sender);
            opts.memtype[1] = std::string(receiver);
        } else if (flag == "--server") {
            const char* v = value();
            opts.server_port = parse_port(v);
            if (opts.server_port < 0) usage_error("bad port '%s'", v);
        } else if (flag == "--client") {
            std::string v = value();
            size_t colon = v.rfind(':');
            if (colon == std::string::npos || colon == 0) {
                usage_error("bad --client '%s' (expected HOST:PORT)", v.c_str());
            }
            opts.client_host = v.substr(0, colon);
            opts.client_port = parse_port(v.c_str() + colon + 1);
            if (opts.client_port < 0) usage_error("bad port in '%s'", v.c_str());
        } else {
            usage_error("unknown option '%s'", argv[i]);
        }
    }
    if (opts.server_port >= 0 && opts.client_port >= 0) {
        usage_error("%s", "--server and --client are exclusive");
    }
    if (opts.self_mode() && (opts.server_port >= 0 || opts.client_port >= 0)) {
        usage_error("%s", "--tls self and --loopback run in one process: no --server/--client");
    }
    if (opts.loopback && opts.tls.empty()) opts.tls = "shm";
    if (opts.sizes.empty()) {
        const char* sizes = opts.is_atomic() ? "8" : opts.test == TestKind::kMr ? "1:64K" : "1:4M";
        parse_size_list(sizes, &opts.sizes);
    }
    validate_new_test_options(opts);
    if (opts.is_streaming() && opts.iters) {
        opts.iters = (opts.iters + opts.window - 1) / opts.window * opts.window;
    }
    if (opts.is_streaming() && opts.warmup != SIZE_MAX) {
        opts.warmup = (opts.warmup + opts.window - 1) / opts.window * opts.window;
    }
    return opts;
}

}  // namespace swy::perf

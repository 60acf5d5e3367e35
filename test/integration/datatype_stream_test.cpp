// A large generic-datatype message streams: neither side ever holds a temporary copy of the
// whole message. Two forked processes over shm send a strided vector (every other 8-byte
// element of a buffer twice the message's size, a generic datatype on both sides) and each
// checks that its peak RSS (VmHWM) grew by less than 64 MiB over a baseline taken after its
// user buffer was allocated and touched. Every element and every gap is verified.
//
// DT_STREAM_TEST_BYTES sets the packed size (default 1 GiB; CI under sanitizers may run
// it smaller). The measured numbers are printed.
#include <sys/mman.h>

#include <cstdlib>
#include <string>

#include "multiproc.h"

namespace swy_itest {
namespace {

constexpr size_t kElem = 8;
constexpr size_t kStride = 16;
constexpr uint8_t kGap = 0xEE;
constexpr size_t kMaxGrowth = size_t{64} << 20;

size_t stream_bytes() {
    const char* e = getenv("DT_STREAM_TEST_BYTES");
    const size_t n = e != nullptr ? strtoull(e, nullptr, 0) : (size_t{1} << 30);
    return n / kElem * kElem;
}

/// Peak resident set (VmHWM) of this process, in bytes.
size_t peak_rss() {
    FILE* f = fopen("/proc/self/status", "r");
    ICHECK(f != nullptr);
    char line[256];
    size_t kib = 0;
    while (fgets(line, sizeof(line), f) != nullptr) {
        if (sscanf(line, "VmHWM: %zu kB", &kib) == 1) break;
    }
    fclose(f);
    ICHECK_MSG(kib != 0, "no VmHWM in /proc/self/status");
    return kib << 10;
}

uint64_t element_value(size_t i) { return (i * 0x9E3779B97F4A7C15ull) ^ (i >> 7) ^ 0x5157; }

struct Vector {
    uint8_t* base;
    size_t length;  ///< packed bytes
    uint64_t starts = 0, finishes = 0;
};

void* start(void*, const void* buffer, size_t count) {
    auto* v = static_cast<Vector*>(const_cast<void*>(buffer));
    ICHECK(count == v->length);
    ++v->starts;
    return v;
}
void* start_unpack(void* c, void* buffer, size_t count) { return start(c, buffer, count); }
size_t packed_size(void* s) { return static_cast<Vector*>(s)->length; }

/// Packed offset <-> the strided buffer, any offset and length (fragments need not be
/// multiples of the element).
void copy(Vector* v, size_t offset, uint8_t* bytes, size_t n, bool to_vector) {
    size_t done = 0;
    while (done < n) {
        const size_t o = offset + done;
        const size_t within = o % kElem;
        const size_t take = std::min(kElem - within, n - done);
        uint8_t* p = v->base + o / kElem * kStride + within;
        if (to_vector) {
            std::memcpy(p, bytes + done, take);
        } else {
            std::memcpy(bytes + done, p, take);
        }
        done += take;
    }
}
size_t pack(void* s, size_t offset, void* dest, size_t max) {
    auto* v = static_cast<Vector*>(s);
    const size_t n = std::min(max, v->length - offset);
    copy(v, offset, static_cast<uint8_t*>(dest), n, false);
    return n;
}
swy_status_t unpack(void* s, size_t offset, const void* src, size_t length) {
    auto* v = static_cast<Vector*>(s);
    ICHECK(offset + length <= v->length);
    copy(v, offset, static_cast<uint8_t*>(const_cast<void*>(src)), length, true);
    return SWY_OK;
}
void finish(void* s) { ++static_cast<Vector*>(s)->finishes; }

TEST(DatatypeStream, LargeStridedVectorNeverNeedsAWholeMessageBuffer) {
    const size_t bytes = stream_bytes();
    RunOptions ro;
    ro.timeout_s = 240.0;
    EXPECT_TRUE(run_ranks(
        2,
        [bytes](World& w) {
            NodeOptions opts;
            opts.config = {{"TLS", "shm,cma"}};
            Node n(w, opts);
            n.connect_all();
            swy_worker_h wk = n.worker();
            swy_dt_generic_ops_t ops{start, start_unpack, packed_size, pack, unpack, finish};
            swy_datatype_t type = 0;
            ICHECK_OK(swy_dt_create_generic(&ops, nullptr, &type));
            const size_t elements = bytes / kElem;
            const size_t span = elements * kStride;
            auto* base = static_cast<uint8_t*>(
                mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
            ICHECK(base != MAP_FAILED);
            // Touch everything: the sender's elements, the receiver's gaps and elements.
            auto* words = reinterpret_cast<uint64_t*>(base);
            for (size_t i = 0; i < elements; ++i) {
                words[2 * i] = w.rank() == 0 ? element_value(i) : 0;
                std::memset(&words[2 * i + 1], kGap, kElem);
            }
            Vector v{base, bytes};
            swy_request_params_t p{};
            p.field_mask = SWY_REQ_PARAM_FIELD_DATATYPE;
            p.datatype = type;
            const size_t baseline = peak_rss();
            const auto t0 = Clock::now();
            const swy_tag_t tag = 0xD75E;
            if (w.rank() == 1) {
                Recv r;
                swy_tag_recv_info_t info{};
                p.field_mask |= SWY_REQ_PARAM_FIELD_RECV_INFO;
                p.recv_info = &info;
                adopt_recv_result(r, swy_tag_recv_nb(wk, &v, bytes, tag, ~(swy_tag_t)0, &p, &r.req),
                                  &info, "swy_tag_recv_nb");
                w.barrier(wk);
                ICHECK_OK(finish_recv(wk, r, 200.0));
                ICHECK(r.info.length == bytes);
            } else {
                w.barrier(wk);
                Send s;
                s.status = swy_tag_send_nb(n.ep(1), &v, bytes, tag, &p, &s.req);
                s.done = s.status != SWY_INPROGRESS;
                ICHECK_OK(finish_send(wk, s, 200.0));
            }
            const size_t peak = peak_rss();
            const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
            ICHECK_MSG(v.starts == 1 && v.finishes == 1, "start ran %llu times, finish %llu",
                       (unsigned long long)v.starts, (unsigned long long)v.finishes);
            fprintf(stderr,
                    "[rank %d] %s %zu MiB strided: VmHWM baseline %zu MiB, after %zu MiB, "
                    "growth %.1f MiB (%.1f s)\n",
                    w.rank(), w.rank() == 0 ? "sent" : "received", bytes >> 20, baseline >> 20,
                    peak >> 20, (double)(peak - baseline) / (1 << 20), seconds);
            ICHECK_MSG(peak - baseline < kMaxGrowth,
                       "peak RSS grew by %zu MiB moving %zu MiB (limit 64 MiB)",
                       (peak - baseline) >> 20, bytes >> 20);
            if (w.rank() == 1) {
                for (size_t i = 0; i < elements; ++i) {
                    ICHECK_MSG(words[2 * i] == element_value(i), "element %zu differs", i);
                    uint64_t gap = 0;
                    std::memset(&gap, kGap, kElem);
                    ICHECK_MSG(words[2 * i + 1] == gap, "gap after element %zu was written", i);
                }
            }
            munmap(base, span);
            swy_dt_destroy(type);
            n.finish();
        },
        ro));
}

}  // namespace
}  // namespace swy_itest

// Active messages with non-contiguous data: iov (many entries, zero-length ones, a NULL
// buffer with length 0) and generic (a strided vector packed by callbacks) sent eager, packed
// straight into the lane's packet, also when the lane is full and the send waits (packed at
// the call); the handler sees the packed bytes. A generic type's finish runs once per send.
// Non-contiguous rendezvous: an iov sent and pulled into an iov with swy_am_recv_data_nb,
// streamed through the pipeline fragment by fragment.
#include <string>
#include <vector>

#include "am_util.h"

namespace swy_itest {
namespace {

constexpr uint16_t kId = 21;
constexpr uint64_t kMessages = 600;
constexpr size_t kRndvSize = 300000;

/// Packed length of message @p i (eager limit @p max, 8-byte header).
size_t packed_size(uint64_t i, size_t max) {
    const size_t sizes[] = {0, 1, 8, 100, max / 2 + 1, max - 8};
    return sizes[i % 6];
}

/// Scatter @p packed over an iov of many entries (every third of length 0, one with a NULL
/// buffer) in @p storage, with filler between the pieces.
std::vector<swy_dt_iov_t> scatter(const std::vector<unsigned char>& packed,
                                  std::vector<unsigned char>* storage) {
    storage->assign(packed.size() * 2 + 1024, 0xEE);
    std::vector<swy_dt_iov_t> iov;
    iov.push_back({nullptr, 0});
    size_t at = 0, out = 0;
    for (size_t j = 0; at < packed.size(); ++j) {
        if (j % 3 == 2) {
            iov.push_back({storage->data() + out, 0});
            continue;
        }
        const size_t piece = std::min(packed.size() - at, 1 + (j * 37) % 300);
        std::memcpy(storage->data() + out, packed.data() + at, piece);
        iov.push_back({storage->data() + out, piece});
        at += piece;
        out += piece + 3;
    }
    return iov;
}

// A strided vector: `count` blocks of `block` bytes, `stride` apart.
struct Strided {
    size_t block = 7;
    size_t stride = 19;
    int finished = 0;  // finish calls (every operation must end with one)
    int started = 0;
};

struct PackState {
    Strided* type;
    const unsigned char* base;
    size_t count;
};

void* start_pack(void* context, const void* buffer, size_t count) {
    auto* t = static_cast<Strided*>(context);
    ++t->started;
    return new PackState{t, static_cast<const unsigned char*>(buffer), count};
}
void* start_unpack(void*, void*, size_t) { return nullptr; }  // not used here
size_t packed_size_cb(void* state) {
    auto* s = static_cast<PackState*>(state);
    return s->count * s->type->block;
}
size_t pack(void* state, size_t offset, void* dest, size_t max) {
    auto* s = static_cast<PackState*>(state);
    const size_t total = s->count * s->type->block;
    size_t n = 0;
    auto* d = static_cast<unsigned char*>(dest);
    while (n < max && offset + n < total) {
        const size_t p = offset + n;
        d[n++] = s->base[(p / s->type->block) * s->type->stride + p % s->type->block];
    }
    return n;
}
swy_status_t unpack(void*, size_t, const void*, size_t) { return SWY_ERR_UNSUPPORTED; }
void finish(void* state) {
    auto* s = static_cast<PackState*>(state);
    ++s->type->finished;
    delete s;
}

struct Inbox {
    uint64_t seen = 0;
    size_t max = 0;
    void* desc = nullptr;
    size_t desc_length = 0;
};

swy_status_t on_am(void* arg, const void* header, size_t header_length, void* data, size_t length,
                   const swy_am_recv_param_t* param) {
    auto* in = static_cast<Inbox*>(arg);
    uint64_t i = 0;
    ICHECK(header_length == sizeof(i));
    std::memcpy(&i, header, sizeof(i));
    if ((param->flags & SWY_AM_RECV_FLAG_RNDV) != 0) {
        ICHECK(i == kMessages && length == kRndvSize);
        in->desc = data;
        in->desc_length = length;
        ++in->seen;
        return SWY_INPROGRESS;
    }
    ICHECK_MSG(i == in->seen, "message #%llu arrived as #%llu", (unsigned long long)i,
               (unsigned long long)in->seen);
    ++in->seen;
    const size_t expected = i % 2 == 0 ? packed_size(i, in->max) : packed_size(i, in->max) / 7 * 7;
    ICHECK_MSG(length == expected, "message #%llu: %zu bytes, sent %zu", (unsigned long long)i,
               length, expected);
    ICHECK_PATTERN(data, length, pattern_seed(length, 0, i), "message #%llu (%s)",
                   (unsigned long long)i, i % 2 == 0 ? "iov" : "generic");
    return SWY_OK;
}

void datatypes(World& w, const std::string& tls) {
    NodeOptions opts;
    opts.config = am_config(tls);
    Node n(w, opts);
    swy_worker_h wk = n.worker();
    Inbox in;
    ICHECK_OK(swy_worker_set_am_handler(wk, kId, on_am, &in, 0));
    n.connect_all();
    const size_t max = am_eager_max(n.ep(1 - w.rank()));
    in.max = max;
    if (w.rank() == 0)
        fprintf(stderr, "[rank 0] eager AM limit over %s: %zu bytes\n", tls.c_str(), max);
    if (w.rank() == 1) {
        auto deadline = deadline_in(60);
        while (in.seen < kMessages + 1) {
            swy_worker_progress(wk);
            exit_if_aborted();
            ICHECK_MSG(Clock::now() < deadline, "timed out: %llu messages",
                       (unsigned long long)in.seen);
        }
        // The rendezvous message (sent as an iov) pulled into a two-entry iov: the pipeline
        // packs it on the sender and unpacks it here, fragment by fragment.
        std::vector<unsigned char> target(kRndvSize + 1, 0xEE);
        swy_dt_iov_t iov[3] = {
            {target.data(), 1000}, {nullptr, 0}, {target.data() + 1000, kRndvSize - 1000}};
        swy_request_params_t p{};
        p.field_mask = SWY_REQ_PARAM_FIELD_DATATYPE;
        p.datatype = SWY_DATATYPE_IOV;
        swy_request_h req = nullptr;
        swy_status_t st = swy_am_recv_data_nb(wk, in.desc, iov, 3, &p, &req);
        ICHECK_MSG(st == SWY_OK || st == SWY_INPROGRESS, "recv_data: %s", swy_status_string(st));
        if (st == SWY_INPROGRESS) {
            deadline = deadline_in(30);
            while ((st = swy_request_test(req)) == SWY_INPROGRESS) {
                swy_worker_progress(wk);
                ICHECK_MSG(Clock::now() < deadline, "timed out pulling");
            }
            swy_request_free(req);
        }
        ICHECK_STATUS(st, SWY_OK);
        ICHECK_PATTERN(target.data(), kRndvSize, pattern_seed(kRndvSize, 0, kMessages),
                       "rendezvous data");
        ICHECK(target[kRndvSize] == 0xEE);
    } else {
        Strided strided;
        swy_dt_generic_ops_t ops{start_pack, start_unpack, packed_size_cb, pack, unpack, finish};
        swy_datatype_t generic = 0;
        ICHECK_OK(swy_dt_create_generic(&ops, &strided, &generic));
        std::vector<std::vector<unsigned char>> storage(kMessages);
        std::vector<std::vector<swy_dt_iov_t>> iovs(kMessages);
        std::vector<AmSend> sends;
        int generic_sends = 0;
        for (uint64_t i = 0; i < kMessages; ++i) {
            swy_request_params_t p{};
            p.field_mask = SWY_REQ_PARAM_FIELD_DATATYPE;
            AmSend s;
            if (i % 2 == 0) {
                std::vector<unsigned char> packed(packed_size(i, max));
                fill_pattern(packed.data(), packed.size(), pattern_seed(packed.size(), 0, i));
                iovs[i] = scatter(packed, &storage[i]);
                p.datatype = SWY_DATATYPE_IOV;
                s.status = swy_am_send_nb(n.ep(1), kId, &i, sizeof(i), iovs[i].data(),
                                          iovs[i].size(), &p, &s.req);
            } else {
                const size_t count = packed_size(i, max) / strided.block;
                std::vector<unsigned char> packed(count * strided.block);
                fill_pattern(packed.data(), packed.size(), pattern_seed(packed.size(), 0, i));
                storage[i].assign(count * strided.stride + 1, 0xEE);
                for (size_t b = 0; b < count; ++b)
                    std::memcpy(storage[i].data() + b * strided.stride,
                                packed.data() + b * strided.block, strided.block);
                p.datatype = generic;
                s.status = swy_am_send_nb(n.ep(1), kId, &i, sizeof(i), storage[i].data(), count, &p,
                                          &s.req);
                ++generic_sends;
            }
            ICHECK_MSG(s.status == SWY_OK || s.status == SWY_INPROGRESS, "AM #%llu: %s",
                       (unsigned long long)i, swy_status_string(s.status));
            s.done = s.status == SWY_OK;
            // Packed at the call either way: the data may change at once.
            std::fill(storage[i].begin(), storage[i].end(), 0x11);
            sends.push_back(s);
        }
        // Non-contiguous rendezvous: a three-entry iov (one empty), streamed by the pipeline.
        std::vector<unsigned char> big(kRndvSize);
        fill_pattern(big.data(), big.size(), pattern_seed(kRndvSize, 0, kMessages));
        swy_dt_iov_t big_iov[3] = {
            {big.data(), 777}, {nullptr, 0}, {big.data() + 777, big.size() - 777}};
        swy_request_params_t p{};
        p.field_mask = SWY_REQ_PARAM_FIELD_DATATYPE;
        p.datatype = SWY_DATATYPE_IOV;
        const uint64_t last = kMessages;
        AmSend s;
        s.status = swy_am_send_nb(n.ep(1), kId, &last, 8, big_iov, 3, &p, &s.req);
        ICHECK_MSG(s.status == SWY_INPROGRESS, "rendezvous iov AM: %s",
                   swy_status_string(s.status));
        s.done = false;
        sends.push_back(s);
        for (auto& x : sends)
            ICHECK_STATUS(finish_am(wk, x), SWY_OK);
        ICHECK_MSG(strided.started == generic_sends && strided.finished == generic_sends,
                   "generic datatype: %d sends, %d starts, %d finishes", generic_sends,
                   strided.started, strided.finished);
        swy_dt_destroy(generic);
    }
    n.finish();
}

TEST(AmDatatype, IovAndGenericEagerShm) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { datatypes(w, "shm,cma"); }));
}

TEST(AmDatatype, IovAndGenericEagerTcp) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { datatypes(w, "tcp,self"); }));
}

}  // namespace
}  // namespace swy_itest

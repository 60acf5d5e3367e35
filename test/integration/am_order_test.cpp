// Ordering and keeping: 10k messages from one endpoint, active messages (eager and forced
// rendezvous) interleaved with eager tag messages, posted without waiting (most wait on the
// endpoint's pending queue), reach the receiver's handlers and tag receives in send order.
// A handler registered with SWY_AM_HANDLER_FLAG_KEEP_DATA keeps eager data past the call, and
// it stays intact while later messages reuse the lane's cells, until swy_am_data_release.
#include <string>
#include <vector>

#include "am_util.h"

namespace swy_itest {
namespace {

constexpr uint16_t kOrderId = 3;
constexpr uint16_t kKeepId = 4;
constexpr swy_tag_t kTag = 0xA0A0000000000000ull;
constexpr uint64_t kCount = 10000;
constexpr size_t kRndvSize = 100000;

bool is_tag(uint64_t i) { return i % 3 == 0; }
bool is_rndv(uint64_t i) { return i % 997 == 1; }
size_t am_size(uint64_t i) { return is_rndv(i) ? kRndvSize : i % 17; }

struct Events {
    std::vector<uint64_t> order;  // message indices as they reached a handler or a receive
    swy_worker_h worker = nullptr;
    std::vector<AmPull> pulls;
    std::vector<uint64_t> pulled_index;
};

void on_tag(swy_request_h, swy_status_t status, const swy_tag_recv_info_t*, void* arg) {
    auto* slot = static_cast<std::pair<Events*, uint64_t>*>(arg);
    ICHECK_MSG(status == SWY_OK, "tag receive #%llu: %s", (unsigned long long)slot->second,
               swy_status_string(status));
    slot->first->order.push_back(slot->second);
}

swy_status_t on_ordered(void* arg, const void* header, size_t header_length, void* data,
                        size_t length, const swy_am_recv_param_t* param) {
    auto* ev = static_cast<Events*>(arg);
    uint64_t i = 0;
    ICHECK(header_length == sizeof(i));
    std::memcpy(&i, header, sizeof(i));
    ICHECK_MSG(length == am_size(i), "AM #%llu: %zu bytes", (unsigned long long)i, length);
    ev->order.push_back(i);
    if ((param->flags & SWY_AM_RECV_FLAG_RNDV) != 0) {
        ICHECK(is_rndv(i));
        ev->pulls.emplace_back();
        ev->pulled_index.push_back(i);
        start_pull(ev->worker, ev->pulls.back(), data, length);
        return SWY_OK;
    }
    ICHECK_PATTERN(data, length, pattern_seed(length, 0, i), "AM #%llu", (unsigned long long)i);
    return SWY_OK;
}

void ordered(World& w, const std::string& tls) {
    NodeOptions opts;
    opts.config = am_config(tls);
    Node n(w, opts);
    swy_worker_h wk = n.worker();
    Events ev;
    ev.worker = wk;
    ev.pulls.reserve(kCount);  // AmPull addresses must not move while requests run
    ICHECK_OK(swy_worker_set_am_handler(wk, kOrderId, on_ordered, &ev, 0));
    n.connect_all();
    if (w.rank() == 1) {
        std::vector<std::pair<Events*, uint64_t>> slots(kCount);
        std::vector<uint64_t> tag_bufs(kCount);
        std::vector<swy_request_h> recvs;
        for (uint64_t i = 0; i < kCount; i += 3) {
            slots[i] = {&ev, i};
            swy_request_params_t p{};
            p.field_mask = SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA;
            p.recv_cb = on_tag;
            p.user_data = &slots[i];
            swy_request_h req = nullptr;
            ICHECK_STATUS(swy_tag_recv_nb(wk, &tag_bufs[i], 8, kTag | i, ~swy_tag_t{0}, &p, &req),
                          SWY_INPROGRESS);
            recvs.push_back(req);
        }
        w.barrier(wk, 1);
        auto deadline = deadline_in(60);
        for (;;) {
            swy_worker_progress(wk);
            bool all = ev.order.size() == kCount;
            for (auto& p : ev.pulls)
                all = pull_done(p) && all;
            if (all) break;
            exit_if_aborted();
            ICHECK_MSG(Clock::now() < deadline, "timed out: %zu of %llu messages", ev.order.size(),
                       (unsigned long long)kCount);
        }
        for (uint64_t i = 0; i < kCount; ++i)
            ICHECK_MSG(ev.order[i] == i, "message #%llu arrived as #%llu",
                       (unsigned long long)ev.order[i], (unsigned long long)i);
        for (uint64_t i = 0; i < kCount; i += 3)
            ICHECK_MSG(tag_bufs[i] == i, "tag message #%llu holds %llu", (unsigned long long)i,
                       (unsigned long long)tag_bufs[i]);
        for (size_t k = 0; k < ev.pulls.size(); ++k) {
            const uint64_t i = ev.pulled_index[k];
            ICHECK_STATUS(ev.pulls[k].status, SWY_OK);
            ICHECK_PATTERN(ev.pulls[k].buffer.data(), kRndvSize, pattern_seed(kRndvSize, 0, i),
                           "rendezvous AM #%llu", (unsigned long long)i);
            ICHECK(guard_intact(ev.pulls[k].buffer.data() + kRndvSize));
        }
        for (swy_request_h r : recvs)
            swy_request_free(r);
    } else {
        w.barrier(wk, 1);
        std::vector<std::vector<unsigned char>> data(kCount);
        std::vector<uint64_t> values(kCount);
        std::vector<AmSend> sends;
        std::vector<Send> tag_sends;
        for (uint64_t i = 0; i < kCount; ++i) {
            if (is_tag(i)) {
                values[i] = i;
                tag_sends.push_back(post_send(n.ep(1), &values[i], 8, kTag | i));
                continue;
            }
            data[i].resize(am_size(i));
            fill_pattern(data[i].data(), data[i].size(), pattern_seed(data[i].size(), 0, i));
            sends.push_back(post_am(n.ep(1), kOrderId, &i, sizeof(i), data[i].data(),
                                    data[i].size(), is_rndv(i) ? SWY_AM_SEND_FLAG_RNDV : 0));
        }
        for (auto& s : sends)
            ICHECK_STATUS(finish_am(wk, s), SWY_OK);
        for (auto& s : tag_sends)
            ICHECK_STATUS(finish_send(wk, s), SWY_OK);
    }
    n.finish();
}

// ---- keeping eager data ----

constexpr int kKeepRounds = 4;

struct Kept {
    std::vector<void*> data;
    std::vector<size_t> length;
    std::vector<uint64_t> index;
    uint64_t seen = 0;
};

size_t keep_size(uint64_t i, size_t max) {
    const size_t sizes[] = {0, 1, 8, 3000, max - 8};
    return sizes[i % 5];
}

swy_status_t on_keep(void* arg, const void* header, size_t header_length, void* data, size_t length,
                     const swy_am_recv_param_t* param) {
    auto* k = static_cast<Kept*>(arg);
    ICHECK((param->flags & SWY_AM_RECV_FLAG_DATA_KEEPABLE) != 0);
    ICHECK((param->flags & SWY_AM_RECV_FLAG_RNDV) == 0);
    uint64_t i = 0;
    ICHECK(header_length == sizeof(i));
    std::memcpy(&i, header, sizeof(i));
    ICHECK_MSG(i == k->seen, "kept AM #%llu arrived as #%llu", (unsigned long long)i,
               (unsigned long long)k->seen);
    ++k->seen;
    ICHECK_PATTERN(data, length, pattern_seed(length, 0, i), "kept AM #%llu in the handler",
                   (unsigned long long)i);
    if (i % 2 == 1) return SWY_OK;  // not kept: freed after the call
    k->data.push_back(data);
    k->length.push_back(length);
    k->index.push_back(i);
    return SWY_INPROGRESS;
}

void keep(World& w, const std::string& tls) {
    NodeOptions opts;
    opts.config = am_config(tls);
    Node n(w, opts);
    swy_worker_h wk = n.worker();
    Kept k;
    ICHECK_OK(swy_worker_set_am_handler(wk, kKeepId, on_keep, &k, SWY_AM_HANDLER_FLAG_KEEP_DATA));
    n.connect_all();
    const size_t max = am_eager_max(n.ep(1 - w.rank()));
    const uint64_t count = 200;
    if (w.rank() == 1) {
        auto deadline = deadline_in(60);
        while (k.seen < kKeepRounds * count) {
            swy_worker_progress(wk);
            exit_if_aborted();
            ICHECK_MSG(Clock::now() < deadline, "timed out: %llu kept AMs",
                       (unsigned long long)k.seen);
        }
        // Later messages went through the same cells: what was kept is untouched.
        for (size_t j = 0; j < k.data.size(); ++j) {
            ICHECK_PATTERN(k.data[j], k.length[j], pattern_seed(k.length[j], 0, k.index[j]),
                           "kept AM #%llu after later traffic", (unsigned long long)k.index[j]);
            swy_am_data_release(wk, k.data[j]);
        }
    } else {
        std::vector<std::vector<unsigned char>> data(kKeepRounds * count);
        std::vector<AmSend> sends;
        for (uint64_t i = 0; i < kKeepRounds * count; ++i) {
            data[i].resize(keep_size(i, max));
            fill_pattern(data[i].data(), data[i].size(), pattern_seed(data[i].size(), 0, i));
            sends.push_back(
                post_am(n.ep(1), kKeepId, &i, sizeof(i), data[i].data(), data[i].size()));
        }
        for (auto& s : sends)
            ICHECK_STATUS(finish_am(wk, s), SWY_OK);
    }
    n.finish();
}

TEST(AmOrder, TenThousandInterleavedWithTagsShm) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { ordered(w, "shm,cma"); }));
}

TEST(AmOrder, TenThousandInterleavedWithTagsTcp) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { ordered(w, "tcp,self"); }));
}

TEST(AmKeep, HandlerKeepsEagerDataShm) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { keep(w, "shm"); }));
}

TEST(AmKeep, HandlerKeepsEagerDataTcp) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { keep(w, "tcp,self"); }));
}

}  // namespace
}  // namespace swy_itest

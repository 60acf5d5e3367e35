// Active messages at every size that matters, over self, shm and tcp, 1 (self), 2 and 4
// processes all-to-all: data sizes 0, 1, 8, eager limit -1/0/+1 (header included) and 64 MiB,
// header sizes 0, 8 and SWY_AM_MAX_HEADER, forced rendezvous of small data; headers and data
// verified byte for byte, eager data in place and rendezvous data pulled from inside the
// handler into buffers with guard bytes. Each sender uses its own AM id (kId + rank): one
// handler per id. The reply endpoint names the sender where one of ours sends on the lane the
// message came on (self, shm; tcp connects each direction on its own, so it is NULL there).
// AMs never reach a tag receive or a probe.
#include <deque>
#include <string>
#include <vector>

#include "am_util.h"

namespace swy_itest {
namespace {

constexpr uint16_t kId = 7;
constexpr int kLimitWords = 8;  // scratch[8 + sender * kMaxRanks + receiver]: eager limit
constexpr size_t kLarge = size_t{64} << 20;

struct Msg {
    size_t size;
    size_t header_length;
    uint32_t flags;
    bool rndv;  ///< the handler must get a descriptor
};

/// What a sender with eager limit @p max sends each peer, in order.
std::vector<Msg> plan(size_t max, bool large) {
    std::vector<Msg> msgs;
    for (size_t h : {size_t{0}, size_t{8}, size_t{SWY_AM_MAX_HEADER}}) {
        const size_t m = max - h;  // data that fills the packet
        for (size_t s : {size_t{0}, size_t{1}, size_t{8}, m - 1, m, m + 1})
            msgs.push_back({s, h, 0, s + h > max});
    }
    msgs.push_back({8, 8, SWY_AM_SEND_FLAG_RNDV, true});
    msgs.push_back({0, 0, SWY_AM_SEND_FLAG_RNDV, true});
    msgs.push_back({max - 8, 8, SWY_AM_SEND_FLAG_EAGER, false});
    if (large) msgs.push_back({kLarge, SWY_AM_MAX_HEADER, 0, true});
    return msgs;
}

struct Inbox {
    Node* node = nullptr;
    int nranks = 0;
    bool reply_ep_expected = true;
    std::vector<bool> have;               // endpoints this rank has (by rank)
    std::vector<std::vector<Msg>> plans;  // what each sender sends us
    std::vector<size_t> count;            // messages seen per sender
    struct Pulled {
        AmPull pull;
        int sender;
        size_t index;
        size_t size;
    };
    std::deque<Pulled> pulls;
};

/// The handler argument of sender @p sender's id.
struct FromSender {
    Inbox* in;
    int sender;
};

swy_status_t on_am(void* arg, const void* header, size_t header_length, void* data, size_t length,
                   const swy_am_recv_param_t* param) {
    Inbox* in = static_cast<FromSender*>(arg)->in;
    const int s = static_cast<FromSender*>(arg)->sender;
    ICHECK((param->field_mask & SWY_AM_RECV_PARAM_FIELD_REPLY_EP) != 0);
    ICHECK((param->field_mask & SWY_AM_RECV_PARAM_FIELD_FLAGS) != 0);
    if (param->reply_ep != nullptr || in->reply_ep_expected) {
        const int r = rank_of_ep(*in->node, in->nranks, param->reply_ep, in->have);
        ICHECK_MSG(r == s, "message from rank %d: the reply endpoint %p is rank %d's", s,
                   (void*)param->reply_ep, r);
    }
    const size_t i = in->count[s]++;
    ICHECK_MSG(i < in->plans[s].size(), "message #%zu from rank %d: more than were sent", i, s);
    const Msg& m = in->plans[s][i];
    ICHECK_MSG(header_length == m.header_length && length == m.size,
               "message #%zu from rank %d: header %zu data %zu, sent header %zu data %zu", i, s,
               header_length, length, m.header_length, m.size);
    ICHECK_PATTERN(header, header_length, header_seed(header_length, s, i),
                   "header of message #%zu from rank %d", i, s);
    const bool rndv = (param->flags & SWY_AM_RECV_FLAG_RNDV) != 0;
    ICHECK_MSG(rndv == m.rndv, "message #%zu from rank %d (%zu + %zu bytes): rendezvous %d", i, s,
               header_length, length, (int)rndv);
    ICHECK_MSG((param->flags & SWY_AM_RECV_FLAG_DATA_KEEPABLE) == 0,
               "data keepable without SWY_AM_HANDLER_FLAG_KEEP_DATA");
    if (!rndv) {
        ICHECK_PATTERN(data, length, pattern_seed(length, s, i), "message #%zu from rank %d", i, s);
        return SWY_OK;
    }
    in->pulls.push_back({});
    Inbox::Pulled& p = in->pulls.back();
    p.sender = s;
    p.index = i;
    p.size = length;
    start_pull(in->node->worker(), p.pull, data, length);  // inside the handler
    return SWY_OK;
}

void exchange(World& w, const std::string& tls, bool large) {
    NodeOptions opts;
    opts.config = am_config(tls);
    Node n(w, opts);
    swy_worker_h wk = n.worker();
    const bool self = w.size() == 1;
    Inbox in;
    in.node = &n;
    in.nranks = w.size();
    in.have.assign(w.size(), false);
    for (int r = 0; r < w.size(); ++r)
        in.have[r] = self || r != w.rank();
    in.plans.resize(w.size());
    in.count.assign(w.size(), 0);
    in.reply_ep_expected = tls.rfind("tcp", 0) != 0;
    std::vector<FromSender> from(w.size());
    for (int r = 0; r < w.size(); ++r) {
        from[r] = {&in, r};
        ICHECK_OK(
            swy_worker_set_am_handler(wk, static_cast<uint16_t>(kId + r), on_am, &from[r], 0));
    }
    n.connect_all(self);
    for (int r = 0; r < w.size(); ++r) {
        if (in.have[r])
            w.scratch(kLimitWords + w.rank() * kMaxRanks + r).store(am_eager_max(n.ep(r)));
    }
    // A wildcard tag receive that no active message may match.
    std::vector<unsigned char> tag_buf(64);
    Recv tag_recv = post_recv(wk, tag_buf.data(), tag_buf.size(), 0, 0);
    w.barrier(wk, 1);
    size_t expected = 0;
    for (int s = 0; s < w.size(); ++s) {
        if (!in.have[s]) continue;
        in.plans[s] = plan(w.scratch(kLimitWords + s * kMaxRanks + w.rank()).load(), large);
        expected += in.plans[s].size();
    }
    // Every rank knows what it will receive before anyone sends (the first barrier
    // progresses the worker, so an AM sent right after it could find no plan yet).
    w.barrier(wk, 2);

    std::vector<std::vector<unsigned char>> keep;  // send buffers, alive until completion
    std::vector<AmSend> sends;
    for (int r = 0; r < w.size(); ++r) {
        if (!in.have[r]) continue;
        const size_t max = am_eager_max(n.ep(r));
        const std::vector<Msg> msgs = plan(max, large);
        for (size_t i = 0; i < msgs.size(); ++i) {
            const Msg& m = msgs[i];
            std::vector<unsigned char> header(m.header_length);
            fill_pattern(header.data(), m.header_length, header_seed(m.header_length, w.rank(), i));
            keep.emplace_back(m.size);
            fill_pattern(keep.back().data(), m.size, pattern_seed(m.size, w.rank(), i));
            sends.push_back(post_am(n.ep(r), static_cast<uint16_t>(kId + w.rank()), header.data(),
                                    m.header_length, keep.back().data(), m.size, m.flags));
            ICHECK_MSG(sends.back().status == SWY_OK || sends.back().status == SWY_INPROGRESS,
                       "AM #%zu (%zu + %zu bytes) to rank %d: %s", i, m.header_length, m.size, r,
                       swy_status_string(sends.back().status));
            if (m.rndv) {
                ICHECK_MSG(!sends.back().done, "a rendezvous AM of %zu bytes completed at once",
                           m.size);
            }
        }
        // Forced eager that does not fit is refused at the call.
        std::vector<unsigned char> big(max + 1);
        AmSend refused =
            post_am(n.ep(r), kId, nullptr, 0, big.data(), big.size(), SWY_AM_SEND_FLAG_EAGER);
        ICHECK_STATUS(refused.status, SWY_ERR_INVALID_PARAM);
    }

    auto deadline = deadline_in(60);
    for (;;) {
        swy_worker_progress(wk);
        size_t seen = 0;
        for (size_t c : in.count)
            seen += c;
        bool all = seen == expected;
        for (auto& p : in.pulls)
            all = pull_done(p.pull) && all;
        for (auto& s : sends)
            all = am_send_done(s) && all;
        if (all) break;
        exit_if_aborted();
        ICHECK_MSG(Clock::now() < deadline, "timed out: %zu of %zu AMs seen", seen, expected);
    }
    for (auto& s : sends)
        ICHECK_STATUS(s.status, SWY_OK);
    for (auto& p : in.pulls) {
        ICHECK_MSG(p.pull.status == SWY_OK, "pull of message #%zu from rank %d: %s", p.index,
                   p.sender, swy_status_string(p.pull.status));
        ICHECK_MSG(p.pull.info.length == p.size, "pull length %zu, message %zu", p.pull.info.length,
                   p.size);
        ICHECK_PATTERN(p.pull.buffer.data(), p.size, pattern_seed(p.size, p.sender, p.index),
                       "rendezvous message #%zu (%zu bytes) from rank %d", p.index, p.size,
                       p.sender);
        ICHECK(guard_intact(p.pull.buffer.data() + p.size));
    }
    // Tag matching never saw any of it.
    swy_tag_recv_info_t info{};
    ICHECK_STATUS(swy_tag_probe_nb(wk, 0, 0, 0, &info, nullptr), SWY_ERR_NO_MESSAGE);
    ICHECK_STATUS(swy_request_test(tag_recv.req), SWY_INPROGRESS);
    ICHECK_OK(swy_request_cancel(wk, tag_recv.req));
    ICHECK_STATUS(finish_recv(wk, tag_recv), SWY_ERR_CANCELED);
    n.finish();
}

TEST(AmSizes, SelfOneProcess) {
    EXPECT_TRUE(run_ranks(1, [](World& w) { exchange(w, "self", true); }));
}

TEST(AmSizes, ShmTwoProcesses) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { exchange(w, "shm", true); }));
}

TEST(AmSizes, ShmCmaTwoProcesses) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { exchange(w, "shm,cma", true); }));
}

TEST(AmSizes, TcpTwoProcesses) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { exchange(w, "tcp,self", true); }));
}

TEST(AmSizes, ShmFourProcessesAllToAll) {
    EXPECT_TRUE(run_ranks(4, [](World& w) { exchange(w, "shm,cma", false); }));
}

TEST(AmSizes, TcpFourProcessesAllToAll) {
    EXPECT_TRUE(run_ranks(4, [](World& w) { exchange(w, "tcp,self", false); }));
}

}  // namespace
}  // namespace swy_itest

// Cost of one match against queue depth. Exact tags must stay flat (hashed, O(1));
// wildcards scan a list in post/arrival order, so they grow with depth — shown for contrast.
#include "protocols/tag/matcher.h"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

namespace {

using swy::proto::PostedReceive;
using swy::proto::TagMatcher;
using swy::proto::UnexpectedMessage;

constexpr uint64_t kExact = ~0ull;
constexpr uint64_t kAnyTag = 0xffffffff00000000ull;  // keeps context|rank

// MPI-style packing: context (16 bits) | source rank (16 bits) | user tag (32 bits).
constexpr uint64_t pack(uint64_t ctx, uint64_t rank, uint64_t user) {
    return (ctx << 48) | (rank << 32) | user;
}

// Distinct tags spread like a real job: 64 ranks, each with its own run of user tags.
uint64_t distinct_tag(size_t i) { return pack(1, i % 64, i / 64); }

// (a) A message arrives for one of `depth` posted exact receives; the receive is re-posted
// so the depth stays constant.
void BM_MatchPostedExact(benchmark::State& state) {
    const auto depth = static_cast<size_t>(state.range(0));
    TagMatcher matcher;
    std::vector<PostedReceive> recvs(depth);
    for (size_t i = 0; i < depth; ++i) {
        recvs[i].tag = distinct_tag(i);
        recvs[i].mask = kExact;
        matcher.post(&recvs[i]);
    }
    size_t k = 0;
    for (auto _ : state) {
        PostedReceive* r = matcher.match_posted(recvs[k].tag);
        benchmark::DoNotOptimize(r);
        matcher.post(r);
        if (++k == depth) k = 0;
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MatchPostedExact)->RangeMultiplier(10)->Range(1, 10000);

// (b) A receive is posted for one of `depth` unexpected messages with distinct exact tags;
// the message is re-queued so the depth stays constant.
void BM_MatchUnexpectedExact(benchmark::State& state) {
    const auto depth = static_cast<size_t>(state.range(0));
    TagMatcher matcher;
    std::vector<UnexpectedMessage> msgs(depth);
    for (size_t i = 0; i < depth; ++i) {
        msgs[i].tag = distinct_tag(i);
        matcher.add_unexpected(&msgs[i]);
    }
    size_t k = 0;
    for (auto _ : state) {
        UnexpectedMessage* m = matcher.match_unexpected(msgs[k].tag, kExact, true);
        benchmark::DoNotOptimize(m);
        matcher.add_unexpected(m);
        if (++k == depth) k = 0;
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MatchUnexpectedExact)->RangeMultiplier(10)->Range(1, 10000);

// (c1) Worst case for wildcard receives: `depth` MPI_ANY_TAG receives are queued and only
// the newest accepts the incoming message (it comes from another rank), so every match scans
// the whole wildcard list.
void BM_MatchPostedWildcard(benchmark::State& state) {
    const auto depth = static_cast<size_t>(state.range(0));
    TagMatcher matcher;
    std::vector<PostedReceive> recvs(depth);
    for (size_t i = 0; i < depth; ++i) {
        recvs[i].tag = pack(1, i + 1 == depth ? 2 : 1, 0);
        recvs[i].mask = kAnyTag;
        matcher.post(&recvs[i]);
    }
    const uint64_t incoming = pack(1, 2, 77);
    for (auto _ : state) {
        PostedReceive* r = matcher.match_posted(incoming);
        benchmark::DoNotOptimize(r);
        matcher.post(r);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MatchPostedWildcard)->RangeMultiplier(10)->Range(1, 10000);

// (c2) Worst case for a wildcard receive/probe on the unexpected queue: only the newest of
// `depth` messages is from the rank it accepts, so it scans the whole arrival list.
void BM_MatchUnexpectedWildcard(benchmark::State& state) {
    const auto depth = static_cast<size_t>(state.range(0));
    TagMatcher matcher;
    std::vector<UnexpectedMessage> msgs(depth);
    for (size_t i = 0; i < depth; ++i) {
        msgs[i].tag = pack(1, i + 1 == depth ? 2 : 1, i);
        matcher.add_unexpected(&msgs[i]);
    }
    for (auto _ : state) {
        UnexpectedMessage* m = matcher.match_unexpected(pack(1, 2, 0), kAnyTag, true);
        benchmark::DoNotOptimize(m);
        matcher.add_unexpected(m);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MatchUnexpectedWildcard)->RangeMultiplier(10)->Range(1, 10000);

}  // namespace

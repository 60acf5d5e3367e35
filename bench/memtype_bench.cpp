// Memory-type detection cost: the price every send pays to learn what its buffer is.
//   host only (SWY_MEMTYPES=host): target < 2 ns (an inline flag test);
//   device plugin loaded, cache hit: target < 30 ns;
//   miss (host pointer with simdev loaded): plugin lookups, no caching of host.
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "memtypes/registry.h"

using namespace swy;
using namespace swy::mem;

namespace {

std::unique_ptr<MemTypeRegistry> make(std::vector<std::string> names) {
    common::Config config;
    std::unique_ptr<MemTypeRegistry> reg;
    std::string why;
    if (MemTypeRegistry::create(names, config, &reg, &why) != Status::kOk) std::abort();
    return reg;
}

void BM_DetectHostOnly(benchmark::State& state) {
    auto reg = make({"host"});
    std::vector<char> buf(4096);
    const void* p = buf.data();
    for (auto _ : state) {
        benchmark::DoNotOptimize(p);
        MemType t = reg->detect(p, 64);
        benchmark::DoNotOptimize(t);
    }
}
BENCHMARK(BM_DetectHostOnly);

// The same pointer again and again: the per-thread last-hit slot.
void BM_DetectSimdevCacheHitSameRange(benchmark::State& state) {
    auto reg = make({"simdev"});
    void* d = nullptr;
    reg->allocate(MemType::kSimdev, 1 << 20, &d);
    const char* p = static_cast<char*>(d) + 4096;
    for (auto _ : state) {
        benchmark::DoNotOptimize(p);
        MemRange r;
        MemType t = reg->detect(p, 64, &r);
        benchmark::DoNotOptimize(t);
        benchmark::DoNotOptimize(r);
    }
    reg->release(d);
}
BENCHMARK(BM_DetectSimdevCacheHitSameRange)->ThreadRange(1, 2);

// Round-robin over many ranges: the slot misses, the shared_mutex + map answers.
void BM_DetectSimdevCacheHitManyRanges(benchmark::State& state) {
    auto reg = make({"simdev"});
    const size_t n = static_cast<size_t>(state.range(0));
    std::vector<void*> bufs(n);
    for (auto& b : bufs)
        reg->allocate(MemType::kSimdev, 1 << 16, &b);
    for (void* b : bufs)
        reg->detect(b, 1);  // warm the cache
    size_t i = 0;
    for (auto _ : state) {
        MemType t = reg->detect(static_cast<char*>(bufs[i]) + 128, 64);
        benchmark::DoNotOptimize(t);
        i = i + 1 == n ? 0 : i + 1;
    }
    for (void* b : bufs)
        reg->release(b);
}
BENCHMARK(BM_DetectSimdevCacheHitManyRanges)->Arg(2)->Arg(64)->Arg(1024)->ThreadRange(1, 2);

// A host buffer with simdev loaded: never cached, so every call asks the plugin (which is
// definitive, so the answer is host).
void BM_DetectMissHostWithSimdev(benchmark::State& state) {
    auto reg = make({"simdev"});
    std::vector<void*> bufs(64);
    for (auto& b : bufs)
        reg->allocate(MemType::kSimdev, 1 << 16, &b);
    std::vector<char> host(4096);
    const void* p = host.data();
    for (auto _ : state) {
        benchmark::DoNotOptimize(p);
        MemType t = reg->detect(p, 64);
        benchmark::DoNotOptimize(t);
    }
    for (void* b : bufs)
        reg->release(b);
}
BENCHMARK(BM_DetectMissHostWithSimdev)->ThreadRange(1, 2);

// First detection of a device range after its cache entry was dropped (plugin + insert).
void BM_DetectMissDeviceThenCache(benchmark::State& state) {
    auto reg = make({"simdev"});
    void* d = nullptr;
    reg->allocate(MemType::kSimdev, 1 << 16, &d);
    for (auto _ : state) {
        state.PauseTiming();
        reg->invalidate(d, 1);
        state.ResumeTiming();
        MemType t = reg->detect(d, 64);
        benchmark::DoNotOptimize(t);
    }
    reg->release(d);
}
BENCHMARK(BM_DetectMissDeviceThenCache);

void BM_RangeCacheLookupSlot(benchmark::State& state) {
    RangeCache cache;
    cache.insert(MemRange{MemType::kSimdev, false, 0, 0x100000, 0x10000});
    uintptr_t p = 0x100080;
    for (auto _ : state) {
        benchmark::DoNotOptimize(p);
        MemRange r;
        bool hit = cache.lookup(p, 64, &r);
        benchmark::DoNotOptimize(hit);
    }
}
BENCHMARK(BM_RangeCacheLookupSlot);

}  // namespace

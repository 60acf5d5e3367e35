#include "core/request.h"

namespace swy::core {

Request* RequestPool::get(Worker* worker) {
    if (free_.empty()) {
        auto chunk = std::make_unique<Request[]>(kChunk);
        uint32_t base = static_cast<uint32_t>(chunks_.size() * kChunk);
        for (size_t i = kChunk; i-- > 0;) {
            chunk[i].index = base + static_cast<uint32_t>(i);
            free_.push_back(&chunk[i]);
        }
        chunks_.push_back(std::move(chunk));
    }
    Request* r = free_.back();
    free_.pop_back();
    uint32_t index = r->index;
    uint32_t generation = r->generation + 1;
    *r = Request{};
    r->index = index;
    r->generation = generation;
    r->worker = worker;
    ++in_use_;
    return r;
}

void RequestPool::put(Request* r) {
    r->generation++;  // a late ack for the old use no longer finds it
    r->completed = true;
    r->kind = RequestKind::kClose;
    free_.push_back(r);
    --in_use_;
}

Request* RequestPool::find(uint64_t wire_id) const {
    uint32_t index = static_cast<uint32_t>(wire_id);
    uint32_t generation = static_cast<uint32_t>(wire_id >> 32);
    size_t chunk = index / kChunk;
    if (chunk >= chunks_.size()) return nullptr;
    Request* r = &chunks_[chunk][index % kChunk];
    if (r->generation != generation || r->completed) return nullptr;
    return r;
}

}  // namespace swy::core

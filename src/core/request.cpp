#include "core/request.h"

#include <switchyard/am.h>

#include <sys/random.h>
#include <time.h>

#include <cerrno>
#include <new>

namespace swy::core {

void RequestPool::refill_nonces() {
    if (getrandom(nonces_, sizeof(nonces_), 0) == static_cast<ssize_t>(sizeof(nonces_))) {
        nonces_left_ = kNonceBatch;
        return;
    }
    // Not expected on Linux; still never a plain counter (splitmix64 of the clock and a
    // running state).
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t z = (fallback_state_ += 0x9E3779B97F4A7C15ull) ^ static_cast<uint64_t>(ts.tv_nsec);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    nonces_[0] = static_cast<uint32_t>(z ^ (z >> 31));
    nonces_left_ = 1;
}

void RequestPool::add_chunk() {
    auto chunk = std::make_unique<Request[]>(kChunk);
    if (!handle::fits(chunk.get() + kChunk)) {
        handle::address_too_high("request pool", chunk.get());
    }
    uint32_t base = static_cast<uint32_t>(chunks_.size() * kChunk);
    for (size_t i = kChunk; i-- > 0;) {
        chunk[i].index = base + static_cast<uint32_t>(i);
        // A never-used slot is as dead as a freed one (see put()): find() must not hand
        // a peer's id with generation 0 a blank send (found by test/fuzz, worker_am).
        chunk[i].completed = true;
        chunk[i].kind = RequestKind::kClose;
        free_.push_back(&chunk[i]);
    }
    chunks_.push_back(std::move(chunk));
}

void RequestPool::release_view(Request* r) {
    r->view->finish();  // idempotent: once per operation, whether completed or not
    views_free_.push_back(r->view);
    r->view = nullptr;
}

Request* RequestPool::get_external(Worker* worker, void* memory) {
    if (external_free_.empty()) {
        auto chunk = std::make_unique<ExternalSlot[]>(kChunk);
        if (!handle::fits(chunk.get() + kChunk)) {
            handle::address_too_high("request slots", chunk.get());
        }
        const auto base = static_cast<uint32_t>(external_chunks_.size() * kChunk);
        for (size_t i = kChunk; i-- > 0;) {
            chunk[i].index = kExternalIndex | (base + static_cast<uint32_t>(i));
            external_free_.push_back(&chunk[i]);
        }
        external_chunks_.push_back(std::move(chunk));
    }
    ExternalSlot* slot = external_free_.back();
    external_free_.pop_back();
    // The caller's bytes are whatever they were: construct every field (the default member
    // initialisers are the same state reset() gives a pooled request).
    auto* r = new (memory) Request;
    r->external = slot;
    r->index = slot->index;
    r->generation = next_generation(slot->last_generation);
    r->worker = worker;
    slot->request = r;
    ++in_use_;
    return r;
}

void RequestPool::put_external(Request* r) {
    ExternalSlot* slot = r->external;
    slot->last_generation = r->generation;
    slot->request = nullptr;  // find() and handles no longer reach the caller's memory
    ++slot->handle_generation;
    r->~Request();
    external_free_.push_back(slot);
    --in_use_;
}

Request* RequestPool::find(uint64_t wire_id) const {
    uint32_t index = static_cast<uint32_t>(wire_id);
    uint32_t generation = static_cast<uint32_t>(wire_id >> 32);
    if (__builtin_expect((index & kExternalIndex) != 0, 0)) {
        const size_t slot = index & ~kExternalIndex;
        if (slot / kChunk >= external_chunks_.size()) return nullptr;
        Request* r = external_chunks_[slot / kChunk][slot % kChunk].request;
        if (r == nullptr || r->generation != generation || r->completed) return nullptr;
        return r;
    }
    size_t chunk = index / kChunk;
    if (chunk >= chunks_.size()) return nullptr;
    Request* r = &chunks_[chunk][index % kChunk];
    if (r->generation != generation || r->completed) return nullptr;
    return r;
}

}  // namespace swy::core

// SlotArena: where a worker keeps objects the application holds handles to (endpoints).
// Each object sits in a slot with a generation in front of it; the slot's memory stays until
// the arena goes (with its worker), so a handle to a closed object can still be checked
// against the slot's generation (core/handle.h) instead of being followed into freed memory.
// Not thread-safe: the worker's lock covers it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "core/handle.h"

namespace swy::core {

template <typename T>
class SlotArena {
public:
    SlotArena() = default;
    SlotArena(const SlotArena&) = delete;
    SlotArena& operator=(const SlotArena&) = delete;
    /// Every object must have been destroyed first (their owner's teardown does it).
    ~SlotArena() = default;

    /// Construct a T in a free slot.
    template <typename... Args>
    T* make(Args&&... args) {
        if (free_.empty()) grow();
        Slot* s = free_.back();
        free_.pop_back();
        return new (s->storage) T(std::forward<Args>(args)...);
    }

    /// Handles to @p p stop working now; the object itself stays until destroy().
    static void retire(T* p) { ++slot_of(p)->generation; }

    /// Destroy @p p and free its slot (handles to it stop working, if retire() did not already).
    void destroy(T* p) {
        Slot* s = slot_of(p);
        p->~T();
        ++s->generation;
        free_.push_back(s);
    }

    /// The handle of @p p (an object of some arena of this type).
    static uintptr_t handle_of(const T* p) { return handle::make(p, slot_of(p)->generation); }

    /// The object @p h names, or nullptr when the handle is stale (retired, destroyed, reused).
    static T* resolve(uintptr_t h) {
        T* p = handle::address<T>(h);
        if (__builtin_expect(p == nullptr || slot_of(p)->generation != handle::generation(h), 0)) {
            return nullptr;
        }
        return p;
    }

private:
    // The generation just before the object: the handle check and the object's first fields
    // share a cache line.
    struct Slot {
        uint16_t generation;
        alignas(T) unsigned char storage[sizeof(T)];
    };
    static constexpr size_t kChunk = 32;

    static Slot* slot_of(const T* p) {
        return reinterpret_cast<Slot*>(
            const_cast<unsigned char*>(reinterpret_cast<const unsigned char*>(p)) -
            offsetof(Slot, storage));
    }

    void grow() {
        auto chunk = std::make_unique<Slot[]>(kChunk);  // value-initialised: generations 0
        if (!handle::fits(chunk.get() + kChunk)) handle::address_too_high("slot arena", &chunk[0]);
        for (size_t i = kChunk; i-- > 0;)
            free_.push_back(&chunk[i]);
        chunks_.push_back(std::move(chunk));
    }

    std::vector<std::unique_ptr<Slot[]>> chunks_;
    std::vector<Slot*> free_;
};

}  // namespace swy::core

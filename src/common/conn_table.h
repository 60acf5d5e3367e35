// The connection table of a connection-oriented transport (tcp, verbs): slots indexed by a
// 16-bit number that travels in wire fields, event tags and sender indices, each with a
// generation that changes whenever the slot is reused. A key (slot, generation), as
// tl::connection_key encodes it, therefore names one connection forever: a late event,
// completion or reply for a connection that closed finds its slot holding another generation
// (or nothing) and is refused, never delivered to a stranger.
//
// Reuse is as late as possible: new slots are made until the capacity is reached, and then
// the slot freed longest ago is taken first (a FIFO free list), so a stale key meets a
// closed connection rather than a reused one for as long as the table allows.
//
// Setup-time structure (add, release, erase allocate and may scan the free list); lookup is
// one bounds check, one load and one compare: fine on a hot path. Not thread-safe (the
// worker serialises transports).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

namespace swy::common {

/// @tparam Conn  a connection type with `uint16_t index` and `uint32_t generation` members
///               (set by the table) and a default constructor.
template <class Conn>
class ConnTable {
public:
    /// A generation no connection ever has: a key holding it never matches.
    static constexpr uint32_t kNoGeneration = UINT32_MAX;
    /// The most slots a 16-bit index can name (index 0xFFFF stays unused).
    static constexpr size_t kMaxSlots = 0xFFFF;

    /// @param capacity         slots at most (clamped to kMaxSlots)
    /// @param generation_mask  generations count up within this mask (verbs keeps 15 bits of
    ///                         one in a work request id); must stay below kNoGeneration
    explicit ConnTable(size_t capacity = kMaxSlots, uint32_t generation_mask = 0x7FFFFFFF)
        : capacity_(capacity < kMaxSlots ? capacity : kMaxSlots), mask_(generation_mask) {}

    /// A new connection in a free slot, with index and generation set; null when every slot
    /// is in use. @p can_reuse(const Conn&) says whether a released slot's old connection may
    /// be replaced now (e.g. not while its failure is still to be reported); @p retire(Conn&)
    /// runs on that old connection just before it is destroyed.
    template <class CanReuse, class Retire>
    Conn* add(CanReuse&& can_reuse, Retire&& retire) {
        if (slots_.size() < capacity_) {
            slots_.push_back(std::make_unique<Conn>());
            Conn* c = slots_.back().get();
            c->index = static_cast<uint16_t>(slots_.size() - 1);
            c->generation = 0;
            return c;
        }
        for (auto it = free_.begin(); it != free_.end(); ++it) {
            const uint16_t index = *it;
            std::unique_ptr<Conn>& slot = slots_[index];
            if (slot && !can_reuse(static_cast<const Conn&>(*slot))) continue;
            free_.erase(it);
            released_[index] = false;
            const uint32_t generation = next_generation(index);
            if (slot) retire(*slot);
            slot = std::make_unique<Conn>();
            slot->index = index;
            slot->generation = generation;
            return slot.get();
        }
        return nullptr;
    }
    /// add() for a table whose released connections may always be replaced.
    Conn* add() {
        return add([](const Conn&) { return true; }, [](Conn&) {});
    }

    /// The connection in slot @p index if it has @p generation; null otherwise (stale key,
    /// empty slot, index out of range).
    Conn* lookup(uint16_t index, uint32_t generation) const {
        if (index >= slots_.size()) return nullptr;
        Conn* c = slots_[index].get();
        return c != nullptr && c->generation == generation ? c : nullptr;
    }

    /// The slot may be reused; its connection stays (lookups with its key still find it, so
    /// a closed connection can still answer "closed") until add() replaces it.
    void release(uint16_t index) {
        if (index >= slots_.size()) return;
        released_.resize(slots_.size(), false);
        if (released_[index]) return;  // released twice: still one free-list entry
        released_[index] = true;
        free_.push_back(index);
    }
    /// Destroy the connection in slot @p index now and let the slot be reused.
    void erase(uint16_t index) {
        if (index >= slots_.size() || !slots_[index]) return;
        last_generation_.resize(slots_.size(), 0);
        last_generation_[index] = slots_[index]->generation;
        slots_[index].reset();
        release(index);
    }
    /// Destroy every connection (the table is then as new).
    void clear() {
        slots_.clear();
        free_.clear();
        released_.clear();
        last_generation_.clear();
    }

    /// Slots made so far (one past the highest index in use or used).
    size_t size() const { return slots_.size(); }
    size_t capacity() const { return capacity_; }
    /// Slot @p index (may be empty after erase()); @p index must be below size().
    const std::unique_ptr<Conn>& operator[](size_t index) const { return slots_[index]; }
    /// Every slot, empty ones included, in index order.
    auto begin() const { return slots_.begin(); }
    auto end() const { return slots_.end(); }

private:
    uint32_t next_generation(uint16_t index) const {
        uint32_t last = 0;
        if (slots_[index]) {
            last = slots_[index]->generation;
        } else if (index < last_generation_.size()) {
            last = last_generation_[index];
        }
        return (last + 1) & mask_;
    }

    size_t capacity_;
    uint32_t mask_;
    std::vector<std::unique_ptr<Conn>> slots_;
    std::deque<uint16_t> free_;              // released slots, oldest first
    std::vector<bool> released_;             // on free_ (index: slot)
    std::vector<uint32_t> last_generation_;  // of erased slots (their object is gone)
};

}  // namespace swy::common

// Sender-side flow control of one RC connection. The receiver posts `capacity` buffers for the
// connection before it announces them; a message may only be sent while fewer than `capacity`
// of ours are unconsumed, so a SEND never finds an empty receive queue (no RNR, by
// construction). The receiver reports a cumulative 16-bit count of our messages it consumed
// and re-posted, both in the immediate of its own SENDs and by an RDMA WRITE into a word we
// own; the two paths may deliver an older count after a newer one, so a report is taken only
// if it moves the count forward within what we actually sent. The receiver may lend more
// buffers later (grow(), from the credit word): capacities only grow.
#pragma once

#include <cstdint>

namespace swy::tl::verbs {

class CreditWindow {
public:
    /// @param capacity  receive buffers the peer posted for us (1 .. 32767)
    explicit CreditWindow(uint16_t capacity = 0) : capacity_(capacity) {}

    uint16_t capacity() const { return capacity_; }
    /// Messages that may be sent now.
    uint16_t available() const { return static_cast<uint16_t>(capacity_ - in_flight()); }
    uint16_t in_flight() const { return static_cast<uint16_t>(sent_ - freed_); }

    /// Take one credit; false (and nothing changes) when none is left.
    bool take() {
        if (in_flight() >= capacity_) return false;
        ++sent_;
        return true;
    }
    /// The receiver lends more buffers: raise the capacity to @p capacity (at most 32767;
    /// smaller or equal values, stale or hostile, change nothing). @return true if it grew.
    bool grow(uint16_t capacity) {
        if (capacity <= capacity_ || capacity > 0x7FFF) return false;
        capacity_ = capacity;
        return true;
    }
    /// Apply a cumulative report; stale or impossible reports are ignored. @return true if
    /// credits came back.
    bool update(uint16_t freed) {
        const auto advance = static_cast<uint16_t>(freed - freed_);
        if (advance == 0 || advance > in_flight()) return false;
        freed_ = freed;
        return true;
    }

private:
    uint16_t capacity_;
    uint16_t sent_ = 0;
    uint16_t freed_ = 0;
};

/// Receiver-side bookkeeping: how many of the peer's messages we consumed, and how many of
/// those the peer already knows about.
class CreditReturn {
public:
    void consumed() { ++freed_; }
    uint16_t freed() const { return freed_; }
    /// Consumed but not yet reported.
    uint16_t unreported() const { return static_cast<uint16_t>(freed_ - reported_); }
    void reported(uint16_t value) { reported_ = value; }

private:
    uint16_t freed_ = 0;
    uint16_t reported_ = 0;
};

}  // namespace swy::tl::verbs

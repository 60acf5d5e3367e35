// What a worker's shared segment may be made of: the bounds of SWY_SHM_FIFO_CELLS,
// SWY_SHM_CELL_SIZE, SWY_SHM_PIO_SLOTS, SWY_SHM_PIO_CREDITS and SWY_SHM_PIO_CELL_SIZE, and the
// rules that tie them together. Every geometry inside them carries every message size (issue
// #18 found two that hung); docs/configuration.md states them.
#pragma once

#include <cstdint>
#include <string>

#include "transports/shm/segment_layout.h"

namespace swy::tl::shm {

/// The FIFO is a Vyukov ring: with one cell, "free at position p+1" and "full at position p"
/// are the same sequence value, so a sender overwrites the cell the receiver has not read.
inline constexpr uint64_t kMinFifoCells = 2;
inline constexpr uint64_t kMaxFifoCells = 65536;
/// A cell carries at least two cache lines of message (its header lives apart: the FIFO
/// slot, before a PIO record); at most 1 MiB so that a fragment stays a copy the cache can
/// hold.
inline constexpr uint64_t kMinCellSize = 128;
inline constexpr uint64_t kMaxCellSize = 1u << 20;
/// The PIO slot table is read by every sender looking for a free ring.
inline constexpr uint64_t kMaxPioSlots = 256;
/// A PIO record never wraps: one that does not fit before the end of the ring pads it and
/// starts over at offset 0, so the ring must hold two of the largest records (the padding
/// plus the record); with one, a full-size record after any other never fits.
inline constexpr uint64_t kMinPioCredits = 2;
inline constexpr uint64_t kMaxPioCredits = 65536;
/// The FIFO's cells are initialised when the worker is created (at least one page per cell
/// is committed then); the rings are touched only where senders write.
inline constexpr uint64_t kMaxFifoBytes = 64u << 20;
inline constexpr uint64_t kMaxPioRingBytes = 16u << 20;
/// Sender slots (SWY_SHM_MAX_SENDERS): a cell names its sender in 16 bits.
inline constexpr uint64_t kMinMaxSenders = 1;
inline constexpr uint64_t kMaxMaxSenders = kSenderIndexLimit;
/// Every sender maps the whole segment of every receiver it talks to.
inline constexpr uint64_t kMaxSegmentBytes = 256u << 20;

/// True if @p g is within the bounds above; otherwise false and, in @p why, each rule it
/// breaks with the SWY_SHM_* values involved.
bool geometry_within_bounds(const SegmentGeometry& g, std::string* why);

}  // namespace swy::tl::shm

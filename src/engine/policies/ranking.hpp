// mlbs — ranking by next use, and the write-behind water marks: the inputs
// placement and the other policies work from. Pure; unit-tested in
// tests/unit/test_policies.cpp.
#pragma once

#include <cstdint>
#include <span>

#include "catalog/records.hpp"
#include "mlbs/config.hpp"

namespace mlbs::engine::policies {

/// Ranks from here on: no next use is known (fifo and lifo records read
/// already, explicit-order records the order names no more).
inline constexpr std::uint64_t kNoNextUse = 1ull << 62;

/// Where a record ranks by its next use, smaller = sooner (placement keeps
/// the soonest in the fastest tiers). A record a read waits for ranks first
/// (0). fifo: write order; lifo: newest first; unknown: least recently used
/// last (fifo and lifo: a record read already, which only a persistent store
/// keeps, after every record still to be read); explicit order: its next position in the order, after the
/// `reads_done` reads already made of it (`positions`: where its id appears,
/// ascending); records the order does not name (or names no more) rank after
/// every named one, in write order.
std::uint64_t next_use_rank(const catalog::Record& r, Schedule::Kind kind, std::span<const std::uint32_t> positions,
                            std::uint32_t reads_done);

/// Water-mark hysteresis for one tier: write-behind starts when the dirty
/// bytes exceed `high` x capacity and stops once they fall to `low` x
/// capacity (or to none); between the marks it keeps its state `was_active`.
/// An unlimited tier (capacity 0) writes behind only when told to do so
/// continuously (high = 0) and something is dirty.
bool write_behind_active(bool was_active, std::uint64_t dirty_bytes, std::uint64_t capacity_bytes, double high,
                         double low);

/// Whether `r`'s copy on tier `t` is dirty: the copy a write-behind would have
/// to save. Scratch: no copy below `t`; persistent: none on the last tier yet.
bool dirty_on(const catalog::Record& r, int t, int last, bool persistent);

}  // namespace mlbs::engine::policies

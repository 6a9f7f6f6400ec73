// mlbs — the DRAM slot pool: the memory tier's hard byte budget.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "mlbs/detail/block.hpp"

namespace mlbs::tiers {

/// Accounting and memory for the memory tier. One arena of the budget is
/// carved into 4096-aligned extents (best fit, coalescing on free). A thread
/// of the pool's pre-faults the arena in the background (first touch is
/// slow on some machines: 7 s for 2 GiB on ours), so construction returns at
/// once; allocation prefers extents already populated, and takes others
/// rather than wait (the copy into them touches their pages). The thread
/// owns the arena with the blocks; the pool's destructor asks it to stop.
/// Blocks that Stores hand over in an O(1) read swap are kept as spares of
/// their size, so pre-faulted memory stays in the pool however blocks travel.
///
/// The *budget* is logical: used_bytes() never exceeds capacity(). When the
/// arena is too fragmented for a request the budget admits, a fresh block is
/// allocated instead, so fragmentation never blocks a writer.
///
/// Not thread-safe except for extents coming home (Block destructors run on
/// any thread); the engine calls it under its lock.
class SlotPool {
 public:
  /// With `prefault`, pre-faulting starts now; else at start_prefault().
  explicit SlotPool(std::uint64_t capacity_bytes, bool prefault = true);
  ~SlotPool();
  SlotPool(const SlotPool&) = delete;
  SlotPool& operator=(const SlotPool&) = delete;

  std::uint64_t capacity() const noexcept { return capacity_; }
  std::uint64_t used_bytes() const noexcept { return used_; }
  std::uint64_t free_bytes() const noexcept { return capacity_ - used_; }
  bool fits(std::size_t bytes) const noexcept {
    // Compare before rounding: rounding a huge request up would wrap around.
    return bytes <= capacity_ - used_ && detail::round_up_block(bytes) <= capacity_ - used_;
  }

  /// A block of at least `bytes` counted against the budget, or nullopt if
  /// the budget does not admit it. Zero bytes yields an empty block.
  std::optional<detail::Block> allocate(std::size_t bytes);
  /// Returns a block obtained from allocate() (or adopted) to the pool.
  void release(detail::Block block) noexcept;
  /// A block leaves the budget for good (it became a Store's working buffer)
  /// and `replacement`, of equal capacity, takes its place as a free spare.
  void exchange(std::size_t capacity, detail::Block replacement) noexcept;

  std::uint64_t fallback_allocations() const noexcept { return fallbacks_; }
  /// Bytes of the arena populated so far (all of it once pre-faulting is done).
  std::uint64_t prefaulted_bytes() const noexcept;
  /// A block of `bytes` beside the budget (helpers' staging for copies
  /// between file tiers), populated by the pre-fault thread before the
  /// arena, so that no copy on a slower tier's path pays its first touch.
  /// Asked for once pre-faulting has started, it is touched now instead.
  detail::Block scratch(std::size_t bytes);
  /// Starts populating the arena in a background thread (once). Each step
  /// holds the process's memory-map lock for a huge page's first touch
  /// (milliseconds on some VMs), which stalls every mmap meanwhile: a
  /// runtime starts it after its own set-up (threads, rings, buffers).
  void start_prefault();
  /// Waits until the whole arena is populated (or pre-faulting gave up).
  void wait_prefaulted() const;

 private:
  struct Arena;
  struct Scratch;
  std::uint64_t capacity_;
  std::uint64_t used_ = 0;
  std::uint64_t fallbacks_ = 0;
  bool prefault_started_ = false;
  std::shared_ptr<Arena> arena_;
  std::multimap<std::size_t, detail::Block> spares_;  // by capacity
  std::uint64_t spare_bytes_ = 0;
};

}  // namespace mlbs::tiers

// mlbs — what the planner's policies see and what they answer: a read-only
// view of the catalog (records ranked by next use, with last pass's
// placement) and of the tiers (room, full, write-behind), and one Decision.
// The engine builds the view under its lock and carries the decision out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "catalog/records.hpp"

namespace mlbs::engine::policies {

/// Whether placement's wish to keep a record in DRAM (Record::want_mem)
/// protects its copy when room is made there (dram_room).
enum class Wishes { keep, yield };

using catalog::bit;
using catalog::Record;

/// One tier as the planner sees it.
struct TierView {
  /// Bytes that may still be placed there now: DRAM's free budget; for a
  /// file tier its capacity (or this rank's share of a node budget) less what
  /// it holds, 0 when latched full, unlimited = max.
  std::uint64_t free_bytes = std::numeric_limits<std::uint64_t>::max();
  /// What it may hold in all (this rank's share of a node budget); 0 = unlimited.
  std::uint64_t capacity_bytes = 0;
  /// The device said ENOSPC: nothing is sent there and nothing is evicted to
  /// make room (room comes back with a completed removal or a flush).
  bool full_latched = false;
  /// Dirty bytes crossed the high water mark and have not yet fallen to the
  /// low one (see write_behind_active()).
  bool write_behind = false;
  /// Helper copies reading or writing this tier now: a tier with none is
  /// idle, which copy_ahead() uses.
  std::uint32_t copies_in_flight = 0;
  /// Of these, the copies moving a record up out of this tier (into DRAM or
  /// a faster tier), which this tier's bandwidth limits: prefetches from it
  /// wait for them. A copy down to a slower tier is limited there instead.
  std::uint32_t fetches_in_flight = 0;
  /// Of these, the copies writing into this tier (from DRAM or another
  /// tier) that have not yet queued their last request: a drain into a
  /// tier already taking one adds no bandwidth there.
  std::uint32_t arrivals_in_flight = 0;
};

struct View {
  /// Every live record, soonest next use first; `Record::want_mem` and
  /// `Record::dir_target` hold this ranking's placement.
  std::span<const Record* const> ranked;
  /// Index 0 is DRAM, then the file tiers fastest first.
  std::span<const TierView> tiers;
  bool persistent = false;          ///< the last tier must end up with every record
  bool prefetching = false;         ///< the schedule is known: fetch ahead of reads
  std::uint64_t flush_horizon = 0;  ///< records with gen <= this are due on their tier now
  /// The last call was a write: the file tiers' room is being filled by
  /// records coming down, not freed by reads.
  bool writing = false;
  /// copy_ahead() may run: a record written now ranks before those written
  /// already (LIFO without a record-count hint, LRU), so new writes take the
  /// fast tiers' room from the records there and the furthest of these are
  /// the ones to leave; and Config::copy_ahead is on.
  bool copy_ahead = false;
  /// A write waits for a DRAM slot now (drain_dram may stage: Purpose::stage).
  bool write_waits = false;

  int last() const noexcept { return static_cast<int>(tiers.size()) - 1; }
};

/// A copy to drop: ranked[record]'s copy on `tier`.
struct Drop {
  std::size_t record = 0;
  int tier = 0;
  bool operator==(const Drop&) const = default;
};

/// Which policy decided, which is also why the copy is made.
enum class Purpose {
  demand_fetch,   ///< a read waits for this record: into DRAM
  drain_dram,     ///< a DRAM-only record placement sends below: frees a slot for writers
  stage,          ///< drain_dram's record goes to a faster tier with room while its target is busy
  drop_strays,    ///< file copies besides the target tier's go (no copy is made)
  move_down,      ///< a file copy above its target tier moves there
  prefetch_dram,  ///< soonest-used records into DRAM ahead of their reads
  prefetch_file,  ///< records below their target file tier move up to it
  persist,        ///< durability: a copy on the last tier, oldest write first
  for_readers,    ///< reader retention: an unread write's first file copy, for readers to read
  write_behind,   ///< a dirty DRAM record gets its file copy early
  copy_ahead,     ///< an idle slower tier takes a second copy of what the tier above would give up first
};

const char* to_string(Purpose p) noexcept;

/// One step of the plan: drop `drops` (evictions that make room, or strays),
/// then copy ranked[record] from tier `src` to tier `dst` (none for drop_strays).
struct Decision {
  Purpose purpose = Purpose::demand_fetch;
  std::size_t record = 0;
  int src = -1, dst = -1;
  std::vector<Drop> drops;
};

/// What planning noticed besides its decision.
struct Notes {
  /// Per tier: times a policy wanted room there and none could be made.
  std::vector<std::uint64_t> stalls;
};

}  // namespace mlbs::engine::policies

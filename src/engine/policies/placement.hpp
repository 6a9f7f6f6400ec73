// mlbs — placement: given records ranked by next use (soonest first) and tier
// capacities, where each record should live (Belady's ranking, without
// demotions between file tiers). Pure and unit-tested; the engine then moves
// records towards this target.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace mlbs::engine::policies {

struct PlacementItem {
  std::uint64_t bytes = 0;       ///< record size on file tiers
  std::uint64_t mem_bytes = 0;   ///< size of its DRAM slot (block-rounded)
  std::uint32_t avoid_mask = 0;  ///< tiers that failed for this record
  /// Fastest file tier already holding a copy, or -1 (see place()).
  int file_copy = -1;
  /// Kept for readers (reader retention): claims file-tier room before the others.
  bool retain = false;
  /// Scratch: the fastest file tier slower than `file_copy` that also holds
  /// a copy (copy_ahead made it), or -1. Such a resident gives up its room
  /// first (see place()).
  int backing = -1;
  /// No next use is known (ranking's kNoNextUse): it never moves up.
  bool spent = false;
  /// Without a file copy, the file tier one is being copied to now (a
  /// drain under way), or -1. When spreading (see place()) it keeps that
  /// tier like a resident, so records placed before it in rank order see
  /// the work it brings there and go elsewhere. With a file copy: the last
  /// tier while it moves down there, which keeps that tier busy for
  /// bottleneck first and nothing else.
  int arriving = -1;
  /// DRAM holds a copy now (not only placement's wish): once reads have
  /// begun, its file copy gives way to other records (see place()).
  bool held = false;
  /// A record not written yet, ranked where the schedule will read it
  /// (place_records(): a counted LIFO's, an explicit order's).
  bool coming = false;
  /// The first record of a step DRAM keeps (Record::step_lead, every
  /// lead_spacing()-th step): what place() admits to DRAM under `leads_first`.
  bool lead = false;
};

struct Placement {
  std::vector<bool> in_memory;   ///< the record should be held in DRAM
  std::vector<int> dir_tier;     ///< file tier it should live in; -1 if none can hold it
};

/// DRAM is an inclusive cache filled with the soonest-used records that fit
/// `mem_capacity`; file tiers (indices 1..n-1 of `tier_capacity`, 0 = unlimited)
/// hold every record exclusively. A record keeps the file copy it has while
/// that tier has room for it (soonest first): residents are never demoted to
/// admit a sooner record, since with each record read once that saves no
/// transfer on the slower tier and costs two on the faster one. Room left
/// goes by rank: a record without a copy takes the fastest tier with room; a
/// resident not held in DRAM moves up into it. A record held in DRAM without
/// a file copy claims file room only after all others (DRAM and file tiers
/// hold different records: their capacities add up). A record larger than
/// what is left of a tier skips it; so do avoided tiers.
///
/// A resident *backed* by a copy on a slower tier gives its room to a sooner
/// record without a place when that record needs it and is more than half
/// its size, and falls back to its slower copy, which moves nothing (the
/// copy was made while that tier had nothing else to do): the record would
/// have cost the slower tier a write and a read, the resident costs it a
/// read. Where a tier holds more backed residents than `dram_budget` (or
/// `mem_capacity`, if more) holds records of the newcomer's size and than
/// half its own room, a newcomer that finds no room on the first tier of
/// its order goes to that tier first (its free room, else the furthest
/// backed resident's): a reserve the writes do not draw on would otherwise
/// keep copies the slower tier made for nothing.
///
/// Records to `retain` for readers go first: each keeps the file copy it has,
/// or takes the fastest tier with room, before any other record is placed
/// (residents that lose their room to them move down: retention's cost).
///
/// With `moves_up` true (reads have begun), the records DRAM holds (`held`)
/// that are read before any record DRAM lacks keep their slots first; then
/// one DRAM holds without a file copy to come back from (`file_copy` < 0: a
/// staged copy or one made ahead is on its way elsewhere, and a persistent
/// record's durable copy is placed afresh) keeps its slot whatever its rank,
/// beside the slots of the next records to come up: one for the soonest
/// from each file tier among as many of the next records as there are file
/// tiers (a tier fetches one record at a time), less the slots of the
/// records read before them (each frees for a fetch). Sending it down to make room
/// for a fetch further ahead would cost a write now and a read later, where
/// keeping it costs only fetch depth a tier's one-at-a-time fetching does
/// not use: Cao et al.'s do-no-harm, with the write a dirty record's
/// eviction costs counted.
///
/// With `moves_up` false (writes are coming down: prefetch_file() waits for
/// reads) residents stay where they are: room is not promised to a move no
/// policy would make, which could leave a tier's room on paper only.
///
/// With `tier_rate` (bytes/s per file tier, index 0 unused) known for every
/// file tier, a record without a place takes, among the tiers with room, the
/// one that would finish soonest the work of the records there (each
/// resident's read, each arriving record's write and read, at the tier's
/// rate) and its own, so the tiers share the traffic in proportion to their
/// bandwidth as the physical bound's split does; while writes come down
/// (`moves_up` false) over tiers none of which is bounded, one read after
/// a record still to come (`coming`) takes first a tier with no record
/// arriving (first opportunity: an idle tier starts) if, where
/// `mem_capacity` holds kDoubleBufferSlots records, the calls before its
/// read (the writes to come and the reads ranked before it), at the pace
/// of the joining tiers' combined rate, outlast each idle tier's write
/// and fetch of it (a record read just after DRAM's at the end of the
/// writes does not start the slowest tier), and with
/// `idle_tiers_start` (pass.hpp's idle_tiers_start()) so does any other
/// record when some joining tier is idle and the records placed between it
/// and each idle tier's last record before it (in rank order) come from the
/// other tiers, together, no faster than that tier fetches it: its fetch
/// hides behind theirs (FIFO's slower tier starts with the first record it
/// can hide, not once the fastest has a round trip queued); once reads begin over
/// such tiers, a slower tier's soonest record takes a DRAM slot first when
/// fewer records than the tier is times slower than the fastest come before
/// it (its fetch starts in time). A tier slower than the
/// fastest joins only if it moves a record within the time the fastest
/// fills the room ahead of the reads: `mem_capacity` and the capacities of
/// the bounded tiers above it (else reads would wait on it: prefetching
/// looks no further ahead than DRAM and those tiers hold), and residents
/// move up only into bounded tiers. Without rates: the fastest tier with
/// room. `lookahead_bytes` (0: `mem_capacity`) is the DRAM that test counts
/// on (joins_spread()).
///
/// With `bottleneck_first` (FIFO with room in DRAM for two writes:
/// pass.hpp's bottleneck_first()) while writes come down over a bounded
/// file tier above the last: when no record is arriving at the last tier
/// and the records it holds fall short of what the run will force through
/// it (`to_come_bytes` still to be written: fifo:N, or pass.hpp's
/// kRunGoesOn for a run taken to go on; unset, the run taken to go on as
/// long again), the soonest record without a
/// place takes the last tier, whatever the room above. By rank alone FIFO's
/// newest records go there: the tier that capacity forces traffic through,
/// which the physical bound keeps busy from the first write to the last
/// read, idled until the tiers above were full and then held every write
/// up. Started at once, it takes a record every few writes and reads them
/// back in the order they were written, behind the reads of those DRAM and
/// the faster tiers hold (Cao et al.'s first opportunity, for the
/// bottleneck). With the count, what the run forces down is weighed against
/// `dram_budget` (DRAM's whole budget, which holds records once the writes
/// end; 0: `mem_capacity`). With `last_takes_residents` too (pass.hpp's
/// last_takes_residents(): the application computes) and a run that forces
/// through the last tier more than half what the bounded tiers above it
/// hold, a turn
/// no record leaving DRAM takes goes to the resident of a bounded tier
/// above read latest that DRAM holds no copy of: it moves down, so the last
/// tier never idles while the tiers above fill, and their room goes to
/// later records.
///
/// With `leads_first` (FIFO over one file tier, or whole records over tiers
/// far apart: pass.hpp's leads_first()) while writes come down, DRAM holds
/// the records marked `lead` (rank order; place_records() marks the first
/// record of every lead_spacing()-th step) and no other: the tiers drain the
/// rest from the first write instead of idling until DRAM is full.
///
/// Once reads began, a record only DRAM holds that is read after a fetch
/// keeps its slot beside the slots for the next records to come up: one per
/// file tier they come from among as many of them as there are file tiers,
/// and over tiers of known rates none of which fills, also for a slower
/// tier's soonest record within its Kimbrel-Karlin distance (the fastest's
/// rate over its own, in records ahead); or `read_room_bytes` where that is more
/// (Limits::read_room_bytes: two steps, pass.hpp's steps_double_buffered()).
/// A record leaving DRAM then (only DRAM holds it, and DRAM keeps it no
/// longer) takes the fastest file tier with room, not the one spreading
/// would finish soonest: it is read after the others, and the slower tiers
/// are fetching the first reads.
Placement place(const std::vector<PlacementItem>& ranked, std::uint64_t mem_capacity,
                const std::vector<std::uint64_t>& tier_capacity, bool moves_up = true,
                const std::vector<double>& tier_rate = {}, std::uint64_t lookahead_bytes = 0,
                bool bottleneck_first = false, std::optional<std::uint64_t> to_come_bytes = std::nullopt,
                bool idle_tiers_start = false, bool leads_first = false, std::uint64_t dram_budget = 0,
                std::uint64_t read_room_bytes = 0, bool last_takes_residents = false);

/// Placement spreads over the file tiers of `tier_rate` (index 0 unused):
/// there are two or more and every rate is known.
bool spreads(const std::vector<double>& tier_rate);

/// No file tier of `tier_capacity` (index 0 unused, 0 = unlimited) has a
/// capacity limit: none fills, whatever is placed there.
bool unbounded(const std::vector<std::uint64_t>& tier_capacity);

/// Whether file tier `t` joins the spreading of a record of `bytes`: the
/// fastest always; a slower one if it moves the record within the time the
/// fastest takes to fill `lookahead_bytes` of DRAM.
bool joins_spread(const std::vector<double>& tier_rate, std::size_t t, std::uint64_t bytes,
                  std::uint64_t lookahead_bytes);

}  // namespace mlbs::engine::policies

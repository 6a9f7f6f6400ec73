// mlbs — the planner: named policies over a read-only View, tried in the
// order of next(). Each is pure (the view in, a Decision or none out, stalls
// noted) and unit-tested in tests/unit/test_policies.cpp; the engine's
// helpers carry decisions out one at a time and plan again after each.
//
// Rules shared by all of them:
// * Busy records (a helper copies them) and retired ones are left alone.
// * Room is made by dropping copies that have another copy elsewhere,
//   furthest next use first, never the record being placed and never a copy
//   that placement wants where it is; if that cannot make enough room the
//   policy makes no drop at all (a partial eviction would only cost a
//   re-read later).
// * DRAM is an inclusive cache; file tiers hold one copy per record in
//   scratch mode; in persistent mode the last tier's copy is the record's
//   durable one and is never evicted.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/policies/view.hpp"

namespace mlbs::engine::policies {

/// The fastest tier holding a copy of `r` other than `except`, or -1.
int fastest_copy(const Record& r, int last, int except = -1);
/// Persistent mode: `r` has no copy on the last tier and that tier has not failed for it.
bool needs_persist(const View& v, const Record& r);

/// The DRAM copies to drop so that `bytes` fit the free budget: clean copies
/// (another tier has the record) that placement does not want in DRAM and no
/// reader is copying out of, furthest first, those whose record is at its
/// target tier before those still to be copied there. Empty when it fits
/// already; none if it cannot. With Wishes::yield, copies placement wants in
/// DRAM go too (the furthest first): the last resort before a write is
/// refused, since a read that finds its record on a file tier only waits,
/// while a refused write loses data the application handed over.
std::optional<std::vector<Drop>> dram_room(const View& v, std::uint64_t bytes, std::size_t except,
                                           Wishes wishes = Wishes::keep);
/// The copies on file tier `t` to drop so that `bytes` fit there: copies of
/// records placed on another tier that have a second copy. None (and a stall
/// noted) if that is not enough; none without a stall on a latched tier.
std::optional<std::vector<Drop>> file_room(const View& v, int t, std::uint64_t bytes, std::size_t except,
                                           Notes& notes);

/// 1. A read waits: fetch its record from its fastest copy into DRAM (demand records rank first).
std::optional<Decision> demand_fetch(const View& v, Notes& notes);
/// 2. Records in DRAM placed below it are copied down to their target tier
///    (to the last tier first when they owe durability; a durable record
///    placed above the last tier, too), furthest next use first: their
///    slots are what writers need next. Scratch, while a write waits for a
///    slot or DRAM has none free for the next: one whose target is busy is
///    staged on the fastest tier above it with free room that no other
///    copy is writing into (Purpose::stage), and moves on from there (3);
///    otherwise, scratch, one drain at a time into a tier: one for the last
///    tier waits while any copy is in flight there, one for a faster tier
///    while another copy writes into it (not while LIFO copies ahead), and
///    the next record for another tier goes instead. A record copied ahead
///    from DRAM only while a write waits (else 11).
std::optional<Decision> drain_dram(const View& v, Notes& notes);
/// 3. File copies follow placement: stray copies besides the target tier's
///    go; a copy above its target tier moves down (from DRAM when DRAM has it:
///    the faster source), furthest next use first. A staged copy moves from
///    the tier it was staged on, one at a time into its target, and its
///    record's DRAM slot is given up with it.
std::optional<Decision> file_tier_moves(const View& v, Notes& notes);
/// 4. Reads under way: the soonest record not placed in DRAM whose copies
///    are all below the fastest file tier comes up into a free DRAM slot,
///    one record at a time, when no faster file tier has room for it, DRAM
///    has room for two records or more, and the records placed in DRAM still
///    to come up all come from faster tiers (it takes a slot of theirs for a
///    while): the slower tier, often the bottleneck, starts at the turn
///    instead of waiting for a record to move up out of the full fast tier
///    (one transfer at the faster tier's rate). Not through the slot the
///    next record placed in DRAM needs, unless a read before that record
///    frees one (a record in DRAM or on its way for a waiting read): FIFO's
///    next record waited for the slow fetch instead (architecture.md, "The
///    borrowed slot is not the next record's"). The record is borrowed:
///    room-making for a prefetch spares its slot, and drain_ahead() (11)
///    copies it on to its target when there is room.
std::optional<Decision> fetch_via_dram(const View& v, Notes& notes);
/// 5. Known schedule: records placed in DRAM are fetched, soonest first,
///    while DRAM has room; never out of order (a later record does not
///    overtake one that does not fit yet).
std::optional<Decision> prefetch_dram(const View& v, Notes& notes);
/// 6. Known schedule, reads under way: records below their target file tier
///    move up to it when their tier has no copy in progress (those in DRAM
///    are left to write-behind, which copies from DRAM).
std::optional<Decision> prefetch_file(const View& v, Notes& notes);
/// 7. Persistent mode: the oldest write owing durability that is due (its
///    generation is within the flush horizon, or a tier holding it is over
///    its high water mark) is copied to the last tier.
std::optional<Decision> persist(const View& v, Notes& notes);
/// 8. Reader retention: a write no reader has read yet that is only in DRAM
///    gets its file copy now, oldest write first (readers read file tiers).
std::optional<Decision> for_readers(const View& v, Notes& notes);
/// 9. Write-behind: while DRAM is over its high water mark, dirty DRAM
///    records get their file copy, furthest next use first, so their slots
///    can be reclaimed at once; with a known schedule only those of stores
///    with in-transit readers attached (Record::watched). A flush asks it of
///    every record up to its horizon.
std::optional<Decision> write_behind(const View& v, Notes& notes);

/// 10. Copy ahead (scratch, while writes come down): a file tier below
///    another that has no copy in progress takes a second copy of the record
///    the tier above would give up first (furthest next use, not backed yet),
///    from DRAM when it has it, into room nobody needs. When the tier above
///    fills, placement lets that record go for free (PlacementItem::backing):
///    the slower tier, often the bottleneck, starts with the first records
///    instead of idling until the faster ones are full, and with a known
///    schedule nothing is lost when the run turns out to fit (Cao et al.'s
///    "first opportunity", limited to an idle tier so it never delays a copy
///    that is needed). The tier below busy, an idle last tier takes a copy
///    from DRAM instead, where DRAM holds kDoubleBufferSlots writes.
std::optional<Decision> copy_ahead(const View& v, Notes& notes);

/// 11. Scratch, while writes come down: a record copied ahead from DRAM
///    below its target gets its target copy from DRAM (drain_dram() takes
///    it before this only when a write waits for a slot): its file copy
///    exists already, so a free helper copies ahead for the slower tier first.
///    Reads under way: a borrowed record (4) likewise, after the slower
///    tier's next fetch has had its turn at the target's room.
std::optional<Decision> drain_ahead(const View& v, Notes& notes);

/// The first read after writes: whether a copy in flight (`why`, from tier
/// `src`, of `r` as placement sees it now, without the writes' headroom) is
/// stopped, as only the writes wanted it: a copy ahead (it made room for
/// writes that are over, and holds the slower tier the reads now need), or,
/// in scratch mode, a copy out of DRAM that made room there (drain, stage,
/// move down) of a record placement now keeps in DRAM (its tier would take a
/// write no read uses), or a move down between file tiers of a record
/// placement now keeps at its source or above (the slower tier would take a
/// write, and the record's read would wait behind it and then on that tier:
/// a record staged on the fast tier as the writes ended was moved to the
/// slowest one at the turn and fetched back from it on demand: 1.76x the
/// bound in the model of `mlbs_sim_check --machine three`, 1.52x with this
/// and place_records()'s staged copies). Engine::turn() and the simulator
/// ask here.
bool stops_at_turn(Purpose why, int src, const Record& r, bool persistent);

/// The first decision of the policies above, in that order (their priority).
std::optional<Decision> next(const View& v, Notes& notes);

}  // namespace mlbs::engine::policies

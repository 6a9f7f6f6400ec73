// Tests of the planner's policies, ranking and water marks
// (src/engine/policies/): each rule on a hand-built catalog view, no threads,
// no files.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "engine/policies/parts.hpp"
#include "engine/policies/pass.hpp"
#include "engine/policies/policies.hpp"
#include "engine/policies/ranking.hpp"
#include "mlbs/detail/block.hpp"

namespace {

using namespace mlbs::engine::policies;
using mlbs::Schedule;
using mlbs::catalog::TierMask;

constexpr std::uint64_t kRec = 4096;  // one DRAM slot each

/// A catalog view built by hand: records in rank order (soonest first).
struct Scene {
  std::deque<Record> records;  // stable addresses
  std::vector<const Record*> ranked;
  std::vector<TierView> tiers;
  bool persistent = false;
  bool prefetching = false;
  std::uint64_t horizon = 0;
  bool writing = false;
  bool copy_ahead = false;

  explicit Scene(std::size_t n_tiers) : tiers(n_tiers) {}

  /// The next-ranked record: `copies` where it has them, placed in DRAM or not and on file tier `target`.
  Record& add(TierMask copies, int target, bool want_mem = false, std::uint64_t size = kRec) {
    Record& r = records.emplace_back();
    r.id = records.size() - 1;
    r.gen = records.size();
    r.size = size;
    r.copies = copies;
    r.dir_target = target;
    r.want_mem = want_mem;
    if (copies & bit(0)) r.slot = mlbs::detail::Block::allocate(size);
    ranked.push_back(&r);
    return r;
  }
  bool write_waits = false;
  View view() const { return {ranked, tiers, persistent, prefetching, horizon, writing, copy_ahead, write_waits}; }
};

std::vector<Drop> drops(std::initializer_list<Drop> d) { return d; }

/// One test's variations of a scene: decide(change) is `policy`'s decision on the scene `base()` builds,
/// after `change` alters it.
template <class Policy, class Base>
auto decider(Policy policy, Base base) {
  return [=](auto change) {
    Scene s = base();
    change(s);
    Notes notes;
    return policy(s.view(), notes);
  };
}

/// `recs` as ranked records in their order: ids 0.., generations 1.., one slot's size each.
std::vector<Record*> in_order(std::deque<Record>& recs) {
  std::vector<Record*> ranked;
  for (std::size_t i = 0; i < recs.size(); ++i) {
    recs[i].id = i;
    recs[i].gen = i + 1;
    recs[i].size = kRec;
    ranked.push_back(&recs[i]);
  }
  return ranked;
}

// --- ranking and water marks -------------------------------------------------

// A record a read waits for ranks before everything, whatever the schedule.
TEST(Ranking, DemandRanksFirst) {
  Record r;
  r.gen = 5;
  r.demand = true;
  for (auto k : {Schedule::Kind::fifo, Schedule::Kind::lifo, Schedule::Kind::unknown, Schedule::Kind::explicit_order})
    EXPECT_EQ(next_use_rank(r, k, {}, 0), 0u);
}

// fifo ranks by write order, lifo newest first, unknown least recently used last.
TEST(Ranking, FifoLifoAndRecency) {
  Record a, b;
  a.gen = 1, b.gen = 2;
  a.last_use = 10, b.last_use = 3;
  EXPECT_LT(next_use_rank(a, Schedule::Kind::fifo, {}, 0), next_use_rank(b, Schedule::Kind::fifo, {}, 0));
  EXPECT_GT(next_use_rank(a, Schedule::Kind::lifo, {}, 0), next_use_rank(b, Schedule::Kind::lifo, {}, 0));
  EXPECT_LT(next_use_rank(a, Schedule::Kind::unknown, {}, 0), next_use_rank(b, Schedule::Kind::unknown, {}, 0));
}

// An explicit order ranks a record by its next position after the reads done; once past its last one it ranks after every named record.
TEST(Ranking, ExplicitOrderUsesTheNextPosition) {
  Record r;
  r.gen = 1;
  const std::vector<std::uint32_t> positions{2, 7};
  EXPECT_EQ(next_use_rank(r, Schedule::Kind::explicit_order, positions, 0), 3u);
  EXPECT_EQ(next_use_rank(r, Schedule::Kind::explicit_order, positions, 1), 8u);
  const std::uint64_t done = next_use_rank(r, Schedule::Kind::explicit_order, positions, 2);
  EXPECT_GT(done, 1ull << 40);
  EXPECT_EQ(next_use_rank(r, Schedule::Kind::explicit_order, {}, 0), done) << "an unnamed record ranks the same";
}

// Write-behind starts above the high mark, stops at the low one and keeps its state between them.
TEST(WaterMarks, Hysteresis) {
  EXPECT_FALSE(write_behind_active(false, 70, 100, 0.8, 0.5));
  EXPECT_TRUE(write_behind_active(false, 81, 100, 0.8, 0.5));
  EXPECT_TRUE(write_behind_active(true, 70, 100, 0.8, 0.5));
  EXPECT_FALSE(write_behind_active(true, 50, 100, 0.8, 0.5));
  EXPECT_FALSE(write_behind_active(true, 0, 100, 0.8, 0.0)) << "nothing dirty, nothing to write";
}

// An unlimited tier writes behind only when told to write continuously (high = 0) and something is dirty.
TEST(WaterMarks, UnlimitedTier) {
  EXPECT_FALSE(write_behind_active(false, 1 << 30, 0, 0.8, 0.5));
  EXPECT_TRUE(write_behind_active(false, 1, 0, 0.0, 0.0));
  EXPECT_FALSE(write_behind_active(true, 0, 0, 0.0, 0.0));
}

// Scratch: a copy is dirty with no copy below it; persistent: until the last tier has one.
TEST(WaterMarks, DirtyCopies) {
  Record r;
  r.copies = bit(0) | bit(1);
  EXPECT_FALSE(dirty_on(r, 0, 2, false));
  EXPECT_TRUE(dirty_on(r, 1, 2, false));
  EXPECT_TRUE(dirty_on(r, 0, 2, true));
  EXPECT_FALSE(dirty_on(r, 2, 2, true)) << "no copy there";
  r.copies |= bit(2);
  EXPECT_FALSE(dirty_on(r, 0, 2, true));
}

// --- making room ----------------------------------------------------------------

// DRAM room: clean copies placement no longer wants go, furthest next use first, and no more than needed.
TEST(Room, DramDropsCleanCopiesFurthestFirst) {
  Scene s(2);
  s.tiers[0].free_bytes = 0;
  s.add(bit(0) | bit(1), 1);
  s.add(bit(0) | bit(1), 1);
  s.add(bit(0) | bit(1), 1);
  EXPECT_EQ(dram_room(s.view(), kRec, 99), drops({{2, 0}}));
  EXPECT_EQ(dram_room(s.view(), 2 * kRec, 99), drops({{2, 0}, {1, 0}}));
}

// DRAM room takes copies whose record is at its target tier before those still to be copied there.
TEST(Room, DramDropsSettledCopiesFirst) {
  Scene s(3);
  s.tiers[0].free_bytes = 0;
  s.add(bit(0) | bit(1), 1);  // 0: at its target
  s.add(bit(0) | bit(2), 1);  // 1: durable below, still to be copied to tier 1
  EXPECT_EQ(dram_room(s.view(), kRec, 99), drops({{0, 0}}));
  EXPECT_EQ(dram_room(s.view(), 2 * kRec, 99), drops({{0, 0}, {1, 0}})) << "and then those, when need be";
}

// Copies placement wants in DRAM stay, except as the last resort before a write is refused (Wishes::yield);
// a copy that exists nowhere else never goes.
TEST(Room, DramKeepsWantedCopiesUnlessWishesYield) {
  Scene s(2);
  s.tiers[0].free_bytes = 0;
  s.add(bit(0) | bit(1), 1, /*want_mem=*/true);
  s.add(bit(0), 1, /*want_mem=*/true);
  EXPECT_FALSE(dram_room(s.view(), kRec, 99));
  EXPECT_EQ(dram_room(s.view(), kRec, 99, Wishes::yield), drops({{0, 0}}));
  EXPECT_FALSE(dram_room(s.view(), 2 * kRec, 99, Wishes::yield));
}

// DRAM room spares copies placement wants there, pinned and busy ones, the only copy of a record, and the record itself.
TEST(Room, DramSparesWhatMustStay) {
  Scene s(2);
  s.tiers[0].free_bytes = 0;
  s.add(bit(0) | bit(1), 1);        // 0: droppable
  s.add(bit(0) | bit(1), 1, true);  // 1: wanted in DRAM
  s.add(bit(0) | bit(1), 1).pins = 1;
  s.add(bit(0) | bit(1), 1).busy = true;
  s.add(bit(0), 1);                 // 4: DRAM-only (dirty)
  s.add(bit(0) | bit(1), 1);        // 5: the record being placed
  EXPECT_EQ(dram_room(s.view(), kRec, 5), drops({{0, 0}}));
}

// A record busy with a copy between two file tiers gives its DRAM copy up; one whose copy reads or fills DRAM, or
// busy otherwise (a direct read), keeps it.
TEST(Room, DramTakesTheCopyOfARecordMovingBetweenFileTiers) {
  Scene s(3);
  s.tiers[0].free_bytes = 0;
  Record& ahead = s.add(bit(0) | bit(1), 1);  // a copy ahead 1->2
  ahead.busy = true;
  ahead.copying_on = bit(1) | bit(2);
  Record& down = s.add(bit(0) | bit(1), 1);   // its slot being read, 0->2
  down.busy = true;
  down.copying_on = bit(0) | bit(2);
  s.add(bit(0) | bit(1), 1).busy = true;      // busy with no copy named
  EXPECT_EQ(dram_room(s.view(), kRec, 99), drops({{0, 0}}));
  EXPECT_EQ(dram_room(s.view(), 2 * kRec, 99), std::nullopt);
}

// When dropping every candidate would still not make room, nothing is dropped.
TEST(Room, DramAllOrNothing) {
  Scene s(2);
  s.tiers[0].free_bytes = 0;
  s.add(bit(0) | bit(1), 1);
  s.add(bit(0), 1);
  EXPECT_EQ(dram_room(s.view(), 2 * kRec, 99), std::nullopt);
}

// File room: copies of records placed on another tier go, furthest first; residents of their target stay; a stall is noted when it cannot.
TEST(Room, FileEvictsCopiesPlacedElsewhere) {
  Scene s(3);
  s.tiers[1].free_bytes = 0;
  s.add(bit(0) | bit(1), 2);  // 0: placed below, has a DRAM copy too
  s.add(bit(1), 1);           // 1: resident of its target
  s.add(bit(1) | bit(2), 2);  // 2: placed below, copy there already
  Notes notes;
  EXPECT_EQ(file_room(s.view(), 1, kRec, 99, notes), drops({{2, 1}}));
  EXPECT_EQ(file_room(s.view(), 1, 2 * kRec, 99, notes), drops({{2, 1}, {0, 1}}));
  EXPECT_EQ(file_room(s.view(), 1, 3 * kRec, 99, notes), std::nullopt);
  ASSERT_EQ(notes.stalls.size(), 3u);
  EXPECT_EQ(notes.stalls[1], 1u);
}

// A latched-full tier gets no evictions and counts no stall; the persistent last tier's copies are never evicted.
TEST(Room, LatchedAndDurableCopiesStay) {
  Scene s(3);
  s.tiers[1].free_bytes = 0;
  s.tiers[1].full_latched = true;
  s.add(bit(1) | bit(2), 2);
  Notes notes;
  EXPECT_EQ(file_room(s.view(), 1, kRec, 99, notes), std::nullopt);
  EXPECT_TRUE(notes.stalls.empty());
  s.persistent = true;
  s.tiers[2].free_bytes = 0;
  s.add(bit(1) | bit(2), 1);
  EXPECT_EQ(file_room(s.view(), 2, kRec, 99, notes), std::nullopt);
  EXPECT_EQ(notes.stalls[2], 1u);
}

// --- the policies -----------------------------------------------------------------

// Demand fetch: the waiting record comes from its fastest copy into DRAM, making room there.
TEST(Policies, DemandFetchFromTheFastestCopy) {
  Scene s(3);
  s.tiers[0].free_bytes = 0;
  s.add(bit(1) | bit(2), 1).demand = true;
  s.add(bit(0) | bit(2), 2);
  Notes notes;
  const auto d = demand_fetch(s.view(), notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->purpose, Purpose::demand_fetch);
  EXPECT_EQ(d->record, 0u);
  EXPECT_EQ(d->src, 1);
  EXPECT_EQ(d->dst, 0);
  EXPECT_EQ(d->drops, drops({{1, 0}}));
}

// Demand fetch skips a record already in DRAM or in error and stops at the first record nobody waits for.
TEST(Policies, DemandFetchOnlyForWaitingRecords) {
  Scene s(2);
  s.add(bit(0) | bit(1), 1).demand = true;
  s.add(bit(1), 1);
  Notes notes;
  EXPECT_FALSE(demand_fetch(s.view(), notes));
}

// Drain: DRAM-only records placed below go down, furthest first; to the last tier when they owe durability.
TEST(Policies, DrainDramFurthestFirstAndToTheLastTierWhenOwed) {
  Scene s(3);
  s.add(bit(0), 1);
  s.add(bit(0), 1);
  s.add(bit(0), 1, true);  // wanted in DRAM: stays
  Notes notes;
  auto d = drain_dram(s.view(), notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->record, 1u);
  EXPECT_EQ(d->dst, 1);
  s.persistent = true;
  d = drain_dram(s.view(), notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->dst, 2);
}

// Once reads began, a drain does not start into a tier a fetch comes up from (a read may wait on that fetch):
// the furthest record that can go, goes; while writes come the fetch does not hold it.
TEST(Policies, DrainDramWaitsForAFetchFromItsTierOnceReadsBegan) {
  const auto drain_with = decider(drain_dram, [] {
    Scene s(3);
    s.add(bit(0), 2);
    s.add(bit(0), 1);
    s.tiers[1].copies_in_flight = s.tiers[1].fetches_in_flight = 1;
    return s;
  });
  const auto d = drain_with([](Scene&) {});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->record, 0u) << "record 1's tier is fetching: the other goes";
  EXPECT_EQ(d->dst, 2);
  EXPECT_FALSE(drain_with([](Scene& s) { s.tiers[2].copies_in_flight = s.tiers[2].fetches_in_flight = 1; }))
      << "both tiers fetching";
  const auto writing = drain_with([](Scene& s) { s.writing = true; });
  ASSERT_TRUE(writing);
  EXPECT_EQ(writing->record, 1u) << "writes come: the furthest first";
  const auto other = drain_with([](Scene& s) { s.tiers[1].fetches_in_flight = 0; });
  ASSERT_TRUE(other);
  EXPECT_EQ(other->record, 1u) << "another copy on the tier, not a fetch from it, does not hold it";
}

// Persistent: a durable record placed above the last tier is copied there from DRAM before its slot goes; scratch leaves a record with a file copy alone.
TEST(Policies, DrainDramCopiesADurableRecordToItsTarget) {
  Scene s(3);
  s.persistent = true;
  s.add(bit(0) | bit(2), 1);  // durable, placed on tier 1
  s.add(bit(0) | bit(2), 2);  // durable, placed where it is
  Notes notes;
  auto d = drain_dram(s.view(), notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->record, 0u);
  EXPECT_EQ(d->src, 0);
  EXPECT_EQ(d->dst, 1);
  s.persistent = false;
  EXPECT_FALSE(drain_dram(s.view(), notes));
}

// File-tier moves: copies besides the target's are dropped as strays (the durable copy stays); a copy above its target moves down, from DRAM when DRAM has it.
TEST(Policies, FileTierMovesDropStraysAndMoveDown) {
  Scene s(4);
  s.add(bit(1) | bit(2), 2);  // 0: a stray on tier 1
  Notes notes;
  auto d = file_tier_moves(s.view(), notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->purpose, Purpose::drop_strays);
  EXPECT_EQ(d->drops, drops({{0, 1}}));

  Scene m(4);
  m.add(bit(1) | bit(2), 3);           // 0: slowest copy above its target is tier 2
  m.add(bit(0) | bit(1), 3);           // 1: DRAM has it too
  d = file_tier_moves(m.view(), notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->purpose, Purpose::move_down);
  EXPECT_EQ(d->record, 1u);
  EXPECT_EQ(d->src, 0);
  EXPECT_EQ(d->dst, 3);
  m.ranked.pop_back();
  d = file_tier_moves(m.view(), notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->src, 2);

  Scene p(3);
  p.persistent = true;
  p.add(bit(1) | bit(2), 1);  // the last tier's copy is the durable one, not a stray
  EXPECT_FALSE(file_tier_moves(p.view(), notes));

  Scene b(4);
  b.add(bit(1) | bit(3), 1);  // scratch: a copy below the target (copy_ahead's) stays
  EXPECT_FALSE(file_tier_moves(b.view(), notes));
}

// Staging: while a write waits for a slot, a record leaving DRAM for a busy tier goes to the fastest file tier if it
// has free room (nothing evicted) and no other copy is writing into it; not when its target is idle or in persistent
// mode. A middle tier takes it only while LIFO copies ahead: else it waits for its target (one drain at a time into
// the last tier, which tier 3 is), as its move down would share the middle tier with the moves into it.
TEST(Policies, DrainDramStagesOnTheFastestTierWhileTheTargetIsBusy) {
  const auto decide = decider(drain_dram, [] {
    Scene s(4);
    s.writing = s.write_waits = true;
    s.tiers[1].free_bytes = kRec;
    s.tiers[2].free_bytes = kRec;
    s.tiers[3].copies_in_flight = 1;
    s.add(bit(0), 3);
    return s;
  });
  const auto d = decide([](Scene&) {});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->purpose, Purpose::stage);
  EXPECT_EQ(d->src, 0);
  EXPECT_EQ(d->dst, 1) << "the fastest tier, with room";
  EXPECT_TRUE(d->drops.empty());
  const auto direct = [](const std::optional<Decision>& x) { return x && x->purpose == Purpose::drain_dram && x->dst == 3; };
  EXPECT_TRUE(direct(decide([](Scene& s) { s.tiers[3].copies_in_flight = 0; }))) << "the target is idle";
  EXPECT_FALSE(decide([](Scene& s) { s.tiers[1].free_bytes = kRec - 1; })) << "no room in the fastest: it waits";
  EXPECT_FALSE(decide([](Scene& s) { s.tiers[1].copies_in_flight = s.tiers[1].arrivals_in_flight = 1; }))
      << "the fastest tier takes another copy: it waits";
  EXPECT_FALSE(decide([](Scene& s) { s.write_waits = false; })) << "no write waits for a slot";
  EXPECT_FALSE(decide([](Scene& s) { s.records[0].avoid = bit(1); })) << "the tier failed for it";
  const auto middle = [](Scene& s) {
    s.copy_ahead = true;
    s.tiers[1].free_bytes = 0;  // full
  };
  const auto ahead = decide(middle);
  ASSERT_TRUE(ahead);
  EXPECT_EQ(ahead->dst, 2) << "LIFO copying ahead: the middle tier, the fastest with room";
  EXPECT_FALSE(decide([&](Scene& s) {
    middle(s);
    s.tiers[2].copies_in_flight = s.tiers[2].arrivals_in_flight = 1;
  })) << "the tier with room takes another copy: it waits";
  Scene p(3);
  p.persistent = p.writing = p.write_waits = true;
  p.tiers[2].copies_in_flight = 1;
  p.add(bit(0), 1);
  Notes notes;
  const auto durable = drain_dram(p.view(), notes);
  ASSERT_TRUE(durable);
  EXPECT_EQ(durable->dst, 2) << "persistent: its durable copy first, never staged";
}

// One drain at a time into a tier: a record for the last tier while any copy is in flight there waits, and the
// helper drains the next record to another tier instead. Into a faster tier a drain waits only for another copy
// writing into it (a copy out of it, most often a copy ahead the tier below paces, does not count), and not while
// LIFO copies ahead; a persistent run's drains do not wait (the journal commits them as a group).
TEST(Policies, OneDrainAtATimeIntoATier) {
  const auto decide = decider(drain_dram, [] {
    Scene s(3);
    s.writing = true;
    s.tiers[2].copies_in_flight = 1;
    s.add(bit(0), 1);  // 0
    s.add(bit(0), 2);  // 1: furthest, for the busy tier
    return s;
  });
  const auto d = decide([](Scene&) {});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->purpose, Purpose::drain_dram);
  EXPECT_EQ(d->record, 0u) << "the furthest record's tier is busy";
  EXPECT_EQ(d->dst, 1);
  const auto idle = decide([](Scene& s) { s.tiers[2].copies_in_flight = 0; });
  ASSERT_TRUE(idle);
  EXPECT_EQ(idle->record, 1u) << "furthest first once its tier is idle";
  EXPECT_FALSE(decide([](Scene& s) {
    s.tiers[1].free_bytes = 0;  // no tier above the last takes record 0
    s.records[0].dir_target = 2;
  })) << "both records for the busy last tier";
  const auto reading = decide([](Scene& s) { s.tiers[1].copies_in_flight = 1; });
  ASSERT_TRUE(reading);
  EXPECT_EQ(reading->record, 0u) << "a faster tier takes a drain beside a copy out of it";
  EXPECT_EQ(reading->dst, 1);
  EXPECT_FALSE(decide([](Scene& s) { s.tiers[1].copies_in_flight = s.tiers[1].arrivals_in_flight = 1; }))
      << "a faster tier taking another copy: record 0 waits too";
  const auto ahead = decide([](Scene& s) {
    s.tiers[1].copies_in_flight = s.tiers[1].arrivals_in_flight = 1;
    s.copy_ahead = true;
  });
  ASSERT_TRUE(ahead);
  EXPECT_EQ(ahead->dst, 1) << "LIFO copying ahead: drains share a faster tier";
  const auto durable = decide([](Scene& s) { s.persistent = true; });
  ASSERT_TRUE(durable);
  EXPECT_EQ(durable->record, 1u) << "persistent: drains share the busy tier";
  EXPECT_EQ(durable->dst, 2);
}

// While LIFO copies ahead a middle tier takes a second drain beside the first, not a third while the last tier
// idles: that helper is the last tier's (a copy ahead, or a drain of a record placed there). The fastest tier and a
// middle one beside a busy last tier take a third.
TEST(Policies, AMiddleTierTakesNoThirdDrainWhileTheLastIdles) {
  const auto decide = decider(drain_dram, [] {
    Scene s(4);
    s.writing = s.copy_ahead = true;
    s.tiers[2].copies_in_flight = s.tiers[2].arrivals_in_flight = 2;
    s.add(bit(0), 2);
    return s;
  });
  EXPECT_FALSE(decide([](Scene&) {})) << "a third drain into the middle tier while the last idles";
  const auto into = [](const std::optional<Decision>& d, int dst) {
    return d && d->purpose == Purpose::drain_dram && d->dst == dst;
  };
  EXPECT_TRUE(into(decide([](Scene& s) { s.tiers[2].copies_in_flight = s.tiers[2].arrivals_in_flight = 1; }), 2))
      << "a second drain goes";
  EXPECT_TRUE(into(decide([](Scene& s) { s.tiers[3].copies_in_flight = 1; }), 2)) << "the last tier busy";
  EXPECT_TRUE(into(decide([](Scene& s) {
                     s.tiers[1].copies_in_flight = s.tiers[1].arrivals_in_flight = 2;
                     s.records[0].dir_target = 1;
                   }),
                   1))
      << "the fastest tier takes a third";
  EXPECT_FALSE(decide([](Scene& s) {
    s.copy_ahead = false;
    s.tiers[3].copies_in_flight = 1;
  })) << "without copies ahead any tier takes one drain at a time";
}

// A staged copy moves on down from where it was staged, one at a time into its target, and its record's DRAM
// slot goes with the decision (a DRAM source would keep the slot busy for the slower tier's copy).
TEST(Policies, AStagedCopyMovesOnAndGivesUpItsSlot) {
  Scene s(3);
  Record& r = s.add(bit(0) | bit(1), 2);
  r.staged = 1;
  Notes notes;
  const auto d = file_tier_moves(s.view(), notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->purpose, Purpose::move_down);
  EXPECT_EQ(d->src, 1);
  EXPECT_EQ(d->dst, 2);
  EXPECT_EQ(d->drops, drops({{0, 0}}));
  s.tiers[2].copies_in_flight = 1;
  EXPECT_FALSE(file_tier_moves(s.view(), notes)) << "its target is busy";
  s.tiers[2].copies_in_flight = 0;
  r.staged = -1;  // an ordinary copy above its target: from DRAM, the faster source, slot kept
  const auto plain = file_tier_moves(s.view(), notes);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->src, 0);
  EXPECT_TRUE(plain->drops.empty());
}

// Copy ahead: while writes come down, an idle slower tier takes a second copy of the furthest record
// of a bounded tier above it (from that tier, whether DRAM holds the record too or not); nothing otherwise,
// nor for a record whose copy ahead failed before.
TEST(Policies, CopyAheadCopiesTheFurthestResidentToAnIdleSlowerTier) {
  // Two records on tier 1 (half full), nothing in flight; `change` alters the scene first.
  const auto decide = decider(copy_ahead, [] {
    Scene s(3);
    s.writing = s.copy_ahead = true;
    s.tiers[1].capacity_bytes = 4 * kRec;
    s.tiers[1].free_bytes = 2 * kRec;
    s.add(bit(1), 1);
    s.add(bit(1), 1);
    return s;
  });
  const auto d = decide([](Scene&) {});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->purpose, Purpose::copy_ahead);
  EXPECT_EQ(d->record, 1u) << "the furthest first";
  EXPECT_EQ(d->src, 1);
  EXPECT_EQ(d->dst, 2);
  EXPECT_TRUE(d->drops.empty());
  const auto next_one = decide([](Scene& s) { s.records[1].copies |= bit(2); });
  ASSERT_TRUE(next_one);
  EXPECT_EQ(next_one->record, 0u) << "the furthest is backed already";

  EXPECT_FALSE(decide([](Scene& s) { s.writing = false; })) << "reads have begun";
  EXPECT_FALSE(decide([](Scene& s) { s.copy_ahead = false; })) << "FIFO, a hint, or Config::copy_ahead off";
  EXPECT_FALSE(decide([](Scene& s) { s.persistent = true; }));
  EXPECT_FALSE(decide([](Scene& s) { s.tiers[2].copies_in_flight = 1; })) << "the slower tier is busy";
  EXPECT_TRUE(decide([](Scene& s) { s.tiers[1].free_bytes = 3 * kRec; })) << "from the first record on";
  EXPECT_FALSE(decide([](Scene& s) { s.tiers[1].free_bytes = 4 * kRec; })) << "the tier above has all its room free";
  EXPECT_FALSE(decide([](Scene& s) { s.tiers[1].capacity_bytes = 0; })) << "an unlimited tier gives nothing up";
  EXPECT_FALSE(decide([](Scene& s) { s.tiers[2].free_bytes = kRec - 1; })) << "no free room below";
  const auto held = decide([](Scene& s) {
    for (Record& r : s.records) r.copies |= bit(0), r.slot = mlbs::detail::Block::allocate(kRec);
  });
  ASSERT_TRUE(held) << "DRAM holds them too: placement plans without the slot of the one copied ahead";
  EXPECT_EQ(held->src, 1) << "from the tier above, not from DRAM";
  EXPECT_FALSE(decide([](Scene& s) { s.records[0].ahead_failed = s.records[1].ahead_failed = true; }))
      << "a copy ahead of each failed: another would fail the same way";
  EXPECT_FALSE(decide([](Scene& s) {
    s.records[0].size = s.records[1].size = 2 * kRec;
    s.add(bit(0), -1, true);  // the latest write: half their size, it would not take their room
  })) << "no write would take their room";
}

// Copy ahead from DRAM: the first record written, in DRAM only, goes straight to the idle slower tier
// while DRAM writes behind and keeps room for the next write beside it; not a record to be encoded (its
// file copies are one frame, made on its way to its target), not without that room.
TEST(Policies, CopyAheadStartsTheSlowerTierFromDramWithTheFirstRecord) {
  const auto decide = decider(copy_ahead, [] {
    Scene s(3);
    s.writing = s.copy_ahead = true;
    s.tiers[0].write_behind = true;
    s.tiers[0].free_bytes = kRec;  // the next write's slot
    s.tiers[1].capacity_bytes = s.tiers[1].free_bytes = 4 * kRec;  // bounded, empty yet
    s.tiers[2].free_bytes = 4 * kRec;
    s.add(bit(0), 1);
    return s;
  });
  const auto d = decide([](Scene&) {});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->purpose, Purpose::copy_ahead);
  EXPECT_EQ(d->src, 0);
  EXPECT_EQ(d->dst, 2);
  EXPECT_FALSE(decide([](Scene& s) { s.tiers[0].free_bytes = kRec - 1; })) << "the next write would wait for it";
  EXPECT_FALSE(decide([](Scene& s) { s.tiers[0].write_behind = false; })) << "DRAM does not write behind (its marks)";
  EXPECT_FALSE(decide([](Scene& s) { s.records[0].expect = kRec / 4; })) << "to be encoded on its way down";
  EXPECT_FALSE(decide([](Scene& s) { s.tiers[1].capacity_bytes = 0; })) << "an unlimited tier gives nothing up";
  EXPECT_FALSE(decide([](Scene& s) { s.writing = false; })) << "reads have begun";
}

/// Writes coming down in a scene of three file tiers, two bounded at four records each above an unlimited
/// one, and DRAM for four records that writes behind: where copy ahead may go to the last tier from DRAM.
Scene three_file_tiers_writing() {
  Scene s(4);
  s.writing = s.copy_ahead = true;
  s.tiers[0].write_behind = true;
  s.tiers[0].capacity_bytes = 4 * kRec;
  s.tiers[1].capacity_bytes = s.tiers[1].free_bytes = 4 * kRec;
  s.tiers[2].capacity_bytes = s.tiers[2].free_bytes = 4 * kRec;
  s.tiers[3].free_bytes = 4 * kRec;
  return s;
}

// Three file tiers, two bounded: with the tier below the target busy, the idle last tier takes the copy
// ahead from DRAM where DRAM holds four writes; not with room for fewer, not while the last tier is busy
// too.
TEST(Policies, CopyAheadFromDramGoesToTheIdleLastTierWhenTheOneBelowIsBusy) {
  const auto decide = decider(copy_ahead, [] {
    Scene s = three_file_tiers_writing();
    s.tiers[0].free_bytes = kRec;     // the next write's slot
    s.tiers[2].copies_in_flight = 1;  // busy with the copy ahead before
    s.add(bit(0), 1);
    return s;
  });
  const auto d = decide([](Scene&) {});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->purpose, Purpose::copy_ahead);
  EXPECT_EQ(d->src, 0);
  EXPECT_EQ(d->dst, 3);
  const auto idle_below = decide([](Scene& s) { s.tiers[2].copies_in_flight = 0; });
  ASSERT_TRUE(idle_below);
  EXPECT_EQ(idle_below->dst, 2) << "the tier below first";
  EXPECT_FALSE(decide([](Scene& s) { s.tiers[0].capacity_bytes = 3 * kRec; })) << "DRAM for fewer than four";
  EXPECT_FALSE(decide([](Scene& s) { s.tiers[3].copies_in_flight = 1; })) << "the last tier busy too";
}

// Three file tiers, two bounded: a record on the first bounded tier is copied ahead past the middle one,
// straight to the last (relayed, it crossed the middle tier twice); to the middle one only while the last
// is busy or full. A record on the middle tier goes to the last as before.
TEST(Policies, CopyAheadFromABoundedTierGoesPastTheMiddleOneToTheLastTier) {
  const auto decide = decider(copy_ahead, [] {
    Scene s = three_file_tiers_writing();
    s.tiers[1].free_bytes = 3 * kRec;
    s.add(bit(1), 1);
    return s;
  });
  const auto d = decide([](Scene&) {});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->purpose, Purpose::copy_ahead);
  EXPECT_EQ(d->src, 1);
  EXPECT_EQ(d->dst, 3) << "past the idle middle tier";
  const auto last_busy = decide([](Scene& s) { s.tiers[3].copies_in_flight = 1; });
  ASSERT_TRUE(last_busy);
  EXPECT_EQ(last_busy->dst, 2) << "the last tier busy: the tier below";
  const auto last_full = decide([](Scene& s) { s.tiers[3].free_bytes = kRec - 1; });
  ASSERT_TRUE(last_full);
  EXPECT_EQ(last_full->dst, 2) << "no room on the last tier: the tier below";
  EXPECT_FALSE(decide([](Scene& s) { s.tiers[2].copies_in_flight = s.tiers[3].copies_in_flight = 1; }))
      << "both busy";
  EXPECT_FALSE(decide([](Scene& s) { s.records[0].copies |= bit(2); })) << "backed on the middle tier already";
  const auto middle = decide([](Scene& s) {
    s.records[0].copies = bit(2);
    s.records[0].dir_target = 2;
    s.tiers[1].free_bytes = 4 * kRec;
    s.tiers[2].free_bytes = 3 * kRec;
  });
  ASSERT_TRUE(middle);
  EXPECT_EQ(middle->src, 2);
  EXPECT_EQ(middle->dst, 3);
}

// DRAM full over three file tiers: the record to leave DRAM next still goes to the idle last tier (else it
// idled until the middle tier filled), and only there; no more recent DRAM-only record goes.
TEST(Policies, CopyAheadWithDramFullSendsTheNextToLeaveToTheIdleLastTier) {
  const auto decide = decider(copy_ahead, [] {
    Scene s = three_file_tiers_writing();
    s.tiers[0].free_bytes = 0;  // the next write waits for a record to leave
    s.add(bit(0), 1);
    s.add(bit(0), 1);
    return s;
  });
  const auto d = decide([](Scene&) {});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->purpose, Purpose::copy_ahead);
  EXPECT_EQ(d->record, 1u) << "the furthest: the next to leave DRAM";
  EXPECT_EQ(d->src, 0);
  EXPECT_EQ(d->dst, 3) << "the last tier, though the one below the target idles";
  const auto next_one = decide([](Scene& s) { s.records[1].copies |= bit(1); });
  ASSERT_TRUE(next_one);
  EXPECT_EQ(next_one->record, 0u) << "the furthest has a file copy: the next leaves DRAM first now";
  EXPECT_FALSE(decide([](Scene& s) { s.records[1].busy = true; })) << "a more recent record does not go";
  EXPECT_FALSE(decide([](Scene& s) { s.tiers[3].copies_in_flight = 1; })) << "the last tier busy";
  EXPECT_FALSE(decide([](Scene& s) { s.tiers[0].capacity_bytes = 3 * kRec; })) << "DRAM for fewer than four";
}

// Two file tiers, the fast one bounded, DRAM for four writes: while the slower tier copies the furthest
// record ahead, the idle fast tier takes the next furthest straight from DRAM (else it idled until DRAM
// was full); not with the slower tier idle (its copy ahead first), the fast tier busy or unlimited, DRAM
// for fewer writes, or three file tiers.
TEST(Policies, CopyAheadFillsTheIdleBoundedFastTierFromDramBesideTheSlowerOnesCopy) {
  const auto decide = decider(copy_ahead, [] {
    Scene s(3);
    s.writing = s.copy_ahead = true;
    s.tiers[0].write_behind = true;
    s.tiers[0].capacity_bytes = 4 * kRec;
    s.tiers[0].free_bytes = kRec;  // the next write's slot
    s.tiers[1].capacity_bytes = s.tiers[1].free_bytes = 4 * kRec;
    s.tiers[2].copies_in_flight = 1;  // copying the furthest ahead
    s.add(bit(0), 1);
    s.add(bit(0), 1).busy = true;
    return s;
  });
  const auto d = decide([](Scene&) {});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->purpose, Purpose::copy_ahead);
  EXPECT_EQ(d->record, 0u) << "the furthest not on its way already";
  EXPECT_EQ(d->src, 0);
  EXPECT_EQ(d->dst, 1);
  EXPECT_TRUE(d->drops.empty());
  const auto slower_idle = decide([](Scene& s) { s.tiers[2].copies_in_flight = 0; });
  ASSERT_TRUE(slower_idle);
  EXPECT_EQ(slower_idle->dst, 2) << "the slower tier's copy ahead first";
  EXPECT_FALSE(decide([](Scene& s) { s.tiers[1].copies_in_flight = 1; })) << "the fast tier busy";
  EXPECT_FALSE(decide([](Scene& s) { s.tiers[1].capacity_bytes = 0; })) << "unlimited: spreading picks at the drain";
  EXPECT_FALSE(decide([](Scene& s) { s.tiers[0].capacity_bytes = 3 * kRec; })) << "DRAM for fewer than four";
  EXPECT_FALSE(decide([](Scene& s) { s.records[0].dir_target = 2; })) << "placed on the slower tier";
  EXPECT_FALSE(decide([](Scene& s) { s.tiers[0].write_behind = false; })) << "DRAM does not write behind";
  EXPECT_FALSE(decide([](Scene& s) {
    s.tiers[2].capacity_bytes = s.tiers[2].free_bytes = 4 * kRec;
    s.tiers.emplace_back().copies_in_flight = 1;  // a busy last tier below: three file tiers
  })) << "three file tiers: the oldest would pass down through the middle one";
}

// One file tier: while writes come down, the idle tier takes a copy of DRAM's furthest record (the next a
// write sends there), even with DRAM full; only that one, from DRAM, and not when there is a slower tier,
// the tier is busy, DRAM does not write behind or the record cannot go there.
TEST(Policies, CopyAheadFillsTheOneIdleFileTierFromDram) {
  const auto decide = decider(copy_ahead, [] {
    Scene s(2);
    s.writing = s.copy_ahead = true;
    s.tiers[0].write_behind = true;
    s.tiers[0].free_bytes = 0;  // DRAM full: the next write waits for the furthest to go
    s.add(bit(0), 1, true);
    s.add(bit(0), 1, true);
    return s;
  });
  const auto d = decide([](Scene&) {});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->purpose, Purpose::copy_ahead);
  EXPECT_EQ(d->record, 1u) << "the furthest";
  EXPECT_EQ(d->src, 0);
  EXPECT_EQ(d->dst, 1);
  EXPECT_TRUE(d->drops.empty());
  const auto next_one = decide([](Scene& s) { s.records[1].copies |= bit(1); });
  ASSERT_TRUE(next_one);
  EXPECT_EQ(next_one->record, 0u) << "the furthest has its copy: the next";
  EXPECT_FALSE(decide([](Scene& s) { s.records[1].busy = true; })) << "the furthest is on its way: one at a time";
  EXPECT_FALSE(decide([](Scene& s) { s.tiers[1].copies_in_flight = 1; })) << "the tier is busy";
  EXPECT_FALSE(decide([](Scene& s) { s.tiers[0].write_behind = false; })) << "DRAM does not write behind (its marks)";
  EXPECT_FALSE(decide([](Scene& s) { s.records[1].dir_target = -1; })) << "no room for it there";
  EXPECT_FALSE(decide([](Scene& s) { s.records[1].avoid = bit(1); })) << "the tier failed for it";
  EXPECT_FALSE(decide([](Scene& s) { s.writing = false; })) << "reads have begun";
  EXPECT_FALSE(decide([](Scene& s) { s.copy_ahead = false; })) << "FIFO, a hint, or Config::copy_ahead off";
  EXPECT_FALSE(decide([](Scene& s) { s.persistent = true; }));
  EXPECT_FALSE(decide([](Scene& s) {
    s.tiers.emplace_back();  // a slower, unlimited tier: the tier above is unlimited too and gives nothing up
  })) << "spreading over several tiers chooses where it goes";
}

// A record copied ahead from DRAM gets its copy on its target before DRAM lets it go: drain_ahead takes it
// (from DRAM) after any copy ahead, drain_dram once a write waits for a slot, and dram_room does not give
// its slot while that copy is missing; once made, the slot goes.
TEST(Policies, ARecordCopiedAheadFromDramIsDrainedToItsTargetBeforeItsSlotGoes) {
  Scene s(3);
  s.writing = s.copy_ahead = true;
  s.tiers[0].free_bytes = 0;  // DRAM full
  s.tiers[1].capacity_bytes = s.tiers[1].free_bytes = 4 * kRec;
  Record& r = s.add(bit(0) | bit(2), 1);  // DRAM, and the copy ahead on tier 2
  Notes notes;
  EXPECT_FALSE(dram_room(s.view(), kRec, 99)) << "its only file copy is the one made ahead";
  EXPECT_FALSE(drain_dram(s.view(), notes)) << "no write waits: the slower tier's copies ahead go first";
  const auto later = drain_ahead(s.view(), notes);
  ASSERT_TRUE(later);
  EXPECT_EQ(later->purpose, Purpose::drain_dram);
  s.write_waits = true;
  const auto d = drain_dram(s.view(), notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->src, 0);
  EXPECT_EQ(d->dst, 1);
  r.copies |= bit(1);
  const auto room = dram_room(s.view(), kRec, 99);
  ASSERT_TRUE(room);
  EXPECT_EQ(room->size(), 1u);
  s.writing = s.write_waits = false;  // reads began: its DRAM copy is borrowed (fetch_via_dram)
  r.copies = bit(0) | bit(2);
  EXPECT_FALSE(drain_dram(s.view(), notes)) << "the slower tier's next fetch has the target's room first";
  const auto up = drain_ahead(s.view(), notes);
  ASSERT_TRUE(up);
  EXPECT_EQ(up->dst, 1);
  EXPECT_EQ(up->drops, drops({{0, 2}})) << "it moves up: its copy below the target goes";
  EXPECT_TRUE(dram_room(s.view(), kRec, 99)) << "an application call may still take its slot, last";
}

/// Reads under way over a known schedule: DRAM for two records, one slot free, above a full fast tier
/// for two and a slow tier.
Scene at_the_turn() {
  Scene s(3);
  s.prefetching = true;
  s.tiers[0].capacity_bytes = 2 * kRec;
  s.tiers[0].free_bytes = kRec;
  s.tiers[1].capacity_bytes = 2 * kRec;
  s.tiers[1].free_bytes = 0;
  return s;
}

// At the turn the slow tier's next record comes up into a free DRAM slot when the fast tier has no room
// for it, ahead of a record placed in DRAM that the fast tier delivers later in a fraction of the time.
TEST(Policies, TheSlowTiersNextRecordComesUpThroughAFreeDramSlot) {
  const auto base = [] {
    Scene s = at_the_turn();
    s.add(bit(0), 1, true);  // read next, in DRAM
    s.add(bit(1), 1, true);  // then one the fast tier holds
    s.add(bit(1), 1);
    s.add(bit(2), 2);  // the slow tier's first
    s.add(bit(2), 2);
    return s;
  };
  const auto decide = decider(next, base);
  const auto d = decide([](Scene&) {});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->purpose, Purpose::prefetch_file);
  EXPECT_EQ(d->record, 3u);
  EXPECT_EQ(d->src, 2);
  EXPECT_EQ(d->dst, 0);
  EXPECT_TRUE(d->drops.empty());
  // Otherwise the record placed in DRAM takes the slot.
  const auto placed = [&](auto change) {
    const auto e = decide(change);
    return e && e->purpose == Purpose::prefetch_dram && e->record == 1u;
  };
  EXPECT_TRUE(placed([](Scene& s) { s.writing = true; })) << "writes still come down";
  EXPECT_TRUE(placed([](Scene& s) { s.records[1].copies = bit(2); })) << "the record placed in DRAM is on the slow tier too";
  EXPECT_TRUE(placed([](Scene& s) { s.tiers[0].capacity_bytes = kRec; })) << "DRAM has one slot: nothing else could cycle";
  EXPECT_TRUE(placed([](Scene& s) { s.tiers[2].fetches_in_flight = 1; })) << "the slow tier is fetching already";
  EXPECT_TRUE(placed([](Scene& s) {
    s.records[4].copies = bit(0) | bit(2);  // borrowed already
    s.tiers[0].free_bytes = 2 * kRec;
  })) << "one borrowed record at a time";
  EXPECT_TRUE(placed([](Scene& s) { s.tiers[1].free_bytes = kRec; })) << "the fast tier has room: placement moves it there";
}

// The slow tier's record does not borrow the slot the next record placed in DRAM comes up through, unless
// a read before that record frees another: FIFO's next read would wait for the slow fetch.
TEST(Policies, TheBorrowedSlotIsNotTheNextRecordsUnlessAReadFreesOne) {
  enum class Before { nothing, in_dram, on_its_way };
  const auto scene = [](Before before) {
    Scene s = at_the_turn();
    if (before == Before::in_dram) s.add(bit(0), 1, true);
    if (before == Before::on_its_way) {
      Record& r = s.add(bit(1), 1, true);  // a read waits for it, its fetch under way
      r.demand = r.busy = true;
    }
    s.add(bit(1), 1, true);  // the next record placed in DRAM, on the fast tier
    s.add(bit(2), 2);        // the slow tier's first
    s.add(bit(0), 1);        // DRAM's other slot: read last, its drain still to come
    return s;
  };
  Notes notes;
  Scene s = scene(Before::nothing);
  EXPECT_FALSE(fetch_via_dram(s.view(), notes)) << "the free slot is the next record's";
  const auto d = next(s.view(), notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->purpose, Purpose::prefetch_dram);
  EXPECT_EQ(d->record, 0u);
  s.tiers[0].capacity_bytes = 3 * kRec;
  s.tiers[0].free_bytes = 2 * kRec;
  EXPECT_TRUE(fetch_via_dram(s.view(), notes)) << "DRAM has a slot for each";
  for (const Before before : {Before::in_dram, Before::on_its_way}) {
    const Scene t = scene(before);
    const auto e = fetch_via_dram(t.view(), notes);
    ASSERT_TRUE(e) << "a read before the next record frees a slot for it";
    EXPECT_EQ(e->record, 2u);
    EXPECT_EQ(e->src, 2);
  }
}

// A borrowed record's slot is not room a prefetch makes: the slow tier would read it again.
TEST(Policies, APrefetchDoesNotTakeABorrowedSlot) {
  Scene s(3);
  s.prefetching = true;
  s.tiers[0].capacity_bytes = 2 * kRec;
  s.tiers[0].free_bytes = 0;
  s.tiers[1].free_bytes = 0;
  s.add(bit(0), 1, true);
  s.add(bit(1), 1, true);
  s.add(bit(0) | bit(2), 2);  // borrowed: up from the slow tier, placed below DRAM
  Notes notes;
  EXPECT_FALSE(prefetch_dram(s.view(), notes));
  const auto room = dram_room(s.view(), kRec, 1);
  ASSERT_TRUE(room) << "a read waiting for its record may take it, last";
  EXPECT_EQ(room->front().record, 2u);
  s.add(bit(0) | bit(1), 1);  // a record the fast tier holds too goes first
  EXPECT_EQ(dram_room(s.view(), kRec, 1)->front().record, 3u);
}

// Copy ahead comes last: any other decision goes first.
TEST(Policies, CopyAheadIsTheLastPolicy) {
  Scene s(3);
  s.writing = s.copy_ahead = true;
  s.tiers[1].capacity_bytes = 2 * kRec;
  s.tiers[1].free_bytes = kRec;
  s.add(bit(1), 1);
  Notes notes;
  EXPECT_EQ(next(s.view(), notes)->purpose, Purpose::copy_ahead);
  s.add(bit(0), 2);  // a DRAM-only record placed below: drain_dram goes first
  EXPECT_EQ(next(s.view(), notes)->purpose, Purpose::drain_dram);
}

// A record not encoded yet is placed, and drained, at the frame it is expected to make: it fits a fast
// tier its raw bytes would not.
TEST(Pass, ARecordNotEncodedYetIsPlannedAtItsExpectedFrame) {
  std::deque<Record> recs(1);
  recs[0].size = 4 * kRec;
  recs[0].copies = bit(0);
  recs[0].expect = kRec;
  std::vector<Record*> ranked{&recs[0]};
  Limits limits;
  limits.dram_bytes = 0;
  limits.file_bytes = {0, 2 * kRec, 0};
  place_records(ranked, limits);
  EXPECT_EQ(recs[0].dir_target, 1);
  recs[0].expect = 0;  // planned raw: too large for the fast tier
  place_records(ranked, limits);
  EXPECT_EQ(recs[0].dir_target, 2);

  Scene s(3);
  s.tiers[1].free_bytes = 2 * kRec;
  Record& r = s.add(bit(0), 1, false, 4 * kRec);
  r.expect = kRec;
  Notes notes;
  const auto d = drain_dram(s.view(), notes);
  ASSERT_TRUE(d) << "the drain checks the room for the expected frame, not the raw bytes";
  EXPECT_EQ(d->dst, 1);
  r.stored = 3 * kRec;  // encoded: its frame is what counts
  EXPECT_EQ(r.plan_bytes(), 3 * kRec);
}

// A copy ahead in flight counts as the record's backing copy: it gives way to the next write at once.
TEST(Pass, ACopyAheadInFlightBacksItsRecord) {
  std::deque<Record> recs(2);
  std::vector<Record*> ranked = in_order(recs);
  recs[0].copies = bit(0);  // the newcomer, soonest (LIFO), leaving DRAM
  recs[1].copies = bit(1);  // on tier 1, its copy ahead to tier 2 under way
  recs[1].busy = true;
  recs[1].ahead = 2;
  Limits limits;
  limits.dram_bytes = 0;
  limits.file_bytes = {0, kRec, 0};
  limits.moves_up = false;
  place_records(ranked, limits);
  EXPECT_EQ(recs[0].dir_target, 1);
  EXPECT_EQ(recs[1].dir_target, 2);
  recs[1].ahead = -1;  // no copy ahead: the newcomer goes to the slower tier
  place_records(ranked, limits);
  EXPECT_EQ(recs[0].dir_target, 2);
  EXPECT_EQ(recs[1].dir_target, 1);
  limits.persistent = true;  // a last-tier copy backs nothing in persistent mode
  recs[1].copies = bit(1) | bit(2);
  place_records(ranked, limits);
  EXPECT_EQ(recs[1].dir_target, 1);
}

// While writes come down, a record DRAM holds is placed as if its copy made ahead from DRAM were not there
// (here on the faster tier, as a newcomer would be); once DRAM has let it go, it is where that copy is.
TEST(Pass, ACopyAheadFromDramIsNoPlacementChoiceWhileDramHoldsTheRecord) {
  std::deque<Record> recs(1);
  std::vector<Record*> ranked = in_order(recs);
  recs[0].copies = bit(0) | bit(2);
  recs[0].ahead_from_dram = 2;
  Limits limits;
  limits.dram_bytes = 0;
  limits.file_bytes = {0, kRec, 0};
  limits.moves_up = false;
  place_records(ranked, limits);
  EXPECT_EQ(recs[0].dir_target, 1);
  recs[0].copies = bit(2);  // DRAM let it go
  place_records(ranked, limits);
  EXPECT_EQ(recs[0].dir_target, 2);
}

// While writes come down, a slot that a copy ahead reads from is taken for as long as the slower tier needs:
// no room to plan with. The record DRAM would keep beside it leaves now, so that the next write does not
// wait for the slower tier; once the copy has landed, DRAM keeps it again. A copy ahead between two file
// tiers reads no slot: the newest keeps DRAM's place.
TEST(Pass, ASlotACopyAheadReadsFromIsNoRoomToPlanWith) {
  std::deque<Record> recs(2);
  std::vector<Record*> ranked = in_order(recs);
  recs[0].copies = bit(0);  // the newest
  recs[1].copies = bit(0);  // the oldest, its copy ahead from DRAM to tier 2 under way
  recs[1].busy = true;
  recs[1].ahead = 2;
  recs[1].copying_on = bit(0) | bit(2);
  Limits limits;
  limits.dram_bytes = kRec;  // two slots, one kept for the next write
  limits.file_bytes = {0, 4 * kRec, 0};
  limits.moves_up = false;
  place_records(ranked, limits);
  EXPECT_FALSE(recs[0].want_mem);
  EXPECT_EQ(recs[0].dir_target, 1);
  recs[1].busy = false;  // the copy landed
  recs[1].ahead = -1;
  recs[1].copies = bit(0) | bit(2);
  recs[1].ahead_from_dram = 2;
  place_records(ranked, limits);
  EXPECT_TRUE(recs[0].want_mem);
  EXPECT_FALSE(recs[1].want_mem);
  recs[1].copies = bit(0) | bit(1);  // DRAM holds it, its copy ahead 1->2 under way
  recs[1].busy = true;
  recs[1].ahead = 2;
  recs[1].ahead_from_dram = -1;
  recs[1].copying_on = bit(1) | bit(2);
  place_records(ranked, limits);
  EXPECT_TRUE(recs[0].want_mem) << "the slot is free to go (dram_copy_free): no pin";
  EXPECT_FALSE(recs[1].want_mem);
}

// Bottleneck first (FIFO) counts a resident's move down into the last tier as a copy arriving there: the
// record leaving DRAM then takes the tier above, one copy at a time into the last; with no move under way
// it starts the last tier.
TEST(Pass, AMoveDownKeepsTheLastTierBusyForBottleneckFirst) {
  std::deque<Record> recs(2);
  std::vector<Record*> ranked = in_order(recs);
  recs[0].copies = bit(0);  // leaving DRAM
  recs[1].copies = bit(1);  // moving down to tier 2
  recs[1].busy = true;
  recs[1].copying_on = bit(1) | bit(2);
  Limits limits;
  limits.dram_bytes = 0;
  limits.file_bytes = {0, 4 * kRec, 0};
  limits.file_rates = {0, 1000.0 * kRec, 100.0 * kRec};
  limits.moves_up = false;
  limits.bottleneck_first = true;
  limits.to_come_bytes = kRunGoesOn;
  place_records(ranked, limits);
  EXPECT_EQ(recs[0].dir_target, 1) << "the last tier is busy";
  recs[1].busy = false;
  recs[1].copying_on = 0;
  place_records(ranked, limits);
  EXPECT_EQ(recs[0].dir_target, 2) << "the last tier idles: it starts";
}

// A staged copy is no placement choice: its record is placed as if the copy were not there (here on the
// slower tier, the faster one's room going to the sooner record), and the mark goes once the copy has.
TEST(Pass, AStagedCopyIsPlacedAsIfItWereNotThere) {
  std::deque<Record> recs(2);
  std::vector<Record*> ranked = in_order(recs);
  recs[0].copies = bit(0);           // the newest, leaving DRAM
  recs[1].copies = bit(0) | bit(1);  // staged on tier 1
  recs[1].staged = 1;
  Limits limits;
  limits.dram_bytes = 0;
  limits.file_bytes = {0, kRec, 0};
  limits.moves_up = false;
  place_records(ranked, limits);
  EXPECT_EQ(recs[0].dir_target, 1);
  EXPECT_EQ(recs[1].dir_target, 2) << "on its way down";
  recs[1].copies = bit(2);  // it moved on
  place_records(ranked, limits);
  EXPECT_EQ(recs[1].staged, -1);
  recs[1].copies = bit(1);  // back on tier 1 later (a move up): a resident like any other
  place_records(ranked, limits);
  EXPECT_EQ(recs[1].dir_target, 1);
}

// Once reads begin a staged copy is a resident like any other: its record keeps its room there rather than
// moving on down ahead of its read (the record read first, leaving DRAM, takes the slower tier instead).
TEST(Pass, AStagedCopyIsAResidentOnceReadsBegin) {
  std::deque<Record> recs(2);
  std::vector<Record*> ranked = in_order(recs);
  recs[0].copies = bit(0);  // read first, leaving DRAM
  recs[1].copies = bit(1);  // staged on tier 1, not yet moved on
  recs[1].staged = 1;
  Limits limits;
  limits.dram_bytes = 0;
  limits.file_bytes = {0, kRec, 0};
  limits.moves_up = false;
  place_records(ranked, limits);
  EXPECT_EQ(recs[1].dir_target, 2) << "writes coming: on its way down";
  limits.moves_up = true;
  place_records(ranked, limits);
  EXPECT_EQ(recs[1].dir_target, 1) << "reads begun: it stays";
  EXPECT_EQ(recs[0].dir_target, 2);
}

// Persistent: a record whose only file copy is its durable one is placed afresh (the fast tier when it has room),
// unless no next use of it is known; a record's DRAM footprint is its slot, however much larger than the record.
TEST(Pass, DurableCopiesAreNoPlacementChoice) {
  std::deque<Record> recs(2);
  std::vector<Record*> ranked = in_order(recs);
  for (Record& r : recs) {
    r.copies = bit(2);
    r.rank = r.gen;
  }
  recs[1].rank = kNoNextUse + 1;  // read already
  Limits limits;
  limits.dram_bytes = 0;
  limits.file_bytes = {0, 4 * kRec, 0};
  limits.persistent = true;
  place_records(ranked, limits);
  EXPECT_EQ(recs[0].dir_target, 1);
  EXPECT_EQ(recs[1].dir_target, 2);
  limits.persistent = false;  // scratch: a resident, it moves up as residents do
  place_records(ranked, limits);
  EXPECT_EQ(recs[0].dir_target, 1);
  EXPECT_EQ(recs[1].dir_target, 2) << "but not one with no next use";

  Record big;
  big.size = kRec;
  big.slot = mlbs::detail::Block::allocate(4 * kRec);
  EXPECT_EQ(dram_footprint(big), 4 * kRec);
  big.slot = {};
  EXPECT_EQ(dram_footprint(big), kRec);
}

// Prefetch into DRAM only with a known schedule, soonest first, and never overtaking a record that does not fit yet.
TEST(Policies, PrefetchDramInOrderWithoutOvertaking) {
  Scene s(2);
  s.tiers[0].free_bytes = kRec;
  s.add(bit(1), 1, true, 2 * kRec);
  s.add(bit(1), 1, true);
  Notes notes;
  EXPECT_FALSE(prefetch_dram(s.view(), notes)) << "no schedule: no prefetch";
  s.prefetching = true;
  EXPECT_FALSE(prefetch_dram(s.view(), notes)) << "the second would overtake the first";
  s.tiers[0].free_bytes = 2 * kRec;
  const auto d = prefetch_dram(s.view(), notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->purpose, Purpose::prefetch_dram);
  EXPECT_EQ(d->record, 0u);
}

// Prefetch between file tiers: a record below its target moves up to it, unless DRAM has it.
TEST(Policies, PrefetchFileMovesUp) {
  Scene s(3);
  s.prefetching = true;
  s.add(bit(0) | bit(2), 1);
  s.add(bit(2), 1);
  Notes notes;
  const auto d = prefetch_file(s.view(), notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->record, 1u);
  EXPECT_EQ(d->src, 2);
  EXPECT_EQ(d->dst, 1);
}

// A prefetch into DRAM does not start on a tier another fetch reads from (a second one there would share
// its bandwidth and delay the sooner record): a record on another tier goes meanwhile; copies into the
// tier, or down out of it (limited by the slower tier), hold nothing back.
TEST(Policies, PrefetchDramWaitsForTheReadsOfItsSourceTier) {
  Scene s(3);
  s.prefetching = true;
  s.tiers[0].free_bytes = 2 * kRec;
  s.add(bit(2), 2, true);  // soonest: on the slow tier
  s.add(bit(1), 1, true);  // next: on the fast tier
  s.tiers[2].copies_in_flight = s.tiers[2].fetches_in_flight = 1;
  Notes notes;
  auto d = prefetch_dram(s.view(), notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->record, 1u);
  EXPECT_EQ(d->src, 1);
  s.tiers[2].fetches_in_flight = 0;
  d = prefetch_dram(s.view(), notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->record, 0u);
}

// The same between file tiers: a record moves up only while no other copy reads its tier.
TEST(Policies, PrefetchFileWaitsForTheReadsOfItsSourceTier) {
  Scene s(3);
  s.prefetching = true;
  s.add(bit(2), 1);
  s.tiers[2].copies_in_flight = s.tiers[2].fetches_in_flight = 1;
  Notes notes;
  EXPECT_FALSE(prefetch_file(s.view(), notes));
  s.tiers[2].fetches_in_flight = 0;
  EXPECT_TRUE(prefetch_file(s.view(), notes));
}

// Persist: the oldest due record goes to the last tier; due = within the flush horizon or on a tier writing behind.
TEST(Policies, PersistOldestDue) {
  Scene s(3);
  s.persistent = true;
  s.add(bit(1), 1);  // gen 1
  s.add(bit(0), 1);  // gen 2
  Notes notes;
  EXPECT_FALSE(persist(s.view(), notes)) << "nothing is due yet";
  s.horizon = 2;
  auto d = persist(s.view(), notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->record, 0u);
  EXPECT_EQ(d->src, 1);
  EXPECT_EQ(d->dst, 2);
  s.horizon = 0;
  s.tiers[0].write_behind = true;
  d = persist(s.view(), notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->record, 1u) << "only the DRAM tier is over its mark";
}

// Write-behind: only over DRAM's high mark or within a flush horizon; furthest next use first.
TEST(Policies, WriteBehindWhenOverTheMarkOrFlushing) {
  Scene s(2);
  s.add(bit(0), 1, true);
  s.add(bit(0), 1, true);
  Notes notes;
  EXPECT_FALSE(write_behind(s.view(), notes));
  s.horizon = 1;
  auto d = write_behind(s.view(), notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->record, 0u) << "only gen 1 is within the horizon";
  s.horizon = 0;
  s.tiers[0].write_behind = true;
  d = write_behind(s.view(), notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->record, 1u);
}

// next() asks the policies in priority order: a waiting read before draining DRAM.
TEST(Policies, NextAsksInPriorityOrder) {
  Scene s(2);
  s.add(bit(1), 1).demand = true;
  s.add(bit(0), 1);
  Notes notes;
  auto d = next(s.view(), notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->purpose, Purpose::demand_fetch);
  s.records[0].demand = false;
  d = next(s.view(), notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->purpose, Purpose::drain_dram);
}


// Reader retention: an unread DRAM-only write gets its file copy at once, oldest first, with no water mark crossed.
TEST(Policies, ForReadersCopiesUnreadWritesDownOldestFirst) {
  Scene s(3);
  s.add(bit(0), 1, true);                        // read (or retention off): stays in DRAM for now
  s.add(bit(0), 1, true).for_readers = true;     // unread, gen 2
  s.add(bit(0) | bit(1), 1).for_readers = true;  // unread but already on a file tier
  Notes notes;
  auto d = for_readers(s.view(), notes);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->purpose, Purpose::for_readers);
  EXPECT_EQ(d->record, 1u);
  EXPECT_EQ(d->src, 0);
  EXPECT_EQ(d->dst, 1);
  EXPECT_FALSE(write_behind(s.view(), notes)) << "without retention nothing would go down yet";
  s.records[1].for_readers = false;
  EXPECT_FALSE(for_readers(s.view(), notes));
}

// Do no harm: no move up between file tiers while writes come down to fill the room.
TEST(Policies, PrefetchFileWaitsForTheReads) {
  Scene s(3);
  s.prefetching = true;
  s.add(bit(2), 1);
  s.writing = true;
  Notes notes;
  EXPECT_FALSE(prefetch_file(s.view(), notes));
  s.writing = false;
  EXPECT_TRUE(prefetch_file(s.view(), notes));
}

// With a known schedule DRAM's water mark copies down only records readers watch; a flush copies down any.
TEST(Policies, WriteBehindWithAKnownScheduleOnlyForReadersOrAFlush) {
  Scene s(2);
  s.add(bit(0), 1, true);
  s.tiers[0].write_behind = true;
  s.prefetching = true;
  Notes notes;
  EXPECT_FALSE(write_behind(s.view(), notes)) << "placement keeps it in DRAM: no copy is needed";
  s.records[0].watched = true;
  EXPECT_TRUE(write_behind(s.view(), notes)) << "readers read file tiers only";
  s.records[0].watched = false;
  s.horizon = 1;
  EXPECT_TRUE(write_behind(s.view(), notes)) << "a flush still copies down";
  s.horizon = 0;
  s.prefetching = false;
  EXPECT_TRUE(write_behind(s.view(), notes)) << "an unknown schedule may evict it any time";
}

// A hint of records to come (LIFO): they claim DRAM and the fast tier first, so those written go where they will end.
TEST(Pass, RecordsToComeClaimDramAndTheFastTierFirst) {
  std::deque<Record> recs(4);
  std::vector<Record*> ranked;
  for (std::size_t i = 0; i < recs.size(); ++i) {
    recs[i].size = kRec;
    recs[i].gen = 4 - i;  // ranked newest first
    recs[i].copies = bit(0);
    ranked.push_back(&recs[i]);
  }
  const Limits limits{2 * kRec, {0, 2 * kRec, 0}};
  place_records(ranked, limits);
  EXPECT_TRUE(recs[0].want_mem && recs[1].want_mem && !recs[2].want_mem);
  EXPECT_EQ(recs[2].dir_target, 1);
  place_records(ranked, limits, {{0, 0}, kRec});
  for (const Record& r : recs) EXPECT_FALSE(r.want_mem) << "the two to come take DRAM";
  EXPECT_EQ(recs[0].dir_target, 1);
  EXPECT_EQ(recs[1].dir_target, 1);
  EXPECT_EQ(recs[3].dir_target, 2) << "the oldest go straight to the slow tier";
  EXPECT_EQ(records_to_come(10, 4, true), 5u) << "the next write has its room in the headroom";
  EXPECT_EQ(records_to_come(10, 9, true), 0u);
  EXPECT_EQ(records_to_come(10, 12, true), 0u) << "more than the hint: as without it";
  EXPECT_EQ(records_to_come(10, 4, false), 0u) << "reads began: nothing more comes";
}

// The first read stops a copy ahead always, and in scratch mode a copy out of DRAM that made room there of
// a record placement now keeps in DRAM, and a move down between file tiers of a record placement now keeps
// at its source or above; nothing else (a fetch, a write-behind, a persist, a move down the plan still
// wants, a record placed below DRAM).
TEST(Policies, TheFirstReadStopsOnlyTheCopiesTheWritesWanted) {
  Record kept, leaving;
  kept.want_mem = true;
  EXPECT_TRUE(stops_at_turn(Purpose::copy_ahead, 1, leaving, false));
  EXPECT_TRUE(stops_at_turn(Purpose::copy_ahead, 0, kept, true));
  for (const Purpose made_room : {Purpose::drain_dram, Purpose::stage, Purpose::move_down}) {
    EXPECT_TRUE(stops_at_turn(made_room, 0, kept, false)) << to_string(made_room);
    EXPECT_FALSE(stops_at_turn(made_room, 0, leaving, false)) << to_string(made_room) << ": it must leave DRAM";
    EXPECT_FALSE(stops_at_turn(made_room, 0, kept, true)) << to_string(made_room) << ": persistent";
  }
  EXPECT_FALSE(stops_at_turn(Purpose::move_down, 1, kept, false)) << "between file tiers, no file target";
  Record stays;
  stays.dir_target = 1;
  EXPECT_TRUE(stops_at_turn(Purpose::move_down, 1, stays, false)) << "kept where it is";
  EXPECT_TRUE(stops_at_turn(Purpose::move_down, 2, stays, false)) << "wanted higher";
  EXPECT_FALSE(stops_at_turn(Purpose::move_down, 1, stays, true)) << "persistent";
  EXPECT_FALSE(stops_at_turn(Purpose::prefetch_file, 2, stays, false)) << "a move up";
  stays.dir_target = 3;
  EXPECT_FALSE(stops_at_turn(Purpose::move_down, 1, stays, false)) << "still wanted below";
  for (const Purpose other : {Purpose::demand_fetch, Purpose::prefetch_dram, Purpose::prefetch_file, Purpose::persist,
                              Purpose::for_readers, Purpose::write_behind})
    EXPECT_FALSE(stops_at_turn(other, 0, kept, false)) << to_string(other);
}

// LIFO without the count over two unlimited tiers 5:1 apart, DRAM for 8 records and 6 written: planned as
// written, all 6 stay in DRAM and the tiers idle; with as many taken to come as DRAM holds (guessed_to_come:
// the run outgrows DRAM), those claim DRAM first and every record written is placed below it (drained while
// its DRAM copy stays until a write needs the room). Only then: counted, reads begun, copy ahead off,
// persistent, a bounded tier or unknown rates all say 0.
TEST(Pass, UncountedLifoOverUnlimitedTiersPlansAsIfTheRunOutgrewDram) {
  std::deque<Record> recs(6);
  std::vector<Record*> ranked;
  for (std::size_t i = 0; i < recs.size(); ++i) {
    recs[i].size = kRec;
    recs[i].gen = recs.size() - i;  // ranked newest first
    recs[i].copies = bit(0);
    ranked.push_back(&recs[i]);
  }
  Limits limits{8 * kRec, {0, 0, 0}};
  limits.file_rates = {0, 1000.0 * kRec, 200.0 * kRec};
  limits.moves_up = false;
  const auto below = [&] { return std::count_if(recs.begin(), recs.end(), [](const Record& r) { return !r.want_mem; }); };
  place_records(ranked, limits);
  EXPECT_EQ(below(), 0);
  const std::uint64_t guess = guessed_to_come(8, true, true, true, false, limits.file_bytes, limits.file_rates);
  EXPECT_EQ(guess, 8u);
  place_records(ranked, limits, {std::vector<std::uint64_t>(guess, 0), kRec});
  EXPECT_EQ(below(), 6) << "the newest too: each drains while the tiers idle";
  for (const Record& r : recs) EXPECT_GT(r.dir_target, 0) << "gen " << r.gen;
  EXPECT_EQ(guessed_to_come(0, true, true, true, false, limits.file_bytes, limits.file_rates), 1u)
      << "a record larger than DRAM: still one to come";

  EXPECT_EQ(guessed_to_come(10, false, true, true, false, limits.file_bytes, limits.file_rates), 0u) << "counted";
  EXPECT_EQ(guessed_to_come(10, true, false, true, false, limits.file_bytes, limits.file_rates), 0u) << "reads began";
  EXPECT_EQ(guessed_to_come(10, true, true, false, false, limits.file_bytes, limits.file_rates), 0u) << "copy ahead off";
  EXPECT_EQ(guessed_to_come(10, true, true, true, true, limits.file_bytes, limits.file_rates), 0u) << "persistent";
  EXPECT_EQ(guessed_to_come(10, true, true, true, false, {0, 4 * kRec, 0}, limits.file_rates), 0u) << "bounded";
  EXPECT_EQ(guessed_to_come(10, true, true, true, false, limits.file_bytes, {0, 1000.0 * kRec, 0}), 0u)
      << "a rate unknown: no spreading";
}

// limits_for_writes(), the one derivation the engine and mlbs-sim share: uncounted LIFO over two unlimited
// tiers that spread gets DRAM's records guessed to come and streams its writes (lookahead = the budget); FIFO
// with DRAM for four writes starts the last tier and, its records whole over tiers 5x apart, keeps leads; the
// room for the next write leaves DRAM, and once reads began no room is kept and no rule for writes holds.
TEST(Pass, LimitsForWritesDeriveTheScheduleRulesForEngineAndSimulator) {
  std::deque<Record> recs(2);
  const std::vector<Record*> ranked = in_order(recs);
  for (Record& r : recs) r.copies = bit(0);
  WriteBursts bursts;
  bursts.start(kRec, 1.0, 0);
  bursts.start(kRec, 0.02, 0.001);
  const auto limits_of = [&](Schedule::Kind kind, std::uint64_t last_write, Coming& coming) {
    Limits limits{0, {0, 0, 0}};
    limits.file_rates = {0, 1000.0 * kRec, 200.0 * kRec};
    const WriteState w{.kind = kind, .budget = 8 * kRec, .last_write_bytes = last_write, .bursts = bursts};
    limits_for_writes(w, ranked, limits, coming);
    return limits;
  };

  Coming lifo_coming{{}, kRec};
  const Limits lifo = limits_of(Schedule::Kind::lifo, kRec, lifo_coming);
  EXPECT_EQ(lifo_coming.ranks, std::vector<std::uint64_t>(8, 0)) << "as many guessed to come as DRAM holds";
  EXPECT_EQ(lifo.lookahead_bytes, 8 * kRec) << "writes leave DRAM as they come";
  EXPECT_LT(lifo.dram_bytes, 8 * kRec) << "room kept for the next write";
  EXPECT_FALSE(lifo.bottleneck_first);

  Coming fifo_coming{{}, kRec};
  const Limits fifo = limits_of(Schedule::Kind::fifo, kRec, fifo_coming);
  EXPECT_TRUE(fifo_coming.ranks.empty());
  EXPECT_EQ(fifo.lookahead_bytes, 0u);
  EXPECT_TRUE(fifo.bottleneck_first) << "DRAM for four writes";
  EXPECT_TRUE(fifo.idle_tiers_start);
  EXPECT_TRUE(fifo.leads_first) << "whole records over unlimited tiers 5x apart";
  EXPECT_EQ(fifo.to_come_bytes, kRunGoesOn) << "two steps of 20 ms outlast the last tier's 5 ms move of a record";
  EXPECT_TRUE(fifo.last_takes_residents) << "20 ms of compute, no write under way or waiting, a 5 ms move";

  Coming reading{{}, kRec};
  const Limits after = limits_of(Schedule::Kind::fifo, 0, reading);
  EXPECT_EQ(after.dram_bytes, 8 * kRec) << "no write room once reads began";
  EXPECT_FALSE(after.bottleneck_first);
  EXPECT_FALSE(after.leads_first);
  EXPECT_FALSE(after.last_takes_residents);
}

// The idle last tier takes a resident from above (bottleneck first) only while the application computes:
// compute between its bursts, no write under way or waiting for a slot, and a move within four gaps.
TEST(Pass, TheLastTierTakesResidentsOnlyWhileTheApplicationComputes) {
  EXPECT_TRUE(last_takes_residents(true, 0.02, 0.005, 0, false));
  EXPECT_TRUE(last_takes_residents(true, 0.02, 0.08, 0, false)) << "a move four gaps long";
  EXPECT_FALSE(last_takes_residents(true, 0.02, 0.081, 0, false)) << "longer";
  EXPECT_FALSE(last_takes_residents(false, 0.02, 0.005, 0, false)) << "not under bottleneck first";
  EXPECT_FALSE(last_takes_residents(true, 0.0, 0.005, 0, false)) << "no compute between the bursts";
  EXPECT_FALSE(last_takes_residents(true, 0.02, 0.005, kRec, false)) << "a write under way";
  EXPECT_FALSE(last_takes_residents(true, 0.02, 0.005, 0, true)) << "a write waits for its slot";
}

// Records to come at their ranks (an explicit order names them): those read before a written record claim
// room ahead of it, those read after it do not.
TEST(Pass, RecordsToComeTakeTheirPlacesByRank) {
  std::deque<Record> recs(3);
  std::vector<Record*> ranked;
  for (std::size_t i = 0; i < recs.size(); ++i) {
    recs[i].size = kRec;
    recs[i].gen = i + 1;
    recs[i].rank = 10 * (i + 1);  // read at 10, 20, 30
    recs[i].copies = bit(0);
    ranked.push_back(&recs[i]);
  }
  const Limits limits{kRec, {0, kRec, 0}};
  place_records(ranked, limits, {{40, 50}, kRec});
  EXPECT_TRUE(recs[0].want_mem) << "records read after every written one claim nothing ahead of them";
  EXPECT_EQ(recs[1].dir_target, 1);
  EXPECT_EQ(recs[2].dir_target, 2);
  place_records(ranked, limits, {{15, 25}, kRec});
  EXPECT_TRUE(recs[0].want_mem) << "read before the one to come at 15";
  EXPECT_EQ(recs[1].dir_target, 2) << "the one to come at 15 took the fast tier first";
  EXPECT_EQ(recs[2].dir_target, 2);
  place_records(ranked, limits, {{5}, kRec});
  EXPECT_FALSE(recs[0].want_mem) << "the one to come at 5 takes DRAM";
  EXPECT_EQ(recs[0].dir_target, 1);
  EXPECT_EQ(recs[1].dir_target, 2);
}

// Writes that start sooner after the last one returned than it took to copy in are one burst (a step in
// parts); the burst is the longer of the one under way and the one before.
TEST(Pass, WritesBackToBackAreOneBurst) {
  WriteBursts b;
  b.start(kRec, std::numeric_limits<double>::infinity(), 0);  // the first write
  EXPECT_EQ(b.bytes(), kRec);
  b.start(kRec, 0.0001, 0.001);
  b.start(kRec, 0.0001, 0.001);
  EXPECT_EQ(b.bytes(), 3 * kRec);
  b.start(kRec, 0.02, 0.001);  // after a compute: the next step's first record
  EXPECT_EQ(b.bytes(), 3 * kRec) << "the step before still counts";
  b.start(kRec, 0.0001, 0.001);
  b.start(kRec, 0.02, 0.001);
  EXPECT_EQ(b.bytes(), 2 * kRec) << "the step before, now of two";
}

// start() says which writes begin a burst: a step's first record (Record::step_lead).
TEST(Pass, WriteBurstsSayWhichWriteBeginsAStep) {
  WriteBursts b;
  EXPECT_TRUE(b.start(kRec, std::numeric_limits<double>::infinity(), 0)) << "the first write";
  EXPECT_FALSE(b.start(kRec, 0.0001, 0.001));
  EXPECT_TRUE(b.start(kRec, 0.02, 0.001)) << "after a compute";
  EXPECT_FALSE(b.start(kRec, 0.0001, 0.001));
}

// DRAM keeps only some steps' first records (Limits::leads_first) for FIFO in scratch mode over one file
// tier, once steps with compute between them are seen (whole records too) and DRAM holds four of them.
TEST(Pass, LeadsFirstForFifoStepsOverOneTier) {
  WriteBursts steps;
  for (int step = 0; step < 2; ++step) {
    steps.start(kRec, 0.02, 0.001);
    for (int part = 1; part < 4; ++part) steps.start(kRec, 0, 0.001);
  }
  const auto fifo = Schedule::Kind::fifo;
  const std::vector<double> one_rate = {0, 0};  // a tier's rate is not needed
  const std::vector<std::uint64_t> one = {0, 0};
  EXPECT_TRUE(leads_first(fifo, 16 * kRec, steps, kRec, one_rate, one, false));
  EXPECT_FALSE(leads_first(fifo, 15 * kRec, steps, kRec, one_rate, one, false)) << "DRAM for less than four steps";
  EXPECT_FALSE(leads_first(fifo, 16 * kRec, steps, kRec, {0, 500, 100}, {0, 0, 0}, false))
      << "steps in parts over two tiers";
  EXPECT_FALSE(leads_first(Schedule::Kind::lifo, 16 * kRec, steps, kRec, one_rate, one, false)) << "LIFO";
  EXPECT_FALSE(leads_first(fifo, 16 * kRec, steps, kRec, one_rate, one, true)) << "persistent";
  EXPECT_FALSE(leads_first(fifo, 16 * kRec, steps, 0, one_rate, one, false)) << "reads began";
  EXPECT_FALSE(leads_first(fifo, 16 * kRec, steps, kRec, {0}, {0}, false)) << "no file tier";
  WriteBursts whole;
  for (int step = 0; step < 2; ++step) whole.start(kRec, 0.02, 0.001);
  EXPECT_TRUE(leads_first(fifo, 4 * kRec, whole, kRec, one_rate, one, false))
      << "a record a step: every record leads one";
  EXPECT_FALSE(leads_first(fifo, 3 * kRec, whole, kRec, one_rate, one, false)) << "DRAM for less than four records";
  WriteBursts no_compute;
  for (int w = 0; w < 8; ++w) no_compute.start(kRec, w == 0 ? 1.0 : 0, 0.001);
  EXPECT_FALSE(leads_first(fifo, 64 * kRec, no_compute, kRec, one_rate, one, false)) << "one burst, no step seen";
}

// Over several file tiers the leads are kept for whole records over unlimited tiers where the fastest is at
// least four times the others that join together (it carries nearly all the traffic, as one tier does).
TEST(Pass, LeadsFirstOverSeveralTiersWhereTheFastestCarriesNearlyAll) {
  WriteBursts whole;
  for (int step = 0; step < 2; ++step) whole.start(kRec, 0.02, 0.001);
  const auto fifo = Schedule::Kind::fifo;
  const std::vector<std::uint64_t> unlimited2 = {0, 0, 0}, unlimited3 = {0, 0, 0, 0};
  EXPECT_TRUE(leads_first(fifo, 8 * kRec, whole, kRec, {0, 500, 100}, unlimited2, false)) << "5x apart";
  EXPECT_TRUE(leads_first(fifo, 8 * kRec, whole, kRec, {0, 400, 100}, unlimited2, false)) << "4x: at the bound";
  EXPECT_FALSE(leads_first(fifo, 8 * kRec, whole, kRec, {0, 200, 100}, unlimited2, false)) << "2x apart";
  EXPECT_TRUE(leads_first(fifo, 8 * kRec, whole, kRec, {0, 2000, 100}, unlimited2, false))
      << "20x: the slower does not join over DRAM for 8";
  EXPECT_TRUE(leads_first(fifo, 8 * kRec, whole, kRec, {0, 2500, 500, 100}, unlimited3, false))
      << "25:5:1, the third does not join";
  EXPECT_FALSE(leads_first(fifo, 8 * kRec, whole, kRec, {0, 400, 200, 100}, unlimited3, false))
      << "4:2:1, all three join";
  EXPECT_FALSE(leads_first(fifo, 8 * kRec, whole, kRec, {0, 500, 100}, {0, 4 * kRec, 0}, false)) << "bounded";
  EXPECT_FALSE(leads_first(fifo, 8 * kRec, whole, kRec, {0, 500, 0}, unlimited2, false)) << "a rate unknown";
}

// The spacing of the leads DRAM keeps is the least power of two with which the leads of four times the steps
// written fit its slots: it doubles as the run outgrows DRAM.
TEST(Pass, LeadSpacingDoublesAsTheRunOutgrowsDram) {
  EXPECT_EQ(lead_spacing(0, 6), 1u);
  EXPECT_EQ(lead_spacing(1, 6), 1u) << "four steps' leads fit six slots";
  EXPECT_EQ(lead_spacing(2, 6), 2u) << "eight would not; four of every other do";
  EXPECT_EQ(lead_spacing(6, 6), 4u);
  EXPECT_EQ(lead_spacing(32, 6), 32u) << "128 steps guessed: four leads of every 32nd";
  EXPECT_EQ(lead_spacing(32, 0), 1u) << "no slots";
}

// Under leads_first, DRAM keeps the first record of every spacing-th step: six whole records written with DRAM
// for six, the run guessed four times as long, steps 0 and 4; the others drain from the first write.
TEST(Pass, LeadsFirstKeepsTheLeadsOfEverySpacingThStep) {
  std::deque<Record> recs(6);
  std::vector<Record*> ranked = in_order(recs);
  for (Record& r : recs) {
    r.copies = bit(0);
    r.step_lead = true;
  }
  Limits limits;
  limits.file_bytes = {0, 0};
  limits.dram_bytes = 6 * kRec;
  limits.moves_up = false;
  limits.leads_first = true;
  place_records(ranked, limits);
  for (std::size_t i = 0; i < recs.size(); ++i) EXPECT_EQ(recs[i].want_mem, i == 0 || i == 4) << "record " << i;
  limits.leads_first = false;
  place_records(ranked, limits);
  for (const Record& r : recs) EXPECT_TRUE(r.want_mem) << "by rank all six fit";
}

// The compute between bursts is the shorter of the last two gaps that began one; none is known before a second burst.
TEST(Pass, BurstGapIsTheShorterOfTheLastTwo) {
  WriteBursts b;
  b.start(kRec, std::numeric_limits<double>::infinity(), 0);  // the first write: no burst before it
  EXPECT_EQ(b.gap_s(), 0.0);
  b.start(kRec, 0.0001, 0.001);  // the same burst: no gap
  EXPECT_EQ(b.gap_s(), 0.0);
  b.start(kRec, 0.03, 0.001);
  EXPECT_EQ(b.gap_s(), 0.03);
  b.start(kRec, 0.02, 0.001);
  EXPECT_EQ(b.gap_s(), 0.02);
  b.start(kRec, 0.05, 0.001);
  EXPECT_EQ(b.gap_s(), 0.02) << "the shorter of 0.02 and 0.05";
  b.start(kRec, 0.04, 0.001);
  EXPECT_EQ(b.gap_s(), 0.04) << "0.02 is two gaps back";
}

// FIFO without its count is taken to go on once the compute before the steps written (their bytes over a
// burst's, each after the shorter of the last two gaps), or the time since its first write began, lasts as
// long as the last tier's move of a write; not with the tier's rate unknown.
TEST(Pass, AnUncountedRunGoesOnOnceItOutlastsTheLastTiersMove) {
  const double rate = 100.0 * kRec;  // a move of kRec: 10 ms
  WriteBursts b;
  b.start(kRec, std::numeric_limits<double>::infinity(), 0);
  EXPECT_FALSE(outlasts_a_move(b, 8 * kRec, kRec, rate)) << "no gap known yet";
  EXPECT_FALSE(outlasts_a_move(b, 8 * kRec, kRec, rate, 0.009)) << "writing for 9 ms";
  EXPECT_TRUE(outlasts_a_move(b, 8 * kRec, kRec, rate, 0.010)) << "writing for 10 ms, no compute between";
  b.start(kRec, 0.004, 0.001);
  EXPECT_FALSE(outlasts_a_move(b, 2 * kRec, kRec, rate)) << "8 ms of compute";
  EXPECT_TRUE(outlasts_a_move(b, 3 * kRec, kRec, rate)) << "12 ms";
  EXPECT_FALSE(outlasts_a_move(b, 3 * kRec, kRec, 0)) << "the last tier's rate unknown";
  WriteBursts parts;  // steps of four parts, 4 ms before each: a part's move 10 ms
  for (int step = 0; step < 2; ++step)
    for (int part = 0; part < 4; ++part) parts.start(kRec, part ? 0.0 : 0.004, 0.001);
  EXPECT_FALSE(outlasts_a_move(parts, 8 * kRec, kRec, rate)) << "two steps: 8 ms";
  EXPECT_TRUE(outlasts_a_move(parts, 12 * kRec, kRec, rate)) << "three steps: 12 ms";
}

// DRAM keeps room for a burst where it holds four of them (two where the file tiers do not spread or the
// compute between bursts covers a burst's drain), else for the last write; none once reads began.
TEST(Pass, WriteRoomIsABurstWhereDramHoldsFour) {
  EXPECT_EQ(write_room(4 * kRec, kRec, 16 * kRec), 4 * kRec);
  EXPECT_EQ(write_room(4 * kRec, kRec, 15 * kRec), kRec) << "DRAM for less than four bursts";
  EXPECT_EQ(write_room(4 * kRec, kRec, 8 * kRec, false), 4 * kRec) << "one tier: DRAM for two bursts";
  EXPECT_EQ(write_room(4 * kRec, kRec, 7 * kRec, false), kRec) << "one tier: DRAM for less than two bursts";
  const double rate = double(4 * kRec) / 0.01;  // the tiers drain a burst in 10 ms
  EXPECT_EQ(write_room(4 * kRec, kRec, 8 * kRec, true, 0.01, rate), 4 * kRec) << "the compute covers the drain";
  EXPECT_EQ(write_room(4 * kRec, kRec, 8 * kRec, true, 0.009, rate), kRec) << "the tiers are the bottleneck";
  EXPECT_EQ(write_room(4 * kRec, kRec, 7 * kRec, true, 1.0, rate), kRec) << "DRAM for less than two bursts";
  EXPECT_EQ(write_room(4 * kRec, kRec, 8 * kRec, true, 1.0, 0), kRec) << "a rate unknown";
  EXPECT_EQ(write_room(kRec / 2, kRec, 16 * kRec), kRec) << "at least the last write";
  EXPECT_EQ(write_room(4 * kRec, 0, 16 * kRec), 0u) << "reads began";
  const Coming more{{}, kRec};
  EXPECT_EQ(dram_limit(16 * kRec, 0, write_headroom(write_room(4 * kRec, kRec, 16 * kRec), more), 20 * kRec),
            8 * kRec)
      << "room for the step and the next while writes spill";
}

// Idle tiers start on records read before any to come where DRAM holds four of the application's bursts
// (a step in parts is one burst), and before the first burst is known.
TEST(Pass, IdleTiersStartWhereDramHoldsFourBursts) {
  EXPECT_TRUE(idle_tiers_start(8 * kRec, kRec));
  EXPECT_TRUE(idle_tiers_start(4 * kRec, kRec));
  EXPECT_FALSE(idle_tiers_start(8 * kRec, 4 * kRec)) << "DRAM for two steps of four parts";
  EXPECT_TRUE(idle_tiers_start(8 * kRec, 0)) << "no burst yet";
}

// The rate a step drains at: that of every file tier that joins spreading over the DRAM ahead, bounded
// ones included; a slower tier the lookahead is too short for is left out; none if any rate is unknown.
TEST(Pass, DrainRateCountsTheTiersThatJoin) {
  EXPECT_EQ(drain_rate({0, 2e9, 1e9}, kRec, 2 * kRec), 3e9) << "half as fast, DRAM for two records: joins";
  EXPECT_EQ(drain_rate({0, 2e9, 1e9}, kRec, 2 * kRec - 1), 2e9) << "the lookahead too short for the slower tier";
  EXPECT_EQ(drain_rate({0, 2e9, 1e9, 1e9}, kRec, 4 * kRec), 4e9) << "three tiers";
  EXPECT_EQ(drain_rate({0, 2e9, 0}, kRec, 16 * kRec), 0.0) << "a rate unknown";
}

// write_room() over the bursts seen: the tiers that drain a step are those that join over the DRAM its
// room leaves, so a lookahead the room shrinks below what the slower tier needs costs the room.
TEST(Pass, WriteRoomCountsTheTiersThatJoinBesideTheRoom) {
  WriteBursts b;
  for (int step = 0; step < 3; ++step) {
    b.start(kRec, 0.02, 0.001);  // a step of four records, 20 ms of compute before it
    for (int part = 1; part < 4; ++part) b.start(kRec, 0, 0.001);
  }
  ASSERT_EQ(b.bytes(), 4 * kRec);
  Limits limits;
  limits.file_bytes = {0, 64 * kRec, 0};  // the fast tier bounded: it drains its share while it joins
  const double slow = double(4 * kRec) / 0.03;  // alone, the slow tier drains a step in 30 ms: too slow
  limits.file_rates = {0, 2 * slow, slow};
  EXPECT_EQ(write_room(b, kRec, 8 * kRec, limits), 4 * kRec) << "both tiers drain a step in 10 ms";
  limits.file_rates = {0, 0.5 * slow, 0.25 * slow};
  EXPECT_EQ(write_room(b, kRec, 8 * kRec, limits), kRec) << "even together the tiers are the bottleneck";
  // Fast alone drains a step in 21.7 ms, with the slow tier in 18.6 ms; the slow tier joins with six
  // records of DRAM ahead: beside a step's room, a budget of ten leaves six, one of eight leaves four.
  const double slower = double(4 * kRec) / 0.13;
  limits.file_rates = {0, 6 * slower, slower};
  EXPECT_EQ(write_room(b, kRec, 10 * kRec, limits), 4 * kRec) << "the slow tier joins beside the room";
  EXPECT_EQ(write_room(b, kRec, 8 * kRec, limits), kRec) << "the room leaves too little DRAM for it to join";
  // A slow tier that would not join even beside one write's room: the tiers do not spread, and DRAM for
  // two steps keeps room for one though the fast tier alone is the bottleneck (25 ms a step).
  const double fast = double(4 * kRec) / 0.025;
  limits.file_rates = {0, fast, fast / 10};
  EXPECT_EQ(write_room(b, kRec, 8 * kRec, limits), 4 * kRec) << "the slow tier never joins";
  limits.file_rates = {0, fast, fast / 7};
  EXPECT_EQ(write_room(b, kRec, 8 * kRec, limits), kRec) << "beside one write's room it would join";
}

// FIFO's steps in parts over tiers that spread, DRAM for two steps, compute covering 90% of a step's drain or
// more but not all of it: double-buffered both ways. Writes keep room for a step and the slower tier joins over
// all but one part's DRAM; once reads begin, DRAM keeps room for two steps. Not where the compute covers the
// whole drain (write_room() gives the step its room alone), below the bar, for LIFO, over one tier, for whole
// records, in persistent mode, nor with DRAM for four steps or less than two.
TEST(Pass, FifoStepsInPartsDoubleBufferBothWaysWhereComputeNearlyCoversTheirDrain) {
  WriteBursts steps;  // steps of four records, 20 ms of compute before each
  for (int step = 0; step < 3; ++step) {
    steps.start(kRec, 0.02, 0.001);
    for (int part = 1; part < 4; ++part) steps.start(kRec, 0, 0.001);
  }
  ASSERT_EQ(steps.bytes(), 4 * kRec);
  ASSERT_EQ(steps.last_bytes(), kRec);
  // Two tiers, the second half as fast (it joins over the 4 records a step's room leaves), together
  // draining `covered` of a step in the 20 ms of compute.
  const auto rates = [](double covered) {
    const double fast = covered * double(4 * kRec) / 0.02 / 1.5;
    return std::vector<double>{0, fast, fast / 2};
  };
  const auto fifo = Schedule::Kind::fifo;
  EXPECT_TRUE(steps_double_buffered(fifo, 8 * kRec, steps, rates(0.95), false));
  EXPECT_TRUE(steps_double_buffered(fifo, 8 * kRec, steps, rates(0.9), false)) << "at the bar";
  EXPECT_FALSE(steps_double_buffered(fifo, 8 * kRec, steps, rates(1.0), false)) << "the compute covers it all";
  EXPECT_FALSE(steps_double_buffered(fifo, 8 * kRec, steps, rates(0.85), false)) << "below the bar";
  EXPECT_FALSE(steps_double_buffered(Schedule::Kind::lifo, 8 * kRec, steps, rates(0.95), false));
  EXPECT_FALSE(steps_double_buffered(fifo, 8 * kRec, steps, {0, rates(0.95)[1] * 1.5}, false)) << "one tier";
  EXPECT_FALSE(steps_double_buffered(fifo, 8 * kRec, steps, rates(0.95), true)) << "persistent";
  EXPECT_FALSE(steps_double_buffered(fifo, 16 * kRec, steps, rates(0.95), false)) << "DRAM for four steps";
  EXPECT_FALSE(steps_double_buffered(fifo, 7 * kRec, steps, rates(0.95), false)) << "DRAM for less than two";
  // A second tier five times slower joins over the 7 records all but a part leaves, not over the 4 a step's
  // room leaves: counted, as it will join, it brings the cover into the band.
  const double fast = 0.95 * double(4 * kRec) / 0.02 / 1.2;
  EXPECT_TRUE(steps_double_buffered(fifo, 8 * kRec, steps, {0, fast, fast / 5}, false)) << "a tier 5x slower";
  WriteBursts whole;
  for (int step = 0; step < 3; ++step) whole.start(4 * kRec, 0.02, 0.001);
  EXPECT_FALSE(steps_double_buffered(fifo, 8 * kRec, whole, rates(0.95), false)) << "whole records";

  std::deque<Record> recs(8);
  const std::vector<Record*> ranked = in_order(recs);
  for (Record& r : recs) r.copies = bit(0);
  const auto limits_of = [&](double covered, std::uint64_t last_write) {
    Limits limits{0, {0, 0, 0}};
    limits.file_rates = rates(covered);
    Coming coming{{}, kRec};
    const WriteState w{.kind = fifo, .budget = 8 * kRec, .last_write_bytes = last_write, .bursts = steps};
    limits_for_writes(w, ranked, limits, coming);
    return limits;
  };
  const Limits writing = limits_of(0.95, kRec);
  EXPECT_LE(writing.dram_bytes, 4 * kRec) << "room for a step";
  EXPECT_EQ(writing.lookahead_bytes, 7 * kRec) << "the slower tiers join over all but one part's DRAM";
  EXPECT_EQ(writing.read_room_bytes, 0u);
  const Limits reading = limits_of(0.95, 0);
  EXPECT_EQ(reading.read_room_bytes, 8 * kRec) << "room for two steps once reads begin";
  EXPECT_EQ(reading.dram_bytes, 8 * kRec);
  const Limits below = limits_of(0.85, kRec);
  EXPECT_GT(below.dram_bytes, 4 * kRec) << "room for a write, not a step";
  EXPECT_EQ(below.lookahead_bytes, 0u);
  EXPECT_EQ(limits_of(0.85, 0).read_room_bytes, 0u);
}

// Once the schedule says no write is to come (lifo:N with N written), DRAM keeps no room for one: the
// record it would have sent down for that room, one read among the first, stays. The write in progress
// keeps its room either way.
TEST(Pass, NoRoomIsKeptForAWriteTheScheduleSaysWillNotCome) {
  const std::uint64_t budget = 2 * kRec;
  Coming more{{}, kRec};
  Coming done{{}, kRec, true};
  EXPECT_EQ(write_headroom(kRec, more), kRec);
  EXPECT_EQ(write_headroom(kRec, done), 0u);
  EXPECT_EQ(dram_limit(budget, 0, write_headroom(kRec, more), 2 * kRec), kRec) << "room for the next write";
  EXPECT_EQ(dram_limit(budget, 0, write_headroom(kRec, done), 2 * kRec), budget);
  EXPECT_EQ(dram_limit(budget, kRec, write_headroom(kRec, done), kRec), kRec) << "the last write's own room";
  std::deque<Record> recs(2);
  std::vector<Record*> ranked = in_order(recs);
  for (Record& r : recs) r.copies = bit(0);
  Limits limits;
  limits.file_bytes = {0, kRec, 0};
  limits.dram_bytes = dram_limit(budget, 0, write_headroom(kRec, more), held_bytes(ranked));
  place_records(ranked, limits, more);
  EXPECT_FALSE(recs[1].want_mem) << "without the count, the second newest goes down";
  limits.dram_bytes = dram_limit(budget, 0, write_headroom(kRec, done), held_bytes(ranked));
  place_records(ranked, limits, done);
  EXPECT_TRUE(recs[0].want_mem && recs[1].want_mem) << "both stay: DRAM is read first";
}

// lifo:N over a bounded tier: the records still to come will hold DRAM once written, less one write's room
// (coming_dram()), so they claim no room on the bounded tier, and the records written go there rather than to
// the slower tier; over unlimited tiers, or with none to come, dram_limit() alone counts.
TEST(Pass, RecordsToComePlanWithDramLessOneWrite) {
  const std::vector<std::uint64_t> bounded{0, 2 * kRec, 0};
  EXPECT_EQ(coming_dram(4 * kRec, kRec, bounded), 3 * kRec);
  EXPECT_EQ(coming_dram(4 * kRec, kRec, {0, 0, 0}), 0u) << "unlimited tiers";
  EXPECT_EQ(coming_dram(4 * kRec, 0, bounded), 0u) << "none to come";
  EXPECT_EQ(coming_dram(kRec, kRec, bounded), 0u) << "DRAM for one write";
  std::deque<Record> recs(2);  // written, read after the three to come
  std::vector<Record*> ranked = in_order(recs);
  for (Record& r : recs) r.copies = bit(0);
  Coming coming{{0, 0, 0}, kRec};
  Limits limits;
  limits.file_bytes = bounded;
  limits.dram_bytes = 2 * kRec;  // room kept for two writes
  place_records(ranked, limits, coming);
  EXPECT_EQ(recs[1].dir_target, 2) << "within dram_limit() a record to come took the bounded tier's room";
  limits.coming_dram_bytes = coming_dram(4 * kRec, kRec, bounded);
  place_records(ranked, limits, coming);
  for (const Record& r : recs) {
    EXPECT_FALSE(r.want_mem) << r.id;
    EXPECT_EQ(r.dir_target, 1) << r.id;
  }
  place_records(ranked, limits, Coming{{}, kRec});
  EXPECT_TRUE(recs[0].want_mem && recs[1].want_mem) << "none to come: dram_limit()'s two slots";
}

// DRAM keeps room for the write in progress, and for a second one once writes spill (copies in overlap copies down).
TEST(Pass, DramKeepsRoomForTwoWritesOnlyWhileWritesSpill) {
  const std::uint64_t budget = 8 * kRec;
  EXPECT_EQ(dram_limit(budget, 0, 0, 20 * kRec), budget) << "no writes: the whole budget";
  EXPECT_EQ(dram_limit(budget, kRec, 0, 0), 7 * kRec) << "the first write's room";
  EXPECT_EQ(dram_limit(budget, 0, kRec, 5 * kRec), 7 * kRec) << "everything written still fits: one write's room";
  EXPECT_EQ(dram_limit(budget, kRec, kRec, 7 * kRec), 7 * kRec) << "the write in progress fills DRAM exactly";
  EXPECT_EQ(dram_limit(budget, kRec, kRec, 8 * kRec), 6 * kRec) << "spilling: room for two writes";
  EXPECT_EQ(dram_limit(budget, 0, kRec, 30 * kRec), 6 * kRec);
  EXPECT_EQ(dram_limit(3 * kRec, 0, kRec, 30 * kRec), 2 * kRec) << "a small budget keeps every slot it can";
  std::deque<Record> recs(3);
  std::vector<Record*> ranked;
  for (Record& r : recs) {
    r.size = kRec - 100;  // a slot is whole blocks
    ranked.push_back(&r);
  }
  EXPECT_EQ(held_bytes(ranked), 3 * mlbs::detail::round_up_block(kRec - 100));
}

// A known schedule spills from the write that fills DRAM with the records held and the next write's room: the
// second write's room comes one write sooner than LIFO without its count gets it.
TEST(Pass, AKnownOrderSpillsFromTheWriteThatFillsDram) {
  const std::uint64_t budget = 8 * kRec;
  EXPECT_EQ(dram_limit(budget, 0, kRec, 7 * kRec, 1, false), 7 * kRec) << "newest first: not spilling yet";
  EXPECT_EQ(dram_limit(budget, 0, kRec, 7 * kRec, 1, true), 6 * kRec) << "known order: room for two writes now";
  EXPECT_EQ(dram_limit(budget, 0, kRec, 6 * kRec, 1, true), 7 * kRec) << "room to spare: one write's room";
  EXPECT_EQ(dram_limit(3 * kRec, 0, kRec, 2 * kRec, 1, true), 2 * kRec) << "a small budget keeps every slot it can";
}

// With a write streaming down per tier, a known schedule spills once the records held leave less than their
// room: the record after the last one DRAM keeps leaves as it is written.
TEST(Pass, AKnownOrderSpillsOnceTheRecordsHeldLeaveLessThanItsStreamsRoom) {
  const std::uint64_t budget = 8 * kRec;
  EXPECT_EQ(dram_limit(budget, 0, kRec, 5 * kRec, 3, true), 5 * kRec) << "five held, three streams: spilling";
  EXPECT_EQ(dram_limit(budget, 0, kRec, 6 * kRec, 3, true), 5 * kRec);
  EXPECT_EQ(dram_limit(budget, 0, kRec, 4 * kRec, 3, true), 7 * kRec) << "room for the streams: one write's room";
  EXPECT_EQ(dram_limit(budget, 0, kRec, 6 * kRec, 3, false), 7 * kRec) << "newest first: not spilling yet";
}

// LIFO without the count: one write streams down per tier that joins spreading, at most one per DRAM slot;
// a persistent run, one file tier or an unknown rate keep the single write's room.
TEST(Pass, NewestFirstWritesStreamDownToEveryTierThatJoins) {
  const std::vector<double> half = {0, 2000, 1000}, fifth = {0, 5000, 1000};
  const std::vector<std::uint64_t> two = {0, 0, 0}, three = {0, 0, 0, 0};
  EXPECT_EQ(write_streams(2 * kRec, kRec, half, two, true, false), 2u) << "tier 2 moves a record as tier 1 fills DRAM";
  EXPECT_EQ(write_streams(2 * kRec, kRec, fifth, two, true, false), 1u) << "tier 2 too slow to join";
  EXPECT_EQ(write_streams(8 * kRec, kRec, fifth, two, true, false), 2u);
  EXPECT_EQ(write_streams(2 * kRec, kRec, {0, 1000, 1000, 1000}, three, true, false), 2u) << "no more than DRAM's slots";
  EXPECT_EQ(write_streams(8 * kRec, kRec, half, two, true, true), 1u) << "persistent";
  EXPECT_EQ(write_streams(8 * kRec, kRec, {0, 2000}, {0, 0}, true, false), 1u) << "one file tier";
  EXPECT_EQ(write_streams(8 * kRec, kRec, {0, 2000, 0}, two, true, false), 1u) << "a rate unknown";
  EXPECT_EQ(write_streams(8 * kRec, 0, half, two, true, false), 1u) << "no write yet";
  // A known schedule keeps the records it reads first: one stream per joining tier only with DRAM slots for
  // twice as many and no bounded tier (three tiers at 2000, 1000 and 500: all join beside 8 slots).
  const std::vector<double> halves = {0, 2000, 1000, 500};
  EXPECT_EQ(write_streams(8 * kRec, kRec, halves, three, false, false), 3u);
  EXPECT_EQ(write_streams(4 * kRec, kRec, half, two, false, false), 2u);
  EXPECT_EQ(write_streams(5 * kRec, kRec, halves, three, false, false), 1u) << "slots for fewer than twice";
  EXPECT_EQ(write_streams(8 * kRec, kRec, halves, {0, 4 * kRec, 0, 0}, false, false), 1u) << "a bounded tier";
  EXPECT_EQ(write_streams(8 * kRec, kRec, halves, three, false, true), 1u) << "persistent";
  // The room is kept only while writes spill.
  EXPECT_EQ(dram_limit(2 * kRec, 0, kRec, kRec, 2), kRec) << "all fits: one write's room";
  EXPECT_EQ(dram_limit(2 * kRec, 0, kRec, 2 * kRec, 2), 0u) << "spilling: both slots stream";
  EXPECT_EQ(dram_limit(8 * kRec, 0, kRec, 30 * kRec, 3), 5 * kRec);
  EXPECT_EQ(dram_limit(8 * kRec, 0, kRec, 30 * kRec, 1), 6 * kRec) << "two writes' room is kept anyway";
}

// LIFO told its count leaves DRAM to the records still to come: with DRAM for fewer than four writes over
// unlimited tiers the records written stream down as a count-less LIFO's do; not once none is to come, with
// DRAM for four writes, or over a bounded tier.
TEST(Pass, ACountedLifoStreamsItsWritesWhereDramHoldsFewerThanFour) {
  const std::vector<std::uint64_t> unlimited = {0, 0, 0, 0}, bounded = {0, 8 * kRec, 0, 0};
  EXPECT_TRUE(writes_leave_dram(true, 0, 8 * kRec, kRec, bounded)) << "newest first: always";
  EXPECT_TRUE(writes_leave_dram(false, 5, 2 * kRec, kRec, unlimited));
  EXPECT_TRUE(writes_leave_dram(false, 1, 3 * kRec, kRec, unlimited)) << "one more to come after the next";
  EXPECT_FALSE(writes_leave_dram(false, 0, 2 * kRec, kRec, unlimited)) << "the next write is the last";
  EXPECT_FALSE(writes_leave_dram(false, 5, 4 * kRec, kRec, unlimited)) << "DRAM for four writes";
  EXPECT_FALSE(writes_leave_dram(false, 5, 2 * kRec, kRec, bounded)) << "a bounded tier";
}

// Whether the records written are all read after those still to come (what lets a known order's writes stream
// down): LIFO told its count, always; an explicit order while no record written ranks before the last record to
// come (a revolve-like order's older groups), not once one does (the newest group's head, read first), nor with
// nothing to come; FIFO and LIFO without its count, never (newest_first covers the latter).
TEST(Pass, AnExplicitOrderReadsItsWritesAfterThoseToComeUntilItsHeadIsWritten) {
  std::deque<Record> recs(2);
  const std::vector<Record*> ranked = in_order(recs);
  recs[0].rank = 5;
  recs[1].rank = 7;
  WriteBursts bursts;
  const auto after = [&](Schedule::Kind kind, std::vector<std::uint64_t> to_come, bool counted = false) {
    const WriteState w{.kind = kind, .counted = counted, .budget = 2 * kRec, .last_write_bytes = kRec,
                       .bursts = bursts};
    return read_after_coming(w, ranked, Coming{std::move(to_come), kRec});
  };
  EXPECT_TRUE(after(Schedule::Kind::explicit_order, {1, 2, 3}));
  EXPECT_FALSE(after(Schedule::Kind::explicit_order, {1, 6})) << "record 0 is read before one to come";
  EXPECT_FALSE(after(Schedule::Kind::explicit_order, {})) << "nothing to come";
  EXPECT_TRUE(after(Schedule::Kind::lifo, {0, 0}, true));
  EXPECT_FALSE(after(Schedule::Kind::lifo, {0, 0}));
  EXPECT_FALSE(after(Schedule::Kind::fifo, {1, 2, 3}, true));
}

// The store's own part count: whole when DRAM holds four records or the size is unknown; else the least power of two putting eight parts in DRAM, capped.
TEST(AutoParts, EightPartsInDramWhereItHoldsFewerThanFourRecords) {
  using mlbs::engine::policies::auto_parts;
  constexpr std::uint64_t MiB = 1 << 20;
  EXPECT_EQ(auto_parts(0, 64 * MiB, 64), 1u) << "size unknown";
  EXPECT_EQ(auto_parts(16 * MiB, 64 * MiB, 64), 1u) << "DRAM holds 4";
  EXPECT_EQ(auto_parts(16 * MiB, 1024 * MiB, 64), 1u);
  EXPECT_EQ(auto_parts(16 * MiB, 48 * MiB, 64), 4u) << "DRAM holds 3: 12 parts of 4 MiB";
  EXPECT_EQ(auto_parts(16 * MiB, 32 * MiB, 64), 4u) << "DRAM holds 2: 8 parts of 4 MiB";
  EXPECT_EQ(auto_parts(16 * MiB, 16 * MiB, 64), 8u) << "DRAM holds 1";
  EXPECT_EQ(auto_parts(64 * MiB, 16 * MiB, 64), 32u) << "a record larger than DRAM: parts that fit, 8 of them";
  EXPECT_EQ(auto_parts(64 * MiB, 1 * MiB, 64), 64u) << "capped at the most parts";
  EXPECT_EQ(auto_parts(64 * MiB, 1 * MiB, 16), 16u);
  EXPECT_EQ(auto_parts(16 * MiB + 1, 32 * MiB, 64), 8u) << "DRAM holds 1 whole record and a bit";
}

}  // namespace

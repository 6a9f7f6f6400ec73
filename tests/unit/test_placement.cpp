// Tests of Belady placement: records ranked soonest-first are spread over DRAM
// and the file tiers (src/engine/placement.*).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "engine/policies/pass.hpp"
#include "engine/policies/placement.hpp"

namespace {

using mlbs::engine::policies::place;
using mlbs::engine::policies::Placement;
using mlbs::engine::policies::PlacementItem;
using mlbs::engine::policies::joins_spread;
using mlbs::engine::policies::kRunGoesOn;

/// `n` records of `bytes` each (DRAM slot of the same size), none avoided.
std::vector<PlacementItem> uniform(std::size_t n, std::uint64_t bytes) {
  return std::vector<PlacementItem>(n, PlacementItem{bytes, bytes, 0});
}

std::vector<bool> bools(std::initializer_list<int> v) { return std::vector<bool>(v.begin(), v.end()); }

// DRAM holds exactly the soonest records that fit its capacity.
TEST(Placement, MemoryTakesSoonestUpToCapacity) {
  Placement p = place(uniform(5, 100), 300, {0, 0});
  EXPECT_EQ(p.in_memory, bools({1, 1, 1, 0, 0}));
}

// Records in DRAM still get a file tier where room is left (where they go if they must leave early).
TEST(Placement, MemoryIsInclusive) {
  Placement p = place(uniform(3, 100), 1000, {0, 0});
  EXPECT_EQ(p.in_memory, bools({1, 1, 1}));
  EXPECT_EQ(p.dir_tier, (std::vector<int>{1, 1, 1}));
}

// DRAM accounting uses the slot size (mem_bytes), not the record size.
TEST(Placement, MemoryCountsSlotBytes) {
  std::vector<PlacementItem> items(3, PlacementItem{10, 4096, 0});
  Placement p = place(items, 8192, {0, 0});
  EXPECT_EQ(p.in_memory, bools({1, 1, 0}));
}

// No DRAM capacity means nothing is wanted in DRAM.
TEST(Placement, ZeroMemoryHoldsNothing) {
  Placement p = place(uniform(3, 1), 0, {0, 0});
  EXPECT_EQ(p.in_memory, bools({0, 0, 0}));
}

// File tiers fill soonest-first, the fastest tier with quota left first.
TEST(Placement, FileTiersFillFastestFirst) {
  Placement p = place(uniform(6, 100), 0, {0, 200, 300, 0});
  EXPECT_EQ(p.dir_tier, (std::vector<int>{1, 1, 2, 2, 2, 3}));
}

// A record larger than a tier's remaining quota skips it, and a later smaller one may still fit there.
TEST(Placement, LargeRecordSkipsTierSmallerLaterFits) {
  std::vector<PlacementItem> items = {{60, 60, 0}, {60, 60, 0}, {30, 30, 0}, {20, 20, 0}};
  Placement p = place(items, 0, {0, 100, 0});
  // 60 fits (40 left), 60 does not -> tier 2, 30 fits (10 left), 20 does not.
  EXPECT_EQ(p.dir_tier, (std::vector<int>{1, 2, 1, 2}));
}

// A record larger than a tier's whole quota never lands there.
TEST(Placement, RecordAboveQuotaSkipsTier) {
  std::vector<PlacementItem> items = {{500, 500, 0}, {50, 50, 0}};
  Placement p = place(items, 0, {0, 100, 0});
  EXPECT_EQ(p.dir_tier, (std::vector<int>{2, 1}));
}

// Bit 0 of avoid_mask keeps a record out of DRAM and leaves the room to later records.
TEST(Placement, AvoidMaskSkipsMemory) {
  std::vector<PlacementItem> items = uniform(3, 100);
  items[0].avoid_mask = 1u;
  Placement p = place(items, 200, {0, 0});
  EXPECT_EQ(p.in_memory, bools({0, 1, 1}));
  EXPECT_EQ(p.dir_tier, (std::vector<int>{1, 1, 1}));
}

// Bit t of avoid_mask skips file tier t without consuming its quota.
TEST(Placement, AvoidMaskSkipsFileTier) {
  std::vector<PlacementItem> items = uniform(3, 100);
  items[0].avoid_mask = 1u << 1;
  Placement p = place(items, 0, {0, 200, 0});
  EXPECT_EQ(p.dir_tier, (std::vector<int>{2, 1, 1}));
}

// An unlimited (0) last tier takes everything the faster tiers cannot.
TEST(Placement, UnlimitedLastTierTakesAll) {
  Placement p = place(uniform(8, 1ull << 62), 0, {0, 1ull << 62, 0});
  EXPECT_EQ(p.dir_tier[0], 1);
  for (std::size_t i = 1; i < p.dir_tier.size(); ++i) ASSERT_EQ(p.dir_tier[i], 2) << i;
}

// A record that fits no file tier (all full or avoided) gets -1.
TEST(Placement, NoFileTierGivesMinusOne) {
  std::vector<PlacementItem> items = {{100, 100, 0}, {100, 100, 0}, {10, 10, 0b110u}};
  Placement p = place(items, 0, {0, 100, 50});
  EXPECT_EQ(p.dir_tier, (std::vector<int>{1, -1, -1}));
}

// With only DRAM (no file tier), every record's file tier is -1.
TEST(Placement, MemoryOnlyConfiguration) {
  Placement p = place(uniform(2, 10), 10, {0});
  EXPECT_EQ(p.in_memory, bools({1, 0}));
  EXPECT_EQ(p.dir_tier, (std::vector<int>{-1, -1}));
}

// An empty ranking gives an empty placement.
TEST(Placement, EmptyInput) {
  Placement p = place({}, 100, {0, 0});
  EXPECT_TRUE(p.in_memory.empty());
  EXPECT_TRUE(p.dir_tier.empty());
}

// LIFO ranking (newest first): the newest records get DRAM, the next ones the fast tier, the oldest the slow
// tier; DRAM's records claim no fast-tier room (DRAM and file tiers add up).
TEST(Placement, LifoShapedSplit) {
  // Records written 0..7, ranked by minus generation: index 0 is record 7.
  std::vector<std::uint64_t> ranked_ids = {7, 6, 5, 4, 3, 2, 1, 0};
  Placement p = place(uniform(8, 100), 200, {0, 300, 0});
  std::vector<int> tier_of(8);
  std::vector<bool> mem_of(8);
  for (std::size_t i = 0; i < 8; ++i) {
    tier_of[ranked_ids[i]] = p.dir_tier[i];
    mem_of[ranked_ids[i]] = p.in_memory[i];
  }
  EXPECT_EQ(mem_of, bools({0, 0, 0, 0, 0, 0, 1, 1}));
  EXPECT_EQ(tier_of, (std::vector<int>{2, 2, 2, 1, 1, 1, 2, 2}));
}

// FIFO ranking (oldest first): the oldest records get DRAM, the next ones the fast tier, the newest the slow tier.
TEST(Placement, FifoShapedSplit) {
  Placement p = place(uniform(8, 100), 200, {0, 300, 0});
  EXPECT_EQ(p.in_memory, bools({1, 1, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(p.dir_tier, (std::vector<int>{2, 2, 1, 1, 1, 2, 2, 2}));
}

}  // namespace

namespace {
// A record placed in DRAM keeps the file copy it has and leaves the faster
// file tier's room to the records after it.
TEST(Placement, DramRecordKeepsItsFileCopy) {
  std::vector<mlbs::engine::policies::PlacementItem> ranked = {
      {4096, 4096, 0, 2},   // soonest, in DRAM with a copy on the slow tier
      {4096, 4096, 0, -1},  // next: does not fit DRAM, takes the fast tier
  };
  auto p = mlbs::engine::policies::place(ranked, 4096, {0, 4096, 0});
  EXPECT_TRUE(p.in_memory[0]);
  EXPECT_EQ(p.dir_tier[0], 2);
  EXPECT_FALSE(p.in_memory[1]);
  EXPECT_EQ(p.dir_tier[1], 1);
}
}  // namespace

namespace {
// Copies stay only while their tier has room: when a quota shrank below what
// residents hold, the soonest keep their place and the latest go down.
TEST(Placement, KeptFileCopyRespectsTheQuota) {
  std::vector<mlbs::engine::policies::PlacementItem> ranked = {
      {3000, 4096, 0, 1},  // soonest, fast copy: stays
      {2000, 4096, 0, 1},  // fast copy, no room left for it there: down
  };
  auto p = mlbs::engine::policies::place(ranked, 0, {0, 4000, 0});
  EXPECT_EQ(p.dir_tier[0], 1);
  EXPECT_EQ(p.dir_tier[1], 2);
}

// Once reads have begun, a resident DRAM holds too gives its file room to a record below moving up (the
// slower tier starts on it now, not once the resident is read) and keeps only its DRAM copy; while writes
// come down, where room is left, and while DRAM does not hold it yet (placed there, its file copy is what
// it will be fetched from), it keeps its file copy.
TEST(Placement, DramResidentsYieldTheirFileRoomToMovesUpOnceReadsBegin) {
  std::vector<PlacementItem> ranked = {
      {4096, 4096, 0, 1},  // soonest: in DRAM, with a fast copy
      {4096, 4096, 0, 2},  // next: on the slow tier
  };
  ranked[0].held = true;
  Placement p = place(ranked, 4096, {0, 4096, 0}, /*moves_up=*/true);
  EXPECT_TRUE(p.in_memory[0]);
  EXPECT_EQ(p.dir_tier[0], -1) << "not moved down: its DRAM copy is the one read";
  EXPECT_EQ(p.dir_tier[1], 1);
  p = place(ranked, 4096, {0, 4096, 0}, /*moves_up=*/false);
  EXPECT_EQ(p.dir_tier, (std::vector<int>{1, 2}));
  p = place(ranked, 4096, {0, 8192, 0}, /*moves_up=*/true);
  EXPECT_EQ(p.dir_tier, (std::vector<int>{1, 1}));
  ranked[0].held = false;
  p = place(ranked, 4096, {0, 4096, 0}, /*moves_up=*/true);
  EXPECT_EQ(p.dir_tier, (std::vector<int>{1, 2}));
}

// The same for a record leaving DRAM (FIFO's newest, read last): it takes the fast room of the sooner one
// DRAM holds, rather than go to the slow tier and come back.
TEST(Placement, DramResidentsYieldTheirFileRoomToARecordLeavingDram) {
  std::vector<PlacementItem> ranked = {
      {4096, 4096, 0, 1},   // soonest: in DRAM, with a fast copy
      {4096, 4096, 0, -1},  // only in DRAM, which has no room for it
  };
  ranked[0].held = ranked[1].held = true;
  const Placement p = place(ranked, 4096, {0, 4096, 0}, /*moves_up=*/true);
  EXPECT_EQ(p.in_memory, bools({1, 0}));
  EXPECT_EQ(p.dir_tier, (std::vector<int>{-1, 1}));
}

// Reads under way (FIFO's turn): a record only DRAM holds, read last, keeps its slot beside the slot of the
// next fetch (one per file tier the next reads come from) rather than leave for a fetch further ahead; a record
// with a file copy to come back from gives way by rank, and so does everything while writes come down.
TEST(Placement, ARecordOnlyDramHoldsKeepsItsSlotOnceReadsBegin) {
  std::vector<PlacementItem> ranked = {
      {4096, 4096, 0, 1},   // read next, on the file tier
      {4096, 4096, 0, 1},   // then another there
      {4096, 4096, 0, -1},  // read last, only in DRAM
  };
  ranked[2].held = true;
  EXPECT_EQ(place(ranked, 8192, {0, 0}, /*moves_up=*/true).in_memory, bools({1, 0, 1}));
  EXPECT_EQ(place(ranked, 8192, {0, 0}, /*moves_up=*/false).in_memory, bools({1, 1, 0})) << "writes come down";
  std::vector<PlacementItem> clean = ranked;
  clean[2].file_copy = 1;
  EXPECT_EQ(place(clean, 8192, {0, 0}, true).in_memory, bools({1, 1, 0})) << "it can come back from its copy";
  std::vector<PlacementItem> two_tiers = ranked;
  two_tiers[1].file_copy = 2;  // the next two fetches come from two tiers: a slot for each
  EXPECT_EQ(place(two_tiers, 8192, {0, 0, 0}, true).in_memory, bools({1, 1, 0}));
  std::vector<PlacementItem> read_first = ranked;
  read_first[0].held = true;  // a record DRAM holds, read before any fetch, keeps its slot first
  read_first[0].file_copy = -1;
  EXPECT_EQ(place(read_first, 8192, {0, 0}, true).in_memory, bools({1, 0, 1}));
}

// Once reads began, a record only DRAM holds and read after a fetch keeps its slot beside the room for the
// records to come up: one slot per file tier they come from, or the read room where that is more.
TEST(Placement, ReadRoomSendsDownWhatDramHoldsOnlyForLater) {
  constexpr std::uint64_t kPart = 4096;
  // Records 0-7 on two tiers, read first; 8-11 only in DRAM, read last; DRAM for eight.
  std::vector<PlacementItem> ranked(12, PlacementItem{kPart, kPart, 0});
  for (std::size_t i = 0; i < 8; ++i) ranked[i].file_copy = 1 + int(i % 2);
  for (std::size_t i = 8; i < 12; ++i) ranked[i].held = true;
  const std::vector<std::uint64_t> tiers{0, 0, 0};
  const auto kept = [&](std::uint64_t read_room) {
    const Placement p = place(ranked, 8 * kPart, tiers, true, {}, 0, false, std::nullopt, false, false, 0, read_room);
    return std::count(p.in_memory.begin() + 8, p.in_memory.end(), true);
  };
  EXPECT_EQ(kept(0), 4) << "two slots kept for the next records, one per tier: room for all four";
  EXPECT_EQ(kept(6 * kPart), 2) << "room for six to come up";
  EXPECT_EQ(kept(8 * kPart), 0) << "room for eight: all go down";
}

// Once reads began, a record leaving DRAM takes the fastest tier with room, where spreading would send it to
// the slower tier that is less busy; while writes come down it is spread as before.
TEST(Placement, ARecordLeavingDramOnceReadsBeganTakesTheFastestTier) {
  constexpr std::uint64_t kPart = 4096;
  // Four records on the fast tier, read first; the last only in DRAM, which has no room left for it.
  std::vector<PlacementItem> ranked(5, PlacementItem{kPart, kPart, 0});
  for (std::size_t i = 0; i < 4; ++i) ranked[i].file_copy = 1;
  ranked[4].held = true;
  const std::vector<std::uint64_t> tiers{0, 0, 0};
  const std::vector<double> rates{0, 2.0, 1.0};  // the fast tier's four reads outlast the slow one's round trip
  const auto tier_of_last = [&](bool moves_up) {
    return place(ranked, 0, tiers, moves_up, rates, 4 * kPart).dir_tier[4];
  };
  EXPECT_EQ(tier_of_last(true), 1) << "reads under way";
  EXPECT_EQ(tier_of_last(false), 2) << "writes come down: the tier done soonest";
}

// A resident is not demoted to admit a sooner record: the newcomer takes the next tier with room.
TEST(Placement, ResidentIsNotDemotedForASoonerRecord) {
  std::vector<mlbs::engine::policies::PlacementItem> ranked = {
      {4096, 4096, 0, -1},  // soonest, no file copy yet
      {4096, 4096, 0, 1},   // later, already on the fast tier (full)
  };
  auto p = mlbs::engine::policies::place(ranked, 0, {0, 4096, 0});
  EXPECT_EQ(p.dir_tier[0], 2);
  EXPECT_EQ(p.dir_tier[1], 1);
}

// Room in a faster tier goes to the soonest records below it (prefetch between file tiers).
TEST(Placement, ResidentsMoveUpIntoFreeRoomSoonestFirst) {
  std::vector<mlbs::engine::policies::PlacementItem> ranked = {
      {4096, 4096, 0, 2},  // soonest on the slow tier: moves up
      {4096, 4096, 0, 2},  // next: no room left above, stays
  };
  auto p = mlbs::engine::policies::place(ranked, 0, {0, 4096, 0});
  EXPECT_EQ(p.dir_tier[0], 1);
  EXPECT_EQ(p.dir_tier[1], 2);
}

// Moving up frees the room the record held, for the records after it.
TEST(Placement, MovingUpFreesTheRoomBelow) {
  std::vector<mlbs::engine::policies::PlacementItem> ranked = {
      {4096, 4096, 0, 2},  // on tier 2 (full): moves up to tier 1
      {4096, 4096, 0, 3},  // on tier 3: moves up into the room freed on tier 2
  };
  auto p = mlbs::engine::policies::place(ranked, 0, {0, 4096, 4096, 0});
  EXPECT_EQ(p.dir_tier[0], 1);
  EXPECT_EQ(p.dir_tier[1], 2);
}

// Free room goes to records without a place before residents move up: the newcomer is written there
// once, instead of a move up (a read on the slower tier) plus the newcomer's write to the slower tier.
TEST(Placement, NewcomersTakeFreeRoomBeforeResidentsMoveUp) {
  std::vector<mlbs::engine::policies::PlacementItem> ranked = {
      {4096, 4096, 0, 2},   // soonest, on tier 2: would move up
      {4096, 4096, 0, -1},  // newcomer
  };
  auto p = mlbs::engine::policies::place(ranked, 0, {0, 4096, 0});
  EXPECT_EQ(p.dir_tier[1], 1);
  EXPECT_EQ(p.dir_tier[0], 2);
}

// While writes come down residents stay where they are (prefetch_file waits for the reads): room is not
// promised to a move no policy would make.
TEST(Placement, NoMovesUpWhileWritesComeDown) {
  std::vector<mlbs::engine::policies::PlacementItem> ranked = {{4096, 4096, 0, 2}};
  EXPECT_EQ(mlbs::engine::policies::place(ranked, 0, {0, 4096, 0}, /*moves_up=*/false).dir_tier[0], 2);
  EXPECT_EQ(mlbs::engine::policies::place(ranked, 0, {0, 4096, 0}, /*moves_up=*/true).dir_tier[0], 1);
}

// A record with no next use (read already, FIFO/LIFO) stays on its tier however much room there is above.
TEST(Placement, SpentRecordsNeverMoveUp) {
  std::vector<PlacementItem> ranked = {{4096, 4096, 0, 2}};
  ranked[0].spent = true;
  EXPECT_EQ(place(ranked, 0, {0, 4096, 0}, /*moves_up=*/true).dir_tier[0], 2);
}

// A resident backed by a copy on a slower tier gives its room to a sooner newcomer and falls back to that
// copy (nothing moves); a later newcomer does not displace it.
TEST(Placement, BackedResidentGivesWayToASoonerNewcomer) {
  using mlbs::engine::policies::PlacementItem;
  PlacementItem backed{4096, 4096, 0, 1};
  backed.backing = 2;
  std::vector<PlacementItem> ranked = {{4096, 4096, 0, -1}, backed};  // the newcomer is sooner
  auto p = mlbs::engine::policies::place(ranked, 0, {0, 4096, 0});
  EXPECT_EQ(p.dir_tier[0], 1);
  EXPECT_EQ(p.dir_tier[1], 2) << "falls back to its slower copy";
  ranked = {backed, {4096, 4096, 0, -1}};  // the newcomer is later
  p = mlbs::engine::policies::place(ranked, 0, {0, 4096, 0});
  EXPECT_EQ(p.dir_tier[0], 1);
  EXPECT_EQ(p.dir_tier[1], 2);
}

// A backed resident at least twice the newcomer's size keeps its room: giving it up would cost the slower
// tier more (a read of the resident) than the newcomer there does (its write and read).
TEST(Placement, BackedResidentTwiceTheNewcomerKeepsItsRoom) {
  using mlbs::engine::policies::PlacementItem;
  PlacementItem backed{8192, 8192, 0, 1};
  backed.backing = 2;
  std::vector<PlacementItem> ranked = {{4096, 4096, 0, -1}, backed};
  auto p = mlbs::engine::policies::place(ranked, 0, {0, 8192, 0});
  EXPECT_EQ(p.dir_tier[1], 1);
  EXPECT_EQ(p.dir_tier[0], 2);
  ranked[0].bytes = 4097;  // more than half its size: the resident makes way
  p = mlbs::engine::policies::place(ranked, 0, {0, 8192, 0});
  EXPECT_EQ(p.dir_tier[0], 1);
  EXPECT_EQ(p.dir_tier[1], 2);
}

// Residents moving up do not take a backed resident's room: dropping its faster copy would cost a read
// on the slower tier later, and the move reads the slower tier too.
TEST(Placement, BackedResidentKeepsItsRoomFromMovesUp) {
  using mlbs::engine::policies::PlacementItem;
  PlacementItem backed{4096, 4096, 0, 1};
  backed.backing = 2;
  std::vector<PlacementItem> ranked = {{4096, 4096, 0, 2}, backed};  // a sooner resident on tier 2
  auto p = mlbs::engine::policies::place(ranked, 0, {0, 4096, 0});
  EXPECT_EQ(p.dir_tier[0], 2);
  EXPECT_EQ(p.dir_tier[1], 1);
}

// A newcomer that must take a backed resident's room takes it from a tier holding more backed residents
// than DRAM's budget holds records and than half that tier holds (a stale reserve of copies ahead), the
// furthest first, not from the fastest tier; with no more than that, from the fastest tier as before.
TEST(Placement, ANewcomerTakesTheRoomOfAStaleReserveOfBackedResidents) {
  using mlbs::engine::policies::PlacementItem;
  constexpr std::uint64_t kR = 4096;
  const std::vector<std::uint64_t> tiers = {0, 2 * kR, 6 * kR, 0};  // two bounded tiers over an unlimited one
  auto ranked_with = [&](std::size_t reserve) {
    std::vector<PlacementItem> ranked = {{kR, kR, 0, -1}};  // the newcomer, soonest (uncounted LIFO)
    ranked[0].held = true;
    for (int i = 0; i < 2; ++i) ranked.push_back({kR, kR, 0, 1});  // the fast tier, full
    ranked.back().backing = 3;                                      // one of them copied ahead
    for (std::size_t i = 0; i < 6; ++i) {                           // the middle tier, full: the oldest backed
      ranked.push_back({kR, kR, 0, 2});
      if (i >= 6 - reserve) ranked.back().backing = 3;
    }
    return ranked;
  };
  // DRAM's budget holds two records, half the middle tier three: four backed residents there are stale.
  auto p = mlbs::engine::policies::place(ranked_with(4), 0, tiers, false, {}, 0, false, std::nullopt, false, false,
                                         2 * kR);
  EXPECT_EQ(p.dir_tier[0], 2) << "the newcomer takes the stale reserve's room";
  EXPECT_EQ(p.dir_tier[8], 3) << "the furthest backed resident falls back to its copy";
  EXPECT_EQ(p.dir_tier[2], 1) << "the fast tier's backed resident keeps its room";
  // Three are no more than half the middle tier: the fast tier's backed resident gives way.
  p = mlbs::engine::policies::place(ranked_with(3), 0, tiers, false, {}, 0, false, std::nullopt, false, false,
                                    2 * kR);
  EXPECT_EQ(p.dir_tier[0], 1);
  EXPECT_EQ(p.dir_tier[2], 3);
  EXPECT_EQ(p.dir_tier[8], 2);
  // Four are no more than DRAM's budget of five records holds: the same.
  p = mlbs::engine::policies::place(ranked_with(4), 0, tiers, false, {}, 0, false, std::nullopt, false, false,
                                    5 * kR);
  EXPECT_EQ(p.dir_tier[0], 1);
  EXPECT_EQ(p.dir_tier[8], 2);
}

// Reader retention: unread records take the fast tier before residents keep theirs; the resident that loses its room moves down.
TEST(Placement, RecordsKeptForReadersClaimTheFastTierFirst) {
  std::vector<mlbs::engine::policies::PlacementItem> ranked = {
      {4096, 4096, 0, 1},                  // read already, on the fast tier (full without the others)
      {4096, 4096, 0, -1, /*retain=*/true},  // unread, later use: still takes the fast tier
  };
  auto p = mlbs::engine::policies::place(ranked, 0, {0, 4096, 0});
  EXPECT_EQ(p.dir_tier[1], 1) << "the unread record did not get the fast tier";
  EXPECT_EQ(p.dir_tier[0], 2) << "the read resident should make way";
  ranked[1].retain = false;  // once read, the resident keeps its room as before
  p = mlbs::engine::policies::place(ranked, 0, {0, 4096, 0});
  EXPECT_EQ(p.dir_tier, (std::vector<int>{1, 2}));
}

// An unread record keeps the copy it has (no move up for readers), and retention never exceeds a tier's room.
TEST(Placement, RecordsKeptForReadersKeepTheirCopyWithinRoom) {
  std::vector<mlbs::engine::policies::PlacementItem> ranked = {
      {4096, 4096, 0, 2, true},   // unread on the slow tier: stays there
      {4096, 4096, 0, -1, true},  // unread: the fast tier
      {4096, 4096, 0, -1, true},  // unread: the fast tier is full, the slow one
  };
  auto p = mlbs::engine::policies::place(ranked, 0, {0, 4096, 0});
  EXPECT_EQ(p.dir_tier, (std::vector<int>{2, 1, 2}));
}

/// `n` records of `bytes` that DRAM cannot hold (avoided), for file-tier placement alone.
std::vector<PlacementItem> spilled(std::size_t n, std::uint64_t bytes) {
  return std::vector<PlacementItem>(n, PlacementItem{bytes, bytes, /*avoid_mask=*/1});
}

// Two unlimited tiers of known rates, 2:1, and records drained one at a time, furthest first (each then
// a resident): each goes to the tier that finishes its work soonest, so the tiers end up sharing them
// about 2:1 and the slower tier never takes two neighbours; without rates all go to the fastest.
TEST(Placement, KnownRatesSpreadRecordsInProportionToBandwidth) {
  for (const bool rates : {true, false}) {
    std::vector<PlacementItem> ranked = spilled(21, 100);
    for (std::size_t k = ranked.size(); k-- > 0;) {
      const Placement p = place(ranked, 1000, {0, 0, 0}, false, rates ? std::vector<double>{0, 2000, 1000}
                                                                      : std::vector<double>{});
      ranked[k].file_copy = p.dir_tier[k];
    }
    std::vector<int> on;
    for (const PlacementItem& it : ranked) on.push_back(it.file_copy);
    const auto on_b = std::count(on.begin(), on.end(), 2);
    if (!rates) {
      EXPECT_EQ(on_b, 0);
      continue;
    }
    EXPECT_GE(on_b, 6);
    EXPECT_GE(std::count(on.begin(), on.end(), 1), 2 * on_b);
    for (std::size_t i = 1; i < on.size(); ++i) EXPECT_FALSE(on[i] == 2 && on[i - 1] == 2) << i;
  }
}

// Residents count as their tier's work (their reads), and so does a record on its way to a tier (a
// drain under way): a newcomer goes to the other tier. A tier without room is passed over whatever its rate.
TEST(Placement, SpreadingCountsResidentsAndArrivalsAndRespectsRoom) {
  std::vector<PlacementItem> ranked = spilled(4, 100);
  ranked[2].file_copy = ranked[3].file_copy = 1;
  Placement p = place(ranked, 1000, {0, 0, 0}, false, {0, 1000, 1000});
  EXPECT_EQ(p.dir_tier, (std::vector<int>{2, 2, 1, 1}));
  ranked = spilled(2, 100);
  ranked[1].arriving = 1;
  p = place(ranked, 1000, {0, 0, 0}, false, {0, 1000, 1000});
  EXPECT_EQ(p.dir_tier, (std::vector<int>{2, 1}));
  p = place(spilled(3, 100), 1000, {0, 0, 100}, false, {0, 1, 1000});  // tier 2, far faster, holds one
  EXPECT_EQ(p.dir_tier, (std::vector<int>{2, 1, 1}));
}

/// Records still to come, read before those ranked after them (a counted LIFO's newest).
std::vector<PlacementItem> to_come(std::size_t n, std::uint64_t bytes) {
  std::vector<PlacementItem> items = uniform(n, bytes);
  for (PlacementItem& it : items) it.coming = true;
  return items;
}

// While writes come down over unlimited tiers, a joining tier with no drain under way takes the next
// record to leave DRAM though the fastest, draining one already, would finish it sooner (first
// opportunity), when records still to come are read before it (LIFO's oldest). Not for a record read
// before any to come (FIFO's newest), once reads begin, or with a bounded tier: the soonest finished.
TEST(Placement, AnIdleTierTakesTheNextDrainWhileWritesComeDown) {
  const std::vector<double> rates = {0, 5000, 1000};  // tier 2 is 5x slower; both join beside DRAM for 10
  std::vector<PlacementItem> ranked = to_come(6, 100);  // enough calls before it (the next test)
  for (const PlacementItem& it : spilled(2, 100)) ranked.push_back(it);
  ranked.back().arriving = 1;
  auto next_drain = [&](const std::vector<PlacementItem>& items, const std::vector<std::uint64_t>& caps,
                        bool moves_up) { return place(items, 1000, caps, moves_up, rates).dir_tier[items.size() - 2]; };
  EXPECT_EQ(next_drain(ranked, {0, 0, 0}, false), 2);
  EXPECT_EQ(next_drain(ranked, {0, 0, 0}, true), 1);
  EXPECT_EQ(next_drain(ranked, {0, 0, 10000}, false), 1);
  for (PlacementItem& it : ranked) it.coming = false;  // read before any record to come
  EXPECT_EQ(next_drain(ranked, {0, 0, 0}, false), 1);
  // Both idle: the soonest finished, the fastest.
  for (std::size_t i = 0; i < 6; ++i) ranked[i].coming = true;
  ranked.back().arriving = -1;
  EXPECT_EQ(next_drain(ranked, {0, 0, 0}, false), 1);
}

// A record read after others still to come takes the idle slower tier only where the calls before its read
// (the writes to come and the reads ranked before it), at the pace of both tiers together (a record at
// 6000 B/s), hide that tier's write and fetch of it (200 B at 1000 B/s): twelve calls, six records to come.
// With five the fastest finishes it soonest. DRAM for fewer than four records: the idle tier takes it.
TEST(Placement, AnIdleTierTakesARecordReadAfterOthersToComeOnlyIfTheCallsBeforeItHideItsCopies) {
  const std::vector<double> rates = {0, 5000, 1000};
  auto next_drain = [&](std::size_t coming, std::uint64_t dram) {
    std::vector<PlacementItem> ranked = to_come(coming, 100);
    for (const PlacementItem& it : spilled(2, 100)) ranked.push_back(it);
    ranked.back().arriving = 1;  // the fast tier is busy
    return place(ranked, dram, {0, 0, 0}, false, rates, 1000).dir_tier[ranked.size() - 2];
  };
  EXPECT_EQ(next_drain(6, 1000), 2);
  EXPECT_EQ(next_drain(5, 1000), 1);
  EXPECT_EQ(next_drain(1, 1000), 1) << "the end of a counted LIFO's writes";
  EXPECT_EQ(next_drain(1, 300), 2) << "DRAM for three: the writer waits on drains, calls take longer";
}

// With idle_tiers_start, over unlimited tiers 5x apart while writes come down, a record no record to come
// is read before takes the idle slower tier once five records on the fast one come between it and that
// tier's last record: their fetches hide its own. With four between, or without the rule, soonest finished
// keeps it on the fast tier; so does a bounded tier, or reads under way.
TEST(Placement, AnIdleTierTakesARecordWhoseFetchTheReadsBeforeItHide) {
  const std::vector<double> rates = {0, 5000, 1000};
  auto next_drain = [&](std::size_t between, bool rule, const std::vector<std::uint64_t>& caps = {0, 0, 0},
                        bool moves_up = false) {
    std::vector<PlacementItem> ranked = spilled(between + 3, 100);
    ranked[0].file_copy = 2;  // the slower tier's last record
    for (std::size_t i = 1; i <= between; ++i) ranked[i].file_copy = 1;
    ranked.back().arriving = 1;  // the fast tier is busy
    return place(ranked, 1000, caps, moves_up, rates, 0, false, std::nullopt, rule).dir_tier[between + 1];
  };
  EXPECT_EQ(next_drain(5, true), 2);
  EXPECT_EQ(next_drain(4, true), 1);
  EXPECT_EQ(next_drain(5, false), 1);
  EXPECT_EQ(next_drain(5, true, {0, 0, 10000}), 1);
  EXPECT_EQ(next_drain(5, true, {0, 0, 0}, true), 1);
}

// With leads_first while writes come down, DRAM holds the first record of each step (`lead`), soonest
// first, and no other record, though it has room: the rest of every step leaves for the file tier at once.
// Once reads begin, or without the rule, DRAM holds the soonest records whatever their step.
TEST(Placement, LeadsFirstHoldsOnlyEachStepsFirstRecordWhileWritesCome) {
  std::vector<PlacementItem> ranked = uniform(12, 100);  // three steps of four records
  for (std::size_t i = 0; i < ranked.size(); i += 4) ranked[i].lead = true;
  auto in_dram = [&](std::uint64_t mem, bool moves_up, bool rule) {
    return place(ranked, mem, {0, 0}, moves_up, {}, 0, false, std::nullopt, false, rule).in_memory;
  };
  EXPECT_EQ(in_dram(600, false, true), bools({1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(in_dram(200, false, true), bools({1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0})) << "room for two";
  EXPECT_EQ(in_dram(600, true, true), bools({1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0})) << "reads began";
  EXPECT_EQ(in_dram(600, false, false), bools({1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0})) << "no rule";
  const Placement p = place(ranked, 600, {0, 0}, false, {}, 0, false, std::nullopt, false, true);
  EXPECT_EQ(p.dir_tier[1], 1) << "the rest still has its file tier";
}

// FIFO while writes come down over tiers of known rates, a bounded tier above an unlimited last one 10x
// slower (bottleneck first): the soonest record without a place takes the last tier when no drain is under
// way there and it holds less than the run forces through it (taken to go on as long again); the next
// takes the fastest with room. Not while a record is arriving there, not when it holds that much already,
// not for a run too short to outgrow DRAM and the tier above, not once reads begin, not without rates, and
// not without the rule.
TEST(Placement, FifoStartsTheLastTierBelowABoundedOne) {
  const std::vector<std::uint64_t> caps = {0, 300, 0};
  const std::vector<double> rates = {0, 1000, 100};  // tier 2 stays out of the spreading
  auto drains = [&](const std::vector<PlacementItem>& items, bool moves_up = false, bool rule = true,
                    bool known_rates = true) {
    const Placement p = place(items, 600, caps, moves_up, known_rates ? rates : std::vector<double>{}, 0, rule);
    return std::vector<int>(p.dir_tier.end() - 2, p.dir_tier.end());
  };
  const std::vector<PlacementItem> ranked = uniform(8, 100);  // DRAM holds 0-5; 6 and 7 leave
  EXPECT_EQ(drains(ranked), (std::vector<int>{2, 1})) << "forced 2 x 800 - 600 - 300 = 700 bytes";
  EXPECT_EQ(drains(ranked, false, false), (std::vector<int>{1, 1}));
  EXPECT_EQ(drains(ranked, true), (std::vector<int>{1, 1}));
  EXPECT_EQ(drains(ranked, false, true, false), (std::vector<int>{1, 1})) << "no rates";
  std::vector<PlacementItem> busy = ranked;
  busy[6].arriving = 2;
  EXPECT_EQ(drains(busy), (std::vector<int>{2, 1})) << "the record arriving keeps its tier";
  busy[6].arriving = -1;
  busy[7].arriving = 2;
  EXPECT_EQ(drains(busy), (std::vector<int>{1, 2})) << "one drain at a time into the last tier";
  std::vector<PlacementItem> owed = ranked;  // forced: 700 bytes
  for (std::size_t i = 0; i < 6; ++i) owed[i].file_copy = 2;  // DRAM's, with copies there too
  EXPECT_EQ(drains(owed).front(), 2) << "600 held, room for one more";
  owed[7].file_copy = 2;
  EXPECT_EQ(drains(owed).front(), 1) << "700 held: the rule stops";
  const std::vector<std::uint64_t> roomy = {0, 1000, 0};
  EXPECT_EQ(place(uniform(8, 100), 600, roomy, false, rates, 0, true).dir_tier[6], 1)
      << "forced 1600 - 600 - 1000 = 0: the run may fit";
}

// With the record count (fifo:N) bottleneck first weighs what is truly still to come, not the run taken
// to go on as long again: a run that will outgrow a roomy tier starts the last tier at once, one about to
// end does not. Its end is weighed against DRAM's whole budget, the writes' room then holding records.
TEST(Placement, FifoWithItsCountStartsTheLastTierByWhatIsToCome) {
  const std::vector<double> rates = {0, 1000, 100};
  auto first_drain = [&](const std::vector<std::uint64_t>& caps, std::optional<std::uint64_t> to_come,
                         std::uint64_t budget = 0) {
    return place(uniform(8, 100), 600, caps, false, rates, 0, true, to_come, false, false, budget).dir_tier[6];
  };
  const std::vector<std::uint64_t> roomy = {0, 1000, 0}, small = {0, 300, 0};
  EXPECT_EQ(first_drain(roomy, std::nullopt), 1) << "guessed: 1600 - 600 - 1000 = 0 forced";
  EXPECT_EQ(first_drain(roomy, 1000), 2) << "800 + 1000 - 600 - 1000 = 200 forced";
  EXPECT_EQ(first_drain(small, std::nullopt), 2) << "guessed: 700 forced";
  EXPECT_EQ(first_drain(small, 0), 1) << "the last write: 800 - 600 - 300 < 0";
  EXPECT_EQ(first_drain(small, 200), 2) << "800 + 200 - 600 - 300 = 100 forced";
  EXPECT_EQ(first_drain(small, 200, 800), 1) << "a budget of 800: 800 + 200 - 800 - 300 < 0";
  EXPECT_EQ(first_drain(small, std::nullopt, 800), 2) << "the guess keeps the writes' room: 700 forced";
  EXPECT_EQ(first_drain(roomy, kRunGoesOn), 2) << "an uncounted run taken to go on (outlasts_a_move())";
}

// Bottleneck first while the application computes: with no record leaving DRAM for its turn, the idle last
// tier takes the resident of the bounded tier above read latest that DRAM holds no copy of (it moves down).
// Not without the rule, not while a copy arrives at the last tier, not a resident DRAM holds too, not once
// the last tier holds what the run forces through it, not for a run that forces through it no more than
// half what the tier above holds, and not when a record leaving DRAM takes the turn.
TEST(Placement, TheIdleLastTierTakesAResidentFromAboveWhileTheApplicationComputes) {
  const std::vector<std::uint64_t> caps = {0, 300, 0};
  const std::vector<double> rates = {0, 1000, 100};
  // DRAM holds 0-3 (400 bytes); 4 and 5 live on the bounded tier. Guessed forced: 2 x 600 - 400 - 300 = 500.
  std::vector<PlacementItem> ranked = uniform(6, 100);
  for (std::size_t i = 0; i < 4; ++i) ranked[i].held = true;
  ranked[4].file_copy = ranked[5].file_copy = 1;
  auto tiers = [&](const std::vector<PlacementItem>& items, bool rule = true,
                   std::optional<std::uint64_t> to_come = std::nullopt) {
    const Placement p = place(items, 400, caps, false, rates, 0, true, to_come, false, false, 0, 0, rule);
    return std::vector<int>(p.dir_tier.end() - 2, p.dir_tier.end());
  };
  EXPECT_EQ(tiers(ranked), (std::vector<int>{1, 2})) << "the latest resident moves down";
  EXPECT_EQ(tiers(ranked, false), (std::vector<int>{1, 1})) << "without the rule";
  std::vector<PlacementItem> held = ranked;
  held[5].held = true;
  EXPECT_EQ(tiers(held), (std::vector<int>{2, 1})) << "5 in DRAM too: a move would hold its slot; 4 goes";
  std::vector<PlacementItem> busy = ranked;
  busy[0].file_copy = 1;  // 0 moving down now
  busy[0].arriving = 2;
  EXPECT_EQ(tiers(busy), (std::vector<int>{1, 1})) << "one copy at a time into the last tier";
  std::vector<PlacementItem> owed = ranked;
  for (std::size_t i = 0; i < 4; ++i) owed[i].file_copy = 2;  // DRAM's, with copies there: 400 held
  EXPECT_EQ(tiers(owed, true, 600), (std::vector<int>{1, 2})) << "600 + 600 - 400 - 300 = 500 forced";
  EXPECT_EQ(tiers(owed, true, 500), (std::vector<int>{1, 1})) << "400 forced: the last tier holds enough";
  EXPECT_EQ(tiers(ranked, true, 300), (std::vector<int>{1, 2})) << "200 forced: over half what the tier above holds";
  EXPECT_EQ(tiers(ranked, true, 250), (std::vector<int>{1, 1})) << "150 forced: half what the tier above holds";
  std::vector<PlacementItem> leaving = ranked;
  leaving.push_back(PlacementItem{100, 100, 0});  // a newcomer DRAM has no room for
  leaving.back().held = true;
  const Placement p = place(leaving, 400, caps, false, rates, 0, true, std::nullopt, false, false, 0, 0, true);
  EXPECT_EQ(p.dir_tier[6], 2) << "the record leaving DRAM takes the turn";
  EXPECT_EQ(p.dir_tier[5], 1) << "and the residents stay";
}

// Reads under way over unlimited tiers 5:1 apart, DRAM for two: the slower tier's soonest record takes a
// slot beside the next record when fewer than five come before it (its fetch must start that far ahead);
// not once five come before it, nor with a bounded tier (the two next records then).
TEST(Placement, ASlowerTiersNextRecordTakesASlotInTime) {
  const std::vector<double> rates = {0, 5000, 1000};
  auto ranked_with_slow_at = [](std::size_t k) {
    std::vector<PlacementItem> r(8, PlacementItem{100, 100, 0, 1});
    r[k].file_copy = 2;
    return r;
  };
  auto in_dram = [](const Placement& p) {
    std::vector<std::size_t> in;
    for (std::size_t i = 0; i < p.in_memory.size(); ++i)
      if (p.in_memory[i]) in.push_back(i);
    return in;
  };
  EXPECT_EQ(in_dram(place(ranked_with_slow_at(3), 200, {0, 0, 0}, true, rates)), (std::vector<std::size_t>{0, 3}));
  EXPECT_EQ(in_dram(place(ranked_with_slow_at(4), 200, {0, 0, 0}, true, rates)), (std::vector<std::size_t>{0, 4}));
  EXPECT_EQ(in_dram(place(ranked_with_slow_at(5), 200, {0, 0, 0}, true, rates)), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(in_dram(place(ranked_with_slow_at(3), 200, {0, 0, 10000}, true, rates)), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(in_dram(place(ranked_with_slow_at(3), 200, {0, 0, 0}, true)), (std::vector<std::size_t>{0, 1}));
}

// Reads under way over unlimited tiers 5:1 apart, DRAM for 8 and full of records only it holds, read late
// (FIFO's last writes): the slot reserved for the next reads covers the slower tier's record within five
// too, so the fast tier's next record keeps its slot and the last of those records leaves DRAM; reserved
// for the next two records only, the slower tier's fetch took that one slot. Not with a bounded tier.
TEST(Placement, TheSlotsForTheNextReadsCoverASlowerTiersRecordInTime) {
  const std::vector<double> rates = {0, 5000, 1000};
  std::vector<PlacementItem> ranked(8, PlacementItem{100, 100, 0, 1});
  ranked[2].file_copy = 2;
  for (int k = 0; k < 7; ++k) {
    ranked.push_back(PlacementItem{100, 100, 0, -1});
    ranked.back().held = true;
  }
  const Placement p = place(ranked, 800, {0, 0, 0}, true, rates);
  EXPECT_TRUE(p.in_memory[0]) << "the fast tier's next record";
  EXPECT_TRUE(p.in_memory[2]) << "the slower tier's, three ahead";
  EXPECT_FALSE(p.in_memory[14]) << "the last record DRAM holds alone leaves";
  for (std::size_t i = 8; i < 14; ++i) EXPECT_TRUE(p.in_memory[i]) << i;
  const Placement bounded = place(ranked, 800, {0, 0, 10000}, true, rates);
  EXPECT_TRUE(bounded.in_memory[14]) << "a bounded tier: one slot, for the next two records";
}

// A tier that moves a record slower than the time the fastest takes to fill DRAM's room stays out of the
// spreading (reads would wait on it); with more DRAM to look ahead it joins.
TEST(Placement, ASlowTierJoinsOnlyWithinDramsLookahead) {
  const std::vector<double> rates = {0, 4000, 1000};  // a record: 0.025 s on tier 1, 0.1 s on tier 2
  std::vector<PlacementItem> ranked(8, PlacementItem{100, 100, 1, 1});  // tier 1 has 0.2 s of reads to do
  ranked.push_back(spilled(1, 100)[0]);
  EXPECT_EQ(place(ranked, 300, {0, 0, 0}, false, rates).dir_tier[8], 1) << "window 300 / 4000 = 0.075 s";
  EXPECT_EQ(place(ranked, 500, {0, 0, 0}, false, rates).dir_tier[8], 2) << "window 0.125 s: tier 2 joins";
  EXPECT_EQ(place(ranked, 300, {0, 0, 0}, false, rates, 400).dir_tier[8], 2) << "a lookahead of 400: 0.1 s";
  EXPECT_TRUE(joins_spread(rates, 2, 100, 400)) << "at exactly the window";
  EXPECT_FALSE(joins_spread(rates, 2, 100, 399));
  EXPECT_TRUE(joins_spread(rates, 1, 100, 0)) << "the fastest always";
}

// The room ahead of the reads includes the bounded tiers above a slow tier (prefetching between file
// tiers fills them too); an unlimited one adds none.
TEST(Placement, BoundedTiersAboveExtendASlowTiersLookahead) {
  const std::vector<double> rates = {0, 4000, 1000};
  std::vector<PlacementItem> ranked(8, PlacementItem{100, 100, 1, 1});
  ranked.push_back(spilled(1, 100)[0]);
  EXPECT_EQ(place(ranked, 300, {0, 1000, 0}, false, rates).dir_tier[8], 2)
      << "window (300 + 1000) / 4000 = 0.325 s: tier 2 finishes first (0.2 s against 0.25 s)";
  EXPECT_EQ(place(ranked, 300, {0, 0, 0}, false, rates).dir_tier[8], 1) << "tier 1 unlimited: DRAM's window only";
  const std::vector<double> three = {0, 4000, 4000, 1000};  // tiers 1 and 2 each with 0.2 s of reads to do
  std::vector<PlacementItem> both(8, PlacementItem{100, 100, 1, 1});
  both.insert(both.end(), 8, PlacementItem{100, 100, 1, 2});
  both.push_back(spilled(1, 100)[0]);
  EXPECT_EQ(place(both, 300, {0, 1000, 0, 0}, false, three).dir_tier[16], 3) << "tier 1's room counts for tier 3";
  EXPECT_EQ(place(both, 300, {0, 0, 1000, 0}, false, three).dir_tier[16], 3) << "so does tier 2's";
  EXPECT_EQ(place(both, 300, {0, 0, 0, 0}, false, three).dir_tier[16], 1) << "none bounded: DRAM's window only";
}

// With rates, a resident on a slower tier does not move up into an unlimited faster one (the move
// adds work there and takes none away); a bounded tier's free room still draws it.
TEST(Placement, SpreadingMovesResidentsUpOnlyIntoBoundedTiers) {
  const std::vector<PlacementItem> ranked = {{100, 100, 0, 2}};
  EXPECT_EQ(place(ranked, 0, {0, 0, 0}, true, {0, 2000, 1000}).dir_tier[0], 2);
  EXPECT_EQ(place(ranked, 0, {0, 0, 0}, true).dir_tier[0], 1);
  EXPECT_EQ(place(ranked, 0, {0, 1000, 0}, true, {0, 2000, 1000}).dir_tier[0], 1);
}
}  // namespace

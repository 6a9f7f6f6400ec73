// Tests of the salvage planner (src/catalog/salvage.*): which stored record
// copies a rebuilt journal keeps, one rule per test.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "catalog/salvage.hpp"

namespace {

using mlbs::catalog::JournalEntry;
using mlbs::catalog::live_records;
using mlbs::catalog::plan_salvage;
using mlbs::catalog::StoredCopy;
using V = mlbs::catalog::SalvagePlan::Verdict;
using Op = JournalEntry::Op;

JournalEntry put(std::uint64_t id, std::uint64_t gen, std::uint64_t size, std::uint64_t sum) {
  return {Op::put, id, gen, size, sum};
}
JournalEntry erase(std::uint64_t id, std::uint64_t gen) { return {Op::erase, id, gen, 0, 0}; }
StoredCopy copy(std::uint64_t id, std::uint64_t gen, std::uint64_t bytes, std::uint64_t sum, bool readable = true) {
  return {id, gen, bytes, sum, readable};
}

V verdict_of(const mlbs::catalog::SalvagePlan& p, std::uint64_t id, std::uint64_t gen) {
  for (const auto& item : p.items)
    if (item.copy.id == id && item.copy.generation == gen) return item.verdict;
  ADD_FAILURE() << "no item for id " << id << " generation " << gen;
  return V::damaged;
}

// A copy whose surviving put entry matches its size and checksum is kept as verified, with that entry's checksum.
TEST(Salvage, CopyMatchingItsEntryIsVerified) {
  const auto p = plan_salvage({put(1, 5, 100, 0xabc)}, {copy(1, 5, 100, 0xabc)}, true);
  EXPECT_EQ(verdict_of(p, 1, 5), V::verified);
  const auto live = live_records(p.journal);
  ASSERT_EQ(live.count(1), 1u);
  EXPECT_EQ(live.at(1).checksum, 0xabcu);
}

// A codec's frame is checked against its entry's frame size and checksum and keeps that entry; a frame
// no entry names is not adopted (its record's size and checksum are unknown), even when unverified copies are.
TEST(Salvage, FramesNeedTheirEntry) {
  JournalEntry framed = put(1, 5, 4096, 0xabc);
  framed.stored = 300;
  framed.frame_checksum = 0xf00;
  auto p = plan_salvage({framed}, {copy(1, 5, 300, 0xf00)}, true);
  EXPECT_EQ(verdict_of(p, 1, 5), V::verified);
  const auto live = live_records(p.journal);
  ASSERT_EQ(live.count(1), 1u);
  EXPECT_EQ(live.at(1).size, 4096u);
  EXPECT_EQ(live.at(1).stored, 300u);
  EXPECT_EQ(live.at(1).frame_checksum, 0xf00u);
  EXPECT_EQ(verdict_of(plan_salvage({framed}, {copy(1, 5, 300, 0xbad)}, true), 1, 5), V::damaged);
  StoredCopy orphan = copy(2, 7, 300, 0x77);
  orphan.framed = true;
  p = plan_salvage({}, {orphan}, true);
  EXPECT_EQ(verdict_of(p, 2, 7), V::not_adopted);
  EXPECT_TRUE(live_records(p.journal).empty());
}

// A copy no entry names is kept as unverified (checksum of its bytes), or not adopted when only verified ones are kept.
TEST(Salvage, CopyWithoutEntryIsUnverifiedOrNotAdopted) {
  auto p = plan_salvage({}, {copy(2, 7, 10, 0x77)}, true);
  EXPECT_EQ(verdict_of(p, 2, 7), V::unverified);
  EXPECT_EQ(live_records(p.journal).at(2).checksum, 0x77u);
  p = plan_salvage({}, {copy(2, 7, 10, 0x77)}, false);
  EXPECT_EQ(verdict_of(p, 2, 7), V::not_adopted);
  EXPECT_TRUE(live_records(p.journal).empty());
}

// A copy whose size or checksum contradicts its entry, or that cannot be read, is damaged and dropped.
TEST(Salvage, CopyContradictingItsEntryIsDamaged) {
  const auto p = plan_salvage({put(1, 1, 100, 0x1), put(2, 2, 100, 0x2)},
                              {copy(1, 1, 99, 0x1), copy(2, 2, 100, 0x3), copy(3, 3, 0, 0, false)}, true);
  EXPECT_EQ(verdict_of(p, 1, 1), V::damaged);
  EXPECT_EQ(verdict_of(p, 2, 2), V::damaged);
  EXPECT_EQ(verdict_of(p, 3, 3), V::damaged);
  EXPECT_TRUE(live_records(p.journal).empty());
}

// An entry of a v1 or v2 journal is checked against the copy's plain xxHash3, and kept with that kind.
TEST(Salvage, OldEntryIsCheckedAgainstThePlainChecksum) {
  JournalEntry old = put(1, 5, 100, 0x5);
  old.checksum_kind = mlbs::catalog::ChecksumKind::xxh3;
  StoredCopy c = copy(1, 5, 100, 0x6);
  c.plain_checksum = 0x5;
  auto p = plan_salvage({old}, {c}, true);
  EXPECT_EQ(verdict_of(p, 1, 5), V::verified);
  EXPECT_EQ(live_records(p.journal).at(1).checksum_kind, mlbs::catalog::ChecksumKind::xxh3);
  EXPECT_EQ(live_records(p.journal).at(1).checksum, 0x5u);
  c.plain_checksum = 0x6;  // matches only the other kind
  EXPECT_EQ(verdict_of(plan_salvage({old}, {c}, true), 1, 5), V::damaged);
}

// A copy a surviving erase entry names stays erased, even with its put entry intact.
TEST(Salvage, ErasedCopyStaysErased) {
  const auto p = plan_salvage({put(1, 1, 8, 0x1), erase(1, 1)}, {copy(1, 1, 8, 0x1)}, true);
  EXPECT_EQ(verdict_of(p, 1, 1), V::erased);
  EXPECT_TRUE(live_records(p.journal).empty());
}

// Of two kept generations of one id the newer is the record; the older is superseded.
TEST(Salvage, NewestKeptGenerationWins) {
  const auto p = plan_salvage({put(1, 3, 8, 0x3)}, {copy(1, 3, 8, 0x3), copy(1, 9, 8, 0x9), copy(1, 12, 8, 0, false)},
                              true);
  EXPECT_EQ(verdict_of(p, 1, 3), V::superseded);
  EXPECT_EQ(verdict_of(p, 1, 9), V::unverified);
  EXPECT_EQ(verdict_of(p, 1, 12), V::damaged);
  EXPECT_EQ(live_records(p.journal).at(1).generation, 9u);
}

// Every dropped copy is named by a put and an erase, so the next runtime removes it as provably erased.
TEST(Salvage, DroppedCopiesAreJournaledAsErased) {
  const auto p = plan_salvage({put(1, 1, 8, 0x1), erase(1, 1)}, {copy(1, 1, 8, 0x1), copy(2, 2, 8, 0x2)}, false);
  for (const auto& item : p.items) {
    const auto named = [&](Op op) {
      return std::any_of(p.journal.begin(), p.journal.end(), [&](const JournalEntry& e) {
        return e.op == op && e.id == item.copy.id && e.generation == item.copy.generation;
      });
    };
    EXPECT_TRUE(named(Op::put)) << item.copy.id;
    EXPECT_TRUE(named(Op::erase)) << item.copy.id;
  }
}

}  // namespace

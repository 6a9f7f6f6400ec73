// Tests of the catalog journal of persistent stores: append, replay, torn
// tails and generations (src/catalog/journal.*).
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "catalog/journal.hpp"
#include "mlbs/errors.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using mlbs::catalog::Journal;
using mlbs::catalog::JournalEntry;
using mlbs::catalog::replay_journal;
using Op = JournalEntry::Op;

constexpr std::uint64_t kHeader = Journal::kHeaderBytes;
constexpr std::uint64_t kEntry = Journal::kEntryBytes;

JournalEntry put(std::uint64_t id, std::uint64_t gen, std::uint64_t size = 64) {
  return {Op::put, id, gen, size, 0x1000 + id * 31 + gen};
}
JournalEntry erase(std::uint64_t id, std::uint64_t gen) { return {Op::erase, id, gen, 0, 0}; }

void write_all(const std::string& path, std::initializer_list<JournalEntry> entries) {
  Journal j(path, 0);
  for (const auto& e : entries) j.append(e);
  j.sync();
}

/// Puts an older version's header on a journal (the slots of v1 and v2 are v3's with byte 5 zero).
void write_header(const std::string& path, const char (&header)[17]) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.write(header, 16);
}

std::string header_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string header(16, '\0');
  in.read(header.data(), 16);
  return header;
}

/// What a runtime does to a journal it opens: appends after its valid prefix.
void append_one(const std::string& path, std::uint64_t valid_bytes, const JournalEntry& e) {
  Journal j(path, valid_bytes);
  j.append(e);
  j.sync();
}

void flip_byte(const std::string& path, std::uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 0x40));
}

bool same(const JournalEntry& a, const JournalEntry& b) {
  return a.op == b.op && a.id == b.id && a.generation == b.generation && a.size == b.size &&
         a.checksum == b.checksum && a.stored == b.stored && a.frame_checksum == b.frame_checksum &&
         a.checksum_kind == b.checksum_kind;
}

/// A put of a record stored as a codec frame of `stored` bytes.
JournalEntry framed(std::uint64_t id, std::uint64_t gen, std::uint64_t stored) {
  JournalEntry e = put(id, gen, 4096);
  e.stored = stored;
  e.frame_checksum = 0x2000 + id;
  return e;
}

// Appended put/erase entries replay in order with all their fields, and the live set follows them.
TEST(Journal, RoundTrip) {
  mlbs::test::TempDir dir;
  const std::string path = dir / "journal.mlbs";
  const JournalEntry in[] = {put(1, 10, 111), put(2, 11, 222), erase(1, 10), put(3, 12, 333)};
  write_all(path, {in[0], in[1], in[2], in[3]});

  auto r = replay_journal(path);
  ASSERT_EQ(r.entries.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_TRUE(same(r.entries[i], in[i])) << i;
  ASSERT_EQ(r.live.size(), 2u);
  EXPECT_TRUE(same(r.live.at(2), in[1]));
  EXPECT_TRUE(same(r.live.at(3), in[3]));
  EXPECT_EQ(r.valid_bytes, kHeader + 4 * kEntry);
  EXPECT_EQ(r.torn_bytes, 0u);
  EXPECT_EQ(fs::file_size(path), kHeader + 4 * kEntry);
}

// A later put of the same id replaces the earlier one in the live set.
TEST(Journal, LaterPutWins) {
  mlbs::test::TempDir dir;
  const std::string path = dir / "journal.mlbs";
  write_all(path, {put(5, 1, 10), erase(5, 1), put(5, 2, 20)});
  auto r = replay_journal(path);
  ASSERT_EQ(r.live.count(5), 1u);
  EXPECT_EQ(r.live.at(5).generation, 2u);
  EXPECT_EQ(r.live.at(5).size, 20u);
}

// An erase removes the live entry only when its generation matches (a newer put may precede an old erase).
TEST(Journal, EraseOfOlderGenerationKeepsNewerPut) {
  mlbs::test::TempDir dir;
  const std::string path = dir / "journal.mlbs";
  write_all(path, {put(7, 1), put(7, 2), erase(7, 1)});
  auto r = replay_journal(path);
  ASSERT_EQ(r.live.count(7), 1u);
  EXPECT_EQ(r.live.at(7).generation, 2u);

  write_all(path, {put(7, 1), put(7, 2), erase(7, 2)});
  EXPECT_EQ(replay_journal(path).live.count(7), 0u);
}

// A missing journal file replays as an empty journal.
TEST(Journal, MissingFileIsEmpty) {
  mlbs::test::TempDir dir;
  auto r = replay_journal(dir / "absent.mlbs");
  EXPECT_TRUE(r.entries.empty());
  EXPECT_TRUE(r.live.empty());
  EXPECT_EQ(r.valid_bytes, 0u);
  EXPECT_EQ(r.torn_bytes, 0u);
}

// A freshly created journal holds only its header and replays empty.
TEST(Journal, NewJournalHasOnlyHeader) {
  mlbs::test::TempDir dir;
  const std::string path = dir / "journal.mlbs";
  { Journal j(path, 0); }
  EXPECT_EQ(fs::file_size(path), kHeader);
  auto r = replay_journal(path);
  EXPECT_TRUE(r.entries.empty());
  EXPECT_EQ(r.valid_bytes, kHeader);
}

// A file that does not start with the journal header is a CorruptionError.
TEST(Journal, ForeignHeaderIsCorruption) {
  mlbs::test::TempDir dir;
  const std::string path = dir / "journal.mlbs";
  std::ofstream(path) << "this is not an mlbs journal at all\n";
  EXPECT_THROW(replay_journal(path), mlbs::CorruptionError);
}

// A truncated last entry is ignored and its bytes reported in torn_bytes.
TEST(Journal, TruncatedTailIsTorn) {
  mlbs::test::TempDir dir;
  const std::string path = dir / "journal.mlbs";
  write_all(path, {put(1, 1), put(2, 2), put(3, 3)});
  fs::resize_file(path, kHeader + 2 * kEntry + 20);
  auto r = replay_journal(path);
  ASSERT_EQ(r.entries.size(), 2u);
  EXPECT_EQ(r.live.count(3), 0u);
  EXPECT_EQ(r.valid_bytes, kHeader + 2 * kEntry);
  EXPECT_EQ(r.torn_bytes, 20u);
}

// A flipped byte in the last entry fails its checksum: the entry is dropped and counted as torn.
TEST(Journal, CorruptLastEntryIsTorn) {
  mlbs::test::TempDir dir;
  const std::string path = dir / "journal.mlbs";
  write_all(path, {put(1, 1), put(2, 2), put(3, 3)});
  flip_byte(path, kHeader + 2 * kEntry + 9);  // inside the id of entry 3
  auto r = replay_journal(path);
  ASSERT_EQ(r.entries.size(), 2u);
  EXPECT_EQ(r.live.size(), 2u);
  EXPECT_EQ(r.valid_bytes, kHeader + 2 * kEntry);
  EXPECT_EQ(r.torn_bytes, kEntry);
}

// A bad entry with valid entries after it is damage, not a torn tail: the prefix ends there, and what follows is kept for salvage.
TEST(Journal, BadEntryFollowedByValidOnesIsDamage) {
  mlbs::test::TempDir dir;
  const std::string path = dir / "journal.mlbs";
  write_all(path, {put(1, 1), put(2, 2), put(3, 3), erase(1, 1)});
  flip_byte(path, kHeader + kEntry + 45);  // inside the checksum of entry 2
  auto r = replay_journal(path);
  ASSERT_EQ(r.entries.size(), 1u);
  EXPECT_EQ(r.torn_bytes, 3 * kEntry);
  EXPECT_TRUE(r.damaged());
  EXPECT_EQ(r.damaged_at, kHeader + kEntry);
  EXPECT_EQ(r.damaged_entries, 1u);
  ASSERT_EQ(r.after_damage.size(), 2u);
  EXPECT_TRUE(same(r.after_damage[0], put(3, 3)));
  EXPECT_TRUE(same(r.after_damage[1], erase(1, 1)));
  EXPECT_EQ(r.all_entries().size(), 3u);
}

// Bad entries at the end only, however many, are a torn tail, not damage.
TEST(Journal, BadEntriesAtTheEndAreNotDamage) {
  mlbs::test::TempDir dir;
  const std::string path = dir / "journal.mlbs";
  write_all(path, {put(1, 1), put(2, 2), put(3, 3)});
  flip_byte(path, kHeader + kEntry + 9);
  flip_byte(path, kHeader + 2 * kEntry + 9);
  auto r = replay_journal(path);
  EXPECT_EQ(r.entries.size(), 1u);
  EXPECT_FALSE(r.damaged());
  EXPECT_TRUE(r.after_damage.empty());
}

// A missing journal says so (exists = false); an existing one, even empty, says it exists.
TEST(Journal, ReplayTellsAMissingFileFromAnEmptyOne) {
  mlbs::test::TempDir dir;
  EXPECT_FALSE(replay_journal(dir / "absent.mlbs").exists);
  const std::string path = dir / "empty.mlbs";
  std::ofstream(path).close();
  const auto r = replay_journal(path);
  EXPECT_TRUE(r.exists);
  EXPECT_EQ(r.valid_bytes, 0u);
}

// write_journal replaces a journal atomically with exactly the entries given; replay reads them back.
TEST(Journal, WriteJournalRoundTrips) {
  mlbs::test::TempDir dir;
  const std::string path = dir / "journal.mlbs";
  write_all(path, {put(9, 9)});
  mlbs::catalog::write_journal(path, {put(1, 1), put(2, 2), erase(2, 2)});
  const auto r = replay_journal(path);
  ASSERT_EQ(r.entries.size(), 3u);
  EXPECT_EQ(r.torn_bytes, 0u);
  EXPECT_EQ(r.live.size(), 1u);
  EXPECT_EQ(r.live.count(1), 1u);
  EXPECT_FALSE(fs::exists(path + ".new"));
}

// A file shorter than the header (torn while being created) is empty, all torn.
TEST(Journal, TornHeaderIsEmpty) {
  mlbs::test::TempDir dir;
  const std::string path = dir / "journal.mlbs";
  { Journal j(path, 0); }
  fs::resize_file(path, 7);
  auto r = replay_journal(path);
  EXPECT_TRUE(r.entries.empty());
  EXPECT_EQ(r.valid_bytes, 0u);
  EXPECT_EQ(r.torn_bytes, 7u);
}

// Reopening at valid_bytes cuts the torn tail; entries appended afterwards replay after the valid ones.
TEST(Journal, ReopenCutsTornTailAndAppends) {
  mlbs::test::TempDir dir;
  const std::string path = dir / "journal.mlbs";
  write_all(path, {put(1, 1), put(2, 2)});
  fs::resize_file(path, kHeader + kEntry + 30);  // entry 2 torn

  auto torn = replay_journal(path);
  ASSERT_EQ(torn.valid_bytes, kHeader + kEntry);
  {
    Journal j(path, torn.valid_bytes);
    j.append(put(4, 4));
    j.append(erase(1, 1));
    j.sync();
  }
  EXPECT_EQ(fs::file_size(path), kHeader + 3 * kEntry);
  auto r = replay_journal(path);
  ASSERT_EQ(r.entries.size(), 3u);
  EXPECT_EQ(r.torn_bytes, 0u);
  EXPECT_TRUE(same(r.entries[1], put(4, 4)));
  ASSERT_EQ(r.live.size(), 1u);
  EXPECT_EQ(r.live.count(4), 1u);
}

// A framed put (two slots) replays with its frame's size and checksum, among raw puts and erases.
TEST(Journal, FramedPutsRoundTrip) {
  mlbs::test::TempDir dir;
  const std::string path = dir / "journal.mlbs";
  const JournalEntry in[] = {framed(1, 1, 300), put(2, 2), erase(1, 1), framed(3, 3, 500)};
  write_all(path, {in[0], in[1], in[2], in[3]});
  auto r = replay_journal(path);
  ASSERT_EQ(r.entries.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_TRUE(same(r.entries[i], in[i])) << i;
  EXPECT_EQ(r.valid_bytes, kHeader + 6 * kEntry);
  EXPECT_EQ(r.live.at(3).file_bytes(), 500u);
  EXPECT_EQ(r.live.at(3).file_checksum(), in[3].frame_checksum);
  EXPECT_EQ(r.live.at(2).file_bytes(), 64u);
  const std::string copy = dir / "compacted.mlbs";
  EXPECT_EQ(mlbs::catalog::write_journal(copy, {in[3], in[1]}), kHeader + 3 * kEntry);
  auto c = replay_journal(copy);
  ASSERT_EQ(c.entries.size(), 2u);
  EXPECT_TRUE(same(c.entries[0], in[3]));
}

// An append torn between a frame slot and its put names nothing; appends after it replay as usual.
TEST(Journal, FrameSlotWithoutItsPutNamesNothing) {
  mlbs::test::TempDir dir;
  const std::string path = dir / "journal.mlbs";
  write_all(path, {put(1, 1), framed(2, 2, 100)});
  fs::resize_file(path, kHeader + 2 * kEntry + 10);  // the frame slot whole, its put torn
  auto torn = replay_journal(path);
  ASSERT_EQ(torn.entries.size(), 1u);
  EXPECT_EQ(torn.live.count(2), 0u);
  {
    Journal j(path, torn.valid_bytes);
    j.append(put(3, 3));
    j.sync();
  }
  auto r = replay_journal(path);
  ASSERT_EQ(r.entries.size(), 2u);
  EXPECT_TRUE(same(r.entries[1], put(3, 3))) << "the orphan frame slot must not join another record's put";
  EXPECT_FALSE(r.damaged());
}

// A v2 journal's entries (plain xxHash3 checksums, framed or not) replay as that kind, and keep it after
// the upgrade to v3 that the first append of pieces checksums makes.
TEST(Journal, VersionTwoChecksumsArePlainXxh3AndKeepTheirKind) {
  using mlbs::catalog::ChecksumKind;
  mlbs::test::TempDir dir;
  const std::string path = dir / "journal.mlbs";
  JournalEntry old_put = put(1, 1), old_framed = framed(2, 2, 10);
  old_put.checksum_kind = old_framed.checksum_kind = ChecksumKind::xxh3;  // byte 5 zero: what v2 wrote
  write_all(path, {old_put, old_framed});
  write_header(path, "MLBS-JOURNAL-v2\n");
  auto old = replay_journal(path);
  ASSERT_EQ(old.entries.size(), 2u);
  EXPECT_EQ(old.entries[0].checksum_kind, ChecksumKind::xxh3);
  EXPECT_EQ(old.entries[1].checksum_kind, ChecksumKind::xxh3);
  append_one(path, old.valid_bytes, put(3, 3));
  EXPECT_EQ(header_of(path), "MLBS-JOURNAL-v3\n");
  auto r = replay_journal(path);
  ASSERT_EQ(r.entries.size(), 3u);
  EXPECT_TRUE(same(r.entries[0], old_put));
  EXPECT_TRUE(same(r.entries[1], old_framed));
  EXPECT_TRUE(same(r.entries[2], put(3, 3)));
  EXPECT_EQ(r.entries[2].checksum_kind, ChecksumKind::pieces);
}

// A slot naming a checksum kind this mlbs does not know is not a valid entry (a newer mlbs's, or damage).
TEST(Journal, UnknownChecksumKindIsNotAValidEntry) {
  mlbs::test::TempDir dir;
  const std::string path = dir / "journal.mlbs";
  JournalEntry odd = put(2, 2);
  odd.checksum_kind = static_cast<mlbs::catalog::ChecksumKind>(7);
  write_all(path, {put(1, 1), odd});
  auto r = replay_journal(path);
  ASSERT_EQ(r.entries.size(), 1u);
  EXPECT_EQ(r.torn_bytes, kEntry);
}

// A v1 journal (no frame slots) replays, and is upgraded to v3 when a runtime appends to it.
TEST(Journal, VersionOneIsReadAndUpgradedOnAppend) {
  mlbs::test::TempDir dir;
  const std::string path = dir / "journal.mlbs";
  write_all(path, {put(1, 1)});
  write_header(path, "MLBS-JOURNAL-v1\n");
  auto old = replay_journal(path);
  ASSERT_EQ(old.entries.size(), 1u);
  append_one(path, old.valid_bytes, framed(2, 2, 10));
  EXPECT_EQ(header_of(path), "MLBS-JOURNAL-v3\n");
  auto r = replay_journal(path);
  ASSERT_EQ(r.entries.size(), 2u);
  EXPECT_TRUE(same(r.entries[1], framed(2, 2, 10)));
}

// Reopening a torn-header journal (valid_bytes 0) rewrites a fresh header.
TEST(Journal, ReopenAfterTornHeaderStartsFresh) {
  mlbs::test::TempDir dir;
  const std::string path = dir / "journal.mlbs";
  { std::ofstream(path) << "MLBS-JO"; }
  auto torn = replay_journal(path);
  ASSERT_EQ(torn.valid_bytes, 0u);
  {
    Journal j(path, torn.valid_bytes);
    j.append(put(9, 9));
  }
  auto r = replay_journal(path);
  ASSERT_EQ(r.entries.size(), 1u);
  EXPECT_EQ(r.live.count(9), 1u);
}

// Opening a journal in a folder that does not exist raises IoError.
TEST(Journal, UnopenablePathThrows) {
  mlbs::test::TempDir dir;
  EXPECT_THROW(Journal(dir / "missing/journal.mlbs", 0), mlbs::IoError);
}

}  // namespace

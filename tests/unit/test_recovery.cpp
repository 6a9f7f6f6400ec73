// Tests of opening a persistent store (src/catalog/recovery.*) beyond what the
// integration suite covers through the Runtime: journal compaction.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "catalog/journal.hpp"
#include "catalog/recovery.hpp"
#include "mlbs/mlbs.hpp"
#include "support/temp_dir.hpp"
#include "tiers/registry.hpp"

namespace {

namespace fs = std::filesystem;

mlbs::Config persistent(const mlbs::test::TempDir& dir) {
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(1 << 20), mlbs::Tier::directory(dir / "pfs")};
  cfg.durability = mlbs::Durability::persistent;
  return cfg;
}

void fill(mlbs::Store<char>& s, std::uint64_t id) {
  s.resize(100);
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(id * 7 + i);
}

// A journal that is mostly history is rewritten with the live records alone; they read back exact, and new generations stay above every old one.
TEST(Recovery, JournalOfMostlyHistoryIsCompacted) {
  mlbs::test::TempDir dir;
  {
    mlbs::Runtime rt(persistent(dir));
    mlbs::Store<char> s(rt, "snap");
    for (std::uint64_t id = 0; id < 10; ++id) {
      fill(s, id);
      s.write(id);
    }
    s.flush();
    for (std::uint64_t id = 2; id < 10; ++id) s.erase(id);  // id 0 and 1 stay; generations up to 10 were used
    s.flush();
  }
  const std::string journal = dir / "pfs/snap/journal.mlbs";
  ASSERT_EQ(mlbs::catalog::replay_journal(journal).entries.size(), 18u);

  auto tier = mlbs::tiers::make_backend(1, mlbs::Tier::directory(dir / "pfs"));
  tier->probe(mlbs::Durability::persistent);
  std::uint64_t next_generation = 0;
  {
    const mlbs::catalog::StoreLock lock(*tier, "snap", "snap");
    const auto found = mlbs::catalog::recover_store(*tier, "snap", "snap", {true, 1 << 20, 8});
    ASSERT_EQ(found.records.size(), 2u);
    next_generation = found.next_generation;
    EXPECT_EQ(found.journal_valid_bytes, fs::file_size(journal));
  }
  const auto compacted = mlbs::catalog::replay_journal(journal);
  EXPECT_EQ(compacted.entries.size(), 4u) << "two live puts and the generation watermark (a put and its erase)";
  EXPECT_EQ(compacted.live.size(), 2u);
  EXPECT_EQ(compacted.torn_bytes, 0u);

  mlbs::Runtime rt(persistent(dir));
  mlbs::Store<char> s(rt, "snap");
  EXPECT_EQ(s.ids(), (std::vector<std::uint64_t>{0, 1}));
  for (std::uint64_t id = 0; id < 2; ++id) {
    s.read(id);
    for (std::size_t i = 0; i < s.size(); ++i) ASSERT_EQ(s[i], static_cast<char>(id * 7 + i)) << id;
  }
  fill(s, 5);
  s.write(5);
  s.flush();
  const auto after = mlbs::catalog::replay_journal(journal);
  ASSERT_EQ(after.live.count(5), 1u);
  EXPECT_GE(after.live.at(5).generation, next_generation) << "a generation was handed out twice";
  EXPECT_GE(next_generation, 11u);
}

}  // namespace

// Tests of the catalog (src/catalog/catalog.*): records in and out, live
// bytes, retirement, bounded lineage, and each record state's rule.
#include <cstdint>
#include <memory>

#include <gtest/gtest.h>

#include "catalog/catalog.hpp"

namespace {

using namespace mlbs::catalog;

std::unique_ptr<Record> record(std::uint32_t store, std::uint64_t id, std::uint64_t size) {
  auto r = std::make_unique<Record>();
  r->store = store;
  r->id = id;
  r->size = size;
  return r;
}

// Inserted records are found by (store, id), listed per store and counted in the live bytes.
TEST(Catalog, InsertFindAndLiveBytes) {
  Catalog c;
  const std::uint32_t a = c.add_store(StoreState{.name = "a"});
  const std::uint32_t b = c.add_store(StoreState{.name = "b"});
  c.insert(record(a, 1, 100));
  c.insert(record(b, 1, 50));
  EXPECT_EQ(c.find(a, 1)->size, 100u);
  EXPECT_EQ(c.find(b, 1)->size, 50u);
  EXPECT_EQ(c.find(a, 2), nullptr);
  EXPECT_EQ(c.records_of(a).size(), 1u);
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.live_bytes(), 150u);
  EXPECT_EQ(c.store(b).name, "b");
}

// A retired record leaves the map (its id is free again) but lives on until forgotten; its bytes stop counting at once.
TEST(Catalog, RetireThenForget) {
  Catalog c;
  const std::uint32_t s = c.add_store({});
  Record& r = c.insert(record(s, 7, 10));
  c.retire(r);
  EXPECT_TRUE(r.retired);
  EXPECT_EQ(c.find(s, 7), nullptr);
  EXPECT_EQ(c.live_bytes(), 0u);
  EXPECT_TRUE(c.retiring_any(s));
  c.insert(record(s, 7, 20));  // the id is reused while the old record is retiring
  EXPECT_EQ(c.find(s, 7)->size, 20u);
  c.forget(r);
  EXPECT_FALSE(c.retiring_any(s));
  c.forget(*c.find(s, 7));
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(c.live_bytes(), 0u);
}

// Generations are handed out in order, never again below what a recovered store used.
TEST(Catalog, Generations) {
  Catalog c;
  EXPECT_EQ(c.next_generation(), 1u);
  c.generations_used_below(10);
  EXPECT_EQ(c.next_generation(), 10u);
  c.generations_used_below(5);
  EXPECT_EQ(c.next_generation(), 11u);
  EXPECT_EQ(c.newest_generation(), 11u);
}

// Lineage stays bounded and keeps the record's first move.
TEST(Catalog, LineageIsBounded) {
  Record r;
  for (int i = 0; i < 200; ++i) Catalog::note_move(r, i % 3, (i + 1) % 3, std::uint64_t(i));
  EXPECT_EQ(r.lineage.size(), 64u);
  EXPECT_EQ(r.lineage.front().time_ns, 0u);
  EXPECT_EQ(r.lineage.back().time_ns, 199u);
}

// Each state's rule: DRAM only, being written down, on a file tier, durable, being read, erased.
TEST(Catalog, RecordStates) {
  Record r;
  r.copies = bit(0);
  EXPECT_EQ(state_of(r, 2, false), RecordState::in_dram);
  r.busy = true;
  EXPECT_EQ(state_of(r, 2, false), RecordState::writing_down);
  r.copies |= bit(1);
  EXPECT_EQ(state_of(r, 2, false), RecordState::on_tier) << "a copy below: moving, not writing down";
  EXPECT_EQ(state_of(r, 2, true), RecordState::writing_down) << "persistent: owed to the last tier";
  r.busy = false;
  r.copies = bit(2);
  EXPECT_EQ(state_of(r, 2, true), RecordState::on_tier) << "not journaled yet";
  r.journaled = true;
  EXPECT_EQ(state_of(r, 2, true), RecordState::durable);
  r.pins = 1;
  EXPECT_EQ(state_of(r, 2, true), RecordState::being_read);
  r.retired = true;
  EXPECT_EQ(state_of(r, 2, true), RecordState::erased);
}

}  // namespace

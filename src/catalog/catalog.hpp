// mlbs — the catalog of one runtime: its open stores and live records, the
// records on their way out, the write generations and the LRU clock, and
// each record's state as others see it.
//
// Concurrency contract: not thread-safe. The engine calls every method under
// its one mutex; helpers and readers in the process reach records only
// through pointers taken under that mutex. A Record keeps its address for its
// whole life (the planner's view and the helpers' operations hold pointers).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <ranges>
#include <unordered_map>
#include <vector>

#include "catalog/records.hpp"

namespace mlbs::catalog {

/// A record's state as the catalog reports it (mlbs-inspect, readers): what
/// a user asks "where is snapshot 42 now?".
enum class RecordState : std::uint8_t {
  in_dram,       ///< only in DRAM: no copy below yet
  writing_down,  ///< a helper is copying it to a file tier
  on_tier,       ///< has a copy on a file tier (scratch), or above the last one (persistent)
  durable,       ///< persistent: on the last tier and journaled
  being_read,    ///< a read is fetching it or copying it out
  erased,        ///< erased or released; its copies are going
};
const char* to_string(RecordState s) noexcept;
RecordState state_of(const Record& r, int last_tier, bool persistent) noexcept;

class Catalog {
 public:
  // --- stores ---
  /// Adds an open store; its index is its handle for the runtime's life.
  std::uint32_t add_store(StoreState s);
  StoreState& store(std::uint32_t index) { return stores_[index]; }
  const StoreState& store(std::uint32_t index) const { return stores_[index]; }
  std::uint32_t store_count() const noexcept { return static_cast<std::uint32_t>(stores_.size()); }
  /// Every store ever opened, closed ones included (their handles stay valid).
  std::deque<StoreState>& stores() noexcept { return stores_; }
  const std::deque<StoreState>& stores() const noexcept { return stores_; }

  // --- live records ---
  Record* find(std::uint32_t store, std::uint64_t id);
  /// Takes `r` into the catalog (its (store, id) must be free); counts its bytes as live.
  Record& insert(std::unique_ptr<Record> r);
  /// Live records in no particular order (`for (Record& r : catalog.records())`).
  auto records() {
    return std::views::transform(records_, [](auto& kv) -> Record& { return *kv.second; });
  }
  /// Live records of one store, without a copy (the map must not change while iterating).
  auto records_in(std::uint32_t store) {
    return records() | std::views::filter([store](const Record& r) { return r.store == store; });
  }
  /// The same, copied: for loops that take records out of the catalog.
  std::vector<Record*> records_of(std::uint32_t store);
  std::size_t size() const noexcept { return records_.size(); }
  /// Bytes of the live records (persistent: all owed to the last tier).
  std::uint64_t live_bytes() const noexcept { return live_bytes_; }
  /// The live records in the order the planner last ranked them, records
  /// inserted since at the end and null where one has left since: the
  /// planner re-sorts only what changed (Engine::refresh_placement), so a
  /// pass costs O(n), not a sort of the whole catalog at every change.
  std::vector<Record*>& ranking() noexcept { return ranking_; }

  // --- records on their way out ---
  /// Out of the catalog now (its id is free for a new write) while a helper
  /// or reader still uses it; forget() it when the last one is done.
  void retire(Record& r);
  /// Gone for good, live or retired: `r` is destroyed.
  void forget(Record& r);
  bool retiring_any(std::uint32_t store) const;
  auto retiring() {
    return std::views::transform(retiring_, [](auto& p) -> Record& { return *p; });
  }

  // --- clocks ---
  /// The next write generation (runtime-unique, also the write order).
  std::uint64_t next_generation() noexcept { return next_gen_++; }
  /// Generations up to `g` are taken (by a recovered store's records).
  void generations_used_below(std::uint64_t g) noexcept { next_gen_ = std::max(next_gen_, g); }
  /// The newest generation handed out (0: none yet).
  std::uint64_t newest_generation() const noexcept { return next_gen_ - 1; }
  /// The LRU clock's next tick.
  std::uint64_t tick() noexcept { return ++clock_; }

  /// Appends a move (tier `from` -> `to`, -1 = none) at `t_ns` to r's lineage, which stays bounded.
  static void note_move(Record& r, int from, int to, std::uint64_t t_ns);

 private:
  struct Key {
    std::uint32_t store;
    std::uint64_t id;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const noexcept {
      return std::hash<std::uint64_t>{}(k.id * 0x9e3779b97f4a7c15ull ^ k.store);
    }
  };
  std::deque<StoreState> stores_;  ///< deque: references stay valid as stores open
  std::unordered_map<Key, std::unique_ptr<Record>, KeyHash> records_;
  std::vector<std::unique_ptr<Record>> retiring_;
  std::vector<Record*> ranking_;
  void unrank(const Record& r);
  std::uint64_t live_bytes_ = 0;
  std::uint64_t next_gen_ = 1;
  std::uint64_t clock_ = 0;
};

}  // namespace mlbs::catalog

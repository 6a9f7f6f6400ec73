// mlbs — the memory tier (tier 0) as a registered backend ("memory"): the DRAM
// slot pool, its accounting in Backend's public layer like every tier's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include "tiers/backend.hpp"
#include "tiers/memory/slot_pool.hpp"

namespace mlbs::tiers {

/// The engine keeps each record's DRAM copy as a slot of the pool and
/// addresses it directly (write() copies into it, read() may hand it over
/// whole), so the slot calls below are its fast path; each keeps used() in
/// step with the pool. Through the object interface (create/open/remove) the
/// tier stores objects in slots of the same pool, as any backend does.
/// Thread-safe (one mutex around the pool; slots come home from any thread).
class MemoryBackend final : public Backend {
 public:
  MemoryBackend(int index, Tier desc);

  std::uint64_t capacity() const noexcept { return pool_.capacity(); }
  /// Starts pre-faulting the pool (SlotPool::start_prefault); until then
  /// slots fault their pages in on first use.
  void start_prefault();
  std::uint64_t free_bytes() const;
  /// Whether a slot for `bytes` fits the budget now.
  bool fits(std::size_t bytes) const;
  /// A slot of at least `bytes`, or nullopt when the budget does not admit it.
  std::optional<detail::Block> allocate_slot(std::size_t bytes);
  void release_slot(detail::Block block) noexcept;
  /// A slot leaves the budget for good (it became a Store's working buffer);
  /// `replacement`, of equal capacity, takes its place as a free spare.
  void exchange_slot(std::size_t capacity, detail::Block replacement) noexcept;
  std::uint64_t fallback_allocations() const;
  /// Memory beside the budget, pre-faulted before the slots (SlotPool::scratch()).
  detail::Block scratch(std::size_t bytes);

 private:
  using Key = std::tuple<std::string, std::uint64_t, std::uint64_t>;  // space, id, generation
  class SlotWriter;
  class SlotReader;

  void do_probe() override {}
  void do_create_space(const std::string&) override {}
  void do_remove_space(const std::string& space) noexcept override;
  std::unique_ptr<ObjectWriter> do_create(const ObjectRef& ref, std::uint64_t size) override;
  std::unique_ptr<ObjectReader> do_open(const ObjectRef& ref, std::uint64_t size) override;
  void do_remove(const ObjectRef& ref) override;
  std::string do_space_path(const std::string&) const override { return {}; }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> do_list(const std::string& space) const override;
  std::uint64_t do_room() const override { return free_bytes(); }
  /// Called with mu_ held after every change of the pool.
  void sync_used() { set_used(pool_.used_bytes()); }

  mutable std::mutex mu_;
  SlotPool pool_;
  std::map<Key, detail::Block> objects_;  ///< committed objects of the object interface
};

}  // namespace mlbs::tiers

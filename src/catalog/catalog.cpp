#include "catalog/catalog.hpp"

#include <algorithm>

namespace mlbs::catalog {

const char* to_string(RecordState s) noexcept {
  switch (s) {
    case RecordState::in_dram: return "in DRAM";
    case RecordState::writing_down: return "being written down";
    case RecordState::on_tier: return "on a file tier";
    case RecordState::durable: return "durable";
    case RecordState::being_read: return "being read";
    case RecordState::erased: return "erased";
  }
  return "?";
}

RecordState state_of(const Record& r, int last_tier, bool persistent) noexcept {
  if (r.retired) return RecordState::erased;
  if (r.demand || r.pins) return RecordState::being_read;
  const bool on_last = r.copies & bit(last_tier);
  if (persistent && r.journaled && on_last) return RecordState::durable;
  // A helper copying a record that owes a copy below is writing it down (a
  // busy record with its copy below already is being moved or prefetched).
  const bool owes = persistent ? !on_last : r.copies == bit(0);
  if (r.busy && owes) return RecordState::writing_down;
  return r.copies & ~bit(0) ? RecordState::on_tier : RecordState::in_dram;
}

std::uint32_t Catalog::add_store(StoreState s) {
  stores_.push_back(std::move(s));
  return static_cast<std::uint32_t>(stores_.size() - 1);
}

Record* Catalog::find(std::uint32_t store, std::uint64_t id) {
  auto it = records_.find({store, id});
  return it == records_.end() ? nullptr : it->second.get();
}

Record& Catalog::insert(std::unique_ptr<Record> r) {
  Record& ref = *r;
  live_bytes_ += ref.size;
  records_.emplace(Key{ref.store, ref.id}, std::move(r));
  ranking_.push_back(&ref);
  return ref;
}

void Catalog::unrank(const Record& r) {
  // A scan of contiguous pointers; the entry is dropped at the next pass.
  if (auto it = std::find(ranking_.begin(), ranking_.end(), &r); it != ranking_.end()) *it = nullptr;
}

std::vector<Record*> Catalog::records_of(std::uint32_t store) {
  std::vector<Record*> out;
  for (auto& [k, r] : records_)
    if (k.store == store) out.push_back(r.get());
  return out;
}

void Catalog::retire(Record& r) {
  auto it = records_.find({r.store, r.id});
  unrank(r);
  r.retired = true;
  live_bytes_ -= r.size;
  retiring_.push_back(std::move(it->second));
  records_.erase(it);
}

void Catalog::forget(Record& r) {
  if (r.retired) {
    std::erase_if(retiring_, [&](const std::unique_ptr<Record>& p) { return p.get() == &r; });
  } else {
    unrank(r);
    live_bytes_ -= r.size;
    records_.erase({r.store, r.id});
  }
}

bool Catalog::retiring_any(std::uint32_t store) const {
  return std::any_of(retiring_.begin(), retiring_.end(), [&](const auto& r) { return r->store == store; });
}

void Catalog::note_move(Record& r, int from, int to, std::uint64_t t_ns) {
  // Bounded, so a record moved often cannot grow without limit; the first
  // entry (its arrival) stays.
  if (r.lineage.size() >= 64) r.lineage.erase(r.lineage.begin() + 1);
  r.lineage.push_back({t_ns, from, to});
}

}  // namespace mlbs::catalog

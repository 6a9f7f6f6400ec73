#include "catalog/salvage.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

namespace mlbs::catalog {

const char* to_string(SalvagePlan::Verdict v) noexcept {
  using V = SalvagePlan::Verdict;
  switch (v) {
    case V::verified: return "verified";
    case V::unverified: return "unverified";
    case V::damaged: return "damaged";
    case V::erased: return "erased";
    case V::superseded: return "superseded";
    case V::not_adopted: return "not adopted";
  }
  return "?";
}

SalvagePlan plan_salvage(const std::vector<JournalEntry>& surviving, const std::vector<StoredCopy>& stored,
                         bool adopt_unverified) {
  using V = SalvagePlan::Verdict;
  using Key = std::pair<std::uint64_t, std::uint64_t>;  // (id, generation)
  std::map<Key, JournalEntry> puts;
  std::set<Key> erased;
  for (const JournalEntry& e : surviving) {
    if (e.op == JournalEntry::Op::put)
      puts[{e.id, e.generation}] = e;
    else
      erased.insert({e.id, e.generation});
  }

  SalvagePlan plan;
  for (const StoredCopy& c : stored) {
    SalvagePlan::Item item{c, V::verified, {}};
    const Key key{c.id, c.generation};
    const auto put = puts.find(key);
    if (erased.count(key)) {
      item.verdict = V::erased;
    } else if (!c.readable) {
      item.verdict = V::damaged;
      item.why = "its bytes cannot be read";
    } else if (put == puts.end() && c.framed) {
      item.verdict = V::not_adopted;
      item.why = "a codec frame without its journal entry: its record's size and checksum are unknown";
    } else if (put == puts.end()) {
      item.verdict = adopt_unverified ? V::unverified : V::not_adopted;
    } else if (put->second.file_bytes() != c.bytes) {
      item.verdict = V::damaged;
      item.why = fmt::format("it holds {} bytes, its journal entry says {}", c.bytes, put->second.file_bytes());
    } else if (const std::uint64_t sum = c.checksum_of(put->second.checksum_kind); put->second.file_checksum() != sum) {
      item.verdict = V::damaged;
      item.why = fmt::format("its checksum is {:016x}, its journal entry says {:016x}", sum,
                             put->second.file_checksum());
    }
    plan.items.push_back(std::move(item));
  }
  std::sort(plan.items.begin(), plan.items.end(), [](const auto& a, const auto& b) {
    return std::pair(a.copy.id, a.copy.generation) < std::pair(b.copy.id, b.copy.generation);
  });
  // Per id the newest kept generation is the record; older kept ones go.
  // Newest first: sorted by (id, generation), read backwards.
  const auto kept = [](V v) { return v == V::verified || v == V::unverified; };
  std::optional<std::uint64_t> id_kept;
  for (auto it = plan.items.rbegin(); it != plan.items.rend(); ++it) {
    if (!kept(it->verdict)) continue;
    if (id_kept == it->copy.id)
      it->verdict = V::superseded;
    else
      id_kept = it->copy.id;
  }
  // Dropped copies first: replay keeps an id's newest put unless an erase
  // names it, so a dropped newer generation's put and erase must come
  // before the kept older one's put, or they would take the id with them.
  for (const auto& item : plan.items) {
    if (kept(item.verdict)) continue;
    const StoredCopy& c = item.copy;
    plan.journal.push_back({JournalEntry::Op::put, c.id, c.generation, c.bytes, c.checksum});
    plan.journal.push_back({JournalEntry::Op::erase, c.id, c.generation, 0, 0});
  }
  for (const auto& item : plan.items) {
    if (!kept(item.verdict)) continue;
    // A verified copy keeps its entry (with its frame, if a codec stored it).
    const auto put = puts.find({item.copy.id, item.copy.generation});
    if (item.verdict == V::verified && put != puts.end())
      plan.journal.push_back(put->second);
    else
      plan.journal.push_back({JournalEntry::Op::put, item.copy.id, item.copy.generation, item.copy.bytes,
                              item.copy.checksum});
  }
  return plan;
}

}  // namespace mlbs::catalog

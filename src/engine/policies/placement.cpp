#include "engine/policies/placement.hpp"

#include <limits>
#include <vector>

namespace mlbs::engine::policies {

Placement place(const std::vector<PlacementItem>& ranked, std::uint64_t mem_capacity,
                const std::vector<std::uint64_t>& tier_capacity, bool moves_up) {
  constexpr auto kUnlimited = std::numeric_limits<std::uint64_t>::max();
  Placement p;
  p.in_memory.assign(ranked.size(), false);
  p.dir_tier.assign(ranked.size(), -1);

  std::uint64_t mem_left = mem_capacity;
  std::vector<std::uint64_t> left(tier_capacity.size());
  for (std::size_t t = 1; t < tier_capacity.size(); ++t)
    left[t] = tier_capacity[t] == 0 ? kUnlimited : tier_capacity[t];
  auto take = [&](std::size_t t, std::uint64_t bytes) {
    if (left[t] != kUnlimited) left[t] -= bytes;
  };
  auto give = [&](std::size_t t, std::uint64_t bytes) {
    if (left[t] != kUnlimited) left[t] += bytes;
  };
  auto usable = [&](const PlacementItem& it, std::size_t t) {
    return !((it.avoid_mask >> t) & 1u) && it.bytes <= left[t];
  };

  // DRAM: an inclusive cache of the soonest records.
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const PlacementItem& it = ranked[i];
    if (it.mem_bytes <= mem_left && !(it.avoid_mask & 1u)) {
      p.in_memory[i] = true;
      mem_left -= it.mem_bytes;
    }
  }
  // Reader retention: records no reader has read yet hold or take the
  // fastest file room first (readers cannot read DRAM; the fast tier is where
  // they read quickest), whatever their next use by the writer.
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const PlacementItem& it = ranked[i];
    if (!it.retain) continue;
    const std::size_t have = it.file_copy > 0 ? std::size_t(it.file_copy) : 0;
    for (std::size_t t = 1; t < left.size(); ++t) {
      if (have && t != have) continue;  // keep the copy it has, no move up
      if (!usable(it, t)) continue;
      take(t, it.bytes);
      p.dir_tier[i] = static_cast<int>(t);
      break;
    }
  }
  // File tiers: a record keeps the copy it has, soonest first while the tier
  // has room (a shrunken quota sends the latest ones down). Evicting a
  // resident to admit a sooner record would cost two transfers on the faster
  // tier and save nothing on the slower one when each record is read once —
  // unless the resident is backed (below).
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const PlacementItem& it = ranked[i];
    const int t = it.file_copy;
    if (!it.retain && t > 0 && static_cast<std::size_t>(t) < left.size() && usable(it, std::size_t(t))) {
      take(std::size_t(t), it.bytes);
      p.dir_tier[i] = t;
    }
  }
  auto backed = [&](const PlacementItem& it) {
    return !it.retain && it.file_copy > 0 && it.backing > it.file_copy && std::size_t(it.backing) < left.size();
  };
  // A backed resident's faster copy can be given up for nothing: room for
  // record i on tier t from the backed residents there ranked after it,
  // furthest first, each smaller than twice record i (the record, written
  // to the slower tier instead, would cost it a write and a read; the
  // resident, already there, a read); all or none. They fall back to their
  // slower copy.
  auto evict_backed = [&](std::size_t i, std::size_t t) {
    const PlacementItem& it = ranked[i];
    if ((it.avoid_mask >> t) & 1u) return false;
    std::uint64_t room = left[t];
    std::vector<std::size_t> out;
    for (std::size_t j = ranked.size(); j-- > i + 1 && room < it.bytes;) {
      const PlacementItem& r = ranked[j];
      if (p.dir_tier[j] != static_cast<int>(t) || r.file_copy != static_cast<int>(t) || !backed(r) ||
          r.bytes >= 2 * it.bytes)
        continue;
      out.push_back(j);
      room += r.bytes;
    }
    if (room < it.bytes) return false;
    for (std::size_t j : out) {
      give(t, ranked[j].bytes);
      const auto b = static_cast<std::size_t>(ranked[j].backing);
      left[b] -= std::min(left[b], ranked[j].bytes);  // its copy is there already
      p.dir_tier[j] = ranked[j].backing;
    }
    return true;
  };
  // Free room goes to the soonest records: newcomers take the fastest tier
  // with room; residents not held in DRAM move up into it (prefetch between
  // file tiers). A record read from DRAM has no use for a faster file copy,
  // and one only in DRAM claims no file room yet: DRAM and the file tiers
  // hold different records, so their capacities add up.
  auto fastest_with_room = [&](std::size_t i, std::size_t limit) {
    const PlacementItem& it = ranked[i];
    const int have = p.dir_tier[i];
    for (std::size_t t = 1; t < limit; ++t) {
      if (!usable(it, t)) continue;
      if (have > 0) give(std::size_t(have), it.bytes);
      take(t, it.bytes);
      p.dir_tier[i] = static_cast<int>(t);
      return;
    }
  };
  // Records without a place yet, soonest first (newcomers, and residents
  // whose tier shrank): the fastest tier with room, or where backed
  // residents can give theirs up.
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    if (p.in_memory[i] || p.dir_tier[i] >= 0) continue;
    for (std::size_t t = 1; t < left.size(); ++t)
      if (usable(ranked[i], t) || evict_backed(i, t)) {
        take(t, ranked[i].bytes);
        p.dir_tier[i] = static_cast<int>(t);
        break;
      }
  }
  // Then residents not held in DRAM move up into the room left, soonest
  // first (prefetch between file tiers), unless writes are coming down; a
  // record with no next use stays where it is.
  if (moves_up)
    for (std::size_t i = 0; i < ranked.size(); ++i) {
      const int have = p.dir_tier[i];
      if (!p.in_memory[i] && have > 0 && ranked[i].file_copy > 0 && !ranked[i].spent)
        fastest_with_room(i, std::size_t(have));
    }
  // Room nobody else needs is where a DRAM record goes if it must leave
  // early (a flush, an unknown schedule's write-behind).
  for (std::size_t i = 0; i < ranked.size(); ++i)
    if (p.in_memory[i] && p.dir_tier[i] < 0) fastest_with_room(i, left.size());
  return p;
}

}  // namespace mlbs::engine::policies

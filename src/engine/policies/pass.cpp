#include "engine/policies/pass.hpp"

#include <algorithm>
#include <limits>

#include "engine/policies/placement.hpp"
#include "engine/policies/policies.hpp"
#include "engine/policies/ranking.hpp"
#include "mlbs/detail/block.hpp"

namespace mlbs::engine::policies {

std::uint64_t dram_footprint(const catalog::Record& r) {
  // A slot may be larger than its record (mlbs-run commits whole chunk
  // buffers); one fetched later is cut to the record.
  return r.slot ? r.slot.capacity() : detail::round_up_block(r.size);
}

std::uint64_t dram_limit(std::uint64_t budget, std::uint64_t pending_bytes, std::uint64_t last_write_bytes,
                         std::uint64_t held_bytes, std::uint64_t streams, bool known_order) {
  std::uint64_t headroom = std::max(pending_bytes, last_write_bytes);
  const std::uint64_t wanted = held_bytes + headroom;
  // A known schedule's held records stay while later ones come and go: it
  // spills as soon as they leave less than its streams' room.
  const std::uint64_t known_wanted = held_bytes + std::max(headroom, streams * last_write_bytes);
  if (last_write_bytes && (wanted > budget || (known_order && known_wanted >= budget))) {
    // Writes that spill: with room for one write, each waits until the record
    // leaving DRAM is copied down, and the tier idles while the application
    // copies the next one in. Room for two lets the copies overlap.
    if (double_buffers(budget, last_write_bytes)) headroom += last_write_bytes;
    headroom = std::max(headroom, streams * last_write_bytes);
  }
  return budget > headroom ? budget - headroom : 0;
}

std::uint64_t coming_dram(std::uint64_t budget, std::uint64_t coming_bytes,
                          const std::vector<std::uint64_t>& file_bytes) {
  const std::uint64_t slot = detail::round_up_block(coming_bytes);
  return coming_bytes && !unbounded(file_bytes) && budget > slot ? budget - slot : 0;
}

std::uint64_t write_streams(std::uint64_t budget, std::uint64_t last_write_bytes,
                            const std::vector<double>& file_rates, const std::vector<std::uint64_t>& file_bytes,
                            bool newest_first, bool persistent) {
  if (persistent || !last_write_bytes || !spreads(file_rates)) return 1;
  std::uint64_t joining = 0;
  for (std::size_t t = 1; t < file_rates.size(); ++t) joining += joins_spread(file_rates, t, last_write_bytes, budget);
  const std::uint64_t slots = budget / last_write_bytes;
  if (!newest_first) {
    // A known schedule keeps the records it reads first; with room for
    // twice the streams and no bounded tier, it keeps all but one slot per
    // joining tier (6 points worse by up to 0.04 over bounded fast tiers,
    // whose room then went to records read later).
    if (slots < 2 * joining || !unbounded(file_bytes)) return 1;
  }
  return std::max<std::uint64_t>(1, std::min(joining, slots));
}

bool idle_tiers_start(std::uint64_t budget, std::uint64_t burst_bytes) {
  return double_buffers(budget, burst_bytes);
}

bool leads_first(Schedule::Kind kind, std::uint64_t budget, const WriteBursts& bursts, std::uint64_t last_write_bytes,
                 const std::vector<double>& file_rates, const std::vector<std::uint64_t>& file_bytes,
                 bool persistent) {
  if (kind != Schedule::Kind::fifo || persistent || !last_write_bytes || bursts.gap_s() <= 0 ||
      !double_buffers(budget, bursts.bytes()) || file_bytes.size() < 2)
    return false;
  if (file_bytes.size() == 2) return true;
  // Several tiers: whole records over unlimited tiers of known rates, the
  // fastest carrying nearly all the traffic of those that join.
  if (bursts.bytes() > last_write_bytes || !unbounded(file_bytes) || !spreads(file_rates)) return false;
  double others = 0;
  for (std::size_t t = 2; t < file_rates.size(); ++t)
    if (joins_spread(file_rates, t, last_write_bytes, budget)) others += file_rates[t];
  return file_rates[1] >= kLeadTierRatio * others;
}

std::uint64_t lead_spacing(std::uint64_t steps, std::uint64_t slots) {
  std::uint64_t spacing = 1;
  if (!slots) return spacing;
  const std::uint64_t guess = kLeadRunGuess * steps;
  while ((guess + spacing - 1) / spacing > slots) spacing *= 2;
  return spacing;
}

bool outlasts_a_move(const WriteBursts& bursts, std::uint64_t written_bytes, std::uint64_t write_bytes,
                     double last_rate, double writing_s) {
  if (last_rate <= 0) return false;
  const double computed_s = bursts.bytes() ? double(written_bytes) / double(bursts.bytes()) * bursts.gap_s() : 0.0;
  return std::max(computed_s, writing_s) * last_rate >= double(write_bytes);
}

bool bottleneck_first(Schedule::Kind kind, std::uint64_t budget, std::uint64_t last_write_bytes, bool persistent) {
  return kind == Schedule::Kind::fifo && !persistent && last_write_bytes && double_buffers(budget, last_write_bytes);
}

bool last_takes_residents(bool bottleneck_first, double gap_s, double move_s, std::uint64_t pending_bytes,
                          bool write_waits) {
  return bottleneck_first && gap_s > 0 && move_s <= kMoveGaps * gap_s && !pending_bytes && !write_waits;
}

bool writes_leave_dram(bool newest_first, std::size_t counted_to_come, std::uint64_t budget,
                       std::uint64_t last_write_bytes, const std::vector<std::uint64_t>& file_bytes) {
  return newest_first ||
         (counted_to_come > 0 && !double_buffers(budget, last_write_bytes) && unbounded(file_bytes));
}

std::uint64_t held_bytes(std::span<catalog::Record* const> ranked) {
  std::uint64_t held = 0;
  for (const catalog::Record* r : ranked) held += dram_footprint(*r);
  return held;
}

std::uint64_t file_limit(std::uint64_t capacity, double high_water, bool persistent) {
  if (persistent || !capacity || high_water >= 1.0) return capacity;
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(double(capacity) * high_water));
}

bool sooner(const catalog::Record* a, const catalog::Record* b) noexcept {
  return a->rank != b->rank ? a->rank < b->rank : a->gen < b->gen;
}

void order_by_rank(std::vector<catalog::Record*>& records) { std::sort(records.begin(), records.end(), sooner); }

void merge_by_rank(std::vector<catalog::Record*>& records, std::size_t kept, std::vector<catalog::Record*>& moved,
                   std::vector<catalog::Record*>& out) {
  order_by_rank(moved);
  out.clear();
  out.reserve(kept + moved.size());
  std::merge(records.begin(), records.begin() + static_cast<std::ptrdiff_t>(kept), moved.begin(), moved.end(),
             std::back_inserter(out), sooner);
  records.swap(out);
}

void place_records(std::span<catalog::Record* const> ranked, const Limits& limits, const Coming& coming) {
  const int last = static_cast<int>(limits.file_bytes.size()) - 1;
  const std::size_t n_coming = coming.bytes ? coming.ranks.size() : 0;
  PlacementItem to_come{coming.bytes, detail::round_up_block(coming.bytes), 0};
  to_come.coming = true;
  std::vector<PlacementItem> items;
  items.reserve(n_coming + ranked.size());
  std::vector<std::size_t> at(ranked.size());  // ranked[i]'s item
  std::size_t next_coming = 0;
  std::uint64_t dram_bytes = n_coming ? std::max(limits.dram_bytes, limits.coming_dram_bytes) : limits.dram_bytes;
  // Under leads_first DRAM keeps the leads of every spacing-th step (FIFO:
  // rank order is write order, so `step` counts the steps as written).
  std::uint64_t spacing = 1, step = 0;
  if (limits.leads_first) {
    std::uint64_t steps = 0, slot = 0;
    for (const catalog::Record* r : ranked)
      if (r->step_lead) {
        ++steps;
        slot = std::max(slot, dram_footprint(*r));
      }
    spacing = lead_spacing(steps, slot ? dram_bytes / slot : 0);
  }
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    catalog::Record* r = ranked[i];
    for (; next_coming < n_coming && coming.ranks[next_coming] <= r->rank; ++next_coming) items.push_back(to_come);
    at[i] = items.size();
    if (r->staged > 0 && !r->busy && !(r->copies & catalog::bit(r->staged))) r->staged = -1;  // moved on
    // Its fastest file copy, a staged one aside while writes come down (it
    // is on its way down), and one made ahead from DRAM while writes come
    // down and DRAM holds it. Once reads begin a staged copy is a resident
    // like any other: staging was for the writes' DRAM, and moving it on
    // would put a write on the slower tier ahead of the record's read
    // (stops_at_turn() stops such a move in flight at the turn).
    const bool held = r->copies & bit(0);
    const int ahead = held && !limits.moves_up ? r->ahead_from_dram : -1;
    const int staged = limits.moves_up ? -1 : r->staged;
    int have = -1;
    for (int t = 1; t <= last && have < 0; ++t)
      if ((r->copies & catalog::bit(t)) && t != staged && t != ahead) have = t;
    const bool spent = r->rank >= kNoNextUse;
    // Persistent: every record has its durable copy on the last tier, which
    // placement did not choose: one with no copy above it is placed afresh,
    // unless no next use of it is known (a FIFO or LIFO record read already
    // stays where it is durable: moving it up would cost a read of the slow tier for nothing).
    if (limits.persistent && have == last && !spent) have = -1;
    int backing = -1;
    if (!limits.persistent && have > 0)
      for (int t = have + 1; t <= last && backing < 0; ++t)
        if ((r->copies & catalog::bit(t)) || r->ahead == t) backing = t;
    // A DRAM-only record a helper copies is on its way to the tier placement
    // chose last (or, staged, to a faster one: placement ignores staging);
    // a resident a helper copies into the last tier (a move down) keeps
    // that tier busy too (place()'s bottleneck first: one copy at a time).
    int arriving = r->busy && r->copies == bit(0) && r->staged < 0 ? r->dir_target : -1;
    if (arriving < 0 && r->busy && have > 0 && (r->copying_on & bit(last)) && !(r->copies & bit(last)))
      arriving = last;
    // The slot of a record copied ahead from DRAM stays taken until the copy
    // ends, for as long as the slower tier takes (a slot a copy reads goes to
    // no writer): no room to plan with while writes come down. Placed in DRAM
    // at no cost, so the next write's slot comes from another record, which
    // leaves now rather than when the write waits (it would wait for the
    // slower tier). A copy ahead between two file tiers leaves the slot free
    // (dram_copy_free()): planned as pinned, that record kept DRAM's place
    // and the newest write was sent down instead, while the next write waited
    // for it (15-20 ms at micro ratio 16).
    const bool pinned = !limits.moves_up && r->busy && r->ahead > 0 && held && (r->copying_on & bit(0));
    const std::uint64_t footprint = dram_footprint(*r);
    if (pinned) dram_bytes -= std::min(dram_bytes, footprint);
    items.push_back(
        {r->plan_bytes(), pinned ? 0 : footprint, r->avoid, have, r->for_readers, backing, spent, arriving, held});
    items.back().lead = r->step_lead && step++ % spacing == 0;
  }
  items.insert(items.end(), n_coming - next_coming, to_come);  // read after every record written
  static const std::vector<double> kNoRates;  // persistent: no spreading
  const Placement p = place(items, dram_bytes, limits.file_bytes, limits.moves_up,
                            limits.persistent ? kNoRates : limits.file_rates, limits.lookahead_bytes,
                            limits.bottleneck_first, limits.to_come_bytes, limits.idle_tiers_start,
                            limits.leads_first, limits.dram_budget, limits.read_room_bytes,
                            limits.last_takes_residents);
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    ranked[i]->want_mem = p.in_memory[at[i]];
    ranked[i]->dir_target = p.dir_tier[at[i]];
  }
}

std::uint64_t write_room(std::uint64_t burst_bytes, std::uint64_t last_write_bytes, std::uint64_t budget,
                         bool spreading, double gap_s, double drain_bytes_per_s) {
  if (!last_write_bytes) return 0;
  if (burst_bytes <= last_write_bytes) return last_write_bytes;
  if (double_buffers(budget, burst_bytes)) return burst_bytes;
  const bool drained_in_gap = gap_s * drain_bytes_per_s >= static_cast<double>(burst_bytes);
  return budget >= 2 * burst_bytes && (!spreading || drained_in_gap) ? burst_bytes : last_write_bytes;
}

double drain_rate(const std::vector<double>& file_rates, std::uint64_t write_bytes, std::uint64_t lookahead_bytes) {
  double sum = 0;
  for (std::size_t t = 1; t < file_rates.size(); ++t) {
    if (file_rates[t] <= 0) return 0;
    if (joins_spread(file_rates, t, write_bytes, lookahead_bytes)) sum += file_rates[t];
  }
  return sum;
}

std::uint64_t write_room(const WriteBursts& bursts, std::uint64_t last_write_bytes, std::uint64_t budget,
                         const Limits& limits) {
  const std::uint64_t burst = bursts.bytes();
  // The tiers that drain the step are those that join spreading over the DRAM its room leaves.
  const double rate = drain_rate(limits.file_rates, last_write_bytes, budget - std::min(budget, burst));
  // They spread if a slower tier joins over the most DRAM it could have ahead: all but one write's room.
  const std::uint64_t widest = budget - std::min(budget, last_write_bytes);
  bool spreading = false;
  if (spreads(limits.file_rates))
    for (std::size_t t = 2; t < limits.file_rates.size() && !spreading; ++t)
      spreading = joins_spread(limits.file_rates, t, last_write_bytes, widest);
  return write_room(burst, last_write_bytes, budget, spreading, bursts.gap_s(), rate);
}

bool steps_double_buffered(Schedule::Kind kind, std::uint64_t budget, const WriteBursts& bursts,
                           const std::vector<double>& file_rates, bool persistent) {
  const std::uint64_t part = bursts.last_bytes(), step = bursts.bytes();
  if (kind != Schedule::Kind::fifo || persistent || !spreads(file_rates) || !part || step < 2 * part ||
      bursts.gap_s() <= 0 || budget < 2 * step || double_buffers(budget, step))
    return false;
  const double covered = bursts.gap_s() * drain_rate(file_rates, part, budget - part) / static_cast<double>(step);
  return covered >= kNearlyCovered && covered < 1.0;
}

std::uint64_t write_headroom(std::uint64_t last_write_bytes, const Coming& coming) {
  return coming.writes_done ? 0 : last_write_bytes;
}

std::uint64_t records_to_come(std::uint64_t expected, std::uint64_t store_records, bool writing) {
  return writing && expected > store_records + 1 ? expected - store_records - 1 : 0;
}

std::uint64_t bytes_to_come(std::uint64_t expected, std::uint64_t store_records, std::uint64_t last_write_bytes) {
  return expected > store_records ? (expected - store_records) * last_write_bytes : 0;
}

std::uint64_t guessed_to_come(std::uint64_t dram_records, bool uncounted_lifo, bool writing, bool copy_ahead,
                              bool persistent, const std::vector<std::uint64_t>& file_bytes,
                              const std::vector<double>& file_rates) {
  if (!uncounted_lifo || !writing || !copy_ahead || persistent || !spreads(file_rates)) return 0;
  // A bounded tier's room would be claimed by records that may never come,
  // pushing those written to a slower tier for good (up to 0.9 worse over
  // the sweep); an unlimited tier's drains cost nothing if they do not.
  return unbounded(file_bytes) ? std::max<std::uint64_t>(dram_records, 1) : 0;
}

bool read_after_coming(const WriteState& w, std::span<catalog::Record* const> ranked, const Coming& coming) {
  if (w.kind == Schedule::Kind::lifo) return w.counted;
  if (w.kind != Schedule::Kind::explicit_order || coming.ranks.empty()) return false;
  return std::none_of(ranked.begin(), ranked.end(),
                      [&](const catalog::Record* r) { return r->rank < coming.ranks.back(); });
}

void limits_for_writes(const WriteState& w, std::span<catalog::Record* const> ranked, Limits& limits,
                       Coming& coming) {
  const bool lifo = w.kind == Schedule::Kind::lifo;
  const bool newest = newest_first(w.kind, w.counted);
  const bool streaming = writes_leave_dram(newest, read_after_coming(w, ranked, coming) ? coming.ranks.size() : 0,
                                           w.budget, w.last_write_bytes, limits.file_bytes);
  const std::uint64_t dram_records = w.last_write_bytes ? w.budget / w.last_write_bytes : 0;
  coming.ranks.insert(coming.ranks.begin(),
                      guessed_to_come(dram_records, lifo && !w.counted, w.last_write_bytes != 0, w.copy_ahead,
                                      limits.persistent, limits.file_bytes, limits.file_rates),
                      0);
  const std::uint64_t streams = write_streams(w.budget, w.last_write_bytes, limits.file_rates, limits.file_bytes,
                                              streaming, limits.persistent);
  const bool steps_buffered =
      steps_double_buffered(w.kind, w.budget, w.bursts, limits.file_rates, limits.persistent);
  const std::uint64_t room = steps_buffered && w.last_write_bytes
                                 ? w.bursts.bytes()
                                 : write_room(w.bursts, w.last_write_bytes, w.budget, limits);
  const std::uint64_t held = held_bytes(ranked);  // every record written, at its DRAM footprint
  limits.dram_bytes = dram_limit(w.budget, w.pending_bytes, write_headroom(room, coming), held, streams,
                                 !newest);
  limits.coming_dram_bytes = coming_dram(w.budget, coming.bytes, limits.file_bytes);
  if (streaming) limits.lookahead_bytes = w.budget;
  if (steps_buffered) {
    if (w.last_write_bytes) limits.lookahead_bytes = w.budget - w.bursts.last_bytes();
    else limits.read_room_bytes = 2 * w.bursts.bytes();
  }
  limits.bottleneck_first = bottleneck_first(w.kind, w.budget, w.last_write_bytes, limits.persistent);
  // Without the count: a run that has outlasted the last tier's move of a record is taken to go on.
  if (limits.bottleneck_first && !w.counted && !limits.file_rates.empty() &&
      outlasts_a_move(w.bursts, held, w.last_write_bytes, limits.file_rates.back(), w.writing_s))
    limits.to_come_bytes = kRunGoesOn;
  const double last_rate = limits.file_rates.empty() ? 0.0 : limits.file_rates.back();
  const double move_s =
      last_rate > 0 ? double(w.last_write_bytes) / last_rate : std::numeric_limits<double>::infinity();
  limits.last_takes_residents =
      last_takes_residents(limits.bottleneck_first, w.bursts.gap_s(), move_s, w.pending_bytes, w.write_waits);
  limits.dram_budget = w.budget;
  limits.idle_tiers_start = idle_tiers_start(w.budget, w.bursts.bytes());
  limits.leads_first = leads_first(w.kind, w.budget, w.bursts, w.last_write_bytes, limits.file_rates, limits.file_bytes,
                                   limits.persistent);
}

std::vector<std::uint64_t> dirty_bytes(std::span<catalog::Record* const> ranked, int tiers, bool persistent) {
  std::vector<std::uint64_t> dirty(std::size_t(std::max(tiers, 0)), 0);
  for (const catalog::Record* r : ranked)
    for (int t = 0; t + 1 < tiers; ++t)
      if (dirty_on(*r, t, tiers - 1, persistent)) dirty[t] += t == 0 ? r->size : r->file_bytes();
  return dirty;
}

}  // namespace mlbs::engine::policies

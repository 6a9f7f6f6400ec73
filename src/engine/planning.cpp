// mlbs — the engine's planning: ranking and placement of the catalog's
// records, the view the policies (engine/policies) decide on, and carrying
// a decision out (drops, removals queued, room taken).
#include "engine/engine.hpp"

#include <algorithm>
#include <iterator>
#include <limits>
#include <utility>

#include "catalog/live.hpp"
#include "engine/policies/pass.hpp"
#include "engine/policies/placement.hpp"
#include "engine/policies/policies.hpp"
#include "engine/policies/ranking.hpp"
#include "engine/timing.hpp"

namespace mlbs::engine {

// ============================================================================
// placement
// ============================================================================

std::uint64_t Engine::rank_of(const Record& r) const {
  std::span<const std::uint32_t> positions;
  std::uint32_t reads_done = 0;
  if (schedule_.kind == Schedule::Kind::explicit_order) {
    if (auto it = schedule_pos_.find(r.id); it != schedule_pos_.end()) positions = it->second;
    const auto& consumed = catalog_.store(r.store).consumed;
    if (auto c = consumed.find(r.id); c != consumed.end()) reads_done = c->second;
  }
  return policies::next_use_rank(r, schedule_.kind, positions, reads_done);
}

policies::Coming Engine::coming_records() {
  policies::Coming coming{{}, last_write_bytes_};
  if (!last_write_bytes_) return coming;  // reads began
  const bool counted = schedule_.kind == Schedule::Kind::lifo && schedule_.expected_records;
  // An order naming no ids says nothing of the writes to come: room is kept
  // for the next, as without an order.
  coming.writes_done =
      counted || (schedule_.kind == Schedule::Kind::explicit_order && !schedule_pos_.empty());
  for (std::uint32_t s = 0; s < catalog_.store_count(); ++s) {
    const StoreState& st = catalog_.store(s);
    if (!st.open) continue;
    if (counted) {
      // Read before every record written: they claim DRAM and the fast
      // tiers first, so those written go where they will end.
      const auto held = static_cast<std::uint64_t>(std::ranges::distance(catalog_.records_in(s)));
      coming.ranks.resize(coming.ranks.size() + policies::records_to_come(schedule_.expected_records, held, true), 0);
      if (held + st.pending.size() < schedule_.expected_records) coming.writes_done = false;
    } else if (schedule_.kind == Schedule::Kind::explicit_order) {
      // The order names them: each at its first read. Ids are taken to be
      // written in increasing order, so the smallest not written yet is the
      // next write when none is in progress (its room is dram_limit's
      // headroom, as a write in progress has).
      const auto written = [&](std::uint64_t id) {
        return st.pending.contains(id) || st.consumed.contains(id) || catalog_.find(s, id) != nullptr;
      };
      const std::size_t first = coming.ranks.size();
      std::uint64_t next = std::numeric_limits<std::uint64_t>::max(), next_rank = 0;
      for (const auto& [id, positions] : schedule_pos_) {
        if (written(id)) continue;
        coming.writes_done = false;
        coming.ranks.push_back(1 + positions.front());
        if (id < next) {
          next = id;
          next_rank = coming.ranks.back();
        }
      }
      if (st.pending.empty() && coming.ranks.size() > first)  // one rank per id: the next write's is unique
        coming.ranks.erase(std::find(coming.ranks.begin() + std::ptrdiff_t(first), coming.ranks.end(), next_rank));
    }
  }
  std::sort(coming.ranks.begin(), coming.ranks.end());
  return coming;
}

void Engine::refresh_placement() {
  if (!ranking_dirty_) return;
  ranking_dirty_ = false;
  readers_changed();
  const bool retention = cfg_.reader_retention == ReaderRetention::until_read;
  // The last pass's order: records whose rank is unchanged stay in order, the
  // rest (a read's record, new ones) are sorted and merged back in.
  std::vector<Record*>& order = catalog_.ranking();
  moved_.clear();
  std::size_t kept = 0;
  for (Record* r : order) {
    if (!r) continue;  // left the catalog since
    // Reader retention: kept until a reader's acknowledgement shows in the
    // store's live catalog (seen at the next planning pass).
    const auto& live = catalog_.store(r->store).live;
    r->for_readers = retention && live && !live->read_by_reader(r->id, r->gen);
    r->watched = catalog_.store(r->store).watched;
    if (const std::uint64_t rank = rank_of(*r); rank != r->rank) {
      r->rank = rank;
      moved_.push_back(r);
    } else {
      order[kept++] = r;
    }
  }
  policies::merge_by_rank(order, kept, moved_, ranked_);
  ranked_.assign(order.begin(), order.end());

  policies::Limits limits;
  limits.persistent = persistent();
  limits.moves_up = last_write_bytes_ == 0;
  policies::Coming coming = coming_records();
  limits.file_bytes.assign(tiers_.size(), 0);
  limits.file_rates.assign(tiers_.size(), 0.0);
  for (int t = 1; t <= last(); ++t) {
    const Tier& d = cfg_.tiers[t];
    // Configured rates only: two tiers on one device measure as two, and
    // spreading over them would buy no parallel bandwidth.
    limits.file_rates[t] = static_cast<double>(d.bandwidth_bytes_per_s);
    std::uint64_t& cap = limits.file_bytes[t];
    cap = policies::file_limit(d.capacity_bytes, d.high_water, persistent());
    TierState& ts = tiers_[t];
    if (ts.full_latched) cap = std::max<std::uint64_t>(1, ts.backend->used());
    if (ts.node) {
      // This rank's fair share of the node's budget, and no more than the
      // node has left: what other ranks hold is not ours to place into.
      ts.quota_version = ts.node->version();
      ts.node_free_seen = ts.node->node_free();
      ts.quota_limit = ts.node->limit();
      cap = std::max<std::uint64_t>(1, std::min(ts.quota_limit, ts.backend->used() + ts.node_free_seen));
    }
  }
  const policies::WriteState writes{.kind = schedule_.kind,
                                    .counted = schedule_.expected_records != 0,
                                    .budget = mem_->capacity() - lent_bytes_,  // lent slots are no record's room
                                    .pending_bytes = pending_bytes_,
                                    .last_write_bytes = last_write_bytes_,
                                    .bursts = bursts_,
                                    .copy_ahead = cfg_.copy_ahead,
                                    .writing_s = last_write_bytes_ ? 1e-9 * double(elapsed_ns(writes_began_)) : 0.0,
                                    .write_waits = slot_waiters_ > 0};
  policies::limits_for_writes(writes, ranked_, limits, coming);
  if (limits.bottleneck_first && schedule_.expected_records) {  // fifo:N
    std::uint64_t to_come = 0;
    for (std::uint32_t s = 0; s < catalog_.store_count(); ++s) {
      if (!catalog_.store(s).open) continue;
      const auto held = static_cast<std::uint64_t>(std::ranges::distance(catalog_.records_in(s)));
      to_come += policies::bytes_to_come(schedule_.expected_records, held, last_write_bytes_);
    }
    limits.to_come_bytes = to_come;
  }
  // Records only in DRAM that their store's codec will encode on the way
  // down are planned at the share its frames took lately (codec/share.hpp).
  const bool codec_wanted = codec::wanted(cfg_.codec_when, need_);
  for (Record* r : ranked_) {
    const StoreState& st = catalog_.store(r->store);
    const bool encodes = st.codec && codec_wanted && codec::should_try(st.bypass) && r->copies == bit(0);
    r->expect = encodes ? std::max(codec::planned_bytes(st.share, r->size), r->took) : 0;
  }
  policies::place_records(ranked_, limits, coming);
  // Shared tiers: publish what this rank would keep there if it had the room
  // (everything placement sends below DRAM to that tier or further down), so
  // the node's ranks divide the budget by what each needs.
  for (int t = 1; t < last(); ++t) {
    TierState& ts = tiers_[t];
    if (!ts.node) continue;
    std::uint64_t demand = 0;
    for (const Record* r : ranked_)
      if (!r->want_mem && (r->dir_target >= t || r->dir_target < 0)) demand += r->plan_bytes();
    if (demand != ts.demand) {
      ts.demand = demand;
      ts.node->publish_demand(demand);
      ts.quota_version = ts.node->version();
      // Our own new demand moves our share: place again with it (the demand
      // does not depend on the share, so the next pass settles).
      if (ts.node->limit() != ts.quota_limit) {
        ranking_dirty_ = true;
        ++version_;  // helpers plan again before they rest
      }
    }
  }

  // Water-mark hysteresis over the dirty bytes of each tier above the last.
  const std::vector<std::uint64_t> dirty = policies::dirty_bytes(ranked_, last() + 1, persistent());
  for (int t = 0; t < last(); ++t) {
    const Tier& d = cfg_.tiers[t];
    const std::uint64_t cap = t == 0 ? mem_->capacity() : d.capacity_bytes;
    tiers_[t].wb_active = policies::write_behind_active(tiers_[t].wb_active, dirty[t], cap, d.high_water, d.low_water);
  }
}

bool Engine::readers_changed() {
  bool changed = false;
  for (StoreState& s : catalog_.stores()) {
    const bool now = s.live && s.live->readers() > 0;
    changed |= std::exchange(s.watched, now) != now;
  }
  return changed;
}

std::optional<std::chrono::milliseconds> Engine::reader_check_interval() const {
  // Only a known schedule keeps records out of the file tiers' reach (an
  // unknown one writes behind anyway), and only a live catalog has readers.
  if (!cfg_.live_catalog || schedule_.kind == Schedule::Kind::unknown) return std::nullopt;
  for (const StoreState& s : catalog_.stores())
    if (s.live && !s.watched) return std::chrono::milliseconds(100);
  return std::nullopt;
}

policies::View Engine::view() {
  tier_views_.resize(tiers_.size());
  for (int t = 0; t <= last(); ++t)
    tier_views_[t] = {tier_free(t), tier_capacity(t), tiers_[t].full_latched, tiers_[t].wb_active,
                      tiers_[t].copies_in_flight, tiers_[t].fetches_in_flight, tiers_[t].arrivals_in_flight};
  // New writes push the furthest records down unless a hint of the record
  // count let placement put the records written where they will end.
  const bool demotions = cfg_.copy_ahead && policies::newest_first(schedule_.kind, schedule_.expected_records != 0);
  const bool prefetching = schedule_.kind != Schedule::Kind::unknown;
  return {ranked_, tier_views_, persistent(), prefetching, flush_horizon_, last_write_bytes_ > 0,
          demotions, slot_waiters_ > 0};
}

void Engine::apply(const std::vector<policies::Drop>& drops) {
  for (const policies::Drop& d : drops) drop_copy(*ranked_[d.record], d.tier);
}

bool Engine::make_dram_room(std::size_t bytes, policies::Wishes wishes) {
  auto drops = policies::dram_room(view(), bytes, ranked_.size(), wishes);
  if (!drops) return false;
  apply(*drops);
  return mem_->fits(bytes);
}

bool Engine::read_again(Record& r, int t) {
  if (r.copies != bit(t) || (r.doubted & bit(t))) return false;
  r.doubted |= bit(t);
  ++counters_.rereads;
  return true;
}

void Engine::drop_copy(Record& r, int t) {
  r.copies &= ~bit(t);
  r.doubted &= ~bit(t);
  note(r, t, -1);
  publish(r);
  if (t == 0) {
    mem_->release_slot(std::move(r.slot));
  } else {
    give(t, r.file_bytes());
    // The frame goes with the last file copy: a record written down again is encoded again.
    if (!(r.copies & ~bit(0))) r.stored = r.frame_checksum = 0;
    Op rm;
    rm.kind = Op::Kind::remove;
    rm.tier = t;
    StoreState& st = catalog_.store(r.store);
    rm.space = space_for(st, t);
    rm.store_name = st.name;
    rm.id = r.id;
    rm.gen = r.gen;
    if (persistent() && t == last() && r.journaled && st.journal) {
      rm.journal = st.journal;
      ++st.journal_erases;
    }
    removals_.push_back(std::move(rm));
    removal_cv_.notify_one();  // the remover runs it beside this caller's work and the helpers'
  }
  // A slot freed in DRAM may allow a prefetch: whoever dropped it plans or
  // touch()es next, which looks.
  ++version_;
  state_cv_.notify_all();
}

void Engine::retire(Record& r) {
  if (!r.busy && r.pins == 0) {
    erase_record(r);
    return;
  }
  // A helper is copying it or a reader copies out of its slot: take it out
  // of the catalog now (its id is free for a new write) and let the last
  // user finish it. Nobody reads what a copy of it makes: the copy stops.
  catalog_.retire(r);
  if (r.busy) stop_copy_of(r);
  publish(r);
  touch();
}

void Engine::settle(Record& r) {
  if (r.retired && !r.busy && r.pins == 0) erase_record(r);
}

void Engine::erase_record(Record& r) {
  for (int t = 0; t <= last(); ++t)
    if (r.copies & bit(t)) drop_copy(r, t);
  publish(r, catalog::RecordState::erased);
  catalog_.forget(r);
  touch();
}

std::optional<Engine::Op> Engine::plan() {
  if (stopping_) return std::nullopt;
  for (;;) {
    if (shared_quota_moved()) ranking_dirty_ = true;
    refresh_placement();
    policies::Notes notes;
    std::optional<policies::Decision> d = policies::next(view(), notes);
    for (std::size_t t = 0; t < notes.stalls.size(); ++t) tiers_[t].stats.stalls += notes.stalls[t];
    if (!d) {
      // A shared tier's free room is read live by the view but was planned
      // with as it stood before: another rank's take in between can stall a
      // record placed there. Rest only on a pass that saw one node state;
      // another rank's take wakes no one here (only demands are announced).
      if (shared_quota_moved()) continue;
      return std::nullopt;
    }
    apply(d->drops);
    if (d->purpose == policies::Purpose::drop_strays) continue;  // nothing to copy: plan on
    return copy_op(*ranked_[d->record], d->src, d->dst, d->purpose);
  }
}

std::optional<Engine::Op> Engine::copy_op(Record& r, int src, int dst, policies::Purpose why) {
  // A record's file copies are one frame: another is copied from one of them,
  // not made again from DRAM (where a lossy codec's decoding may sit).
  if (src == 0 && dst > 0 && r.stored) src = fastest_copy(r, 0);
  Op op;
  op.rec = &r;
  op.src = src;
  op.dst = dst;
  op.persist = persistent() && dst == last();
  // File tiers hold one copy per record in scratch mode: moving between
  // them drops the source. DRAM copies and last-tier copies stay.
  // A copy ahead keeps its source: it is the second copy placement lets go of later.
  op.move = src > 0 && dst > 0 && !(persistent() && src == last()) && why != policies::Purpose::copy_ahead;
  op.why = why;
  op.demand = why == policies::Purpose::demand_fetch;
  op.prefetch = why == policies::Purpose::prefetch_dram || why == policies::Purpose::prefetch_file;
  StoreState& st = catalog_.store(r.store);
  op.store_name = st.name;
  if (src > 0) op.space = space_for(st, src);
  if (dst > 0) op.dst_space = space_for(st, dst);
  // The same file name may still be due for removal (the record left this
  // tier a moment ago): wait for that removal, or it would delete the copy.
  if (dst > 0 && removal_pending(dst, op.dst_space, r.id, r.gen)) return std::nullopt;
  if (op.persist) op.journal = st.journal;
  if (dst == 0) {
    auto block = mem_->allocate_slot(r.size);
    if (!block) return std::nullopt;
    op.block = std::move(*block);
  } else {
    // Room for the record as it is stored, or as its frame is expected to be
    // (a frame made on the way gives back what it saved, or takes the rest).
    const std::uint64_t room = r.plan_bytes();
    if (!take(dst, room)) return std::nullopt;
    op.reserved = room;
    if (src == 0 && st.codec && !(r.copies & ~bit(0))) {  // its first file copy: the frame is made now
      if (!codec::wanted(cfg_.codec_when, need_))
        op.unneeded = true;
      else if (codec::should_try(st.bypass))
        op.codec = st.codec;
      else
        op.bypassed = true;
    }
  }
  // A record only DRAM holds is arriving at `dst` from now on: spreading
  // counts that tier's work with it (PlacementItem::arriving), so the next
  // decision, another helper's, plans again (as the simulator does before
  // each): with the last pass's placement two drains went to one tier.
  if (dst > 0 && r.copies == bit(0)) ranking_dirty_ = true;
  r.busy = true;
  r.copying_on = bit(src) | bit(dst);
  if (why == policies::Purpose::copy_ahead) r.ahead = dst;
  if (why == policies::Purpose::stage) r.staged = dst;
  for (int t : {src, dst})
    if (t > 0) ++tiers_[t].copies_in_flight;
  if (src > 0 && dst < src) ++tiers_[src].fetches_in_flight;
  if (dst > 0) ++tiers_[dst].arrivals_in_flight;
  publish(r);
  return op;
}

}  // namespace mlbs::engine

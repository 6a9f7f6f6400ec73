#include "sim/sim.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "catalog/records.hpp"
#include "engine/policies/pass.hpp"
#include "engine/policies/placement.hpp"
#include "engine/policies/policies.hpp"
#include "engine/policies/ranking.hpp"
#include "mlbs/detail/block.hpp"
#include "mlbs/errors.hpp"
#include "sim/bound.hpp"

namespace mlbs::sim {

namespace pol = engine::policies;
using catalog::bit;
using catalog::Record;

std::vector<std::uint64_t> read_order(const Workload& w) {
  if (w.schedule == Schedule::Kind::explicit_order) return w.order;
  std::vector<std::uint64_t> order(w.records);
  for (std::uint32_t i = 0; i < w.records; ++i) order[i] = w.schedule == Schedule::Kind::lifo ? w.records - 1 - i : i;
  return order;
}

Workload split_records(Workload w, std::uint32_t parts) {
  if (parts == 0 || w.record_bytes % parts != 0)
    throw InvalidArgumentError(EINVAL,
                               fmt::format("{} parts do not divide a record of {} bytes", parts, w.record_bytes), {});
  if (parts == 1) return w;
  std::vector<std::uint64_t> order;
  order.reserve(w.order.size() * parts);
  for (std::uint64_t id : w.order)
    for (std::uint32_t j = 0; j < parts; ++j) order.push_back(id * parts + j);
  w.order = std::move(order);
  w.record_bytes /= parts;
  w.records *= parts;
  w.parts *= parts;
  return w;
}

Workload store_parts(Workload w, std::uint32_t parts) {
  w = split_records(std::move(w), parts);
  w.store_parts = w.parts > 1;
  return w;
}

std::vector<std::uint64_t> revolve_like_order(std::uint32_t n, std::uint32_t group) {
  std::vector<std::uint64_t> order;
  if (n == 0 || group == 0) return order;
  const std::int64_t g = group, last = std::int64_t(n) - 1;
  for (std::int64_t h = last / g * g; h >= 0; h -= g) {
    order.push_back(std::uint64_t(h));
    for (std::int64_t k = std::min(last, h + g - 1); k > h; --k) order.push_back(std::uint64_t(k));
    order.push_back(std::uint64_t(h));
  }
  return order;
}

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

/// The application's next call, flattened: compute, write, read, flush.
struct Step {
  enum class Kind { compute, write, read, flush } kind;
  double seconds = 0;
  std::uint64_t id = 0;
};

/// One helper's copy in progress.
struct Transfer {
  Record* rec = nullptr;
  int src = -1, dst = -1;
  bool move = false;
  pol::Purpose why = pol::Purpose::demand_fetch;
  double started = 0;
  double moving_from = 0;  ///< bytes move from then on (after the latency)
  double remaining = 0;    ///< bytes
};

class Model {
 public:
  Model(const Machine& m, const Workload& w) : m_(m), w_(w), order_(read_order(w)) {
    check();
    used_.assign(tiers(), 0);
    wb_.assign(tiers(), false);
    res_.tiers.resize(tiers());
    // The compute is per step: before a step's first part goes in, after its last comes back.
    for (std::uint32_t i = 0; i < w.records; ++i) {
      if (i % w.parts == 0) steps_.push_back({Step::Kind::compute, w.compute_per_write_s, 0});
      steps_.push_back({Step::Kind::write, 0, i});
    }
    if (m.persistent) steps_.push_back({Step::Kind::flush, 0, 0});
    if (w.compute_at_turn_s > 0) steps_.push_back({Step::Kind::compute, w.compute_at_turn_s, 0});
    for (std::size_t k = 0; k < order_.size(); ++k) {
      positions_[order_[k]].push_back(static_cast<std::uint32_t>(k));
      steps_.push_back({Step::Kind::read, 0, order_[k]});
      if ((k + 1) % w.parts == 0 || k + 1 == order_.size())
        steps_.push_back({Step::Kind::compute, w.compute_per_read_s, 0});
    }
  }

  Result run() {
    start_step();
    for (;;) {
      progress_app();
      plan_helpers();
      if (step_ >= steps_.size() && transfers_.empty()) break;
      if (!advance()) {
        if (waiting_ == Waiting::read) {
          read_direct();
          continue;
        }
        if (step_ >= steps_.size()) break;  // helpers idle, application done
        throw CapacityError(ENOSPC, "the model deadlocked: no tier can make room for the next write",
                            ErrorContext{"sim", steps_[step_].id, "tier 0 (memory)"});
      }
    }
    res_.wall_s = now_;
    Hierarchy h{m_.dram_bytes, {}, m_.persistent};
    for (const FileTier& t : m_.tiers) h.file_tiers.push_back({t.capacity_bytes, t.bandwidth_bytes_per_s});
    // With a codec the bytes capacity forces below DRAM are stored at 1/ratio
    // of their size (the same bound over what is stored; codec time aside).
    const auto stored = [&](std::uint64_t raw) {
      const std::uint64_t above = std::min(raw, m_.dram_bytes);
      return above + std::uint64_t(double(raw - above) / m_.codec_ratio);
    };
    const std::uint64_t written = stored(res_.bytes_written), read = stored(res_.bytes_read);
    res_.least_io_s = least_io_s(h, written, read);
    res_.io_span_s = io_span_s(h, res_.least_io_s, edges(), peak_io_s(h, written, read));
    res_.bound_s = physical_bound_s(res_.compute_s, res_.copy_s - parts_copy_s_, res_.io_span_s);
    return res_;
  }

 private:
  enum class Waiting { none, compute, copy, write, read, flush };

  /// The compute no tier can overlap: the first write's, and the last read's
  /// when the schedule reads every record back; and the turn's, through
  /// which the last tier may have to idle (every write comes first here).
  ComputeEdges edges() const {
    if (w_.records == 0) return {};
    std::vector<bool> read(w_.records, false);
    for (std::uint64_t id : order_) read[id] = true;
    const bool all = std::find(read.begin(), read.end(), false) == read.end();
    return {w_.compute_per_write_s, all && !order_.empty() ? w_.compute_per_read_s : 0.0,
            order_.empty() ? 0.0 : w_.compute_at_turn_s};
  }

  int tiers() const { return static_cast<int>(m_.tiers.size()) + 1; }
  int last() const { return tiers() - 1; }
  const FileTier& file(int t) const { return m_.tiers[std::size_t(t - 1)]; }
  std::uint64_t slot_bytes(const Record& r) const { return detail::round_up_block(r.size); }

  void check() const {
    if (m_.tiers.empty()) throw InvalidArgumentError(EINVAL, "the model needs at least one file tier", {});
    for (std::size_t t = 0; t < m_.tiers.size(); ++t)
      if (!(m_.tiers[t].bandwidth_bytes_per_s > 0))
        throw InvalidArgumentError(EINVAL, "a file tier's bandwidth must be > 0",
                                   ErrorContext{"", std::nullopt, fmt::format("tier {}", t + 1)});
    if (detail::round_up_block(w_.record_bytes) > m_.dram_bytes)
      throw InvalidArgumentError(EINVAL, "a record's slot is larger than the DRAM budget", {"", std::nullopt, "tier 0 (memory)"});
    if (m_.helpers == 0) throw InvalidArgumentError(EINVAL, "the model needs at least one helper", {});
    if (w_.parts == 0 || w_.records % w_.parts != 0)
      throw InvalidArgumentError(EINVAL, "the records written are not a whole number of steps of `parts` records", {});
    if (!(m_.codec_ratio >= 1.0))
      throw InvalidArgumentError(EINVAL, "a codec's ratio (raw / stored bytes) must be >= 1", {});
    for (std::uint64_t id : order_)
      if (id >= w_.records)
        throw InvalidArgumentError(EINVAL, "the read order names a record that is never written", {"", id, ""});
  }

  // --- the application ---

  void start_step() {
    waiting_ = Waiting::none;
    if (step_ >= steps_.size()) return;
    const Step& s = steps_[step_];
    switch (s.kind) {
      case Step::Kind::compute:
        res_.compute_s += s.seconds;
        busy_until(now_ + s.seconds, Waiting::compute);
        return;
      case Step::Kind::write:
        pending_ = detail::round_up_block(w_.record_bytes);
        last_write_ = pending_;
        step_lead_ = bursts_.start(pending_, now_ - last_write_end_, last_copy_s_);
        if (writes_began_s_ < 0) writes_began_s_ = now_;
        waiting_ = Waiting::write;
        blocked_since_ = now_;
        return;
      case Step::Kind::read:
        if (last_write_) turn();
        waiting_ = Waiting::read;
        blocked_since_ = now_;
        if (Record* r = find(s.id); r && !(r->copies & bit(0))) r->demand = true;
        return;
      case Step::Kind::flush:
        flush_horizon_ = gen_;
        waiting_ = Waiting::flush;
        blocked_since_ = now_;
        return;
    }
  }

  /// lifo:N's records still to come (pol::records_to_come), as the engine
  /// counts them: per store, so a store in parts counts each part store's.
  std::uint64_t records_to_come() const {
    if (!w_.store_parts) return pol::records_to_come(w_.records, records_.size(), last_write_ > 0);
    std::vector<std::uint64_t> held(w_.parts, 0);
    for (const auto& r : records_) ++held[r->id % w_.parts];
    std::uint64_t n = 0;
    for (std::uint64_t h : held) n += pol::records_to_come(w_.records / w_.parts, h, last_write_ > 0);
    return n;
  }

  void busy_until(double t, Waiting what) {
    waiting_ = what;
    app_until_ = t;
  }

  void next_step() {
    ++step_;
    start_step();
  }

  /// Carries the application on as far as it goes at this instant.
  void progress_app() {
    for (;;) {
      const std::size_t before = step_;
      switch (waiting_) {
        case Waiting::none: return;
        case Waiting::compute:
        case Waiting::copy:
          if (app_until_ > now_) return;
          if (waiting_ == Waiting::copy && copying_) finish_copy();
          next_step();
          break;
        case Waiting::write: try_write(); break;
        case Waiting::read: try_read(); break;
        case Waiting::flush:
          if (std::any_of(records_.begin(), records_.end(),
                          [&](const auto& r) { return !(r->copies & bit(last())); }))
            return;
          res_.flush_s += now_ - blocked_since_;
          blocked("flush");
          next_step();
          break;
      }
      if (step_ == before && waiting_ != Waiting::none && waiting_ != Waiting::compute && waiting_ != Waiting::copy)
        return;
    }
  }

  void blocked(const char* what) {
    if (m_.timeline && now_ > blocked_since_)
      res_.timeline.push_back({blocked_since_, now_, -1, -1, steps_[step_].id, what});
  }

  void try_write() {
    refresh();
    const pol::View v = view();
    auto drops = pol::dram_room(v, pending_, ranked_.size());
    if (!drops) return;
    apply(*drops);
    if (dram_free() < pending_) return;
    res_.write_blocked_s += now_ - blocked_since_;
    blocked("write blocked");
    dram_used_ += pending_;
    peak(0);
    copying_ = std::make_unique<Record>();
    copying_->id = steps_[step_].id;
    copying_->size = w_.record_bytes;
    const double t = double(w_.record_bytes) / m_.copy_bytes_per_s;
    res_.copy_s += t;
    busy_until(now_ + t, Waiting::copy);
  }

  void finish_copy() {
    std::unique_ptr<Record> r = std::move(copying_);
    r->gen = ++gen_;
    r->step_lead = step_lead_;
    r->copies = bit(0);
    r->last_use = ++tick_;
    pending_ = 0;
    last_write_end_ = now_;
    last_copy_s_ = double(r->size) / m_.copy_bytes_per_s;
    res_.bytes_written += r->size;
    res_.tiers[0].bytes_in += r->size;
    if (gen_ == w_.records) res_.write_phase_s = now_;
    by_id_[r->id] = r.get();
    records_.push_back(std::move(r));
  }

  void try_read() {
    Record* r = find(steps_[step_].id);
    if (!r) throw InvalidArgumentError(EINVAL, "the read order reads a released record", {"", steps_[step_].id, ""});
    if (!(r->copies & bit(0))) {
      r->demand = true;
      return;
    }
    deliver(*r, 0.0);
  }

  /// The read returns: from DRAM (a slot handed over, or copied out when the
  /// record is read again later or a helper still copies it), or after
  /// `direct_s` of reading it from a file tier.
  void deliver(Record& r, double direct_s) {
    res_.read_blocked_s += now_ - blocked_since_;
    blocked("read blocked");
    r.demand = false;
    r.consumed = true;
    r.last_use = ++tick_;
    const std::uint32_t done = ++consumed_[r.id];
    const auto& pos = positions_[r.id];
    const bool again = w_.schedule == Schedule::Kind::explicit_order && done < pos.size();
    res_.bytes_read += r.size;
    double t = direct_s;
    if (r.copies & bit(0)) {
      res_.tiers[0].bytes_out += r.size;
      if (again || r.busy || w_.store_parts) {  // copied out of the slot, not handed over
        const double copy = double(r.size) / m_.copy_bytes_per_s;
        t += copy;
        res_.copy_s += copy;
        // A store's parts are copied out by its own choice: no bound forgives that.
        if (!again && !r.busy) parts_copy_s_ += copy;
      }
    }
    if (!again && !m_.persistent) release(r);
    busy_until(now_ + t, Waiting::compute);
  }

  /// Helpers idle and the record not in DRAM: no room can be made there, so
  /// the read comes from its fastest file copy (as Engine::read_direct).
  void read_direct() {
    Record* r = find(steps_[step_].id);
    const int src = pol::fastest_copy(*r, last());
    if (src < 0) throw InvalidArgumentError(EINVAL, "the model lost a record", {"sim", r->id, ""});
    const double io = file(src).latency_s + double(r->file_bytes()) / file(src).bandwidth_bytes_per_s;
    res_.tiers[std::size_t(src)].bytes_out += r->file_bytes();
    res_.tiers[std::size_t(src)].busy_s += io;
    deliver(*r, io + (r->stored ? codec_s(r->size, m_.decode_bytes_per_s) : 0.0));
  }

  /// As Engine::turn(): the first read ends the writes; placement plans
  /// without their headroom, and the copies in flight only they wanted stop
  /// (pol::stops_at_turn()).
  void turn() {
    last_write_ = 0;
    refresh();
    for (std::size_t i = 0; i < transfers_.size();) {
      const Transfer& x = transfers_[i];
      if (pol::stops_at_turn(x.why, x.src, *x.rec, m_.persistent))
        stop(i);
      else
        ++i;
    }
  }

  /// Transfer i stops: its room is given back, the record keeps the copies it had.
  void stop(std::size_t i) {
    const Transfer x = transfers_[i];
    transfers_.erase(transfers_.begin() + std::ptrdiff_t(i));
    if (m_.timeline)
      res_.timeline.push_back({x.started, now_, x.src, x.dst, x.rec->id, std::string(pol::to_string(x.why)) + ", cancelled"});
    if (x.dst > 0)
      used_[std::size_t(x.dst)] -= x.rec->file_bytes();
    else
      dram_used_ -= slot_bytes(*x.rec);
    x.rec->busy = false;
    x.rec->copying_on = 0;
    x.rec->ahead = -1;
    if (x.rec->retired) erase(*x.rec);
  }

  /// As Engine::retire(): a released record's copy in flight stops (nobody
  /// reads what it makes).
  void release(Record& r) {
    if (r.busy) {
      r.retired = true;
      by_id_.erase(r.id);
      for (std::size_t i = 0; i < transfers_.size(); ++i)
        if (transfers_[i].rec == &r) return stop(i);  // erases r
      return;
    }
    erase(r);
  }

  void erase(Record& r) {
    for (int t = 0; t <= last(); ++t)
      if (r.copies & bit(t)) drop(r, t);
    if (auto it = by_id_.find(r.id); it != by_id_.end() && it->second == &r) by_id_.erase(it);
    std::erase_if(records_, [&](const auto& p) { return p.get() == &r; });
  }

  Record* find(std::uint64_t id) {
    auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : it->second;
  }

  // --- planning: the engine's passes and policies over the model's catalog ---

  void refresh() {
    ranked_.clear();
    for (auto& p : records_) {
      Record& r = *p;
      if (r.retired) continue;
      std::span<const std::uint32_t> pos;
      if (auto it = positions_.find(r.id); it != positions_.end()) pos = it->second;
      r.rank = pol::next_use_rank(r, w_.schedule, pos, consumed_[r.id]);
      ranked_.push_back(&r);
    }
    pol::order_by_rank(ranked_);
    pol::Limits limits;
    limits.file_bytes.assign(std::size_t(tiers()), 0);
    limits.persistent = m_.persistent;
    limits.moves_up = last_write_ == 0;
    limits.file_rates.assign(std::size_t(tiers()), 0.0);
    for (int t = 1; t <= last(); ++t) {
      limits.file_bytes[std::size_t(t)] = pol::file_limit(file(t).capacity_bytes, file(t).high_water, m_.persistent);
      limits.file_rates[std::size_t(t)] = file(t).bandwidth_bytes_per_s;
    }
    pol::Coming coming{{}, last_write_};
    const bool counted = w_.hint_records && w_.schedule == Schedule::Kind::lifo;
    if (counted) coming.ranks.assign(records_to_come(), 0);
    if (w_.schedule == Schedule::Kind::explicit_order && last_write_ > 0) {
      // As Engine::coming_records(): the ids the order names after the next
      // write (in progress or not: ids are written in increasing order here).
      for (std::uint64_t id = gen_ + 1; id < w_.records; ++id)
        if (auto it = positions_.find(id); it != positions_.end()) coming.ranks.push_back(1 + it->second.front());
      std::sort(coming.ranks.begin(), coming.ranks.end());
    }
    // As the engine: none to come once every record counted, or every id
    // the order names, is written or being written.
    const std::uint64_t started = gen_ + (pending_ ? 1 : 0);
    if (last_write_ > 0 && counted) coming.writes_done = started >= w_.records;
    if (last_write_ > 0 && w_.schedule == Schedule::Kind::explicit_order)
      coming.writes_done = std::ranges::none_of(positions_, [&](const auto& p) { return p.first >= started; });
    const pol::WriteState writes{.kind = w_.schedule,
                                 .counted = w_.hint_records,
                                 .budget = m_.dram_bytes,
                                 .pending_bytes = pending_,
                                 .last_write_bytes = last_write_,
                                 .bursts = bursts_,
                                 .copy_ahead = m_.copy_ahead,
                                 .writing_s = last_write_ ? now_ - writes_began_s_ : 0.0,
                                 .write_waits = waiting_ == Waiting::write};
    pol::limits_for_writes(writes, ranked_, limits, coming);
    if (limits.bottleneck_first && w_.hint_records)  // fifo:N
      limits.to_come_bytes = pol::bytes_to_come(w_.records, records_.size(), last_write_);
    // As the engine: a record not encoded yet is planned at the frame it will make.
    for (Record* r : ranked_)
      r->expect = m_.codec_ratio > 1.0 && r->copies == bit(0)
                      ? std::max<std::uint64_t>(1, std::uint64_t(double(r->size) / m_.codec_ratio))
                      : 0;
    pol::place_records(ranked_, limits, coming);
    const auto dirty = pol::dirty_bytes(ranked_, tiers(), m_.persistent);
    for (int t = 0; t < last(); ++t) {
      // DRAM writes behind continuously by default (Tier::memory's marks 0/0).
      const double high = t == 0 ? 0.0 : file(t).high_water;
      const std::uint64_t cap = t == 0 ? m_.dram_bytes : file(t).capacity_bytes;
      wb_[std::size_t(t)] = pol::write_behind_active(wb_[std::size_t(t)], dirty[std::size_t(t)], cap, high, high);
    }
  }

  std::uint64_t dram_free() const { return m_.dram_bytes - std::min(m_.dram_bytes, dram_used_); }
  std::uint64_t file_free(int t) const {
    const std::uint64_t cap = file(t).capacity_bytes;
    return cap ? cap - std::min(cap, used_[std::size_t(t)]) : std::numeric_limits<std::uint64_t>::max();
  }

  pol::View view() {
    views_.assign(std::size_t(tiers()), {});
    views_[0].free_bytes = dram_free();
    views_[0].capacity_bytes = m_.dram_bytes;
    views_[0].write_behind = wb_[0];
    for (int t = 1; t <= last(); ++t)
      views_[std::size_t(t)] = {file_free(t), file(t).capacity_bytes, false, wb_[std::size_t(t)]};
    for (const Transfer& x : transfers_) {
      for (int t : {x.src, x.dst})
        if (t > 0) ++views_[std::size_t(t)].copies_in_flight;
      if (x.src > 0 && x.dst < x.src) ++views_[std::size_t(x.src)].fetches_in_flight;
      if (x.dst > 0) ++views_[std::size_t(x.dst)].arrivals_in_flight;
    }
    // As Engine::view(): new writes push the furthest records down (LIFO
    // without the record-count hint), so slower tiers may copy them ahead.
    const bool copy_ahead = m_.copy_ahead && pol::newest_first(w_.schedule, w_.hint_records);
    const bool write_waits = waiting_ == Waiting::write;  // planning runs after the write tried for its slot
    return {ranked_, views_, m_.persistent, true, flush_horizon_, last_write_ > 0, copy_ahead, write_waits};
  }

  void apply(const std::vector<pol::Drop>& drops) {
    for (const pol::Drop& d : drops) drop(*ranked_[d.record], d.tier);
  }

  void drop(Record& r, int t) {
    r.copies &= ~bit(t);
    if (t == 0)
      dram_used_ -= slot_bytes(r);
    else
      used_[std::size_t(t)] -= r.file_bytes();
  }

  static double codec_s(std::uint64_t bytes, double rate) { return rate > 0 ? double(bytes) / rate : 0.0; }

  void peak(int t) {
    const std::uint64_t u = t == 0 ? dram_used_ : used_[std::size_t(t)];
    res_.tiers[std::size_t(t)].peak_used_bytes = std::max(res_.tiers[std::size_t(t)].peak_used_bytes, u);
  }

  void plan_helpers() {
    while (transfers_.size() < m_.helpers) {
      refresh();
      std::optional<pol::Decision> d;
      for (;;) {
        pol::Notes notes;
        d = pol::next(view(), notes);
        if (!d) return;
        apply(d->drops);
        if (d->purpose != pol::Purpose::drop_strays) break;
      }
      Record& r = *ranked_[d->record];
      int src = d->src;
      // As Engine::copy_op: a record's file copies are one frame, made once
      // on its way out of DRAM; another copy comes from a file copy.
      if (src == 0 && d->dst > 0 && r.stored) src = pol::fastest_copy(r, last(), 0);
      const bool encode = src == 0 && d->dst > 0 && m_.codec_ratio > 1.0 && !(r.copies & ~bit(0));
      if (encode) r.stored = std::max<std::uint64_t>(1, std::uint64_t(double(r.size) / m_.codec_ratio));
      if (d->dst == 0) {
        if (dram_free() < slot_bytes(r)) return;  // as Engine::copy_op: plan again after the next event
        dram_used_ += slot_bytes(r);
      } else {
        if (file_free(d->dst) < r.file_bytes()) {
          if (encode) r.stored = 0;
          return;
        }
        used_[std::size_t(d->dst)] += r.file_bytes();
      }
      peak(d->dst);
      r.busy = true;
      r.copying_on = bit(src) | bit(d->dst);
      if (d->purpose == pol::Purpose::copy_ahead) r.ahead = d->dst;
      if (d->purpose == pol::Purpose::stage) r.staged = d->dst;
      const bool framed_up = d->dst == 0 && r.stored;
      const bool move = src > 0 && d->dst > 0 && !(m_.persistent && src == last()) && d->purpose != pol::Purpose::copy_ahead;
      Transfer x{&r, src, d->dst, move,
                 d->purpose, now_, 0, double(d->dst > 0 || src > 0 ? r.file_bytes() : r.size)};
      double lat = 0;
      for (int t : {x.src, x.dst})
        if (t > 0) lat = std::max(lat, file(t).latency_s);
      // The helper encodes before the first byte moves, or decodes after the
      // last (counted before: the helper is busy either way).
      lat += encode ? codec_s(r.size, m_.encode_bytes_per_s) : framed_up ? codec_s(r.size, m_.decode_bytes_per_s) : 0.0;
      x.moving_from = now_ + lat;
      transfers_.push_back(x);
      ++res_.helper_copies;
    }
  }

  void complete(const Transfer& x) {
    Record& r = *x.rec;
    if (m_.timeline) res_.timeline.push_back({x.started, now_, x.src, x.dst, r.id, pol::to_string(x.why)});
    r.busy = false;
    r.copying_on = 0;
    r.ahead = -1;
    r.copies |= bit(x.dst);
    if (x.why == pol::Purpose::copy_ahead && x.src == 0) r.ahead_from_dram = x.dst;
    res_.tiers[std::size_t(x.src)].bytes_out += x.src > 0 ? r.file_bytes() : r.size;
    res_.tiers[std::size_t(x.dst)].bytes_in += x.dst > 0 ? r.file_bytes() : r.size;
    if (x.move) drop(r, x.src);
    if (r.retired) erase(r);
  }

  // --- time ---

  /// Bytes per second each moving transfer gets: max-min fair shares of
  /// the file tiers it uses (progressive filling: every transfer's rate grows
  /// alike until a tier it uses is saturated, which freezes the transfers
  /// through it), so a transfer held back by a slow tier leaves the rest of
  /// a fast one's bandwidth to the others, as a device does.
  std::vector<double> rates(std::vector<unsigned>& users) const {
    users.assign(std::size_t(tiers()), 0);
    const std::size_t n = transfers_.size();
    std::vector<double> rate(n, 0.0);
    std::vector<bool> active(n, false);
    std::vector<double> left(std::size_t(tiers()), 0.0);
    std::vector<unsigned> open(std::size_t(tiers()), 0);
    for (std::size_t i = 0; i < n; ++i) {
      const Transfer& x = transfers_[i];
      if (x.moving_from > now_) continue;
      bool any = false;
      for (int t : {x.src, x.dst})
        if (t > 0) ++users[std::size_t(t)], ++open[std::size_t(t)], any = true;
      if (any)
        active[i] = true;
      else
        rate[i] = m_.copy_bytes_per_s;  // DRAM to DRAM
    }
    for (int t = 1; t <= last(); ++t) left[std::size_t(t)] = file(t).bandwidth_bytes_per_s;
    for (;;) {
      double step = kNever;
      for (int t = 1; t <= last(); ++t)
        if (open[std::size_t(t)]) step = std::min(step, left[std::size_t(t)] / open[std::size_t(t)]);
      if (step == kNever) break;
      for (int t = 1; t <= last(); ++t) left[std::size_t(t)] -= step * open[std::size_t(t)];
      for (std::size_t i = 0; i < n; ++i)
        if (active[i]) rate[i] += step;
      // Freeze the transfers through saturated tiers.
      for (std::size_t i = 0; i < n; ++i) {
        if (!active[i]) continue;
        const Transfer& x = transfers_[i];
        bool saturated = false;
        for (int t : {x.src, x.dst})
          if (t > 0 && left[std::size_t(t)] <= 1e-9 * file(t).bandwidth_bytes_per_s) saturated = true;
        if (!saturated) continue;
        active[i] = false;
        for (int t : {x.src, x.dst})
          if (t > 0) --open[std::size_t(t)];
      }
    }
    return rate;
  }

  /// Moves time to the next event; false if nothing will ever happen.
  bool advance() {
    std::vector<unsigned> users;
    const std::vector<double> rate = rates(users);
    double next = (waiting_ == Waiting::compute || waiting_ == Waiting::copy) ? app_until_ : kNever;
    for (std::size_t i = 0; i < transfers_.size(); ++i) {
      const Transfer& x = transfers_[i];
      next = std::min(next, x.moving_from > now_ ? x.moving_from : now_ + x.remaining / rate[i]);
    }
    if (next == kNever) return false;
    const double dt = next - now_;
    for (int t = 1; t <= last(); ++t)
      if (users[std::size_t(t)]) res_.tiers[std::size_t(t)].busy_s += dt;
    for (std::size_t i = 0; i < transfers_.size(); ++i)
      if (transfers_[i].moving_from <= now_) transfers_[i].remaining -= rate[i] * dt;
    now_ = next;
    // Done within rounding: a transfer whose remaining bytes take < 1 ns.
    std::vector<Transfer> done;
    for (std::size_t i = 0; i < transfers_.size();) {
      const Transfer& x = transfers_[i];
      if (x.moving_from <= now_ && x.remaining <= 1e-9 * std::max(rate[i], 1.0)) {
        done.push_back(x);
        transfers_.erase(transfers_.begin() + std::ptrdiff_t(i));
      } else {
        ++i;
      }
    }
    for (const Transfer& x : done) complete(x);
    return true;
  }

  const Machine& m_;
  const Workload& w_;
  std::vector<std::uint64_t> order_;
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> positions_;
  std::unordered_map<std::uint64_t, std::uint32_t> consumed_;
  std::vector<Step> steps_;
  std::size_t step_ = 0;
  Waiting waiting_ = Waiting::none;
  double app_until_ = 0, blocked_since_ = 0, now_ = 0;
  std::unique_ptr<Record> copying_;  ///< the write being copied into its slot
  std::uint64_t pending_ = 0, last_write_ = 0, gen_ = 0, tick_ = 0, flush_horizon_ = 0;
  bool step_lead_ = false;  // the write in progress began a burst
  pol::WriteBursts bursts_;
  double writes_began_s_ = -1;  ///< the first write's start (WriteState::writing_s); -1 before it
  double last_write_end_ = 0, last_copy_s_ = 0;  ///< the last write's return and its copy's time

  std::vector<std::unique_ptr<Record>> records_;
  double parts_copy_s_ = 0;  ///< reads' copies out of slots that only a store in parts makes (not in the bound)
  std::unordered_map<std::uint64_t, Record*> by_id_;
  std::vector<Record*> ranked_;
  std::vector<pol::TierView> views_;
  std::uint64_t dram_used_ = 0;
  std::vector<std::uint64_t> used_;  ///< per tier: bytes held
  std::vector<bool> wb_;
  std::vector<Transfer> transfers_;
  Result res_;
};

}  // namespace

Result simulate(const Machine& m, const Workload& w) { return Model(m, w).run(); }

}  // namespace mlbs::sim

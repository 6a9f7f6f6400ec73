#include "engine/engine.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "catalog/recovery.hpp"
#include "copy/copy.hpp"
#include "engine/affinity.hpp"
#include "engine/policies/placement.hpp"
#include "engine/policies/policies.hpp"
#include "engine/policies/ranking.hpp"
#include "mlbs/errors.hpp"
#include "mlbs/trace.hpp"
#include "tiers/directory/io_select.hpp"
#include "tiers/registry.hpp"
#include "tiers/transfer.hpp"

namespace mlbs::engine {
namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t ns_between(Clock::time_point from, Clock::time_point to) {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count());
}

std::uint64_t elapsed_ns(Clock::time_point since) { return ns_between(since, Clock::now()); }

/// A time point as trace::now_ns() counts (the steady clock since its epoch),
/// so spans reuse the clock reads the counters already make.
std::uint64_t trace_ns(Clock::time_point t) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

const Config& validated(const Config& cfg) {
  cfg.validate();
  return cfg;
}

void check_store_name(const std::string& name) {
  const bool ok = !name.empty() && name.size() <= 200 && name != "." && name != ".." &&
                  std::all_of(name.begin(), name.end(), [](char c) {
                    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
                           c == '.';
                  });
  if (!ok)
    throw InvalidArgumentError(
        EINVAL, fmt::format("invalid store name '{}': use 1-200 of [A-Za-z0-9._-]", name));
}

/// Distinguishes runtimes of one process that share tier paths.
std::atomic<std::uint64_t> g_runtime_serial{0};

}  // namespace

// ============================================================================
// construction and shutdown
// ============================================================================

Engine::Engine(Config cfg, std::shared_ptr<core::Group> group)
    : cfg_(std::move(cfg)), group_(std::move(group)), pool_(validated(cfg_).tiers[0].capacity_bytes) {
  tiers_.resize(cfg_.tiers.size());
  for (std::size_t t = 0; t < cfg_.tiers.size(); ++t) {
    TierState& ts = tiers_[t];
    ts.stats.kind = cfg_.tiers[t].kind;
    ts.stats.path = cfg_.tiers[t].path;
    ts.stats.capacity_bytes = cfg_.tiers[t].capacity_bytes;
    if (t == 0) continue;
    // Config::page_cache lets every file tier use the page cache; the backend
    // reads its own tier's flag.
    Tier desc = cfg_.tiers[t];
    desc.page_cache = desc.page_cache || cfg_.page_cache;
    if (!desc.layout) desc.layout = tiers::hooks::test_layout().value_or(cfg_.layout);
    ts.backend = tiers::make_backend(static_cast<int>(t), desc, group_.get());
    // The last tier of a persistent runtime holds persistent spaces; a tier
    // that shares one file among spaces (mpiio) picks the file by it.
    ts.backend->probe(static_cast<int>(t) == last() ? cfg_.durability : Durability::scratch);
    // A shared tier above the last one (a node's burst buffer) is one budget
    // for the node's ranks; the last tier's capacity stays per rank.
    if (group_ && desc.shared && desc.capacity_bytes && static_cast<int>(t) < last())
      ts.quota = group_->share(static_cast<int>(t), desc.capacity_bytes);
    auto io = ts.backend->io_path();  // settled by probe(): io_uring or pread, and why
    ts.stats.io_backend = std::move(io.backend);
    ts.stats.io_fallback = std::move(io.fallback);
  }
  if (cfg_.schedule.kind == Schedule::Kind::explicit_order)
    for (std::uint32_t i = 0; i < cfg_.schedule.order.size(); ++i)
      schedule_pos_[cfg_.schedule.order[i]].push_back(i);

  // Helper placement: off the application's cores when it leaves some free
  // (docs/architecture.md, "Threads").
  std::vector<int> cores(cfg_.helper_threads, cfg_.helper_core >= 0 ? cfg_.helper_core : -1);
  if (cfg_.helper_core == -1) {
    const std::vector<int> allowed = allowed_cores();
    cores = auto_helper_cores(allowed, application_threads(allowed), cfg_.helper_threads);
  }
  // Staging for copies between two file tiers: memory use stays bounded by
  // helper_threads * io_chunk_bytes whatever the record size.
  for (unsigned i = 0; i < cfg_.helper_threads; ++i) staging_.push_back(detail::Block::allocate(cfg_.io_chunk_bytes));
  for (unsigned i = 0; i < cfg_.helper_threads; ++i) {
    helpers_.emplace_back([this, i](std::stop_token st) { helper_loop(st, i); });
    if (cores[i] >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cores[i], &set);
      if (int err = pthread_setaffinity_np(helpers_.back().native_handle(), sizeof set, &set)) {
        std::fprintf(stderr, "mlbs: cannot pin helper %u to core %d: %s\n", i, cores[i], std::strerror(err));
        cores[i] = -1;
      }
    }
  }
  counters_.helper_cores = cores;
  // Node-shared tiers: another rank's new demand changes this rank's share;
  // replan then, even if this rank is idle (it may hold bytes it must lend back).
  for (TierState& ts : tiers_)
    if (ts.quota)
      ts.quota->watch([this] {
        Lock lock(mu_);
        if (!stopping_) touch();
      });
}

Engine::~Engine() { shutdown(); }

void Engine::shutdown() noexcept {
  Lock lock(mu_);
  if (stopping_) return;
  // One deadline for everything shutdown may wait on: draining what
  // persistent mode owes the last tier, then the transfers in flight.
  const auto deadline = Clock::now() + std::chrono::milliseconds(cfg_.shutdown_timeout_ms);
  if (persistent()) {
    for (std::uint32_t s = 0; s < stores_.size(); ++s) {
      if (!stores_[s].open) continue;
      try {
        wait_durable(lock, s, std::numeric_limits<std::uint64_t>::max(), deadline);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "mlbs: shutdown could not make store '%s' durable: %s\n",
                     stores_[s].name.c_str(), e.what());
      }
    }
  }
  stopping_ = true;
  for (auto& h : helpers_) h.request_stop();
  work_cv_.notify_all();
  state_cv_.notify_all();
  // Helpers plan nothing new now; wait out what they are moving, then cut
  // short the waits the tiers own (pacing, injected delays) so joining them
  // keeps to the time-out.
  if (!state_cv_.wait_until(lock, deadline, [&] { return inflight_ == 0; })) {
    std::fprintf(stderr, "mlbs: shutdown: %u transfer%s still in flight after %u ms: cancelled\n", inflight_,
                 inflight_ == 1 ? "" : "s", cfg_.shutdown_timeout_ms);
    for (TierState& ts : tiers_)
      if (ts.backend) ts.backend->cancel();
  }
  lock.unlock();
  for (auto& h : helpers_)
    if (h.joinable()) h.join();
  lock.lock();
  // Finish the removals the helpers did not get to, so scratch leaves no files.
  while (!removals_.empty()) {
    Op op = std::move(removals_.front());
    removals_.pop_front();
    try {
      if (op.journal) {  // the erase is durable before the file goes
        op.journal->append({catalog::JournalEntry::Op::erase, op.id, op.gen, 0, 0});
        op.journal->sync();
      }
      tiers_[op.tier].backend->remove({op.space, op.id, op.gen, op.store_name});
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mlbs: %s\n", e.what());
    }
  }
  // What the ranks hold together (node budgets, shared files) is released
  // now, while every rank is in its Runtime's destructor: stores that outlive
  // the runtime must not make a collective call later, alone. Unlocked: a
  // quota's watcher takes the lock, and its destructor joins the watcher.
  std::vector<std::unique_ptr<core::SharedQuota>> quotas;
  for (TierState& ts : tiers_) quotas.push_back(std::move(ts.quota));
  state_cv_.notify_all();
  lock.unlock();
  quotas.clear();
  for (TierState& ts : tiers_)
    if (ts.backend) ts.backend->shutdown();
}

// ============================================================================
// small helpers
// ============================================================================

std::uint64_t Engine::now_ns() const { return elapsed_ns(t0_); }

void Engine::touch() {
  ++version_;
  ranking_dirty_ = true;
  work_cv_.notify_all();
  state_cv_.notify_all();
}

namespace {
/// errno and tier of an mlbs error; {0, ""} for anything else.
std::pair<int, std::string> cause_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const Error& err) {
    return {err.error_code(), err.context().tier};
  } catch (...) {
    return {0, {}};
  }
}
}  // namespace

void Engine::raise_pending() {
  if (stopping_) throw ShutdownError(ESHUTDOWN, "the runtime has been shut down");
  if (!pending_errors_.empty()) {
    auto e = pending_errors_.front();
    pending_errors_.pop_front();
    // One failing device fails every transfer queued to it: report the cause
    // once, not once per record at each of the next API calls.
    if (const auto cause = cause_of(e); cause.first != 0)
      std::erase_if(pending_errors_, [&](const std::exception_ptr& other) { return cause_of(other) == cause; });
    std::rethrow_exception(e);
  }
}

ErrorContext Engine::ctx(std::uint32_t store, std::uint64_t id) const {
  return {stores_[store].name, id, {}};
}

ErrorContext Engine::ctx(const Record& r, int tier) const {
  ErrorContext c{stores_[r.store].name, r.id, {}};
  if (tier == 0) c.tier = "tier 0 (memory)";
  if (tier > 0) c.tier = tiers_[tier].backend->label();
  return c;
}

StoreState& Engine::store_ref(std::uint32_t store) {
  if (store >= stores_.size() || !stores_[store].open)
    throw InvalidArgumentError(EBADF, "store handle is closed");
  return stores_[store];
}

Record* Engine::find(std::uint32_t store, std::uint64_t id) {
  auto it = records_.find({store, id});
  return it == records_.end() ? nullptr : it->second.get();
}

Record& Engine::get(std::uint32_t store, std::uint64_t id) {
  if (Record* r = find(store, id)) return *r;
  throw UnknownIdError(ENOENT, "no such record", ctx(store, id));
}

std::string Engine::space_for(const StoreState& s, int tier) const {
  return persistent() && tier == last() ? s.persistent_space : s.space;
}

void Engine::note(Record& r, int from, int to) {
  // Lineage is bounded so a record moved often cannot grow without limit.
  if (r.lineage.size() >= 64) r.lineage.erase(r.lineage.begin() + 1);
  r.lineage.push_back({now_ns(), from, to});
}

int Engine::fastest_copy(const Record& r, int except) const { return policies::fastest_copy(r, last(), except); }

bool Engine::removal_pending(int tier, const std::string& space, std::uint64_t id,
                             std::uint64_t gen) const {
  if (removing_.count({tier, space, id, gen})) return true;
  return std::any_of(removals_.begin(), removals_.end(), [&](const Op& op) {
    return op.tier == tier && op.id == id && op.gen == gen && op.space == space;
  });
}

void Engine::begin_busy(int t) {
  if (tiers_[t].active++ == 0) tiers_[t].active_since = Clock::now();
}

void Engine::end_busy(int t) {
  if (--tiers_[t].active == 0)
    tiers_[t].stats.busy_ns += elapsed_ns(tiers_[t].active_since);
}

void Engine::busy_tiers(const Op& op, bool begin) {
  auto one = [&](int t) {
    if (t > 0) begin ? begin_busy(t) : end_busy(t);
  };
  if (op.kind == Op::Kind::remove) return one(op.tier);
  one(op.src);
  if (op.dst != op.src) one(op.dst);
}

void Engine::note_peak(int t) {
  const std::uint64_t used = t == 0 ? pool_.used_bytes() : tiers_[t].used;
  tiers_[t].stats.peak_used_bytes = std::max(tiers_[t].stats.peak_used_bytes, used);
}

std::uint64_t Engine::tier_free(int t) const {
  const TierState& ts = tiers_[t];
  if (t == 0) return pool_.free_bytes();
  if (ts.full_latched) return 0;
  if (ts.quota) {
    // The share placement planned with: it changes only with a new version,
    // which replans; acquire() checks the current one.
    const std::uint64_t limit = ts.quota_limit;
    return std::min(limit > ts.used ? limit - ts.used : 0, ts.quota->node_free());
  }
  const std::uint64_t cap = cfg_.tiers[t].capacity_bytes;
  if (cap == 0) return std::numeric_limits<std::uint64_t>::max();
  return cap > ts.used ? cap - ts.used : 0;
}

bool Engine::take(int t, std::uint64_t bytes) {
  TierState& ts = tiers_[t];
  if (ts.quota && !ts.quota->acquire(bytes)) {
    // Another rank took the room placement counted on: plan again with what
    // is free now (the record goes elsewhere) rather than wait for an event
    // of this rank's that may never come.
    ranking_dirty_ = true;
    ++version_;
    return false;
  }
  ts.used += bytes;
  if (ts.quota) ts.node_free_seen -= std::min(bytes, ts.node_free_seen);  // our own take is no news
  note_peak(t);
  return true;
}

void Engine::give(int t, std::uint64_t bytes) {
  TierState& ts = tiers_[t];
  ts.used -= bytes;
  if (ts.quota) {
    ts.quota->release(bytes);
    ts.node_free_seen += bytes;
  }
}

bool Engine::shared_quota_moved() const {
  for (const TierState& ts : tiers_)
    if (ts.quota && (ts.quota->version() != ts.quota_version || ts.quota->node_free() != ts.node_free_seen))
      return true;
  return false;
}

// ============================================================================
// placement
// ============================================================================

std::uint64_t Engine::rank_of(const Record& r) const {
  std::span<const std::uint32_t> positions;
  std::uint32_t reads_done = 0;
  if (cfg_.schedule.kind == Schedule::Kind::explicit_order) {
    if (auto it = schedule_pos_.find(r.id); it != schedule_pos_.end()) positions = it->second;
    const auto& consumed = stores_[r.store].consumed;
    if (auto c = consumed.find(r.id); c != consumed.end()) reads_done = c->second;
  }
  return policies::next_use_rank(r, cfg_.schedule.kind, positions, reads_done);
}

void Engine::refresh_placement() {
  if (!ranking_dirty_) return;
  ranking_dirty_ = false;
  ranked_.clear();
  ranked_.reserve(records_.size());
  for (auto& [k, r] : records_) {
    r->rank = rank_of(*r);
    ranked_.push_back(r.get());
  }
  std::sort(ranked_.begin(), ranked_.end(), [](const Record* a, const Record* b) {
    return a->rank != b->rank ? a->rank < b->rank : a->gen < b->gen;
  });

  std::vector<policies::PlacementItem> items;
  items.reserve(ranked_.size());
  for (Record* r : ranked_)
    items.push_back({r->size, detail::round_up_block(r->size), r->avoid, fastest_copy(*r, 0)});
  // DRAM keeps headroom for the writes in progress (at least one record), so
  // a writer finds a clean slot to take instead of waiting for a copy down.
  const std::uint64_t headroom = std::max(pending_bytes_, last_write_bytes_);
  const std::uint64_t mem_target = pool_.capacity() > headroom ? pool_.capacity() - headroom : 0;
  std::vector<std::uint64_t> caps(tiers_.size(), 0);
  for (int t = 1; t <= last(); ++t) {
    const Tier& d = cfg_.tiers[t];
    caps[t] = d.capacity_bytes;
    // In scratch mode a file tier holds one copy per record: its high water
    // mark is how full placement may fill it (headroom for bursts).
    if (!persistent() && d.capacity_bytes && d.high_water < 1.0)
      caps[t] = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(d.capacity_bytes * d.high_water));
    if (tiers_[t].full_latched) caps[t] = std::max<std::uint64_t>(1, tiers_[t].used);
    if (TierState& ts = tiers_[t]; ts.quota) {
      // This rank's fair share of the node's budget, and no more than the
      // node has left: what other ranks hold is not ours to place into.
      ts.quota_version = ts.quota->version();
      ts.node_free_seen = ts.quota->node_free();
      ts.quota_limit = ts.quota->limit();
      caps[t] = std::max<std::uint64_t>(1, std::min(ts.quota_limit, ts.used + ts.node_free_seen));
    }
  }
  const policies::Placement p = policies::place(items, mem_target, caps);
  for (std::size_t i = 0; i < ranked_.size(); ++i) {
    ranked_[i]->want_mem = p.in_memory[i];
    ranked_[i]->dir_target = p.dir_tier[i];
  }
  // Shared tiers: publish what this rank would keep there if it had the room
  // (everything placement sends below DRAM to that tier or further down), so
  // the node's ranks divide the budget by what each needs.
  for (int t = 1; t < last(); ++t) {
    TierState& ts = tiers_[t];
    if (!ts.quota) continue;
    std::uint64_t demand = 0;
    for (const Record* r : ranked_)
      if (!r->want_mem && (r->dir_target >= t || r->dir_target < 0)) demand += r->size;
    if (demand != ts.demand) {
      ts.demand = demand;
      ts.quota->publish_demand(demand);
      ts.quota_version = ts.quota->version();
      // Our own new demand moves our share: place again with it (the demand
      // does not depend on the share, so the next pass settles).
      if (ts.quota->limit() != ts.quota_limit) {
        ranking_dirty_ = true;
        ++version_;  // helpers plan again before they rest
      }
    }
  }

  // Water-mark hysteresis over the dirty bytes of each tier above the last.
  std::vector<std::uint64_t> dirty(tiers_.size(), 0);
  for (const Record* r : ranked_)
    for (int t = 0; t < last(); ++t)
      if (policies::dirty_on(*r, t, last(), persistent())) dirty[t] += r->size;
  for (int t = 0; t < last(); ++t) {
    const Tier& d = cfg_.tiers[t];
    const std::uint64_t cap = t == 0 ? pool_.capacity() : d.capacity_bytes;
    tiers_[t].wb_active = policies::write_behind_active(tiers_[t].wb_active, dirty[t], cap, d.high_water, d.low_water);
  }
}

policies::View Engine::view() {
  tier_views_.resize(tiers_.size());
  for (int t = 0; t <= last(); ++t)
    tier_views_[t] = {tier_free(t), tiers_[t].full_latched, tiers_[t].wb_active};
  return {ranked_, tier_views_, persistent(), cfg_.schedule.kind != Schedule::Kind::unknown, flush_horizon_};
}

void Engine::apply(const std::vector<policies::Drop>& drops) {
  for (const policies::Drop& d : drops) drop_copy(*ranked_[d.record], d.tier);
}

bool Engine::make_dram_room(std::size_t bytes) {
  auto drops = policies::dram_room(view(), bytes, ranked_.size());
  if (!drops) return false;
  apply(*drops);
  return pool_.fits(bytes);
}

void Engine::drop_copy(Record& r, int t) {
  r.copies &= ~bit(t);
  note(r, t, -1);
  if (t == 0) {
    pool_.release(std::move(r.slot));
  } else {
    give(t, r.size);
    Op rm;
    rm.kind = Op::Kind::remove;
    rm.tier = t;
    rm.space = space_for(stores_[r.store], t);
    rm.store_name = stores_[r.store].name;
    rm.id = r.id;
    rm.gen = r.gen;
    if (persistent() && t == last() && r.journaled) {
      rm.journal = stores_[r.store].journal;
      ++stores_[r.store].journal_erases;
    }
    removals_.push_back(std::move(rm));
  }
  ++version_;
  state_cv_.notify_all();
  work_cv_.notify_all();
}

void Engine::retire(Record& r) {
  if (!r.busy && r.pins == 0) {
    erase_record(r);
    return;
  }
  // A helper is copying it or a reader copies out of its slot: take it out
  // of the catalog now (its id is free for a new write) and let the last
  // user finish it.
  auto it = records_.find({r.store, r.id});
  r.retired = true;
  live_bytes_ -= r.size;
  retiring_.push_back(std::move(it->second));
  records_.erase(it);
  touch();
}

void Engine::settle(Record& r) {
  if (r.retired && !r.busy && r.pins == 0) erase_record(r);
}

void Engine::erase_record(Record& r) {
  for (int t = 0; t <= last(); ++t)
    if (r.copies & bit(t)) drop_copy(r, t);
  if (r.retired) {
    std::erase_if(retiring_, [&](const std::unique_ptr<Record>& p) { return p.get() == &r; });
  } else {
    live_bytes_ -= r.size;
    records_.erase({r.store, r.id});
  }
  touch();
}

// ============================================================================
// the helper threads
// ============================================================================

void Engine::helper_loop(std::stop_token st, unsigned index) {
  trace::name_thread(fmt::format("helper {}", index));
  detail::Block& staging = staging_[index];
  Lock lock(mu_);
  while (!st.stop_requested()) {
    const std::uint64_t seen = version_;
    std::optional<Op> op;
    try {
      op = plan();
    } catch (...) {
      pending_errors_.push_back(std::current_exception());
      touch();
    }
    if (!op) {
      if (inflight_ == 0 && version_ == seen) {
        idle_version_ = seen;
        state_cv_.notify_all();
      }
      work_cv_.wait(lock, st, [&] { return version_ != seen; });
      continue;
    }
    ++inflight_;
    busy_tiers(*op, true);
    lock.unlock();
    const auto start = Clock::now();
    std::exception_ptr err;
    try {
      execute(*op, staging);
    } catch (...) {
      err = std::current_exception();
    }
    const auto end = Clock::now();
    if (trace::enabled()) trace_op(*op, start, end, err != nullptr);
    lock.lock();
    --inflight_;
    busy_tiers(*op, false);
    complete(*op, err);
    touch();
  }
}

std::optional<Engine::Op> Engine::plan() {
  if (stopping_) return std::nullopt;
  if (!removals_.empty()) {
    Op op = std::move(removals_.front());
    removals_.pop_front();
    removing_.insert({op.tier, op.space, op.id, op.gen});
    return op;
  }
  if (shared_quota_moved()) ranking_dirty_ = true;
  refresh_placement();
  for (;;) {
    policies::Notes notes;
    std::optional<policies::Decision> d = policies::next(view(), notes);
    for (std::size_t t = 0; t < notes.stalls.size(); ++t) tiers_[t].stats.stalls += notes.stalls[t];
    if (!d) return std::nullopt;
    apply(d->drops);
    if (d->purpose == policies::Purpose::drop_strays) continue;  // nothing to copy: plan on
    return copy_op(*ranked_[d->record], d->src, d->dst, d->purpose);
  }
}

std::optional<Engine::Op> Engine::copy_op(Record& r, int src, int dst, policies::Purpose why) {
  Op op;
  op.rec = &r;
  op.src = src;
  op.dst = dst;
  op.persist = persistent() && dst == last();
  // File tiers hold one copy per record in scratch mode: moving between
  // them drops the source. DRAM copies and last-tier copies stay.
  op.move = src > 0 && dst > 0 && !(persistent() && src == last());
  op.demand = why == policies::Purpose::demand_fetch;
  op.prefetch = why == policies::Purpose::prefetch_dram || why == policies::Purpose::prefetch_file;
  const StoreState& st = stores_[r.store];
  op.store_name = st.name;
  if (src > 0) op.space = space_for(st, src);
  if (dst > 0) op.dst_space = space_for(st, dst);
  // The same file name may still be due for removal (the record left this
  // tier a moment ago): wait for that removal, or it would delete the copy.
  if (dst > 0 && removal_pending(dst, op.dst_space, r.id, r.gen)) return std::nullopt;
  if (op.persist) op.journal = st.journal;
  if (dst == 0) {
    auto block = pool_.allocate(r.size);
    if (!block) return std::nullopt;
    op.block = std::move(*block);
    note_peak(0);
  } else if (!take(dst, r.size)) {
    return std::nullopt;
  }
  r.busy = true;
  return op;
}

void Engine::execute(Op& op, detail::Block& staging) {
  if (op.kind == Op::Kind::remove) {
    if (op.journal) {
      op.journal->append({catalog::JournalEntry::Op::erase, op.id, op.gen, 0, 0});
      op.journal->sync();
    }
    tiers_[op.tier].backend->remove({op.space, op.id, op.gen, op.store_name});
    return;
  }
  // The record is busy: no one else changes its copies, slot or checksum, so
  // reading them without the lock is safe; the rest was copied into `op`.
  Record& r = *op.rec;
  const std::uint64_t size = r.size;
  // Bytes from a file tier are checked against the record's checksum; a
  // record leaving DRAM for the first time gets its checksum on the way.
  const bool verify = cfg_.checksums && r.has_checksum && op.src > 0;
  const bool first = cfg_.checksums && !r.has_checksum && op.src == 0;
  std::unique_ptr<tiers::ObjectReader> reader;
  std::unique_ptr<tiers::ObjectWriter> writer;
  if (op.src > 0) reader = tiers_[op.src].backend->open({op.space, r.id, r.gen, op.store_name}, size);
  if (op.dst > 0)
    writer = tiers_[op.dst].backend->create({op.dst_space, r.id, r.gen, op.store_name}, size);
  const std::uint64_t digest = tiers::transfer({op.src == 0 ? r.slot.data() : nullptr, reader.get()},
                                        {op.dst == 0 ? op.block.data() : nullptr, writer.get()}, size, &staging,
                                        verify || first);
  std::uint64_t expected = r.checksum;
  if (first) {
    op.checksum = expected = digest;
    op.computed_checksum = true;
  }
  if (verify && digest != expected)
    throw CorruptionError(EBADMSG, fmt::format("checksum mismatch: read {:016x}, catalog {:016x}", digest, expected),
                          {op.store_name, r.id, tiers_[op.src].backend->label()});
  if (writer) writer->commit(op.persist);
  if (op.persist) {
    try {
      op.journal->append({catalog::JournalEntry::Op::put, r.id, r.gen, size, expected});
    } catch (...) {
      // No entry names the copy (append cuts a partial one): take it back
      // rather than leave it for the next recovery to find.
      try {
        tiers_[op.dst].backend->remove({op.dst_space, r.id, r.gen, op.store_name});
      } catch (...) {
      }
      throw;
    }
    op.journal->sync();
  }
}

void Engine::trace_op(const Op& op, Clock::time_point start, Clock::time_point end, bool failed) const {
  // "writeback 0->1", "copy 1->2", "prefetch 2->1", "demand 1->0", "remove 1",
  // in the category of the file tier involved (a copy between two file tiers:
  // the destination).
  char name[64];
  char category[16];
  const std::string_view fail = failed ? " failed" : "";
  std::size_t n;
  int tier;
  std::uint64_t bytes = 0;
  if (op.kind == Op::Kind::remove) {
    tier = op.tier;
    n = fmt::format_to_n(name, sizeof name, "remove {}{}", tier, fail).size;
  } else {
    const char* kind = op.demand     ? "demand"
                       : op.prefetch ? "prefetch"
                       : op.src == 0 ? "writeback"
                                     : "copy";
    tier = op.dst > 0 ? op.dst : op.src;
    bytes = op.rec->size;  // the record is busy: its size is stable
    n = fmt::format_to_n(name, sizeof name, "{} {}->{}{}", kind, op.src, op.dst, fail).size;
  }
  const std::size_t c = fmt::format_to_n(category, sizeof category, "tier{}", tier).size;
  trace::span({name, std::min(n, sizeof name)}, {category, std::min(c, sizeof category)}, trace_ns(start),
              trace_ns(end), bytes);
}

void Engine::complete(Op& op, std::exception_ptr err) {
  if (op.kind == Op::Kind::remove) {
    removing_.erase({op.tier, op.space, op.id, op.gen});
    if (err) {
      ++tiers_[op.tier].stats.errors;
      pending_errors_.push_back(err);
    } else if (std::exchange(tiers_[op.tier].full_latched, false)) {
      ranking_dirty_ = true;  // room came free on a device that said it was full: try it again
    }
    if (op.journal)
      for (StoreState& s : stores_)
        if (s.journal == op.journal) --s.journal_erases;
    return;
  }
  Record& r = *op.rec;
  r.busy = false;
  if (op.computed_checksum && !r.has_checksum) {
    r.checksum = op.checksum;
    r.has_checksum = true;
  }
  auto count = [&](int t, bool in, std::uint64_t bytes) {
    TierStats& st = tiers_[t].stats;
    (in ? st.bytes_in : st.bytes_out) += bytes;
    ++(in ? st.ops_in : st.ops_out);
  };
  if (err) {
    if (op.dst == 0)
      pool_.release(std::move(op.block));
    else
      give(op.dst, r.size);
    int code = 0;
    bool source_failed = false;  // the copy we read from is bad, not the tier we wrote to
    try {
      std::rethrow_exception(err);
    } catch (const CorruptionError&) {
      ++counters_.checksum_failures;
      source_failed = true;
    } catch (const Error& e) {
      code = e.error_code();
      source_failed = op.src > 0 && e.context().tier == tiers_[op.src].backend->label();
    } catch (...) {
    }
    if (source_failed) ++tiers_[op.src].stats.errors;
    else if (op.dst > 0) ++tiers_[op.dst].stats.errors;
    // Another copy may still be good: forget the bad one and go on.
    if (source_failed && (r.copies & ~bit(op.src))) {
      drop_copy(r, op.src);
      err = nullptr;
    }
    if (err) {
      if (code == ENOSPC || code == EDQUOT) tiers_[op.dst].full_latched = true;
      // Placement routes around the failing tier for this record.
      if (op.dst > 0 && !source_failed) r.avoid |= bit(op.dst);
      // A tier above the last one that cannot take a copy is no error of the
      // application's: the record still has its copy and goes on to another
      // tier (counted in TierStats::errors, traced as a failed op). Only the
      // last tier, below which nothing can take it, reports.
      if (op.dst > 0 && op.dst < last() && !source_failed && r.copies != 0) err = nullptr;
      // The last tier failed but the record still has its copy above: the
      // error belongs to whoever needs that copy down (flush(), a write()
      // that finds no room), not to whichever API call comes next.
      if (err && op.dst == last() && !source_failed && r.copies != 0) {
        r.write_failure = err;
        err = nullptr;
      }
    }
    if (err) {
      // A bad only copy (failed verification, wrong size, unreadable) makes
      // the record unreadable: its readers get the error, not whichever API
      // call comes next (a prefetch finds it before anyone asked).
      if (op.demand || r.copies == 0 || source_failed || (op.src > 0 && fastest_copy(r) < 0))
        r.error = err;
      else
        pending_errors_.push_back(err);
    }
  } else {
    count(op.dst, true, r.size);
    if (op.src >= 0) count(op.src, false, r.size);
    r.copies |= bit(op.dst);
    note(r, op.src, op.dst);
    if (op.dst == 0) {
      r.slot = std::move(op.block);
      if (op.prefetch) ++counters_.prefetches;
      if (op.demand) ++counters_.demand_fetches;
    } else if (op.dst > op.src) {
      ++counters_.writebacks;
    }
    if (op.persist) r.journaled = true;
    if (op.move && !r.retired) drop_copy(r, op.src);
  }
  settle(r);
}

// ============================================================================
// stores
// ============================================================================

std::uint32_t Engine::open_store(const std::string& name) {
  check_store_name(name);
  Lock lock(mu_);
  raise_pending();
  for (const StoreState& s : stores_)
    if (s.open && s.name == name)
      throw StoreBusyError(EBUSY, "a store of this name is already open in this runtime",
                           {name, {}, {}});
  StoreState s;
  s.name = name;
  // Under MPI every rank's records are its own, even when all ranks share
  // the tier paths and the store name: the rank is part of every space name.
  const std::string rank = group_ ? fmt::format(".rank-{}", group_->rank()) : std::string();
  s.space = fmt::format("{}{}.{}-{}.scratch", name, rank, ::getpid(), g_runtime_serial.fetch_add(1));
  s.persistent_space = name + rank;
  const std::uint32_t index = static_cast<std::uint32_t>(stores_.size());
  for (int t = 1; t <= last(); ++t) tiers_[t].backend->create_space(space_for(s, t));
  stores_.push_back(std::move(s));
  if (persistent()) {
    try {
      recover(index);
    } catch (...) {
      StoreState& failed = stores_[index];
      failed.open = false;
      failed.lock.release();
      for (int t = 1; t < last(); ++t) tiers_[t].backend->remove_space(failed.space);
      throw;
    }
  }
  return index;
}

void Engine::recover(std::uint32_t index) {
  StoreState& s = stores_[index];
  tiers::Backend& pt = *tiers_[last()].backend;
  s.lock = catalog::StoreLock(pt, s.persistent_space, s.name);
  if (group_) catalog::check_rank_count(pt, s.persistent_space, s.name, group_->size(), group_->rank());
  const catalog::RecoveredStore found = catalog::recover_store(
      pt, s.persistent_space, s.name,
      {cfg_.checksums, static_cast<std::size_t>(std::min<std::uint64_t>(cfg_.io_chunk_bytes, 1 << 20))});
  counters_.checksum_failures += found.skipped;  // every live record that failed verification
  next_gen_ = std::max(next_gen_, found.next_generation);
  for (const catalog::JournalEntry& e : found.records) {
    auto r = std::make_unique<Record>();
    r->store = index;
    r->id = e.id;
    r->size = e.size;
    r->gen = e.generation;
    r->checksum = e.checksum;
    r->has_checksum = true;
    r->copies = bit(last());
    r->journaled = true;
    r->last_use = ++clock_;
    note(*r, last(), last());
    tiers_[last()].used += e.size;
    live_bytes_ += e.size;
    records_.emplace(Key{index, e.id}, std::move(r));
  }
  s.journal = std::make_shared<catalog::Journal>(found.journal_path, found.journal_valid_bytes);
  touch();
}

void Engine::close_store(std::uint32_t index) noexcept {
  Lock lock(mu_);
  if (index >= stores_.size() || !stores_[index].open) return;
  StoreState& s = stores_[index];
  if (persistent() && !stopping_) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(cfg_.shutdown_timeout_ms);
    try {
      wait_durable(lock, index, std::numeric_limits<std::uint64_t>::max(), deadline);
    } catch (const std::exception& e) {
      // Nothing is left to report it to: the records named are lost.
      std::fprintf(stderr, "mlbs: closing store '%s' drops what is not durable: %s\n", s.name.c_str(), e.what());
    }
  }
  // Release every record's copies above the persistent tier (all of them in
  // scratch mode); records being copied are finished by their helper first.
  std::vector<Record*> mine;
  for (auto& [k, r] : records_)
    if (k.store == index) mine.push_back(r.get());
  for (Record* r : mine) {
    if (persistent() && r->journaled) {
      // Forget it here; its journaled last-tier copy stays on disk.
      r->copies &= ~bit(last());
      tiers_[last()].used -= r->size;
    }
    retire(*r);
  }
  // Wait (bounded) for in-flight copies and queued removals of this store.
  const auto deadline = Clock::now() + std::chrono::milliseconds(cfg_.shutdown_timeout_ms);
  auto settled = [&] {
    for (auto& [k, r] : records_)
      if (k.store == index) return false;
    for (const auto& r : retiring_)
      if (r->store == index) return false;
    // Queued removals include the last tier's journal erases: the store (and
    // its LOCK) must not be let go before they are done.
    for (const Op& op : removals_)
      if (op.store_name == s.name) return false;
    return inflight_ == 0 || stopping_;
  };
  if (!stopping_) state_cv_.wait_until(lock, deadline, settled);
  if (!settled() && !stopping_)
    std::fprintf(stderr, "mlbs: closing store '%s': copies still in flight after %u ms\n",
                 s.name.c_str(), cfg_.shutdown_timeout_ms);
  s.open = false;
  for (int t = 1; t <= last(); ++t)
    if (!(persistent() && t == last())) tiers_[t].backend->remove_space(s.space);
  s.journal.reset();
  s.lock.release();
  touch();
}

// ============================================================================
// the application side
// ============================================================================

void Engine::write(std::uint32_t store, std::uint64_t id, const std::byte* data, std::size_t bytes) {
  Lock lock(mu_);
  raise_pending();
  StoreState& s = store_ref(store);
  if (find(store, id) || s.pending.count(id))
    throw DuplicateIdError(EEXIST, "record already written (erase it before writing it again)",
                           ctx(store, id));
  const std::uint64_t slot_bytes = detail::round_up_block(bytes);  // never less than bytes
  if (slot_bytes > pool_.capacity())
    throw CapacityError(ENOSPC,
                        bytes > pool_.capacity()
                            ? fmt::format("record of {} is larger than the DRAM budget of {}", format_bytes(bytes),
                                          format_bytes(pool_.capacity()))
                            : fmt::format("record of {} needs a DRAM slot of {} (slots are whole {}-byte blocks) "
                                          "and the DRAM budget is {}: give tier 0 at least {}",
                                          format_bytes(bytes), format_bytes(slot_bytes), detail::kBlockAlign,
                                          format_bytes(pool_.capacity()), format_bytes(slot_bytes)),
                        {s.name, id, "tier 0 (memory)"});
  if (persistent()) {
    // Every accepted record owes the last tier a copy: one that its quota
    // can never hold beside the records already owed would never become
    // durable, so it is refused now rather than by a later flush().
    const std::uint64_t cap = cfg_.tiers[last()].capacity_bytes;
    if (cap && bytes > cap)
      throw CapacityError(ENOSPC,
                          fmt::format("record of {} is larger than the persistent tier's quota of {}",
                                      format_bytes(bytes), format_bytes(cap)),
                          {s.name, id, tiers_[last()].backend->label()});
    if (cap && live_bytes_ + bytes > cap)
      throw CapacityError(ENOSPC,
                          fmt::format("record of {} could never become durable: the persistent tier's quota of {} "
                                      "is taken by {} of records already written (erase records or raise the quota)",
                                      format_bytes(bytes), format_bytes(cap), format_bytes(live_bytes_)),
                          {s.name, id, tiers_[last()].backend->label()});
  }
  s.pending.emplace(id, slot_bytes);
  pending_bytes_ += slot_bytes;
  last_write_bytes_ = slot_bytes;
  touch();
  auto unpend = [&] {
    s.pending.erase(id);
    pending_bytes_ -= slot_bytes;
  };

  std::optional<detail::Block> block;
  const auto wait_start = Clock::now();
  bool waited = false;
  for (;;) {
    refresh_placement();
    if (make_dram_room(bytes)) {
      block = pool_.allocate(bytes);
      if (block) break;
    }
    if (idle_version_ == version_ && inflight_ == 0) {
      unpend();
      touch();
      raise_pending();
      // A failed tier, not the quotas, may be why there is no room.
      for (const auto& [k, r] : records_)
        if (r->write_failure && (r->avoid & bit(last())) && r->copies == bit(0)) std::rethrow_exception(r->write_failure);
      throw CapacityError(ENOSPC,
                          fmt::format("no tier can make room for a record of {}: every quota "
                                      "is full and no scheduled read will free any",
                                      format_bytes(bytes)),
                          {s.name, id, "tier 0 (memory)"});
    }
    if (!pending_errors_.empty() || stopping_) {
      unpend();
      raise_pending();
    }
    waited = true;
    state_cv_.wait(lock);
  }
  Clock::time_point wait_end{};
  if (waited) {
    wait_end = Clock::now();
    counters_.write_block_ns += ns_between(wait_start, wait_end);
    ++counters_.write_stalls;
  }
  note_peak(0);
  lock.unlock();
  const bool tracing = trace::enabled();
  if (tracing && waited)
    trace::span("write blocked", "write_block", trace_ns(wait_start), trace_ns(wait_end), bytes);
  const auto copy_start = Clock::now();
  if (bytes) copy::bulk(block->data(), data, bytes);
  const auto copy_end = Clock::now();
  const std::uint64_t copy_ns = ns_between(copy_start, copy_end);
  if (tracing) trace::span("copy into slot", "copy", trace_ns(copy_start), trace_ns(copy_end), bytes);
  lock.lock();
  unpend();
  auto r = std::make_unique<Record>();
  r->store = store;
  r->id = id;
  r->size = bytes;
  r->gen = next_gen_++;
  r->copies = bit(0);
  r->slot = std::move(*block);
  r->last_use = ++clock_;
  live_bytes_ += bytes;
  note(*r, -1, 0);
  ++counters_.writes;
  counters_.copy_ns += copy_ns;
  TierStats& mem = tiers_[0].stats;
  mem.bytes_in += bytes;
  ++mem.ops_in;
  records_.emplace(Key{store, id}, std::move(r));
  touch();
}

std::size_t Engine::read(std::uint32_t store, std::uint64_t id, detail::Block& buf,
                         std::size_t elem) {
  Lock lock(mu_);
  raise_pending();
  StoreState& s = store_ref(store);
  Record* r = &get(store, id);
  if (elem == 0 || r->size % elem != 0)
    throw SizeMismatchError(EMSGSIZE,
                            fmt::format("record of {} bytes is not a whole number of {}-byte elements",
                                        r->size, elem),
                            ctx(store, id));
  if (!(r->copies & bit(0))) {
    r->demand = true;
    touch();
    const auto wait_start = Clock::now();
    // Also wake when the helpers are idle and the record is still not in
    // DRAM: no room can be made there, so it is read directly (below).
    state_cv_.wait(lock, [&] {
      r = find(store, id);
      return !r || (r->copies & bit(0)) || r->error || stopping_ || !pending_errors_.empty() ||
             (idle_version_ == version_ && inflight_ == 0 && !r->busy);
    });
    const auto wait_end = Clock::now();
    counters_.read_block_ns += ns_between(wait_start, wait_end);
    ++counters_.read_stalls;
    if (trace::enabled())
      trace::span("read blocked", "read_block", trace_ns(wait_start), trace_ns(wait_end), r ? r->size : 0);
    if (!r) throw UnknownIdError(ENOENT, "record erased while being read", ctx(store, id));
    r->demand = false;
    ranking_dirty_ = true;
    if (r->error) std::rethrow_exception(r->error);
    if (stopping_ || !pending_errors_.empty()) raise_pending();
  }
  // The schedule's bookkeeping: this use is consumed.
  ++s.consumed[id];
  // A read phase has begun: DRAM need not keep write headroom any more (the
  // next write makes its own room from clean slots).
  last_write_bytes_ = 0;
  r->last_use = ++clock_;
  ++counters_.reads;
  const bool used_again = cfg_.schedule.kind == Schedule::Kind::explicit_order &&
                          rank_of(*r) < (1ull << 62);
  const bool release = !persistent() && !used_again;
  const std::size_t size = r->size;
  if (!(r->copies & bit(0))) {
    read_direct(lock, *r, buf);
    finish_read(*r, release);
    return size;
  }
  tiers_[0].stats.bytes_out += r->size;
  ++tiers_[0].stats.ops_out;
  // O(1) delivery: hand the slot itself to the store when no one else needs it.
  const bool can_take = !r->busy && r->pins == 0 && buf.capacity() == r->slot.capacity() &&
                        (release || (persistent() && r->journaled));
  if (can_take) {
    detail::Block taken = std::move(r->slot);
    r->copies &= ~bit(0);
    note(*r, 0, -1);
    pool_.exchange(taken.capacity(), std::move(buf));
    buf = std::move(taken);
    ++counters_.buffer_swaps;
    if (release) erase_record(*r);
    else touch();
    return size;
  }
  // Copy out while pinned (a helper may be reading the same slot: both only read).
  ++r->pins;
  lock.unlock();
  if (buf.capacity() < size) buf = detail::Block::allocate(size);
  const std::uint64_t copy_start = trace::enabled() ? trace::now_ns() : 0;
  if (size) copy::bulk(buf.data(), r->slot.data(), size);
  if (copy_start) trace::span("copy out of slot", "copy", copy_start, trace::now_ns(), size);
  lock.lock();
  --r->pins;
  finish_read(*r, release);
  return size;
}

void Engine::finish_read(Record& r, bool release) {
  // Either may free `r`: nothing touches it afterwards.
  if (release && !r.retired)
    retire(r);
  else
    settle(r);
  touch();
}

void Engine::read_direct(Lock& lock, Record& r, detail::Block& buf) {
  // Marked busy like a helper's copy, so no copy of it is dropped meanwhile.
  const int src = fastest_copy(r);
  r.busy = true;
  const std::string space = space_for(stores_[r.store], src);
  const std::string store_name = stores_[r.store].name;
  const bool verify = cfg_.checksums && r.has_checksum;
  begin_busy(src);
  lock.unlock();
  const auto start = Clock::now();
  std::exception_ptr err;
  try {
    if (buf.capacity() < r.size) buf = detail::Block::allocate(r.size);
    auto reader = tiers_[src].backend->open({space, r.id, r.gen, store_name}, r.size);
    const std::uint64_t digest = tiers::transfer({nullptr, reader.get()}, {buf.data(), nullptr}, r.size, nullptr, verify);
    if (verify && digest != r.checksum)
      throw CorruptionError(EBADMSG, "checksum mismatch on a direct read",
                            {store_name, r.id, tiers_[src].backend->label()});
  } catch (...) {
    err = std::current_exception();
  }
  const auto end = Clock::now();
  if (trace::enabled()) {
    // The application waits for this read: a read_block span on its thread.
    char name[32];
    const std::size_t n = fmt::format_to_n(name, sizeof name, "direct read {}->0", src).size;
    trace::span({name, std::min(n, sizeof name)}, "read_block", trace_ns(start), trace_ns(end), r.size);
  }
  lock.lock();
  r.busy = false;
  TierStats& st = tiers_[src].stats;
  end_busy(src);
  if (err) {
    settle(r);
    touch();
    std::rethrow_exception(err);
  }
  st.bytes_out += r.size;
  ++st.ops_out;
  ++counters_.direct_reads;
}

bool Engine::contains(std::uint32_t store, std::uint64_t id) {
  Lock lock(mu_);
  raise_pending();
  store_ref(store);
  return find(store, id) != nullptr;
}

void Engine::erase(std::uint32_t store, std::uint64_t id) {
  Lock lock(mu_);
  raise_pending();
  store_ref(store);
  retire(get(store, id));
  touch();
}

std::vector<std::uint64_t> Engine::ids(std::uint32_t store) {
  Lock lock(mu_);
  raise_pending();
  store_ref(store);
  std::vector<std::uint64_t> out;
  for (auto& [k, r] : records_)
    if (k.store == store) out.push_back(k.id);
  std::sort(out.begin(), out.end());
  return out;
}

void Engine::wait_durable(Lock& lock, std::uint32_t store, std::uint64_t horizon,
                          Clock::time_point deadline) {
  flush_horizon_ = std::max(flush_horizon_, std::min(horizon, next_gen_ - 1));
  touch();
  const std::uint64_t limit = std::min(horizon, next_gen_ - 1);
  // Replay keeps the newest generation's put of an id: once a newer
  // generation is durable, or this flush makes it so, an older one's put can
  // no longer bring the id back.
  auto superseded = [&](const Record& old) {
    const Record* now = find(store, old.id);
    return now && now->gen > old.gen && (now->journaled || now->gen <= limit);
  };
  std::vector<const Record*> owed;  // not durable yet, written before the barrier
  auto done = [&] {
    if (stopping_) return true;
    // Erases acknowledged before the flush are part of the barrier: their
    // journal entries must be durable too (a retiring record's comes later).
    if (stores_[store].journal_erases) return false;
    for (const auto& r : retiring_) {
      if (r->store != store) continue;
      if (r->journaled && (r->copies & bit(last()))) return false;
      // A copy still in flight may journal the erased record yet, its erase
      // entry after it: a crash in between would undo the acknowledged erase.
      if (r->busy && !superseded(*r)) return false;
    }
    owed.clear();
    bool moving = false;
    for (auto& [k, r] : records_) {
      if (k.store != store || r->gen > limit || r->journaled) continue;
      owed.push_back(r.get());
      moving = moving || !(r->avoid & bit(last()));
    }
    if (owed.empty()) return true;
    // Every record still owed has failed on the last tier, or the helpers
    // found nothing more to do while some are owed (a full device, a quota
    // that cannot hold them): waiting longer would wait forever.
    if (!moving) return true;
    for (const Record* r : owed)
      if (r->busy) return false;  // a direct read holds it: not stuck
    return idle_version_ == version_ && inflight_ == 0;
  };
  if (!state_cv_.wait_until(lock, deadline, [&] { return done() || !pending_errors_.empty(); }))
    throw IoError(ETIMEDOUT,
                  fmt::format("flush did not complete by the deadline (shutdown_timeout_ms = {}): transfers to the "
                              "persistent tier are still in flight (a slow device?)",
                              cfg_.shutdown_timeout_ms),
                  {stores_[store].name, {}, tiers_[last()].backend->label()});
  if (!owed.empty() && !stopping_) throw_not_durable(store, owed);
  raise_pending();
}

void Engine::throw_not_durable(std::uint32_t store, std::vector<const Record*> owed) const {
  std::sort(owed.begin(), owed.end(), [](const Record* a, const Record* b) { return a->id < b->id; });
  std::uint64_t bytes = 0;
  std::string ids;
  for (std::size_t i = 0; i < owed.size(); ++i) {
    bytes += owed[i]->size;
    if (i < 8) ids += fmt::format("{}{}", i ? ", " : "", owed[i]->id);
  }
  if (owed.size() > 8) ids += fmt::format(" and {} more", owed.size() - 8);
  const std::string what = fmt::format("{} record{} ({}) written before this flush {} not durable: id{} {}",
                                       owed.size(), owed.size() == 1 ? "" : "s", format_bytes(bytes),
                                       owed.size() == 1 ? "is" : "are", owed.size() == 1 ? "" : "s", ids);
  const tiers::Backend& pt = *tiers_[last()].backend;
  ErrorContext where{stores_[store].name, owed.front()->id, pt.label()};
  // The cause, most specific first: what the device said for one of them...
  for (const Record* r : owed) {
    if (!r->write_failure && !r->error) continue;
    try {
      std::rethrow_exception(r->error ? r->error : r->write_failure);
    } catch (const CorruptionError& e) {
      throw CorruptionError(e.error_code(), fmt::format("{}; id {}: {}", what, r->id, e.message()), where);
    } catch (const Error& e) {
      const int code = e.error_code() ? e.error_code() : EIO;
      const std::string hint = code == ENOSPC || code == EDQUOT
                                   ? "free space on the device and call flush() again, or erase records"
                                   : "call flush() again once the device is back";
      // The tier's own errno-to-type mapping (DeviceFullError, TierError, IoError).
      const tiers::ObjectRef ref{stores_[store].persistent_space, owed.front()->id, owed.front()->gen,
                                 stores_[store].name};
      pt.fail(code, fmt::format("{}; the persistent tier failed: {} ({})", what, e.message(), hint), &ref);
    } catch (...) {
      std::rethrow_exception(r->error ? r->error : r->write_failure);
    }
  }
  // ...a device that said it is full...
  if (tiers_[last()].full_latched)
    throw DeviceFullError(ENOSPC,
                          fmt::format("{}; the persistent tier's device is full (free space on it and call "
                                      "flush() again, or erase records)",
                                      what),
                          where);
  // ...or a quota that cannot hold them all.
  if (const std::uint64_t cap = cfg_.tiers[last()].capacity_bytes)
    throw CapacityError(ENOSPC,
                        fmt::format("{}; the persistent tier's quota of {} holds {} already (erase records or "
                                    "raise the quota)",
                                    what, format_bytes(cap), format_bytes(tiers_[last()].used)),
                        where);
  throw IoError(EIO, fmt::format("{}; no helper can copy them to the persistent tier", what), where);
}

void Engine::flush(std::uint32_t store) {
  Lock lock(mu_);
  raise_pending();
  store_ref(store);
  if (persistent()) {
    // Records the last tier failed earlier get one more try, and a device
    // that said it was full is asked again: one that came back (space
    // freed, a transient error) makes them durable now.
    bool retry = std::exchange(tiers_[last()].full_latched, false);
    for (auto& [k, r] : records_)
      if (k.store == store && r->write_failure && !r->error && r->copies != 0) {
        r->avoid &= ~bit(last());
        r->write_failure = nullptr;
        retry = true;
      }
    if (retry) {
      ranking_dirty_ = true;
      touch();
    }
    wait_durable(lock, store, std::numeric_limits<std::uint64_t>::max(), Clock::time_point::max());
    return;
  }
  // Scratch: return once write-behind of what was written so far is done and
  // the helpers are idle.
  flush_horizon_ = std::max(flush_horizon_, next_gen_ - 1);
  touch();
  state_cv_.wait(lock, [&] {
    return stopping_ || !pending_errors_.empty() || (idle_version_ == version_ && inflight_ == 0);
  });
  raise_pending();
}

RecordInfo Engine::info(std::uint32_t store, std::uint64_t id) {
  Lock lock(mu_);
  store_ref(store);
  const Record& r = get(store, id);
  RecordInfo info;
  info.id = r.id;
  info.size_bytes = r.size;
  info.checksum = r.checksum;
  info.has_checksum = r.has_checksum;
  for (int t = 0; t <= last(); ++t)
    if (r.copies & bit(t)) info.tiers.push_back(t);
  info.durable = r.journaled;
  info.lineage = r.lineage;
  return info;
}

Stats Engine::stats() {
  Lock lock(mu_);
  Stats s = counters_;
  s.live_records = 0;
  std::vector<std::uint64_t> copies(tiers_.size(), 0);
  for (auto& [k, r] : records_) {
    ++s.live_records;
    for (int t = 0; t <= last(); ++t)
      if (r->copies & bit(t)) ++copies[t];
  }
  for (std::size_t t = 0; t < tiers_.size(); ++t) {
    TierStats ts = tiers_[t].stats;
    ts.used_bytes = t == 0 ? pool_.used_bytes() : tiers_[t].used;
    ts.records = copies[t];
    s.tiers.push_back(ts);
  }
  return s;
}

}  // namespace mlbs::engine

// mlbs — the engine: construction (tiers, helpers, their cores), shutdown,
// and the state, error and tier accounting helpers its other files share.
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

#include "catalog/live.hpp"
#include "core/thread_name.hpp"
#include "engine/affinity.hpp"
#include "engine/timing.hpp"
#include "engine/policies/policies.hpp"
#include "mlbs/errors.hpp"
#include "mlbs/trace.hpp"
#include "tiers/directory/io_select.hpp"
#include "tiers/kinds.hpp"
#include "tiers/registry.hpp"

namespace mlbs::engine {

namespace {
/// Pins `thread` to `core`: 0, or the errno pthread_setaffinity_np gave.
int pin_to_core(pthread_t thread, int core) noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  return pthread_setaffinity_np(thread, sizeof set, &set);
}
}  // namespace

// ============================================================================
// construction and shutdown
// ============================================================================

Engine::Engine(Config cfg, std::shared_ptr<core::Group> group)
    : cfg_(std::move(cfg)), group_(std::move(group)) {
  cfg_.validate();
  schedule_ = cfg_.schedule;
  codec_ = codec::parse(cfg_.codec, "codec");
  if (const tiers::TierKind* k = tiers::find_tier_kind(cfg_.tiers.back().kind)) journaled_ = k->journaled;
  tiers_.resize(cfg_.tiers.size());
  for (int t = 0; t <= last(); ++t) {
    TierState& ts = tiers_[t];
    ts.stats.kind = cfg_.tiers[t].kind;
    ts.stats.path = cfg_.tiers[t].path;
    ts.stats.capacity_bytes = cfg_.tiers[t].capacity_bytes;
    if (t == 0) {
      // The memory tier: a registered backend like the others, holding the slot pool.
      ts.backend = tiers::make_backend(0, cfg_.tiers[0], group_.get());
      mem_ = dynamic_cast<tiers::MemoryBackend*>(ts.backend.get());
      if (!mem_) throw ConfigError("tiers[0].kind", "the first tier must be the memory tier");
      continue;
    }
    // Config::page_cache lets every file tier use the page cache; the backend
    // reads its own tier's flag.
    Tier desc = cfg_.tiers[t];
    desc.page_cache = desc.page_cache || cfg_.page_cache;
    if (!desc.layout) desc.layout = tiers::hooks::test_layout().value_or(cfg_.layout);
    auto backend = tiers::make_backend(t, desc, group_.get());
    // The last tier of a persistent runtime holds persistent spaces; a tier
    // that shares one file among spaces (mpiio) picks the file by it.
    backend->probe(t == last() ? cfg_.durability : Durability::scratch);
    auto io = backend->io_path();  // settled by probe(): io_uring or pread, and why
    ts.stats.io_backend = std::move(io.backend);
    ts.stats.io_fallback = std::move(io.fallback);
    // The budget wraps the rest, outermost. A shared tier above the last one
    // (a node's burst buffer) is one budget for the node's ranks; the last
    // tier's capacity stays per rank.
    std::unique_ptr<core::SharedQuota> node;
    if (group_ && desc.shared && desc.capacity_bytes && t < last()) node = group_->share(t, desc.capacity_bytes);
    if (desc.capacity_bytes) {
      const std::uint64_t own_limit = node ? 0 : desc.capacity_bytes;
      auto quota = std::make_unique<tiers::QuotaBackend>(std::move(backend), own_limit, std::move(node));
      ts.quota = quota.get();
      ts.node = quota->node_budget();
      backend = std::move(quota);
    }
    ts.backend = std::move(backend);
  }
  if (schedule_.kind == Schedule::Kind::explicit_order)
    for (std::uint32_t i = 0; i < schedule_.order.size(); ++i)
      schedule_pos_[schedule_.order[i]].push_back(i);

  // Helper placement: off the application's cores when it leaves some free
  // (docs/architecture.md, "Threads").
  std::vector<int> cores(cfg_.helper_threads, cfg_.helper_core >= 0 ? cfg_.helper_core : -1);
  if (cfg_.helper_core == -1) {
    const std::vector<int> allowed = allowed_cores();
    cores = auto_helper_cores(allowed, application_threads(allowed), cfg_.helper_threads);
  }
  // Per helper: staging for copies between two file tiers, which the pool's
  // pre-fault thread populates before the slots (a helper touching 8 MiB in
  // its first such copy took 35-55 ms of the slower tier's time on two busy
  // cores), and codec frames.
  staging_.resize(cfg_.helper_threads);
  if (last() >= 2)
    for (detail::Block& b : staging_) b = mem_->scratch(cfg_.io_chunk_bytes);
  frames_.resize(cfg_.helper_threads);
  cancel_ = std::make_unique<std::atomic<bool>[]>(cfg_.helper_threads);
  running_.assign(cfg_.helper_threads, {});
  for (unsigned i = 0; i < cfg_.helper_threads; ++i) {
    helpers_.emplace_back([this, i](std::stop_token st) { helper_loop(st, i); });
    detail::name_os_thread(helpers_.back().native_handle(), fmt::format("mlbs-helper-{}", i));
    if (cores[i] >= 0)
      if (int err = pin_to_core(helpers_.back().native_handle(), cores[i])) {
        std::fprintf(stderr, "mlbs: cannot pin helper %u to core %d: %s\n", i, cores[i], std::strerror(err));
        cores[i] = -1;
      }
  }
  counters_.helper_cores = cores;
  // The remover shares the first helper's core: its unlinks are the helpers'
  // work, done beside them rather than between their copies. That core took
  // a thread of this process already, so a failure here is not reported twice.
  remover_ = std::jthread([this](std::stop_token st) { remover_loop(st); });
  detail::name_os_thread(remover_.native_handle(), "mlbs-remover");
  if (!cores.empty() && cores[0] >= 0) (void)pin_to_core(remover_.native_handle(), cores[0]);
  // Node-shared tiers: another rank's new demand changes this rank's share;
  // replan then, even if this rank is idle (it may hold bytes it must lend back).
  for (TierState& ts : tiers_)
    if (ts.node) {
      shared_tiers_ = true;
      ts.node->watch([this] {
        Lock lock(mu_);
        if (!stopping_) touch();
      });
    }
  // Last: pre-faulting the DRAM budget stalls every mmap while it runs, and
  // the set-up above (threads, rings, buffers) is mostly mmaps.
  mem_->start_prefault();
}

Engine::~Engine() { shutdown(); }

void Engine::shutdown() noexcept {
  Lock lock(mu_);
  if (stopping_) return;
  // One deadline for everything shutdown may wait on: draining what
  // persistent mode owes the last tier, then the transfers in flight.
  const auto deadline = Clock::now() + std::chrono::milliseconds(cfg_.shutdown_timeout_ms);
  if (persistent()) {
    for (std::uint32_t s = 0; s < catalog_.store_count(); ++s) {
      if (!catalog_.store(s).open) continue;
      try {
        wait_durable(lock, s, std::numeric_limits<std::uint64_t>::max(), deadline);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "mlbs: shutdown could not make store '%s' durable: %s\n",
                     catalog_.store(s).name.c_str(), e.what());
      }
    }
  }
  stopping_ = true;
  for (auto& h : helpers_) h.request_stop();
  work_cv_.notify_all();
  state_cv_.notify_all();
  // Helpers plan nothing new now; wait out what they are moving (and the
  // remover's removal), then cut short the waits the tiers own (pacing,
  // injected delays) so joining them keeps to the time-out.
  if (!state_cv_.wait_until(lock, deadline, [&] { return inflight_ == 0; })) {
    std::fprintf(stderr, "mlbs: shutdown: %u transfer%s still in flight after %u ms: cancelled\n", inflight_,
                 inflight_ == 1 ? "" : "s", cfg_.shutdown_timeout_ms);
    for (TierState& ts : tiers_) ts.backend->cancel();
  }
  remover_.request_stop();
  lock.unlock();
  for (auto& h : helpers_)
    if (h.joinable()) h.join();
  if (remover_.joinable()) remover_.join();
  lock.lock();
  // Finish the removals the remover did not get to, so scratch leaves no files.
  while (!removals_.empty()) {
    Op op = std::move(removals_.front());
    removals_.pop_front();
    try {
      remove_now(op);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mlbs: %s\n", e.what());
    }
  }
  // What the ranks hold together (node budgets, shared files) is released
  // now, while every rank is in its Runtime's destructor: stores that outlive
  // the runtime must not make a collective call later, alone. Unlocked: a
  // quota's watcher takes the lock, and its destructor joins the watcher.
  std::vector<std::unique_ptr<core::SharedQuota>> quotas;
  for (TierState& ts : tiers_)
    if (ts.quota) {
      ts.node = nullptr;
      quotas.push_back(ts.quota->take_node_budget());
    }
  state_cv_.notify_all();
  lock.unlock();
  quotas.clear();
  for (TierState& ts : tiers_) ts.backend->shutdown();
}

// ============================================================================
// small helpers
// ============================================================================

std::uint64_t Engine::now_ns() const { return elapsed_ns(t0_); }

void Engine::touch() {
  changed();
  if (idle_helpers_ == 0 || stopping_) return;
  // Tiers shared with other ranks change under this rank's feet (their takes
  // and frees announce nothing here): every change wakes the helpers to look,
  // as they always did, rather than trust a pass made on the node's last word.
  if (shared_tiers_) {
    work_cv_.notify_all();
    return;
  }
  // A store that went live wants a helper looking out for readers.
  if (helpers_have_work() || (!reader_polling_ && reader_check_interval())) work_cv_.notify_one();
}

void Engine::changed() {
  if (live_changed_) {
    live_changed_ = false;
    for (StoreState& s : catalog_.stores()) {
      if (!s.live) continue;
      for (int t = 0; t <= last(); ++t)
        s.live->publish_tier(static_cast<std::size_t>(t), tier_stats(t), tiers_[t].backend->used());
      s.live->notify();
    }
  }
  ++version_;
  ranking_dirty_ = true;
  state_cv_.notify_all();
}

void Engine::wake_helper() {
  if (idle_helpers_ > 0) work_cv_.notify_one();
}

bool Engine::helpers_have_work() {
  if (shared_quota_moved()) return true;
  const std::uint64_t before = version_;
  refresh_placement();  // what the woken helper would do first; it then skips it
  policies::Notes notes;
  if (policies::next(view(), notes) || version_ != before) return true;
  // The pass a helper would have made: its stalls count, and it finds the
  // helpers idle (flush() and a write without room wait for that).
  for (std::size_t t = 0; t < notes.stalls.size(); ++t) tiers_[t].stats.stalls += notes.stalls[t];
  if (inflight_ == 0) idle_version_ = version_;
  return false;
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
  return {catalog_.store(store).name, id, {}};
}

ErrorContext Engine::ctx(const Record& r, int tier) const {
  ErrorContext c{catalog_.store(r.store).name, r.id, {}};
  if (tier >= 0) c.tier = tiers_[tier].backend->label();
  return c;
}

StoreState& Engine::store_ref(std::uint32_t store) {
  if (store >= catalog_.store_count() || !catalog_.store(store).open)
    throw InvalidArgumentError(EBADF, "store handle is closed");
  return catalog_.store(store);
}

Record* Engine::find(std::uint32_t store, std::uint64_t id) { return catalog_.find(store, id); }

Record& Engine::get(std::uint32_t store, std::uint64_t id) {
  if (Record* r = find(store, id)) return *r;
  throw UnknownIdError(ENOENT, "no such record", ctx(store, id));
}

std::string Engine::space_for(const StoreState& s, int tier) const {
  return persistent() && tier == last() ? s.persistent_space : s.space;
}

void Engine::note(Record& r, int from, int to) { catalog::Catalog::note_move(r, from, to, now_ns()); }

void Engine::publish(const Record& r, std::optional<catalog::RecordState> state) {
  const StoreState& s = catalog_.store(r.store);
  if (!s.live) return;
  s.live->publish(r, state.value_or(catalog::state_of(r, last(), persistent())));
  live_changed_ = true;
}

int Engine::fastest_copy(const Record& r, int except) const { return policies::fastest_copy(r, last(), except); }

bool Engine::removal_pending(int tier, const std::string& space, std::uint64_t id,
                             std::uint64_t gen) const {
  if (removing_.count({tier, space, id, gen})) return true;
  return std::any_of(removals_.begin(), removals_.end(), [&](const Op& op) {
    return op.tier == tier && op.id == id && op.gen == gen && op.space == space;
  });
}

double Engine::slowest_file_rate() const {
  double slowest = 0;
  for (int t = 1; t <= last(); ++t) {
    double rate = static_cast<double>(cfg_.tiers[static_cast<std::size_t>(t)].bandwidth_bytes_per_s);
    if (rate == 0) {
      const tiers::Usage u = tiers_[t].backend->usage();
      if (u.busy_ns >= 50'000'000) rate = static_cast<double>(u.bytes_in + u.bytes_out) * 1e9 / double(u.busy_ns);
    }
    if (rate > 0 && (slowest == 0 || rate < slowest)) slowest = rate;
  }
  return slowest;
}

TierStats Engine::tier_stats(int t) const {
  TierStats s = tiers_[t].stats;
  const tiers::Usage u = tiers_[t].backend->usage();
  s.used_bytes = u.used_bytes;
  s.peak_used_bytes = u.peak_used_bytes;
  s.bytes_in = u.bytes_in;
  s.bytes_out = u.bytes_out;
  s.ops_in = u.ops_in;
  s.ops_out = u.ops_out;
  s.busy_ns = u.busy_ns;
  s.errors = u.errors;
  if (t == 0) {  // DRAM holds records as they are
    s.raw_bytes_in = s.bytes_in;
    s.raw_bytes_out = s.bytes_out;
  }
  return s;
}

std::uint64_t Engine::tier_capacity(int t) const {
  if (t == 0) return mem_->capacity();
  const TierState& ts = tiers_[t];
  return ts.node ? ts.quota_limit : cfg_.tiers[t].capacity_bytes;
}

std::uint64_t Engine::tier_free(int t) const {
  const TierState& ts = tiers_[t];
  if (ts.full_latched) return 0;
  if (ts.node) {
    // The share placement planned with: it changes only with a new version,
    // which replans; reserve() checks the current one.
    const std::uint64_t used = ts.backend->used();
    return std::min(ts.quota_limit > used ? ts.quota_limit - used : 0, ts.node->node_free());
  }
  return ts.backend->room();
}

bool Engine::take(int t, std::uint64_t bytes) {
  TierState& ts = tiers_[t];
  if (!ts.backend->reserve(bytes)) {
    // Another rank took the room placement counted on: plan again with what
    // is free now (the record goes elsewhere) rather than wait for an event
    // of this rank's that may never come.
    ranking_dirty_ = true;
    ++version_;
    return false;
  }
  if (ts.node) ts.node_free_seen -= std::min(bytes, ts.node_free_seen);  // our own take is no news
  return true;
}

void Engine::give(int t, std::uint64_t bytes) {
  TierState& ts = tiers_[t];
  ts.backend->release(bytes);
  if (ts.node) ts.node_free_seen += bytes;
}

bool Engine::shared_quota_moved() const {
  for (const TierState& ts : tiers_)
    if (ts.node && (ts.node->version() != ts.quota_version || ts.node->node_free() != ts.node_free_seen))
      return true;
  return false;
}

}  // namespace mlbs::engine

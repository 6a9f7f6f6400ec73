// mlbs — stores: opening (and recovering a persistent one through its
// tier's Backend), closing, and durability (flush and what it waits for).
#include "engine/engine.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <limits>

#include <fmt/format.h>

#include "catalog/live.hpp"
#include "catalog/recovery.hpp"
#include "engine/timing.hpp"
#include "mlbs/errors.hpp"

namespace mlbs::engine {

namespace {

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
// stores
// ============================================================================

std::uint32_t Engine::open_store(const std::string& given, codec::Element element, codec::Plane plane,
                                  const std::string& codec_spec, StorePart part) {
  check_store_name(given);
  if (part.count == 0 || part.index >= part.count)
    throw InvalidArgumentError(EINVAL, fmt::format("part {} of {}", part.index, part.count), {given, {}, {}});
  const std::string name = part.count > 1 ? fmt::format("{}#{}", given, part.index) : given;
  // Before anything is made: a bad spec, or ZFP on a store that is not float
  // or double, is refused here. The store's own codec, else the runtime's.
  const codec::Spec spec = codec_spec.empty() ? codec_ : codec::parse(codec_spec, "codec", "store '" + name + "'");
  std::shared_ptr<const codec::Codec> codec = codec::make(spec, element, name, plane);
  Lock lock(mu_);
  raise_pending();
  for (const StoreState& s : catalog_.stores())
    if (s.open && s.name == name)
      throw StoreBusyError(EBUSY, "a store of this name is already open in this runtime",
                           {name, {}, {}});
  StoreState s;
  s.name = name;
  s.codec = std::move(codec);
  // Under MPI every rank's records are its own, even when all ranks share
  // the tier paths and the store name: the rank is part of every space name.
  const std::string rank = rank_suffix();
  s.space = fmt::format("{}{}.{}-{}.scratch", name, rank, ::getpid(), g_runtime_serial.fetch_add(1));
  s.persistent_space = name + rank;
  for (int t = 1; t <= last(); ++t) tiers_[t].backend->create_space(space_for(s, t));
  const std::uint32_t index = catalog_.add_store(std::move(s));
  if (persistent() && journaled()) {
    try {
      recover(index, given, rank, part);
    } catch (...) {
      StoreState& failed = catalog_.store(index);
      failed.open = false;
      failed.lock.release();
      failed.whole_lock.release();
      for (int t = 1; t < last(); ++t) tiers_[t].backend->remove_space(failed.space);
      throw;
    }
  }
  go_live(index, part);
  return index;
}

std::string Engine::rank_suffix() const {
  return group_ ? fmt::format(".rank-{}", group_->rank()) : std::string();
}

std::optional<std::uint32_t> Engine::recorded_parts(const std::string& name) const {
  if (!persistent() || !journaled()) return std::nullopt;
  return catalog::recorded_part_count(*tiers_[last()].backend, name, rank_suffix());
}

void Engine::go_live(std::uint32_t index, StorePart part) {
  if (!cfg_.live_catalog) return;
  StoreState& s = catalog_.store(index);
  catalog::live::WriterInfo info;
  info.pid = static_cast<int>(::getpid());
  info.rank = group_ ? group_->rank() : 0;
  info.ranks = group_ ? group_->size() : 1;
  info.persistent = persistent();
  info.fingerprint = catalog::live::config_fingerprint(cfg_);
  info.started_unix_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  info.store = s.name;
  info.space = s.space;
  info.persistent_space = s.persistent_space;
  info.part = part.index;
  info.parts = part.count;
  for (const Tier& t : cfg_.tiers) {
    info.tier_kinds.push_back(t.kind);
    info.tier_paths.push_back(t.path);
  }
  try {
    s.live = catalog::live::Writer::create(info, cfg_.live_records);
  } catch (const Error& e) {
    // Observability must not stop the run: it goes on unpublished.
    std::fprintf(stderr, "mlbs: store '%s' runs without a live catalog: %s\n", s.name.c_str(), e.what());
  }
  if (!s.live) return;
  for (const Record& r : catalog_.records_in(index)) publish(r);
  touch();
}

void Engine::recover(std::uint32_t index, const std::string& given, const std::string& rank, StorePart part) {
  StoreState& s = catalog_.store(index);
  tiers::Backend& pt = *tiers_[last()].backend;
  if (part.count > 1 && part.index == 0) {
    // The first part holds the whole store's lock too: no runtime opens the
    // store whole, or in parts, while these parts are open.
    pt.create_space(given + rank);
    s.whole_lock = catalog::StoreLock(pt, given + rank, given);
  }
  s.lock = catalog::StoreLock(pt, s.persistent_space, s.name);
  if (part.index == 0) catalog::check_part_count(pt, given, rank, part.count);
  if (group_) catalog::check_rank_count(pt, s.persistent_space, s.name, group_->size(), group_->rank());
  const catalog::RecoveredStore found = catalog::recover_store(
      pt, s.persistent_space, s.name,
      {cfg_.checksums, static_cast<std::size_t>(std::min<std::uint64_t>(cfg_.io_chunk_bytes, 1 << 20))});
  counters_.checksum_failures += found.skipped;  // every live record that failed verification
  catalog_.generations_used_below(found.next_generation);
  for (const catalog::JournalEntry& e : found.records) {
    auto r = std::make_unique<Record>();
    r->store = index;
    r->id = e.id;
    r->size = e.size;
    r->gen = e.generation;
    r->checksum = e.checksum;
    r->has_checksum = true;
    r->checksum_kind = e.checksum_kind;
    r->stored = e.stored;  // a codec's frame: decoded when read, whatever this runtime's codec
    r->frame_checksum = e.frame_checksum;
    r->copies = bit(last());
    r->journaled = true;
    r->last_use = catalog_.tick();
    note(*r, last(), last());
    tiers_[last()].backend->adopt(e.file_bytes());
    catalog_.insert(std::move(r));
  }
  s.journal = std::make_shared<catalog::Journal>(found.journal_path, found.journal_valid_bytes);
  touch();
}

void Engine::close_store(std::uint32_t index) noexcept {
  Lock lock(mu_);
  if (index >= catalog_.store_count() || !catalog_.store(index).open) return;
  StoreState& s = catalog_.store(index);
  if (persistent() && !stopping_) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(cfg_.shutdown_timeout_ms);
    try {
      wait_durable(lock, index, std::numeric_limits<std::uint64_t>::max(), deadline);
    } catch (const std::exception& e) {
      // Nothing is left to report it to: the records named are lost.
      std::fprintf(stderr, "mlbs: closing store '%s' drops what is not durable: %s\n", s.name.c_str(), e.what());
    }
  }
  // Live readers see the store closed (its segment goes) before its records go.
  s.live.reset();
  // Release every record's copies above the persistent tier (all of them in
  // scratch mode); records being copied are finished by their helper first.
  for (Record* r : catalog_.records_of(index)) {
    if (persistent() && r->journaled) {
      // Forget it here; its journaled last-tier copy stays on disk.
      r->copies &= ~bit(last());
      tiers_[last()].backend->release(r->size);
    }
    retire(*r);
  }
  // Wait (bounded) for in-flight copies and queued removals of this store.
  const auto deadline = Clock::now() + std::chrono::milliseconds(cfg_.shutdown_timeout_ms);
  auto settled = [&] {
    if (!catalog_.records_in(index).empty() || catalog_.retiring_any(index)) return false;
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
  s.whole_lock.release();
  touch();
}

// ============================================================================
// durability
// ============================================================================

void Engine::wait_durable(Lock& lock, std::uint32_t store, std::uint64_t horizon,
                          Clock::time_point deadline) {
  flush_horizon_ = std::max(flush_horizon_, std::min(horizon, catalog_.newest_generation()));
  touch();
  const std::uint64_t limit = std::min(horizon, catalog_.newest_generation());
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
    if (catalog_.store(store).journal_erases) return false;
    for (const Record& r : catalog_.retiring()) {
      if (r.store != store) continue;
      if (r.journaled && (r.copies & bit(last()))) return false;
      // A copy still in flight may journal the erased record yet, its erase
      // entry after it: a crash in between would undo the acknowledged erase.
      if (r.busy && !superseded(r)) return false;
    }
    owed.clear();
    bool moving = false;
    for (const Record& r : catalog_.records_in(store)) {
      if (r.gen > limit || r.journaled) continue;
      owed.push_back(&r);
      moving = moving || !(r.avoid & bit(last()));
    }
    if (owed.empty()) return true;
    // Every record still owed has failed on the last tier, or the helpers
    // found nothing more to do while some are owed (a full device, a quota
    // that cannot hold them): waiting longer would wait forever.
    if (!moving) return true;
    for (const Record* r : owed)
      if (r->busy) return false;  // a direct read holds it: not stuck
    return idle();
  };
  if (!state_cv_.wait_until(lock, deadline, [&] { return done() || !pending_errors_.empty(); }))
    throw IoError(ETIMEDOUT,
                  fmt::format("flush did not complete by the deadline (shutdown_timeout_ms = {}): transfers to the "
                              "persistent tier are still in flight (a slow device?)",
                              cfg_.shutdown_timeout_ms),
                  {catalog_.store(store).name, {}, tiers_[last()].backend->label()});
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
  const StoreState& st = catalog_.store(store);
  ErrorContext where{st.name, owed.front()->id, pt.label()};
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
      const tiers::ObjectRef ref{st.persistent_space, owed.front()->id, owed.front()->gen, st.name};
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
                                    what, format_bytes(cap), format_bytes(tiers_[last()].backend->used())),
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
    for (Record& r : catalog_.records_in(store))
      if (r.write_failure && !r.error && r.copies != 0) {
        r.avoid &= ~bit(last());
        r.write_failure = nullptr;
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
  flush_horizon_ = std::max(flush_horizon_, catalog_.newest_generation());
  touch();
  state_cv_.wait(lock, [&] {
    return stopping_ || !pending_errors_.empty() || idle();
  });
  raise_pending();
}

}  // namespace mlbs::engine

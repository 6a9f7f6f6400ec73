// mlbs — the application side of the engine: write (copy into a DRAM slot),
// read (swap a slot out, or fetch on demand), erase, and what the catalog
// says of records and tiers.
#include "engine/engine.hpp"

#include <algorithm>
#include <atomic>
#include <limits>
#include <cstring>

#include <fmt/format.h>

#include "copy/copy.hpp"
#include "engine/policies/ranking.hpp"
#include "engine/timing.hpp"
#include "mlbs/errors.hpp"
#include "mlbs/trace.hpp"
#include "tiers/transfer.hpp"

namespace mlbs::engine {

namespace {

/// What copy_hashed() made: the record's checksum, and the share of the
/// copy's wall time its hashing took.
struct HashedCopy {
  std::uint64_t checksum = 0;
  std::uint64_t hash_ns = 0;
};

/// Copies a record into its slot and returns its checksum: each piece is
/// hashed by the thread that copied it, while it is still in that core's
/// cache (0.3-0.45 ms more per 16 MiB on two threads here, against 1-1.7 ms
/// of a helper's time on a core the application's kernels were using;
/// docs/architecture.md, "Checksums"). The hashing is timed apart
/// (Stats::copy_hash_ns): it is mlbs's own work, which a bound on the
/// copy must not forgive. Two clock reads per MiB cost well under 1 us.
HashedCopy copy_hashed(std::byte* dst, const std::byte* src, std::size_t bytes) {
  static_assert(catalog::kRecordChecksum == catalog::ChecksumKind::pieces);
  if (!bytes) return {catalog::combine_pieces(nullptr, 0), 0};
  struct Pieces {
    std::vector<std::uint64_t> digests;
    std::atomic<std::uint64_t> hash_ns{0};  // summed over the team's threads
  } pieces{std::vector<std::uint64_t>((bytes + catalog::kChecksumPiece - 1) / catalog::kChecksumPiece)};
  const copy::Decision d = copy::bulk_pieces(
      dst, src, bytes, catalog::kChecksumPiece,
      [](void* ctx, std::size_t i, const std::byte* piece, std::size_t n) noexcept {
        auto& p = *static_cast<Pieces*>(ctx);
        const auto start = Clock::now();
        p.digests[i] = catalog::checksum(piece, n);
        p.hash_ns.fetch_add(elapsed_ns(start), std::memory_order_relaxed);
      },
      &pieces);
  // The threads hashed side by side: the wall time it took is their sum over
  // their number.
  return {catalog::combine_pieces(pieces.digests.data(), pieces.digests.size()),
          pieces.hash_ns.load(std::memory_order_relaxed) / std::max(1u, d.threads)};
}

}  // namespace

// ============================================================================
// the application side
// ============================================================================

StoreState& Engine::check_new_record(std::uint32_t store, std::uint64_t id, std::size_t bytes) {
  StoreState& s = store_ref(store);
  if (find(store, id) || s.pending.count(id))
    throw DuplicateIdError(EEXIST, "record already written (erase it before writing it again)",
                           ctx(store, id));
  const std::uint64_t slot_bytes = detail::round_up_block(bytes);  // never less than bytes
  if (slot_bytes > mem_->capacity())
    throw CapacityError(ENOSPC,
                        bytes > mem_->capacity()
                            ? fmt::format("record of {} is larger than the DRAM budget of {}", format_bytes(bytes),
                                          format_bytes(mem_->capacity()))
                            : fmt::format("record of {} needs a DRAM slot of {} (slots are whole {}-byte blocks) "
                                          "and the DRAM budget is {}: give tier 0 at least {}",
                                          format_bytes(bytes), format_bytes(slot_bytes), detail::kBlockAlign,
                                          format_bytes(mem_->capacity()), format_bytes(slot_bytes)),
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
    if (cap && catalog_.live_bytes() + bytes > cap)
      throw CapacityError(ENOSPC,
                          fmt::format("record of {} could never become durable: the persistent tier's quota of {} "
                                      "is taken by {} of records already written (erase records or raise the quota)",
                                      format_bytes(bytes), format_bytes(cap), format_bytes(catalog_.live_bytes())),
                          {s.name, id, tiers_[last()].backend->label()});
  }
  return s;
}

void Engine::write(std::uint32_t store, std::uint64_t id, const std::byte* data, std::size_t bytes) {
  Lock lock(mu_);
  raise_pending();
  StoreState& s = check_new_record(store, id, bytes);
  const auto wait_start = Clock::now();
  // Before take_slot() plans: DRAM keeps room for the step this write may be part of (policies::write_room).
  // Another thread's write may have returned since this one began: a gap of 0, the same burst.
  const double gap_s = last_write_end_
                           ? std::max(0.0, std::chrono::duration<double>(wait_start - *last_write_end_).count())
                           : std::numeric_limits<double>::infinity();
  const bool step_lead = bursts_.start(detail::round_up_block(bytes), gap_s, double(last_copy_ns_) * 1e-9);
  if (!last_write_bytes_) writes_began_ = wait_start;  // the first write, or the first since reads began
  bool waited = false;
  detail::Block block = take_slot(lock, s, id, bytes, waited);
  Clock::time_point wait_end{};
  if (waited) {
    wait_end = Clock::now();
    counters_.write_block_ns += ns_between(wait_start, wait_end);
    ++counters_.write_stalls;
  }
  need_ = codec::called(need_, waited);
  lock.unlock();
  const bool tracing = trace::enabled();
  if (tracing && waited)
    trace::span("write blocked", "write_block", trace_ns(wait_start), trace_ns(wait_end), bytes);
  const auto copy_start = Clock::now();
  std::optional<std::uint64_t> sum;
  std::uint64_t hash_ns = 0;
  if (cfg_.checksums) {
    const HashedCopy c = copy_hashed(block.data(), data, bytes);
    sum = c.checksum;
    hash_ns = c.hash_ns;
  } else if (bytes) {
    copy::bulk(block.data(), data, bytes);
  }
  const auto copy_end = Clock::now();
  const std::uint64_t copy_ns = ns_between(copy_start, copy_end);
  if (tracing) trace::span("copy into slot", "copy", trace_ns(copy_start), trace_ns(copy_end), bytes);
  lock.lock();
  s.pending.erase(id);
  pending_bytes_ -= detail::round_up_block(bytes);
  counters_.copy_ns += copy_ns;
  counters_.copy_hash_ns += std::min(hash_ns, copy_ns);
  last_write_end_ = copy_end;
  last_copy_ns_ = copy_ns;
  add_record(store, id, bytes, std::move(block), sum, step_lead);
}

detail::Block Engine::take_slot(Lock& lock, StoreState& s, std::uint64_t id, std::size_t bytes, bool& waited) {
  // Planning sees a write in progress only through DRAM's headroom
  // (policies::dram_limit): when that is unchanged, as it is for a stream of
  // equal records, and the slot is there, the helpers are told once, when
  // the record is in (a wake-up costs the caller a futex call).
  const std::uint64_t slot_bytes = detail::round_up_block(bytes);
  const std::uint64_t headroom = std::max(pending_bytes_, last_write_bytes_);
  s.pending.emplace(id, slot_bytes);
  pending_bytes_ += slot_bytes;
  last_write_bytes_ = slot_bytes;
  bool announced = std::max(pending_bytes_, last_write_bytes_) != headroom;
  if (announced) touch();
  auto unpend = [&] {
    s.pending.erase(id);
    pending_bytes_ -= slot_bytes;
  };
  // Counted while it waits: helpers may then stage a record leaving DRAM on
  // a faster tier than its busy target (policies::drain_dram).
  struct Waiter {
    unsigned& waiters;
    bool counted = false;
    ~Waiter() {
      if (counted) --waiters;
    }
  } waiter{slot_waiters_};
  for (;;) {
    // Free room needs no planning pass (policies::dram_room would drop
    // nothing): most writes take a slot without ranking the catalog.
    bool room = mem_->fits(bytes);
    if (!room) {
      refresh_placement();
      room = make_dram_room(bytes);
    }
    if (room)
      if (auto block = mem_->allocate_slot(bytes)) return std::move(*block);
    if (!announced) {  // no room yet: the helpers make it, knowing of this write
      announced = true;
      touch();
      continue;
    }
    if (idle() && copying_out_ == 0) {
      // Nothing under way will make room: records placement keeps in DRAM
      // for reads to come give their slots up before the write is refused.
      refresh_placement();
      if (make_dram_room(bytes, policies::Wishes::yield))
        if (auto block = mem_->allocate_slot(bytes)) {
          touch();  // placement changed under the helpers
          return std::move(*block);
        }
      unpend();
      touch();
      raise_pending();
      // A failed tier, not the quotas, may be why there is no room.
      for (const Record& r : catalog_.records())
        if (r.write_failure && (r.avoid & bit(last())) && r.copies == bit(0)) std::rethrow_exception(r.write_failure);
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
    if (!waiter.counted) {
      waiter.counted = true;
      ++slot_waiters_;
      touch();
    }
    state_cv_.wait(lock);
  }
}

void Engine::add_record(std::uint32_t store, std::uint64_t id, std::size_t bytes, detail::Block slot,
                        std::optional<std::uint64_t> checksum, bool step_lead) {
  auto r = std::make_unique<Record>();
  r->store = store;
  r->id = id;
  r->size = bytes;
  if (checksum) {
    r->checksum = *checksum;
    r->has_checksum = true;
  }
  r->gen = catalog_.next_generation();
  r->step_lead = step_lead;
  r->copies = bit(0);
  r->slot = std::move(slot);
  r->last_use = catalog_.tick();
  note(*r, -1, 0);
  ++counters_.writes;
  mem_->count_transfer(true, bytes);
  publish(catalog_.insert(std::move(r)));
  touch();
}

std::optional<detail::Block> Engine::lend_slot(std::size_t bytes) {
  Lock lock(mu_);
  raise_pending();
  if (lent_bytes_ + detail::round_up_block(bytes) > mem_->capacity() / 2) return std::nullopt;
  bool room = mem_->fits(bytes);
  if (!room) {
    refresh_placement();
    room = make_dram_room(bytes);
  }
  std::optional<detail::Block> block;
  if (room) block = mem_->allocate_slot(bytes);
  if (block) {
    // The next write's headroom, as write() would keep it.
    if (!last_write_bytes_) writes_began_ = Clock::now();
    last_write_bytes_ = block->capacity();
    lent_bytes_ += block->capacity();
  }
  touch();  // with or without it, the helpers make room for what comes
  return block;
}

void Engine::write_lent(std::uint32_t store, std::uint64_t id, detail::Block& slot, std::size_t bytes) {
  Lock lock(mu_);
  raise_pending();
  if (bytes > slot.capacity())
    throw InvalidArgumentError(EINVAL, fmt::format("record of {} in a lent slot of {}", format_bytes(bytes),
                                                   format_bytes(slot.capacity())),
                               ctx(store, id));
  check_new_record(store, id, bytes);
  lent_bytes_ -= slot.capacity();
  add_record(store, id, bytes, std::move(slot));
}

void Engine::return_slot(detail::Block slot) noexcept {
  Lock lock(mu_);
  lent_bytes_ -= slot.capacity();
  mem_->release_slot(std::move(slot));
  changed();
}

Record* Engine::await_read(Lock& lock, std::uint32_t store, std::uint64_t id, std::size_t elem, std::size_t exact,
                           std::size_t reach, bool own_errors_only) {
  if (!own_errors_only || stopping_) raise_pending();
  StoreState& s = store_ref(store);
  Record* r = &get(store, id);
  if (elem == 0 || r->size % elem != 0)
    throw SizeMismatchError(EMSGSIZE,
                            fmt::format("record of {} bytes is not a whole number of {}-byte elements",
                                        r->size, elem),
                            ctx(store, id));
  if (exact != detail::kAnySize && r->size != exact)
    throw SizeMismatchError(EMSGSIZE, fmt::format("record of {} bytes, expected {}", r->size, exact),
                            ctx(store, id));
  if (last_write_bytes_) turn();  // the first read after writes
  need_ = codec::called(need_, !(r->copies & bit(0)));
  if (!(r->copies & bit(0))) {
    r->demand = true;
    publish(*r);
    touch();
    const auto wait_start = Clock::now();
    // Also wake when the helpers are idle and the record is still not in
    // DRAM: no room can be made there, so it is read directly (below).
    state_cv_.wait(lock, [&] {
      r = find(store, id);
      return !r || (r->copies & bit(0)) || r->error || stopping_ || (!own_errors_only && !pending_errors_.empty()) ||
             (idle() && !r->busy);
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
    if (stopping_ || (!own_errors_only && !pending_errors_.empty())) raise_pending();
  }
  // The schedule's bookkeeping: this use is consumed once it was read to
  // its end (a part before that, a header, leaves it where it ranks).
  if (reach >= r->size) {
    ++s.consumed[id];
    r->consumed = true;
    ranking_dirty_ = true;  // read once: a fifo or lifo schedule ranks it last now
  }
  // A read phase has begun: DRAM need not keep write headroom any more (the
  // next write makes its own room from clean slots).
  last_write_bytes_ = 0;
  r->last_use = catalog_.tick();
  ++counters_.reads;
  return r;
}

bool Engine::released_when_read(const Record& r) const {
  return !persistent() && !(schedule_.kind == Schedule::Kind::explicit_order && rank_of(r) < policies::kNoNextUse);
}

std::size_t Engine::read(std::uint32_t store, std::uint64_t id, detail::Block& buf,
                         std::size_t elem, std::size_t exact) {
  Lock lock(mu_);
  Record* r = await_read(lock, store, id, elem, exact);
  const bool release = released_when_read(*r);
  const std::size_t size = r->size;
  if (!(r->copies & bit(0))) {
    read_direct(lock, *r, buf);
    finish_read(*r, release);
    return size;
  }
  mem_->count_transfer(false, r->size);
  // O(1) delivery: hand the slot itself to the store when no one else needs it.
  const bool can_take = !r->busy && r->pins == 0 && buf.capacity() == r->slot.capacity() &&
                        (release || (persistent() && r->journaled));
  if (can_take) {
    detail::Block taken = std::move(r->slot);
    r->copies &= ~bit(0);
    note(*r, 0, -1);
    mem_->exchange_slot(taken.capacity(), std::move(buf));
    buf = std::move(taken);
    ++counters_.buffer_swaps;
    if (release) {
      erase_record(*r);
    } else {
      publish(*r);
      touch();
    }
    return size;
  }
  // Copy out while pinned (a helper may be reading the same slot: both only read).
  ++r->pins, ++copying_out_;
  publish(*r);
  lock.unlock();
  if (buf.capacity() < size) buf = detail::Block::allocate(size);
  const std::uint64_t copy_start = trace::enabled() ? trace::now_ns() : 0;
  if (size) copy::bulk(buf.data(), r->slot.data(), size);
  if (copy_start) trace::span("copy out of slot", "copy", copy_start, trace::now_ns(), size);
  lock.lock();
  --r->pins, --copying_out_;
  finish_read(*r, release);
  return size;
}

std::size_t Engine::read_into(std::uint32_t store, std::uint64_t id, std::byte* dst, std::size_t offset,
                              std::size_t len, bool own_errors_only) {
  Lock lock(mu_);
  if (!persistent()) {
    if (const std::size_t size = get(store, id).size; offset != 0 || len < size)
      throw InvalidArgumentError(EINVAL,
                                 fmt::format("bytes [{}, +{}) of a record of {}: a part of a record is read from a "
                                             "persistent store only (a scratch read releases the record)",
                                             offset, len, size),
                                 ctx(store, id));
  }
  Record* r = await_read(lock, store, id, 1, detail::kAnySize,
                         len > std::numeric_limits<std::size_t>::max() - offset ? std::numeric_limits<std::size_t>::max()
                                                                                : offset + len,
                         own_errors_only);
  const std::size_t size = r->size;
  const std::size_t n = offset < size ? std::min(len, size - offset) : 0;
  const bool release = released_when_read(*r);
  if (!(r->copies & bit(0))) {
    detail::Block whole;  // rare: no DRAM room could be made for it
    read_direct(lock, *r, whole);
    if (n) std::memcpy(dst, whole.data() + offset, n);
    finish_read(*r, release);
    return n;
  }
  mem_->count_transfer(false, n);
  // Copied out while pinned: the slot stays the record's.
  ++r->pins, ++copying_out_;
  publish(*r);
  lock.unlock();
  const std::uint64_t copy_start = trace::enabled() ? trace::now_ns() : 0;
  if (n) copy::bulk(dst, r->slot.data() + offset, n);
  if (copy_start) trace::span("copy out of slot", "copy", copy_start, trace::now_ns(), n);
  lock.lock();
  --r->pins, --copying_out_;
  finish_read(*r, release);
  return n;
}

void Engine::finish_read(Record& r, bool release) {
  // Either may free `r`: nothing touches it afterwards.
  if (!r.retired) publish(r);
  if (release && !r.retired)
    retire(r);
  else
    settle(r);
  touch();
}

void Engine::read_direct(Lock& lock, Record& r, detail::Block& buf) {
  // Marked busy like a helper's copy, so no copy of it is dropped meanwhile
  // (but by this read, under the lock, when it fails verification).
  r.busy = true;
  const std::string store_name = catalog_.store(r.store).name;
  const bool verify = cfg_.checksums && r.has_checksum;
  const auto start = Clock::now();
  int src = fastest_copy(r);
  std::uint64_t decode_ns = 0;
  std::exception_ptr err;
  for (;;) {
    const std::string space = space_for(catalog_.store(r.store), src);  // under the lock, each time
    lock.unlock();
    bool corrupt = false;
    try {
      if (buf.capacity() < r.size) buf = detail::Block::allocate(r.size);
      detail::Block frame;  // a compressed record's frame (rare path: made for it)
      auto reader = tiers_[src].backend->open({space, r.id, r.gen, store_name}, r.file_bytes());
      decode_ns = tiers::read_record(*reader, stored_of(r), buf.data(), frame, verify, cfg_.helper_threads,
                                     {store_name, r.id, tiers_[src].backend->label()});
    } catch (const CorruptionError&) {
      corrupt = true;
      err = std::current_exception();
    } catch (...) {
      err = std::current_exception();
    }
    lock.lock();
    if (!err || !corrupt) break;
    // What a helper's copy does with a bad read (Engine::complete): the only
    // copy is read once more; else the bad copy goes and the next one is read.
    tiers_[src].backend->count_error();
    ++counters_.checksum_failures;
    if (read_again(r, src)) {
      err = nullptr;
      continue;
    }
    if (!(r.copies & ~bit(src))) break;
    drop_copy(r, src);
    src = fastest_copy(r);
    err = nullptr;
  }
  const auto end = Clock::now();
  if (trace::enabled()) {
    // The application waits for this read: a read_block span on its thread.
    char name[32];
    const std::size_t n = fmt::format_to_n(name, sizeof name, "direct read {}->0", src).size;
    trace::span({name, std::min(n, sizeof name)}, "read_block", trace_ns(start), trace_ns(end), r.size);
  }
  r.busy = false;
  if (err) {
    settle(r);
    touch();
    std::rethrow_exception(err);
  }
  r.doubted &= ~bit(src);
  ++counters_.direct_reads;
  counters_.decode_ns += decode_ns;
  tiers_[src].stats.raw_bytes_out += r.size;
  tiers_[src].stats.codec_ns += decode_ns;
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
  for (const Record& r : catalog_.records_in(store)) out.push_back(r.id);
  std::sort(out.begin(), out.end());
  return out;
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
  info.stored_bytes = r.stored;
  for (int t = 0; t <= last(); ++t)
    if (r.copies & bit(t)) info.tiers.push_back(t);
  info.durable = r.journaled;
  info.lineage = r.lineage;
  return info;
}

Schedule::Kind Engine::schedule_kind() {
  Lock lock(mu_);
  return schedule_.kind;
}

void Engine::set_schedule(const Schedule& schedule) {
  if (schedule.kind == Schedule::Kind::explicit_order)
    throw InvalidArgumentError(EINVAL, "an explicit order is given at construction (Config::schedule) only", {});
  Lock lock(mu_);
  if (schedule_.kind == Schedule::Kind::explicit_order)
    throw InvalidArgumentError(EINVAL, "a runtime constructed with an explicit order keeps it", {});
  schedule_ = schedule;
  for (Record* r : catalog_.ranking())
    if (r) r->rank = catalog::kUnranked;  // every rank changes: sort them all again
  ranking_dirty_ = true;
  touch();
}

Stats Engine::stats() {
  Lock lock(mu_);
  Stats s = counters_;
  s.live_records = 0;
  std::vector<std::uint64_t> copies(tiers_.size(), 0);
  for (const Record& r : catalog_.records()) {
    ++s.live_records;
    if (r.for_readers) ++s.awaiting_readers;
    for (int t = 0; t <= last(); ++t)
      if (r.copies & bit(t)) ++copies[t];
  }
  for (int t = 0; t <= last(); ++t) {
    TierStats ts = tier_stats(t);
    ts.records = copies[t];
    s.tiers.push_back(ts);
  }
  return s;
}

}  // namespace mlbs::engine

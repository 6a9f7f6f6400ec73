// mlbs — the helper threads: each takes the plan's next copy, runs it
// outside the lock (one transfer routine for every copy), and completes it
// in the catalog under the lock; and the remover, which deletes the file
// copies the catalog dropped, beside them.
#include "engine/engine.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "catalog/checksum.hpp"
#include "codec/frame.hpp"
#include "engine/policies/policies.hpp"
#include "engine/timing.hpp"
#include "mlbs/errors.hpp"
#include "mlbs/trace.hpp"
#include "tiers/transfer.hpp"
#include "trace/recorder.hpp"

namespace mlbs::engine {

// ============================================================================
// the helper threads
// ============================================================================

void Engine::helper_loop(std::stop_token st, unsigned index) {
  trace::name_thread(fmt::format("helper {}", index));
  detail::Block& staging = staging_[index];
  detail::Block& frame = frames_[index];
  // Its CPU time is counted as it goes (mu_ held): planning, copies,
  // hashing, waking; not its waits.
  CpuMeter cpu(counters_.helper_cpu_ns);
  Lock lock(mu_);
  while (!st.stop_requested()) {
    cpu.count();
    const std::uint64_t seen = version_;
    std::optional<Op> op;
    try {
      op = plan();
    } catch (...) {
      pending_errors_.push_back(std::current_exception());
      changed();
    }
    if (!op) {
      if (inflight_ == 0 && version_ == seen) {
        idle_version_ = seen;
        state_cv_.notify_all();
      }
      // One idle helper also wakes now and then to notice readers attaching
      // from another process (they read file tiers: records go down for them).
      const auto interval = reader_polling_ ? std::nullopt : reader_check_interval();
      ++idle_helpers_;
      if (!interval) {
        work_cv_.wait(lock, st, [&] { return version_ != seen; });
      } else {
        reader_polling_ = true;
        if (!work_cv_.wait_for(lock, st, *interval, [&] { return version_ != seen; }) && readers_changed()) {
          ranking_dirty_ = true;
          ++version_;
        }
        reader_polling_ = false;
      }
      --idle_helpers_;
      continue;
    }
    ++inflight_;
    running_[index] = {op->rec, op->why, op->src};
    cancel_[index].store(false, std::memory_order_relaxed);
    // More to do than this: an idle helper takes it while this one moves.
    if (idle_helpers_ > 0 && helpers_have_work()) work_cv_.notify_one();
    lock.unlock();
    const auto start = Clock::now();
    std::exception_ptr err;
    bool cancelled = false;
    try {
      execute(*op, staging, frame, cancel_[index]);
    } catch (const tiers::Cancelled&) {
      cancelled = true;
      err = std::current_exception();
    } catch (...) {
      err = std::current_exception();
    }
    const auto end = Clock::now();
    if (trace::enabled()) trace_op(*op, start, end, cancelled ? " cancelled" : err ? " failed" : "");
    lock.lock();
    --inflight_;
    running_[index] = {};
    complete(*op, err);
    changed();  // this helper plans next, and wakes another if it finds more
  }
  cpu.count();
}

// ============================================================================
// the remover
// ============================================================================

void Engine::remover_loop(std::stop_token st) {
  trace::name_thread("remover");
  CpuMeter cpu(counters_.helper_cpu_ns);  // CPU it takes from the application, as a helper's
  Lock lock(mu_);
  // At a stop it finishes what is queued; shutdown() removes what comes after.
  while (removal_cv_.wait(lock, st, [&] { return !removals_.empty(); })) {
    Op op = std::move(removals_.front());
    removals_.pop_front();
    removing_.insert({op.tier, op.space, op.id, op.gen});
    ++inflight_;
    lock.unlock();
    const auto start = Clock::now();
    std::exception_ptr err;
    try {
      remove_now(op);
    } catch (...) {
      err = std::current_exception();
    }
    if (trace::enabled()) trace_op(op, start, Clock::now(), err ? " failed" : "");
    lock.lock();
    --inflight_;
    removed(op, err);
    cpu.count();
    // A copy may have waited for this file name or for room on a full device;
    // and with nothing left to move the helpers are idle (idle()).
    touch();
  }
  cpu.count();
}

void Engine::remove_now(const Op& op) {
  if (op.journal) {  // the erase is durable before the file goes
    op.journal->append({catalog::JournalEntry::Op::erase, op.id, op.gen, 0, 0});
    op.journal->sync();
  }
  tiers_[op.tier].backend->remove({op.space, op.id, op.gen, op.store_name});
}

void Engine::removed(const Op& op, std::exception_ptr err) {
  removing_.erase({op.tier, op.space, op.id, op.gen});
  if (err) {
    pending_errors_.push_back(err);
  } else if (std::exchange(tiers_[op.tier].full_latched, false)) {
    ranking_dirty_ = true;  // room came free on a device that said it was full: try it again
  }
  if (op.journal)
    for (StoreState& s : catalog_.stores())
      if (s.journal == op.journal) --s.journal_erases;
}

void Engine::last_request_queued(Op& op, int t) {
  Lock lock(mu_);
  if (op.released) return;
  op.released = t;
  --tiers_[t].copies_in_flight;
  if (t == op.src && op.dst < op.src) --tiers_[t].fetches_in_flight;
  if (t == op.dst) --tiers_[t].arrivals_in_flight;
  ++version_;  // no placement changed: the idle helper plans with the tier free
  wake_helper();
}

void Engine::turn() {
  last_write_bytes_ = 0;
  ranking_dirty_ = true;
  refresh_placement();
  for (std::size_t i = 0; i < running_.size(); ++i)
    if (const Running& x = running_[i]; x.rec && policies::stops_at_turn(x.why, x.src, *x.rec, persistent()))
      cancel_[i].store(true, std::memory_order_relaxed);
}

void Engine::stop_copy_of(const Record& r) {
  for (std::size_t i = 0; i < running_.size(); ++i)
    if (running_[i].rec == &r) cancel_[i].store(true, std::memory_order_relaxed);
}

void Engine::execute(Op& op, detail::Block& staging, detail::Block& frame, const std::atomic<bool>& cancel) {
  // The record is busy: no one else changes its copies, slot, frame or
  // checksums, so reading them without the lock is safe; the rest was copied
  // into `op`.
  Record& r = *op.rec;
  const std::uint64_t size = r.size;
  // Bytes from a file tier are checked against the record's checksums; a
  // record leaving DRAM for the first time without one (write() hashes what
  // it copies; a lent slot's record has none yet) gets it on the way.
  const bool verify = cfg_.checksums && r.has_checksum && op.src > 0;
  const bool first = cfg_.checksums && !r.has_checksum && op.src == 0;
  std::unique_ptr<tiers::ObjectReader> reader;
  if (op.src > 0) reader = tiers_[op.src].backend->open({op.space, r.id, r.gen, op.store_name}, r.file_bytes());
  // A copy may be stopped (turn(), stop_copy_of()) between two pieces: a copy
  // ahead's are small, as it is stopped whenever reads begin and holds the
  // slower tier; one out of DRAM goes in quarters of the record (at most
  // Config::io_chunk_bytes), so the first read stops a drain it made useless
  // within a quarter or two (in one piece, an 8 MiB drain ran to its end:
  // 60 ms of the slower tier's time at the turn in mlbs_sim_check's spread
  // run); between file tiers, the chunks they move anyway.
  tiers::Control control;
  control.stop = &cancel;
  control.piece_bytes = op.why == policies::Purpose::copy_ahead ? kStoppablePiece
                        : op.src == 0 ? std::min(detail::round_up_block(size / 4), cfg_.io_chunk_bytes)
                                      : cfg_.io_chunk_bytes;
  control.hash_kind = r.checksum_kind;
  // The slower end, often the bottleneck, may take its next copy once this
  // one's last request there is queued (last_request_queued()).
  const int slower = std::max(op.src, op.dst);
  (slower == op.src ? control.last_read : control.last_write) = [this, &op, slower] { last_request_queued(op, slower); };
  if (op.dst == 0) {
    // Up into DRAM: raw, or its frame decoded.
    try {
      op.codec_ns = tiers::read_record(*reader, stored_of(r), op.block.data(), frame, verify, cfg_.helper_threads,
                                       {op.store_name, r.id, tiers_[op.src].backend->label()}, control);
      if (op.codec_ns && trace::enabled()) {
        const std::uint64_t end = trace::now_ns();
        trace::span("decode", "codec", end - op.codec_ns, end, size);
      }
    } catch (const CorruptionError&) {
      tiers_[op.src].backend->count_error();  // the backend read what was there: the copy is bad
      throw;
    }
    return;
  }
  // Down to a file tier, or between two: the record's bytes, or its frame
  // (made now when the store's codec pays for it, else the one its copies hold).
  const std::byte* from = op.src == 0 ? r.slot.data() : nullptr;
  std::uint64_t bytes = r.file_bytes();
  bool framed = r.stored != 0;
  std::uint64_t expected = framed ? r.frame_checksum : r.checksum;
  if (op.codec) {
    if (first) {
      op.checksum = catalog::record_checksum(from, size, r.checksum_kind);
      op.computed_checksum = true;
    }
    const std::size_t chunk = codec::chunk_bytes_for(op.codec->element(), op.codec->plane());
    const std::size_t bound = codec::frame_bound(*op.codec, size, chunk);
    if (frame.capacity() < bound) frame = detail::Block::allocate_untouched(bound);
    const auto start = Clock::now();
    // Kept when it saves size and, where the codec is used only while the
    // application waits (codec_when = needed), more tier time than it took;
    // a record whose probe says neither is not encoded in full.
    const double rate = cfg_.codec_when == CodecWhen::needed ? slowest_file_rate() : 0.0;
    op.attempt = codec::encode_frame(*op.codec, {from, size}, {frame.data(), bound}, cfg_.helper_threads, chunk, true,
                                     rate);
    if (op.attempt == 0) op.attempt = size;  // the probe found nothing worth it: as a frame no smaller
    op.codec_ns = elapsed_ns(start);
    if (trace::enabled()) trace::span("encode", "codec", trace_ns(start), trace_ns(Clock::now()), size);
    if (codec::pays(size, op.attempt) && codec::saves_time(size, op.attempt, op.codec_ns, rate)) {
      from = frame.data();
      bytes = op.attempt;
      framed = true;
    }
  }
  if (bytes > op.reserved) {
    // Planned at its frame's expected size, the record takes more (a frame
    // larger than expected, or raw after all): the rest of the room now, or
    // the copy is given up and planned again at what it really takes.
    Lock lock(mu_);
    if (!take(op.dst, bytes - op.reserved)) throw RoomShort{bytes};
    op.reserved = bytes;
  }
  std::unique_ptr<tiers::ObjectWriter> writer =
      tiers_[op.dst].backend->create({op.dst_space, r.id, r.gen, op.store_name}, bytes);
  // Hashed on the way: what is verified (from a file tier), a new frame, or
  // a record leaving DRAM whose checksum is not known yet.
  const bool new_frame = framed && op.src == 0;
  const bool hash = verify || new_frame || (first && !op.computed_checksum);
  // Staging for copies between two file tiers: memory use stays bounded by
  // helper_threads * io_chunk_bytes whatever the record size. The
  // constructor gave each helper its own (Engine::Engine).
  if (!from && !staging) staging = detail::Block::allocate(cfg_.io_chunk_bytes);
  const std::uint64_t digest =
      tiers::transfer({from, reader.get()}, {nullptr, writer.get()}, bytes, &staging, hash, control);
  if (new_frame) {
    op.stored = bytes;
    op.frame_checksum = digest;
  } else if (first && !op.computed_checksum) {
    op.checksum = expected = digest;
    op.computed_checksum = true;
  }
  if (op.computed_checksum) expected = op.checksum;
  if (verify && digest != expected) {
    tiers_[op.src].backend->count_error();  // the backend read what was there: the copy is bad
    throw CorruptionError(EBADMSG, fmt::format("checksum mismatch: read {:016x}, catalog {:016x}", digest, expected),
                          {op.store_name, r.id, tiers_[op.src].backend->label()});
  }
  if (writer) writer->commit(op.persist);
  if (op.persist && op.journal) {
    try {
      // The record's own checksum; a frame's size and checksum beside it.
      catalog::JournalEntry put{catalog::JournalEntry::Op::put, r.id, r.gen, size,
                                op.computed_checksum ? op.checksum : r.checksum};
      put.checksum_kind = r.checksum_kind;
      if (framed) {
        put.stored = bytes;
        put.frame_checksum = new_frame ? digest : r.frame_checksum;
      }
      op.journal->append(put);
    } catch (...) {
      tiers_[op.dst].backend->count_error();  // the copy cannot be made durable
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

void Engine::note_codec(const Op& op) {
  Record& r = *op.rec;
  if (op.dst == 0) {
    counters_.decode_ns += op.codec_ns;
    tiers_[op.src].stats.codec_ns += op.codec_ns;
    return;
  }
  tiers_[op.dst].stats.codec_ns += op.codec_ns;
  if (op.stored) {
    // The frame is the record's file copy now; the room taken for it raw is given back.
    r.stored = op.stored;
    r.frame_checksum = op.frame_checksum;
    give(op.dst, op.reserved - op.stored);
    ++counters_.encoded_records;
    counters_.encoded_raw_bytes += r.size;
    counters_.encoded_bytes += op.stored;
  } else if (op.codec) {
    ++counters_.raw_records;
  } else if (op.bypassed) {
    ++counters_.bypassed_records;
  } else if (op.unneeded) {
    ++counters_.unneeded_records;
  }
  counters_.encode_ns += op.codec_ns;
  StoreState& s = catalog_.store(r.store);
  if (op.codec) {  // a frame not kept (too slow for what it saved) did not pay either
    s.bypass = codec::tried(s.bypass, r.size, op.stored ? op.stored : r.size);
    s.share = codec::observed(s.share, r.size, op.stored ? op.stored : r.size);
  }
  else if (op.bypassed)
    s.bypass = codec::skipped(s.bypass);
}

void Engine::trace_op(const Op& op, Clock::time_point start, Clock::time_point end, std::string_view outcome) const {
  // "writeback 0->1", "copy 1->2", "prefetch 2->1", "demand 1->0", "remove 1",
  // in the category of the file tier involved (a copy between two file tiers:
  // the destination).
  char name[64];
  char category[16];
  std::size_t n;
  int tier;
  std::uint64_t bytes = 0, id = op.id;
  if (op.kind == Op::Kind::remove) {
    tier = op.tier;
    n = fmt::format_to_n(name, sizeof name, "remove {}{}", tier, outcome).size;
  } else {
    const char* kind = op.demand     ? "demand"
                       : op.prefetch ? "prefetch"
                       : op.src == 0 ? "writeback"
                                     : "copy";
    tier = op.dst > 0 ? op.dst : op.src;
    bytes = op.rec->size;  // the record is busy: its size and id are stable
    id = op.rec->id;
    n = fmt::format_to_n(name, sizeof name, "{} {}->{}{}", kind, op.src, op.dst, outcome).size;
  }
  const std::size_t c = fmt::format_to_n(category, sizeof category, "tier{}", tier).size;
  trace::span_record({name, std::min(n, sizeof name)}, {category, std::min(c, sizeof category)}, trace_ns(start),
                     trace_ns(end), bytes, id);
}

void Engine::complete(Op& op, std::exception_ptr err) {
  Record& r = *op.rec;
  r.busy = false;
  r.copying_on = 0;
  r.ahead = -1;
  for (int t : {op.src, op.dst})
    if (t > 0 && t != op.released) --tiers_[t].copies_in_flight;
  if (op.src > 0 && op.dst < op.src && op.src != op.released) --tiers_[op.src].fetches_in_flight;
  if (op.dst > 0 && op.dst != op.released) --tiers_[op.dst].arrivals_in_flight;
  if (op.computed_checksum && !r.has_checksum) {
    r.checksum = op.checksum;
    r.has_checksum = true;
  }
  if (err) {
    if (op.dst == 0)
      mem_->release_slot(std::move(op.block));
    else
      give(op.dst, op.reserved);
    try {
      std::rethrow_exception(err);
    } catch (const RoomShort& s) {
      // Nothing failed: the record stays where it is and is planned at what
      // it takes (the next pass may send it elsewhere).
      r.took = s.bytes;
      ++tiers_[op.dst].stats.stalls;
      ranking_dirty_ = true;
      if (!r.retired) publish(r);
      settle(r);
      return;
    } catch (const tiers::Cancelled&) {
      // Stopped by turn() or stop_copy_of(): nothing failed, the record keeps
      // the copies it had (the writer took its partial object back).
      ++counters_.cancelled_copies;
      if (!r.retired) publish(r);
      settle(r);
      return;
    } catch (...) {
    }
    if (op.why == policies::Purpose::copy_ahead) r.ahead_failed = true;
    int code = 0;
    bool source_failed = false;  // the copy we read from is bad, not the tier we wrote to
    bool corrupt = false;
    try {
      std::rethrow_exception(err);
    } catch (const CorruptionError&) {
      ++counters_.checksum_failures;
      source_failed = corrupt = true;
    } catch (const Error& e) {
      code = e.error_code();
      source_failed = op.src > 0 && e.context().tier == tiers_[op.src].backend->label();
    } catch (...) {
    }
    // The only copy read back bad once: it is planned again, as any copy
    // that found no room is; only a second failure makes the record unreadable.
    if (corrupt && read_again(r, op.src)) {
      ranking_dirty_ = true;
      if (!r.retired) publish(r);
      settle(r);
      return;
    }
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
    note_codec(op);
    // File tiers count their own traffic; DRAM's slots are addressed directly.
    if (op.dst == 0) mem_->count_transfer(true, r.size);
    if (op.src == 0) mem_->count_transfer(false, r.size);
    tiers_[op.dst].stats.raw_bytes_in += r.size;
    tiers_[op.src].stats.raw_bytes_out += r.size;
    // What reader retention costs: early copies for readers, and moves down
    // (placement moves nothing down on its own but for a shrinking quota:
    // with retention on, the unread records' claim on the fast tier is why).
    if (op.why == policies::Purpose::for_readers) {
      ++counters_.retention_copies;
      counters_.retention_bytes += r.size;
    } else if (op.why == policies::Purpose::move_down && cfg_.reader_retention != ReaderRetention::none) {
      ++counters_.retention_moves;
      counters_.retention_bytes += r.size;
    }
    r.copies |= bit(op.dst);
    r.doubted &= ~(bit(op.src) | bit(op.dst));  // read back good; a new copy
    if (op.why == policies::Purpose::copy_ahead && op.src == 0) r.ahead_from_dram = op.dst;
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
  if (!r.retired) publish(r);
  settle(r);
}

}  // namespace mlbs::engine

// mlbs — the small interface every storage tier below DRAM implements.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "mlbs/config.hpp"
#include "mlbs/errors.hpp"

namespace mlbs::tiers {

/// Names one stored object: a record copy of one store (`space` is the store's
/// on-tier namespace) at one write generation (`generation` keeps a new record
/// with a reused id from ever meeting an old copy still being removed).
struct ObjectRef {
  const std::string& space;
  std::uint64_t id;
  std::uint64_t generation;
  const std::string& store;  ///< for error messages
};

/// Sequential writer of one object; commit() makes it complete (and durable
/// when asked); destroying an uncommitted writer removes the partial object.
class ObjectWriter {
 public:
  virtual ~ObjectWriter() = default;
  /// The bytes are written (or the call throws) when it returns.
  virtual void write(std::uint64_t offset, const std::byte* data, std::size_t bytes) = 0;
  /// As write(), but may return with the bytes still in flight, so that the
  /// caller can work (hash them, read the next bytes from another tier)
  /// while the device does: the caller leaves `data` unchanged until the
  /// next call of this writer returns, its commit() or its destruction.
  /// Another write_held() queues its bytes behind these, so the device goes
  /// on from one to the next without a gap, and returns once these are done
  /// (tiers::transfer fills a third buffer meanwhile). Errors may show only
  /// at the next call or commit(). By default, write().
  virtual void write_held(std::uint64_t offset, const std::byte* data, std::size_t bytes) {
    write(offset, data, bytes);
  }
  virtual void commit(bool durable) = 0;
};

class ObjectReader {
 public:
  virtual ~ObjectReader() = default;
  /// Reads exactly `bytes` at `offset`; a short object is an error.
  virtual void read(std::uint64_t offset, std::byte* data, std::size_t bytes) = 0;
  /// As read(), but may return with the bytes still arriving, so that the
  /// caller can work (write the bytes read before to another tier) while the
  /// device reads. Another read_held() queues its bytes behind these, so the
  /// device goes on from one to the next without a gap, and returns once
  /// these are in `data` (tiers::transfer fills one buffer while the device
  /// reads into the next); wait_held() returns once all are. The caller
  /// does not touch a buffer before its bytes are in. Errors may show only
  /// at the next call or wait_held(). By default, read().
  virtual void read_held(std::uint64_t offset, std::byte* data, std::size_t bytes) { read(offset, data, bytes); }
  /// Waits for the bytes of every read_held(); throws the first error.
  virtual void wait_held() {}
};

/// What a tier holds and has moved, kept by Backend's public layer so that
/// every kind and wrapper is accounted alike (TierStats is made from it).
struct Usage {
  std::uint64_t used_bytes = 0;       ///< room taken now (reserve - release)
  std::uint64_t peak_used_bytes = 0;
  std::uint64_t bytes_in = 0;         ///< written into the tier (what reached the device)
  std::uint64_t bytes_out = 0;        ///< read out of it
  std::uint64_t ops_in = 0;           ///< objects committed
  std::uint64_t ops_out = 0;          ///< objects read whole
  std::uint64_t busy_ns = 0;          ///< time with at least one object open or removal running
  std::uint64_t errors = 0;           ///< operations that failed (at most one per object)
};

/// Public non-virtual methods check arguments, label errors with the tier and
/// keep its Usage; the private virtuals do the I/O (DESIGN §6). Wrappers
/// (quota, throttle, faults) derive from Backend and forward to an inner one;
/// the outermost one's Usage is the tier's.
class Backend {
 public:
  Backend(int index, Tier desc);
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  int index() const noexcept { return index_; }
  const Tier& desc() const noexcept { return desc_; }
  /// "tier 1 (directory /nvme/run)": how errors name this tier.
  const std::string& label() const noexcept { return label_; }

  /// Checks the tier is usable (path exists and is writable); throws TierError.
  /// `durability`: what the spaces this runtime makes here are (persistent
  /// only for the last tier of a persistent runtime); a tier whose files are
  /// shared by all spaces (mpiio) picks its file by it. Collective under MPI
  /// for tiers that coordinate ranks.
  void probe(Durability durability = Durability::scratch) {
    durability_ = durability;
    do_probe();
  }
  void create_space(const std::string& space) { do_create_space(space); }
  /// Removes a space and everything left in it (scratch clean-up).
  void remove_space(const std::string& space) noexcept { do_remove_space(space); }
  /// The tier is busy from create/open until the writer/reader is destroyed;
  /// bytes count as they pass, the op when a writer commits or a reader has
  /// read the whole object; a failure counts one error per object.
  std::unique_ptr<ObjectWriter> create(const ObjectRef& ref, std::uint64_t size);
  std::unique_ptr<ObjectReader> open(const ObjectRef& ref, std::uint64_t size);
  /// Removing an object that is not there is not an error.
  void remove(const ObjectRef& ref);

  // --- accounting (thread-safe) ---
  /// Takes `bytes` of the tier's room for a copy about to be made; false
  /// (nothing taken) when the tier's budget (a quota wrapper) has no room.
  bool reserve(std::uint64_t bytes);
  /// Gives back room taken by reserve() or adopt().
  void release(std::uint64_t bytes);
  /// Counts bytes already on the tier (a recovered store's records): never refused.
  void adopt(std::uint64_t bytes);
  /// Bytes reserve() could take now: unbounded unless a budget says otherwise.
  std::uint64_t room() const { return do_room(); }
  std::uint64_t used() const;
  Usage usage() const;
  /// A failure found above the backend (a copy that failed verification, a
  /// journal entry that could not be written for it) counts against the tier.
  void count_error();
  /// Traffic that does not pass through object streams (the memory tier's
  /// slots, which the engine addresses directly): `in` = into the tier.
  void count_transfer(bool in, std::uint64_t bytes);
  /// (id, generation) of every object stored in a space, in no particular
  /// order: recovery removes those its journal does not name.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> list(const std::string& space) const {
    return do_list(space);
  }
  /// Where a space lives on a file system, for the journal; empty if none.
  std::string space_path(const std::string& space) const { return do_space_path(space); }

  /// How a file tier moves bytes: `backend` is "io_uring+O_DIRECT" or "pread"
  /// (empty for tiers without files); `fallback` says why io_backend = auto
  /// did not get io_uring (empty if it did, or was not asked to). Settled by probe().
  struct IoPath {
    std::string backend;
    std::string fallback;
  };
  IoPath io_path() const { return do_io_path(); }

  /// The runtime is stopping and no transfer is left: release what the tier
  /// shares with other ranks (collective for mpiio). Later calls may fail.
  void shutdown() noexcept { do_shutdown(); }

  /// The runtime gives up on the transfers still in flight (its shutdown
  /// time-out passed): waits the tier owns (pacing, injected delays) end now
  /// and their transfers fail with ECANCELED. A transfer blocked in the
  /// kernel is not interrupted. Any thread; idempotent.
  void cancel() noexcept { do_cancel(); }

  /// Throws the mlbs error type that matches `err` (ENOSPC -> DeviceFullError, ...).
  [[noreturn]] void fail(int err, const std::string& what, const ObjectRef* ref) const;

 protected:
  Durability durability() const noexcept { return durability_; }
  /// For budgets kept elsewhere (the memory tier's slot pool): the room now taken.
  void set_used(std::uint64_t bytes);

 private:
  class CountingWriter;
  class CountingReader;
  friend class CountingWriter;
  friend class CountingReader;
  using Clock = std::chrono::steady_clock;
  void begin_busy();
  void end_busy(std::uint64_t bytes, bool in, bool whole, bool failed);
  /// Runs `operation` with the tier busy; a throw ends the interval as one error.
  template <class F>
  auto while_busy(bool in, F&& operation);

  virtual void do_probe() = 0;
  virtual void do_create_space(const std::string& space) = 0;
  virtual void do_remove_space(const std::string& space) noexcept = 0;
  virtual std::unique_ptr<ObjectWriter> do_create(const ObjectRef& ref, std::uint64_t size) = 0;
  virtual std::unique_ptr<ObjectReader> do_open(const ObjectRef& ref, std::uint64_t size) = 0;
  virtual void do_remove(const ObjectRef& ref) = 0;
  virtual std::string do_space_path(const std::string& space) const = 0;
  /// Default: the objects of the directory layouts (record files, log indexes) under space_path().
  virtual std::vector<std::pair<std::uint64_t, std::uint64_t>> do_list(const std::string& space) const;
  virtual IoPath do_io_path() const { return {}; }
  /// A budget's say: may `bytes` more be taken / are they given back.
  virtual bool do_reserve(std::uint64_t) { return true; }
  virtual void do_release(std::uint64_t) {}
  virtual std::uint64_t do_room() const;
  virtual void do_shutdown() noexcept {}
  virtual void do_cancel() noexcept {}

  int index_;
  Tier desc_;
  std::string label_;
  Durability durability_ = Durability::scratch;

  mutable std::mutex acct_mu_;  // a few increments per object, never held across I/O
  Usage usage_;
  unsigned active_ = 0;         ///< objects open and removals running
  Clock::time_point active_since_;
};

}  // namespace mlbs::tiers

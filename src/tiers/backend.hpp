// mlbs — the small interface every storage tier below DRAM implements.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
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
  virtual void write(std::uint64_t offset, const std::byte* data, std::size_t bytes) = 0;
  virtual void commit(bool durable) = 0;
};

class ObjectReader {
 public:
  virtual ~ObjectReader() = default;
  /// Reads exactly `bytes` at `offset`; a short object is an error.
  virtual void read(std::uint64_t offset, std::byte* data, std::size_t bytes) = 0;
};

/// Public non-virtual methods check arguments and label errors with the tier;
/// the private virtuals do the I/O (DESIGN §6). Wrappers (throttle, faults,
/// tracing) derive from Backend and forward to an inner one.
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
  std::unique_ptr<ObjectWriter> create(const ObjectRef& ref, std::uint64_t size) {
    return do_create(ref, size);
  }
  std::unique_ptr<ObjectReader> open(const ObjectRef& ref, std::uint64_t size) {
    return do_open(ref, size);
  }
  /// Removing an object that is not there is not an error.
  void remove(const ObjectRef& ref) { do_remove(ref); }
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

 private:
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
  virtual void do_shutdown() noexcept {}
  virtual void do_cancel() noexcept {}

  int index_;
  Tier desc_;
  std::string label_;
  Durability durability_ = Durability::scratch;
};

}  // namespace mlbs::tiers

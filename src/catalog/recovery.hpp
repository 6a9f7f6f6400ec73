// mlbs — opening a persistent store on the last tier: its lock, the rank
// count it was written with, journal replay, refusal of a damaged journal,
// eager verification of every live record and reclaiming what crashes left.
// Everything goes through the tier's Backend (objects, listing, space
// folder); the engine only turns what comes back into catalog records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "catalog/journal.hpp"
#include "tiers/backend.hpp"

namespace mlbs::catalog {

/// The exclusive lock of a persistent store (flock on <space>/LOCK): one
/// runtime at a time, across processes too. Released when destroyed or
/// release()d; it dies with its process, so a crash leaves no stale lock.
class StoreLock {
 public:
  StoreLock() = default;
  /// Throws StoreBusyError when another runtime or process holds it.
  StoreLock(const tiers::Backend& tier, const std::string& space, const std::string& store);
  StoreLock(StoreLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  StoreLock& operator=(StoreLock&& other) noexcept;
  ~StoreLock() { release(); }
  void release() noexcept;

 private:
  int fd_ = -1;
};

/// MPI: a persistent store written by N ranks recovers only with N ranks
/// (InvalidArgumentError naming both counts); rank 0 records the count the
/// first time.
void check_rank_count(const tiers::Backend& tier, const std::string& space, const std::string& store, int ranks,
                      int rank);

/// A persistent store kept in parts (StoreOptions::parts): its records are
/// `parts` part stores `<store>#j<rank_suffix>` beside the whole store's
/// space, and `<store><rank_suffix>.parts` records the count. Opened with
/// another count (1: whole) while any of what it holds was cut for the count
/// it was written with, it is refused (InvalidArgumentError naming both);
/// a store that holds nothing takes the new count. The caller holds the
/// whole store's lock.
void check_part_count(tiers::Backend& tier, const std::string& store, const std::string& rank_suffix,
                      std::uint32_t parts);
/// The count a persistent store holds its records in: the one
/// check_part_count() recorded, 1 for records kept whole, none for a store
/// that holds nothing (new, or emptied and kept whole).
std::optional<std::uint32_t> recorded_part_count(const tiers::Backend& tier, const std::string& store,
                                                 const std::string& rank_suffix);

struct RecoveryOptions {
  bool checksums = true;           ///< compare each record's xxHash3 (else its size only)
  std::size_t chunk_bytes = 1 << 20;  ///< read through a buffer this large
  /// A journal of at least this many entries, more than 4 per live record,
  /// is rewritten with the live records alone.
  std::size_t compact_entries = 4096;
};

struct RecoveredStore {
  std::string journal_path;
  std::uint64_t journal_valid_bytes = 0;  ///< where appends go on (a torn tail is cut there)
  std::vector<JournalEntry> records;      ///< the live records that read back whole and matching, by id
  std::size_t skipped = 0;                ///< live records that did not (each named on stderr)
  std::uint64_t next_generation = 1;      ///< above every generation the journal or the tier holds
};

/// Replays the store's journal and refuses, before anything is changed, a
/// journal that may not name every acknowledged record (CorruptionError:
/// damage in the middle, missing or header-less beside stored copies, more
/// unnamed copies than a crash leaves); then verifies every live record,
/// removes the copies that are not live (erased, superseded, or left
/// unjournaled by a crash) and compacts a journal that is mostly history.
/// The caller holds the store's lock.
RecoveredStore recover_store(tiers::Backend& tier, const std::string& space, const std::string& store,
                             const RecoveryOptions& options);

}  // namespace mlbs::catalog

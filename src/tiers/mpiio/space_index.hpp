// mlbs — where each record of one space lies in an mpiio tier's shared file:
// in memory, and for persistent spaces in an append-only file beside the
// store's journal (docs/mpiio.md, "File format").
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "tiers/mpiio/agent.hpp"

namespace mlbs::tiers::mpiio {

struct IndexEntry {
  std::uint64_t id = 0;
  std::uint64_t generation = 0;
  std::uint64_t size = 0;  ///< the record's bytes (extent.allocated is rounded up)
  Extent extent;
};

/// The committed records of one space. Thread-safe. Entries on disk are 64
/// bytes, each with its own checksum; replay stops at the first bad one (a
/// torn append) and cuts the file there.
class SpaceIndex {
 public:
  /// In memory only (scratch spaces).
  SpaceIndex() = default;
  ~SpaceIndex();
  SpaceIndex(const SpaceIndex&) = delete;
  SpaceIndex& operator=(const SpaceIndex&) = delete;

  /// Backs the index by `file` (created if missing) and replays it; 0 or errno.
  int open(const std::filesystem::path& file);
  std::optional<IndexEntry> find(std::uint64_t id, std::uint64_t generation) const;
  /// Records a committed object; with `durable`, the entry is on the device
  /// when put() returns. 0 or errno.
  int put(const IndexEntry& entry, bool durable);
  /// Forgets an object; its extent (to punch out), or nullopt if unknown.
  /// Not synced: a lost erase entry leaves an object the journal does not
  /// name, which recovery removes again.
  std::optional<Extent> erase(std::uint64_t id, std::uint64_t generation, int& err);
  std::vector<IndexEntry> entries() const;

 private:
  int append(std::uint32_t op, const IndexEntry& entry);

  mutable std::mutex mu_;
  std::map<std::pair<std::uint64_t, std::uint64_t>, IndexEntry> live_;
  int fd_ = -1;
  std::uint64_t end_ = 0;  ///< bytes of valid entries in the file
};

}  // namespace mlbs::tiers::mpiio

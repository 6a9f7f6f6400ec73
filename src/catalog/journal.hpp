// mlbs — the catalog journal of a persistent store: append-only, fixed-size,
// self-checksummed entries, so a torn tail is detected and ignored, and an
// entry damaged in the middle (valid entries after it) is told from one.
//
// Format v3 (v1 and v2 are read, and upgraded in place when a runtime
// appends): a record stored as a codec frame (docs/codecs.md) is a `frame`
// slot (its stored size and the frame's checksum) written in the same append
// as the `put` slot right after it. The put is the commit: a frame slot not
// followed by its put (a torn append) names nothing. v3 adds each put's
// checksum kind (byte 5 of its slots; 0, plain xxHash3, in v1 and v2).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "catalog/checksum.hpp"

namespace mlbs::catalog {

struct JournalEntry {
  enum class Op : std::uint8_t { put = 1, erase = 2 };
  Op op = Op::put;
  std::uint64_t id = 0;
  std::uint64_t generation = 0;  ///< names the record's file on the persistent tier
  std::uint64_t size = 0;
  std::uint64_t checksum = 0;    ///< of the record's bytes (checksum_kind)
  /// A put of a record stored as a codec frame: the frame's bytes and their
  /// checksum (0: stored raw).
  std::uint64_t stored = 0;
  std::uint64_t frame_checksum = 0;
  /// How both checksums were made: kRecordChecksum for what this mlbs
  /// journals, plain xxHash3 for entries of v1 and v2 journals.
  ChecksumKind checksum_kind = kRecordChecksum;

  /// What the record's file holds: its frame, or its bytes.
  std::uint64_t file_bytes() const noexcept { return stored ? stored : size; }
  std::uint64_t file_checksum() const noexcept { return stored ? frame_checksum : checksum; }
};

struct JournalReplay {
  bool exists = false;                   ///< the file was there
  std::vector<JournalEntry> entries;     ///< the valid prefix's entries, in order
  std::map<std::uint64_t, JournalEntry> live;  ///< id -> last put not erased after it (in the prefix)
  std::uint64_t valid_bytes = 0;         ///< length of the valid prefix (0: not even a whole header)
  std::uint64_t torn_bytes = 0;          ///< bytes after it: a torn tail, or the damaged rest
  /// Damage, not a torn tail: the offset of the first entry that fails its
  /// checksum while valid entries follow it (0: none). A crash only ever
  /// tears the end, so this is the device's or someone's doing: the prefix
  /// alone does not say what the store holds.
  std::uint64_t damaged_at = 0;
  std::uint64_t damaged_entries = 0;     ///< entries that fail their checksum before the last valid one
  std::vector<JournalEntry> after_damage;  ///< the valid entries past the damage, in order (for salvage)

  bool damaged() const noexcept { return damaged_at != 0; }
  /// Every valid entry, the prefix's and those past the damage.
  std::vector<JournalEntry> all_entries() const;
};

/// Reads a journal; a missing file is an empty journal (exists = false).
/// Throws IoError when the file exists but cannot be read, CorruptionError
/// for a foreign header. Damage past the header is reported, not thrown.
JournalReplay replay_journal(const std::string& path);

/// Folds entries into the live map as replay does: the newest generation's
/// put of an id, unless an erase names that generation.
std::map<std::uint64_t, JournalEntry> live_records(const std::vector<JournalEntry>& entries);

/// Writes a new journal holding `entries` at `path` (replacing it
/// atomically: written beside it, synced, renamed, folder synced); returns
/// its length.
std::uint64_t write_journal(const std::string& path, const std::vector<JournalEntry>& entries);

/// Appends entries. An entry is written only after the data it describes is
/// durable; sync() makes the appended entries durable themselves.
class Journal {
 public:
  static constexpr std::size_t kHeaderBytes = 16;
  static constexpr std::size_t kEntryBytes = 48;  ///< one slot (a framed put takes two)

  /// Opens `path` for appending after `valid_bytes` (a torn tail is cut off);
  /// creates it with a header when absent, upgrades a v1 header.
  Journal(std::string path, std::uint64_t valid_bytes);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  void append(const JournalEntry& e);
  void sync();
  const std::string& path() const noexcept { return path_; }

 private:
  std::mutex mu_;
  std::string path_;
  int fd_ = -1;
  std::uint64_t end_ = 0;
};

}  // namespace mlbs::catalog

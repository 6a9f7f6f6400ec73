// mlbs — the catalog journal of a persistent store: append-only, fixed-size,
// self-checksummed entries, so a torn tail is detected and ignored.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace mlbs::catalog {

struct JournalEntry {
  enum class Op : std::uint8_t { put = 1, erase = 2 };
  Op op = Op::put;
  std::uint64_t id = 0;
  std::uint64_t generation = 0;  ///< names the record's file on the persistent tier
  std::uint64_t size = 0;
  std::uint64_t checksum = 0;    ///< xxHash3-64 of the record's bytes
};

struct JournalReplay {
  std::vector<JournalEntry> entries;     ///< every valid entry, in order
  std::map<std::uint64_t, JournalEntry> live;  ///< id -> last put not erased after it
  std::uint64_t valid_bytes = 0;         ///< length of the valid prefix
  std::uint64_t torn_bytes = 0;          ///< ignored bytes after it
};

/// Reads a journal; a missing file is an empty journal. Throws IoError when
/// the file exists but cannot be read, CorruptionError for a foreign header.
JournalReplay replay_journal(const std::string& path);

/// Appends entries. An entry is written only after the data it describes is
/// durable; sync() makes the appended entries durable themselves.
class Journal {
 public:
  static constexpr std::size_t kHeaderBytes = 16;
  static constexpr std::size_t kEntryBytes = 48;

  /// Opens `path` for appending after `valid_bytes` (a torn tail is cut off);
  /// creates it with a header when absent.
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

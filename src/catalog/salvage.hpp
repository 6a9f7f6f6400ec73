// mlbs — salvaging a persistent store whose journal is damaged or lost: a
// new journal from what survives (valid entries anywhere in the old one) and
// what is stored (the record copies on the persistent tier). A pure function
// of both, so every rule has a unit test; mlbs-inspect --salvage does the I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "catalog/journal.hpp"

namespace mlbs::catalog {

/// One record copy found on the persistent tier, read in full.
struct StoredCopy {
  std::uint64_t id = 0;
  std::uint64_t generation = 0;
  std::uint64_t bytes = 0;     ///< what the copy holds (a codec's frame: the frame's bytes)
  std::uint64_t checksum = 0;  ///< of those bytes (kRecordChecksum)
  bool readable = true;        ///< false: the bytes could not be read (checksums meaningless)
  /// The bytes are a codec frame (docs/codecs.md): without its entry the
  /// record's own size and checksum are not known, so it is not adopted.
  bool framed = false;
  std::uint64_t plain_checksum = 0;  ///< plain xxHash3-64 of its bytes, for the entries of v1 and v2 journals
  /// Its checksum of `kind`.
  std::uint64_t checksum_of(ChecksumKind kind) const noexcept {
    return kind == ChecksumKind::xxh3 ? plain_checksum : checksum;
  }
};

struct SalvagePlan {
  enum class Verdict {
    verified,     ///< a surviving put entry vouches for its size and checksum: kept
    unverified,   ///< no entry survived for it: kept with the checksum of its bytes now
    damaged,      ///< its bytes contradict its entry, or cannot be read: dropped
    erased,       ///< a surviving erase entry names it: dropped
    superseded,   ///< a newer generation of its id is kept: dropped
    not_adopted,  ///< unverified, and the salvage keeps verified copies only (or it is a frame): dropped
  };
  struct Item {
    StoredCopy copy;
    Verdict verdict = Verdict::verified;
    std::string why;  ///< damaged: what contradicts what
  };
  std::vector<Item> items;            ///< one per stored copy, by id then generation
  /// The new journal: a put and an erase for every dropped copy (so the next
  /// runtime removes it as provably erased), then a put for every kept one.
  std::vector<JournalEntry> journal;
};

const char* to_string(SalvagePlan::Verdict v) noexcept;

/// `surviving`: every valid entry of the old journal (JournalReplay::all_entries()).
/// Per id, the newest generation that is verified or (with `adopt_unverified`)
/// unverified is kept; a copy without a surviving entry may be one a crash
/// left half-written, so keeping those is the caller's choice.
SalvagePlan plan_salvage(const std::vector<JournalEntry>& surviving, const std::vector<StoredCopy>& stored,
                         bool adopt_unverified);

}  // namespace mlbs::catalog

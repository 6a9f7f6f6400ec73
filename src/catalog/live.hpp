// mlbs — the live catalog: a store's records and its runtime's tier counters
// published in a shared-memory segment, so that other processes (mlbs-inspect
// --live, in-transit readers) see them while the writer runs.
//
// Format (version kLiveVersion; a reader of another version gets a typed
// error naming both): one Header, then `slot_count` 128-byte Slots, an open-addressed
// table keyed by record id (linear probing from a hash of the id; a slot once
// used is never emptied again, only marked erased and reused, so a probe for
// an id ends at the first never-used slot).
//
// Concurrency: one writer (the runtime that has the store open) and any
// number of readers. Each slot is a seqlock: the writer makes `seq` odd,
// stores the fields, makes it even; a reader copies the fields between two
// equal even reads of `seq`. Every shared field is a lock-free std::atomic,
// so nothing a reader does can block or slow the writer, and ThreadSanitizer
// sees the protocol. Readers sleep on `changes` (a process-shared futex the
// writer wakes only when `waiters` says someone sleeps). The writer holds an
// open-file-description lock on the segment for its life: a segment whose
// lock is free was left by a writer that is gone (killed, or closed).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "mlbs/stats.hpp"

namespace mlbs::catalog::live {

// 2: 128-byte slots, filed_ns and reader acks; 3: readers attached; 4: a record's codec frame (stored size,
// its checksum): a reader of version 3 would read a frame as the record, so it must refuse; 5: tiers' raw
// bytes and codec time (TierStats::raw_bytes_in/out, codec_ns); 6: a record's checksum kind (flags bit 1): a
// reader of version 5 would verify a pieces checksum as plain xxHash3 and call every copy bad; 7: which part
// of a store in parts the store is (WriterInfo::part, parts), which a reader reassembling parts must know.
inline constexpr std::uint32_t kLiveVersion = 7;
inline constexpr std::size_t kMaxTiers = 8;
inline constexpr std::uint32_t kDefaultSlots = 1u << 16;

/// The segment's name (under /dev/shm) for a store on a runtime whose last
/// tier is `last_tier_path`, rank `rank`: what writer and readers both derive.
std::string segment_name(const std::string& last_tier_path, const std::string& store, int rank);
/// A hash of what a reader must share with the writer to read its records:
/// tier kinds and paths and the durability.
std::uint64_t config_fingerprint(const Config& cfg);

/// One record as published.
struct RecordView {
  std::uint64_t id = 0;
  std::uint64_t size = 0;
  std::uint64_t generation = 0;
  std::uint64_t checksum = 0;
  bool has_checksum = false;
  catalog::ChecksumKind checksum_kind = catalog::kRecordChecksum;  ///< of both checksums
  std::uint64_t stored = 0;          ///< its file copies are a codec frame of this many bytes (0: raw)
  std::uint64_t frame_checksum = 0;
  RecordState state = RecordState::in_dram;
  TierMask copies = 0;
  std::uint64_t updated_ns = 0;  ///< CLOCK_REALTIME of the last change
  std::uint64_t filed_ns = 0;    ///< CLOCK_REALTIME when this write first reached a file tier (0: not yet)
  bool read = false;             ///< a reader has read this write whole (View::acknowledge)
};

/// What the header says of the writer and its store.
struct WriterInfo {
  std::uint32_t version = 0;
  int pid = 0;
  int rank = 0;
  int ranks = 1;
  bool persistent = false;
  std::uint64_t fingerprint = 0;
  std::uint64_t started_unix_ns = 0;
  std::string store, space, persistent_space;
  std::vector<std::string> tier_kinds;  ///< Tier::kind names, fastest first
  std::vector<std::string> tier_paths;  ///< "" for the memory tier; the last one names the segment
  std::uint32_t slot_count = 0;
  /// Part `part` of a store the application keeps in `parts` parts
  /// (StoreOptions::parts; `store` is then `<name>#<part>`); 0 of 1: whole.
  std::uint32_t part = 0, parts = 1;
};

struct Segment;  // the mapped layout (live.cpp)

/// The writer's side: created when a store opens, gone when it closes.
/// Not thread-safe: the engine calls it under its mutex.
class Writer {
 public:
  /// Creates the store's segment (replacing one a dead writer left). None
  /// when a live writer already publishes this store (two scratch runtimes
  /// on the same paths): this one then runs unpublished.
  static std::unique_ptr<Writer> create(const WriterInfo& info, std::uint32_t slots);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  /// The record's current state (also an erase: state erased).
  void publish(const Record& r, RecordState state);
  /// Tier `t`'s counters (its used bytes given apart: the engine keeps them apart).
  void publish_tier(std::size_t t, const TierStats& s, std::uint64_t used_bytes);
  /// Whether a reader has acknowledged reading write `generation` of `id`
  /// (what reader retention waits for). A few loads; never waits.
  bool read_by_reader(std::uint64_t id, std::uint64_t generation);
  /// In-transit readers attached now (View::attach_reader), as the writer
  /// last saw it: while there are any, every write goes to a file tier soon
  /// (write-behind), since readers read only file tiers.
  std::uint32_t readers() const noexcept;
  /// Wakes readers waiting for a change (once per batch of publishes).
  void notify();
  const std::string& name() const noexcept { return name_; }
  /// Records that found no free slot (the table is full).
  std::uint64_t unpublished() const noexcept;

 private:
  Writer() = default;
  std::string name_;
  int fd_ = -1;
  Segment* seg_ = nullptr;
  std::size_t bytes_ = 0;
  std::uint32_t slots_ = 0;
  std::uint32_t find_slot(std::uint64_t id, bool insert);
};

/// A reader's side: maps a writer's segment.
class View {
 public:
  /// Opens the segment of `store` (rank `rank`) on a runtime whose last tier
  /// is `last_tier_path`.
  /// Typed errors: UnknownIdError (ENOENT) when no running writer publishes
  /// it; InvalidArgumentError naming both versions for another format
  /// version; CorruptionError for a segment that is not one.
  static std::unique_ptr<View> open(const std::string& last_tier_path, const std::string& store, int rank);
  ~View();
  View(const View&) = delete;
  View& operator=(const View&) = delete;

  const WriterInfo& info() const noexcept { return info_; }
  /// The writer still holds the segment (it has not closed the store or died).
  bool writer_alive() const;
  /// The writer closed the store cleanly (its records are going).
  bool closed() const;
  std::optional<RecordView> find(std::uint64_t id) const;
  /// Every published record, erased ones included, by id.
  std::vector<RecordView> records() const;
  std::vector<TierStats> tiers() const;
  std::uint64_t unpublished() const;
  /// Tells the writer that write `generation` of `id` has been read whole
  /// (reader retention then lets it leave the fast tier). The only store a
  /// reader makes to the segment: one atomic in the record's slot, no lock.
  void acknowledge(std::uint64_t id, std::uint64_t generation);
  /// Counts this view as an in-transit reader until it is destroyed (the
  /// writer then copies every write to a file tier); mlbs-inspect does not.
  void attach_reader();
  /// A number that changes whenever the writer publishes.
  std::uint32_t changes() const;
  /// Sleeps until changes() differs from `seen` or `timeout` passes; true if it changed.
  bool wait_change(std::uint32_t seen, std::chrono::milliseconds timeout) const;

 private:
  View() = default;
  int fd_ = -1;
  Segment* seg_ = nullptr;
  std::size_t bytes_ = 0;
  bool attached_ = false;
  WriterInfo info_;
};

}  // namespace mlbs::catalog::live

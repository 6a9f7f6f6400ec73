// mlbs — catalog counters as returned by Runtime::stats() (DESIGN §2 Catalog).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mlbs {

struct TierStats {
  std::string kind;
  std::string path;
  std::uint64_t capacity_bytes = 0;   ///< 0 = unlimited
  std::uint64_t used_bytes = 0;       ///< bytes held now (records + in-flight reservations)
  std::uint64_t peak_used_bytes = 0;
  std::uint64_t records = 0;          ///< copies held now
  std::uint64_t bytes_in = 0;         ///< written into this tier (a codec's frames: their stored bytes)
  std::uint64_t bytes_out = 0;        ///< read out of this tier
  /// The records those bytes were, at their own size: bytes_in / raw_bytes_in
  /// is what a codec (docs/codecs.md) made of them on this tier. Equal to
  /// bytes_in / bytes_out without one (DRAM: always).
  std::uint64_t raw_bytes_in = 0;
  std::uint64_t raw_bytes_out = 0;
  /// Helper time spent on this tier's frames: encoding those first written
  /// here, decoding those read from here (Stats::encode_ns / decode_ns in all).
  std::uint64_t codec_ns = 0;
  std::uint64_t ops_in = 0;
  std::uint64_t ops_out = 0;
  std::uint64_t busy_ns = 0;          ///< time spent in this tier's I/O
  std::uint64_t stalls = 0;           ///< times a move waited for room here
  std::uint64_t skipped_too_large = 0;  ///< records larger than the quota, placed elsewhere
  /// Transfers into or out of this tier that failed (I/O error, full device,
  /// a copy that failed verification). A failed write sends the record on to
  /// another tier where one can take it; see docs/guarantees.md.
  std::uint64_t errors = 0;
  /// File tiers: how this tier moves bytes, "io_uring+O_DIRECT" or "pread"
  /// (known once the runtime has probed the tier); empty for the memory tier.
  std::string io_backend;
  /// Why io_backend = "auto" did not get io_uring (e.g. "io_uring_queue_init
  /// failed: Operation not permitted"); empty when nothing fell back.
  std::string io_fallback;
  /// Observed bandwidth, (bytes_in + bytes_out) / busy time; 0 before any I/O.
  double bandwidth_bytes_per_s() const {
    return busy_ns ? double(bytes_in + bytes_out) * 1e9 / double(busy_ns) : 0.0;
  }
};

struct Stats {
  std::vector<TierStats> tiers;       ///< same order as Config::tiers
  std::uint64_t writes = 0;
  std::uint64_t reads = 0;
  std::uint64_t write_block_ns = 0;   ///< application time waiting inside write() for a slot
  std::uint64_t read_block_ns = 0;    ///< application time waiting inside read() for a record
  std::uint64_t copy_ns = 0;          ///< application time copying into slots
  /// Of copy_ns, the time write() spent hashing what it copied (the record's
  /// checksum, made by the threads that copied it; 0 with checksums off).
  /// copy_ns less this is the copy alone (mlbs-bench's physical bound).
  std::uint64_t copy_hash_ns = 0;
  std::uint64_t write_stalls = 0;     ///< writes that had to wait
  std::uint64_t read_stalls = 0;      ///< reads that had to wait
  std::uint64_t prefetches = 0;       ///< copies up, ahead of the read
  std::uint64_t demand_fetches = 0;   ///< copies up that a waiting read asked for
  std::uint64_t writebacks = 0;       ///< copies down
  /// Copies stopped before they landed, nothing failed: those the first read
  /// after writes made useless (copies ahead; copies out of DRAM of records
  /// DRAM keeps after all), and those of records released or erased
  /// meanwhile (docs/architecture.md, "A read stops the copies only the writes wanted").
  std::uint64_t cancelled_copies = 0;
  std::uint64_t buffer_swaps = 0;     ///< reads delivered by an O(1) swap
  std::uint64_t direct_reads = 0;     ///< reads served from a file tier: DRAM had no room to make
  std::uint64_t checksum_failures = 0;  ///< copies that failed verification (read back or at recovery)
  /// Only copies read again after failing verification once (a second
  /// failure makes the record unreadable; docs/guarantees.md).
  std::uint64_t rereads = 0;
  /// CPU time the helper threads have used (their thread clocks): copies,
  /// hashing, encoding, planning. On cores the application also computes on,
  /// this is what they take from it (docs/architecture.md, "Checksums").
  std::uint64_t helper_cpu_ns = 0;
  std::uint64_t live_records = 0;
  /// Reader retention (Config::reader_retention, docs/readers.md): its cost.
  std::uint64_t retention_copies = 0;  ///< writes copied to a file tier early, for readers
  std::uint64_t retention_moves = 0;   ///< records moved down to leave their room to unread ones
  std::uint64_t retention_bytes = 0;   ///< bytes of both
  std::uint64_t awaiting_readers = 0;  ///< records no reader has read yet (now)
  /// The codec (Config::codec, docs/codecs.md): what it was given and what it stored.
  std::uint64_t encoded_records = 0;   ///< records stored as a codec frame
  std::uint64_t encoded_raw_bytes = 0; ///< their bytes
  std::uint64_t encoded_bytes = 0;     ///< their frames' bytes (raw / this = the ratio)
  std::uint64_t raw_records = 0;       ///< records the codec tried and did not shrink enough: stored raw
  std::uint64_t bypassed_records = 0;  ///< records stored raw without trying (the store's adaptive bypass)
  std::uint64_t unneeded_records = 0;  ///< records stored raw because the tiers kept up (Config::codec_when)
  std::uint64_t encode_ns = 0;         ///< helper time encoding
  std::uint64_t decode_ns = 0;         ///< helper (or direct read) time decoding
  std::vector<int> helper_cores;      ///< core each helper thread is pinned to; -1 = not pinned
};

/// What the catalog knows about one record.
struct RecordInfo {
  struct Move {
    std::uint64_t time_ns;   ///< since the runtime started
    int from_tier;           ///< -1: written by the application
    int to_tier;             ///< -1: dropped / released
  };
  std::uint64_t id = 0;
  std::uint64_t size_bytes = 0;
  /// xxHash3-64 of the xxHash3-64 of each 1 MiB piece (plain xxHash3-64 for a
  /// record recovered from a journal an older mlbs wrote; docs/persistence.md);
  /// valid when has_checksum
  std::uint64_t checksum = 0;
  bool has_checksum = false;  ///< false for a record in parts: each part is checked on its own
  std::uint64_t stored_bytes = 0;    ///< bytes of its file copies when a codec stored it encoded; 0: raw
  /// Tiers holding a full copy now; a record in parts (StoreOptions::parts):
  /// tiers holding a copy of one part at least, each part's in part_tiers.
  std::vector<int> tiers;
  std::vector<std::vector<int>> part_tiers;  ///< a record in parts: each part's tiers, part 0 first; else empty
  std::vector<std::uint64_t> part_bytes;     ///< a record in parts: each part's size (where it was cut); else empty
  bool durable = false;              ///< persistent mode: on the last tier and journaled
  std::vector<Move> lineage;         ///< timestamped moves between tiers
};

}  // namespace mlbs

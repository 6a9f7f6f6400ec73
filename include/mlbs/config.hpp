// mlbs — configuration as plain data (DESIGN §2, §4).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mlbs/export.h"

namespace mlbs {

/// How a directory tier moves bytes (Tier::io_backend).
enum class IoBackend {
  automatic,  ///< "auto": io_uring + O_DIRECT when the build, the kernel and the file
              ///< system allow it and the tier does not use the page cache; else pread
  io_uring,   ///< io_uring + O_DIRECT, or a TierError when that cannot be had
  pread,      ///< pread/pwrite through the page cache (dropped behind unless page_cache)
};

/// How a directory tier lays records out on disk (docs/layout.md).
enum class Layout {
  file_per_record,  ///< "file-per-record": <space>/<id>-<generation>.rec per record copy
  log,              ///< "log": one append-only log per helper thread (log-<n>.mlbs) plus its
                    ///< index (log-<n>.idx): a handful of files however many records
};

/// What a writer keeps for in-transit readers (docs/readers.md, "Retention").
enum class ReaderRetention {
  none,        ///< "none": readers read what placement leaves on file tiers
  until_read,  ///< "until-read": every write is copied to a file tier at once and kept on
               ///< the fastest one with room until a reader has read it
};

/// When the codec is used (Config::codec_when, docs/codecs.md).
enum class CodecWhen {
  needed,  ///< "needed": only while the application has lately waited for the tiers
  always,  ///< "always": every record leaving DRAM (the adaptive bypass still applies)
};

/// One storage layer. Tiers are ordered fastest first; the first must be a
/// `memory` tier (the DRAM slot pool), the last one is the persistent tier.
struct MLBS_API Tier {
  std::string kind;                       ///< backend name: "memory", "directory", "mpiio"
  std::string path;                       ///< file tiers: where records go
  std::uint64_t capacity_bytes = 0;       ///< hard quota; 0 = unlimited (not for memory)
  std::uint64_t bandwidth_bytes_per_s = 0;  ///< cap; 0 = none (applied by a wrapper)
  std::uint64_t block_bytes = 4096;       ///< I/O alignment unit
  /// Used by several processes (e.g. the MPI ranks of a node). Under MPI, on
  /// a tier above the last, capacity_bytes is then one budget for the job's
  /// ranks on each node, divided fairly among them (docs/mpi.md).
  bool shared = false;
  /// Write-behind water marks, as fractions of capacity. When the bytes held
  /// only in this tier (no copy below) exceed high_water*capacity, the engine
  /// writes records down until they are below low_water*capacity.
  /// Memory default 0/0: write behind continuously (with an unknown schedule
  /// or in-transit readers; a known one sends down only what placement
  /// moves out of DRAM, one write ahead), so a writer never waits
  /// for a copy down. Directory default 1/1: move down only when placement
  /// needs the room (writing every record to the slow tier would waste it).
  double high_water = 1.0;
  double low_water = 1.0;
  /// Directory tiers: let the OS page cache keep this tier's files (see
  /// Config::page_cache, which turns this on for every file tier).
  bool page_cache = false;
  /// Directory tiers: the I/O path (see IoBackend). io_uring needs page_cache off.
  IoBackend io_backend = IoBackend::automatic;
  /// io_uring: requests in flight at once per transfer (1..max_queue_depth).
  static constexpr unsigned max_queue_depth = 256;
  unsigned queue_depth = 8;
  /// io_uring: bytes per request; each chunk the engine moves (Config::io_chunk_bytes)
  /// is split into requests of this size. A multiple of 4096, 4 KiB..1 GiB.
  std::uint64_t io_request_bytes = 1ull << 20;
  /// Directory tiers: this tier's layout; unset = Config::layout.
  std::optional<Layout> layout;
  /// Fault injection for testing (docs/guarantees.md): rules such as
  /// "write:ENOSPC@4,read:corrupt*1,any:delay=50ms"; empty = none.
  std::string faults;

  static Tier memory(std::uint64_t capacity_bytes);
  static Tier directory(std::string path, std::uint64_t capacity_bytes = 0);
  /// The records of all MPI ranks in one shared file under `path`, moved by
  /// collective MPI-IO (docs/mpiio.md). Only as the last tier; needs MPI.
  static Tier mpiio(std::string path, std::uint64_t capacity_bytes = 0);
};

/// The application's declared future access order (DESIGN §2).
struct MLBS_API Schedule {
  enum class Kind { fifo, lifo, explicit_order, unknown };
  Kind kind = Kind::lifo;
  /// explicit_order: ids in the order they will be read. While writes come
  /// down, those not written yet are the records to come, as with
  /// expected_records (docs/architecture.md, "Placement").
  std::vector<std::uint64_t> order;
  /// lifo and fifo: a hint of how many records each store will hold when
  /// its writes end ("lifo:N", "fifo:N"); 0 = not known. LIFO then reserves
  /// DRAM and the fast tiers for the records still to come, so the first
  /// records go straight to the tier they will end on; FIFO starts the last
  /// tier below a bounded one with what the run will truly force through it,
  /// not a guess (docs/architecture.md, "Placement"). A wrong hint costs
  /// only speed.
  std::uint64_t expected_records = 0;

  static Schedule fifo(std::uint64_t expected_records = 0) { return {Kind::fifo, {}, expected_records}; }
  static Schedule lifo(std::uint64_t expected_records = 0) { return {Kind::lifo, {}, expected_records}; }
  static Schedule explicit_order(std::vector<std::uint64_t> ids) {
    return {Kind::explicit_order, std::move(ids)};
  }
  static Schedule unknown() { return {Kind::unknown, {}}; }
};

enum class Durability { scratch, persistent };

struct MLBS_API Config {
  std::vector<Tier> tiers = {Tier::memory(1ull << 30), Tier::directory("mlbs-data")};
  Schedule schedule = Schedule::lifo();
  Durability durability = Durability::scratch;
  /// Core to pin the helper threads to: >= 0 that core; -1 = auto (the last
  /// cores the application's threads leave free; with none free, not
  /// pinned); -2 = none (not pinned). Stats::helper_cores says where they
  /// ended up.
  int helper_core = -1;
  static constexpr unsigned max_helper_threads = 64;
  unsigned helper_threads = 1;   ///< helper threads moving data, 1..max_helper_threads (>1 overlaps tiers)
  bool checksums = true;         ///< a checksum of every record (made as write() copies it), verified on the way up
  Layout layout = Layout::file_per_record;  ///< every directory tier's layout, unless Tier::layout says
  /// Staging buffer of copies between two file tiers: the largest transfer
  /// handed to a tier at once there. A record moving to or from DRAM goes in
  /// one transfer (io_uring splits it into Tier::io_request_bytes requests).
  std::uint64_t io_chunk_bytes = 8ull << 20;
  unsigned shutdown_timeout_ms = 60000;       ///< bound on draining at destruction
  /// false (default): directory tiers keep their files out of the OS page
  /// cache, as a run whose data far exceeds RAM would find them: a file is
  /// fdatasync'ed and dropped from the cache (POSIX_FADV_DONTNEED) once
  /// written, and dropped again once read, so every transfer meets the device.
  /// true: leave the page cache alone for every file tier (faster on small
  /// runs, but timings then measure memory, not the tiers). Tier::page_cache
  /// does the same for one tier.
  bool page_cache = false;
  /// Publish every open store's catalog (records, their states, tier
  /// counters) in shared memory for mlbs-inspect --live and in-transit
  /// readers (docs/live-catalog.md). Costs a few atomic stores per change.
  bool live_catalog = true;
  static constexpr unsigned max_live_records = 1u << 24;
  /// Records a store's live catalog can show at once (128 bytes of shared
  /// memory each, touched as used); more are counted as not shown. 1..max_live_records.
  unsigned live_records = 1u << 16;
  /// until_read: writes go to a file tier at once (readers cannot read DRAM)
  /// and stay on the fastest one with room until a reader has read them;
  /// read ones make way. Costs early copies and moves down (Stats::retention_*).
  /// Needs live_catalog.
  ReaderRetention reader_retention = ReaderRetention::none;
  /// Compression of records below DRAM (docs/codecs.md): "none", "lz4",
  /// "zstd[:LEVEL]", "zfp:accuracy=X", "zfp:precision=BITS" or
  /// "zfp:rate=BITS" (ZFP: float and double stores only). Encoded on the
  /// helpers when a record first leaves DRAM; tiers count stored bytes.
  std::string codec = "none";
  /// needed (default): encode only while the application has lately waited
  /// for the tiers, so a run whose compute covers its I/O spends no CPU on
  /// the codec; always: encode every record (docs/codecs.md, "When").
  CodecWhen codec_when = CodecWhen::needed;
  /// LIFO (without a record-count hint) and unknown schedules, scratch mode:
  /// while writes come down, a slower file tier with nothing to do takes a
  /// second copy of the records the tier above it would give up first, from
  /// that tier's first record on, so the slower tier (often the bottleneck)
  /// starts working with the first records instead of when the faster one is
  /// full; with one file tier, that tier takes a copy of the DRAM record the
  /// next write would send there (docs/architecture.md, "Copy ahead"); over
  /// several unlimited tiers of known bandwidth, LIFO drains every record
  /// from the first on, keeping its DRAM copy until a write needs the room
  /// (the run taken to outgrow DRAM: "A LIFO run without its count"). Its
  /// cost is traffic that a run which fits after all did not need; false
  /// turns it off (a shared file system its operators want spared).
  bool copy_ahead = true;

  /// Reads a TOML file (see docs/configuration.md). Errors name field and line.
  static Config from_file(const std::string& path);
  /// Parses TOML text; `source` names it in errors.
  static Config from_toml(std::string_view text, const std::string& source = "<string>");
  /// Starts from MLBS_CONFIG (a TOML file) if set, else defaults, then applies
  /// MLBS_TIERS, MLBS_SCHEDULE, MLBS_DURABILITY, MLBS_HELPER_CORE,
  /// MLBS_HELPER_THREADS, MLBS_CHECKSUMS, MLBS_IO_CHUNK, MLBS_PAGE_CACHE, MLBS_LAYOUT,
  /// MLBS_CODEC, MLBS_CODEC_WHEN (and the other MLBS_* named in docs/configuration.md).
  static Config from_env();

  /// Checks the configuration; throws ConfigError naming the field.
  void validate() const;
};

/// "mem:2GiB,dir:/nvme/run:64GiB,dir:/lustre/run" -> tiers. `field` names the
/// source in errors (e.g. "MLBS_TIERS").
MLBS_API std::vector<Tier> parse_tier_spec(std::string_view spec, const std::string& field = "tiers");
/// The inverse of parse_tier_spec (kind, path, capacity, I/O backend). Throws
/// ConfigError naming the path it cannot write: one containing ',' or
/// beginning or ending with white space.
MLBS_API std::string format_tier_spec(const std::vector<Tier>& tiers);
/// "64GiB", "512 MiB", "1.5G", "4096" -> bytes (binary K/M/G/T, decimal KB/MB/GB/TB).
MLBS_API std::uint64_t parse_size(std::string_view text, const std::string& field = "size");
/// "lifo", "fifo", "unknown", "3,1,2" (explicit order) -> Schedule.
MLBS_API Schedule parse_schedule(std::string_view text, const std::string& field = "schedule");
/// "auto" (-1), "none" (-2) or a core number -> Config::helper_core; throws ConfigError naming `field`.
MLBS_API int parse_helper_core(std::string_view text, const std::string& field = "helper_core");
MLBS_API std::string to_string(Schedule::Kind kind);
MLBS_API std::string to_string(Durability d);
/// "auto", "io_uring", "pread".
MLBS_API std::string to_string(IoBackend b);
/// The inverse of to_string(IoBackend); throws ConfigError naming `field`.
MLBS_API IoBackend parse_io_backend(std::string_view text, const std::string& field = "io_backend");
MLBS_API std::string to_string(Layout layout);
/// The inverse of to_string(Layout) ("file" too); throws ConfigError naming `field`.
MLBS_API Layout parse_layout(std::string_view text, const std::string& field = "layout");
MLBS_API std::string to_string(ReaderRetention r);
/// The inverse of to_string(ReaderRetention); throws ConfigError naming `field`.
MLBS_API ReaderRetention parse_reader_retention(std::string_view text,
                                                const std::string& field = "reader_retention");
MLBS_API std::string to_string(CodecWhen w);
/// The inverse of to_string(CodecWhen); throws ConfigError naming `field`.
MLBS_API CodecWhen parse_codec_when(std::string_view text, const std::string& field = "codec_when");
/// 1536 -> "1.5 KiB".
MLBS_API std::string format_bytes(std::uint64_t bytes);

}  // namespace mlbs

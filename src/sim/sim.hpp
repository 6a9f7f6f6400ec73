// mlbs — the simulator: a discrete-event model of one application writing
// and reading records through DRAM and file tiers (capacity, bandwidth,
// latency) with helpers, planned by the engine's own policies
// (engine/policies) without threads or files. mlbs-sim answers what-if
// questions with it (docs/simulator.md); tests sweep configurations against
// the physical bound (sim/bound.hpp).
//
// What is modelled: the application alternates compute and calls; a write
// takes a DRAM slot (waiting for one is blocking) and copies into it; a read
// takes the record from DRAM or waits for a demand fetch; a record read for
// the last time is released (a helper's copy of it stops, as in the engine).
// Each helper carries out one decision of the
// policies at a time; transfers share the tiers' bandwidths max-min fairly
// (reads and writes alike) and each starts after the slower tier's latency.
// Removals are free. A codec (Machine::codec_ratio) stores each record's
// file copies at size / ratio from its first copy out of DRAM on, the helper
// encoding first and decoding after a copy up; its CPU is not taken from the
// application's. Not modelled: checksums, page cache, device noise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlbs/config.hpp"

namespace mlbs::sim {

/// One file tier of the model.
struct FileTier {
  std::uint64_t capacity_bytes = 0;  ///< 0 = unlimited
  double bandwidth_bytes_per_s = 0;  ///< shared by reads and writes; must be > 0
  double latency_s = 0;              ///< before each copy's first byte
  double high_water = 1.0;           ///< placement's fill limit in scratch mode (Tier::high_water)
};

struct Machine {
  std::uint64_t dram_bytes = 0;
  std::vector<FileTier> tiers;           ///< fastest first
  unsigned helpers = 2;
  double copy_bytes_per_s = 16e9;        ///< the application's copy into and out of a slot
  bool persistent = false;               ///< the last tier gets every record; flushed at the end
  bool timeline = false;  ///< keep every helper copy and application wait in Result::timeline
  /// A codec (docs/codecs.md): raw / stored bytes of every record (1: none),
  /// and a helper's encode and decode rates in raw bytes/s (0: free).
  double codec_ratio = 1.0;
  double encode_bytes_per_s = 0;
  double decode_bytes_per_s = 0;
  bool copy_ahead = true;  ///< Config::copy_ahead
};

/// The application: `records` writes of `record_bytes` (ids 0..n-1), each
/// after `compute_per_write_s`, then `compute_at_turn_s`, then the reads of
/// the schedule, each followed by `compute_per_read_s`. With `parts` > 1 a
/// step hands its data over as that many records (split_records()): the
/// compute comes before a step's first write and after its last read.
struct Workload {
  std::uint64_t record_bytes = 0;
  std::uint32_t records = 0;
  double compute_per_write_s = 0;
  double compute_per_read_s = 0;
  /// Between the last write and the first read, as in an adjoint code whose
  /// backward sweep computes before its first read (the bench's micro and
  /// rtm: io_ratio steps): every record is live through it (bound.hpp).
  double compute_at_turn_s = 0;
  Schedule::Kind schedule = Schedule::Kind::lifo;
  /// explicit_order: ids in read order (an id may repeat); lifo and fifo
  /// read every record once, newest or oldest first.
  std::vector<std::uint64_t> order;
  /// lifo and fifo: the planner is told how many records will come
  /// (Schedule::expected_records, "lifo:N", "fifo:N"). An explicit order always tells
  /// (its ids not written yet, Engine::coming_records()).
  bool hint_records = false;
  /// Records per step (ids step x parts .. step x parts + parts - 1); `records`
  /// is a multiple of it.
  std::uint32_t parts = 1;
  /// The parts are a store's (StoreOptions::parts, store_parts()): `parts`
  /// engine stores, each counting its own records for lifo:N, and every read
  /// copies its part out of the slot into the one working buffer.
  bool store_parts = false;
};

struct TierTotals {
  std::uint64_t bytes_in = 0, bytes_out = 0;
  std::uint64_t peak_used_bytes = 0;
  double busy_s = 0;  ///< time with at least one transfer moving bytes
};

/// One interval of the timeline: a helper's copy (src -> dst, why the
/// policies chose it) or the application blocked (src = dst = -1).
struct Span {
  double start_s = 0, end_s = 0;
  int src = -1, dst = -1;
  std::uint64_t id = 0;
  std::string what;
};

struct Result {
  double wall_s = 0;
  double write_phase_s = 0;     ///< until the last write returned
  double compute_s = 0;         ///< the application's compute
  double copy_s = 0;            ///< the application's copies into and out of slots
  double write_blocked_s = 0;   ///< writes waiting for a DRAM slot
  double read_blocked_s = 0;    ///< reads waiting for their record
  double flush_s = 0;           ///< persistent: the final flush
  std::uint64_t bytes_written = 0, bytes_read = 0;
  std::uint64_t helper_copies = 0;
  std::vector<TierTotals> tiers;  ///< index 0 = DRAM
  double least_io_s = 0;          ///< the physical bound's I/O part (bound.hpp), over stored bytes with a codec
  double io_span_s = 0;           ///< least_io_s with the compute no I/O can overlap (bound.hpp)
  double bound_s = 0;             ///< the physical bound
  std::vector<Span> timeline;     ///< Machine::timeline
  double blocked_s() const { return write_blocked_s + read_blocked_s + flush_s; }
};

/// The read order a workload implies (explicit: its `order`).
std::vector<std::uint64_t> read_order(const Workload& w);

/// A revolve-like explicit order of records 0..n-1: groups of `group` read
/// newest group first, each group's head read first (to recompute from),
/// then the rest newest first, then the head again. The tests' sweep and
/// mlbs_sim_check use it.
std::vector<std::uint64_t> revolve_like_order(std::uint32_t n, std::uint32_t group);

/// `w` with each record split into `parts` records of a part's size, as an
/// application that writes its step's data in parts does: `parts` x as many
/// records, an explicit order's ids each read as its parts in order, the
/// compute per step unchanged. Throws InvalidArgumentError when `parts` is 0
/// or does not divide the record size.
Workload split_records(Workload w, std::uint32_t parts);

/// The same kept by the store itself (StoreOptions::parts, docs/parts.md):
/// split_records() with Workload::store_parts set when `parts` > 1.
Workload store_parts(Workload w, std::uint32_t parts);

/// Runs the model to the end. Throws InvalidArgumentError for a model that
/// cannot run (no tiers, a bandwidth of 0, a record larger than DRAM, an
/// explicit order naming an id never written) and CapacityError when the
/// tiers cannot hold what is written.
Result simulate(const Machine& m, const Workload& w);

}  // namespace mlbs::sim

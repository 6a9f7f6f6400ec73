// mlbs — the physical bound: the least time the hardware allows a run,
// whatever any library moves (docs/benchmarking.md, "The physical bound").
// Pure; used by mlbs-bench's targets and by the simulator's tests.
#pragma once

#include <cstdint>
#include <vector>

namespace mlbs::sim {

/// One file tier as the physical bound sees it.
struct TierLimit {
  std::uint64_t capacity_bytes = 0;  ///< 0 = unlimited
  double bandwidth_bytes_per_s = 0;  ///< reads and writes together; 0 = unknown (no constraint)
};

/// What the hardware gives a run: DRAM and the file tiers below it, fastest first.
struct Hierarchy {
  std::uint64_t dram_bytes = 0;
  std::vector<TierLimit> file_tiers;
  bool persistent = false;  ///< every byte written must also reach the last tier
};

/// The least time the file tiers need for what capacity forces through them:
/// S = written - DRAM bytes go down, and max(0, read - DRAM) of them come back
/// up; x_t of S on tier t (x_t <= its capacity), the tiers working in
/// parallel, each moving its bytes in and out at its bandwidth; the split
/// that makes the slowest tier fastest. Persistent: the last tier also takes
/// every byte written. 0 when nothing must move or no tier constrains it, and
/// when the tiers cannot hold S at all (undefined).
double least_io_s(const Hierarchy& h, std::uint64_t bytes_written, std::uint64_t bytes_read);

/// The last file tier's forced share when every record written is live at
/// once (all writes before the first read): the bytes that DRAM and the
/// tiers above it cannot hold, H = written - (DRAM + their capacities), must
/// all be on it then; they went down before and, of them, all but the bytes
/// never read come back up after. (H + H_back) / its bandwidth. 0 when no
/// such bytes are forced, a tier above it has no capacity limit, its
/// bandwidth is unknown, or the run is persistent (its copies of every record
/// may still be going down while the records are live).
double peak_io_s(const Hierarchy& h, std::uint64_t bytes_written, std::uint64_t bytes_read);

/// The application's compute that no I/O can overlap, whatever the schedule.
struct ComputeEdges {
  double before_first_write_s = 0;  ///< no record exists yet for any tier to move
  /// Only when every record written had been read back by then (else 0):
  /// then every forced move is done, each spilled record having come back up.
  double after_last_read_s = 0;
  /// Only when every write came before the first read (else 0): the turn,
  /// while every record is live. With the tiers above the last one full, no
  /// record can come up from it (no room) and its forced writes are done
  /// (each frees the room the next write needs), so it idles (peak_io_s).
  double between_last_write_and_first_read_s = 0;
};

/// The least time the I/O side of a run spans: least_io_s, after the compute
/// before the first write and, unless persistent copies may still be moving,
/// before the compute after the last read; and at least the last tier's
/// peak_io_s with the turn between its writes down and its reads up. 0 when
/// nothing must move.
double io_span_s(const Hierarchy& h, double least_io_s, ComputeEdges edges, double peak_io_s);

/// max(kernel_s + copy_s, io_span_s): no run on this hardware is faster.
double physical_bound_s(double kernel_s, double copy_s, double io_span_s);

}  // namespace mlbs::sim

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

/// max(kernel_s + copy_s, least_io_s): no run on this hardware is faster.
double physical_bound_s(double kernel_s, double copy_s, double least_io_s);

}  // namespace mlbs::sim

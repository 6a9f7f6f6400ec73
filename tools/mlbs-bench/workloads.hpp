// mlbs-bench — the workloads: compute kernels and the order in which they
// write and read snapshots, written against SnapshotIo so that every mode
// runs exactly the same arithmetic on exactly the same data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "options.hpp"

namespace mlbs_bench {

/// A 3D float grid, x fastest.
struct Dims {
  std::size_t nx = 0, ny = 0, nz = 0;
  std::size_t points() const { return nx * ny * nz; }
  std::uint64_t bytes() const { return std::uint64_t(points()) * sizeof(float); }
};

/// The grid whose size is closest to `grid_bytes` from below: nx = ny a power
/// of two no larger than the cube root, nz = the rest (exact for powers of two
/// and for most round sizes). Throws std::invalid_argument below 3x3x3 points.
Dims dims_for_bytes(std::uint64_t grid_bytes);

/// Everything a mode must know before a run starts.
struct Plan {
  Workload workload = Workload::micro;
  Dims dims;
  unsigned steps = 0;            ///< per phase
  unsigned io_ratio = 1;         ///< a snapshot every io_ratio steps
  unsigned snapshots = 0;        ///< ids 0 .. snapshots-1
  bool fifo = false;             ///< read order: write order (fifo) or its reverse (lifo)
  std::vector<std::uint64_t> read_order;  ///< ids in the order they are read
  /// Under MPI, the rank whose data this is: it seeds the initial condition
  /// and the source, so that no two ranks hold the same bytes and a record
  /// read from another rank fails verification. Rank 0 computes what a
  /// single process does.
  unsigned rank = 0;
  std::uint64_t snapshot_bytes() const { return dims.bytes(); }
};

Plan make_plan(Workload w, const Options& o, unsigned io_ratio, unsigned rank = 0);

/// How a workload stores and fetches its snapshots. The working buffer holds
/// dims.points() floats; write(id) snapshots it, read(id) makes it hold
/// snapshot id. buffer() may change after read() (mlbs swaps blocks), never
/// after write().
class SnapshotIo {
 public:
  virtual ~SnapshotIo() = default;
  virtual float* buffer() = 0;
  virtual void write(std::uint64_t id) = 0;
  virtual void read(std::uint64_t id) = 0;
  /// Drains what is still in flight (counted in the wall time).
  virtual void finish() = 0;
  /// Snapshots come back close to what was written, not equal (a lossy codec).
  virtual bool lossy() const { return false; }
};

struct WorkloadResult {
  double kernel_s = 0;        ///< all application compute: kernels, staging copies, checksums
  double hash_s = 0;          ///< of which: snapshot checksums (write and verify)
  double read_phase_s = 0;    ///< micro, rtm: wall time of the backward (read-back) phase; 0 otherwise
  /// Of kernel_s, what no I/O can overlap (the physical bound's edges): the
  /// compute before the first write, and after the last read when every
  /// snapshot written had been read back by then (else 0).
  double lead_compute_s = 0;
  double tail_compute_s = 0;
  /// Of kernel_s, the compute between the last write and the first read when
  /// every write came before the first read (else 0).
  double turn_compute_s = 0;
  unsigned writes = 0;
  unsigned reads = 0;
  unsigned mismatches = 0;    ///< snapshots read back with wrong bytes
  unsigned inexact = 0;       ///< lossy I/O: snapshots read back close, not equal (not mismatches)
  std::uint64_t bytes_written = 0;
  std::uint64_t bytes_read = 0;
  std::uint64_t result_checksum = 0;               ///< xxHash3 of the final field
  std::optional<std::uint64_t> image_checksum;     ///< rtm: xxHash3 of the image
  std::vector<float> image;                        ///< rtm: the image itself (errors of lossy runs)
};

/// Runs the workload's phases against `io` (io.finish() not included).
WorkloadResult run_workload(const Plan& plan, const Options& o, SnapshotIo& io);

// --- kernels (OpenMP, static schedule, no reductions: bitwise deterministic) ---

/// out = c0 in + c1 (6 neighbours) (+ w add), boundary copied (+ w add).
/// `add` may alias `out` (read at the same point before it is written).
void stencil7(const Dims& d, const float* in, float* out, const float* add = nullptr, float w = 0);
/// Leapfrogged acoustic wave: out = 2 cur - prev + c2 lap(cur) inside, 0 on
/// the boundary. `out` may alias `prev`, never `cur`.
void leapfrog(const Dims& d, const float* cur, const float* prev, float* out);
/// img += u * v.
void accumulate_image(const Dims& d, const float* u, const float* v, float* img);

std::uint64_t hash_bytes(const void* data, std::size_t bytes);

}  // namespace mlbs_bench

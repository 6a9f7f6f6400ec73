// mlbs-bench — the performance model of DESIGN §1, as pure functions.
//
//   blocking I/O:       wall = t_kernel + t_io
//   perfect overlap:    wall = max(t_kernel + t_copy, t_io)
//   expected speedup  = t_reference / max(t_kernel + t_copy, t_io)
//   actual speedup    = t_reference / wall
//
// t_reference is the wall time of the `sync` mode (synchronous I/O to the
// slowest tier) of the same workload and I/O ratio in the same invocation.
// t_io ("io_s_model") is the time the run's data movement needs on its
// bottleneck tier at the bandwidth observed during the run: the maximum over
// tiers of (bytes_in + bytes_out) / observed bandwidth, where observed
// bandwidth = (bytes_in + bytes_out) / busy time. Tiers that moved nothing or
// report no busy time (the DRAM tier) do not constrain t_io.
//
// The physical bound (docs/benchmarking.md, "The physical bound") asks
// instead what the hardware allows, whatever any library moves:
//
//   physical bound = max(t_kernel + t_copy,
//                        t_lead + max(least I/O time, peak I/O time + t_turn) + t_tail)
//
// (t_kernel: the kernel time of the group's sync run, or the run's own where
// that is less; t_lead, t_tail: the least compute before the first write and
// after the last read, which no I/O can overlap; t_turn: the least compute
// between the last write and the first read, through which the last tier
// idles when every record is live and the tiers above it are full; io_span_s)
//
// where the least I/O time is that of the bytes the DRAM budget cannot hold,
// written down and read back, split over the file tiers as their capacities
// and bandwidths make it shortest (least_io_s).
//
// Undefined quantities (a zero denominator) are returned as 0.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/bound.hpp"

namespace mlbs_bench::model {

/// What one tier moved during a run and how long it was busy doing so.
struct TierTraffic {
  std::uint64_t bytes_in = 0;    ///< bytes written into the tier
  std::uint64_t bytes_out = 0;   ///< bytes read out of the tier
  double busy_s = 0;             ///< time the tier spent on I/O
};

/// (bytes_in + bytes_out) / busy_s in bytes/s; 0 when the tier was never busy.
double observed_bandwidth(const TierTraffic& t);

/// Time the tier needs for its bytes at its observed bandwidth; 0 when it
/// moved nothing or was never busy.
double tier_io_s(const TierTraffic& t);

/// t_io: the maximum of tier_io_s over all tiers (the bottleneck tier).
double io_s_model(std::span<const TierTraffic> tiers);

/// max(kernel_s + copy_s, io_s): the wall time of a run whose I/O overlaps
/// the computation perfectly.
double overlap_bound_s(double kernel_s, double copy_s, double io_s);

/// reference_wall_s / overlap_bound_s(kernel_s, copy_s, io_s); 0 if undefined.
double expected_speedup(double reference_wall_s, double kernel_s, double copy_s, double io_s);

/// reference_wall_s / wall_s; 0 if undefined.
double actual_speedup(double reference_wall_s, double wall_s);

/// actual / expected: 1 means the run reached the model's bound; 0 if undefined.
double model_efficiency(double actual, double expected);

// The physical bound is the library's (src/sim/bound.hpp), shared with the
// simulator and its tests.
using mlbs::sim::ComputeEdges;
using mlbs::sim::Hierarchy;
using mlbs::sim::io_span_s;
using mlbs::sim::least_io_s;
using mlbs::sim::peak_io_s;
using mlbs::sim::physical_bound_s;
using mlbs::sim::TierLimit;

}  // namespace mlbs_bench::model

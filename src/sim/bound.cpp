#include "sim/bound.hpp"

#include <algorithm>
#include <limits>

namespace mlbs::sim {

double least_io_s(const Hierarchy& h, std::uint64_t bytes_written, std::uint64_t bytes_read) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const std::size_t n = h.file_tiers.size();
  if (n == 0) return 0.0;
  const double spill = bytes_written > h.dram_bytes ? double(bytes_written - h.dram_bytes) : 0.0;
  const double back = std::min(spill, bytes_read > h.dram_bytes ? double(bytes_read - h.dram_bytes) : 0.0);
  const double read_share = spill > 0 ? back / spill : 0.0;
  // Per tier: bytes moved per byte placed there, and bytes it moves whatever the split.
  std::vector<double> per_byte(n, 1.0 + read_share), fixed(n, 0.0);
  if (h.persistent) {
    fixed[n - 1] = double(bytes_written);  // its copy of every record; a spilled one placed there is only read
    per_byte[n - 1] = read_share;
  }
  if (spill == 0 && !h.persistent) return 0.0;
  // Within time T, tier t can take min(capacity, (T * bandwidth - fixed) / per_byte) of the spill.
  auto feasible = [&](double T) {
    double room = 0;
    for (std::size_t t = 0; t < n; ++t) {
      const TierLimit& tl = h.file_tiers[t];
      const double bw = tl.bandwidth_bytes_per_s;
      if (bw > 0 && fixed[t] > T * bw) return false;
      double take = tl.capacity_bytes ? double(tl.capacity_bytes) : kInf;
      if (bw > 0 && per_byte[t] > 0) take = std::min(take, (T * bw - fixed[t]) / per_byte[t]);
      room += take;
    }
    return room >= spill;
  };
  if (!feasible(kInf)) return 0.0;  // the tiers cannot hold the spill at all
  if (feasible(0.0)) return 0.0;    // no tier with a known bandwidth has to move anything
  double lo = 0.0, hi = 1.0;
  for (int k = 0; k < 200 && !feasible(hi); ++k) hi *= 2;
  for (int k = 0; k < 100; ++k) {
    const double mid = 0.5 * (lo + hi);
    (feasible(mid) ? hi : lo) = mid;
  }
  return hi;
}

double peak_io_s(const Hierarchy& h, std::uint64_t bytes_written, std::uint64_t bytes_read) {
  if (h.persistent || h.file_tiers.empty()) return 0.0;
  const TierLimit& last = h.file_tiers.back();
  if (!(last.bandwidth_bytes_per_s > 0)) return 0.0;
  double above = double(h.dram_bytes);
  for (std::size_t t = 0; t + 1 < h.file_tiers.size(); ++t) {
    if (h.file_tiers[t].capacity_bytes == 0) return 0.0;  // room for all of it above
    above += double(h.file_tiers[t].capacity_bytes);
  }
  const double held = double(bytes_written) - above;
  if (held <= 0) return 0.0;
  // The planner may leave there the bytes that are never read.
  const double unread = bytes_written > bytes_read ? double(bytes_written - bytes_read) : 0.0;
  return (held + std::max(0.0, held - unread)) / last.bandwidth_bytes_per_s;
}

double io_span_s(const Hierarchy& h, double least_io_s, ComputeEdges edges, double peak_io_s) {
  if (least_io_s <= 0) return 0.0;
  // A persistent copy of a record may still be on its way down after the record was read.
  const double lead = edges.before_first_write_s, tail = h.persistent ? 0.0 : edges.after_last_read_s;
  // The last tier idles through the turn: its writes down end before it, its
  // reads up start after it (peak_io_s). Moving a record up during the turn
  // needs room above, which only a write down beyond the forced ones makes,
  // and that record must come back up too: each second it saves costs two.
  const double turn = edges.between_last_write_and_first_read_s;
  const double through_turn = peak_io_s > 0 && turn > 0 ? peak_io_s + turn : 0.0;
  return lead + std::max(least_io_s, through_turn) + tail;
}

double physical_bound_s(double kernel_s, double copy_s, double io_span_s) {
  return std::max(kernel_s + copy_s, io_span_s);
}

}  // namespace mlbs::sim

#include "model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mlbs_bench::model {
namespace {

double safe_ratio(double num, double den) {
  if (!(den > 0) || !std::isfinite(num) || !std::isfinite(den)) return 0.0;
  return num / den;
}

}  // namespace

double observed_bandwidth(const TierTraffic& t) {
  return safe_ratio(double(t.bytes_in + t.bytes_out), t.busy_s);
}

double tier_io_s(const TierTraffic& t) {
  const double bw = observed_bandwidth(t);
  return bw > 0 ? double(t.bytes_in + t.bytes_out) / bw : 0.0;
}

double io_s_model(std::span<const TierTraffic> tiers) {
  double worst = 0;
  for (const TierTraffic& t : tiers) worst = std::max(worst, tier_io_s(t));
  return worst;
}

double overlap_bound_s(double kernel_s, double copy_s, double io_s) {
  return std::max(kernel_s + copy_s, io_s);
}

double expected_speedup(double reference_wall_s, double kernel_s, double copy_s, double io_s) {
  return safe_ratio(reference_wall_s, overlap_bound_s(kernel_s, copy_s, io_s));
}

double actual_speedup(double reference_wall_s, double wall_s) {
  return safe_ratio(reference_wall_s, wall_s);
}

double model_efficiency(double actual, double expected) { return safe_ratio(actual, expected); }

}  // namespace mlbs_bench::model

#include "sim/sweep.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "engine/policies/parts.hpp"
#include "mlbs/store_options.hpp"

namespace mlbs::sim {

namespace {

const char* kind_name(Schedule::Kind k) {
  switch (k) {
    case Schedule::Kind::lifo: return "lifo";
    case Schedule::Kind::fifo: return "fifo";
    case Schedule::Kind::explicit_order: return "rev";
    default: return "other";
  }
}

}  // namespace

std::vector<SweepPoint> sweep_points(std::vector<Schedule::Kind> kinds, bool hint, std::string_view only,
                                     std::uint32_t parts, bool by_store) {
  constexpr std::uint64_t kRecord = 16ull << 20;
  std::vector<SweepPoint> points;
  for (auto k : kinds)
    for (int file_tiers : {1, 2, 3})
      for (std::uint32_t n : {8u, 32u, 96u})
        for (std::uint64_t slots : {2u, 8u})
          for (double fast_share : {0.25, 0.0})
            for (double bw_ratio : {2.0, 5.0, 20.0})
              for (double f : {0.0, 0.5, 1.0, 2.0}) {
                SweepPoint p;
                p.key = fmt::format("{}/t{}/n{}/s{}/fs{:.2f}/bw{:.0f}/f{:.1f}", kind_name(k), file_tiers, n, slots,
                                    fast_share, bw_ratio, f);
                if (!only.empty() && p.key != only) continue;
                Machine& m = p.machine;
                m.dram_bytes = slots * kRecord;
                m.helpers = unsigned(std::max(2, file_tiers));
                for (int t = 0; t < file_tiers; ++t) {
                  const bool last = t + 1 == file_tiers;
                  m.tiers.push_back({last || fast_share == 0 ? 0 : std::uint64_t(fast_share * n) * kRecord,
                                     double(1ull << 30) / std::pow(bw_ratio, t), 0, 1.0});
                }
                Workload& w = p.workload;
                w.record_bytes = kRecord;
                w.records = n;
                w.schedule = k;
                w.hint_records = hint;
                if (k == Schedule::Kind::explicit_order) w.order = revolve_like_order(n, 4);
                const double io = std::max(simulate(m, w).least_io_s, 0.01);
                const std::size_t calls = n + read_order(w).size();
                w.compute_per_write_s = w.compute_per_read_s = f * io / double(calls);
                // The same steps' compute and bytes, in parts (kAutoParts: the store's own choice).
                if (parts == StoreOptions::kAutoParts)
                  w = store_parts(std::move(w), engine::policies::auto_parts(w.record_bytes, m.dram_bytes,
                                                                             StoreOptions::kMaxParts));
                else
                  w = by_store ? store_parts(std::move(w), parts) : split_records(std::move(w), parts);
                points.push_back(std::move(p));
              }
  return points;
}

SweepSummary summarize(std::vector<double> ratios) {
  SweepSummary s;
  if (ratios.empty()) return s;
  std::sort(ratios.begin(), ratios.end());
  s.points = ratios.size();
  s.median = ratios[ratios.size() / 2];
  s.p90 = ratios[ratios.size() * 9 / 10];
  s.max = ratios.back();
  s.above = std::size_t(std::count_if(ratios.begin(), ratios.end(), [](double x) { return x > 1.05; }));
  return s;
}

}  // namespace mlbs::sim

// The planner's sweep one point at a time (docs/simulator.md, "Sweeping the
// planner"): each configuration of sim/sweep.hpp, the one the tests hold
// the planner to, as "KEY RATIO" (simulated wall over the physical bound),
// then the median, p90, max and the points above 1.05x. Run it with the
// build before and after a change to the policies and compare the two
// outputs (benchmarks/sweep_compare.py). --only KEY prints one point with
// its tiers' totals and its timeline; --hint tells LIFO and FIFO the record count;
// --parts K writes each point's records in K parts (docs/simulator.md, "Records in parts"), the
// application's, or with --store-parts the store's (StoreOptions::parts); --auto-parts in the parts the
// store chooses (StoreOptions::kAutoParts). --points FILE also writes every point's machine, workload, simulated
// wall and physical bound as JSON lines, for benchmarks/lp_bound.py (docs/simulator.md, "A tighter bound").
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "mlbs/store_options.hpp"
#include "sim/point_json.hpp"
#include "sim/sweep.hpp"

namespace {

void print_detail(const mlbs::sim::Result& r) {
  std::printf("wall %.4f s, bound %.4f s, least I/O %.4f s (span %.4f s), compute %.4f s\n", r.wall_s, r.bound_s,
              r.least_io_s, r.io_span_s, r.compute_s);
  std::printf("blocked: writes %.4f s, reads %.4f s; write phase %.4f s\n", r.write_blocked_s, r.read_blocked_s,
              r.write_phase_s);
  for (std::size_t t = 0; t < r.tiers.size(); ++t)
    std::printf("tier %zu: in %llu MiB, out %llu MiB, busy %.4f s\n", t,
                static_cast<unsigned long long>(r.tiers[t].bytes_in >> 20),
                static_cast<unsigned long long>(r.tiers[t].bytes_out >> 20), r.tiers[t].busy_s);
  for (const mlbs::sim::Span& s : r.timeline)
    std::printf("%8.4f %8.4f %2d -> %2d  id %3llu  %s\n", s.start_s, s.end_s, s.src, s.dst,
                static_cast<unsigned long long>(s.id), s.what.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  bool hint = false;
  unsigned long parts = 1;
  bool by_store = false;
  std::string points_file;
  const auto usage = [] {
    std::fprintf(stderr,
                 "usage: mlbs_sim_sweep [--only KEY] [--hint] [--parts K (1-64) [--store-parts] | --auto-parts] "
                 "[--points FILE]\n");
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (a == "--points" && i + 1 < argc) {
      points_file = argv[++i];
    } else if (a == "--hint") {
      hint = true;
    } else if (a == "--auto-parts") {
      parts = mlbs::StoreOptions::kAutoParts;
    } else if (a == "--store-parts") {
      by_store = true;
    } else if (a == "--parts" && i + 1 < argc) {
      parts = std::strtoul(argv[++i], nullptr, 10);
      if (parts < 1 || parts > 64) return usage();
    } else {
      return usage();
    }
  }
  std::ofstream points;
  if (!points_file.empty()) {
    points.open(points_file);
    if (!points) {
      std::fprintf(stderr, "mlbs_sim_sweep: cannot write %s\n", points_file.c_str());
      return 2;
    }
  }
  std::vector<double> ratios;
  for (mlbs::sim::SweepPoint& p : mlbs::sim::sweep_points({mlbs::Schedule::Kind::lifo, mlbs::Schedule::Kind::fifo,
                                                            mlbs::Schedule::Kind::explicit_order},
                                                           hint, only, std::uint32_t(parts), by_store)) {
    p.machine.timeline = !only.empty();
    const mlbs::sim::Result r = mlbs::sim::simulate(p.machine, p.workload);
    ratios.push_back(r.wall_s / r.bound_s);
    std::printf("%s %.4f\n", p.key.c_str(), ratios.back());
    if (!only.empty()) print_detail(r);
    if (points.is_open()) points << mlbs::sim::point_json(p.key, p.machine, p.workload, r).dump() << '\n';
  }
  if (ratios.empty()) {
    std::fprintf(stderr, "mlbs_sim_sweep: no point is named '%s'\n", only.c_str());
    return 2;
  }
  const mlbs::sim::SweepSummary s = mlbs::sim::summarize(std::move(ratios));
  std::printf("# %zu points: median %.4f, p90 %.4f, max %.4f, %zu above 1.05x\n", s.points, s.median, s.p90, s.max,
              s.above);
  return 0;
}

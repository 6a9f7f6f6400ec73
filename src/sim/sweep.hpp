// mlbs — the planner's sweep: the configurations tests/unit/test_sim.cpp
// holds the planner to (wall over the physical bound) and mlbs_sim_sweep
// prints one by one, so that a change to the policies is measured point by
// point against the build before (docs/simulator.md, "Sweeping the planner").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "mlbs/config.hpp"
#include "sim/sim.hpp"

namespace mlbs::sim {

/// One configuration of the sweep, named by its parameters
/// ("lifo/t2/n32/s2/fs0.00/bw2/f0.0": schedule, file tiers, records, DRAM
/// slots, fast tiers' share of the data, bandwidth ratio, compute over I/O).
struct SweepPoint {
  std::string key;
  Machine machine;
  Workload workload;
};

/// The sweep over `kinds` (LIFO, FIFO and a revolve-like explicit order by
/// default), 432 points each: 1-3 file tiers, each `bw_ratio` (2, 5, 20)
/// slower than the one above, the fastest at 1 GiB/s; 8, 32 and 96 records
/// of 16 MiB; DRAM for 2 or 8 of them; the tiers above the last holding a
/// quarter of the data each, or unlimited; compute per call 0, 0.5, 1 and 2
/// times the least I/O time over the calls. `hint`: LIFO and FIFO are told
/// the record count. Runs the model once per point to size its compute. A non-empty
/// `only` keeps the point of that key alone. `parts` > 1: each point's
/// records written in that many parts (split_records(); `by_store`: kept so
/// by the store, store_parts()), under the same key, so that the sweeps
/// compare point by point. StoreOptions::kAutoParts: in the parts the store
/// chooses for each point (policies::auto_parts), kept by the store.
std::vector<SweepPoint> sweep_points(std::vector<Schedule::Kind> kinds = {Schedule::Kind::lifo,
                                                                          Schedule::Kind::fifo,
                                                                          Schedule::Kind::explicit_order},
                                     bool hint = false, std::string_view only = {}, std::uint32_t parts = 1,
                                     bool by_store = false);

/// Wall over the physical bound over a sweep: what mlbs_sim_sweep prints
/// last and tests/unit/test_sim.cpp guards.
struct SweepSummary {
  std::size_t points = 0;
  double median = 0, p90 = 0, max = 0;
  std::size_t above = 0;  ///< points above the target, 1.05x
};
SweepSummary summarize(std::vector<double> ratios);

}  // namespace mlbs::sim

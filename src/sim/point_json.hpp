// mlbs — one simulated run as the JSON line benchmarks/lp_bound.py reads
// (docs/simulator.md, "A tighter bound"): the machine, the workload's calls
// and the model's wall and physical bound. Header-only, for the tools that
// link nlohmann_json (mlbs_sim_sweep --points, mlbs-sim --points); the
// library itself does not depend on it.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "sim/sim.hpp"

namespace mlbs::sim {

inline nlohmann::json point_json(std::string_view key, const Machine& m, const Workload& w, const Result& r) {
  nlohmann::json tiers = nlohmann::json::array();
  for (const FileTier& t : m.tiers)
    tiers.push_back({{"capacity_bytes", t.capacity_bytes},
                     {"bandwidth_bytes_per_s", t.bandwidth_bytes_per_s},
                     {"latency_s", t.latency_s}});
  return {{"key", key},
          {"dram_bytes", m.dram_bytes},
          {"tiers", tiers},
          {"helpers", m.helpers},
          {"copy_bytes_per_s", m.copy_bytes_per_s},
          {"record_bytes", w.record_bytes},
          {"records", w.records},
          {"parts", w.parts},
          {"store_parts", w.store_parts},
          {"order", read_order(w)},
          {"compute_per_write_s", w.compute_per_write_s},
          {"compute_per_read_s", w.compute_per_read_s},
          {"compute_at_turn_s", w.compute_at_turn_s},
          {"wall_s", r.wall_s},
          {"bound_s", r.bound_s}};
}

}  // namespace mlbs::sim

// mlbs-sim — what-if answers from the simulator (src/sim/): given DRAM,
// burst-buffer and file-system capacities and bandwidths, helpers and the
// compute time per step, the wall time mlbs's planner would reach, the time
// the application would block, and each tier's traffic; --recommend finds
// the smallest DRAM budget that keeps blocking under 2% and, at the budget
// given, what writing each snapshot in parts would give; --parts K models
// that split; --points writes the run for benchmarks/lp_bound.py, the least
// wall any planner could reach on that machine (docs/simulator.md).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "engine/policies/parts.hpp"
#include "mlbs/config.hpp"
#include "mlbs/detail/block.hpp"
#include "mlbs/errors.hpp"
#include "mlbs/store_options.hpp"
#include "sim/point_json.hpp"
#include "sim/sim.hpp"

namespace {

using mlbs::sim::FileTier;
using mlbs::sim::Machine;
using mlbs::sim::Result;
using mlbs::sim::Workload;

/// "10ms", "1.5s", "250us", "0": seconds.
double parse_seconds(const std::string& text, const std::string& what) {
  std::size_t end = 0;
  double v = 0;
  try {
    v = std::stod(text, &end);
  } catch (const std::exception&) {
    throw CLI::ValidationError(what, "'" + text + "' is not a duration (e.g. 10ms, 1.5s, 250us)");
  }
  const std::string unit = text.substr(end);
  if (unit == "s" || (unit.empty() && v == 0)) return v;
  if (unit == "ms") return v * 1e-3;
  if (unit == "us") return v * 1e-6;
  throw CLI::ValidationError(what, "'" + text + "': give a unit, s, ms or us");
}

/// "CAP:BW[:LATENCY]", CAP 0 = unlimited, BW per second ("200MiB").
FileTier parse_tier(const std::string& spec) {
  std::vector<std::string> parts;
  for (std::size_t from = 0;;) {
    const std::size_t colon = spec.find(':', from);
    parts.push_back(spec.substr(from, colon - from));
    if (colon == std::string::npos) break;
    from = colon + 1;
  }
  if (parts.size() < 2 || parts.size() > 3)
    throw CLI::ValidationError("--tier", "'" + spec + "': expected CAPACITY:BANDWIDTH[:LATENCY], e.g. 96MiB:1GiB:50us");
  FileTier t;
  t.capacity_bytes = parts[0] == "0" || parts[0] == "unlimited" ? 0 : mlbs::parse_size(parts[0], "--tier capacity");
  t.bandwidth_bytes_per_s = double(mlbs::parse_size(parts[1], "--tier bandwidth"));
  if (parts.size() == 3) t.latency_s = parse_seconds(parts[2], "--tier latency");
  return t;
}

std::string bytes(double b) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return fmt::format("{:.4g} {}", b, unit[u]);
}

nlohmann::json to_json(const Machine& m, const Workload& w, const Result& r) {
  nlohmann::json tiers = nlohmann::json::array();
  for (std::size_t t = 0; t < r.tiers.size(); ++t)
    tiers.push_back({{"tier", t},
                     {"bytes_in", r.tiers[t].bytes_in},
                     {"bytes_out", r.tiers[t].bytes_out},
                     {"peak_used_bytes", r.tiers[t].peak_used_bytes},
                     {"busy_s", r.tiers[t].busy_s}});
  return {{"dram_bytes", m.dram_bytes},     {"helpers", m.helpers},
          {"parts", w.parts},
          {"store_parts", w.store_parts},
          {"codec_ratio", m.codec_ratio},
          {"wall_s", r.wall_s},             {"write_phase_s", r.write_phase_s},
          {"compute_s", r.compute_s},       {"copy_s", r.copy_s},
          {"write_blocked_s", r.write_blocked_s}, {"read_blocked_s", r.read_blocked_s},
          {"flush_s", r.flush_s},           {"blocked_share", r.wall_s > 0 ? r.blocked_s() / r.wall_s : 0.0},
          {"least_io_s", r.least_io_s},     {"io_span_s", r.io_span_s},
          {"physical_bound_s", r.bound_s},
          {"wall_over_bound", r.bound_s > 0 ? r.wall_s / r.bound_s : 0.0},
          {"helper_copies", r.helper_copies}, {"tiers", tiers}};
}

void print(const Result& r) {
  fmt::print("wall {:.4f} s   physical bound {:.4f} s ({:.3f}x)   compute {:.4f} s   least I/O {:.4f} s (span {:.4f} s)\n",
             r.wall_s, r.bound_s, r.bound_s > 0 ? r.wall_s / r.bound_s : 0.0, r.compute_s, r.least_io_s, r.io_span_s);
  fmt::print("blocked {:.4f} s ({:.1f}% of wall): writes {:.4f} s, reads {:.4f} s, flush {:.4f} s\n", r.blocked_s(),
             r.wall_s > 0 ? 100 * r.blocked_s() / r.wall_s : 0.0, r.write_blocked_s, r.read_blocked_s, r.flush_s);
  fmt::print("{:<6} {:>12} {:>12} {:>12} {:>8}\n", "tier", "in", "out", "peak used", "busy");
  for (std::size_t t = 0; t < r.tiers.size(); ++t)
    fmt::print("{:<6} {:>12} {:>12} {:>12} {:>7.1f}%\n", t, bytes(double(r.tiers[t].bytes_in)),
               bytes(double(r.tiers[t].bytes_out)), bytes(double(r.tiers[t].peak_used_bytes)),
               t && r.wall_s > 0 ? 100 * r.tiers[t].busy_s / r.wall_s : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mlbs-sim: predicts what mlbs's planner reaches on a given machine and workload"};
  std::string dram = "1GiB", record = "64MiB", copy_bw = "16GiB", write_s = "0", read_s, turn_s = "0",
              schedule = "lifo", json, points,
              encode_bw = "0", decode_bw = "0";
  std::vector<std::string> tier_specs;
  std::vector<std::uint64_t> order;
  Machine m;
  Workload w;
  w.records = 32;
  bool recommend = false;
  std::uint32_t parts = 1;
  bool store_parts = false;
  app.add_option("--dram", dram, "DRAM budget")->capture_default_str();
  app.add_option("--tier", tier_specs, "a file tier, fastest first: CAPACITY:BANDWIDTH[:LATENCY] (capacity 0 = unlimited)")
      ->required();
  app.add_option("--helpers", m.helpers, "helper threads")->capture_default_str();
  app.add_option("--copy-bw", copy_bw, "the application's copy bandwidth into DRAM slots")->capture_default_str();
  app.add_option("--record", record, "record size")->capture_default_str();
  app.add_option("--records", w.records, "records written")->capture_default_str();
  app.add_option("--compute-write", write_s, "compute before each write (e.g. 20ms)")->capture_default_str();
  app.add_option("--compute-read", read_s, "compute after each read (default: as --compute-write)");
  app.add_option("--compute-turn", turn_s, "compute between the last write and the first read (e.g. 35ms)")
      ->capture_default_str();
  app.add_option("--schedule", schedule, "read order: lifo, fifo or explicit (with --order)")
      ->check(CLI::IsMember({"lifo", "fifo", "explicit"}))
      ->capture_default_str();
  app.add_option("--order", order, "explicit read order: record ids, repeats allowed")->delimiter(',');
  app.add_flag("--persistent", m.persistent, "every record also durable on the last tier");
  app.add_option("--codec-ratio", m.codec_ratio,
                 "a codec stores records below DRAM at 1/RATIO of their size (docs/codecs.md; 1 = none)")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1e6));
  app.add_option("--encode-bw", encode_bw, "a helper's encode rate, raw bytes/s (0 = free)")->capture_default_str();
  app.add_option("--decode-bw", decode_bw, "a helper's decode rate, raw bytes/s (0 = free)")->capture_default_str();
  app.add_option("--parts", parts,
                 "write each record as this many records of a part's size, computing once per step (--records, "
                 "--order and the compute stay per step)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_flag("--store-parts", store_parts,
               "--parts as a store keeps them (StoreOptions::parts, docs/parts.md): each part counted by its own "
               "store, each read copied out of its slots");
  app.add_flag("--hint", w.hint_records, "lifo, fifo: tell the planner how many records will come (lifo:N, fifo:N)");
  app.add_flag("--recommend", recommend, "sweep the DRAM budget and recommend the smallest with blocking <= 2%");
  app.add_option("--json", json, "also write the results as JSON to this file");
  app.add_option("--points", points,
                 "also write the run as a JSON line for benchmarks/lp_bound.py, the least wall any planner could "
                 "reach on this machine (docs/simulator.md, \"A tighter bound\")");
  app.add_flag("--timeline", m.timeline, "print every helper copy and every wait of the application");
  CLI11_PARSE(app, argc, argv);

  try {
    m.dram_bytes = mlbs::parse_size(dram, "--dram");
    m.copy_bytes_per_s = double(mlbs::parse_size(copy_bw, "--copy-bw"));
    m.encode_bytes_per_s = double(mlbs::parse_size(encode_bw, "--encode-bw"));
    m.decode_bytes_per_s = double(mlbs::parse_size(decode_bw, "--decode-bw"));
    for (const std::string& s : tier_specs) m.tiers.push_back(parse_tier(s));
    w.record_bytes = mlbs::parse_size(record, "--record");
    w.compute_per_write_s = parse_seconds(write_s, "--compute-write");
    w.compute_per_read_s = read_s.empty() ? w.compute_per_write_s : parse_seconds(read_s, "--compute-read");
    w.compute_at_turn_s = parse_seconds(turn_s, "--compute-turn");
    w.schedule = schedule == "lifo"   ? mlbs::Schedule::Kind::lifo
                 : schedule == "fifo" ? mlbs::Schedule::Kind::fifo
                                      : mlbs::Schedule::Kind::explicit_order;
    if (w.schedule == mlbs::Schedule::Kind::explicit_order && order.empty())
      throw CLI::ValidationError("--order", "--schedule explicit needs --order ID,ID,...");
    w.order = order;
    // The linear program poses scratch runs of raw records, one run at a time.
    if (!points.empty() && (m.persistent || m.codec_ratio > 1.0 || recommend))
      throw CLI::ValidationError("--points", "benchmarks/lp_bound.py poses neither --persistent, --codec-ratio nor "
                                             "--recommend's many runs");
    const Workload whole = w;  // per snapshot, for --recommend's parts
    w = store_parts ? mlbs::sim::store_parts(std::move(w), parts) : mlbs::sim::split_records(std::move(w), parts);

    nlohmann::json out;
    if (!recommend) {
      const Result r = mlbs::sim::simulate(m, w);
      print(r);
      for (const mlbs::sim::Span& sp : r.timeline)
        fmt::print("{:9.4f} {:9.4f}  {:<28} id {:<5} {}\n", sp.start_s, sp.end_s, sp.what, sp.id,
                   sp.src < 0 ? std::string() : fmt::format("{} -> {}", sp.src, sp.dst));
      out = to_json(m, w, r);
      if (!points.empty()) {
        std::ofstream f(points);
        if (!(f << mlbs::sim::point_json("mlbs-sim", m, w, r).dump() << '\n'))
          throw CLI::ValidationError("--points", "cannot write " + points);
      }
    } else {
      // From the data volume down by halves: the smallest budget that still
      // keeps blocking under 2% of wall.
      const std::uint64_t data = w.record_bytes * w.records;
      out = nlohmann::json::array();
      fmt::print("{:>12} {:>10} {:>10} {:>9} {:>9}\n", "DRAM", "wall s", "bound s", "x bound", "blocked");
      std::uint64_t best = 0;
      for (std::uint64_t d = data; d >= mlbs::detail::round_up_block(w.record_bytes) && d > 0; d /= 2) {
        Machine mm = m;
        mm.dram_bytes = d;
        const Result r = mlbs::sim::simulate(mm, w);
        const double share = r.wall_s > 0 ? r.blocked_s() / r.wall_s : 0.0;
        fmt::print("{:>12} {:>10.4f} {:>10.4f} {:>8.3f}x {:>8.1f}%\n", bytes(double(d)), r.wall_s, r.bound_s,
                   r.bound_s > 0 ? r.wall_s / r.bound_s : 0.0, 100 * share);
        out.push_back(to_json(mm, w, r));
        if (share <= 0.02) best = d;
      }
      if (best)
        fmt::print("recommended DRAM budget: {} (blocking <= 2% of wall)\n", bytes(double(best)));
      else
        fmt::print("no DRAM budget up to the data volume keeps blocking under 2%: the file tiers are the bottleneck\n");
      // At the budget given: each snapshot in parts (whole blocks each), where DRAM holds few snapshots.
      fmt::print("\nat DRAM {}, each snapshot kept in parts (StoreOptions::parts):\n{:>6} {:>10} {:>9} {:>9}\n",
                 bytes(double(m.dram_bytes)), "parts", "wall s", "x bound", "blocked");
      std::uint32_t best_parts = 1;
      double best_wall = 0, whole_wall = 0;
      for (std::uint32_t k : {1u, 2u, 4u, 8u}) {
        if (whole.record_bytes % (std::uint64_t(k) * mlbs::detail::kBlockAlign) != 0) continue;
        const Workload split = mlbs::sim::store_parts(whole, k);  // as StoreOptions::parts would keep them
        const Result r = mlbs::sim::simulate(m, split);
        out.push_back(to_json(m, split, r));
        fmt::print("{:>6} {:>10.4f} {:>8.3f}x {:>8.1f}%\n", k, r.wall_s, r.bound_s > 0 ? r.wall_s / r.bound_s : 0.0,
                   r.wall_s > 0 ? 100 * r.blocked_s() / r.wall_s : 0.0);
        if (k == 1) whole_wall = best_wall = r.wall_s;
        if (r.wall_s < best_wall) best_wall = r.wall_s, best_parts = k;
      }
      if (best_parts > 1 && best_wall < 0.98 * whole_wall)
        fmt::print("writing each snapshot in {0} parts: {1:.0f}% less wall (StoreOptions::parts = {0}, docs/parts.md; "
                   "the model counts no set-up per copy unless --tier gives a latency)\n",
                   best_parts, 100 * (1 - best_wall / whole_wall));
      else
        fmt::print("parts gain less than 2% here\n");
      fmt::print("StoreOptions::kAutoParts would keep each snapshot {}\n",
                 [&](std::uint32_t k) { return k > 1 ? fmt::format("in {} parts", k) : std::string("whole"); }(
                     mlbs::engine::policies::auto_parts(whole.record_bytes, m.dram_bytes,
                                                        mlbs::StoreOptions::kMaxParts)));
    }
    if (!json.empty()) std::ofstream(json) << out.dump(2) << "\n";
  } catch (const CLI::Error& e) {
    return app.exit(e);
  } catch (const mlbs::Error& e) {
    std::fprintf(stderr, "mlbs-sim: %s\n", e.what());
    return 2;
  }
  return 0;
}

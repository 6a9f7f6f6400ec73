// mlbs-bench — makes the project's claim measurable: an out-of-core
// application runs as if its I/O were free whenever the storage keeps up, and
// never slower than the alternatives when it cannot.
//
// Runs workloads (micro, rtm, writeonly, readafterwrite) in several modes
// (mlbs, sync, sync-fast, writebehind, pagecache, odirect) on the same data in one
// invocation, verifies every snapshot read back, and reports wall, kernel,
// copy and blocking times beside the performance model of DESIGN §1
// (expected vs actual speedup over the sync reference). `--help` lists it all.
#include <cmath>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <mlbs/mlbs.hpp>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "modes.hpp"
#include "options.hpp"
#include "ranks.hpp"
#include "report.hpp"
#include "workloads.hpp"
#include "insitu.hpp"

namespace fs = std::filesystem;
using namespace mlbs_bench;

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    const auto b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

std::string strip_per_s(std::string s) {
  for (const char* suffix : {"/s", "/S", "ps"})
    if (s.size() > 2 && s.ends_with(suffix)) s.resize(s.size() - 2);
  return s;
}

/// "DIR[:QUOTA]": the quota is the text after the last ':' when it parses as a size.
DirTier parse_dir_tier(const std::string& spec, const std::string& flag) {
  DirTier t;
  t.path = spec;
  if (const auto colon = spec.rfind(':'); colon != std::string::npos && colon > 0) {
    try {
      t.quota_bytes = mlbs::parse_size(spec.substr(colon + 1), flag);
      t.path = spec.substr(0, colon);
    } catch (const mlbs::ConfigError&) {
      t.quota_bytes = 0;   // a ':' inside the path
    }
  }
  if (t.path.empty()) throw CLI::ValidationError(flag, "needs a directory");
  return t;
}

std::string footer() {
  std::string s = "\nModes (--modes, comma list):\n";
  for (const std::string& m : known_modes()) s += "  " + m + std::string(13 - m.size(), ' ') + describe_mode(m) + "\n";
  s += R"(
Workloads (--workload, comma list):
  micro           3D float grid (--grid-bytes), memory-bound 7-point stencil (OpenMP); forward phase of
                  --steps steps writes a snapshot every --io-ratio steps, backward phase of --steps steps
                  reads them back (--order lifo|fifo) and adds each into its stencil step
  rtm             3D acoustic wave propagation proxy (leapfrog): forward from a source saving snapshots,
                  backward adjoint propagation reading them in reverse, image += forward * backward;
                  prints image_checksum, identical in every mode (static schedule, no reductions)
  writeonly       a snapshot every --io-ratio steps (1 = every step), nothing read back
  readafterwrite  every snapshot step reads back what the previous snapshot step wrote
  insitu          rtm's forward phase only; with --modes mlbs,reader the reader mode runs a second
                  process reading every snapshot as it becomes readable: writer wall with and without it,
                  the reader's lag (docs/readers.md)

Every mode verifies the bytes it reads back against an xxHash3 kept at write time. No page-cache
help a real out-of-core run would not get: sync drops pages (fdatasync + FADV_DONTNEED) before
reading back; pagecache holds the page cache to --dram bytes by hand.

sync always runs first, per workload and I/O ratio, as the reference of every speedup, and is
reported (marked *) even when not in --modes.

Model (DESIGN §1): io_s_model = max over tiers of (bytes_in + bytes_out) / observed bandwidth
(observed = bytes / busy time); expected_speedup = wall(sync) / max(kernel_s + copy_s, io_s_model);
actual_speedup = wall(sync) / wall. kernel_s includes the snapshot checksums (hash_s).

Data path (issue 4), printed after the targets when the modes ran: drain = mlbs's bytes into the
slow tier per wall second vs odirect's write rate (writeonly, --compute none); prefetch = mlbs's
bytes out of the slow tier per second of the read-back phase vs odirect's read rate (micro, rtm,
--compute none); kernel impact = mlbs kernel_s / sync kernel_s - 1 (with compute). --repeat N runs
every group N times, modes interleaved, and reports medians.

Bandwidth caps (--slow-bw, --fast-bw) throttle mlbs tiers (Tier::bandwidth_bytes_per_s) and pace the
baselines' own reads and writes to the same rate (virtual clock + sleep_until).
)";
  return s;
}

struct Run {
  const Options& o;
  const Ranks& ranks;
  fs::path fast_root, slow_root;   // <dir>/mlbs-bench.<pid of rank 0>

  /// One run on every rank: they start together (the measured intervals
  /// coincide) and rank 0 returns the aggregate (aggregate_ranks), the
  /// others their own figures.
  RunResult run_one(const Plan& plan, const std::string& mode, unsigned repeat) {
    RunResult r;
    r.workload = to_string(plan.workload);
    r.mode = mode;
    r.io_ratio = plan.io_ratio;
    r.repeat = repeat;
    r.grid_bytes = plan.snapshot_bytes();
    r.grid_dims = std::to_string(plan.dims.nx) + "x" + std::to_string(plan.dims.ny) + "x" +
                  std::to_string(plan.dims.nz);
    r.steps = plan.steps;
    r.snapshots = plan.snapshots;
    r.config = config_json(plan);

    std::string label = r.workload + "-" + mode + "-r" + std::to_string(plan.io_ratio);
    if (o.repeat > 1) label += "#" + std::to_string(repeat);
    // The run's folders, shared by the ranks: the library keeps every rank's
    // records apart in them (and an mpiio tier needs one path on every rank);
    // the baselines' own files go to a folder per rank.
    RunDirs shared;
    shared.slow = slow_root / label;
    if (o.fast) shared.fast = fast_root / label;
    RunDirs dirs = shared;
    if (ranks.size() > 1 && mode != "mlbs" && mode != "writebehind") {
      const std::string mine = "rank" + std::to_string(ranks.rank());
      dirs.slow /= mine;
      if (!dirs.fast.empty()) dirs.fast /= mine;
    }
    const std::string who = ranks.size() > 1 ? "rank " + std::to_string(ranks.rank()) + ": " : "";
    if (!o.quiet && ranks.root()) std::fprintf(stderr, "mlbs-bench: %s ...\n", label.c_str());

    std::error_code ec;
    if (ranks.node_leader()) {   // a leftover of an earlier run (the folders are fresh otherwise)
      fs::remove_all(shared.slow, ec);
      if (!shared.fast.empty()) fs::remove_all(shared.fast, ec);
    }
    ranks.barrier();
    std::string setup_error;
    try {
      fs::create_directories(dirs.slow);
      if (!dirs.fast.empty()) fs::create_directories(dirs.fast);
    } catch (const std::exception& e) {
      setup_error = e.what();
    }
    // Every rank or none runs (mlbs's runtime is collective); this is also
    // the start line: no rank leaves it before all have reached it.
    const bool everyone_ready = ranks.all(setup_error.empty());

    const std::uint64_t trace_t0 = mlbs::trace::now_ns();
    try {
      if (!everyone_ready)
        throw std::runtime_error(setup_error.empty() ? "another rank could not create its folders" : setup_error);
      const auto t0 = Clock::now();
      std::unique_ptr<Mode> m = make_mode(mode, plan, o, dirs);
      r.setup_s = std::chrono::duration<double>(Clock::now() - t0).count();
      WorkloadResult w = run_workload(plan, o, *m);
      const auto tf = Clock::now();
      m->finish();
      const auto t1 = Clock::now();
      const ModeStats ms = m->stats();
      m.reset();   // mlbs: stops the runtime, removes its scratch files

      r.wall_s = std::chrono::duration<double>(t1 - t0).count();
      r.finish_s = std::chrono::duration<double>(t1 - tf).count();
      r.kernel_s = w.kernel_s;
      r.hash_s = w.hash_s;
      r.read_phase_s = w.read_phase_s;
      r.lead_compute_s = w.lead_compute_s;
      r.tail_compute_s = w.tail_compute_s;
      r.turn_compute_s = w.turn_compute_s;
      r.copy_s = ms.copy_s;
      r.copy_hash_s = ms.copy_hash_s;
      r.write_block_s = ms.write_block_s;
      r.read_block_s = ms.read_block_s;
      r.tiers = ms.tiers;
      r.extra = ms.extra;
      r.bytes_written = w.bytes_written;
      r.bytes_read = w.bytes_read;
      r.result_checksum = w.result_checksum;
      r.image_checksum = w.image_checksum;
      r.mismatches = w.mismatches;
      r.lossy = mode == "mlbs" && o.lossy();
      r.inexact = w.inexact;
      r.image = std::move(w.image);
      const unsigned expected_reads = unsigned(plan.read_order.size());
      r.verified = w.mismatches == 0 && w.writes == plan.snapshots && w.reads == expected_reads;
      if (w.mismatches)
        std::fprintf(stderr, "mlbs-bench: %s%s: %u snapshot(s) read back WRONG\n", who.c_str(), label.c_str(),
                     w.mismatches);
    } catch (const std::exception& e) {
      r.error = e.what();
      r.verified = false;
      std::fprintf(stderr, "mlbs-bench: %s%s failed: %s\n", who.c_str(), label.c_str(), e.what());
    }
    mlbs::trace::span(label, "run", trace_t0, mlbs::trace::now_ns());
    if (ranks.size() == 1 || dirs.slow != shared.slow) {   // never the shared folders: other ranks may still run
      fs::remove_all(dirs.slow, ec);
      if (!dirs.fast.empty()) fs::remove_all(dirs.fast, ec);
    }
    if (ranks.size() == 1) return r;

    ranks.barrier();   // every rank is done with the shared folders
    if (ranks.node_leader()) {
      fs::remove_all(shared.slow, ec);
      if (!shared.fast.empty()) fs::remove_all(shared.fast, ec);
    }
    const std::vector<std::string> texts = ranks.gather(to_json(r).dump());
    if (!ranks.root()) return r;
    std::vector<RunResult> per_rank;
    for (const std::string& t : texts) {
      per_rank.push_back(from_json(nlohmann::json::parse(t)));
      per_rank.back().rank = unsigned(per_rank.size() - 1);   // gathered in rank order
    }
    return aggregate_ranks(std::move(per_rank));
  }

  nlohmann::json config_json(const Plan& plan) const {
    nlohmann::json c = {{"dram_bytes", o.dram_bytes},
                        {"slow", {{"path", o.slow.path},
                                  {"kind", o.slow_kind},
                                  {"bandwidth_cap_bytes_per_s", o.slow.bandwidth_bytes_per_s}}},
                        {"durability", mlbs::to_string(o.durability)},
                        {"layout", mlbs::to_string(o.layout)},
                        {"reader_retention", mlbs::to_string(o.reader_retention)},
                        {"read_order", plan.fifo ? "fifo" : "lifo"},
                        {"hint_records", o.hint_records},
                        {"copy_ahead", !o.no_copy_ahead},
                        {"compute", o.compute ? "stencil" : "none"},
                        {"helper_threads", o.helper_threads},
                        {"io_chunk_bytes", o.io_chunk_bytes},
#ifdef _OPENMP
                        {"threads", omp_get_max_threads()},
#else
                        {"threads", 1},
#endif
                        {"data_over_dram", double(plan.snapshot_bytes()) * plan.snapshots / double(o.dram_bytes)}};
    if (o.fast)
      c["fast"] = {{"path", o.fast->path},
                   {"quota_bytes", o.fast->quota_bytes},
                   {"bandwidth_cap_bytes_per_s", o.fast->bandwidth_bytes_per_s}};
    return c;
  }
};

int check_json_file(const std::string& path, const std::vector<std::string>& workloads,
                    const std::vector<std::string>& modes) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "mlbs-bench: cannot open %s\n", path.c_str());
    return 1;
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlbs-bench: %s is not JSON: %s\n", path.c_str(), e.what());
    return 1;
  }
  const auto problems = check_results(doc, workloads, modes);
  for (const std::string& p : problems) std::fprintf(stderr, "mlbs-bench: %s: %s\n", path.c_str(), p.c_str());
  if (!problems.empty()) {
    std::printf("%s: INVALID (%zu problems)\n", path.c_str(), problems.size());
    return 1;
  }
  const unsigned ranks = doc.empty() ? 1u : doc.front().value("ranks", 1u);
  if (ranks > 1) std::printf("%s: OK (%zu results, %u ranks)\n", path.c_str(), doc.size(), ranks);
  else std::printf("%s: OK (%zu results)\n", path.c_str(), doc.size());
  return 0;
}

/// rtm: each lossy run's image against the group's sync image (exact: no
/// codec), as ||image - sync|| / ||sync||; images are dropped afterwards.
/// Under MPI the figure is this rank's.
void image_errors(std::vector<RunResult>& group) {
  const std::vector<float>& exact = group.front().image;
  for (RunResult& r : group) {
    if (!r.lossy || exact.empty() || r.image.size() != exact.size()) continue;
    double err = 0, norm = 0;
    for (std::size_t i = 0; i < exact.size(); ++i) {
      const double d = double(r.image[i]) - exact[i];
      err += d * d;
      norm += double(exact[i]) * exact[i];
    }
    r.image_rel_l2_error = norm > 0 ? std::sqrt(err / norm) : std::sqrt(err);
  }
  for (RunResult& r : group) std::vector<float>().swap(r.image);
}

}  // namespace

int main(int argc, char** argv) {
  // The in-transit reader process that mode reader starts (this binary again).
  if (argc > 1 && std::string_view(argv[1]) == "--insitu-reader") return insitu_reader_main(argc, argv);
  CLI::App app{"mlbs-bench: out-of-core workloads with mlbs and with the baselines it must beat,\n"
               "measured against the performance model (expected vs actual speedup over sync)."};
  app.footer(footer());
  app.get_formatter()->column_width(34);

  std::string workloads_s = "micro", modes_s, grid_s = "16MiB", dram_s = "64MiB", fast_s, slow_s, slow_bw_s,
              fast_bw_s, sweep_s, order_s = "lifo", compute_s = "stencil", durability_s = "scratch",
              helper_core_s = "auto", layout_s = "file", check_s, slow_kind_s = "directory", retention_s = "none",
              codec_when_s = "needed";
  Options o;
  unsigned io_ratio = 2;
  app.add_option("--workload", workloads_s, "micro|rtm|writeonly|readafterwrite, comma list")->capture_default_str();
  app.add_option("--modes", modes_s,
                 "mlbs,sync,sync-fast,writebehind,pagecache,odirect,adios2,reader (default: all that can run but "
                 "odirect and reader; sync-fast needs --fast; --workload insitu alone: mlbs,reader)");
  app.add_option("--grid-bytes", grid_s, "bytes of the 3D float grid = of one snapshot")->capture_default_str();
  app.add_option("--steps", o.steps, "time steps per phase")->capture_default_str()->check(CLI::Range(1u, 1u << 24));
  app.add_option("--io-ratio", io_ratio, "a snapshot every N steps")->capture_default_str()->check(CLI::Range(1u, 1u << 24));
  app.add_option("--repeat", o.repeat, "run every (workload, mode, I/O ratio) N times, modes interleaved; "
                                       "targets and data path use medians")
      ->capture_default_str()->check(CLI::Range(1u, 1000u));
  app.add_option("--sweep-io-ratio", sweep_s, "run every I/O ratio of this list, e.g. 1,2,5,10 (overrides --io-ratio)");
  app.add_option("--order", order_s, "micro's read order")->capture_default_str()->check(CLI::IsMember({"lifo", "fifo"}));
  app.add_option("--compute", compute_s, "stencil, or none to skip the kernel")->capture_default_str()
      ->check(CLI::IsMember({"stencil", "none"}));
  app.add_option("--dram", dram_s, "DRAM budget: mlbs memory tier, pagecache budget")->capture_default_str();
  app.add_option("--fast", fast_s, "DIR:QUOTA fast tier (node-local NVMe, burst buffer); omit for two tiers");
  app.add_option("--slow", slow_s, "DIR slow tier (parallel file system); default OUT/slow");
  app.add_option("--slow-kind", slow_kind_s, "directory|mpiio: Tier::kind of the mlbs modes' slow tier (the library "
                                            "refuses a kind it does not have)")->capture_default_str();
  app.add_option("--slow-bw", slow_bw_s, "bandwidth cap of the slow tier, bytes/s (e.g. 200MiB); 0 = none; "
                                         "per rank under MPI");
  app.add_option("--fast-bw", fast_bw_s, "bandwidth cap of the fast tier, bytes/s; 0 = none; per rank under MPI");
  app.add_flag("--hint-records", o.hint_records, "mlbs: tell the schedule how many snapshots will come "
                                                "(lifo:N, fifo:N)");
  app.add_flag("--no-copy-ahead", o.no_copy_ahead, "mlbs: Config::copy_ahead off (no early second copies on "
                                                  "an idle slower tier; docs/architecture.md)");
  app.add_option("--codec", o.codec,
                 "mlbs: compress snapshots below DRAM (none, lz4, zstd[:LEVEL], zfp:accuracy=X, zfp:precision=BITS, "
                 "zfp:rate=BITS; docs/codecs.md); with ZFP, rtm reports image_rel_l2_error against an exact mode")
      ->capture_default_str();
  app.add_option("--codec-layout", o.codec_layout,
                 "mlbs: the grid as the store's codec sees it: rows (ZFP codes 2-D), planes (3-D) or flat (1-D)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, Options::CodecLayout>{
          {"flat", Options::CodecLayout::flat}, {"rows", Options::CodecLayout::rows},
          {"planes", Options::CodecLayout::planes}}))
      ->default_str("rows");
  app.add_option("--codec-when", codec_when_s,
                 "needed|always: mlbs encodes only while the application waits for the tiers, or every record")
      ->capture_default_str()
      ->check(CLI::IsMember({"needed", "always"}));
  app.add_option("--helper-threads", o.helper_threads, "mlbs helper threads")->capture_default_str()
      ->check(CLI::Range(1u, 64u));
  app.add_option("--helper-core", helper_core_s,
                 "auto|none|N: where mlbs pins its helpers (Config::helper_core; auto = the cores the "
                 "OpenMP threads leave free, unpinned when they leave none)")
      ->capture_default_str();
  app.add_option("--durability", durability_s, "scratch|persistent")->capture_default_str()
      ->check(CLI::IsMember({"scratch", "persistent"}));
  app.add_option("--layout", layout_s, "file|log: mlbs's directory tiers, a file per snapshot or one "
                                      "append-only log per helper (the baselines write files)")
      ->capture_default_str()
      ->check(CLI::IsMember({"file", "file-per-record", "log"}));
  app.add_option("--reader-retention", retention_s,
                 "none|until-read: the mlbs modes' reader retention (docs/readers.md); with --workload insitu "
                 "its cost shows in mode mlbs and its use in mode reader")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "until-read"}));
  app.add_option("--threads", o.threads, "OpenMP threads of the kernel (0 = OpenMP's default)")->capture_default_str()
      ->check(CLI::Range(0, 4096));
  app.add_option("--out", o.out_dir, "where the default tier folders live")->capture_default_str();
  app.add_option("--json", o.json_path, "write the results as a JSON array to FILE");
  app.add_option("--trace", o.trace_path, "record a Chrome trace (Perfetto) of every run to FILE");
  app.add_flag("--quiet", o.quiet, "no progress or header; the table only");
  app.add_option("--check-json", check_s, "validate a results FILE (schema, verification, checksums across modes) "
                                          "and exit; --workload/--modes given too must all be present");
  CLI11_PARSE(app, argc, argv);

  const std::vector<std::string> workload_names = split(workloads_s);
  if (!check_s.empty()) {   // a file check: no MPI needed
    std::vector<std::string> want_w = app.count("--workload") ? workload_names : std::vector<std::string>{};
    std::vector<std::string> want_m;
    if (app.count("--modes"))
      for (const std::string& m : split(modes_s))
        if (m != "adios2" || mode_unavailable(m, o).empty()) want_m.push_back(m);  // adios2 only when built
    return check_json_file(check_s, want_w, want_m);
  }

  // Under MPI every rank runs everything below; rank 0 reports. Errors found
  // while validating are the same on every rank (rank 0 reports them); once
  // the runs have started, an error one rank hits alone ends them all.
  Ranks ranks;
  bool running = false;
  try {
    // --- validate -----------------------------------------------------------------------
    o.workloads.clear();
    for (const std::string& n : workload_names) {
      const auto w = parse_workload(n);
      if (!w)
        throw CLI::ValidationError("--workload",
                                   "unknown workload '" + n + "' (micro, rtm, writeonly, readafterwrite, insitu)");
      if (std::find(o.workloads.begin(), o.workloads.end(), *w) == o.workloads.end()) o.workloads.push_back(*w);
    }
    if (o.workloads.empty()) throw CLI::ValidationError("--workload", "no workload");
    o.grid_bytes = mlbs::parse_size(grid_s, "--grid-bytes");
    o.dram_bytes = mlbs::parse_size(dram_s, "--dram");
    o.order = order_s == "fifo" ? ReadOrder::fifo : ReadOrder::lifo;
    o.compute = compute_s != "none";
    o.helper_core = mlbs::parse_helper_core(helper_core_s, "--helper-core");
    o.durability = durability_s == "persistent" ? mlbs::Durability::persistent : mlbs::Durability::scratch;
    o.layout = mlbs::parse_layout(layout_s, "--layout");
    o.reader_retention = mlbs::parse_reader_retention(retention_s, "--reader-retention");
    o.codec_when = mlbs::parse_codec_when(codec_when_s, "--codec-when");
    o.slow_kind = slow_kind_s;
    if (!fast_s.empty()) o.fast = parse_dir_tier(fast_s, "--fast");
    o.slow.path = slow_s.empty() ? (fs::path(o.out_dir) / "slow").string() : slow_s;
    if (!slow_bw_s.empty()) o.slow.bandwidth_bytes_per_s = mlbs::parse_size(strip_per_s(slow_bw_s), "--slow-bw");
    if (!fast_bw_s.empty()) {
      if (!o.fast) throw CLI::ValidationError("--fast-bw", "needs --fast");
      o.fast->bandwidth_bytes_per_s = mlbs::parse_size(strip_per_s(fast_bw_s), "--fast-bw");
    }
    o.io_ratios = {io_ratio};
    if (!sweep_s.empty()) {
      o.io_ratios.clear();
      for (const std::string& v : split(sweep_s)) {
        const unsigned long r = std::stoul(v);
        if (r == 0 || r > (1u << 24)) throw CLI::ValidationError("--sweep-io-ratio", "ratios must be in [1, 2^24]");
        o.io_ratios.push_back(unsigned(r));
      }
      if (o.io_ratios.empty()) throw CLI::ValidationError("--sweep-io-ratio", "empty list");
    }

    // --workload insitu alone compares the writer with and without its reader.
    const bool insitu_only = o.workloads == std::vector<Workload>{Workload::insitu};
    std::vector<std::string> requested =
        !modes_s.empty() ? split(modes_s)
        : insitu_only    ? std::vector<std::string>{"mlbs", "reader"}
                         : std::vector<std::string>{"mlbs", "sync", "sync-fast", "writebehind", "pagecache", "adios2"};
    for (const std::string& m : requested) {
      if (std::find(known_modes().begin(), known_modes().end(), m) == known_modes().end())
        throw CLI::ValidationError("--modes", "unknown mode '" + m + "'");
      if (std::find(o.modes.begin(), o.modes.end(), m) != o.modes.end()) continue;
      const std::string why = mode_unavailable(m, o);
      if (m == "adios2" && !why.empty()) {
        if (ranks.root() && !modes_s.empty()) std::printf("adios2: not built\n");
        continue;
      }
      if (!why.empty()) {
        if (!modes_s.empty()) throw CLI::ValidationError("--modes", m + " " + why);
        continue;   // default list: leave out what cannot run
      }
      o.modes.push_back(m);
    }
    const bool sync_requested = std::find(o.modes.begin(), o.modes.end(), "sync") != o.modes.end();

    const Dims dims = dims_for_bytes(o.grid_bytes);
    if (o.dram_bytes < dims.bytes())
      throw CLI::ValidationError("--dram", "the DRAM budget (" + mlbs::format_bytes(o.dram_bytes) +
                                               ") must hold one snapshot (" + mlbs::format_bytes(dims.bytes()) + ")");

    // Under MPI each rank records its own trace: rank 0 into --trace FILE,
    // rank r into FILE with ".rank<r>" before the extension.
    if (!o.trace_path.empty() && !ranks.root()) {
      const fs::path t(o.trace_path);
      o.trace_path = (t.parent_path() / (t.stem().string() + ".rank" + std::to_string(ranks.rank()) +
                                         t.extension().string())).string();
    }
    // Fail before the runs, not after them, when a result file cannot be
    // written (the JSON is rank 0's), on every rank when one cannot.
    std::string unwritable;
    for (const std::string* path : {&o.json_path, &o.trace_path})
      if (!path->empty() && (ranks.root() || path != &o.json_path) && !std::ofstream(*path))
        unwritable = "cannot write " + *path;
    if (!unwritable.empty() && !ranks.root()) std::fprintf(stderr, "mlbs-bench: rank %d: %s\n", ranks.rank(), unwritable.c_str());
    if (!ranks.all(unwritable.empty()))
      throw std::runtime_error(unwritable.empty() ? "a rank cannot write its result files" : unwritable);

    // The library is the authority on tiers: a --slow-kind it does not have
    // (mpiio in a build without it) fails here with its ConfigError, before any run.
    {
      const fs::path probe = fs::path(o.slow.path) / "mlbs-bench.probe";
      RunDirs dirs{o.fast ? fs::path(o.fast->path) / "mlbs-bench.probe" : fs::path(), probe};
      mlbs_config(make_plan(o.workloads.front(), o, o.io_ratios.front()), o, dirs, false).validate();
    }

#ifdef _OPENMP
    if (o.threads > 0) omp_set_num_threads(o.threads);
#endif
    if (!o.trace_path.empty()) {
      mlbs::trace::enable();
      mlbs::trace::name_thread("app");
    }

    // --- header -------------------------------------------------------------------------
    // One folder for the invocation, named after rank 0's pid on every rank.
    const std::string tag = "mlbs-bench." + std::to_string(ranks.broadcast(std::uint64_t(::getpid())));
    Run run{o, ranks, o.fast ? fs::path(o.fast->path) / tag : fs::path(), fs::path(o.slow.path) / tag};
    if (ranks.mpi() && ranks.thread_level() < 3 && ranks.root())   // 3 = MPI_THREAD_MULTIPLE
      std::fprintf(stderr, "mlbs-bench: MPI grants thread level %d, not MPI_THREAD_MULTIPLE: tiers whose helpers "
                           "call MPI cannot run\n", ranks.thread_level());
    if (!o.quiet && ranks.root()) {
      std::printf("mlbs-bench %s: grid %zux%zux%zu (%s per snapshot), %u steps per phase, DRAM %s, %s, layout %s\n",
                  MLBS_VERSION_STRING, dims.nx, dims.ny, dims.nz, mlbs::format_bytes(dims.bytes()).c_str(), o.steps,
                  mlbs::format_bytes(o.dram_bytes).c_str(), mlbs::to_string(o.durability).c_str(),
                  mlbs::to_string(o.layout).c_str());
      std::printf("tiers: ");
      if (o.fast)
        std::printf("fast %s (quota %s, cap %s)  ", o.fast->path.c_str(),
                    o.fast->quota_bytes ? mlbs::format_bytes(o.fast->quota_bytes).c_str() : "none",
                    o.fast->bandwidth_bytes_per_s ? (mlbs::format_bytes(o.fast->bandwidth_bytes_per_s) + "/s").c_str() : "none");
      std::printf("slow %s (cap %s)\n", o.slow.path.c_str(),
                  o.slow.bandwidth_bytes_per_s ? (mlbs::format_bytes(o.slow.bandwidth_bytes_per_s) + "/s").c_str() : "none");
#ifdef _OPENMP
      std::printf("OpenMP threads %d, helper threads %u", omp_get_max_threads(), o.helper_threads);
#else
      std::printf("OpenMP off (1 thread), helper threads %u", o.helper_threads);
#endif
      for (unsigned r : o.io_ratios) {
        const unsigned snaps = o.steps / r;
        std::printf("; ratio %u: %u snapshots = %s (%.1fx DRAM)", r, snaps,
                    mlbs::format_bytes(std::uint64_t(snaps) * dims.bytes()).c_str(),
                    double(snaps) * double(dims.bytes()) / double(o.dram_bytes));
      }
      if (o.repeat > 1) std::printf("; %u repeats, modes interleaved", o.repeat);
      if (ranks.size() > 1)
        std::printf("\n%d MPI ranks, each on its own data (DRAM budget, quotas and caps are per rank)", ranks.size());
      std::printf("\n\n");
      std::fflush(stdout);
    }

    // --- run: per (io_ratio, workload) sync first, then the other modes -------------------
    std::vector<RunResult> all;
    running = true;
    for (unsigned r : o.io_ratios) {
      for (Workload w : o.workloads) {
        const Plan plan = make_plan(w, o, r, unsigned(ranks.rank()));
        // Repeats interleave the modes (sync, mlbs, ..., sync, mlbs, ...) so that
        // a drift in the machine's load touches every mode alike; each repeat's
        // speedups are relative to its own sync run.
        for (unsigned k = 0; k < o.repeat; ++k) {
          std::vector<RunResult> group;
          group.push_back(run.run_one(plan, "sync", k));
          group.back().reference_only = !sync_requested;
          for (const std::string& m : o.modes)
            if (m != "sync") group.push_back(run.run_one(plan, m, k));
          apply_model(group, o.durability == mlbs::Durability::persistent);
          image_errors(group);
          all.insert(all.end(), group.begin(), group.end());
        }
      }
    }
    ranks.barrier();   // every rank is out of the folders
    std::error_code ec;
    if (ranks.node_leader()) {
      fs::remove_all(run.slow_root, ec);
      if (!run.fast_root.empty()) fs::remove_all(run.fast_root, ec);
      if (slow_s.empty()) {   // the default OUT/slow: leave nothing behind (fs::remove keeps non-empty folders)
        fs::remove(o.slow.path, ec);
        fs::remove(o.out_dir, ec);
      }
    }
    if (!o.trace_path.empty()) mlbs::trace::write_chrome_json(o.trace_path);

    // Rank 0 holds the aggregates: it reports and decides the exit status of every rank.
    bool ok = true;
    for (const RunResult& res : all) ok &= res.error.empty() && res.verified;
    std::set<std::string> images;
    for (unsigned r : o.io_ratios) {
      images.clear();
      for (const RunResult& res : all)
        if (res.io_ratio == r && res.image_checksum && res.error.empty() && !res.lossy)
          images.insert(hex64(*res.image_checksum));
      if (images.size() > 1) {
        if (ranks.root()) std::fprintf(stderr, "mlbs-bench: rtm image_checksum differs between modes at ratio %u\n", r);
        ok = false;
      }
    }
    ok = ranks.broadcast(ok ? 1 : 0) == 1;
    running = false;
    if (!ranks.root()) return ok ? 0 : 1;

    // --- report -------------------------------------------------------------------------
    print_table(stdout, all);
    print_rank_spread(stdout, all);
    print_targets(stdout, evaluate_targets(median_runs(all), all));
    print_data_path(stdout, evaluate_data_path(all));
    print_insitu(stdout, all);
    std::fflush(stdout);
    if (!o.json_path.empty()) {
      nlohmann::json doc = nlohmann::json::array();
      for (const RunResult& res : all) doc.push_back(to_json(res));
      std::ofstream out(o.json_path);
      out << doc.dump(2) << "\n";
      if (!out) throw std::runtime_error("cannot write " + o.json_path);
    }
    if (!ok) std::fprintf(stderr, "mlbs-bench: FAILED: a run failed or read back wrong bytes\n");
    return ok ? 0 : 1;
  } catch (const CLI::Error& e) {
    if (ranks.root()) return app.exit(e);
    std::ostream quiet(nullptr);   // the same error on every rank: rank 0 says it
    return app.exit(e, quiet, quiet);
  } catch (const std::exception& e) {
    if (running && ranks.size() > 1) {
      std::fprintf(stderr, "mlbs-bench: rank %d: %s\n", ranks.rank(), e.what());
      ranks.abort(2);   // the other ranks may be waiting for this one in a collective
    }
    if (ranks.root()) std::fprintf(stderr, "mlbs-bench: %s\n", e.what());
    return 2;
  }
}

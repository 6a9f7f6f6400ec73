#include "report.hpp"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include <mlbs/config.hpp>

#include "model.hpp"

namespace mlbs_bench {

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

namespace {

/// The times a run reports, by their JSON names: read back, summed over ranks as maxima.
constexpr std::pair<const char*, double RunResult::*> kTimes[] = {
    {"wall_s", &RunResult::wall_s},         {"kernel_s", &RunResult::kernel_s},
    {"hash_s", &RunResult::hash_s},         {"copy_s", &RunResult::copy_s},
    {"copy_hash_s", &RunResult::copy_hash_s},
    {"write_block_s", &RunResult::write_block_s}, {"read_block_s", &RunResult::read_block_s},
    {"finish_s", &RunResult::finish_s},     {"read_phase_s", &RunResult::read_phase_s},
    {"setup_s", &RunResult::setup_s},       {"lead_compute_s", &RunResult::lead_compute_s},
    {"tail_compute_s", &RunResult::tail_compute_s}, {"turn_compute_s", &RunResult::turn_compute_s}};

std::vector<model::TierTraffic> traffic(const std::vector<TierReport>& tiers) {
  std::vector<model::TierTraffic> t;
  for (const TierReport& r : tiers) t.push_back({r.bytes_in, r.bytes_out, r.busy_s});
  return t;
}

/// The figures whose spread over the ranks the JSON reports (rank_spread).
const std::vector<std::pair<std::string, std::function<double(const RunResult&)>>>& spread_figures() {
  static const std::vector<std::pair<std::string, std::function<double(const RunResult&)>>> figures = {
      {"wall_s", [](const RunResult& r) { return r.wall_s; }},
      {"kernel_s", [](const RunResult& r) { return r.kernel_s; }},
      {"copy_s", [](const RunResult& r) { return r.copy_s; }},
      {"write_block_s", [](const RunResult& r) { return r.write_block_s; }},
      {"read_block_s", [](const RunResult& r) { return r.read_block_s; }}};
  return figures;
}

std::string rate(double bytes_per_s) {
  return bytes_per_s > 0 ? mlbs::format_bytes(std::uint64_t(bytes_per_s)) + "/s" : "-";
}

}  // namespace

namespace {

/// The hierarchy a run reports, when it has a memory tier first (the mlbs
/// modes): its capacity, then per file tier its capacity and cap (or the
/// bandwidth observed in the run where it has none).
std::optional<model::Hierarchy> hierarchy_of(const RunResult& r, bool persistent) {
  if (r.tiers.empty() || r.tiers.front().kind != "memory") return std::nullopt;
  model::Hierarchy h;
  h.dram_bytes = r.tiers.front().capacity_bytes;
  h.persistent = persistent;
  for (std::size_t t = 1; t < r.tiers.size(); ++t) {
    const TierReport& tr = r.tiers[t];
    const double bw = tr.bandwidth_cap_bytes_per_s
                          ? double(tr.bandwidth_cap_bytes_per_s)
                          : model::observed_bandwidth({tr.bytes_in, tr.bytes_out, tr.busy_s});
    h.file_tiers.push_back({tr.capacity_bytes, bw});
  }
  return h;
}

}  // namespace

void apply_model(std::vector<RunResult>& group, bool persistent) {
  const RunResult* ref = nullptr;
  for (const RunResult& r : group)
    if (r.mode == "sync" && r.error.empty()) ref = &r;
  const double ref_wall = ref ? ref->wall_s : 0.0;
  // The hardware of the group: the run reporting the most tiers below its memory tier.
  std::optional<model::Hierarchy> hw;
  for (const RunResult& r : group)
    if (auto h = hierarchy_of(r, persistent); h && (!hw || h->file_tiers.size() > hw->file_tiers.size())) hw = h;
  // The compute before the first write, after the last read and at the turn,
  // which no I/O can overlap: the least any successful run of the group
  // measured (each edge is a few steps; the least keeps the I/O span short).
  const auto least = [&](double RunResult::*field) {
    double v = 0;
    bool any = false;
    for (const RunResult& r : group)
      if (r.error.empty() && r.kernel_s > 0 && (!any || r.*field < v)) v = r.*field, any = true;
    return v;
  };
  // The kernels' own time: sync's, which computes with nothing beside it,
  // or the run's own where that was faster (a bound its run beat would be
  // none). Helpers that slow the kernels so pay for it in wall over the
  // bound, and show as their mode's kernel impact. Not the least over the
  // group's modes: the least of six noisy samples sits below each mode's
  // typical time, so a comparison with it measures the machine's noise more
  // than the mode. Without a sync run, the least.
  const double group_kernel_s = ref && ref->kernel_s > 0 ? ref->kernel_s : least(&RunResult::kernel_s);
  const model::ComputeEdges edges{least(&RunResult::lead_compute_s), least(&RunResult::tail_compute_s),
                                  least(&RunResult::turn_compute_s)};
  for (RunResult& r : group) {
    const auto t = traffic(r.tiers);
    r.io_s_model = model::io_s_model(t);
    r.expected_speedup = ref ? model::expected_speedup(ref_wall, r.kernel_s, r.copy_s, r.io_s_model) : 0.0;
    r.actual_speedup = ref && r.error.empty() ? model::actual_speedup(ref_wall, r.wall_s) : 0.0;
    if (hw) {
      r.least_io_s = model::least_io_s(*hw, r.bytes_written, r.bytes_read);
      r.io_span_s = model::io_span_s(*hw, r.least_io_s, edges, model::peak_io_s(*hw, r.bytes_written, r.bytes_read));
      const double kernel_s = r.kernel_s > 0 ? std::min(group_kernel_s, r.kernel_s) : group_kernel_s;
      r.physical_bound_s = model::physical_bound_s(kernel_s, r.plain_copy_s(), r.io_span_s);
      // A codec's run: the same bound over what it stored (what capacity
      // forces below DRAM, at the ratio the file tiers saw in this run).
      std::uint64_t raw = 0, stored = 0;
      for (std::size_t t = 1; t < r.tiers.size(); ++t) {
        raw += r.tiers[t].raw_bytes_in;
        stored += r.tiers[t].raw_bytes_in ? r.tiers[t].bytes_in : 0;
      }
      if (raw && stored && raw > stored) {
        r.codec_ratio = double(raw) / double(stored);
        const auto at_ratio = [&](std::uint64_t bytes) {
          const std::uint64_t above = std::min(bytes, hw->dram_bytes);
          return above + std::uint64_t(double(bytes - above) / r.codec_ratio);
        };
        const std::uint64_t written = at_ratio(r.bytes_written), read = at_ratio(r.bytes_read);
        const double stored_io_s = model::least_io_s(*hw, written, read);
        r.physical_bound_stored_s = model::physical_bound_s(
            kernel_s, r.plain_copy_s(), model::io_span_s(*hw, stored_io_s, edges, model::peak_io_s(*hw, written, read)));
      }
    }
  }
}

nlohmann::json to_json(const RunResult& r) {
  nlohmann::json tiers = nlohmann::json::array();
  for (const TierReport& t : r.tiers) {
    tiers.push_back({{"name", t.name},
                     {"kind", t.kind},
                     {"path", t.path},
                     {"io_backend", t.io_backend},
                     {"capacity_bytes", t.capacity_bytes},
                     {"bandwidth_cap_bytes_per_s", t.bandwidth_cap_bytes_per_s},
                     {"bytes_in", t.bytes_in},
                     {"bytes_out", t.bytes_out},
                     {"peak_used_bytes", t.peak_used_bytes},
                     {"stalls", t.stalls},
                     {"busy_s", t.busy_s},
                     {"bandwidth_bytes_per_s", model::observed_bandwidth({t.bytes_in, t.bytes_out, t.busy_s})},
                     {"io_s", model::tier_io_s({t.bytes_in, t.bytes_out, t.busy_s})}});
    if (t.raw_bytes_in || t.raw_bytes_out) {  // a codec stored frames here: the records they were
      tiers.back()["raw_bytes_in"] = t.raw_bytes_in;
      tiers.back()["raw_bytes_out"] = t.raw_bytes_out;
    }
  }
  nlohmann::json j = {{"workload", r.workload},
                      {"mode", r.mode},
                      {"io_ratio", r.io_ratio},
                      {"repeat", r.repeat},
                      {"grid_bytes", r.grid_bytes},
                      {"grid_dims", r.grid_dims},
                      {"steps", r.steps},
                      {"snapshots", r.snapshots},
                      {"bytes_written", r.bytes_written},
                      {"bytes_read", r.bytes_read},
                      {"wall_s", r.wall_s},
                      {"kernel_s", r.kernel_s},
                      {"hash_s", r.hash_s},
                      {"copy_s", r.copy_s},
                      {"copy_hash_s", r.copy_hash_s},
                      {"write_block_s", r.write_block_s},
                      {"read_block_s", r.read_block_s},
                      {"finish_s", r.finish_s},
                      {"setup_s", r.setup_s},
                      {"read_phase_s", r.read_phase_s},
                      {"lead_compute_s", r.lead_compute_s},
                      {"tail_compute_s", r.tail_compute_s},
                      {"turn_compute_s", r.turn_compute_s},
                      {"io_s_model", r.io_s_model},
                      {"overlap_bound_s", model::overlap_bound_s(r.kernel_s, r.copy_s, r.io_s_model)},
                      {"least_io_s", r.least_io_s},
                      {"io_span_s", r.io_span_s},
                      {"physical_bound_s", r.physical_bound_s},
                      {"expected_speedup", r.expected_speedup},
                      {"actual_speedup", r.actual_speedup},
                      {"tier_stats", tiers},
                      {"result_checksum", hex64(r.result_checksum)},
                      {"verified", r.verified},
                      {"mismatches", r.mismatches},
                      {"reference_only", r.reference_only},
                      {"config", r.config},
                      {"mode_stats", r.extra}};
  if (r.image_checksum) j["image_checksum"] = hex64(*r.image_checksum);
  if (r.lossy) {
    j["lossy"] = true;
    j["inexact"] = r.inexact;
    if (r.image_rel_l2_error) j["image_rel_l2_error"] = *r.image_rel_l2_error;
  }
  if (r.codec_ratio > 0) {
    j["codec_ratio"] = r.codec_ratio;
    j["physical_bound_stored_s"] = r.physical_bound_stored_s;
  }
  if (!r.error.empty()) j["error"] = r.error;
  j["ranks"] = r.ranks;
  if (r.ranks > 1 && !r.per_rank.empty()) {
    // Each rank's own figures; what is the same on every rank (the run's
    // identity, its configuration) and the model (a figure of the whole run)
    // stay in the aggregate.
    nlohmann::json ranks = nlohmann::json::array();
    for (const RunResult& p : r.per_rank) {
      nlohmann::json e = to_json(p);
      for (const char* k : {"workload", "mode", "io_ratio", "repeat", "grid_bytes", "grid_dims", "steps", "io_s_model",
                            "overlap_bound_s", "least_io_s", "io_span_s", "physical_bound_s", "expected_speedup", "actual_speedup",
                            "reference_only", "config", "ranks"})
        e.erase(k);
      e["rank"] = p.rank;
      ranks.push_back(std::move(e));
    }
    j["per_rank"] = std::move(ranks);
    nlohmann::json spread = nlohmann::json::object();
    for (const auto& [name, field] : spread_figures()) {
      const Spread sp = rank_spread(r, field);
      spread[name] = {{"min", sp.min}, {"mean", sp.mean}, {"max", sp.max}, {"slowest_rank", sp.slowest}};
    }
    j["rank_spread"] = std::move(spread);
  }
  return j;
}

RunResult from_json(const nlohmann::json& j) {
  RunResult r;
  auto hex = [](const nlohmann::json& v) { return std::uint64_t(std::stoull(v.get<std::string>(), nullptr, 16)); };
  r.workload = j.value("workload", std::string());
  r.mode = j.value("mode", std::string());
  r.io_ratio = j.value("io_ratio", 0u);
  r.repeat = j.value("repeat", 0u);
  r.grid_bytes = j.value("grid_bytes", std::uint64_t(0));
  r.grid_dims = j.value("grid_dims", std::string());
  r.steps = j.value("steps", 0u);
  r.snapshots = j.value("snapshots", 0u);
  r.bytes_written = j.value("bytes_written", std::uint64_t(0));
  r.bytes_read = j.value("bytes_read", std::uint64_t(0));
  for (const auto& [key, field] : kTimes) r.*field = j.value(key, 0.0);
  for (const nlohmann::json& t : j.value("tier_stats", nlohmann::json::array())) {
    TierReport tr;
    tr.name = t.value("name", std::string());
    tr.kind = t.value("kind", std::string());
    tr.path = t.value("path", std::string());
    tr.io_backend = t.value("io_backend", std::string());
    tr.capacity_bytes = t.value("capacity_bytes", std::uint64_t(0));
    tr.bandwidth_cap_bytes_per_s = t.value("bandwidth_cap_bytes_per_s", std::uint64_t(0));
    tr.bytes_in = t.value("bytes_in", std::uint64_t(0));
    tr.bytes_out = t.value("bytes_out", std::uint64_t(0));
    tr.raw_bytes_in = t.value("raw_bytes_in", std::uint64_t(0));
    tr.raw_bytes_out = t.value("raw_bytes_out", std::uint64_t(0));
    tr.peak_used_bytes = t.value("peak_used_bytes", std::uint64_t(0));
    tr.stalls = t.value("stalls", std::uint64_t(0));
    tr.busy_s = t.value("busy_s", 0.0);
    r.tiers.push_back(std::move(tr));
  }
  if (j.contains("result_checksum")) r.result_checksum = hex(j["result_checksum"]);
  if (j.contains("image_checksum")) r.image_checksum = hex(j["image_checksum"]);
  r.verified = j.value("verified", false);
  r.mismatches = j.value("mismatches", 0u);
  r.lossy = j.value("lossy", false);
  r.inexact = j.value("inexact", 0u);
  if (j.contains("image_rel_l2_error")) r.image_rel_l2_error = j["image_rel_l2_error"].get<double>();
  r.codec_ratio = j.value("codec_ratio", 0.0);
  r.physical_bound_stored_s = j.value("physical_bound_stored_s", 0.0);
  r.reference_only = j.value("reference_only", false);
  r.error = j.value("error", std::string());
  r.config = j.value("config", nlohmann::json::object());
  r.extra = j.value("mode_stats", nlohmann::json::object());
  r.ranks = j.value("ranks", 1u);
  r.rank = j.value("rank", 0u);
  return r;
}

namespace {

/// Folds one more checksum into `h` (the splitmix64 finaliser over a running
/// combination): the ranks' checksums in rank order give one 64-bit value.
std::uint64_t combine(std::uint64_t h, std::uint64_t v) {
  std::uint64_t x = h ^ (v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2));
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Mode counters that are settings, the same on every rank: not summed.
bool is_setting(const std::string& key) { return key == "helper_threads" || key == "request_bytes"; }

}  // namespace

RunResult aggregate_ranks(std::vector<RunResult> per_rank) {
  if (per_rank.empty()) return {};
  if (per_rank.size() == 1) {
    RunResult one = std::move(per_rank.front());
    one.ranks = 1;
    one.per_rank.clear();
    return one;
  }
  RunResult a = per_rank.front();
  a.ranks = unsigned(per_rank.size());
  a.rank = 0;
  a.error.clear();
  a.verified = true;
  for (const auto& [key, t] : kTimes) a.*t = 0;
  a.snapshots = 0;
  a.bytes_written = a.bytes_read = 0;
  a.mismatches = 0;
  // The tier list of a rank that got as far as reporting it (a failed rank may have none).
  a.tiers.clear();
  for (const RunResult& p : per_rank)
    if (p.tiers.size() > a.tiers.size()) a.tiers = p.tiers;
  for (TierReport& t : a.tiers) {
    t.capacity_bytes = t.bandwidth_cap_bytes_per_s = t.bytes_in = t.bytes_out = t.peak_used_bytes = t.stalls = 0;
    t.raw_bytes_in = t.raw_bytes_out = 0;
    t.busy_s = 0;
  }
  std::uint64_t result = 0, image = 0;
  bool images = true;
  for (const RunResult& p : per_rank) {
    for (const auto& [key, t] : kTimes) a.*t = std::max(a.*t, p.*t);
    a.snapshots += p.snapshots;
    a.bytes_written += p.bytes_written;
    a.bytes_read += p.bytes_read;
    a.mismatches += p.mismatches;
    a.verified = a.verified && p.verified && p.error.empty();
    if (!p.error.empty()) a.error += (a.error.empty() ? "" : "; ") + ("rank " + std::to_string(p.rank) + ": " + p.error);
    for (std::size_t i = 0; i < p.tiers.size() && i < a.tiers.size(); ++i) {
      const TierReport& s = p.tiers[i];
      TierReport& t = a.tiers[i];
      t.capacity_bytes += s.capacity_bytes;
      t.bandwidth_cap_bytes_per_s += s.bandwidth_cap_bytes_per_s;
      t.bytes_in += s.bytes_in;
      t.bytes_out += s.bytes_out;
      t.raw_bytes_in += s.raw_bytes_in;
      t.raw_bytes_out += s.raw_bytes_out;
      t.peak_used_bytes += s.peak_used_bytes;
      t.stalls += s.stalls;
      t.busy_s = std::max(t.busy_s, s.busy_s);
    }
    result = combine(result, p.result_checksum);
    images = images && p.image_checksum.has_value();
    if (p.image_checksum) image = combine(image, *p.image_checksum);
  }
  a.result_checksum = result;
  a.image_checksum = images ? std::optional<std::uint64_t>(image) : std::nullopt;
  for (auto it = a.extra.begin(); it != a.extra.end(); ++it) {
    const std::string& key = it.key();
    nlohmann::json& value = it.value();
    if (is_setting(key)) continue;
    bool all_counts = value.is_number_unsigned(), all_true = value.is_boolean();
    std::uint64_t sum = 0;
    for (const RunResult& p : per_rank) {
      const nlohmann::json v = p.extra.value(key, nlohmann::json());
      all_counts = all_counts && v.is_number_unsigned();
      if (all_counts) sum += v.get<std::uint64_t>();
      all_true = all_true && v.is_boolean() && v.get<bool>();
    }
    if (all_counts) value = sum;
    else if (value.is_boolean()) value = all_true;
  }
  a.per_rank = std::move(per_rank);
  return a;
}

Spread rank_spread(const RunResult& r, const std::function<double(const RunResult&)>& figure) {
  Spread s;
  const std::vector<RunResult> self{r};
  const std::vector<RunResult>& runs = r.per_rank.empty() ? self : r.per_rank;
  bool first = true;
  for (const RunResult& p : runs) {
    const double v = figure(p);
    s.mean += v / double(runs.size());
    if (first || v < s.min) s.min = v;
    if (first || v > s.max) {
      s.max = v;
      s.slowest = p.rank;
    }
    first = false;
  }
  return s;
}

void print_table(std::FILE* out, const std::vector<RunResult>& results) {
  if (!results.empty() && results.front().ranks > 1)
    std::fprintf(out, "%u ranks: times are the max over ranks, snapshots and bytes the sums, bandwidths the summed "
                      "bytes over the longest busy time\n", results.front().ranks);
  bool repeated = false;
  for (const RunResult& r : results) repeated |= r.repeat > 0;
  auto rep = [&](const RunResult* r) {
    if (!repeated) return std::string();
    char buf[16];
    if (r) std::snprintf(buf, sizeof buf, " %3u", r->repeat);
    else std::snprintf(buf, sizeof buf, " %3s", "rep");
    return std::string(buf);
  };
  std::fprintf(out, "%-14s %-11s %5s%s %5s %8s %8s %7s %8s %8s %8s %8s %8s %5s  %s\n", "workload", "mode", "ratio",
               rep(nullptr).c_str(), "snaps", "wall_s", "kernel_s", "copy_s", "wblock_s", "rblock_s", "io_mdl_s",
               "expected", "actual", "ok", "bottleneck tier (observed)");
  for (const RunResult& r : results) {
    std::string bottleneck = "-";
    double worst = 0;
    for (const TierReport& t : r.tiers) {
      const model::TierTraffic tt{t.bytes_in, t.bytes_out, t.busy_s};
      if (model::tier_io_s(tt) > worst) {
        worst = model::tier_io_s(tt);
        bottleneck = t.name + " " + rate(model::observed_bandwidth(tt));
      }
    }
    const std::string mode = r.reference_only ? r.mode + "*" : r.mode;
    if (!r.error.empty()) {
      std::fprintf(out, "%-14s %-11s %5u%s %5u  FAILED: %s\n", r.workload.c_str(), mode.c_str(), r.io_ratio,
                   rep(&r).c_str(), r.snapshots, r.error.c_str());
      continue;
    }
    std::fprintf(out, "%-14s %-11s %5u%s %5u %8.3f %8.3f %7.3f %8.3f %8.3f %8.3f %7.2fx %7.2fx %5s  %s\n",
                 r.workload.c_str(), mode.c_str(), r.io_ratio, rep(&r).c_str(), r.snapshots, r.wall_s, r.kernel_s,
                 r.copy_s, r.write_block_s, r.read_block_s, r.io_s_model, r.expected_speedup, r.actual_speedup,
                 r.verified ? "yes" : "NO", bottleneck.c_str());
  }
  bool any_ref = false;
  for (const RunResult& r : results) any_ref |= r.reference_only;
  if (any_ref) std::fprintf(out, "* sync runs first as the reference of every speedup, even when not in --modes\n");
}

void print_rank_spread(std::FILE* out, const std::vector<RunResult>& results) {
  bool any = false, repeated = false;
  for (const RunResult& r : results) {
    any |= r.ranks > 1 && !r.per_rank.empty();
    repeated |= r.repeat > 0;
  }
  if (!any) return;
  std::fprintf(out, "\nper-rank spread (seconds: min / mean / max over the ranks, and the slowest rank; "
                    "blocked = write + read blocked)\n");
  std::fprintf(out, "%-14s %-11s %5s%s %8s %8s %8s %4s %8s %8s %8s %8s\n", "workload", "mode", "ratio",
               repeated ? " rep" : "", "wall_min", "wall_avg", "wall_max", "slow", "kern_min", "kern_max", "blk_min",
               "blk_max");
  for (const RunResult& r : results) {
    if (r.per_rank.empty()) continue;
    const Spread wall = rank_spread(r, [](const RunResult& p) { return p.wall_s; });
    const Spread kern = rank_spread(r, [](const RunResult& p) { return p.kernel_s; });
    const Spread blk = rank_spread(r, [](const RunResult& p) { return p.write_block_s + p.read_block_s; });
    char rep[16] = "";
    if (repeated) std::snprintf(rep, sizeof rep, " %3u", r.repeat);
    std::fprintf(out, "%-14s %-11s %5u%s %8.3f %8.3f %8.3f %4u %8.3f %8.3f %8.3f %8.3f\n", r.workload.c_str(),
                 (r.reference_only ? r.mode + "*" : r.mode).c_str(), r.io_ratio, rep, wall.min, wall.mean, wall.max,
                 wall.slowest, kern.min, kern.max, blk.min, blk.max);
  }
}

// --- medians of repeated runs -------------------------------------------------------------

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const auto mid = v.begin() + std::ptrdiff_t((v.size() - 1) / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

std::vector<RunResult> median_runs(const std::vector<RunResult>& results) {
  using Key = std::tuple<std::string, std::string, unsigned>;
  std::vector<Key> order;
  std::map<Key, std::vector<const RunResult*>> runs;
  for (const RunResult& r : results) {
    const Key k{r.workload, r.mode, r.io_ratio};
    if (!runs.count(k)) order.push_back(k);
    runs[k].push_back(&r);
  }
  std::vector<RunResult> out;
  for (const Key& k : order) {
    std::vector<const RunResult*> ok;
    for (const RunResult* r : runs[k])
      if (r->error.empty()) ok.push_back(r);
    if (ok.empty()) {
      out.push_back(*runs[k].front());
      continue;
    }
    std::sort(ok.begin(), ok.end(), [](const RunResult* a, const RunResult* b) { return a->wall_s < b->wall_s; });
    out.push_back(*ok[(ok.size() - 1) / 2]);
  }
  return out;
}

// --- targets ----------------------------------------------------------------------------

std::vector<TargetCheck> evaluate_targets(const std::vector<RunResult>& results,
                                          const std::vector<RunResult>& repeats) {
  std::vector<TargetCheck> checks;
  for (const RunResult& m : results) {
    if (m.mode != "mlbs" || !m.error.empty() || m.wall_s <= 0) continue;
    TargetCheck c;
    c.workload = m.workload;
    c.io_ratio = m.io_ratio;
    // physical_bound_s = max(compute, I/O span): compute covers the I/O when it is the larger.
    c.io_covered = m.physical_bound_s > 0 && m.physical_bound_s > m.io_span_s;
    c.blocking_frac = (m.write_block_s + m.read_block_s) / m.wall_s;
    c.physical_ratio = m.physical_bound_s > 0 ? m.wall_s / m.physical_bound_s : 0.0;
    c.physical_lo = c.physical_hi = c.physical_ratio;
    for (const RunResult& r : repeats)
      if (r.mode == "mlbs" && r.workload == m.workload && r.io_ratio == m.io_ratio && r.error.empty() &&
          r.physical_bound_s > 0) {
        const double v = r.wall_s / r.physical_bound_s;
        c.physical_lo = std::min(c.physical_lo, v);
        c.physical_hi = std::max(c.physical_hi, v);
      }
    const double bound = model::overlap_bound_s(m.kernel_s, m.copy_s, m.io_s_model);
    c.bound_ratio = bound > 0 ? m.wall_s / bound : 0.0;
    const RunResult* best = nullptr;
    for (const RunResult& r : results)
      // "reader" is mlbs with an analysis beside it, not an alternative to beat.
      if (r.workload == m.workload && r.io_ratio == m.io_ratio && r.mode != "mlbs" && r.mode != "reader" &&
          r.error.empty() && r.wall_s > 0 && (!best || r.wall_s < best->wall_s))
        best = &r;
    if (best) {
      c.best_other = best->mode;
      c.margin = best->wall_s / m.wall_s;
    }
    checks.push_back(std::move(c));
  }
  return checks;
}

void print_targets(std::FILE* out, const std::vector<TargetCheck>& checks) {
  if (checks.empty()) return;
  std::fprintf(out, "\ntargets for mlbs (every group: wall <= 1.05 x the physical bound; blocking <= 2%% of wall where "
                    "compute covers the least I/O time; faster than every other mode)\n");
  std::fprintf(out, "%-14s %5s %-12s %9s %9s %11s %10s %-12s %8s  %s\n", "workload", "ratio", "regime", "blocking",
               "wall/phys", "per repeat", "wall/model", "best other", "margin", "verdict");
  for (const TargetCheck& c : checks) {
    std::string verdict = "met";
    if (!c.met()) {
      verdict = "NOT met:";
      if (!c.blocking_ok()) verdict += " blocking";
      if (!c.bound_ok()) verdict += c.physical_ratio > 0 ? " bound" : " no bound";
      if (!c.faster_ok()) verdict += " slower than " + c.best_other;
    }
    char range[32] = "-";
    if (c.physical_ratio > 0) std::snprintf(range, sizeof range, "%.2f-%.2f", c.physical_lo, c.physical_hi);
    std::fprintf(out, "%-14s %5u %-12s %8.1f%% %8.2fx %11s %9.2fx %-12s %7.2fx  %s\n", c.workload.c_str(),
                 c.io_ratio, c.io_covered ? "I/O covered" : "I/O-bound", 100 * c.blocking_frac, c.physical_ratio, range,
                 c.bound_ratio, c.best_other.empty() ? "-" : c.best_other.c_str(), c.margin, verdict.c_str());
  }
}

// --- the data path --------------------------------------------------------------------------

namespace {

double per_s(double bytes, double s) { return s > 0 ? bytes / s : 0.0; }

}  // namespace

double drain_bytes_per_s(const RunResult& m) {
  return m.tiers.empty() ? 0.0 : per_s(double(m.tiers.back().bytes_in), m.wall_s);
}

double prefetch_bytes_per_s(const RunResult& m) {
  return m.tiers.empty() ? 0.0 : per_s(double(m.tiers.back().bytes_out), m.read_phase_s);
}

double direct_write_bytes_per_s(const RunResult& d) {
  return d.tiers.empty() ? 0.0 : per_s(double(d.tiers.back().bytes_in), d.write_block_s);
}

double direct_read_bytes_per_s(const RunResult& d) {
  return d.tiers.empty() ? 0.0 : per_s(double(d.tiers.back().bytes_out), d.read_block_s);
}

double DataPathFigure::figure(Kind kind, double mlbs, double base) {
  if (base <= 0) return 0.0;
  return kind == Kind::kernel_impact ? mlbs / base - 1.0 : mlbs / base;
}

double DataPathFigure::value() const { return figure(kind, mlbs, base); }

bool DataPathFigure::met() const {
  if (base <= 0 || mlbs <= 0) return false;
  return kind == Kind::kernel_impact ? value() <= 0.03 : value() >= 0.90;
}

std::string DataPathFigure::name() const {
  switch (kind) {
    case Kind::drain: return "drain";
    case Kind::prefetch: return "prefetch";
    case Kind::kernel_impact: return "kernel impact";
  }
  return "?";
}

std::vector<DataPathFigure> evaluate_data_path(const std::vector<RunResult>& results) {
  using Group = std::pair<std::string, unsigned>;
  std::vector<Group> order;
  std::map<Group, std::map<std::string, std::vector<const RunResult*>>> groups;
  for (const RunResult& r : results) {
    const Group g{r.workload, r.io_ratio};
    if (!groups.count(g)) order.push_back(g);
    if (r.error.empty() && r.wall_s > 0) groups[g][r.mode].push_back(&r);
  }
  std::vector<DataPathFigure> out;
  for (const Group& g : order) {
    auto& modes = groups[g];
    const auto& mlbs = modes["mlbs"];
    if (mlbs.empty()) continue;
    const bool compute = mlbs.front()->config.value("compute", std::string("stencil")) != "none";
    // Medians of f over the runs of one mode.
    auto med = [](const std::vector<const RunResult*>& runs, double (*f)(const RunResult&)) {
      std::vector<double> v;
      for (const RunResult* r : runs) v.push_back(f(*r));
      return median(v);
    };
    auto figure = [&](DataPathFigure::Kind kind, const std::string& base, double (*fm)(const RunResult&),
                      double (*fb)(const RunResult&)) {
      const auto& b = modes[base];
      if (b.empty()) return;
      DataPathFigure f;
      f.kind = kind;
      f.workload = g.first;
      f.io_ratio = g.second;
      f.baseline = base;
      f.mlbs = med(mlbs, fm);
      f.base = med(b, fb);
      f.runs = unsigned(std::min(mlbs.size(), b.size()));
      bool first = true;
      for (const RunResult* m : mlbs)
        for (const RunResult* r : b)
          if (r->repeat == m->repeat) {
            const double v = DataPathFigure::figure(kind, fm(*m), fb(*r));
            f.lo = first ? v : std::min(f.lo, v);
            f.hi = first ? v : std::max(f.hi, v);
            first = false;
          }
      out.push_back(std::move(f));
    };
    if (!compute && g.first == "writeonly")
      figure(DataPathFigure::Kind::drain, "odirect", drain_bytes_per_s, direct_write_bytes_per_s);
    if (!compute && (g.first == "micro" || g.first == "rtm"))
      figure(DataPathFigure::Kind::prefetch, "odirect", prefetch_bytes_per_s, direct_read_bytes_per_s);
    if (compute)
      figure(DataPathFigure::Kind::kernel_impact, "sync", [](const RunResult& r) { return r.kernel_s; },
             [](const RunResult& r) { return r.kernel_s; });
  }
  return out;
}

void print_data_path(std::FILE* out, const std::vector<DataPathFigure>& figures) {
  if (figures.empty()) return;
  std::fprintf(out, "\ndata path (medians over the repeats; drain and prefetch >= 90%% of a plain O_DIRECT "
                    "writer/reader, kernel impact <= 3%%)\n");
  std::fprintf(out, "%-14s %-14s %5s %4s %13s %13s %-8s %8s %17s  %s\n", "figure", "workload", "ratio", "runs",
               "mlbs", "baseline", "(mode)", "value", "per-repeat range", "verdict");
  for (const DataPathFigure& f : figures) {
    const bool rates = f.kind != DataPathFigure::Kind::kernel_impact;
    char m[32], b[32], v[32], range[48];
    if (rates) {
      std::snprintf(m, sizeof m, "%.3f GiB/s", f.mlbs / double(1ull << 30));
      std::snprintf(b, sizeof b, "%.3f GiB/s", f.base / double(1ull << 30));
      std::snprintf(v, sizeof v, "%.1f%%", 100 * f.value());
      std::snprintf(range, sizeof range, "%.1f..%.1f%%", 100 * f.lo, 100 * f.hi);
    } else {
      std::snprintf(m, sizeof m, "%.3f s", f.mlbs);
      std::snprintf(b, sizeof b, "%.3f s", f.base);
      std::snprintf(v, sizeof v, "%+.1f%%", 100 * f.value());
      std::snprintf(range, sizeof range, "%+.1f..%+.1f%%", 100 * f.lo, 100 * f.hi);
    }
    std::fprintf(out, "%-14s %-14s %5u %4u %13s %13s %-8s %8s %17s  %s\n", f.name().c_str(), f.workload.c_str(),
                 f.io_ratio, f.runs, m, b, f.baseline.c_str(), v, range, f.met() ? "met" : "NOT met");
  }
}

// --- the checker --------------------------------------------------------------------------

namespace {

struct Checker {
  std::vector<std::string> problems;

  void fail(const std::string& where, const std::string& what) { problems.push_back(where + ": " + what); }

  bool require(const nlohmann::json& o, const std::string& where, const char* key, nlohmann::json::value_t type) {
    if (!o.contains(key)) {
      fail(where, std::string("missing '") + key + "'");
      return false;
    }
    const nlohmann::json& v = o.at(key);
    bool ok = false;
    switch (type) {
      case nlohmann::json::value_t::number_unsigned: ok = v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0); break;
      case nlohmann::json::value_t::number_float: ok = v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0; break;
      case nlohmann::json::value_t::string: ok = v.is_string(); break;
      case nlohmann::json::value_t::boolean: ok = v.is_boolean(); break;
      case nlohmann::json::value_t::array: ok = v.is_array(); break;
      case nlohmann::json::value_t::object: ok = v.is_object(); break;
      default: ok = true;
    }
    if (!ok) fail(where, std::string("'") + key + "' has the wrong type or a negative value: " + v.dump());
    return ok;
  }
};

bool is_hex16(const nlohmann::json& v) {
  if (!v.is_string()) return false;
  const std::string s = v.get<std::string>();
  return s.size() == 16 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

std::vector<std::string> check_results(const nlohmann::json& doc, const std::vector<std::string>& expect_workloads,
                                       const std::vector<std::string>& expect_modes) {
  using vt = nlohmann::json::value_t;
  Checker c;
  if (!doc.is_array()) {
    c.fail("document", "not a JSON array");
    return c.problems;
  }
  if (doc.empty()) c.fail("document", "no results");

  // (workload, io_ratio) -> mode -> checksum, for cross-mode comparisons
  std::map<std::pair<std::string, unsigned>, std::map<std::string, std::string>> images, results;
  std::map<std::pair<std::string, unsigned>, bool> have_sync;
  std::set<std::pair<std::string, std::string>> seen;
  // Under MPI: (workload, io_ratio, rank) -> mode -> checksum, and the rank counts seen.
  std::map<std::tuple<std::string, unsigned, unsigned>, std::map<std::string, std::string>> rank_sums;
  std::set<std::uint64_t> rank_counts;

  for (std::size_t i = 0; i < doc.size(); ++i) {
    const nlohmann::json& o = doc[i];
    std::string where = "result " + std::to_string(i);
    if (!o.is_object()) {
      c.fail(where, "not an object");
      continue;
    }
    bool ok = c.require(o, where, "workload", vt::string) & c.require(o, where, "mode", vt::string) &
              c.require(o, where, "io_ratio", vt::number_unsigned);
    if (!ok) continue;
    const std::string workload = o["workload"], mode = o["mode"];
    const unsigned ratio = o["io_ratio"];
    where += " (" + workload + "/" + mode + " ratio " + std::to_string(ratio) + ")";
    if (ratio == 0) c.fail(where, "io_ratio is 0");
    seen.insert({workload, mode});
    for (const char* k : {"grid_bytes", "steps", "snapshots", "bytes_written", "bytes_read"})
      ok &= c.require(o, where, k, vt::number_unsigned);
    for (const char* k : {"wall_s", "kernel_s", "copy_s", "write_block_s", "read_block_s", "io_s_model",
                          "expected_speedup", "actual_speedup"})
      ok &= c.require(o, where, k, vt::number_float);
    // Optional (older files lack them), checked when present.
    if (o.contains("repeat")) ok &= c.require(o, where, "repeat", vt::number_unsigned);
    for (const char* k : {"read_phase_s", "setup_s", "lead_compute_s", "tail_compute_s", "turn_compute_s",
                          "least_io_s", "io_span_s", "physical_bound_s", "copy_hash_s"})
      if (o.contains(k)) ok &= c.require(o, where, k, vt::number_float);
    ok &= c.require(o, where, "verified", vt::boolean);
    ok &= c.require(o, where, "tier_stats", vt::array);
    if (o.contains("error")) c.fail(where, "run failed: " + o["error"].dump());
    if (!ok) continue;
    if (!o["verified"].get<bool>()) c.fail(where, "snapshots read back did not verify");
    // The bound counts copy_s less it: the library's hashing is part of its copies.
    if (o.contains("copy_hash_s") &&
        !(o["copy_hash_s"].get<double>() >= 0 && o["copy_hash_s"].get<double>() <= o["copy_s"].get<double>()))
      c.fail(where, "copy_hash_s must be within copy_s");
    if (o["wall_s"].get<double>() <= 0) c.fail(where, "wall_s is not positive");

    const std::uint64_t snap_bytes = o["grid_bytes"], snapshots = o["snapshots"];
    const std::uint64_t written = o["bytes_written"], read = o["bytes_read"];
    if (written != snapshots * snap_bytes)
      c.fail(where, "bytes_written " + std::to_string(written) + " != snapshots x grid_bytes");
    const std::uint64_t want_read = workload == "writeonly" ? 0 : written;
    if (read != want_read) c.fail(where, "bytes_read " + std::to_string(read) + ", expected " + std::to_string(want_read));

    // The physical bound's edges are compute the run measured: parts of kernel_s, and,
    // with kernels, present wherever their definition says (micro and rtm read every snapshot back).
    if (o.contains("lead_compute_s") && o.contains("tail_compute_s")) {
      const double kernel = o["kernel_s"], lead = o["lead_compute_s"], tail = o["tail_compute_s"];
      const double turn = o.value("turn_compute_s", 0.0);
      if (lead < 0 || tail < 0 || turn < 0 || lead + turn + tail > kernel * (1 + 1e-9))
        c.fail(where, "lead_compute_s + turn_compute_s + tail_compute_s must be within kernel_s");
      const bool kernels = o.value("config", nlohmann::json::object()).value("compute", std::string()) != "none";
      if (kernels && written > 0 && !(lead > 0)) c.fail(where, "lead_compute_s is 0 with kernels running");
      if (kernels && (workload == "micro" || workload == "rtm") && !(tail > 0))
        c.fail(where, "tail_compute_s is 0 although every snapshot was read back");
      if (workload == "writeonly" && tail != 0) c.fail(where, "tail_compute_s of a run that reads nothing back");
      if (o.contains("io_span_s") && o.contains("least_io_s") &&
          o["io_span_s"].get<double>() < o["least_io_s"].get<double>())
        c.fail(where, "io_span_s is below least_io_s");
    }

    const nlohmann::json& tiers = o["tier_stats"];
    if (tiers.empty()) c.fail(where, "tier_stats is empty");
    std::uint64_t moved = 0;
    for (std::size_t t = 0; t < tiers.size(); ++t) {
      const std::string tw = where + " tier " + std::to_string(t);
      if (!tiers[t].is_object()) {
        c.fail(tw, "not an object");
        continue;
      }
      bool tok = c.require(tiers[t], tw, "name", vt::string) & c.require(tiers[t], tw, "bytes_in", vt::number_unsigned) &
                 c.require(tiers[t], tw, "bytes_out", vt::number_unsigned) &
                 c.require(tiers[t], tw, "busy_s", vt::number_float) &
                 c.require(tiers[t], tw, "bandwidth_bytes_per_s", vt::number_float);
      if (tok) moved += tiers[t]["bytes_in"].get<std::uint64_t>() + tiers[t]["bytes_out"].get<std::uint64_t>();
      // The O_DIRECT baseline must say how it moved its bytes (a refused O_DIRECT falls back, and says so).
      if (mode == "odirect" && c.require(tiers[t], tw, "io_backend", vt::string) &&
          tiers[t]["io_backend"].get<std::string>().find("O_DIRECT") == std::string::npos)
        c.fail(tw, "odirect's io_backend does not mention O_DIRECT: " + tiers[t]["io_backend"].dump());
      // A quota is the tier's capacity: no mode may use more (sync-fast spills to slow instead).
      const nlohmann::json& cap = tiers[t].value("capacity_bytes", nlohmann::json());
      const nlohmann::json& peak = tiers[t].value("peak_used_bytes", nlohmann::json());
      if (cap.is_number_unsigned() && peak.is_number_unsigned() && cap.get<std::uint64_t>() > 0 &&
          peak.get<std::uint64_t>() > cap.get<std::uint64_t>())
        c.fail(tw, "peak_used_bytes " + peak.dump() + " exceeds capacity_bytes " + cap.dump());
    }
    if (written > 0 && moved == 0) c.fail(where, "no tier moved any bytes");

    // Under MPI: the aggregates must be what the ranks' own figures give.
    std::uint64_t ranks = 1;
    if (o.contains("ranks") && c.require(o, where, "ranks", vt::number_unsigned)) ranks = o["ranks"];
    if (ranks == 0) c.fail(where, "ranks is 0");
    rank_counts.insert(ranks);
    if (ranks > 1 && c.require(o, where, "per_rank", vt::array)) {
      const nlohmann::json& per = o["per_rank"];
      if (per.size() != ranks) c.fail(where, "per_rank has " + std::to_string(per.size()) + " entries for " +
                                                 std::to_string(ranks) + " ranks");
      double wall_max = 0;
      std::uint64_t w_sum = 0, r_sum = 0;
      bool all_ok = true;
      for (std::size_t k = 0; k < per.size(); ++k) {
        const nlohmann::json& e = per[k];
        const std::string rw = where + " rank " + std::to_string(k);
        if (!e.is_object()) {
          c.fail(rw, "not an object");
          all_ok = false;
          continue;
        }
        bool eok = c.require(e, rw, "rank", vt::number_unsigned) & c.require(e, rw, "verified", vt::boolean);
        for (const char* f : {"wall_s", "kernel_s", "copy_s", "write_block_s", "read_block_s"})
          eok &= c.require(e, rw, f, vt::number_float);
        for (const char* f : {"bytes_written", "bytes_read", "snapshots"}) eok &= c.require(e, rw, f, vt::number_unsigned);
        if (e.contains("error")) c.fail(rw, "run failed: " + e["error"].dump());
        if (!eok) {
          all_ok = false;
          continue;
        }
        if (e["rank"].get<std::uint64_t>() != k) c.fail(rw, "per_rank entry of rank " + e["rank"].dump() + " out of order");
        if (!e["verified"].get<bool>()) c.fail(rw, "snapshots read back did not verify on this rank");
        wall_max = std::max(wall_max, e["wall_s"].get<double>());
        w_sum += e["bytes_written"].get<std::uint64_t>();
        r_sum += e["bytes_read"].get<std::uint64_t>();
        for (const char* sum : {"result_checksum", "image_checksum"})
          if (e.contains(sum) && is_hex16(e[sum]) && !o.value("lossy", false))
            rank_sums[{workload + " " + sum, ratio, unsigned(k)}][mode] = e[sum].get<std::string>();
      }
      if (all_ok) {
        const double wall = o["wall_s"];
        if (std::fabs(wall - wall_max) > 1e-9 * std::max(1.0, wall))
          c.fail(where, "wall_s " + std::to_string(wall) + " is not the max over the ranks (" + std::to_string(wall_max) + ")");
        if (w_sum != written) c.fail(where, "bytes_written is not the sum over the ranks");
        if (r_sum != read) c.fail(where, "bytes_read is not the sum over the ranks");
      }
    }

    const auto key = std::make_pair(workload, ratio);
    if (mode == "sync") {
      have_sync[key] = true;
      if (std::fabs(o["actual_speedup"].get<double>() - 1.0) > 1e-9)
        c.fail(where, "sync is the reference: its actual_speedup must be 1");
    } else {
      have_sync.try_emplace(key, false);
    }
    // A codec's bound over stored bytes: a ratio above 1, a bound no larger than the raw one.
    if (o.contains("codec_ratio")) {
      const double ratio = o.value("codec_ratio", 0.0), stored = o.value("physical_bound_stored_s", -1.0);
      if (!(ratio > 1.0)) c.fail(where, "codec_ratio must be above 1 when reported");
      if (!(stored > 0 && stored <= o.value("physical_bound_s", 0.0) + 1e-9))
        c.fail(where, "physical_bound_stored_s must be in (0, physical_bound_s]");
    }
    // A lossy codec's run is compared by its image's error, not its checksums.
    const bool lossy = o.value("lossy", false);
    if (workload == "rtm") {
      if (!o.contains("image_checksum") || !is_hex16(o["image_checksum"]))
        c.fail(where, "rtm needs image_checksum as 16 hex digits");
      else if (!lossy)
        images[key][mode] = o["image_checksum"];
      if (lossy && !o.contains("image_rel_l2_error"))
        c.fail(where, "a lossy rtm run needs image_rel_l2_error (an exact mode ran beside it)");
    }
    if (o.contains("result_checksum") && !lossy) {
      if (!is_hex16(o["result_checksum"])) c.fail(where, "result_checksum is not 16 hex digits");
      else results[key][mode] = o["result_checksum"];
    }
  }

  for (const auto& [key, ok] : have_sync)
    if (!ok) c.fail(key.first + " ratio " + std::to_string(key.second), "no sync reference run");
  auto same = [&](const auto& table, const char* what) {
    for (const auto& [key, by_mode] : table) {
      std::set<std::string> values;
      for (const auto& [mode, v] : by_mode) values.insert(v);
      if (values.size() > 1) {
        std::string list;
        for (const auto& [mode, v] : by_mode) list += " " + mode + "=" + v;
        c.fail(key.first + " ratio " + std::to_string(key.second), std::string(what) + " differs between modes:" + list);
      }
    }
  };
  same(images, "image_checksum");
  same(results, "result_checksum");
  for (const auto& [key, by_mode] : rank_sums) {
    std::set<std::string> values;
    for (const auto& [mode, v] : by_mode) values.insert(v);
    if (values.size() > 1) {
      std::string list;
      for (const auto& [mode, v] : by_mode) list += " " + mode + "=" + v;
      const auto& [what, ratio, rank] = key;
      c.fail(what.substr(0, what.find(' ')) + " ratio " + std::to_string(ratio) + " rank " + std::to_string(rank),
             what.substr(what.find(' ') + 1) + " differs between modes:" + list);
    }
  }
  if (rank_counts.size() > 1) c.fail("document", "results from different rank counts");

  for (const std::string& w : expect_workloads)
    for (const std::string& m : expect_modes)
      if (!seen.count({w, m})) c.fail("document", "no result for " + w + "/" + m);
  return c.problems;
}

}  // namespace mlbs_bench

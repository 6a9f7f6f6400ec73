// mlbs-inspect --live: the catalog of a store a running writer has open,
// read from its live segment (catalog/live.hpp) without disturbing it.
#include "live.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "catalog/live.hpp"
#include "mlbs/config.hpp"

namespace mlbs::inspect {

namespace {

using catalog::RecordState;
using catalog::live::RecordView;
using catalog::live::View;

constexpr RecordState kStates[] = {RecordState::in_dram,    RecordState::writing_down, RecordState::on_tier,
                                   RecordState::durable,    RecordState::being_read,   RecordState::erased};

std::string writer_state(const View& v) {
  if (v.closed()) return "closed";
  return v.writer_alive() ? "running" : "gone";
}

std::vector<int> tiers_of(catalog::TierMask copies) {
  std::vector<int> out;
  for (int t = 0; t < 32; ++t)
    if (copies & catalog::bit(t)) out.push_back(t);
  return out;
}

std::string when(std::uint64_t unix_ns) {
  const std::time_t s = static_cast<std::time_t>(unix_ns / 1000000000ull);
  std::tm tm{};
  ::localtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return fmt::format("{}.{:03}", buf, unix_ns / 1000000ull % 1000);
}

nlohmann::json as_json(const View& v, const std::vector<RecordView>& records) {
  const auto& info = v.info();
  nlohmann::json j;
  j["store"] = info.store;
  j["rank"] = info.rank;
  j["ranks"] = info.ranks;
  j["pid"] = info.pid;
  j["writer"] = writer_state(v);
  j["durability"] = info.persistent ? "persistent" : "scratch";
  j["format_version"] = info.version;
  j["unpublished"] = v.unpublished();
  j["tiers"] = nlohmann::json::array();
  for (const TierStats& t : v.tiers())
    j["tiers"].push_back({{"kind", t.kind},           {"path", t.path},       {"capacity_bytes", t.capacity_bytes},
                          {"used_bytes", t.used_bytes}, {"peak_used_bytes", t.peak_used_bytes},
                          {"bytes_in", t.bytes_in},   {"bytes_out", t.bytes_out}, {"ops_in", t.ops_in},
                          {"ops_out", t.ops_out},     {"errors", t.errors},   {"stalls", t.stalls},
                          {"busy_ns", t.busy_ns},     {"raw_bytes_in", t.raw_bytes_in},
                          {"raw_bytes_out", t.raw_bytes_out}, {"codec_ns", t.codec_ns}});
  j["records"] = nlohmann::json::array();
  for (const RecordView& r : records) {
    nlohmann::json e{{"id", r.id},
                     {"size", r.size},
                     {"generation", r.generation},
                     {"state", catalog::to_string(r.state)},
                     {"tiers", tiers_of(r.copies)},
                     {"updated_unix_ns", r.updated_ns},
                     {"read_by_reader", r.read}};
    if (r.filed_ns) e["filed_unix_ns"] = r.filed_ns;
    if (r.has_checksum) e["checksum"] = fmt::format("{:016x}", r.checksum);
    if (r.stored) e["stored"] = r.stored;  // its file copies are a codec frame of this size
    j["records"].push_back(std::move(e));
  }
  return j;
}

std::string as_text(const View& v, const std::vector<RecordView>& records) {
  const auto& info = v.info();
  std::string out = fmt::format("store         {} (rank {} of {}), {}; writer pid {} {}\n", info.store, info.rank,
                                info.ranks, info.persistent ? "persistent" : "scratch", info.pid, writer_state(v));
  const std::vector<TierStats> tiers = v.tiers();
  for (std::size_t t = 0; t < tiers.size(); ++t) {
    const TierStats& s = tiers[t];
    std::size_t held = 0;
    for (const RecordView& r : records) held += (r.copies & catalog::bit(static_cast<int>(t))) != 0;
    // A codec's tier: the records its frames were, and the helpers' time on them.
    const std::string codec = s.raw_bytes_in != s.bytes_in || s.raw_bytes_out != s.bytes_out || s.codec_ns
                                  ? fmt::format(" (records {} / {}, codec {:.1f} ms)", format_bytes(s.raw_bytes_in),
                                                format_bytes(s.raw_bytes_out), double(s.codec_ns) / 1e6)
                                  : std::string();
    out += fmt::format("{}{} {:<9} {:<28} {:>5} records  used {}{}  in {} out {}{}  errors {}\n",
                       t == 0 ? "tiers         " : "              ", t, s.kind, s.path.empty() ? "-" : s.path, held,
                       format_bytes(s.used_bytes),
                       s.capacity_bytes ? " of " + format_bytes(s.capacity_bytes) : std::string(),
                       format_bytes(s.bytes_in), format_bytes(s.bytes_out), codec, s.errors);
  }
  std::size_t by_state[std::size(kStates)] = {};
  for (const RecordView& r : records) ++by_state[static_cast<std::size_t>(r.state)];
  std::string counts;
  for (std::size_t k = 0; k < std::size(kStates); ++k)
    if (by_state[k]) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", by_state[k], to_string(kStates[k]));
  out += fmt::format("records       {}{}\n", counts.empty() ? "none" : counts,
                     v.unpublished() ? fmt::format("; {} not shown (live_records is too small)", v.unpublished())
                                     : std::string());
  if (!records.empty()) {
    out += fmt::format("\n{:>12}  {:>10}  {:>10}  {:>8}  {:<18}  {:<8}  {:<4}  {:<16}  {}\n", "id", "size", "stored",
                       "gen", "state", "tiers", "read", "checksum", "changed");
    for (const RecordView& r : records) {
      std::string where;
      for (int t : tiers_of(r.copies)) where += (where.empty() ? "" : ",") + std::to_string(t);
      out += fmt::format("{:>12}  {:>10}  {:>10}  {:>8}  {:<18}  {:<8}  {:<4}  {:<16}  {}\n", r.id,
                         format_bytes(r.size), r.stored ? format_bytes(r.stored) : "-", r.generation, to_string(r.state), where.empty() ? "-" : where, r.read ? "yes" : "-",
                         r.has_checksum ? fmt::format("{:016x}", r.checksum) : "-", when(r.updated_ns));
    }
  }
  return out;
}

}  // namespace

int run_live(const LiveOptions& opt) {
  const auto view = View::open(opt.tier_dir, opt.store, opt.rank);
  const bool tty = ::isatty(STDOUT_FILENO) != 0;
  for (bool first = true;; first = false) {
    const std::uint32_t seen = view->changes();
    const std::vector<RecordView> records = view->records();
    if (opt.json) {
      std::puts(as_json(*view, records).dump(opt.follow ? -1 : 2).c_str());  // --follow: one object per line
    } else {
      if (opt.follow && tty) std::fputs("\033[H\033[2J", stdout);  // a refreshing view
      else if (!first) std::puts("");
      std::fputs(as_text(*view, records).c_str(), stdout);
    }
    std::fflush(stdout);
    if (!opt.follow || view->closed() || !view->writer_alive()) break;
    // Sleep until the writer publishes; at most a second, to notice it gone.
    while (!view->wait_change(seen, std::chrono::seconds(1)))
      if (!view->writer_alive()) break;
  }
  return 0;
}

}  // namespace mlbs::inspect

// mlbs-inspect — prints the catalog of a persistent store from its journal on
// the persistent tier, and optionally verifies every record's xxHash3 (in its
// own .rec file, or in a log of the log layout).
//
//   mlbs-inspect [--verify] [--json] <persistent-tier-dir> <store>
//
// Exit codes: 0 ok, 1 a record failed --verify, 2 usage error or unreadable journal.
// Read-only: it takes no lock and changes nothing, so it may run beside the
// runtime that has the store open (it then sees the entries journaled so far).
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "catalog/checksum.hpp"
#include "catalog/journal.hpp"
#include "mlbs/config.hpp"
#include "tiers/directory/directory_backend.hpp"

namespace {

namespace fs = std::filesystem;
using mlbs::catalog::JournalEntry;

constexpr int kExitOk = 0;
constexpr int kExitVerifyFailed = 1;
constexpr int kExitUsage = 2;

constexpr const char* kUsage =
    "Usage: mlbs-inspect [--verify] [--json] <persistent-tier-dir> <store>\n"
    "\n"
    "Prints the catalog of a persistent mlbs store: replays\n"
    "<persistent-tier-dir>/<store>/journal.mlbs and lists its live records\n"
    "(id, generation, size, xxHash3 checksum, file, whether the file exists\n"
    "with the right size).\n"
    "\n"
    "Options:\n"
    "  --verify   re-read every record file and check its xxHash3 (OK/BAD)\n"
    "  --json     print the same as one JSON object\n"
    "  --help     this text\n"
    "\n"
    "<persistent-tier-dir> is the path of the last tier in the store's\n"
    "configuration (e.g. the last entry of MLBS_TIERS).\n"
    "\n"
    "Exit status: 0 ok, 1 a record failed --verify, 2 usage error or\n"
    "unreadable journal.\n";

enum class FileState { ok, missing, wrong_size, unreadable };

const char* to_string(FileState s) {
  switch (s) {
    case FileState::ok: return "ok";
    case FileState::missing: return "missing";
    case FileState::wrong_size: return "wrong size";
    case FileState::unreadable: return "unreadable";
  }
  return "?";
}

enum class Verdict { not_checked, ok, bad };

struct Row {
  JournalEntry entry;
  std::string file;            ///< file name inside the store folder ("log-0.mlbs@8192" for a log extent)
  FileState state = FileState::missing;
  std::uint64_t file_bytes = 0;
  Verdict verdict = Verdict::not_checked;
  std::uint64_t actual_checksum = 0;  ///< --verify: what the file hashes to
  std::string problem;                ///< --verify: why it is BAD
};

struct Options {
  bool verify = false;
  bool json = false;
  std::string tier_dir;
  std::string store;
};

/// Streams the record's bytes at `offset` of `path` through xxHash3; false
/// (with `why`) if they cannot be read in full.
bool hash_file(const fs::path& path, std::uint64_t offset, std::uint64_t expected_size, std::uint64_t& digest,
               std::string& why) {
  std::ifstream in(path, std::ios::binary);
  if (!in || !in.seekg(static_cast<std::streamoff>(offset))) {
    why = fmt::format("cannot open: {}", std::strerror(errno));
    return false;
  }
  mlbs::catalog::Checksummer sum;
  std::vector<char> buf(1 << 20);
  std::uint64_t total = 0;
  while (in && total < expected_size) {
    in.read(buf.data(), static_cast<std::streamsize>(std::min<std::uint64_t>(buf.size(), expected_size - total)));
    const std::streamsize n = in.gcount();
    if (n <= 0) break;
    sum.update(buf.data(), static_cast<std::size_t>(n));
    total += static_cast<std::uint64_t>(n);
  }
  if (in.bad()) {
    why = "read error";
    return false;
  }
  if (total != expected_size) {
    why = fmt::format("read {} bytes, the journal says {}", total, expected_size);
    return false;
  }
  digest = sum.digest();
  return true;
}


const char* verdict_text(Verdict v) {
  switch (v) {
    case Verdict::not_checked: return "-";
    case Verdict::ok: return "OK";
    case Verdict::bad: return "BAD";
  }
  return "?";
}

int run(const Options& opt) {
  const fs::path store_dir = fs::path(opt.tier_dir) / opt.store;
  const fs::path journal = store_dir / "journal.mlbs";
  std::error_code ec;
  if (!fs::is_regular_file(journal, ec)) {
    std::fprintf(stderr, "mlbs-inspect: no journal at %s: not a persistent store of that name\n",
                 journal.c_str());
    return kExitUsage;
  }

  mlbs::catalog::JournalReplay replay;
  try {
    replay = mlbs::catalog::replay_journal(journal.string());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlbs-inspect: %s\n", e.what());
    return kExitUsage;
  }

  std::uint64_t puts = 0, erases = 0;
  for (const JournalEntry& e : replay.entries) (e.op == JournalEntry::Op::put ? puts : erases) += 1;

  std::vector<Row> rows;
  rows.reserve(replay.live.size());
  std::uint64_t total_bytes = 0;
  bool failed = false;
  for (const auto& [id, e] : replay.live) {
    Row row;
    row.entry = e;
    total_bytes += e.size;
    const mlbs::tiers::StoredObject where = mlbs::tiers::locate_stored_object(store_dir, id, e.generation);
    row.file = where.file.filename().string();
    if (where.file.extension() != ".rec") row.file += fmt::format("@{}", where.offset);
    if (!where.found) {
      row.state = FileState::missing;
    } else {
      row.file_bytes = where.bytes;
      row.state = row.file_bytes == e.size ? FileState::ok : FileState::wrong_size;
    }
    if (opt.verify) {
      if (row.state != FileState::ok) {
        row.verdict = Verdict::bad;
        row.problem = row.state == FileState::wrong_size
                          ? fmt::format("file holds {} bytes, the journal says {}", row.file_bytes, e.size)
                          : std::string("file ") + to_string(row.state);
      } else if (!hash_file(where.file, where.offset, e.size, row.actual_checksum, row.problem)) {
        row.verdict = Verdict::bad;
      } else if (row.actual_checksum != e.checksum) {
        row.verdict = Verdict::bad;
        row.problem = fmt::format("checksum {:016x}, the journal says {:016x}", row.actual_checksum,
                                  e.checksum);
      } else {
        row.verdict = Verdict::ok;
      }
      failed = failed || row.verdict == Verdict::bad;
    }
    rows.push_back(std::move(row));
  }

  if (opt.json) {
    nlohmann::ordered_json j = {
        {"store", opt.store},           {"journal", journal.string()},
        {"entries", replay.entries.size()}, {"puts", puts},
        {"erases", erases},             {"valid_bytes", replay.valid_bytes},
        {"torn_bytes", replay.torn_bytes}, {"live_records", rows.size()},
        {"total_bytes", total_bytes},   {"verified", opt.verify}};
    if (opt.verify) j["ok"] = !failed;
    j["records"] = nlohmann::ordered_json::array();
    for (const Row& r : rows) {
      nlohmann::ordered_json rec = {{"id", r.entry.id},
                                    {"generation", r.entry.generation},
                                    {"size", r.entry.size},
                                    {"checksum", fmt::format("{:016x}", r.entry.checksum)},
                                    {"file", r.file},
                                    {"file_state", to_string(r.state)}};
      if (opt.verify) {
        rec["verify"] = verdict_text(r.verdict);
        if (!r.problem.empty()) rec["problem"] = r.problem;
      }
      j["records"].push_back(std::move(rec));
    }
    // Invalid UTF-8 in a path is replaced, not a reason to fail.
    std::puts(j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return failed ? kExitVerifyFailed : kExitOk;
  }

  std::string out;
  out += fmt::format("store         {}\n", opt.store);
  out += fmt::format("journal       {}\n", journal.string());
  out += fmt::format("entries       {} ({} put, {} erase)\n", replay.entries.size(), puts, erases);
  out += fmt::format("valid bytes   {}\n", replay.valid_bytes);
  out += fmt::format("torn bytes    {}{}\n", replay.torn_bytes,
                     replay.torn_bytes ? " (ignored; cut off by the next runtime that opens the store)"
                                       : "");
  out += fmt::format("live records  {}\n", rows.size());
  out += fmt::format("total bytes   {} ({})\n", total_bytes, mlbs::format_bytes(total_bytes));
  if (!rows.empty()) {
    // Columns as wide as their widest cell; the last one is not padded.
    std::size_t w_id = 2, w_gen = 10, w_size = 4, w_file = 4, w_disk = 7;
    auto on_disk = [](const Row& r) {
      return r.state == FileState::wrong_size ? fmt::format("wrong size ({} bytes)", r.file_bytes)
                                              : std::string(to_string(r.state));
    };
    for (const Row& r : rows) {
      w_id = std::max(w_id, fmt::formatted_size("{}", r.entry.id));
      w_gen = std::max(w_gen, fmt::formatted_size("{}", r.entry.generation));
      w_size = std::max(w_size, fmt::formatted_size("{}", r.entry.size));
      w_file = std::max(w_file, r.file.size());
      w_disk = std::max(w_disk, on_disk(r).size());
    }
    out += "\n";
    out += fmt::format("{:>{}}  {:>{}}  {:>{}}  {:<16}  {:<{}}  {}", "id", w_id, "generation", w_gen,
                       "size", w_size, "checksum", "file", w_file,
                       opt.verify ? fmt::format("{:<{}}  verify", "on disk", w_disk) : "on disk");
    out += "\n";
    for (const Row& r : rows) {
      out += fmt::format("{:>{}}  {:>{}}  {:>{}}  {:016x}  {:<{}}  ", r.entry.id, w_id,
                         r.entry.generation, w_gen, r.entry.size, w_size, r.entry.checksum, r.file,
                         w_file);
      if (opt.verify) {
        out += fmt::format("{:<{}}  {}", on_disk(r), w_disk, verdict_text(r.verdict));
        if (!r.problem.empty() && r.state == FileState::ok) out += fmt::format(" ({})", r.problem);
      } else {
        out += on_disk(r);
      }
      out += "\n";
    }
  }
  if (opt.verify) {
    std::size_t bad = 0;
    for (const Row& r : rows) bad += r.verdict == Verdict::bad;
    out += fmt::format("\nverify        {} of {} records OK{}\n", rows.size() - bad, rows.size(),
                       bad ? fmt::format(", {} BAD", bad) : std::string{});
  }
  std::fputs(out.c_str(), stdout);
  return failed ? kExitVerifyFailed : kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (arg == "--verify") {
      opt.verify = true;
    } else if (arg == "--json") {
      opt.json = true;
    } else if (arg == "--") {
      for (++i; i < argc; ++i) positional.emplace_back(argv[i]);
    } else if (arg.size() > 1 && arg[0] == '-') {
      std::fprintf(stderr, "mlbs-inspect: unknown option '%s'\n%s", argv[i], kUsage);
      return kExitUsage;
    } else {
      positional.emplace_back(arg);
    }
  }
  if (positional.size() != 2) {
    std::fprintf(stderr, "mlbs-inspect: expected <persistent-tier-dir> <store>, got %zu argument%s\n%s",
                 positional.size(), positional.size() == 1 ? "" : "s", kUsage);
    return kExitUsage;
  }
  opt.tier_dir = positional[0];
  opt.store = positional[1];
  if (opt.store.empty() || opt.store.find('/') != std::string::npos || opt.store == "." ||
      opt.store == "..") {
    std::fprintf(stderr, "mlbs-inspect: invalid store name '%s'\n", opt.store.c_str());
    return kExitUsage;
  }
  try {
    return run(opt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlbs-inspect: %s\n", e.what());
    return kExitUsage;
  }
}

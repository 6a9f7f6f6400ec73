// mlbs-inspect — prints the catalog of a persistent store from its journal on
// the persistent tier, optionally verifies every record's xxHash3 (in its
// own .rec file, or in a log of the log layout), reports a damaged or lost
// journal, and salvages such a store (--salvage: a new journal from the
// entries that survive and the record copies stored).
//
//   mlbs-inspect [--verify] [--json] <persistent-tier-dir> <store>
//   mlbs-inspect --salvage [--verified-only] <persistent-tier-dir> <store>
//   mlbs-inspect --live [--json] [--follow] [--rank N] <last-tier-dir> <store>   (live.cpp)
//
// Exit codes: 0 ok, 1 damage found (a record failed --verify, the journal is
// damaged, or missing beside record copies), 2 usage error or unreadable store.
// Without --salvage it is read-only: it takes no lock and changes nothing, so
// it may run beside the runtime that has the store open (it says so, and then
// sees the entries journaled so far). --salvage takes the store's lock.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "live.hpp"

#include "catalog/checksum.hpp"
#include "catalog/journal.hpp"
#include "catalog/salvage.hpp"
#include "codec/frame.hpp"
#include "mlbs/config.hpp"
#include "tiers/directory/directory_backend.hpp"

namespace {

namespace fs = std::filesystem;
using mlbs::catalog::JournalEntry;

constexpr int kExitOk = 0;
constexpr int kExitDamage = 1;
constexpr int kExitUsage = 2;

constexpr const char* kUsage =
    "Usage: mlbs-inspect [--verify] [--json] <persistent-tier-dir> <store>\n"
    "       mlbs-inspect --salvage [--verified-only] <persistent-tier-dir> <store>\n"
    "       mlbs-inspect --live [--json] [--follow] [--rank N] <last-tier-dir> <store>\n"
    "\n"
    "Prints the catalog of a persistent mlbs store: replays\n"
    "<persistent-tier-dir>/<store>/journal.mlbs and lists its live records\n"
    "(id, generation, size, xxHash3 checksum, file, whether the file exists\n"
    "with the right size). Says whether a runtime has the store open, and\n"
    "whether the journal ends in a torn tail (a crash: harmless) or is damaged\n"
    "(an entry that fails its checksum with valid entries after it).\n"
    "\n"
    "Options:\n"
    "  --verify         re-read every record file and check its xxHash3 (OK/BAD)\n"
    "  --json           print the same as one JSON object\n"
    "  --salvage        rebuild a damaged or lost journal: every record copy stored\n"
    "                   is read; a copy that a surviving entry vouches for is kept\n"
    "                   (verified), one no entry names is kept with the checksum of\n"
    "                   its bytes (unverified), per id the newest generation wins;\n"
    "                   copies that are erased, superseded or contradict their entry\n"
    "                   are dropped (removed when the store is next opened). The old\n"
    "                   journal is kept as journal.mlbs.damaged-<time>. The store\n"
    "                   must not be open.\n"
    "  --verified-only  with --salvage: drop copies no surviving entry vouches for\n"
    "  --live           the catalog of a store a running writer has open (scratch or\n"
    "                   persistent), from its live catalog in shared memory: every\n"
    "                   record's state (in DRAM, being written down, on a file tier,\n"
    "                   durable, being read, erased), the tiers holding it, and the\n"
    "                   tier counters. Never disturbs the writer.\n"
    "  --follow         with --live: print again at every change, until the writer\n"
    "                   closes the store or is gone (with --json: one object a line)\n"
    "  --rank N         with --live: rank N's store of an MPI job (default 0)\n"
    "  --help           this text\n"
    "\n"
    "<persistent-tier-dir> and <last-tier-dir> are the path of the last tier in\n"
    "the store's configuration (e.g. the last entry of MLBS_TIERS).\n"
    "\n"
    "Exit status: 0 ok, 1 damage found (a record failed --verify, the journal\n"
    "is damaged or missing beside record copies), 2 usage error or unreadable\n"
    "store.\n";

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

enum class Verdict { not_checked, ok, bad, erased };

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
  bool salvage = false;
  bool verified_only = false;
  bool live = false;
  bool follow = false;
  int rank = -1;  ///< --rank; -1: not given
  std::string tier_dir;
  std::string store;
};

/// A file's checksums of both kinds: an entry of a v1 or v2 journal has the
/// plain one, what this mlbs journals the pieces one (catalog/checksum.hpp).
struct FileSums {
  std::uint64_t pieces = 0, plain = 0;
  std::uint64_t of(mlbs::catalog::ChecksumKind kind) const noexcept {
    return kind == mlbs::catalog::ChecksumKind::xxh3 ? plain : pieces;
  }
};

/// Streams the record's bytes at `offset` of `path` through both checksums;
/// false (with `why`) if they cannot be read in full.
bool hash_file(const fs::path& path, std::uint64_t offset, std::uint64_t expected_size, FileSums& digest,
               std::string& why) {
  std::ifstream in(path, std::ios::binary);
  if (!in || !in.seekg(static_cast<std::streamoff>(offset))) {
    why = fmt::format("cannot open: {}", std::strerror(errno));
    return false;
  }
  mlbs::catalog::Checksummer sum(mlbs::catalog::ChecksumKind::pieces), plain(mlbs::catalog::ChecksumKind::xxh3);
  std::vector<char> buf(1 << 20);
  std::uint64_t total = 0;
  while (in && total < expected_size) {
    in.read(buf.data(), static_cast<std::streamsize>(std::min<std::uint64_t>(buf.size(), expected_size - total)));
    const std::streamsize n = in.gcount();
    if (n <= 0) break;
    sum.update(buf.data(), static_cast<std::size_t>(n));
    plain.update(buf.data(), static_cast<std::size_t>(n));
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
  digest = {sum.digest(), plain.digest()};
  return true;
}


const char* verdict_text(Verdict v) {
  switch (v) {
    case Verdict::not_checked: return "-";
    case Verdict::ok: return "OK";
    case Verdict::bad: return "BAD";
    case Verdict::erased: return "erased during the scan";
  }
  return "?";
}

/// True when a runtime holds the store's lock (an flock on <store>/LOCK),
/// read from /proc/locks so that looking takes no lock a runtime could trip on.
bool store_is_open(const fs::path& store_dir) {
  struct stat st {};
  if (::stat((store_dir / "LOCK").c_str(), &st) != 0) return false;
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    // "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF": the device in hex.
    unsigned major = 0, minor = 0;
    unsigned long long inode = 0;
    const auto at = line.find(" FLOCK ");
    if (at == std::string::npos) continue;
    std::istringstream in(line.substr(at));
    std::string kind, mode, access, pid, dev;
    if (!(in >> kind >> mode >> access >> pid >> dev)) continue;
    if (std::sscanf(dev.c_str(), "%x:%x:%llu", &major, &minor, &inode) != 3) continue;
    if (major == ::major(st.st_dev) && minor == ::minor(st.st_dev) && inode == st.st_ino) return true;
  }
  return false;
}

/// Every record copy stored in the store's folder (either layout), read in full.
std::vector<mlbs::catalog::StoredCopy> read_stored_copies(const fs::path& store_dir) {
  std::vector<mlbs::catalog::StoredCopy> copies;
  for (const fs::path& p : mlbs::tiers::list_stored_objects(store_dir)) {
    if (p.parent_path() != store_dir) continue;  // a folder inside it is not the store's
    const auto name = mlbs::tiers::parse_object_file_name(p.filename().string());
    if (!name) continue;
    mlbs::catalog::StoredCopy c;
    c.id = name->first;
    c.generation = name->second;
    const mlbs::tiers::StoredObject where = mlbs::tiers::locate_stored_object(store_dir, c.id, c.generation);
    std::string why;
    c.bytes = where.bytes;
    FileSums sums;
    c.readable = where.found && hash_file(where.file, where.offset, where.bytes, sums, why);
    c.checksum = sums.pieces;
    c.plain_checksum = sums.plain;
    if (c.readable) {
      std::array<std::byte, 4> head{};
      std::ifstream in(where.file, std::ios::binary);
      in.seekg(static_cast<std::streamoff>(where.offset));
      in.read(reinterpret_cast<char*>(head.data()), head.size());
      c.framed = in.gcount() == static_cast<std::streamsize>(head.size()) && mlbs::codec::starts_a_frame(head);
    }
    copies.push_back(c);
  }
  return copies;
}

/// The valid entries of a journal, however damaged; none if it is missing or foreign.
std::vector<JournalEntry> surviving_entries(const fs::path& journal) {
  try {
    return mlbs::catalog::replay_journal(journal.string()).all_entries();
  } catch (const mlbs::CorruptionError&) {
    return {};  // not an mlbs journal at all: nothing in it can be trusted
  }
}

int salvage(const Options& opt, const fs::path& store_dir, const fs::path& journal) {
  // Exclusive, as a runtime takes it: no runtime may open the store meanwhile.
  const fs::path lock_path = store_dir / "LOCK";
  const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0) {
    std::fprintf(stderr, "mlbs-inspect: cannot open %s: %s\n", lock_path.c_str(), std::strerror(errno));
    return kExitUsage;
  }
  if (::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    std::fprintf(stderr, "mlbs-inspect: store '%s' is open in a runtime: close it before salvaging\n",
                 opt.store.c_str());
    ::close(lock);
    return kExitUsage;
  }
  const auto surviving = surviving_entries(journal);
  const auto plan = mlbs::catalog::plan_salvage(surviving, read_stored_copies(store_dir), !opt.verified_only);
  std::string kept_as;
  std::error_code ec;
  if (fs::exists(journal, ec)) {
    // The old journal stays for whoever wants to look at it again: a second
    // name for it, while the new one replaces it atomically (at every moment
    // journal.mlbs is the old or the new one, so a salvage cut short can be
    // run again and finds the same entries).
    kept_as = fmt::format("{}.damaged-{}", journal.string(), static_cast<long long>(std::time(nullptr)));
    fs::create_hard_link(journal, kept_as);
  }
  mlbs::catalog::write_journal(journal.string(), plan.journal);
  ::close(lock);

  std::map<mlbs::catalog::SalvagePlan::Verdict, std::size_t> count;
  std::string out = fmt::format("salvaged store '{}': {} valid entr{} survived, {} record cop{} stored\n", opt.store,
                                surviving.size(), surviving.size() == 1 ? "y" : "ies", plan.items.size(),
                                plan.items.size() == 1 ? "y" : "ies");
  for (const auto& item : plan.items) {
    ++count[item.verdict];
    out += fmt::format("  id {} generation {} ({} bytes): {}{}\n", item.copy.id, item.copy.generation,
                       item.copy.bytes, mlbs::catalog::to_string(item.verdict),
                       item.why.empty() ? "" : " (" + item.why + ")");
  }
  using V = mlbs::catalog::SalvagePlan::Verdict;
  out += fmt::format(
      "kept {} records: {} verified, {} unverified (no entry survived: their bytes cannot be checked)\n"
      "dropped {} copies ({} damaged, {} erased, {} superseded, {} not adopted): removed when the store is next "
      "opened\n",
      count[V::verified] + count[V::unverified], count[V::verified], count[V::unverified],
      count[V::damaged] + count[V::erased] + count[V::superseded] + count[V::not_adopted], count[V::damaged],
      count[V::erased], count[V::superseded], count[V::not_adopted]);
  out += fmt::format("new journal {}{}\n", journal.string(),
                     kept_as.empty() ? "" : fmt::format(" (the old one is kept as {})", kept_as));
  std::fputs(out.c_str(), stdout);
  return kExitOk;
}

int run(const Options& opt) {
  const fs::path store_dir = fs::path(opt.tier_dir) / opt.store;
  const fs::path journal = store_dir / "journal.mlbs";
  std::error_code ec;
  if (!fs::is_directory(store_dir, ec)) {
    std::fprintf(stderr, "mlbs-inspect: no folder %s: not a persistent store of that name\n", store_dir.c_str());
    return kExitUsage;
  }
  if (opt.salvage) return salvage(opt, store_dir, journal);
  const std::size_t stored = mlbs::tiers::count_stored_objects(store_dir);
  const auto salvage_hint = fmt::format("salvage it with: mlbs-inspect --salvage {} {}", opt.tier_dir, opt.store);
  if (!fs::is_regular_file(journal, ec)) {
    if (stored == 0) {
      // A store in parts (docs/parts.md) is one store per part beside this folder.
      if (std::ifstream marker(fs::path(opt.tier_dir) / (opt.store + ".parts")); marker) {
        unsigned parts = 0;
        marker >> parts;
        std::fprintf(stderr, "mlbs-inspect: store '%s' is kept in %u parts: inspect %s#0 ... %s#%u\n",
                     opt.store.c_str(), parts, opt.store.c_str(), opt.store.c_str(), parts ? parts - 1 : 0);
        return kExitUsage;
      }
      std::fprintf(stderr, "mlbs-inspect: no journal at %s: not a persistent store of that name\n",
                   journal.c_str());
      return kExitUsage;
    }
    std::fprintf(stderr, "mlbs-inspect: DAMAGED: journal %s is missing but %zu record copies are stored; %s\n",
                 journal.c_str(), stored, salvage_hint.c_str());
    return kExitDamage;
  }
  const bool live = store_is_open(store_dir);

  mlbs::catalog::JournalReplay replay;
  try {
    replay = mlbs::catalog::replay_journal(journal.string());
  } catch (const mlbs::CorruptionError& e) {
    std::fprintf(stderr, "mlbs-inspect: DAMAGED: %s; %s\n", e.what(), salvage_hint.c_str());
    return kExitDamage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlbs-inspect: %s\n", e.what());
    return kExitUsage;
  }
  const bool header_lost = replay.valid_bytes < mlbs::catalog::Journal::kHeaderBytes && stored > 0;
  const bool damaged = replay.damaged() || header_lost;
  std::string journal_state = "ok";
  if (replay.damaged())
    journal_state = fmt::format(
        "DAMAGED: the entry at byte {} fails its checksum and {} valid entr{} follow ({} damaged in all); the "
        "records below are those of the entries before it. {}",
        replay.damaged_at, replay.after_damage.size(), replay.after_damage.size() == 1 ? "y" : "ies",
        replay.damaged_entries, salvage_hint);
  else if (header_lost)
    journal_state = fmt::format("DAMAGED: {} bytes, less than its header, but {} record copies are stored. {}",
                                replay.torn_bytes, stored, salvage_hint);
  else if (replay.torn_bytes)
    journal_state = fmt::format("torn tail of {} bytes (a crash while appending: ignored, and cut off by the next "
                                "runtime that opens the store)",
                                replay.torn_bytes);

  std::uint64_t puts = 0, erases = 0;
  for (const JournalEntry& e : replay.entries) (e.op == JournalEntry::Op::put ? puts : erases) += 1;

  std::vector<Row> rows;
  rows.reserve(replay.live.size());
  std::uint64_t total_bytes = 0, total_stored = 0;
  bool failed = false;
  for (const auto& [id, e] : replay.live) {
    Row row;
    row.entry = e;
    total_bytes += e.size;
    total_stored += e.file_bytes();  // a codec's frame is what the file holds, and what is checked
    const mlbs::tiers::StoredObject where = mlbs::tiers::locate_stored_object(store_dir, id, e.generation);
    row.file = where.file.filename().string();
    if (where.file.extension() != ".rec") row.file += fmt::format("@{}", where.offset);
    if (!where.found) {
      row.state = FileState::missing;
    } else {
      row.file_bytes = where.bytes;
      row.state = row.file_bytes == e.file_bytes() ? FileState::ok : FileState::wrong_size;
    }
    if (opt.verify) {
      if (row.state != FileState::ok) {
        row.verdict = Verdict::bad;
        row.problem = row.state == FileState::wrong_size
                          ? fmt::format("file holds {} bytes, the journal says {}", row.file_bytes,
                                        e.file_bytes())
                          : std::string("file ") + to_string(row.state);
      } else if (FileSums sums; !hash_file(where.file, where.offset, e.file_bytes(), sums, row.problem)) {
        row.verdict = Verdict::bad;
      } else if ((row.actual_checksum = sums.of(e.checksum_kind)) != e.file_checksum()) {
        row.verdict = Verdict::bad;
        row.problem = fmt::format("checksum {:016x}, the journal says {:016x}", row.actual_checksum,
                                  e.file_checksum());
      } else {
        row.verdict = Verdict::ok;
      }
      failed = failed || row.verdict == Verdict::bad;
    }
    rows.push_back(std::move(row));
  }
  if (live && failed) {
    // The runtime may have erased records while they were read: those are
    // gone, not lost. Only what the journal still names now is a failure.
    failed = false;
    const auto now = mlbs::catalog::replay_journal(journal.string()).live;
    for (Row& r : rows) {
      if (r.verdict != Verdict::bad) continue;
      const auto it = now.find(r.entry.id);
      if (it == now.end() || it->second.generation != r.entry.generation) {
        r.verdict = Verdict::erased;
        r.problem.clear();
      } else {
        failed = true;
      }
    }
  }

  if (opt.json) {
    nlohmann::ordered_json j = {
        {"store", opt.store},           {"journal", journal.string()},
        {"entries", replay.entries.size()}, {"puts", puts},
        {"erases", erases},             {"valid_bytes", replay.valid_bytes},
        {"torn_bytes", replay.torn_bytes}, {"journal_state", damaged ? "damaged" : replay.torn_bytes ? "torn tail" : "ok"},
        {"damaged_at", replay.damaged_at}, {"entries_after_damage", replay.after_damage.size()},
        {"stored_copies", stored}, {"open_in_a_runtime", live}, {"live_records", rows.size()},
        {"total_bytes", total_bytes},   {"total_stored_bytes", total_stored},   {"verified", opt.verify}};
    if (opt.verify) j["ok"] = !failed;
    j["records"] = nlohmann::ordered_json::array();
    for (const Row& r : rows) {
      nlohmann::ordered_json rec = {{"id", r.entry.id},
                                    {"generation", r.entry.generation},
                                    {"size", r.entry.size},
                                    {"checksum", fmt::format("{:016x}", r.entry.checksum)},
                                    {"checksum_kind", r.entry.checksum_kind == mlbs::catalog::ChecksumKind::xxh3
                                                          ? "xxh3"
                                                          : "pieces"},
                                    {"file", r.file},
                                    {"file_state", to_string(r.state)}};
      if (r.entry.stored) {  // a codec's frame (docs/codecs.md): what the file holds
        rec["stored_bytes"] = r.entry.stored;
        rec["frame_checksum"] = fmt::format("{:016x}", r.entry.frame_checksum);
      }
      if (opt.verify) {
        rec["verify"] = verdict_text(r.verdict);
        if (!r.problem.empty()) rec["problem"] = r.problem;
      }
      j["records"].push_back(std::move(rec));
    }
    // Invalid UTF-8 in a path is replaced, not a reason to fail.
    std::puts(j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return failed || damaged ? kExitDamage : kExitOk;
  }

  std::string out;
  out += fmt::format("store         {}\n", opt.store);
  out += fmt::format("journal       {}\n", journal.string());
  out += fmt::format("entries       {} ({} put, {} erase)\n", replay.entries.size(), puts, erases);
  out += fmt::format("valid bytes   {}\n", replay.valid_bytes);
  out += fmt::format("journal state {}\n", journal_state);
  out += fmt::format("open          {}\n", live ? "yes: a runtime has the store open; this is a snapshot" : "no");
  out += fmt::format("live records  {}\n", rows.size());
  out += fmt::format("total bytes   {} ({})\n", total_bytes, mlbs::format_bytes(total_bytes));
  if (total_stored != total_bytes)
    out += fmt::format("stored bytes  {} ({}: records stored as codec frames)\n", total_stored,
                       mlbs::format_bytes(total_stored));
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
  return failed || damaged ? kExitDamage : kExitOk;
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
    } else if (arg == "--salvage") {
      opt.salvage = true;
    } else if (arg == "--verified-only") {
      opt.verified_only = true;
    } else if (arg == "--json") {
      opt.json = true;
    } else if (arg == "--live") {
      opt.live = true;
    } else if (arg == "--follow") {
      opt.follow = true;
    } else if (arg == "--rank") {
      char* end = nullptr;
      const long n = i + 1 < argc ? std::strtol(argv[i + 1], &end, 10) : -1;
      if (n < 0 || n > INT32_MAX || !end || *end != '\0') {
        std::fprintf(stderr, "mlbs-inspect: --rank needs a rank number\n%s", kUsage);
        return kExitUsage;
      }
      opt.rank = static_cast<int>(n);
      ++i;
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
  if (opt.verified_only && !opt.salvage) {
    std::fprintf(stderr, "mlbs-inspect: --verified-only goes with --salvage\n%s", kUsage);
    return kExitUsage;
  }
  if ((opt.follow || opt.rank >= 0) && !opt.live) {
    std::fprintf(stderr, "mlbs-inspect: --follow and --rank go with --live\n%s", kUsage);
    return kExitUsage;
  }
  if (opt.live && (opt.verify || opt.salvage)) {
    std::fprintf(stderr, "mlbs-inspect: --live takes neither --verify nor --salvage\n%s", kUsage);
    return kExitUsage;
  }
  if (opt.salvage && (opt.verify || opt.json)) {
    std::fprintf(stderr, "mlbs-inspect: --salvage takes neither --verify nor --json\n%s", kUsage);
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
    if (opt.live)
      return mlbs::inspect::run_live({opt.tier_dir, opt.store, std::max(opt.rank, 0), opt.json, opt.follow});
    return run(opt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlbs-inspect: %s\n", e.what());
    return kExitUsage;
  }
}

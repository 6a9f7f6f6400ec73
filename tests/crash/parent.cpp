// mlbs_crash, the parent: starts the child, SIGKILLs it at a random moment,
// reaps it, recovers the store in this process and checks it against what the
// child announced and acknowledged, then goes on with the same store.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "crash.hpp"
#include "model.hpp"
#include "protocol.hpp"

namespace mlbs::crash {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kReportFd = 3;  // the pipe's write end in the child

struct Totals {
  unsigned kills = 0, early_kills = 0;
  std::uint64_t writes = 0, erases = 0, flushes = 0, reads = 0;
  unsigned full_device_children = 0;  ///< children whose persistent tier ran full for a while
  std::uint64_t refused_writes = 0, failed_flushes = 0;  ///< theirs, refused with the device full
  std::uint64_t acked_present = 0;  ///< acknowledged records found, byte-exact
  std::uint64_t acked_absent = 0;   ///< acknowledged erasures (and absences) found absent
  std::uint64_t recovered = 0;      ///< records recovered, every one equal to a version written
  std::uint64_t in_doubt = 0;       ///< ids with operations in flight at the kill
  std::uint64_t in_doubt_newer = 0;  ///< of those, recovered in a later state than acknowledged
  std::uint64_t skipped = 0;        ///< records recovery skipped (Stats::checksum_failures)
  std::uint64_t violations = 0;
  std::string io_backend;
};

void violation(Totals& t, unsigned kill, const std::string& what) {
  ++t.violations;
  std::printf("mlbs_crash: VIOLATION after kill %u: %s\n", kill, what.c_str());
  std::fflush(stdout);
}

struct Child {
  pid_t pid = -1;
  int fd = -1;  ///< the pipe's read end
};

Child spawn(const std::string& exe, const std::vector<std::string>& args) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  std::vector<char*> argv{const_cast<char*>(exe.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid == 0) {
    // Only async-signal-safe calls until exec: this process may have threads.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // no orphan child writing on if the parent dies
    if (::getppid() != parent) ::_exit(126);
    if (fds[1] == kReportFd) ::fcntl(kReportFd, F_SETFD, 0);  // dup2 would keep FD_CLOEXEC
    else if (::dup2(fds[1], kReportFd) < 0) ::_exit(127);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

/// Splits what the pipe delivers into lines.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  /// Reads what is there (blocking); false at end of file.
  template <class F>
  bool read_some(F&& on_line) {
    char buf[4096];
    ssize_t n;
    do n = ::read(fd_, buf, sizeof buf);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return false;
    partial_.append(buf, static_cast<std::size_t>(n));
    for (std::size_t eol; (eol = partial_.find('\n')) != std::string::npos;) {
      on_line(partial_.substr(0, eol));
      partial_.erase(0, eol + 1);
    }
    return true;
  }

 private:
  int fd_;
  std::string partial_;
};

/// Self-test: flips one byte in every file of an acknowledged, non-empty
/// record (file layout), so a correct checker must report it. Returns the id.
std::optional<std::uint64_t> sabotage(const Options& o, const Model& m) {
  for (const auto& [id, salt] : m.settled_present()) {
    if (record_size(id, salt) == 0) continue;
    const std::string prefix = fmt::format("{:016x}-", id);
    unsigned flipped = 0;
    for (const auto& e : fs::directory_iterator(fs::path(o.dir) / "pfs" / kStoreName)) {
      const std::string name = e.path().filename().string();
      if (name.rfind(prefix, 0) != 0 || e.path().extension() != ".rec" || e.file_size() == 0) continue;
      std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
      char c = 0;
      f.seekg(0);
      f.get(c);
      f.seekp(0);
      f.put(static_cast<char>(c ^ 0x5a));
      ++flipped;
    }
    if (flipped) return id;
  }
  return std::nullopt;
}

/// Recovers the store in a fresh runtime and checks every id against the
/// model, then records what was found as the state the next recovery must see.
void recover_and_check(const Options& o, Model& m, Totals& t, unsigned kill) {
  Runtime rt(make_config(o));
  Store<std::byte> s(rt, kStoreName);
  const std::vector<std::uint64_t> found = s.ids();
  std::set<std::uint64_t> all(found.begin(), found.end());
  for (std::uint64_t id : m.ids()) all.insert(id);
  for (std::uint64_t id : all) {
    const bool present = std::binary_search(found.begin(), found.end(), id);
    if (present) {
      try {
        s.read(id);
      } catch (const std::exception& e) {
        violation(t, kill, fmt::format("id {}: listed by ids() after recovery but read() failed: {}", id, e.what()));
        m.settle(id, std::nullopt);
        continue;
      }
    }
    const Model::Verdict v = m.judge(id, present, s.data(), present ? s.size() : 0);
    if (!v.problem.empty()) violation(t, kill, v.problem);
    if (present) ++t.recovered;
    if (v.exact) {
      ++(present ? t.acked_present : t.acked_absent);
    } else {
      ++t.in_doubt;
      t.in_doubt_newer += v.newer;
    }
    m.settle(id, v.state);
  }
  const Stats st = rt.stats();
  t.skipped += st.checksum_failures;
  t.io_backend = st.tiers.back().io_backend;
}

/// Removes what an earlier run of the harness left in `dir`; refuses a
/// folder holding anything else.
void prepare_dir(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name != "fast" && name != "pfs")
      throw std::runtime_error(fmt::format("{} holds {}, not only an earlier run's tiers: choose an empty --dir",
                                           dir.string(), name));
  }
  fs::remove_all(dir / "fast");
  fs::remove_all(dir / "pfs");
  fs::create_directories(dir);
}

/// Regular files under `dir` and the bytes allocated to them (not their
/// sizes: the log layout punches holes in its logs).
std::pair<std::uint64_t, std::uint64_t> disk_usage(const fs::path& dir) {
  std::uint64_t files = 0, bytes = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    struct stat st {};
    if (it->is_regular_file(ec) && ::stat(it->path().c_str(), &st) == 0) {
      ++files;
      bytes += static_cast<std::uint64_t>(st.st_blocks) * 512;
    }
  }
  return {files, bytes};
}

/// What crashes left behind: the stores' space against what is live. Only
/// reported: recovery reclaims neither (docs/crash-testing.md).
void print_leftovers(const Options& o, const Model& m) {
  std::uint64_t live = 0;
  for (const auto& [id, salt] : m.settled_present()) live += record_size(id, salt);
  const fs::path store = fs::path(o.dir) / "pfs" / kStoreName;
  const auto [files, bytes] = disk_usage(store);
  // The journal grows with every operation (it is never compacted): shown
  // apart, so the records' own space can be held against what is live.
  struct stat journal {};
  const std::uint64_t journal_bytes =
      ::stat((store / "journal.mlbs").c_str(), &journal) == 0 ? static_cast<std::uint64_t>(journal.st_blocks) * 512 : 0;
  std::printf("mlbs_crash: left on disk: persistent tier %llu files, %s for %s live (%s of them the journal)",
              static_cast<unsigned long long>(files), format_bytes(bytes).c_str(), format_bytes(live).c_str(),
              format_bytes(journal_bytes).c_str());
  if (o.fast_tier) {
    std::error_code ec;
    std::uint64_t folders = 0;
    for (const auto& e : fs::directory_iterator(fs::path(o.dir) / "fast", ec)) folders += e.is_directory();
    const std::uint64_t fast_bytes = disk_usage(fs::path(o.dir) / "fast").second;
    std::printf("; fast tier %llu scratch folders of killed children, %s",
                static_cast<unsigned long long>(folders), format_bytes(fast_bytes).c_str());
  }
  std::printf("\n");
}

std::string rerun_command(const Options& o) {
  std::string cmd = fmt::format("mlbs_crash --seed {} --kills {} --layout {} --io-backend {}", o.seed, o.kills,
                                to_string(o.layout), to_string(o.io_backend));
  if (!o.fast_tier) cmd += " --no-fast-tier";
  if (!o.checksums) cmd += " --no-checksums";
  if (o.sabotage) cmd += " --sabotage";
  return cmd + fmt::format(" --helpers {} --ids {} --max-delay-ms {} --early-kill-percent {}", o.helpers,
                           o.id_space, o.max_delay_ms, o.early_kill_percent);
}

}  // namespace

int run_parent(const Options& opts) {
  Options o = opts;
  if (!o.seed_given) o.seed = static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
  if (o.sabotage && o.layout != Layout::file_per_record) {
    std::fprintf(stderr, "mlbs_crash: --sabotage flips bytes of record files: it needs --layout file\n");
    return 2;
  }
  std::printf("mlbs_crash: seed %llu; rerun: %s\n", static_cast<unsigned long long>(o.seed),
              rerun_command(o).c_str());
  std::fflush(stdout);
  Totals t;
  Model m;
  try {
    prepare_dir(o.dir);
    const std::string exe = fs::read_symlink("/proc/self/exe").string();
    std::mt19937_64 rng(o.seed);
    bool sabotaged = false;
    auto open_time = milliseconds(50);  // how long the last child took to open the store
    for (unsigned k = 1; k <= o.kills; ++k) {
      const std::uint64_t child_seed = rng();
      // Some kills aim at the child's start (exec, lock, journal replay,
      // verification); the rest at its writing, once the store is open.
      const bool early = rng() % 100 < o.early_kill_percent;
      const milliseconds delay(early ? rng() % (open_time.count() + 1) : rng() % (o.max_delay_ms + 1));
      // Some children see their persistent tier run full for a while: from
      // one of its writes on, a few fail with ENOSPC, then room comes back.
      std::string faults;
      if (rng() % 100 < o.full_device_percent)
        faults = fmt::format("write:ENOSPC@{}*{}", rng() % 24, 1 + rng() % 6);
      t.full_device_children += !faults.empty();
      const Child c = spawn(exe, child_arguments(o, child_seed, std::uint64_t{k} << 32, kReportFd, faults));
      const auto start = Clock::now();
      auto deadline = start + (early ? delay : std::chrono::seconds(o.open_timeout_s));
      bool opened = false, ended = false;
      LineReader lines(c.fd);
      auto on_line = [&](const std::string& line) {
        const Report r = parse_report(line);
        switch (r.kind) {
          case 'R':
            opened = true;
            open_time = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
            if (!early) deadline = Clock::now() + delay;
            break;
          case 'W':
            m.announce_write(r.a, r.b);
            ++t.writes;
            break;
          case 'E':
            m.announce_erase(r.a);
            ++t.erases;
            break;
          case 'F':
            m.acknowledge();
            ++t.flushes;
            break;
          case 'N':
            m.refuse_write(r.a);
            ++t.refused_writes;
            break;
          case 'D': ++t.failed_flushes; break;
          case 'V': ++t.reads; break;
          case 'X': violation(t, k, "the child: " + r.text); break;
          default: violation(t, k, "unreadable report from the child: '" + line + "'");
        }
      };
      // Read the reports as they come until the kill moment.
      for (;;) {
        const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) break;
        pollfd p{c.fd, POLLIN, 0};
        const int n = ::poll(&p, 1, static_cast<int>(left));
        if (n < 0 && errno != EINTR) throw std::system_error(errno, std::generic_category(), "poll");
        if (n > 0 && !lines.read_some(on_line)) {
          ended = true;  // end of file: the child is gone before the kill
          break;
        }
      }
      if (!ended) ::kill(c.pid, SIGKILL);
      int status = 0;
      while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
      }
      // What the child wrote before it died is still in the pipe.
      while (lines.read_some(on_line)) {
      }
      ::close(c.fd);
      ++t.kills;
      t.early_kills += early;
      if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
        violation(t, k, WIFEXITED(status) ? fmt::format("the child exited with status {} before the kill",
                                                        WEXITSTATUS(status))
                                          : fmt::format("the child died of signal {}", WTERMSIG(status)));
      else if (!early && !opened)
        violation(t, k, fmt::format("the child did not open the store within {} s (a hang?)", o.open_timeout_s));
      if (o.sabotage && !sabotaged)
        if (auto id = sabotage(o, m)) {
          sabotaged = true;
          std::printf("mlbs_crash: sabotage: flipped a byte of acknowledged id %llu on disk\n",
                      static_cast<unsigned long long>(*id));
        }
      const Totals before = t;
      recover_and_check(o, m, t, k);
      if (o.verbose)
        std::printf("kill %3u: %s +%4lld ms; %llu records recovered, %llu in doubt, %llu skipped\n", k,
                    early ? "early    " : "after open", static_cast<long long>(delay.count()),
                    static_cast<unsigned long long>(t.recovered - before.recovered),
                    static_cast<unsigned long long>(t.in_doubt - before.in_doubt),
                    static_cast<unsigned long long>(t.skipped - before.skipped));
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    ++t.violations;
    std::printf("mlbs_crash: VIOLATION: %s\n", e.what());
  }

  std::printf("mlbs_crash: layout %s, io backend %s, %s, %u helpers, checksums %s, dir %s\n",
              to_string(o.layout).c_str(), t.io_backend.empty() ? "?" : t.io_backend.c_str(),
              o.fast_tier ? "memory + fast + persistent tier" : "memory + persistent tier", o.helpers,
              o.checksums ? "on" : "off", o.dir.c_str());
  std::printf("mlbs_crash: kills %u (%u early: during exec or recovery); child announced %llu writes, "
              "%llu erases, %llu acknowledged flushes, %llu reads verified\n",
              t.kills, t.early_kills, static_cast<unsigned long long>(t.writes),
              static_cast<unsigned long long>(t.erases), static_cast<unsigned long long>(t.flushes),
              static_cast<unsigned long long>(t.reads));
  std::printf("mlbs_crash: %u children saw a full device: %llu writes refused, %llu flushes failed (acknowledging "
              "nothing)\n",
              t.full_device_children, static_cast<unsigned long long>(t.refused_writes),
              static_cast<unsigned long long>(t.failed_flushes));
  std::printf("mlbs_crash: checked %llu acknowledged records present and byte-exact, %llu acknowledged "
              "absences (erased ids) absent; recovered %llu records, each equal to a version written; "
              "%llu ids in flight at a kill (%llu recovered newer than acknowledged); "
              "%llu skipped with checksum failure\n",
              static_cast<unsigned long long>(t.acked_present), static_cast<unsigned long long>(t.acked_absent),
              static_cast<unsigned long long>(t.recovered), static_cast<unsigned long long>(t.in_doubt),
              static_cast<unsigned long long>(t.in_doubt_newer), static_cast<unsigned long long>(t.skipped));
  print_leftovers(o, m);
  // A failing store is kept for inspection (mlbs-inspect), unless the
  // failure was the point (--sabotage).
  const bool keep = o.keep || (t.violations && !o.sabotage);
  if (!keep) {
    std::error_code ec;
    fs::remove_all(o.dir, ec);
  }
  if (t.violations) {
    std::printf("mlbs_crash: FAIL: %llu violations (seed %llu%s)\n", static_cast<unsigned long long>(t.violations),
                static_cast<unsigned long long>(o.seed), keep ? ("; the store is kept in " + o.dir).c_str() : "");
    return 1;
  }
  std::printf("mlbs_crash: PASS: 0 violations\n");
  return 0;
}

}  // namespace mlbs::crash

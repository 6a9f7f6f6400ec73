// mlbs-run — transparent mode's launcher (docs/transparent.md).
//
//   mlbs-run --intercept DIR --tiers SPEC [--schedule lifo|fifo|auto]
//            [--config FILE] [--chunk SIZE] [--trace FILE] [--quiet] -- COMMAND ARGS...
//
// It checks its settings with the interposer's own code (intercept/settings)
// before the program starts, so a bad one is refused with a message and exit
// status 2 instead of surfacing in every process of the program. It then runs
// the program with libmlbs_intercept.so preloaded and the settings in the
// environment, forwards the signals other processes send it, and at the end
// adds up the one-line reports each process of the program appended (files,
// bytes, time blocked, tiers), merges their traces, and exits with the
// program's status: 128 + the signal if a signal ended it, or 1 if the
// program succeeded but a process could not make a file complete at its real
// path (that process named the file on stderr).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "intercept/paths.hpp"
#include "intercept/settings.hpp"
#include "mlbs/config.hpp"
#include "mlbs/errors.hpp"

namespace fs = std::filesystem;

namespace {

constexpr int kBadSettings = 2;  // refused before the program starts

/// The signals forwarded to the program when another process sends them to
/// mlbs-run (a batch system's SIGTERM, a user's kill). Those a terminal sends
/// to its whole foreground group reach the program directly and are not sent
/// twice.
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGCONT, SIGWINCH};

std::atomic<pid_t> g_child{0};

void forward(int sig, siginfo_t* info, void*) {
  const pid_t child = g_child.load(std::memory_order_relaxed);
  const bool from_a_process = info && (info->si_code == SI_USER || info->si_code == SI_QUEUE || info->si_code == SI_TKILL);
  if (child > 0 && from_a_process) ::kill(child, sig);
}

/// The interposition library: MLBS_RUN_LIBRARY, else where it is installed
/// relative to this program, else where this build tree made it.
std::optional<std::string> find_library() {
  if (const char* p = std::getenv("MLBS_RUN_LIBRARY"); p && *p) return std::string(p);
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(self.parent_path() / MLBS_INTERCEPT_INSTALL_RELPATH);
#ifdef MLBS_INTERCEPT_BUILD_PATH
  candidates.emplace_back(MLBS_INTERCEPT_BUILD_PATH);
#endif
  for (const fs::path& p : candidates)
    if (::access(p.c_str(), R_OK) == 0) return fs::weakly_canonical(p, ec).string();
  return std::nullopt;
}

/// The intercepted folder must exist and be writable: the program's files
/// are written behind into it.
std::optional<std::string> folder_problem(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    return errno == ENOENT ? fmt::format("--intercept {}: no such folder", dir)
                           : fmt::format("--intercept {}: {}", dir, std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return fmt::format("--intercept {}: not a folder", dir);
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return fmt::format("--intercept {}: cannot be written ({})", dir, std::strerror(errno));
  return std::nullopt;
}

void set(const char* name, const std::string& value) { ::setenv(name, value.c_str(), 1); }

/// What the processes of the program reported, added up.
struct Summary {
  unsigned processes = 0, failing = 0;
  std::uint64_t files = 0, written = 0, read = 0;
  double blocked_s = 0, write_wait_s = 0, read_wait_s = 0;
  struct Tier {
    std::string kind;
    std::uint64_t in = 0, out = 0;
  };
  std::vector<Tier> tiers;
};

Summary add_up(const fs::path& report) {
  Summary s;
  std::ifstream in(report);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) continue;  // a process killed mid-line
    // Processes that only looked (a path outside the folder, a stat) count for nothing.
    const bool failing = j.value("errors", 0) > 0;
    if (j.value("files", 0) == 0 && !failing) continue;
    ++s.processes;
    if (failing) ++s.failing;
    s.files += j.value("files", std::uint64_t{0});
    s.written += j.value("bytes_written", std::uint64_t{0});
    s.read += j.value("bytes_read", std::uint64_t{0});
    s.blocked_s += j.value("blocked_s", 0.0);
    s.write_wait_s += j.value("write_wait_s", 0.0);
    s.read_wait_s += j.value("read_wait_s", 0.0);
    if (!j.contains("tiers")) continue;
    const auto& tiers = j["tiers"];
    if (s.tiers.size() < tiers.size()) s.tiers.resize(tiers.size());
    for (std::size_t t = 0; t < tiers.size(); ++t) {
      s.tiers[t].kind = tiers[t].value("kind", std::string());
      s.tiers[t].in += tiers[t].value("bytes_in", std::uint64_t{0});
      s.tiers[t].out += tiers[t].value("bytes_out", std::uint64_t{0});
    }
  }
  return s;
}

void print(const Summary& s, const std::string& folder) {
  if (s.processes == 0) {
    std::fprintf(stderr, "mlbs-run: the program cached no file under %s\n", folder.c_str());
    return;
  }
  std::fprintf(stderr,
               "mlbs-run: %u process(es) cached %llu file(s) under %s: %s written, %s read through the cache; "
               "blocked %.3f s in its calls (waiting for the tiers: %.3f s in writes, %.3f s in reads)\n",
               s.processes, static_cast<unsigned long long>(s.files), folder.c_str(),
               mlbs::format_bytes(s.written).c_str(), mlbs::format_bytes(s.read).c_str(), s.blocked_s, s.write_wait_s,
               s.read_wait_s);
  for (std::size_t t = 0; t < s.tiers.size(); ++t)
    std::fprintf(stderr, "mlbs-run:   tier %zu (%s): %s in, %s out\n", t, s.tiers[t].kind.c_str(),
                 mlbs::format_bytes(s.tiers[t].in).c_str(), mlbs::format_bytes(s.tiers[t].out).c_str());
}

/// Every process's Chrome trace (<prefix>.<pid>) in one: each process under
/// its own pid, on one time line (the processes' origins are readings of the
/// same monotonic clock).
void merge_traces(const fs::path& dir, const std::string& prefix, const std::string& out_path) {
  struct Part {
    long pid;
    std::uint64_t origin_ns;
    nlohmann::json events;
  };
  std::vector<Part> parts;
  const std::string stem = fs::path(prefix).filename().string() + ".";
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(stem, 0) != 0) continue;
    std::ifstream in(entry.path());
    const auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.contains("traceEvents")) continue;
    parts.push_back({std::strtol(name.c_str() + stem.size(), nullptr, 10),
                     j["otherData"].value("origin_ns", std::uint64_t{0}), j["traceEvents"]});
  }
  std::uint64_t origin = UINT64_MAX;
  for (const Part& p : parts) origin = std::min(origin, p.origin_ns);
  nlohmann::json events = nlohmann::json::array();
  for (Part& p : parts) {
    const double shift_us = double(p.origin_ns - origin) / 1e3;
    for (auto& e : p.events) {
      e["pid"] = p.pid;
      if (e.value("name", "") == "process_name" && e.value("ph", "") == "M")
        e["args"]["name"] = fmt::format("mlbs (process {})", p.pid);
      if (e.contains("ts")) e["ts"] = e["ts"].get<double>() + shift_us;
      events.push_back(std::move(e));
    }
  }
  const nlohmann::json trace = {{"displayTimeUnit", "ms"},
                                {"otherData", {{"producer", "mlbs-run"}, {"processes", parts.size()}}},
                                {"traceEvents", std::move(events)}};
  std::ofstream out(out_path);
  out << trace.dump() << '\n';
  if (!out) throw mlbs::IoError(errno, fmt::format("cannot write the trace {}", out_path));
}

/// Runs the program; its wait status.
int run(std::vector<std::string>& command) {
  std::vector<char*> argv;
  for (std::string& a : command) argv.push_back(a.data());
  argv.push_back(nullptr);

  // Forwarded signals are held until the child's pid is known.
  sigset_t forwarded, old;
  ::sigemptyset(&forwarded);
  for (int sig : kForwarded) ::sigaddset(&forwarded, sig);
  ::sigprocmask(SIG_BLOCK, &forwarded, &old);
  struct sigaction sa {};
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  ::sigemptyset(&sa.sa_mask);
  std::vector<struct sigaction> previous(std::size(kForwarded));
  for (std::size_t i = 0; i < std::size(kForwarded); ++i) ::sigaction(kForwarded[i], &sa, &previous[i]);

  const pid_t child = ::fork();
  if (child < 0) throw mlbs::IoError(errno, "cannot start the program (fork)");
  if (child == 0) {
    for (std::size_t i = 0; i < std::size(kForwarded); ++i) ::sigaction(kForwarded[i], &previous[i], nullptr);
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    ::execvp(argv[0], argv.data());
    const int err = errno;
    std::fprintf(stderr, "mlbs-run: cannot run '%s': %s\n", argv[0], std::strerror(err));
    ::_exit(err == ENOENT ? 127 : 126);
  }
  g_child.store(child, std::memory_order_relaxed);
  ::sigprocmask(SIG_SETMASK, &old, nullptr);

  int status = 0;
  while (::waitpid(child, &status, 0) < 0)
    if (errno != EINTR) throw mlbs::IoError(errno, "cannot wait for the program");
  g_child.store(0, std::memory_order_relaxed);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "mlbs-run: runs an unmodified program with its files under one folder cached by mlbs "
      "(docs/transparent.md)\n\n"
      "  mlbs-run --intercept DIR --tiers SPEC [options] -- COMMAND [ARGS...]"};
  std::string folder, tiers, schedule = "auto", config, chunk, trace;
  bool quiet = false;
  std::vector<std::string> command;
  app.add_option("--intercept", folder, "the folder whose files are cached (it must exist)")
      ->envname("MLBS_INTERCEPT")
      ->required();
  app.add_option("--tiers", tiers, "the tiers in front of the folder, e.g. mem:4GiB,dir:/nvme/cache:200GiB")
      ->envname("MLBS_TIERS");
  app.add_option("--schedule", schedule, "the order files are read back: lifo, fifo or auto (learnt)")
      ->check(CLI::IsMember({"lifo", "fifo", "auto"}));
  app.add_option("--config", config, "a TOML configuration (helpers, codec, ...); --tiers overrides its tiers")
      ->envname("MLBS_CONFIG");
  app.add_option("--chunk", chunk, "files are cached in chunks of this size (default 16MiB)");
  app.add_option("--trace", trace, "write the helpers' Chrome trace, every process's merged, to this file");
  app.add_flag("--quiet", quiet, "print no summary");
  app.add_option("command", command, "the program and its arguments, after --")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kBadSettings;
  }

  if (tiers.empty() && config.empty()) {
    std::fprintf(stderr, "mlbs-run: --tiers (or MLBS_TIERS, or the tiers of --config) is required\n");
    return kBadSettings;
  }
  // The environment the program will get; checked here first, with the
  // interposer's own code.
  std::error_code ec;
  // Made absolute by the interposer's own rule, so the folder reads the same
  // in the summary, in MLBS_INTERCEPT and to the interposer.
  const std::optional<std::string> absolute = mlbs::intercept::absolute(AT_FDCWD, folder.c_str());
  if (!absolute) {
    std::fprintf(stderr, "mlbs-run: cannot make '%s' absolute (the working folder is unreadable)\n", folder.c_str());
    return kBadSettings;
  }
  const std::string& dir = *absolute;
  if (auto problem = folder_problem(dir)) {
    std::fprintf(stderr, "mlbs-run: %s\n", problem->c_str());
    return kBadSettings;
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string scratch = fmt::format("{}/mlbs-run-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!::mkdtemp(scratch.data())) {
    std::fprintf(stderr, "mlbs-run: cannot make a folder for the processes' reports (%s): %s\n", scratch.c_str(),
                 std::strerror(errno));
    return kBadSettings;
  }
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } cleanup{scratch};
  const fs::path report = fs::path(scratch) / "report.jsonl";
  const std::string trace_prefix = (fs::path(scratch) / "trace").string();
  set("MLBS_INTERCEPT", dir);
  if (!tiers.empty()) set("MLBS_RUN_TIERS", tiers);
  if (!config.empty()) set("MLBS_CONFIG", fs::absolute(config, ec).string());
  if (!chunk.empty()) set("MLBS_RUN_CHUNK", chunk);
  set("MLBS_RUN_SCHEDULE", schedule);
  set("MLBS_RUN_REPORT", report.string());
  if (!trace.empty()) set("MLBS_RUN_TRACE", trace_prefix);
  else ::unsetenv("MLBS_RUN_TRACE");
  try {
    mlbs::intercept::Settings::from_env();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlbs-run: %s\n", e.what());
    return kBadSettings;
  }
  const auto library = find_library();
  if (!library) {
    std::fprintf(stderr,
                 "mlbs-run: cannot find libmlbs_intercept.so beside mlbs-run; set MLBS_RUN_LIBRARY to its path\n");
    return kBadSettings;
  }
  // After what is preloaded already: a sanitizer's runtime must stay first.
  const char* preload = std::getenv("LD_PRELOAD");
  set("LD_PRELOAD", preload && *preload ? fmt::format("{} {}", preload, *library) : *library);

  int status = 0;
  try {
    status = run(command);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlbs-run: %s\n", e.what());
    return 1;
  }
  int rc = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;

  const Summary summary = add_up(report);
  if (!quiet) print(summary, dir);
  if (summary.failing > 0) {
    std::fprintf(stderr, "mlbs-run: %u process(es) could not make every file complete at its real path\n",
                 summary.failing);
    if (rc == 0) rc = 1;
  }
  if (!trace.empty()) {
    try {
      merge_traces(scratch, trace_prefix, trace);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mlbs-run: %s\n", e.what());
      if (rc == 0) rc = 1;
    }
  }
  return rc;
}

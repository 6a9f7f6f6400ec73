#include "insitu.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>

#include <mlbs/mlbs.hpp>

extern char** environ;

namespace mlbs_bench {

namespace {

/// CLOCK_MONOTONIC, which writer and reader share (one node, one clock).
std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t k = static_cast<std::size_t>(std::ceil(p * double(v.size())));
  return v[std::min(v.size() - 1, k == 0 ? 0 : k - 1)];
}

class ReaderMode final : public Mode {
 public:
  ReaderMode(const Plan& plan, const Options& o, const RunDirs& dirs)
      : inner_(make_mode("mlbs", plan, o, dirs)), written_ns_(plan.snapshots, 0) {
    // The writer's store is open: the reader can attach at once.
    const mlbs::Config cfg = mlbs_config(plan, o, dirs, false);
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 3);  // the report pipe is the child's fd 3
    const std::string spec = mlbs::format_tier_spec(cfg.tiers);
    const std::string durability = cfg.durability == mlbs::Durability::persistent ? "persistent" : "scratch";
    const std::string count = std::to_string(plan.snapshots);
    std::vector<char*> argv = {const_cast<char*>("mlbs-bench"), const_cast<char*>("--insitu-reader"),
                               const_cast<char*>(spec.c_str()), const_cast<char*>(durability.c_str()),
                               const_cast<char*>(kSnapshotStore), const_cast<char*>(count.c_str()),
                               const_cast<char*>("3"),      nullptr};
    const int err = ::posix_spawn(&pid_, "/proc/self/exe", &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(fds[1]);
    if (err != 0) {
      ::close(fds[0]);
      throw std::runtime_error(std::string("cannot start the reader process: ") + std::strerror(err));
    }
    report_fd_ = fds[0];
  }
  ~ReaderMode() override {
    if (pid_ > 0) {  // stats() never ran (the run failed): the reader goes too
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    if (report_fd_ >= 0) ::close(report_fd_);
  }

  float* buffer() override { return inner_->buffer(); }
  void write(std::uint64_t id) override {
    inner_->write(id);
    if (id < written_ns_.size()) written_ns_[id] = now_ns();
  }
  void read(std::uint64_t id) override { inner_->read(id); }
  void finish() override { inner_->finish(); }

  /// Waits for the reader (the writer's wall time has been taken) while the
  /// store is still open, then adds what it saw.
  ModeStats stats() const override {
    ModeStats m = inner_->stats();
    m.extra["reader"] = collect();
    return m;
  }

 private:
  nlohmann::json collect() const {
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(report_fd_, buf, sizeof buf)) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      text.append(buf, static_cast<std::size_t>(n));
    }
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    std::vector<double> lag_ms, filed_lag_ms;
    unsigned reads = 0, errors = 0;
    std::string first_error;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream in(line);
      char kind = 0;
      in >> kind;
      if (kind == 'R') {
        std::uint64_t id = 0, seen = 0, filed_lag_ns = 0;
        double mean = 0;
        in >> id >> seen >> mean >> filed_lag_ns;
        ++reads;
        filed_lag_ms.push_back(double(filed_lag_ns) * 1e-6);
        if (id < written_ns_.size() && written_ns_[id] && seen >= written_ns_[id])
          lag_ms.push_back(double(seen - written_ns_[id]) * 1e-6);
      } else {
        ++errors;
        if (first_error.empty()) first_error = line;
      }
    }
    nlohmann::json j = {{"expected", written_ns_.size()},
                        {"reads", reads},
                        {"errors", errors},
                        {"lag_ms_p50", percentile(lag_ms, 0.50)},
                        {"lag_ms_p95", percentile(lag_ms, 0.95)},
                        {"lag_ms_max", percentile(lag_ms, 1.0)},
                        {"lag_after_file_tier_ms_p50", percentile(filed_lag_ms, 0.50)},
                        {"lag_after_file_tier_ms_p95", percentile(filed_lag_ms, 0.95)},
                        {"lag_after_file_tier_ms_max", percentile(filed_lag_ms, 1.0)},
                        {"exit_status", WIFEXITED(status) ? WEXITSTATUS(status) : -1}};
    if (!first_error.empty()) j["first_error"] = first_error;
    return j;
  }

  std::unique_ptr<Mode> inner_;
  std::vector<std::uint64_t> written_ns_;  ///< when write(id) returned
  mutable pid_t pid_ = -1;
  int report_fd_ = -1;
};

}  // namespace

std::unique_ptr<Mode> make_reader_mode(const Plan& plan, const Options& o, const RunDirs& dirs) {
  return std::make_unique<ReaderMode>(plan, o, dirs);
}

int insitu_reader_main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "mlbs-bench --insitu-reader: expected 5 arguments (started by mode reader)\n");
    return 2;
  }
  std::FILE* out = ::fdopen(std::atoi(argv[6]), "w");
  if (!out) return 2;
  try {
    mlbs::Config cfg;
    cfg.tiers = mlbs::parse_tier_spec(argv[2], "insitu reader tiers");
    cfg.durability = std::strcmp(argv[3], "persistent") == 0 ? mlbs::Durability::persistent
                                                             : mlbs::Durability::scratch;
    const std::uint64_t snapshots = std::strtoull(argv[5], nullptr, 10);
    mlbs::Reader<float> r(cfg, argv[4]);
    std::vector<float> snap;
    for (std::uint64_t id = 0; id < snapshots; ++id) {
      if (!r.wait(id, std::chrono::seconds(60))) {
        std::fprintf(out, "E %llu did not become readable within 60 s\n", static_cast<unsigned long long>(id));
        continue;
      }
      const std::uint64_t seen = now_ns();
      const auto seen_wall = std::chrono::system_clock::now();
      try {
        // From the moment it reached a file tier (the writer's stamp) to the moment this reader saw it.
        const auto since = r.readable_since(id);
        const std::uint64_t filed_lag_ns =
            seen_wall > since
                ? static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(seen_wall - since).count())
                : 0;
        snap.resize(r.size(id));
        r.read(id, std::span<float>(snap));
        double sum = 0;  // the analysis: the snapshot's mean
        for (float x : snap) sum += x;
        std::fprintf(out, "R %llu %llu %.9g %llu\n", static_cast<unsigned long long>(id),
                     static_cast<unsigned long long>(seen), snap.empty() ? 0.0 : sum / double(snap.size()),
                     static_cast<unsigned long long>(filed_lag_ns));
      } catch (const mlbs::Error& e) {
        std::fprintf(out, "E %llu %s\n", static_cast<unsigned long long>(id), e.what());
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(out, "F %s\n", e.what());
    std::fclose(out);
    return 1;
  }
  std::fclose(out);
  return 0;
}

void print_insitu(std::FILE* out, const std::vector<RunResult>& results) {
  bool header = false;
  for (const RunResult& with : results) {
    if (with.workload != "insitu" || with.mode != "reader" || !with.error.empty()) continue;
    const RunResult* alone = nullptr;
    for (const RunResult& r : results)
      if (r.workload == "insitu" && r.mode == "mlbs" && r.io_ratio == with.io_ratio && r.repeat == with.repeat &&
          r.error.empty())
        alone = &r;
    if (!header) {
      std::fprintf(out, "\nin-transit reader (--workload insitu: mode reader against mode mlbs of the same repeat)\n");
      header = true;
    }
    const nlohmann::json rd = with.extra.value("reader", nlohmann::json::object());
    std::fprintf(out, "  ratio %u #%u: reader read %u of %u snapshots, %u errors; lag after write(): p50 %.1f ms, "
                      "p95 %.1f ms, max %.1f ms; after reaching a file tier: p50 %.1f ms, p95 %.1f ms, max %.1f ms\n",
                 with.io_ratio, with.repeat, rd.value("reads", 0u), rd.value("expected", 0u), rd.value("errors", 0u),
                 rd.value("lag_ms_p50", 0.0), rd.value("lag_ms_p95", 0.0), rd.value("lag_ms_max", 0.0),
                 rd.value("lag_after_file_tier_ms_p50", 0.0), rd.value("lag_after_file_tier_ms_p95", 0.0),
                 rd.value("lag_after_file_tier_ms_max", 0.0));
    if (const auto copies = with.extra.value("retention_copies", std::uint64_t{0}); copies)
      std::fprintf(out, "    reader retention: %llu early copies, %llu moves down, %s for the reader\n",
                   static_cast<unsigned long long>(copies),
                   static_cast<unsigned long long>(with.extra.value("retention_moves", std::uint64_t{0})),
                   mlbs::format_bytes(with.extra.value("retention_bytes", std::uint64_t{0})).c_str());
    if (rd.contains("first_error"))
      std::fprintf(out, "    first error: %s\n", rd["first_error"].get<std::string>().c_str());
    if (alone)
      std::fprintf(out, "    writer wall %.3f s with the reader, %.3f s alone (%+.1f%%); kernel %.3f s, %.3f s (%+.1f%%)\n",
                   with.wall_s, alone->wall_s, 100.0 * (with.wall_s / alone->wall_s - 1.0), with.kernel_s,
                   alone->kernel_s, 100.0 * (with.kernel_s / alone->kernel_s - 1.0));
  }
}

}  // namespace mlbs_bench

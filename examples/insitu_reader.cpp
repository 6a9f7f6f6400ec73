// In-transit analysis with mlbs::Reader (docs/readers.md): one process runs a
// simulation that writes a snapshot every step into an mlbs store; a second
// process, started beside it with the same configuration, reads every
// snapshot as soon as it reaches a file tier and computes its mean, without
// slowing the writer down. Here one program forks into the two.
//
//   mlbs_insitu_reader [folder]     (default: ./mlbs-insitu)
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <mlbs/mlbs.hpp>

namespace {

constexpr std::size_t kPoints = 1 << 20;  // 4 MiB snapshots
constexpr std::uint64_t kSteps = 32;

mlbs::Config config(const std::string& dir) {
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(32ull << 20),                   // 8 snapshots of DRAM
               mlbs::Tier::directory(dir + "/fast", 64ull << 20),  // a burst buffer for 16
               mlbs::Tier::directory(dir + "/slow")};              // the parallel file system
  return cfg;
}

int writer(const mlbs::Config& cfg, int ready_fd) {
  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "wavefield", kPoints);
  const char go = 1;
  if (::write(ready_fd, &go, 1) != 1) return 1;  // the store is open: the reader may attach
  for (std::uint64_t step = 0; step < kSteps; ++step) {
    for (std::size_t i = 0; i < kPoints; ++i) u[i] = float(step) + float(i % 100) * 0.01f;
    u.write(step);
  }
  int status = 0;
  ::wait(&status);  // keep the store open until the analysis is done
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int reader(const mlbs::Config& cfg, int ready_fd) {
  char go = 0;
  if (::read(ready_fd, &go, 1) != 1) return 1;  // the writer has opened its store
  mlbs::Reader<float> r(cfg, "wavefield");
  std::vector<float> snap(kPoints);
  for (std::uint64_t step = 0; step < kSteps; ++step) {
    if (!r.wait(step, std::chrono::seconds(60))) {
      std::fprintf(stderr, "snapshot %llu did not arrive\n", static_cast<unsigned long long>(step));
      return 1;
    }
    r.read(step, snap);
    double sum = 0;
    for (float x : snap) sum += x;
    std::printf("snapshot %2llu: mean %.3f\n", static_cast<unsigned long long>(step), sum / kPoints);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "mlbs-insitu";
  std::filesystem::create_directories(dir);
  const mlbs::Config cfg = config(dir);
  int fds[2];
  if (::pipe(fds) != 0) return 1;
  // Fork before either side starts threads: writer and reader are separate processes.
  const pid_t pid = ::fork();
  if (pid < 0) return 1;
  ::close(pid == 0 ? fds[1] : fds[0]);  // each side keeps its end: a writer that fails is an EOF
  try {
    return pid == 0 ? reader(cfg, fds[0]) : writer(cfg, fds[1]);
  } catch (const mlbs::Error& e) {
    std::fprintf(stderr, "%s: %s\n", pid == 0 ? "reader" : "writer", e.what());
    return 1;
  }
}

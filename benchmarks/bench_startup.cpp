// Start-up of a Runtime against what it used to cost: constructing one with a
// DRAM budget of 64 MiB .. 2 GiB (its slot pool pre-faults in the background,
// docs/architecture.md "Memory"), beside the baseline of touching every page
// of a budget-sized mapping before returning (what construction did before).
// The figure of merit is the ratio of the two at each budget.
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>

#include <benchmark/benchmark.h>

#include "mlbs/mlbs.hpp"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// Construction of a Runtime (DRAM budget = the argument, one directory tier);
/// its destruction is not timed.
void BM_RuntimeStartup(benchmark::State& state) {
  const std::uint64_t budget = static_cast<std::uint64_t>(state.range(0));
  const fs::path dir = fs::temp_directory_path() / ("mlbs-bench-startup-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(budget), mlbs::Tier::directory(dir.string())};
  cfg.live_catalog = false;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto rt = std::make_unique<mlbs::Runtime>(cfg);
    state.SetIterationTime(seconds_since(t0));
    rt.reset();
  }
  fs::remove_all(dir);
}

/// The baseline: map a budget, ask for huge pages and touch every page.
void BM_PrefaultWholeBudget(benchmark::State& state) {
  const std::size_t bytes = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    const auto t0 = Clock::now();
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      state.SkipWithError("mmap failed");
      return;
    }
    ::madvise(p, bytes, MADV_HUGEPAGE);
    auto* base = static_cast<volatile std::byte*>(p);
    for (std::size_t off = 0; off < bytes; off += 4096) base[off] = std::byte{0};
    state.SetIterationTime(seconds_since(t0));
    ::munmap(p, bytes);
  }
}

constexpr std::int64_t kMiB = 1 << 20;
BENCHMARK(BM_RuntimeStartup)->Arg(64 * kMiB)->Arg(256 * kMiB)->Arg(2048 * kMiB)->UseManualTime()->Iterations(3)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PrefaultWholeBudget)->Arg(64 * kMiB)->Arg(256 * kMiB)->Arg(2048 * kMiB)->UseManualTime()->Iterations(3)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

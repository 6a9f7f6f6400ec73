// Micro-benchmarks of the copy into DRAM slots (src/copy/, docs/fast-copy.md)
// against the copies it must match: std::memcpy on one thread, and a plain
// copy loop on two threads (std::memcpy on halves, in std::threads and in an
// OpenMP parallel region). Every benchmark copies
// between the same two pre-faulted mappings, as the slot pool's arena is.
// scripts/bench-copy.sh runs them and prints our copy's ratio to the best
// baseline per size.
#include <sys/mman.h>

#include <atomic>
#include <barrier>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <thread>

#include <benchmark/benchmark.h>

#include "copy/copy.hpp"

#if MLBS_BENCH_OPENMP
#include <omp.h>
#endif

namespace {

namespace copy = mlbs::copy;

constexpr std::size_t kMiB = std::size_t{1} << 20;

/// Source and destination, grown to the largest size asked for so far and
/// shared by every benchmark (same pages for every contender).
class Arena {
 public:
  ~Arena() { release(); }
  std::byte* src() const { return src_; }
  std::byte* dst() const { return dst_; }
  void ensure(std::size_t bytes) {
    bytes += 4096;  // room for a misaligned source
    if (bytes <= bytes_) return;
    release();
    src_ = map(bytes);
    dst_ = map(bytes);
    for (std::size_t i = 0; i < bytes; ++i) src_[i] = static_cast<std::byte>(i * 131 + (i >> 12));
    bytes_ = bytes;
  }

 private:
  static std::byte* map(std::size_t bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    auto* b = static_cast<std::byte*>(p);
    for (std::size_t off = 0; off < bytes; off += 4096) b[off] = std::byte{1};  // pre-fault, as SlotPool does
    return b;
  }
  void release() {
    if (src_) munmap(src_, bytes_);
    if (dst_) munmap(dst_, bytes_);
    src_ = dst_ = nullptr;
    bytes_ = 0;
  }
  std::byte* src_ = nullptr;
  std::byte* dst_ = nullptr;
  std::size_t bytes_ = 0;
};

Arena& arena() {
  static Arena a;
  return a;
}

/// The 2-thread baseline: a persistent worker copies the second half while
/// the caller copies the first, so thread start-up is not timed (OpenMP's
/// team is persistent too).
class TwoThreadMemcpy {
 public:
  TwoThreadMemcpy() : worker_([this] { run(); }) {}
  ~TwoThreadMemcpy() {
    stop_.store(true);
    sync_.arrive_and_wait();
  }
  void copy(std::byte* dst, const std::byte* src, std::size_t bytes) {
    const std::size_t half = bytes / 2 / 4096 * 4096;
    dst_ = dst + half;
    src_ = src + half;
    bytes_ = bytes - half;
    sync_.arrive_and_wait();  // go
    std::memcpy(dst, src, half);
    sync_.arrive_and_wait();  // both halves done
  }

 private:
  void run() {
    for (;;) {
      sync_.arrive_and_wait();
      if (stop_.load()) return;
      std::memcpy(dst_, src_, bytes_);
      sync_.arrive_and_wait();
    }
  }
  std::barrier<> sync_{2};
  std::atomic<bool> stop_{false};
  std::byte* dst_ = nullptr;
  const std::byte* src_ = nullptr;
  std::size_t bytes_ = 0;
  std::jthread worker_;  // last: joins before the members it uses go
};

template <class Copy>
void run(benchmark::State& state, std::size_t src_offset, Copy&& copy_fn) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  arena().ensure(bytes);
  std::byte* dst = arena().dst();
  const std::byte* src = arena().src() + src_offset;
  for (auto _ : state) {
    copy_fn(dst, src, bytes);
    benchmark::DoNotOptimize(dst);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(bytes));
}

// Baselines.
void memcpy_1thread(benchmark::State& state) {
  run(state, 0, [](std::byte* d, const std::byte* s, std::size_t n) { std::memcpy(d, s, n); });
}
void memcpy_2threads(benchmark::State& state) {
  static TwoThreadMemcpy pair;
  run(state, 0, [](std::byte* d, const std::byte* s, std::size_t n) { pair.copy(d, s, n); });
}

#if MLBS_BENCH_OPENMP
// The same halves in an OpenMP parallel region (fork/join on libgomp's team).
void memcpy_openmp(benchmark::State& state) {
  run(state, 0, [](std::byte* d, const std::byte* s, std::size_t n) {
    const std::size_t half = n / 2 / 4096 * 4096;
#pragma omp parallel num_threads(2)
    {
      if (omp_get_thread_num() == 0) std::memcpy(d, s, half);
      if (omp_get_thread_num() == omp_get_num_threads() - 1) std::memcpy(d + half, s + half, n - half);
    }
  });
}
#endif

// Ours, as the engine calls it (MLBS_COPY, threshold, OpenMP threads).
void mlbs_bulk(benchmark::State& state) {
  run(state, 0, [](std::byte* d, const std::byte* s, std::size_t n) { copy::bulk(d, s, n); });
}
// ... from a misaligned source (the application's buffer may be anywhere).
void mlbs_bulk_src_plus_1(benchmark::State& state) {
  run(state, 1, [](std::byte* d, const std::byte* s, std::size_t n) { copy::bulk(d, s, n); });
}
// Ours decomposed: temporal stores on the threads; streaming stores on the
// threads at every size; streaming stores on one thread.
void mlbs_memcpy_threads(benchmark::State& state) {
  run(state, 0, [](std::byte* d, const std::byte* s, std::size_t n) {
    copy::bulk(d, s, n, {copy::Path::memcpy, 0});
  });
}
void mlbs_nt_threads(benchmark::State& state) {
  run(state, 0, [](std::byte* d, const std::byte* s, std::size_t n) {
    copy::bulk(d, s, n, {copy::settings().streaming, 0});
  });
}
void mlbs_nt_1thread(benchmark::State& state) {
  run(state, 0, [](std::byte* d, const std::byte* s, std::size_t n) {
    copy::bulk(d, s, n, {copy::settings().streaming, 1});
  });
}

// 4 MiB to 1 GiB in powers of 4, plus 8 and 32 MiB around a 32 MiB L3's threshold.
void sizes(benchmark::internal::Benchmark* b) {
  for (std::size_t s : {4 * kMiB, 8 * kMiB, 16 * kMiB, 32 * kMiB, 64 * kMiB, 256 * kMiB, 1024 * kMiB})
    b->Arg(static_cast<std::int64_t>(s));
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK(memcpy_1thread)->Apply(sizes);
BENCHMARK(memcpy_2threads)->Apply(sizes);
#if MLBS_BENCH_OPENMP
BENCHMARK(memcpy_openmp)->Apply(sizes);
#endif
BENCHMARK(mlbs_bulk)->Apply(sizes);
BENCHMARK(mlbs_bulk_src_plus_1)->Apply(sizes);
BENCHMARK(mlbs_memcpy_threads)->Apply(sizes);
BENCHMARK(mlbs_nt_threads)->Apply(sizes);
BENCHMARK(mlbs_nt_1thread)->Apply(sizes);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("mlbs_copy", copy::describe());
  benchmark::AddCustomContext("mlbs_l3_bytes", std::to_string(copy::settings().l3_bytes));
  benchmark::AddCustomContext("mlbs_nt_threshold_bytes", std::to_string(copy::settings().nt_threshold_bytes));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

// A step's snapshot written as several records: the wavefield kept as four
// slabs, one mlbs::Store each, written back to back after each step's
// compute and read back in reverse. With DRAM for only two or three whole
// snapshots, parts leave DRAM several at a time, so the file tiers can work
// together, and DRAM keeps room for a whole step's parts (docs/simulator.md,
// "Records in parts"; `mlbs-sim --parts K` predicts the gain first).
// Usage: mlbs_snapshot_parts [base-dir]
#include <mlbs/mlbs.hpp>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const std::string base = argc > 1 ? argv[1] : "mlbs-snapshot-parts";
  std::filesystem::create_directories(base);
  constexpr int kParts = 4;
  constexpr std::size_t kSlab = 1 << 19;  // floats: 2 MiB a slab, 8 MiB a snapshot

  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(16ull << 20),  // DRAM for two snapshots
               mlbs::Tier::directory(base + "/fast"), mlbs::Tier::directory(base + "/slow")};
  // Known bandwidths (here caps, applied): the planner shares the spill between the tiers by them.
  cfg.tiers[1].bandwidth_bytes_per_s = 1ull << 30;
  cfg.tiers[2].bandwidth_bytes_per_s = 512ull << 20;
  cfg.schedule = mlbs::Schedule::lifo();

  try {
    mlbs::Runtime rt(cfg);
    std::vector<mlbs::Store<float>> slabs;
    slabs.reserve(kParts);
    for (int j = 0; j < kParts; ++j) slabs.emplace_back(rt, "wavefield." + std::to_string(j), kSlab);

    const int steps = 24;  // 192 MiB: 12x the DRAM budget
    for (int step = 0; step < steps; ++step) {
      for (int j = 0; j < kParts; ++j)  // the step's compute, slab by slab
        for (std::size_t i = 0; i < kSlab; ++i) slabs[j][i] = float(step * kParts + j) + float(i) * 1e-7f;
      for (auto& s : slabs) s.write(step);  // the parts back to back: one burst
    }
    for (int step = steps - 1; step >= 0; --step)
      for (int j = 0; j < kParts; ++j) {
        slabs[j].read(step);
        const float first = float(step * kParts + j), last = first + float(kSlab - 1) * 1e-7f;
        if (slabs[j][0] != first || slabs[j][kSlab - 1] != last) {
          std::fprintf(stderr, "step %d, slab %d came back wrong\n", step, j);
          return 1;
        }
      }
    const mlbs::Stats s = rt.stats();
    for (std::size_t t = 0; t < s.tiers.size(); ++t)
      std::printf("tier %zu %-9s in %10s  out %10s\n", t, s.tiers[t].kind.c_str(),
                  mlbs::format_bytes(s.tiers[t].bytes_in).c_str(), mlbs::format_bytes(s.tiers[t].bytes_out).c_str());
    std::printf("%d steps of %d parts back exact; blocked: write %.3f s, read %.3f s\n", steps, kParts,
                s.write_block_ns * 1e-9, s.read_block_ns * 1e-9);
  } catch (const mlbs::Error& e) {  // typed, naming store, id and tier
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}

// A snapshot kept in parts: one wavefield store whose records the runtime
// keeps in parts (StoreOptions::parts; here kAutoParts, the store choosing
// four for DRAM that holds two snapshots), written back to back after each
// step's compute and read back, newest first, into the one working buffer.
// With DRAM for only two whole snapshots, parts leave DRAM several at a time,
// so the file tiers work side by side, and DRAM keeps room for a whole step's
// parts (docs/parts.md; `mlbs-sim --parts K` predicts the gain first).
// Usage: mlbs_snapshot_parts [base-dir]
#include <mlbs/mlbs.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

int main(int argc, char** argv) {
  const std::string base = argc > 1 ? argv[1] : "mlbs-snapshot-parts";
  std::filesystem::create_directories(base);
  constexpr std::size_t kCells = 1 << 21;  // floats: 8 MiB a snapshot

  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(16ull << 20),  // DRAM for two snapshots
               mlbs::Tier::directory(base + "/fast"), mlbs::Tier::directory(base + "/slow")};
  // Known bandwidths (here caps, applied): the planner shares the spill between the tiers by them.
  cfg.tiers[1].bandwidth_bytes_per_s = 1ull << 30;
  cfg.tiers[2].bandwidth_bytes_per_s = 512ull << 20;
  cfg.schedule = mlbs::Schedule::lifo();

  try {
    mlbs::Runtime rt(cfg);
    mlbs::StoreOptions options;
    options.parts = mlbs::StoreOptions::kAutoParts;  // DRAM for two 8 MiB snapshots: four 2 MiB parts
    mlbs::Store<float> u(rt, "wavefield", options, kCells);

    const int steps = 24;  // 192 MiB: 12x the DRAM budget
    for (int step = 0; step < steps; ++step) {
      for (std::size_t i = 0; i < kCells; ++i) u[i] = float(step) + float(i) * 1e-7f;  // the step's compute
      u.write(step);  // its four parts, back to back: one burst
    }
    const mlbs::RecordInfo info = u.info(0);
    std::printf("record 0: %s in %zu parts, on tiers", mlbs::format_bytes(info.size_bytes).c_str(),
                info.part_tiers.size());
    for (const auto& tiers : info.part_tiers) {
      std::printf(" {");
      for (std::size_t k = 0; k < tiers.size(); ++k) std::printf("%s%d", k ? "," : "", tiers[k]);
      std::printf("}");
    }
    std::printf("\n");
    for (int step = steps - 1; step >= 0; --step) {
      u.read(step);  // every part, into the one working buffer
      const float first = float(step), last = first + float(kCells - 1) * 1e-7f;
      if (u.size() != kCells || u[0] != first || u[kCells - 1] != last) {
        std::fprintf(stderr, "step %d came back wrong\n", step);
        return 1;
      }
    }
    const mlbs::Stats s = rt.stats();
    for (std::size_t t = 0; t < s.tiers.size(); ++t)
      std::printf("tier %zu %-9s in %10s  out %10s\n", t, s.tiers[t].kind.c_str(),
                  mlbs::format_bytes(s.tiers[t].bytes_in).c_str(), mlbs::format_bytes(s.tiers[t].bytes_out).c_str());
    std::printf("%d steps in %u parts back exact (%llu part writes); blocked: write %.3f s, read %.3f s\n", steps,
                u.parts(), static_cast<unsigned long long>(s.writes), s.write_block_ns * 1e-9,
                s.read_block_ns * 1e-9);
  } catch (const mlbs::Error& e) {  // typed, naming store, id and tier
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}

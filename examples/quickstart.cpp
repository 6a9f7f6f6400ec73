// The README's quick-start program: snapshots of a working buffer written in
// a forward loop and read back in reverse (the RTM pattern), through three
// tiers under one folder. Usage: mlbs_quickstart [base-dir]
#include <mlbs/mlbs.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

int main(int argc, char** argv) {
  const std::string base = argc > 1 ? argv[1] : "mlbs-quickstart";
  std::filesystem::create_directories(base);

  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(16ull << 20),                  // 16 MiB of DRAM slots
               mlbs::Tier::directory(base + "/fast", 32ull << 20),  // 32 MiB quota ("NVMe")
               mlbs::Tier::directory(base + "/slow")};             // unlimited ("PFS")
  cfg.schedule = mlbs::Schedule::lifo();  // read back in reverse order
  cfg.durability = mlbs::Durability::scratch;

  try {
    mlbs::Runtime rt(cfg);
    mlbs::Store<float> u(rt, "wavefield", 1 << 20);  // 4 MiB working buffer

    const int snapshots = 32;  // 128 MiB: 8x the DRAM budget
    for (int step = 0; step < snapshots; ++step) {
      for (std::size_t i = 0; i < u.size(); ++i) u[i] = float(step) + float(i) * 1e-6f;
      u.write(step);  // copies into a DRAM slot and returns; helpers move it down
    }
    for (int step = snapshots - 1; step >= 0; --step) {
      u.read(step);  // prefetched: usually already in DRAM
      if (u[0] != float(step)) {
        std::fprintf(stderr, "snapshot %d came back wrong\n", step);
        return 1;
      }
    }
    const mlbs::Stats s = rt.stats();
    for (std::size_t t = 0; t < s.tiers.size(); ++t)
      std::printf("tier %zu %-9s in %10s  out %10s\n", t, s.tiers[t].kind.c_str(),
                  mlbs::format_bytes(s.tiers[t].bytes_in).c_str(),
                  mlbs::format_bytes(s.tiers[t].bytes_out).c_str());
    std::printf("blocked: write %.3f s, read %.3f s\n", s.write_block_ns * 1e-9,
                s.read_block_ns * 1e-9);
  } catch (const mlbs::Error& e) {  // every mlbs failure is typed and names store, id, tier
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}

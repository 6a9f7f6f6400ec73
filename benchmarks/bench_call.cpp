// Per-call cost of Store::write/read in C++ (docs/python.md, "Overhead per
// call"; benchmarks/python_overhead.py compares the Python calls with the C++
// ones in one process): the same loop as the script's, public API only. Each round writes `records` records
// of `bytes` bytes and reads them back in reverse (LIFO), all within DRAM,
// so the figures are the calls' own cost, not the tiers'. Per call, the
// median over rounds of (time of a round's loop) / records, in ns, as JSON:
//   write     Store::write (the copy into a DRAM slot)
//   read      Store::read (the slot swapped into the working buffer)
//   read_out  Store::read, then a copy into the caller's array (Python's out=)
// With --gap-us G the calls are also made G us apart (busy-waiting, not
// counted), in rounds alternating with back-to-back ones: what spacing calls
// apart costs by itself, as an interpreter's work between calls spaces them
// ("spaced_*" in the JSON).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <mlbs/mlbs.hpp>

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

using Clock = std::chrono::steady_clock;

// Busy-waits `us` microseconds (a sleep would let the core idle down).
void spin(double us) {
  const auto until = Clock::now() + std::chrono::duration<double, std::micro>(us);
  while (Clock::now() < until) {
  }
}

// Runs f() once and returns its ns; with a gap, waits that long first.
template <class F>
double timed(double gap_us, F&& f) {
  if (gap_us > 0) spin(gap_us);
  const auto t = Clock::now();
  f();
  return double(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count());
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t bytes = 1 << 20, records = 64, rounds = 20;
  double gap_us = 0;
  std::string dir = ".";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* v = argv[i + 1];
    if (flag == "--bytes") bytes = std::strtoull(v, nullptr, 10);
    else if (flag == "--records") records = std::strtoull(v, nullptr, 10);
    else if (flag == "--rounds") rounds = std::strtoull(v, nullptr, 10);
    else if (flag == "--dir") dir = v;
    else if (flag == "--gap-us") gap_us = std::strtod(v, nullptr);
    else {
      std::fprintf(stderr, "usage: %s [--bytes N] [--records K] [--rounds R] [--dir DIR] [--gap-us G]\n", argv[0]);
      return 2;
    }
  }
  mlbs::Config cfg;
  // Room for every record of a round, whole slots, and slack.
  cfg.tiers = {mlbs::Tier::memory(records * ((bytes + 4095) / 4096 * 4096) + (16u << 20)),
               mlbs::Tier::directory(dir)};
  cfg.schedule = mlbs::Schedule::lifo();
  mlbs::Runtime rt(cfg);
  mlbs::Store<std::byte> s(rt, "calls", bytes);
  std::memset(s.data(), 7, bytes);
  std::vector<std::byte> out(bytes);
  // [spaced][op]: per-call ns of each round, op 0 write, 1 read, 2 read_out.
  std::vector<double> ns[2][3];
  std::uint64_t id = 0;
  for (std::size_t r = 0; r <= rounds; ++r) {   // round 0 warms up
    for (int spaced = 0; spaced < (gap_us > 0 ? 2 : 1); ++spaced) {
      const double gap = spaced ? gap_us : 0;
      for (int variant = 1; variant <= 2; ++variant) {
        const std::uint64_t first = id;
        double w = 0, rd = 0;
        for (std::size_t k = 0; k < records; ++k) w += timed(gap, [&] { s.write(id++); });
        for (std::uint64_t k = id; k-- > first;)
          rd += timed(gap, [&] {
            s.read(k);
            if (variant == 2) std::memcpy(out.data(), s.data(), bytes);
          });
        if (r == 0) continue;
        ns[spaced][0].push_back(w / double(records));
        ns[spaced][variant].push_back(rd / double(records));
      }
    }
  }
  std::printf("{\"bytes\": %zu, \"write_ns\": %.1f, \"read_ns\": %.1f, \"read_out_ns\": %.1f", bytes,
              median(ns[0][0]), median(ns[0][1]), median(ns[0][2]));
  if (gap_us > 0)
    std::printf(", \"gap_us\": %.1f, \"spaced_write_ns\": %.1f, \"spaced_read_ns\": %.1f, \"spaced_read_out_ns\": %.1f",
                gap_us, median(ns[1][0]), median(ns[1][1]), median(ns[1][2]));
  std::printf("}\n");
  return 0;
}

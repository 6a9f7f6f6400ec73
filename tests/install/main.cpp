// mlbs install test: a user program built against the installed package with
// find_package(mlbs), written only against the public API (DESIGN §4).
// Three tiers (DRAM for 3 records, a fast directory with a quota of 3 records,
// an unlimited slow directory under argv[1]); 12 records written, read back in
// reverse order and checked element by element. Exit 0 = pass.
#include <mlbs/mlbs.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

namespace {

constexpr std::size_t kElems = 4096;   // 16 KiB per record
constexpr std::uint64_t kRecords = 12;
constexpr std::uint64_t kRecordBytes = kElems * sizeof(float);

// Exact in float: id * 65536 + i < 2^24 for id < 256.
float value(std::uint64_t id, std::size_t i) { return float(id * 65536 + i); }

int fail(const std::string& what) {
  std::fprintf(stderr, "mlbs install test: FAIL: %s\n", what.c_str());
  return 1;
}

int run(const std::filesystem::path& root) {
  const auto fast = root / "fast";
  const auto slow = root / "slow";
  std::filesystem::create_directories(fast);
  std::filesystem::create_directories(slow);

  mlbs::Config cfg;
  cfg.tiers = {mlbs::Tier::memory(3 * kRecordBytes),
               mlbs::Tier::directory(fast.string(), 3 * kRecordBytes),
               mlbs::Tier::directory(slow.string())};
  cfg.schedule = mlbs::Schedule::lifo();
  cfg.durability = mlbs::Durability::scratch;

  std::printf("mlbs %s, tiers %s\n", MLBS_VERSION_STRING, mlbs::format_tier_spec(cfg.tiers).c_str());

  mlbs::Runtime rt(cfg);
  mlbs::Store<float> u(rt, "install-test", kElems);
  if (u.size() != kElems) return fail("Store size " + std::to_string(u.size()));

  for (std::uint64_t id = 0; id < kRecords; ++id) {
    for (std::size_t i = 0; i < u.size(); ++i) u[i] = value(id, i);
    u.write(id);
    // The working buffer is ours again as soon as write() returns.
    std::fill(u.begin(), u.end(), -1.0f);
  }

  // A record written and erased is gone.
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = 0.5f;
  u.write(1000);
  if (!u.contains(1000)) return fail("contains(1000) after write");
  u.erase(1000);
  if (u.contains(1000)) return fail("contains(1000) after erase");

  std::vector<std::uint64_t> expected(kRecords);
  for (std::uint64_t id = 0; id < kRecords; ++id) expected[id] = id;
  if (u.ids() != expected) return fail("ids() does not list records 0.." + std::to_string(kRecords - 1));

  u.flush();

  // Read back last-in first-out, as declared by the schedule.
  for (std::uint64_t id = kRecords; id-- > 0;) {
    if (!u.contains(id)) return fail("contains(" + std::to_string(id) + ") before read");
    u.read(id);
    if (u.size() != kElems)
      return fail("record " + std::to_string(id) + " has " + std::to_string(u.size()) + " elements");
    for (std::size_t i = 0; i < kElems; ++i) {
      if (u[i] != value(id, i))
        return fail("record " + std::to_string(id) + " element " + std::to_string(i) + " is " +
                    std::to_string(u[i]) + ", expected " + std::to_string(value(id, i)));
    }
  }

  const mlbs::Stats st = rt.stats();
  if (st.tiers.size() != 3) return fail("stats() has " + std::to_string(st.tiers.size()) + " tiers");
  for (std::size_t t = 0; t < st.tiers.size(); ++t) {
    const auto& ts = st.tiers[t];
    std::printf("tier %zu %-9s in %-10s out %-10s used %s\n", t, ts.kind.c_str(),
                mlbs::format_bytes(ts.bytes_in).c_str(), mlbs::format_bytes(ts.bytes_out).c_str(),
                mlbs::format_bytes(ts.used_bytes).c_str());
  }
  if (st.tiers[2].bytes_in == 0) return fail("no data reached the slow tier (tiers[2].bytes_in == 0)");
  if (st.checksum_failures != 0) return fail(std::to_string(st.checksum_failures) + " checksum failures");
  if (st.reads < kRecords) return fail("stats().reads = " + std::to_string(st.reads));

  std::printf("mlbs install test: OK (%llu records across 3 tiers)\n",
              static_cast<unsigned long long>(kRecords));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  try {
    return run(argv[1]);
  } catch (const std::exception& e) {
    return fail(std::string("exception: ") + e.what());
  }
}

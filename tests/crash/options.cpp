#include "options.hpp"

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "records.hpp"

namespace mlbs::crash {
namespace {

constexpr const char* kUsage = R"(Usage: mlbs_crash [options]

Crash harness for persistent stores: a child process writes, erases and
flushes records while this process SIGKILLs it at random moments, then
recovers the store and checks it (docs/crash-testing.md). Exits 0 when every
check held, 1 on any violation, 2 on a usage error.

  --kills N            kill the child N times (default 20)
  --seed S             seed of every random choice (default: from the clock; printed)
  --layout L           file | log: the directory tiers' layout (default file)
  --io-backend B       auto | pread | io_uring (default auto)
  --no-fast-tier       memory + persistent tier only (default: a quota'd fast tier too)
  --helpers N          helper threads (default 2)
  --no-checksums       Config::checksums = false (recovery checks sizes only)
  --ids N              ids are drawn from [0, N) (default 48): bounds the store's size
  --max-delay-ms MS    kill within MS after the child's store is open (default 300)
  --early-kill-percent P  P% of kills aim at the child's start instead (default 12)
  --dir PATH           where the tiers go (default $MLBS_TEST_TMP or /tmp, per run);
                       removed after a passing run
  --keep               keep --dir after a passing run
  --verbose            one line per kill
  --sabotage           self-test of the checker: flip a byte of an acknowledged
                       record before the first recovery that has one (must FAIL)
  --full-device-percent P  P% of children see their persistent tier run full for
                       a while (injected ENOSPC): their writes and flushes
                       that fail meanwhile acknowledge nothing (default 20)
  --help               this text
)";

[[noreturn]] void usage_error(const std::string& what) {
  std::fprintf(stderr, "mlbs_crash: %s (see --help)\n", what.c_str());
  std::exit(2);
}

std::uint64_t number(std::string_view flag, const char* text) {
  std::uint64_t v = 0;
  const std::string_view s(text);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size())
    usage_error(std::string(flag) + " wants a number, not '" + text + "'");
  return v;
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage_error(std::string(a) + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--help" || a == "-h") {
        std::fputs(kUsage, stdout);
        std::exit(0);
      } else if (a == "--kills") o.kills = static_cast<unsigned>(number(a, value()));
      else if (a == "--seed") { o.seed = number(a, value()); o.seed_given = true; }
      else if (a == "--layout") o.layout = parse_layout(value(), "--layout");
      else if (a == "--io-backend") o.io_backend = parse_io_backend(value(), "--io-backend");
      else if (a == "--no-fast-tier") o.fast_tier = false;
      else if (a == "--helpers") o.helpers = static_cast<unsigned>(number(a, value()));
      else if (a == "--no-checksums") o.checksums = false;
      else if (a == "--ids") o.id_space = static_cast<unsigned>(number(a, value()));
      else if (a == "--max-delay-ms") o.max_delay_ms = static_cast<unsigned>(number(a, value()));
      else if (a == "--early-kill-percent") o.early_kill_percent = static_cast<unsigned>(number(a, value()));
      else if (a == "--dir") o.dir = value();
      else if (a == "--keep") o.keep = true;
      else if (a == "--verbose") o.verbose = true;
      else if (a == "--sabotage") o.sabotage = true;
      else if (a == "--full-device-percent") o.full_device_percent = static_cast<unsigned>(number(a, value()));
      else if (a == "--faults") o.faults = value();
      else if (a == "--child") o.child = true;
      else if (a == "--report-fd") o.report_fd = static_cast<int>(number(a, value()));
      else if (a == "--child-seed") o.child_seed = number(a, value());
      else if (a == "--salt-base") o.salt_base = number(a, value());
      else usage_error("unknown argument '" + std::string(a) + "'");
    } catch (const Error& e) {  // parse_layout / parse_io_backend
      usage_error(e.what());
    }
  }
  if (o.id_space == 0) usage_error("--ids must be at least 1");
  if (o.helpers == 0) usage_error("--helpers must be at least 1");
  if (o.early_kill_percent > 100) usage_error("--early-kill-percent is at most 100");
  if (o.full_device_percent > 100) usage_error("--full-device-percent is at most 100");
  if (o.child && (o.report_fd < 0 || o.dir.empty())) usage_error("--child needs --report-fd and --dir");
  if (o.dir.empty()) {
    const char* base = std::getenv("MLBS_TEST_TMP");
    o.dir = (std::filesystem::path(base && *base ? base : "/tmp") /
             ("mlbs-crash." + std::to_string(::getpid())))
                .string();
  }
  return o;
}

std::vector<std::string> child_arguments(const Options& o, std::uint64_t child_seed,
                                         std::uint64_t salt_base, int report_fd, const std::string& faults) {
  std::vector<std::string> args = {"--child",
                                   "--dir", o.dir,
                                   "--layout", to_string(o.layout),
                                   "--io-backend", to_string(o.io_backend),
                                   "--helpers", std::to_string(o.helpers),
                                   "--ids", std::to_string(o.id_space),
                                   "--report-fd", std::to_string(report_fd),
                                   "--child-seed", std::to_string(child_seed),
                                   "--salt-base", std::to_string(salt_base)};
  if (!o.fast_tier) args.push_back("--no-fast-tier");
  if (!o.checksums) args.push_back("--no-checksums");
  if (!faults.empty()) args.insert(args.end(), {"--faults", faults});
  return args;
}

Config make_config(const Options& o) {
  const std::filesystem::path dir(o.dir);
  Config cfg;
  // DRAM for a few of the largest records: enough that write() rarely waits,
  // small enough that records keep moving down while the child runs.
  cfg.tiers = {Tier::memory(4 * kMaxRecordBytes)};
  if (o.fast_tier) cfg.tiers.push_back(Tier::directory((dir / "fast").string(), 2 * kMaxRecordBytes));
  cfg.tiers.push_back(Tier::directory((dir / "pfs").string()));
  cfg.tiers.back().faults = o.faults;
  for (std::size_t t = 1; t < cfg.tiers.size(); ++t) cfg.tiers[t].io_backend = o.io_backend;
  cfg.durability = Durability::persistent;
  cfg.layout = o.layout;
  cfg.helper_threads = o.helpers;
  cfg.helper_core = -2;  // not pinned: the harness shares the machine with whatever runs beside it
  cfg.checksums = o.checksums;
  return cfg;
}

}  // namespace mlbs::crash

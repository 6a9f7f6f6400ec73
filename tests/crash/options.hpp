// mlbs_crash: command line and the runtime configuration both roles share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <mlbs/mlbs.hpp>

namespace mlbs::crash {

struct Options {
  // Both roles: what the store is (the child and the recovering parent must agree).
  std::string dir;                          ///< holds the tiers; default under $MLBS_TEST_TMP or /tmp
  Layout layout = Layout::file_per_record;
  IoBackend io_backend = IoBackend::automatic;
  bool fast_tier = true;                    ///< a quota'd directory tier above the persistent one
  unsigned helpers = 2;
  bool checksums = true;
  unsigned id_space = 48;                   ///< ids are drawn from [0, id_space): bounds the store

  // Parent.
  unsigned kills = 20;
  std::uint64_t seed = 0;
  bool seed_given = false;
  unsigned max_delay_ms = 300;              ///< kill within this long after the child's store is open
  unsigned early_kill_percent = 12;         ///< kills aimed at the child's start (exec, recovery)
  unsigned open_timeout_s = 60;             ///< a child that does not open the store by then hangs
  bool keep = false;                        ///< keep `dir` after a passing run
  bool verbose = false;                     ///< one line per kill
  bool sabotage = false;                    ///< self-test: flip a byte of an acked record before recovery
  unsigned full_device_percent = 20;        ///< children whose persistent tier runs full for a while

  // Child (set by the parent on the child's command line).
  bool child = false;
  int report_fd = -1;
  std::uint64_t child_seed = 0;
  std::uint64_t salt_base = 0;              ///< salts of this child's writes: salt_base + 1, + 2, ...
  std::string faults;                       ///< the persistent tier's fault plan (a full-device moment)
};

/// Parses argv; prints usage and exits 0 for --help, 2 for a bad argument.
Options parse_options(int argc, char** argv);

/// The child's command line for the same store (argv[0] excluded).
std::vector<std::string> child_arguments(const Options& o, std::uint64_t child_seed,
                                         std::uint64_t salt_base, int report_fd, const std::string& faults);

/// Both roles' runtime configuration: persistent, DRAM + (fast) + last tier
/// (with o.faults on the last tier: the child's full-device moment).
Config make_config(const Options& o);

inline constexpr const char* kStoreName = "crash";

}  // namespace mlbs::crash

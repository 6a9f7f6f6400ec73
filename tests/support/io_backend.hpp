// Test helper: the directory-tier I/O backend and layout this run of a suite
// exercises. CTest runs the integration suite once per variant with
// MLBS_TEST_VARIANT=<backend>-<layout> (pread-file, io_uring-log, ...);
// apply_test_variant() turns it into MLBS_TEST_IO_BACKEND and
// MLBS_TEST_LAYOUT, which the library reads as what io_backend = auto and an
// unset layout mean (tiers/directory/io_select.hpp), so every test's
// configuration follows without being copied.
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>

namespace mlbs::test {

/// Sets MLBS_TEST_IO_BACKEND and MLBS_TEST_LAYOUT from MLBS_TEST_VARIANT.
/// Call before any thread starts (a static initialiser of the suite does).
inline bool apply_test_variant() {
  const char* v = std::getenv("MLBS_TEST_VARIANT");
  if (!v || !*v) return false;
  const std::string variant = v;
  const auto dash = variant.rfind('-');
  if (dash == std::string::npos) return false;
  ::setenv("MLBS_TEST_IO_BACKEND", variant.substr(0, dash).c_str(), 1);
  ::setenv("MLBS_TEST_LAYOUT", variant.substr(dash + 1).c_str(), 1);
  return true;
}

/// "pread", "io_uring", or "" when the run does not pin one (auto).
inline std::string_view io_backend_variant() {
  const char* v = std::getenv("MLBS_TEST_IO_BACKEND");
  return v ? v : "";
}

/// True when tier files go through io_uring + O_DIRECT in this run, which
/// needs the page cache left off.
inline bool io_uring_variant() { return io_backend_variant() == "io_uring"; }

/// "file", "log", or "" when the run does not pin one (Config::layout).
inline std::string_view layout_variant() {
  const char* v = std::getenv("MLBS_TEST_LAYOUT");
  return v ? v : "";
}

}  // namespace mlbs::test

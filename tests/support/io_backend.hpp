// Test helper: the directory-tier I/O backend this run of a suite exercises.
// CTest runs the integration suite once per backend with
// MLBS_TEST_IO_BACKEND=pread|io_uring; the library then reads io_backend =
// auto as that backend (tiers/directory/io_select.hpp), so every test's
// configuration follows without being copied.
#pragma once

#include <cstdlib>
#include <string_view>

namespace mlbs::test {

/// "pread", "io_uring", or "" when the run does not pin one (auto).
inline std::string_view io_backend_variant() {
  const char* v = std::getenv("MLBS_TEST_IO_BACKEND");
  return v ? v : "";
}

/// True when tier files go through io_uring + O_DIRECT in this run, which
/// needs the page cache left off.
inline bool io_uring_variant() { return io_backend_variant() == "io_uring"; }

}  // namespace mlbs::test

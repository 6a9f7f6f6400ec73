// mlbs-bench — mode adios2 (built only when the ADIOS2 C++ package is found:
// MLBS_BENCH_HAVE_ADIOS2). Kept apart so that only this file sees adios2.h.
#pragma once

#include <filesystem>
#include <memory>

#include "modes.hpp"

namespace mlbs_bench {

/// ADIOS2 BP5 with AsyncWrite, one step per snapshot, in `dir`.
std::unique_ptr<Mode> make_adios2_mode(const Plan& plan, const Options& o, const std::filesystem::path& dir);

}  // namespace mlbs_bench

// Fuzzes Config::from_env (src/core/config.cpp): line k of the input is the
// value of the k-th variable below (an empty or missing line leaves it unset;
// MLBS_CONFIG is never set). Contract checked: only ConfigError escapes, and
// it names one of the variables or a field of the tiers MLBS_TIERS set; a
// configuration it returns passes validate().
#include <cstdint>
#include <cstdlib>
#include <string>

#include "config_checks.hpp"

namespace {

constexpr const char* kVariables[] = {"MLBS_TIERS",          "MLBS_SCHEDULE",  "MLBS_DURABILITY",
                                      "MLBS_HELPER_CORE",    "MLBS_CHECKSUMS", "MLBS_HELPER_THREADS",
                                      "MLBS_IO_CHUNK",       "MLBS_PAGE_CACHE", "MLBS_LAYOUT"};

bool names_a_variable(const std::string& field) {
  for (const char* name : kVariables)
    if (field.starts_with(name)) return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mlbs::fuzz;
  ::unsetenv("MLBS_CONFIG");
  std::string_view rest = as_text(data, size);
  for (const char* name : kVariables) {
    const auto eol = rest.find('\n');
    const std::string value(rest.substr(0, eol));  // setenv stops at a NUL
    if (value.empty()) ::unsetenv(name);
    else ::setenv(name, value.c_str(), 1);
    rest = eol == std::string_view::npos ? std::string_view{} : rest.substr(eol + 1);
  }
  mlbs::Config cfg;
  const bool parsed = completes<mlbs::ConfigError>(
      "Config::from_env", [&] { cfg = mlbs::Config::from_env(); },
      [](const mlbs::ConfigError& e) {
        check_config_error(e);
        check(names_a_variable(e.field()), "a from_env error names no variable");
        check(e.source() == "environment", "a from_env error names another source than the environment");
      });
  if (parsed) check_validates(cfg, "Config::from_env");
  return 0;
}

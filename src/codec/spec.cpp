#include "codec/spec.hpp"

#include <charconv>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "mlbs/errors.hpp"

namespace mlbs::codec {
namespace {

constexpr std::string_view kAccepted =
    "none, lz4, zstd[:LEVEL] (LEVEL 1-22), zfp:accuracy=X (X > 0), zfp:precision=BITS (1-64), zfp:rate=BITS (> 0)";

struct Library {
  std::string_view codec, package;
  bool built;
};
constexpr Library kLibraries[] = {
#ifdef MLBS_HAVE_LZ4
    {"lz4", "liblz4-dev", true},
#else
    {"lz4", "liblz4-dev", false},
#endif
#ifdef MLBS_HAVE_ZSTD
    {"zstd", "libzstd-dev", true},
#else
    {"zstd", "libzstd-dev", false},
#endif
#ifdef MLBS_HAVE_ZFP
    {"zfp", "libzfp-dev", true},
#else
    {"zfp", "libzfp-dev", false},
#endif
};

template <class T>
bool to_number(std::string_view s, T& out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && end == s.data() + s.size();
}

}  // namespace

Spec parse(std::string_view text, const std::string& field, const std::string& source, std::uint32_t line) {
  auto bad = [&](const std::string& why) {
    return ConfigError(field, fmt::format("{} (accepted: {})", why, kAccepted), source, line);
  };
  const auto colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  const std::string_view arg = colon == std::string_view::npos ? std::string_view{} : text.substr(colon + 1);
  const bool has_arg = colon != std::string_view::npos;

  Spec spec;
  spec.name = std::string(name);
  if (name == "none" || name == "lz4") {
    if (has_arg) throw bad(fmt::format("'{}': {} takes no parameter", text, name));
  } else if (name == "zstd") {
    spec.level = kDefaultZstdLevel;
    if (has_arg && (!to_number(arg, spec.level) || spec.level < 1 || spec.level > 22))
      throw bad(fmt::format("'{}': zstd's level must be an integer from 1 to 22", text));
  } else if (name == "zfp") {
    const auto eq = arg.find('=');
    const std::string_view mode = arg.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view{} : arg.substr(eq + 1);
    if (mode == "accuracy") spec.zfp_mode = ZfpMode::accuracy;
    else if (mode == "precision") spec.zfp_mode = ZfpMode::precision;
    else if (mode == "rate") spec.zfp_mode = ZfpMode::rate;
    else throw bad(fmt::format("'{}': zfp needs a mode: accuracy=X, precision=BITS or rate=BITS", text));
    if (!to_number(value, spec.zfp_param) || !std::isfinite(spec.zfp_param) || spec.zfp_param <= 0)
      throw bad(fmt::format("'{}': zfp's {} must be a number greater than 0", text, mode));
    if (spec.zfp_mode == ZfpMode::precision && (spec.zfp_param > 64 || spec.zfp_param != std::floor(spec.zfp_param)))
      throw bad(fmt::format("'{}': zfp's precision is a whole number of bits from 1 to 64", text));
    if (spec.zfp_mode == ZfpMode::rate && spec.zfp_param > 64)
      throw bad(fmt::format("'{}': zfp's rate is at most 64 bits per value", text));
  } else {
    throw bad(fmt::format("unknown codec '{}'", name));
  }
  for (const Library& lib : kLibraries)
    if (lib.codec == name && !lib.built)
      throw ConfigError(field,
                        fmt::format("codec '{}' is not in this build of mlbs ({} was not found when it was built: "
                                    "install it and rebuild); this build has: {}",
                                    name, lib.package, fmt::join(available(), ", ")),
                        source, line);
  return spec;
}

std::string to_string(const Spec& spec) {
  if (spec.name == "zstd") return fmt::format("zstd:{}", spec.level);
  if (spec.name == "zfp") {
    constexpr std::string_view modes[] = {"accuracy", "precision", "rate"};
    return fmt::format("zfp:{}={}", modes[static_cast<int>(spec.zfp_mode)], spec.zfp_param);
  }
  return spec.name;
}

std::vector<std::string> available() {
  std::vector<std::string> names{"none"};
  for (const Library& lib : kLibraries)
    if (lib.built) names.emplace_back(lib.codec);
  return names;
}

}  // namespace mlbs::codec

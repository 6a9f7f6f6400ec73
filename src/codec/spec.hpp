// mlbs — a codec as configured (Config::codec, TOML `codec`, MLBS_CODEC):
//   none | lz4 | zstd[:LEVEL] | zfp:accuracy=X | zfp:precision=BITS | zfp:rate=BITS
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mlbs::codec {

/// ZFP's error-bounded modes (zfp_stream_set_accuracy/precision/rate).
enum class ZfpMode : std::uint8_t { accuracy, precision, rate };

struct Spec {
  std::string name = "none";   ///< "none", "lz4", "zstd" or "zfp"
  int level = 0;               ///< zstd: 1..22
  ZfpMode zfp_mode = ZfpMode::accuracy;
  double zfp_param = 0;        ///< accuracy: absolute error bound (> 0); precision: bits (1..64); rate: bits per value (> 0)

  bool none() const noexcept { return name == "none"; }
  /// Decoded bytes equal the encoded ones (not ZFP).
  bool lossless() const noexcept { return name != "zfp"; }
  friend bool operator==(const Spec&, const Spec&) = default;
};

/// zstd's level when the spec names none: 1, its fastest regular level (a
/// helper must keep up with the slow tier, not squeeze the last percent).
inline constexpr int kDefaultZstdLevel = 1;

/// Parses a spec. Throws ConfigError naming `field` (and `source`, `line`
/// for files and variables) with the accepted forms, for an unknown name, a
/// bad parameter, or a codec this build was made without (its library was
/// not found: the message says which package to install).
Spec parse(std::string_view text, const std::string& field = "codec", const std::string& source = {},
           std::uint32_t line = 0);

/// The canonical text of `spec`; parse(to_string(s)) == s.
std::string to_string(const Spec& spec);

/// The codecs compiled into this build, "none" first.
std::vector<std::string> available();

}  // namespace mlbs::codec

// mlbs — StoreOptions: what one store sets over its runtime's Config.
#pragma once

#include <cstdint>
#include <string>

namespace mlbs {

/// Per-store settings (docs/codecs.md, "Per store").
struct StoreOptions {
  /// The store's codec, in Config::codec's syntax ("none", "lz4", "zstd:3",
  /// "zfp:precision=20" ...); empty: the runtime's Config::codec. A bad spec
  /// is a ConfigError naming the store.
  std::string codec;
  /// The records' layout, x fastest, for ZFP: planes of plane_nx * plane_ny
  /// elements (coded 3-D), rows of plane_nx (plane_ny 0: coded 2-D), or flat
  /// (plane_nx 0: 1-D). docs/codecs.md, "Layout", compares them.
  std::uint32_t plane_nx = 0, plane_ny = 0;
  /// What the elements are where the store's type does not say (C and Fortran
  /// stores hold bytes); ZFP codes float and double only. Only a store of
  /// one-byte elements may say so: Store<int> given float32, or Store<float>
  /// given float64, is an InvalidArgumentError.
  enum class Elements : std::uint8_t { from_type, float32, float64 };
  Elements elements = Elements::from_type;
  /// Each record kept as this many parts, written back to back and read back
  /// into one buffer (docs/parts.md): where DRAM holds only two or three
  /// records, parts let the tiers copy one step's data side by side. 1: whole
  /// records. At most kMaxParts. A persistent store records its count and
  /// reopens only with it (InvalidArgumentError otherwise) while it holds
  /// records; a record a crash left without some part is dropped at recovery.
  /// kAutoParts: the store chooses from its records' size (the working
  /// buffer's at construction) and the DRAM budget (docs/parts.md, "Letting
  /// the store choose"); a persistent store that recorded a count takes it.
  std::uint32_t parts = 1;
  static constexpr std::uint32_t kMaxParts = 64;
  static constexpr std::uint32_t kAutoParts = 0xffffffffu;
};

}  // namespace mlbs

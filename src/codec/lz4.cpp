// lz4: the fastest lossless codec (LZ4_compress_default; about as fast as the
// slow tier's own copy, so worth trying even where zstd would not keep up).
#include <lz4.h>

#include <climits>

#include "codec/builtin.hpp"

namespace mlbs::codec {
namespace {

class Lz4 final : public Codec {
 public:
  Lz4(const Spec& spec, Element element, Plane plane) : Codec(spec, element, plane) {}
  std::size_t bound(std::size_t raw) const override {
    return raw > LZ4_MAX_INPUT_SIZE ? 0 : static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(raw)));
  }
  std::size_t encode(std::span<const std::byte> in, std::span<std::byte> out) const override {
    // LZ4 takes int sizes: frame.hpp's chunks are far smaller.
    if (in.size() > LZ4_MAX_INPUT_SIZE || out.size() > INT_MAX) return 0;
    const int n = LZ4_compress_default(reinterpret_cast<const char*>(in.data()), reinterpret_cast<char*>(out.data()),
                                       static_cast<int>(in.size()), static_cast<int>(out.size()));
    return n > 0 ? static_cast<std::size_t>(n) : 0;
  }
  bool decode(std::span<const std::byte> in, std::span<std::byte> out) const override {
    if (in.size() > INT_MAX || out.size() > INT_MAX) return false;
    // _safe: never reads or writes outside the spans, whatever `in` holds.
    const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data()), reinterpret_cast<char*>(out.data()),
                                      static_cast<int>(in.size()), static_cast<int>(out.size()));
    return n >= 0 && static_cast<std::size_t>(n) == out.size();
  }
};

}  // namespace

std::unique_ptr<Codec> make_lz4(const Spec& spec, Element element, Plane plane) {
  return std::make_unique<Lz4>(spec, element, plane);
}

}  // namespace mlbs::codec

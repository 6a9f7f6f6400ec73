// mlbs — codecs: what a record becomes between DRAM and the file tiers
// (DESIGN §2 "Codec"). A Codec encodes and decodes one contiguous chunk;
// frame.hpp cuts records into chunks, runs them in parallel and makes the
// result self-describing. Codecs are registered by name, as tier kinds are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "codec/spec.hpp"

namespace mlbs::codec {

/// What a store's elements are, as far as codecs care: ZFP compresses
/// floating-point arrays only; the lossless codecs take any bytes.
enum class Element : std::uint8_t { any = 0, float32 = 1, float64 = 2 };

const char* to_string(Element e) noexcept;
std::size_t element_bytes(Element e) noexcept;   ///< 0 for any

/// The record's layout, when the store knows it, x fastest: planes of
/// nx * ny elements (ZFP codes a chunk of whole planes as a 3-D block array),
/// rows of nx elements (ny = 0: ZFP codes 2-D, 4 x 4 blocks within each group
/// of 4 rows), or nothing (nx = 0: 1-D). More dimensions give ZFP a higher
/// ratio and speed at a given precision, but a larger block's error grows
/// with the spread of values inside it (docs/codecs.md, "Layout").
struct Plane {
  std::uint32_t nx = 0, ny = 0;
  /// ZFP's dimensionality for this layout: 1, 2 or 3.
  unsigned dims() const noexcept { return nx == 0 ? 1 : ny == 0 ? 2 : 3; }
  /// Elements of the unit chunks are made of: 4 rows or 4 planes, one
  /// block deep (1 when flat).
  std::size_t block_elements() const noexcept {
    return nx == 0 ? 1 : 4 * std::size_t(nx) * (ny == 0 ? 1 : ny);
  }
  friend bool operator==(const Plane&, const Plane&) = default;
};

/// One codec, configured. Thread-safe: helpers encode and decode with one
/// instance at once (per-thread state, such as zstd's contexts, is the
/// implementation's business).
class Codec {
 public:
  virtual ~Codec() = default;
  const Spec& spec() const noexcept { return spec_; }
  Element element() const noexcept { return element_; }
  const Plane& plane() const noexcept { return plane_; }

  /// The most bytes encode() may write for `raw_bytes` of input.
  virtual std::size_t bound(std::size_t raw_bytes) const = 0;
  /// Encodes `in` into `out` (at least bound(in.size()) bytes); returns the
  /// bytes written, or 0 when this input cannot be encoded (a partial
  /// element for ZFP): the caller then stores it raw.
  virtual std::size_t encode(std::span<const std::byte> in, std::span<std::byte> out) const = 0;
  /// Decodes `in` into exactly `out.size()` bytes; false when `in` is not an
  /// encoding of that many bytes (the caller reports the corruption).
  virtual bool decode(std::span<const std::byte> in, std::span<std::byte> out) const = 0;

 protected:
  Codec(Spec spec, Element element, Plane plane) : spec_(std::move(spec)), element_(element), plane_(plane) {}

 private:
  Spec spec_;
  Element element_;
  Plane plane_;
};

using Factory = std::function<std::unique_ptr<Codec>(const Spec&, Element, Plane)>;

/// Registers a codec by name; returns the factory it replaces (empty if none).
Factory register_codec(const std::string& name, Factory factory);

/// The codec `spec` describes for a store of `element`s; null for "none".
/// Throws InvalidArgumentError naming `store` when the codec cannot take
/// those elements (ZFP on a store that is not float or double), and
/// ConfigError for a name nothing registered.
std::unique_ptr<Codec> make(const Spec& spec, Element element, const std::string& store = {}, Plane plane = {});

}  // namespace mlbs::codec

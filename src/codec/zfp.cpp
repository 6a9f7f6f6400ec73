// zfp: error-bounded compression of float and double arrays, in its
// fixed-accuracy, fixed-precision and fixed-rate modes, serial execution (the
// frame runs chunks in parallel). A chunk is coded in the dimensions of the
// store's layout (Codec::plane: whole planes 3-D, whole rows 2-D), else 1-D.
#include <zfp.h>

#include <algorithm>
#include <memory>
#include <new>
#include <vector>

#include "codec/builtin.hpp"

namespace mlbs::codec {
namespace {

struct Closer {
  void operator()(zfp_stream* z) const { zfp_stream_close(z); }
  void operator()(zfp_field* f) const { zfp_field_free(f); }
  void operator()(bitstream* b) const { stream_close(b); }
};
template <class T>
using Owned = std::unique_ptr<T, Closer>;

class Zfp final : public Codec {
 public:
  Zfp(const Spec& spec, Element element, Plane plane)
      : Codec(spec, element, plane), type_(element == Element::float64 ? zfp_type_double : zfp_type_float) {}

  std::size_t bound(std::size_t raw) const override {
    Owned<zfp_field> field(field_of(nullptr, raw));
    Owned<zfp_stream> zfp(configured(field.get()));
    return field && zfp ? zfp_stream_maximum_size(zfp.get(), field.get()) : 0;
  }

  std::size_t encode(std::span<const std::byte> in, std::span<std::byte> out) const override {
    if (in.empty() || in.size() % element_bytes(element()) != 0) return 0;  // not whole elements: stored raw
    Owned<zfp_field> field(field_of(const_cast<std::byte*>(in.data()), in.size()));
    Owned<zfp_stream> zfp(configured(field.get()));
    Owned<bitstream> bits(stream_open(out.data(), out.size()));
    if (!field || !zfp || !bits) return 0;
    if (zfp_stream_maximum_size(zfp.get(), field.get()) > out.size()) return 0;
    zfp_stream_set_bit_stream(zfp.get(), bits.get());
    zfp_stream_rewind(zfp.get());
    return zfp_compress(zfp.get(), field.get());
  }

  bool decode(std::span<const std::byte> in, std::span<std::byte> out) const override {
    if (out.empty() || out.size() % element_bytes(element()) != 0) return false;
    Owned<zfp_field> field(field_of(out.data(), out.size()));
    Owned<zfp_stream> zfp(configured(field.get()));
    if (!field || !zfp) throw std::bad_alloc();
    // zfp's bit stream does not check its end: a damaged stream would be read
    // up to the field's maximum size. The chunk is decoded from a copy padded
    // with zeros to that size (compressed bytes: a small copy beside decoding).
    thread_local std::vector<std::byte> padded;
    padded.resize(std::max(zfp_stream_maximum_size(zfp.get(), field.get()), in.size()));
    std::fill(std::copy(in.begin(), in.end(), padded.begin()), padded.end(), std::byte{0});
    Owned<bitstream> bits(stream_open(padded.data(), padded.size()));
    if (!bits) throw std::bad_alloc();
    zfp_stream_set_bit_stream(zfp.get(), bits.get());
    zfp_stream_rewind(zfp.get());
    const std::size_t used = zfp_decompress(zfp.get(), field.get());
    return used != 0 && used <= in.size();
  }

 private:
  /// 3-D over whole planes, 2-D over whole rows, else 1-D.
  zfp_field* field_of(void* data, std::size_t bytes) const {
    const std::size_t n = bytes / element_bytes(element());
    const Plane& p = plane();
    const std::size_t row = p.nx, plane_n = std::size_t(p.nx) * p.ny;
    if (p.dims() == 3 && n >= plane_n && n % plane_n == 0) return zfp_field_3d(data, type_, p.nx, p.ny, n / plane_n);
    if (p.dims() == 2 && n >= row && n % row == 0) return zfp_field_2d(data, type_, p.nx, n / row);
    return zfp_field_1d(data, type_, n);
  }

  zfp_stream* configured(const zfp_field* field) const {
    zfp_stream* zfp = zfp_stream_open(nullptr);
    if (!zfp || !field) return zfp;
    switch (spec().zfp_mode) {
      case ZfpMode::accuracy: zfp_stream_set_accuracy(zfp, spec().zfp_param); break;
      case ZfpMode::precision: zfp_stream_set_precision(zfp, static_cast<unsigned>(spec().zfp_param)); break;
      case ZfpMode::rate:
        zfp_stream_set_rate(zfp, spec().zfp_param, type_, zfp_field_dimensionality(field), zfp_false);
        break;
    }
    return zfp;
  }

  zfp_type type_;
};

}  // namespace

std::unique_ptr<Codec> make_zfp(const Spec& spec, Element element, Plane plane) {
  return std::make_unique<Zfp>(spec, element, plane);
}

}  // namespace mlbs::codec

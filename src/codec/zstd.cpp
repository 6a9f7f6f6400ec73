// zstd: lossless, level 1-22 (1 by default: a helper must keep up with the
// slow tier). One compression and one decompression context per thread,
// made on first use: a context is ~1 MiB at low levels and slow to create.
#include <zstd.h>

#include <new>

#include "codec/builtin.hpp"

namespace mlbs::codec {
namespace {

struct Contexts {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_DCtx* d = ZSTD_createDCtx();
  ~Contexts() {
    ZSTD_freeCCtx(c);
    ZSTD_freeDCtx(d);
  }
};

Contexts& contexts() {
  thread_local Contexts ctx;
  return ctx;
}

class Zstd final : public Codec {
 public:
  Zstd(const Spec& spec, Element element, Plane plane) : Codec(spec, element, plane) {}
  std::size_t bound(std::size_t raw) const override { return ZSTD_compressBound(raw); }
  std::size_t encode(std::span<const std::byte> in, std::span<std::byte> out) const override {
    ZSTD_CCtx* c = contexts().c;
    if (!c) return 0;  // no memory for a context: stored raw
    const std::size_t n = ZSTD_compressCCtx(c, out.data(), out.size(), in.data(), in.size(), spec().level);
    return ZSTD_isError(n) ? 0 : n;
  }
  bool decode(std::span<const std::byte> in, std::span<std::byte> out) const override {
    ZSTD_DCtx* d = contexts().d;
    if (!d) throw std::bad_alloc();  // not the record's fault
    const std::size_t n = ZSTD_decompressDCtx(d, out.data(), out.size(), in.data(), in.size());
    return !ZSTD_isError(n) && n == out.size();
  }
};

}  // namespace

std::unique_ptr<Codec> make_zstd(const Spec& spec, Element element, Plane plane) {
  return std::make_unique<Zstd>(spec, element, plane);
}

}  // namespace mlbs::codec

#include <map>
#include <mutex>

#include <fmt/format.h>

#include "codec/builtin.hpp"
#include "codec/codec.hpp"
#include "mlbs/errors.hpp"

namespace mlbs::codec {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, Factory, std::less<>> factories;
  Registry() {
#ifdef MLBS_HAVE_LZ4
    factories["lz4"] = make_lz4;
#endif
#ifdef MLBS_HAVE_ZSTD
    factories["zstd"] = make_zstd;
#endif
#ifdef MLBS_HAVE_ZFP
    factories["zfp"] = make_zfp;
#endif
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

const char* to_string(Element e) noexcept {
  switch (e) {
    case Element::float32: return "float32";
    case Element::float64: return "float64";
    default: return "untyped bytes";
  }
}

std::size_t element_bytes(Element e) noexcept {
  switch (e) {
    case Element::float32: return 4;
    case Element::float64: return 8;
    default: return 0;
  }
}

Factory register_codec(const std::string& name, Factory factory) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  Factory previous = std::move(r.factories[name]);
  r.factories[name] = std::move(factory);
  return previous;
}

std::unique_ptr<Codec> make(const Spec& spec, Element element, const std::string& store, Plane plane) {
  if (spec.none()) return nullptr;
  Factory factory;
  {
    auto& r = registry();
    std::lock_guard lock(r.mu);
    if (auto it = r.factories.find(spec.name); it != r.factories.end()) factory = it->second;
  }
  if (!factory) throw ConfigError("codec", fmt::format("no codec '{}' is registered in this build", spec.name));
  if (spec.name == "zfp" && element_bytes(element) == 0)
    throw InvalidArgumentError(EINVAL,
                               fmt::format("codec '{}' compresses float or double arrays only; this store holds {} "
                                           "(use lz4 or zstd)",
                                           to_string(spec), to_string(element)),
                               {store, std::nullopt, ""});
  return factory(spec, element, plane);
}

}  // namespace mlbs::codec

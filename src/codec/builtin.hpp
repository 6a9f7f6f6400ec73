// mlbs — the codecs built in when their libraries are found (registry.cpp
// registers them; each lives in its own file, compiled only then).
#pragma once

#include <memory>

#include "codec/codec.hpp"

namespace mlbs::codec {

#ifdef MLBS_HAVE_LZ4
std::unique_ptr<Codec> make_lz4(const Spec& spec, Element element, Plane plane);
#endif
#ifdef MLBS_HAVE_ZSTD
std::unique_ptr<Codec> make_zstd(const Spec& spec, Element element, Plane plane);
#endif
#ifdef MLBS_HAVE_ZFP
std::unique_ptr<Codec> make_zfp(const Spec& spec, Element element, Plane plane);
#endif

}  // namespace mlbs::codec

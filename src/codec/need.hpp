// mlbs — whether a runtime's codecs are worth their CPU now
// (Config::codec_when). A pure rule over a small state, kept per runtime.
//
// Encoding saves tier time but costs helper CPU, and on cores shared with
// the application that CPU is the application's: a codec pays only while the
// tiers hold the application up. With CodecWhen::needed a record leaving
// DRAM is encoded only while the application has waited for the tiers (a
// write for room, a read for its record) within the last `window` calls. A
// wait after the codec went quiet again means the I/O it had covered came
// back: the window doubles (kFirstWindow .. kMaxWindow), so a run that is
// I/O-bound without the codec settles on encoding, and one whose compute
// covers its I/O never encodes.
#pragma once

#include <cstdint>

#include "mlbs/config.hpp"

namespace mlbs::codec {

inline constexpr std::uint64_t kFirstWindow = 16;
inline constexpr std::uint64_t kMaxWindow = 1024;

struct Need {
  std::uint64_t calls = 0;   ///< application writes and reads so far
  std::uint64_t until = 0;   ///< the codec is wanted while calls < until
  std::uint64_t window = kFirstWindow;
};

/// Whether a record leaving DRAM now should be encoded.
constexpr bool wanted(CodecWhen when, const Need& n) noexcept {
  return when == CodecWhen::always || n.calls < n.until;
}

/// The state after one application call; `waited`: it waited for the tiers.
constexpr Need called(Need n, bool waited) noexcept {
  ++n.calls;
  if (!waited) return n;
  if (n.until != 0 && n.calls >= n.until) n.window = n.window * 2 < kMaxWindow ? n.window * 2 : kMaxWindow;
  n.until = n.calls + n.window;
  return n;
}

}  // namespace mlbs::codec

#include "codec/frame.hpp"

#include <algorithm>
#include <chrono>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "codec/bypass.hpp"
#include "copy/team.hpp"

namespace mlbs::codec {
namespace {

constexpr char kMagic[4] = {'M', 'L', 'B', 'Z'};
// Version 2: a layout of rows (nx, ny = 0) codes ZFP in 2-D; version 1
// coded it 1-D, and such frames are read as flat.
constexpr std::uint8_t kVersion = 2;
constexpr std::size_t kFixedBytes = 32;      // magic .. plane
constexpr std::size_t kMaxSpecBytes = 64;
constexpr std::uint32_t kRawChunk = 0x80000000u;
constexpr std::size_t kMaxChunkBytes = std::size_t{1} << 30;

// Little-endian fields, whatever the host.
void put(std::byte* p, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}
std::uint64_t get(const std::byte* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= std::uint64_t(std::to_integer<std::uint8_t>(p[i])) << (8 * i);
  return v;
}

std::size_t chunk_count(std::uint64_t raw, std::size_t chunk) { return static_cast<std::size_t>((raw + chunk - 1) / chunk); }

std::size_t slot_bytes(const Codec& codec, std::size_t chunk) { return std::max(codec.bound(chunk), chunk); }

/// A frame's header, checked against the frame's size.
struct Header {
  FrameInfo info;
  std::size_t chunk_bytes = 0;
  const std::byte* table = nullptr;
  std::size_t payload = 0;   ///< offset of the first chunk
};

Header read_header(std::span<const std::byte> f, const ErrorContext& ctx) {
  auto damaged = [&](const std::string& what) {
    return CorruptionError(EBADMSG, "compressed record is damaged: " + what, ctx);
  };
  if (f.size() < kFixedBytes) throw damaged(fmt::format("{} bytes, shorter than a frame header", f.size()));
  if (std::memcmp(f.data(), kMagic, 4) != 0) throw damaged("no frame header (magic)");
  const auto version = std::to_integer<std::uint8_t>(f[4]);
  if (version != kVersion && version != 1)
    throw damaged(fmt::format("frame version {} (this build reads 1 and {})", version, kVersion));
  const auto element = std::to_integer<std::uint8_t>(f[5]);
  const std::size_t spec_len = std::to_integer<std::uint8_t>(f[6]);
  Header h;
  h.chunk_bytes = static_cast<std::size_t>(get(f.data() + 8, 4));
  h.info.chunks = static_cast<std::uint32_t>(get(f.data() + 12, 4));
  h.info.raw_bytes = get(f.data() + 16, 8);
  h.info.plane = {static_cast<std::uint32_t>(get(f.data() + 24, 4)), static_cast<std::uint32_t>(get(f.data() + 28, 4))};
  if (version == 1 && h.info.plane.dims() == 2) h.info.plane = {};
  if (element > static_cast<std::uint8_t>(Element::float64)) throw damaged(fmt::format("element type {}", element));
  h.info.element = static_cast<Element>(element);
  if (spec_len == 0 || spec_len > kMaxSpecBytes || f.size() < kFixedBytes + spec_len)
    throw damaged(fmt::format("codec name of {} bytes", spec_len));
  if (h.chunk_bytes == 0 || h.chunk_bytes > kMaxChunkBytes) throw damaged(fmt::format("chunk size {}", h.chunk_bytes));
  if (h.info.chunks != chunk_count(h.info.raw_bytes, h.chunk_bytes))
    throw damaged(fmt::format("{} chunks for {} bytes in chunks of {}", h.info.chunks, h.info.raw_bytes, h.chunk_bytes));
  const std::string spec_text(reinterpret_cast<const char*>(f.data() + kFixedBytes), spec_len);
  try {
    h.info.spec = parse(spec_text);
  } catch (const ConfigError& e) {
    throw damaged(fmt::format("its codec '{}' cannot be read here: {}", spec_text, e.message()));
  }
  if (h.info.spec.none()) throw damaged("codec 'none'");
  const std::size_t table_bytes = std::size_t{4} * h.info.chunks;
  if (f.size() - kFixedBytes - spec_len < table_bytes) throw damaged("chunk table cut short");
  h.table = f.data() + kFixedBytes + spec_len;
  h.payload = kFixedBytes + spec_len + table_bytes;
  std::uint64_t total = 0;
  for (std::uint32_t i = 0; i < h.info.chunks; ++i) {
    const auto entry = static_cast<std::uint32_t>(get(h.table + 4 * i, 4));
    total += entry & ~kRawChunk;
    if (entry & kRawChunk) ++h.info.raw_chunks;
  }
  if (total != f.size() - h.payload)
    throw damaged(fmt::format("chunks of {} bytes in a frame with {} bytes for them", total, f.size() - h.payload));
  return h;
}

/// First failure of a parallel run, kept for the caller's thread.
struct Failure {
  std::mutex mu;
  std::exception_ptr error;
  std::size_t chunk = SIZE_MAX;
  void set(std::size_t i, std::exception_ptr e) {
    std::lock_guard lock(mu);
    if (i < chunk) {
      chunk = i;
      error = std::move(e);
    }
  }
};

struct EncodeRun {
  const Codec& codec;
  std::span<const std::byte> raw;
  std::byte* slots;
  std::size_t slot, chunk;
  std::vector<std::size_t> stored;   // 0: keep the chunk raw
  Failure failure;
  std::vector<std::size_t> order;    // the chunks this run's tasks encode (empty: task i is chunk i)

  static void task(void* self, std::size_t t) noexcept {
    auto& r = *static_cast<EncodeRun*>(self);
    const std::size_t i = r.order.empty() ? t : r.order[t];
    const std::size_t off = i * r.chunk;
    const std::size_t len = std::min(r.chunk, r.raw.size() - off);
    try {
      const std::size_t n = r.codec.encode(r.raw.subspan(off, len), {r.slots + i * r.slot, r.slot});
      r.stored[i] = n < len ? n : 0;
    } catch (...) {
      r.failure.set(i, std::current_exception());
    }
  }
};

struct DecodeRun {
  const Codec* codec;
  std::span<const std::byte> frame;
  std::span<std::byte> raw;
  std::size_t chunk;
  std::vector<std::size_t> offset;   // of each chunk in the frame
  std::vector<std::uint32_t> entry;
  Failure failure;

  static void task(void* self, std::size_t i) noexcept {
    auto& r = *static_cast<DecodeRun*>(self);
    const std::size_t off = i * r.chunk;
    const std::size_t len = std::min(r.chunk, r.raw.size() - off);
    const std::size_t stored = r.entry[i] & ~kRawChunk;
    const std::byte* in = r.frame.data() + r.offset[i];
    try {
      bool ok;
      if (r.entry[i] & kRawChunk) {
        ok = stored == len;
        if (ok) std::memcpy(r.raw.data() + off, in, len);
      } else {
        ok = r.codec->decode({in, stored}, r.raw.subspan(off, len));
      }
      if (!ok) r.failure.set(i, nullptr);
    } catch (...) {
      r.failure.set(i, std::current_exception());
    }
  }
};

}  // namespace

std::size_t frame_bound(const Codec& codec, std::uint64_t raw_bytes, std::size_t chunk_bytes) {
  const std::size_t n = chunk_count(raw_bytes, chunk_bytes);
  return kFixedBytes + kMaxSpecBytes + 4 * n + n * slot_bytes(codec, std::min<std::uint64_t>(chunk_bytes, raw_bytes));
}

std::size_t encode_frame(const Codec& codec, std::span<const std::byte> raw, std::span<std::byte> out,
                         unsigned threads, std::size_t chunk_bytes, bool probe, double worth_rate) {
  if (chunk_bytes == 0 || chunk_bytes > kMaxChunkBytes)
    throw std::invalid_argument(fmt::format("mlbs::codec::encode_frame: chunk size {}", chunk_bytes));
  const std::string spec = to_string(codec.spec());
  const std::size_t n = chunk_count(raw.size(), chunk_bytes);
  const std::size_t head = kFixedBytes + spec.size() + 4 * n;
  const std::size_t chunk = std::min(chunk_bytes, std::max<std::size_t>(raw.size(), 1));
  // Each chunk is encoded into a slot of its own, then the frame is packed.
  EncodeRun run{codec, raw, out.data() + head, slot_bytes(codec, chunk), chunk_bytes, std::vector<std::size_t>(n), {}, {}};
  if (out.size() < head + n * run.slot) throw std::length_error("mlbs::codec::encode_frame: output below frame_bound()");
  // Probing: chunks spread over the record (its ends and between) first;
  // when none of them pays, nothing more is encoded, nor the frame's memory
  // touched. Lossless codecs take any bytes, so the head of each probe chunk
  // is sample enough; ZFP codes whole blocks and planes: whole chunks.
  // The probe pays when, summed, its pieces shrink enough (bypass.hpp) and,
  // given `worth_rate`, save more tier time than their encoding took.
  std::vector<std::size_t> probes;
  if (probe && n > kProbeChunks)
    for (std::size_t k = 0; k < kProbeChunks; ++k) probes.push_back(k * (n - 1) / (kProbeChunks - 1));
  std::uint64_t probe_raw = 0, probe_stored = 0;
  const auto start = std::chrono::steady_clock::now();
  const auto probe_pays = [&] {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
    return pays(probe_raw, probe_stored) &&
           saves_time(probe_raw, probe_stored, static_cast<std::uint64_t>(ns.count()), worth_rate);
  };
  if (!probes.empty() && codec.spec().lossless() && chunk_bytes > kSampleBytes) {
    std::vector<std::byte> scratch(slot_bytes(codec, kSampleBytes));
    for (std::size_t i : probes) {
      const std::size_t len = std::min(kSampleBytes, raw.size() - i * chunk_bytes);
      probe_raw += len;
      probe_stored += std::min(len, codec.encode(raw.subspan(i * chunk_bytes, len), scratch));
    }
    if (!probe_pays()) return 0;
    probes.clear();  // encoded in full below
  }
  if (!probes.empty()) {
    run.order = probes;
    copy::Team::instance().run_tasks(run.order.size(), EncodeRun::task, &run, threads);
    if (run.failure.error) std::rethrow_exception(run.failure.error);
    for (std::size_t i : probes) {
      const std::size_t len = std::min(chunk_bytes, raw.size() - i * chunk_bytes);
      probe_raw += len;
      probe_stored += run.stored[i] ? run.stored[i] : len;
    }
    if (!probe_pays()) return 0;
    run.order.clear();  // the other chunks
    for (std::size_t i = 0, k = 0; i < n; ++i) {
      if (k < probes.size() && probes[k] == i)
        ++k;
      else
        run.order.push_back(i);
    }
  }
  copy::Team::instance().run_tasks(run.order.empty() ? n : run.order.size(), EncodeRun::task, &run, threads);
  if (run.failure.error) std::rethrow_exception(run.failure.error);

  std::byte* f = out.data();
  std::memcpy(f, kMagic, 4);
  put(f + 4, kVersion, 1);
  put(f + 5, static_cast<std::uint8_t>(codec.element()), 1);
  put(f + 6, spec.size(), 1);
  put(f + 7, 0, 1);
  put(f + 8, chunk_bytes, 4);
  put(f + 12, n, 4);
  put(f + 16, raw.size(), 8);
  put(f + 24, codec.plane().nx, 4);
  put(f + 28, codec.plane().ny, 4);
  std::memcpy(f + kFixedBytes, spec.data(), spec.size());
  std::size_t pos = head;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t off = i * chunk_bytes;
    const std::size_t len = std::min(chunk_bytes, raw.size() - off);
    // pos never passes slot i's start: every chunk before took at most a slot.
    if (run.stored[i]) {
      std::memmove(f + pos, run.slots + i * run.slot, run.stored[i]);
      put(f + kFixedBytes + spec.size() + 4 * i, run.stored[i], 4);
      pos += run.stored[i];
    } else {
      std::memcpy(f + pos, raw.data() + off, len);
      put(f + kFixedBytes + spec.size() + 4 * i, len | kRawChunk, 4);
      pos += len;
    }
  }
  return pos;
}

void decode_frame(std::span<const std::byte> frame, std::span<std::byte> raw, unsigned threads,
                  const ErrorContext& ctx) {
  const Header h = read_header(frame, ctx);
  if (h.info.raw_bytes != raw.size())
    throw CorruptionError(EBADMSG,
                          fmt::format("compressed record is damaged: it decodes to {} bytes, its record has {}",
                                      h.info.raw_bytes, raw.size()),
                          ctx);
  std::unique_ptr<Codec> codec;
  try {
    codec = make(h.info.spec, h.info.element, {}, h.info.plane);
  } catch (const Error& e) {
    throw CorruptionError(EBADMSG, fmt::format("compressed record is damaged: {}", e.message()), ctx);
  }
  DecodeRun run{codec.get(), frame, raw, h.chunk_bytes, {}, {}, {}};
  run.offset.resize(h.info.chunks);
  run.entry.resize(h.info.chunks);
  std::size_t pos = h.payload;
  for (std::uint32_t i = 0; i < h.info.chunks; ++i) {
    run.entry[i] = static_cast<std::uint32_t>(get(h.table + 4 * i, 4));
    run.offset[i] = pos;
    pos += run.entry[i] & ~kRawChunk;
  }
  copy::Team::instance().run_tasks(h.info.chunks, DecodeRun::task, &run, threads);
  if (run.failure.chunk == SIZE_MAX) return;
  if (run.failure.error) std::rethrow_exception(run.failure.error);
  throw CorruptionError(EBADMSG,
                        fmt::format("compressed record is damaged: chunk {} of {} does not decode ({})",
                                    run.failure.chunk, h.info.chunks, to_string(h.info.spec)),
                        ctx);
}

bool starts_a_frame(std::span<const std::byte> head) noexcept {
  return head.size() >= sizeof kMagic && std::memcmp(head.data(), kMagic, sizeof kMagic) == 0;
}

std::size_t chunk_bytes_for(Element element, Plane plane) {
  const std::size_t elem = element_bytes(element);
  if (plane.dims() == 1 || elem == 0) return kChunkBytes;
  const std::size_t unit = plane.block_elements() * elem;
  // Whole groups of 4 rows or planes (ZFP's block edge), about kChunkBytes.
  const std::size_t bytes = std::max<std::size_t>(1, kChunkBytes / unit) * unit;
  return bytes <= kMaxChunkBytes ? bytes : kChunkBytes;
}

FrameInfo inspect_frame(std::span<const std::byte> frame, const ErrorContext& ctx) {
  return read_header(frame, ctx).info;
}

}  // namespace mlbs::codec

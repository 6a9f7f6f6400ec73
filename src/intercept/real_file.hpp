// mlbs — what the files tier (the program's own files, mlbs-run's last
// tier) knows of each intercepted file: its real path and a descriptor on
// it, and which version of each chunk's record its bytes belong to. Shared
// by the cache (which changes them) and the tier's backend (which writes the
// records behind to the file and reads them back).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mlbs::intercept {

/// A record stands for one version of one chunk of one file:
/// file number (24 bits) | chunk index (24 bits) | version (16 bits).
struct ChunkId {
  std::uint64_t file = 0;
  std::uint64_t chunk = 0;
  std::uint16_t version = 0;
  static constexpr std::uint64_t kMaxFiles = 1ull << 24;
  static constexpr std::uint64_t kMaxChunks = 1ull << 24;
  std::uint64_t id() const noexcept { return file << 40 | chunk << 16 | version; }
  static ChunkId of(std::uint64_t id) noexcept {
    return {id >> 40, (id >> 16) & (kMaxChunks - 1), static_cast<std::uint16_t>(id & 0xffff)};
  }
};

/// One intercepted file as the files tier sees it. Every member under `mu`,
/// which a write behind holds across its pwrite(), so that a chunk the cache
/// has since rewritten, cut off or unlinked (its `current` version moved on)
/// is never written over the newer bytes.
struct RealFile {
  std::mutex mu;
  std::string path;                    ///< where it is now (rename moves it)
  int fd = -1;                         ///< read-write descriptor, opened on first need (-1)
  std::vector<std::uint16_t> current;  ///< per chunk: the version whose bytes belong in its range
  bool gone = false;                   ///< unlinked, or no longer cached: nothing more is written
  /// The descriptor (opened now if need be); -1 and errno when it cannot be.
  int descriptor();
  /// Whether version `v` of chunk `k` is the one that belongs in the file.
  bool is_current(std::uint64_t k, std::uint16_t v) const {
    return !gone && k < current.size() && current[k] == v;
  }
  ~RealFile();
};

/// The intercepted files by number, for the files tier's backend.
class Registry {
 public:
  /// The bytes of one chunk: chunk k of a file starts at k * chunk_bytes().
  std::uint64_t chunk_bytes() const noexcept { return chunk_bytes_; }
  void set_chunk_bytes(std::uint64_t bytes) noexcept { chunk_bytes_ = bytes; }
  void add(std::uint64_t file, std::shared_ptr<RealFile> f);
  std::shared_ptr<RealFile> find(std::uint64_t file) const;
  void remove(std::uint64_t file);

 private:
  mutable std::mutex mu_;
  std::map<std::uint64_t, std::shared_ptr<RealFile>> files_;
  std::uint64_t chunk_bytes_ = 16ull << 20;  ///< set once, before the runtime starts
};

/// The process's registry (the backend is made by a factory that cannot carry it).
Registry& registry();

/// Registers the files tier's backend (tiers::register_backend) for this process.
void register_files_tier();

}  // namespace mlbs::intercept

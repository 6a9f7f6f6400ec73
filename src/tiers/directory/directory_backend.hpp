// mlbs — directory tier: one file per record copy under <path>/<space>/.
#pragma once

#include <filesystem>

#include "tiers/backend.hpp"

namespace mlbs::tiers {

/// pread/pwrite backend. Files are named <id>-<generation>.rec (hex) so a
/// record rewritten under a reused id never shares a file with its old copy.
/// Unless desc().page_cache, a file leaves the OS page cache once it has been
/// written (fdatasync, then POSIX_FADV_DONTNEED) and once it has been read
/// (POSIX_FADV_DONTNEED when its reader closes), so transfers meet the device
/// as they would in a run whose data far exceeds RAM.
///
/// The io_uring + O_DIRECT variant (tiers/uring/) derives from it, keeps its
/// folders and names, and falls back to its pread objects.
class DirectoryBackend : public Backend {
 public:
  /// `fallback`: why this tier runs pread although io_backend = auto asked
  /// for better (shown in TierStats::io_fallback); empty if not.
  DirectoryBackend(int index, const Tier& desc, std::string fallback = {});
  std::filesystem::path object_path(const ObjectRef& ref) const;

 protected:
  const std::filesystem::path& root() const noexcept { return root_; }
  void do_probe() override;
  void do_create_space(const std::string& space) override;
  void do_remove_space(const std::string& space) noexcept override;
  std::unique_ptr<ObjectWriter> do_create(const ObjectRef& ref, std::uint64_t size) override;
  std::unique_ptr<ObjectReader> do_open(const ObjectRef& ref, std::uint64_t size) override;
  void do_remove(const ObjectRef& ref) override;
  std::string do_space_path(const std::string& space) const override;
  IoPath do_io_path() const override { return {"pread", fallback_}; }

  std::string fallback_;

 private:
  std::filesystem::path root_;
};

/// fsync of a folder, so entries created in it survive a crash; 0 or errno.
int sync_directory(const std::filesystem::path& dir) noexcept;

/// "<id>-<generation>.rec" in lower-case hex.
std::string object_file_name(std::uint64_t id, std::uint64_t generation);

}  // namespace mlbs::tiers

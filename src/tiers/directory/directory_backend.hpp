// mlbs — directory tier: records under <path>/<space>/, laid out as
// Config::layout says (tiers/directory/layout.hpp).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "tiers/backend.hpp"
#include "tiers/directory/layout.hpp"

namespace mlbs::tiers {

/// pread/pwrite backend. Where an object's bytes go is the layout's business
/// (a file <id>-<generation>.rec, hex, so a record rewritten under a reused
/// id never meets its old copy; or an extent of a log); this class moves them.
/// Unless desc().page_cache, an object leaves the OS page cache once it has
/// been written (fdatasync, then POSIX_FADV_DONTNEED) and once it has been
/// read (POSIX_FADV_DONTNEED when its reader closes), so transfers meet the
/// device as they would in a run whose data far exceeds RAM.
///
/// The io_uring + O_DIRECT variant (tiers/uring/) derives from it, shares its
/// layout, and falls back to its pread objects.
class DirectoryBackend : public Backend {
 public:
  /// `fallback`: why this tier runs pread although io_backend = auto asked
  /// for better (shown in TierStats::io_fallback); empty if not.
  DirectoryBackend(int index, const Tier& desc, std::string fallback = {});
  ~DirectoryBackend() override;
  /// Removes the scratch spaces under this tier whose runtime died (their
  /// owner lock is free); not on shared tiers. Called once at start-up.
  void remove_abandoned_scratch() noexcept;
  /// The file of an object in the file-per-record layout.
  std::filesystem::path object_path(const ObjectRef& ref) const;

 protected:
  ObjectLayout& layout() noexcept { return *layout_; }
  /// pread/pwrite objects over a placement (also the io_uring backend's fallback).
  std::unique_ptr<ObjectWriter> pread_writer(const ObjectRef& ref, std::unique_ptr<Placement> home);
  std::unique_ptr<ObjectReader> pread_reader(const ObjectRef& ref, std::unique_ptr<Placement> home);

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
  std::unique_ptr<ObjectLayout> layout_;
  std::mutex owners_mu_;
  std::map<std::string, int> owner_locks_;  ///< scratch space -> its flock()ed owner lock
};

/// fsync of a folder, so entries created in it survive a crash; 0 or errno.
int sync_directory(const std::filesystem::path& dir) noexcept;

/// "<id>-<generation>.rec" in lower-case hex.
std::string object_file_name(std::uint64_t id, std::uint64_t generation);
/// The inverse: (id, generation) of such a name; nullopt for any other name.
std::optional<std::pair<std::uint64_t, std::uint64_t>> parse_object_file_name(std::string_view name);

}  // namespace mlbs::tiers

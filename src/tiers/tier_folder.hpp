// mlbs — the folder of a file-system tier (directory, mpiio): its one
// spelling, and the checks every such tier makes before using it.
#pragma once

#include <filesystem>
#include <string>

namespace mlbs::tiers {

/// "/nvme/run/" and "/nvme/run" are one tier: the form whose parent_path()
/// is the parent folder.
std::filesystem::path normalised_tier_path(const std::string& path);

/// What stops a tier from using `root` as its folder (err = 0: nothing).
struct FolderProblem {
  int err = 0;
  std::string what;
  explicit operator bool() const noexcept { return err != 0; }
};

/// Creates `root` if only its last component is missing (a typo in a parent
/// must not silently create a tree somewhere unexpected), then checks it is a
/// writable folder. Names the component that is wrong: a missing parent, or
/// a file where a folder should be.
FolderProblem prepare_tier_folder(const std::filesystem::path& root);

}  // namespace mlbs::tiers

#include "tiers/backend.hpp"

#include <cerrno>

#include <fmt/format.h>

#include "tiers/directory/directory_backend.hpp"
#include "tiers/directory/layout.hpp"

namespace mlbs::tiers {

Backend::Backend(int index, Tier desc)
    : index_(index),
      desc_(std::move(desc)),
      label_(fmt::format("tier {} ({}{}{})", index, desc_.kind, desc_.path.empty() ? "" : " ",
                         desc_.path)) {}

void Backend::fail(int err, const std::string& what, const ObjectRef* ref) const {
  ErrorContext ctx{ref ? ref->store : std::string{}, {}, label_};
  if (ref) ctx.id = ref->id;
  switch (err) {
    case ENOSPC:
    case EDQUOT:
      throw DeviceFullError(err, what, std::move(ctx));
    case ENOENT:
    case ENOTDIR:
    case EACCES:
    case EPERM:
    case EROFS:
      throw TierError(err, what, std::move(ctx));
    default:
      throw IoError(err, what, std::move(ctx));
  }
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> Backend::do_list(const std::string& space) const {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (const std::filesystem::path& p : list_stored_objects(space_path(space)))
    if (const auto name = parse_object_file_name(p.filename().string())) out.push_back(*name);
  return out;
}

}  // namespace mlbs::tiers

#include "tiers/backend.hpp"

#include <cerrno>

#include <fmt/format.h>

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

}  // namespace mlbs::tiers

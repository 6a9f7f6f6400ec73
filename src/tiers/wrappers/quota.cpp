#include "tiers/wrappers/quota.hpp"

#include <algorithm>
#include <limits>

namespace mlbs::tiers {

std::uint64_t QuotaBackend::do_room() const {
  std::uint64_t room = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t held = used();
  if (limit_) room = limit_ > held ? limit_ - held : 0;
  // The node's share (max-min fair over what its ranks demand) and what the
  // node has left: what other ranks hold is not this one's to take.
  if (node_) {
    const std::uint64_t share = node_->limit();
    room = std::min({room, share > held ? share - held : 0, node_->node_free()});
  }
  return room;
}

bool QuotaBackend::do_reserve(std::uint64_t bytes) {
  const std::uint64_t held = used();
  if (limit_ && (bytes > limit_ || held > limit_ - bytes)) return false;
  return !node_ || node_->acquire(bytes);
}

void QuotaBackend::do_release(std::uint64_t bytes) {
  if (node_) node_->release(bytes);
}

}  // namespace mlbs::tiers

// mlbs — tier backends registered by name ("directory", later "mpiio", ...).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/group.hpp"
#include "tiers/backend.hpp"

namespace mlbs::tiers {

/// `group`: the ranks the runtime runs with (null: one process); backends
/// that coordinate ranks (mpiio) need it, the others ignore it.
using Factory = std::function<std::unique_ptr<Backend>(int index, const Tier& desc, const core::Group* group)>;

/// Registers a backend kind; a later registration of a name replaces the
/// earlier one, which is returned (empty if none) so it can be put back.
Factory register_backend(const std::string& kind, Factory factory);
/// Builds the backend for `desc.kind`; throws ConfigError for unknown kinds.
std::unique_ptr<Backend> make_backend(int index, const Tier& desc, const core::Group* group = nullptr);
std::vector<std::string> registered_kinds();

}  // namespace mlbs::tiers

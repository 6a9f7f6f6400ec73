// mlbs — tier backends registered by name ("directory", later "mpiio", ...).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tiers/backend.hpp"

namespace mlbs::tiers {

using Factory = std::function<std::unique_ptr<Backend>(int index, const Tier& desc)>;

/// Registers a backend kind; a later registration of a name replaces the
/// earlier one, which is returned (empty if none) so it can be put back.
Factory register_backend(const std::string& kind, Factory factory);
/// Builds the backend for `desc.kind`; throws ConfigError for unknown kinds.
std::unique_ptr<Backend> make_backend(int index, const Tier& desc);
std::vector<std::string> registered_kinds();

}  // namespace mlbs::tiers

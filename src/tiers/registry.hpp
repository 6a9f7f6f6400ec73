// mlbs — tier backends registered by name ("directory", later "mpiio", ...).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tiers/backend.hpp"

namespace mlbs::tiers {

using Factory = std::function<std::unique_ptr<Backend>(int index, const Tier& desc)>;

/// Registers a backend kind; later registrations of a name replace earlier ones.
void register_backend(const std::string& kind, Factory factory);
/// Builds the backend for `desc.kind`; throws ConfigError for unknown kinds.
std::unique_ptr<Backend> make_backend(int index, const Tier& desc);
std::vector<std::string> registered_kinds();

}  // namespace mlbs::tiers

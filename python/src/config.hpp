// mlbs Python bindings — mlbs.Config and mlbs.Tier: the C++ structs, with
// Python-friendly values (tier specs and size strings, schedules as a name or
// a list of ids, enums as their configuration names).
#pragma once

#include <nanobind/nanobind.h>

#include "mlbs/config.hpp"
#include "mlbs/stats.hpp"

namespace mlbs::python {

void bind_config(nanobind::module_& m);

/// Runtime.stats() and Store.info() as plain dicts (tiers: a list of dicts).
nanobind::dict to_dict(const Stats& s);
nanobind::dict to_dict(const RecordInfo& info);

}  // namespace mlbs::python

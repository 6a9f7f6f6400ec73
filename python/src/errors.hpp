// mlbs Python bindings — every mlbs::Error leaving a binding becomes the
// mlbs.Error subclass of the same name (python/mlbs/errors.py), with the
// errno, store, id and tier it carries as attributes.
#pragma once

#include <nanobind/nanobind.h>

namespace mlbs::python {

void bind_errors(nanobind::module_& m);

}  // namespace mlbs::python

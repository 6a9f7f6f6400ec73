// mlbs Python bindings — the extension module mlbs._mlbs, re-exported by the
// package mlbs (python/mlbs/__init__.py). Contract: DESIGN §4 "Python".
#include <nanobind/nanobind.h>

#include "arrays.hpp"
#include "config.hpp"
#include "errors.hpp"
#include "mlbs/version.hpp"
#include "runtime.hpp"

NB_MODULE(_mlbs, m) {
  m.doc() = "mlbs: snapshots cached and prefetched across storage tiers (C++ core)";
  m.attr("__version__") = MLBS_VERSION_STRING;
  mlbs::python::import_numpy();
  mlbs::python::bind_errors(m);
  mlbs::python::bind_config(m);
  mlbs::python::bind_runtime(m);
  mlbs::python::bind_reader(m);
}

// mlbs Python bindings — mlbs.Runtime, mlbs.Store and mlbs.Reader.
//
// Lifetime and threads: every blocking or copying call releases the GIL, so
// other Python threads run meanwhile. A runtime, store or reader may be
// closed from any thread at any time: close() waits for the calls in flight
// on it (they finish normally), and every later call raises
// mlbs.ShutdownError — never a crash. Stores keep their Runtime object alive;
// closing the runtime closes its stores first.
#pragma once

#include <nanobind/nanobind.h>

namespace mlbs::python {

void bind_runtime(nanobind::module_& m);
void bind_reader(nanobind::module_& m);

}  // namespace mlbs::python

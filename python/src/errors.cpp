// mlbs Python bindings — the error translation (errors.hpp). The classes
// themselves are Python (python/mlbs/errors.py: typed, documented, in the
// stubs); the package hands them over at import with _register_errors().
#include "errors.hpp"

#include <array>
#include <string>
#include <typeinfo>

#include "mlbs/errors.hpp"

namespace mlbs::python {

namespace nb = nanobind;

namespace {

struct Entry {
  const std::type_info* type;
  const char* name;
  PyObject* cls = nullptr;   ///< a strong reference, held for the process's life
};

// Every class of include/mlbs/errors.hpp; a C++ error's dynamic type names
// its Python class exactly (a class added in C++ and not here maps to Error).
std::array<Entry, 14> table = {{
    {&typeid(Error), "Error"},
    {&typeid(ConfigError), "ConfigError"},
    {&typeid(InvalidArgumentError), "InvalidArgumentError"},
    {&typeid(UnknownIdError), "UnknownIdError"},
    {&typeid(DuplicateIdError), "DuplicateIdError"},
    {&typeid(SizeMismatchError), "SizeMismatchError"},
    {&typeid(TierError), "TierError"},
    {&typeid(CapacityError), "CapacityError"},
    {&typeid(DeviceFullError), "DeviceFullError"},
    {&typeid(IoError), "IoError"},
    {&typeid(CorruptionError), "CorruptionError"},
    {&typeid(StoreBusyError), "StoreBusyError"},
    {&typeid(ShutdownError), "ShutdownError"},
    {&typeid(MpiError), "MpiError"},
}};

PyObject* class_for(const Error& e) {
  for (const Entry& entry : table)
    if (*entry.type == typeid(e)) return entry.cls;
  return table[0].cls;
}

nb::object text_or_none(const std::string& s) { return s.empty() ? nb::none() : nb::object(nb::str(s.c_str())); }

void raise(const Error& e) {
  PyObject* cls = class_for(e);
  if (!cls) {   // only before the package registered its classes
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return;
  }
  nb::object err = nb::borrow(cls)(nb::str(e.what()));
  const ErrorContext& ctx = e.context();
  nb::setattr(err, "errno", nb::int_(e.error_code()));
  nb::setattr(err, "message", nb::str(e.message().c_str()));
  nb::setattr(err, "store", text_or_none(ctx.store));
  nb::setattr(err, "id", ctx.id ? nb::object(nb::int_(*ctx.id)) : nb::none());
  nb::setattr(err, "tier", text_or_none(ctx.tier));
  if (const auto* c = dynamic_cast<const ConfigError*>(&e)) {
    nb::setattr(err, "field", nb::str(c->field().c_str()));
    nb::setattr(err, "source", text_or_none(c->source()));
    nb::setattr(err, "line", c->line() ? nb::object(nb::int_(c->line())) : nb::none());
  }
  PyErr_SetObject(cls, err.ptr());
}

}  // namespace

void bind_errors(nb::module_& m) {
  m.def(
      "_register_errors",
      [](nb::handle module) {
        for (Entry& entry : table) {
          if (!nb::hasattr(module, entry.name))
            throw nb::attribute_error((std::string("mlbs error class missing: ") + entry.name).c_str());
          nb::object cls = module.attr(entry.name);
          Py_XDECREF(entry.cls);
          entry.cls = cls.release().ptr();
        }
      },
      nb::arg("module"), "Internal: the package's error classes (python/mlbs/errors.py).");

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      raise(e);
    }
  });
}

}  // namespace mlbs::python

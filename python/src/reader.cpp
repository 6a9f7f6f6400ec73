// mlbs Python bindings — Reader: another process's read-only view of a
// running writer's store (DESIGN §4, docs/readers.md).
#include <chrono>
#include <cstring>
#include <memory>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "arrays.hpp"
#include "mlbs/errors.hpp"
#include "mlbs/reader.hpp"
#include "runtime.hpp"

namespace mlbs::python {

namespace {

class PyReader {
 public:
  PyReader(const Config& cfg, std::string name, ArraySpec spec, int rank)
      : spec_(std::move(spec)),
        cache_(std::make_shared<BlockCache>(spec_.nbytes)),
        name_(std::move(name)),
        label_("reader of store '" + name_ + "'") {
    nb::gil_scoped_release unlocked;
    core_ = std::make_unique<detail::ReaderCore>(cfg, name_, rank);
  }

  std::vector<std::uint64_t> ids() {
    nb::gil_scoped_release unlocked;
    std::shared_lock lock(mu_);
    return core().ids();
  }
  bool wait(std::uint64_t id, double timeout_s) {
    if (!(timeout_s >= 0)) throw nb::value_error("wait: timeout_s must be >= 0 seconds");
    nb::gil_scoped_release unlocked;
    std::shared_lock lock(mu_);
    return core().wait(id, std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(timeout_s)));
  }
  nb::object read(std::uint64_t id, nb::handle out) {
    if (out.is_none()) {
      detail::Block block;
      {
        nb::gil_scoped_release unlocked;
        std::shared_lock lock(mu_);
        const detail::ReaderCore& r = core();
        block = cache_->take();
        r.read(id, block.data(), spec_.nbytes, spec_.itemsize);
      }
      return adopt(std::move(block), spec_, cache_);
    }
    const AnyArray a = spec_.check_out(out, label_, "read");
    {
      nb::gil_scoped_release unlocked;
      std::shared_lock lock(mu_);
      const detail::ReaderCore& r = core();
      if (c_contiguous(a)) {
        r.read(id, static_cast<std::byte*>(const_cast<void*>(a.data())), spec_.nbytes, spec_.itemsize);
      } else {
        detail::Block block = cache_->take();
        r.read(id, block.data(), spec_.nbytes, spec_.itemsize);
        unpack(a, block.data());
        cache_->give(std::move(block));
      }
    }
    return nb::borrow(out);
  }
  void close() {
    nb::gil_scoped_release unlocked;
    std::unique_lock lock(mu_);
    core_.reset();
  }
  bool is_closed() {
    std::shared_lock lock(mu_);
    return !core_;
  }
  const std::string& name() const { return name_; }
  const ArraySpec& spec() const { return spec_; }

 private:
  const detail::ReaderCore& core() {
    if (!core_) throw ShutdownError(ESHUTDOWN, "reader is closed", {name_, {}, {}});
    return *core_;
  }

  ArraySpec spec_;
  std::shared_ptr<BlockCache> cache_;
  std::string name_;
  std::string label_;   ///< "reader of store 'name'", for messages
  std::shared_mutex mu_;   ///< calls shared, close() exclusive
  std::unique_ptr<detail::ReaderCore> core_;
};

}  // namespace

void bind_reader(nb::module_& m) {
  nb::class_<PyReader>(m, "Reader",
                       "Read-only view of a store that a running writer (another process) fills; its config\n"
                       "must be the writer's (same tiers and durability). Reads records that reached a file tier.")
      .def(
          "__init__",
          [](PyReader* self, const Config& cfg, std::string name, nb::handle shape, nb::handle dtype, int rank) {
            new (self) PyReader(cfg, std::move(name), ArraySpec::from_python(shape, dtype), rank);
          },
          nb::arg("config"), nb::arg("name"), nb::arg("shape"), nb::arg("dtype") = nb::none(), nb::arg("rank") = 0,
          nb::sig("def __init__(self, config: Config, name: str, shape: int | collections.abc.Sequence[int], "
                  "dtype: numpy.typing.DTypeLike = None, rank: int = 0) -> None"))
      .def("ids", &PyReader::ids, "Ids readable now, ascending.")
      .def("wait", &PyReader::wait, nb::arg("id"), nb::arg("timeout_s"),
           "True once record id is readable; False when timeout_s passes first. ShutdownError when the\n"
           "writer closes the store or dies.")
      .def("read", &PyReader::read, nb::arg("id"), nb::arg("out") = nb::none(),
           nb::sig("def read(self, id: int, out: numpy.ndarray | None = None) -> numpy.ndarray"),
           "The exact bytes of readable record id (checked against its checksum), into out or a new array.")
      .def("close", &PyReader::close)
      .def_prop_ro("closed", &PyReader::is_closed)
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__exit__", [](PyReader& r, nb::handle, nb::handle, nb::handle) { r.close(); },
           nb::arg("exc_type").none(), nb::arg("exc").none(), nb::arg("tb").none())
      .def_prop_ro("name", &PyReader::name)
      .def_prop_ro("shape", [](const PyReader& r) { return r.spec().shape_tuple(); })
      .def_prop_ro("dtype", [](const PyReader& r) { return r.spec().np_dtype; });
}

}  // namespace mlbs::python

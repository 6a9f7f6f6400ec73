// mlbs Python bindings — Runtime and Store (runtime.hpp).
#include "runtime.hpp"

#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "arrays.hpp"
#include "config.hpp"
#include "copy/copy.hpp"
#include "mlbs/detail/store_core.hpp"
#include "mlbs/errors.hpp"
#include "mlbs/runtime.hpp"

namespace mlbs::python {

namespace {

// What the store's codec is told of its arrays: float32/float64 (ZFP takes
// only those) and, for 3-D and higher arrays, their planes (the last two
// axes, C order), which ZFP codes in 3-D.
detail::ElementKind element_kind(const ArraySpec& spec) {
  if (spec.dtype.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float)) {
    if (spec.dtype.bits == 32) return detail::ElementKind::float32;
    if (spec.dtype.bits == 64) return detail::ElementKind::float64;
  }
  return detail::ElementKind::bytes;
}
// An array's last axes as the store's layout for ZFP: rows for a 2-D array,
// planes for 3-D and higher, flat for 1-D.
std::uint32_t plane_axis(const ArraySpec& spec, std::size_t from_end) {
  const std::size_t n = spec.shape.size();
  if (n < from_end + 1 || spec.shape[n - from_end] > UINT32_MAX) return 0;
  return static_cast<std::uint32_t>(spec.shape[n - from_end]);
}
std::uint32_t plane_nx(const ArraySpec& spec) { return plane_axis(spec, 1); }
std::uint32_t plane_ny(const ArraySpec& spec) { return plane_axis(spec, 2); }

// What a Runtime and its stores share. `mu` orders calls against close():
// calls hold it shared (with the GIL released), close() exclusively.
struct Shared {
  std::shared_mutex mu;
  std::unique_ptr<Runtime> rt;
  std::vector<std::weak_ptr<std::unique_ptr<detail::StoreCore>>> stores;
};

[[noreturn]] void closed(const std::string& what, const std::string& store = {}) {
  throw ShutdownError(ESHUTDOWN, what + " is closed", {store, {}, {}});
}

class PyStore;

class PyRuntime {
 public:
  explicit PyRuntime(Config cfg) : shared_(std::make_shared<Shared>()) {
    nb::gil_scoped_release unlocked;   // construction starts threads and may recover stores
    shared_->rt = std::make_unique<Runtime>(std::move(cfg));
  }
  ~PyRuntime() { shutdown(); }   // holds the GIL: Python is dropping the object

  // Drains what durability owes, stops the helpers, closes the stores.
  void close() {
    nb::gil_scoped_release unlocked;
    shutdown();
  }
  bool is_closed() {
    std::shared_lock lock(shared_->mu);
    return !shared_->rt;
  }
  nb::dict stats() {
    Stats s;
    {
      nb::gil_scoped_release unlocked;
      std::shared_lock lock(shared_->mu);
      s = runtime().stats();
    }
    return to_dict(s);
  }
  Config config() {
    std::shared_lock lock(shared_->mu);
    return runtime().config();
  }
  int rank() {
    std::shared_lock lock(shared_->mu);
    return runtime().rank();
  }
  int ranks() {
    std::shared_lock lock(shared_->mu);
    return runtime().ranks();
  }
  const std::shared_ptr<Shared>& shared() const { return shared_; }

 private:
  Runtime& runtime() {
    if (!shared_->rt) closed("runtime");
    return *shared_->rt;
  }
  void shutdown() noexcept {
    std::unique_lock lock(shared_->mu);
    for (auto& weak : shared_->stores)
      if (auto core = weak.lock()) core->reset();
    shared_->stores.clear();
    shared_->rt.reset();
  }

  std::shared_ptr<Shared> shared_;
};

/// `parts=`: a count, or "auto" (StoreOptions::kAutoParts).
std::uint32_t part_count(nb::handle parts) {
  if (nb::isinstance<nb::str>(parts)) {
    if (nb::cast<std::string>(parts) == "auto") return StoreOptions::kAutoParts;
  } else if (nb::isinstance<nb::int_>(parts) && !nb::isinstance<nb::bool_>(parts)) {
    // The store names a count it does not take (0, more than kMaxParts); one
    // no uint32 holds is refused here.
    if (const long long k = nb::cast<long long>(parts); k >= 0 && k < StoreOptions::kAutoParts)
      return static_cast<std::uint32_t>(k);
    throw InvalidArgumentError(EINVAL, "parts= is " + nb::cast<std::string>(nb::str(parts)) +
                                           ": give a count of parts (1 to 64) or \"auto\"");
  }
  throw nb::type_error("parts= takes a count of parts or \"auto\"");
}

class PyStore {
 public:
  PyStore(PyRuntime& rt, std::string name, ArraySpec spec, std::string codec, std::uint32_t parts)
      : shared_(rt.shared()),
        spec_(std::move(spec)),
        cache_(std::make_shared<BlockCache>(spec_.nbytes)),
        core_(std::make_shared<std::unique_ptr<detail::StoreCore>>()),
        name_(std::move(name)),
        label_("store '" + name_ + "'") {
    nb::gil_scoped_release unlocked;   // a persistent store recovers here
    std::unique_lock lock(shared_->mu);
    if (!shared_->rt) closed("runtime", name_);
    StoreOptions options{std::move(codec), plane_nx(spec_), plane_ny(spec_)};
    options.parts = parts;
    *core_ = std::make_unique<detail::StoreCore>(*shared_->rt, name_, element_kind(spec_), options, spec_.nbytes);
    shared_->stores.push_back(core_);
  }

  void write(std::uint64_t id, nb::handle array) {
    const AnyArray a = spec_.check(array, label_, "write");
    nb::gil_scoped_release unlocked;
    std::shared_lock lock(shared_->mu);
    detail::StoreCore& s = core();
    if (c_contiguous(a)) {
      s.write(id, static_cast<const std::byte*>(a.data()), spec_.nbytes);
      return;
    }
    detail::Block staging = cache_->take();
    pack(staging.data(), a);
    s.write(id, staging.data(), spec_.nbytes);
    cache_->give(std::move(staging));
  }

  nb::object read(std::uint64_t id, nb::handle out) {
    if (out.is_none()) {
      detail::Block block;
      {
        nb::gil_scoped_release unlocked;
        std::shared_lock lock(shared_->mu);
        detail::StoreCore& s = core();
        block = cache_->take();
        s.read_exact(id, block, spec_.nbytes);
      }
      return adopt(std::move(block), spec_, cache_);
    }
    const AnyArray a = spec_.check_out(out, label_, "read");
    {
      nb::gil_scoped_release unlocked;
      std::shared_lock lock(shared_->mu);
      detail::StoreCore& s = core();
      detail::Block block = cache_->take();
      s.read_exact(id, block, spec_.nbytes);
      if (c_contiguous(a))   // the library's copy: streaming stores and its copy team, as write() has
        copy::bulk(const_cast<void*>(a.data()), block.data(), spec_.nbytes);
      else
        unpack(a, block.data());
      cache_->give(std::move(block));
    }
    return nb::borrow(out);
  }

  // The C++ baseline of benchmarks/python_overhead.py: the calls that write()
  // and read() make, in a C++ loop over `ids` (what a C++ program's
  // Store<T>::write/read do), in this process on this store. Returns ns.
  std::uint64_t native_loop(const std::string& op, const std::vector<std::uint64_t>& ids, nb::handle array) {
    const AnyArray a = spec_.check(array, label_, "_native_loop");
    if (!c_contiguous(a)) throw nb::value_error("_native_loop: the array must be C-contiguous");
    nb::gil_scoped_release unlocked;
    std::shared_lock lock(shared_->mu);
    detail::StoreCore& s = core();
    auto* data = static_cast<std::byte*>(const_cast<void*>(a.data()));
    detail::Block block = cache_->take();
    const auto start = std::chrono::steady_clock::now();
    if (op == "write") {
      for (std::uint64_t id : ids) s.write(id, data, spec_.nbytes);
    } else if (op == "read") {
      for (std::uint64_t id : ids) s.read_exact(id, block, spec_.nbytes);
    } else if (op == "read_out") {
      for (std::uint64_t id : ids) {
        s.read_exact(id, block, spec_.nbytes);
        copy::bulk(data, block.data(), spec_.nbytes);
      }
    } else {
      throw InvalidArgumentError(EINVAL, "_native_loop: op is write, read or read_out, not '" + op + "'");
    }
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
    cache_->give(std::move(block));
    return static_cast<std::uint64_t>(ns.count());
  }

  bool contains(std::uint64_t id) {
    std::shared_lock lock(shared_->mu);
    return core().contains(id);
  }
  void erase(std::uint64_t id) {
    nb::gil_scoped_release unlocked;
    std::shared_lock lock(shared_->mu);
    core().erase(id);
  }
  std::vector<std::uint64_t> ids() {
    std::shared_lock lock(shared_->mu);
    return core().ids();
  }
  void flush() {
    nb::gil_scoped_release unlocked;
    std::shared_lock lock(shared_->mu);
    core().flush();
  }
  nb::dict info(std::uint64_t id) {
    RecordInfo r;
    {
      std::shared_lock lock(shared_->mu);
      r = core().info(id);
    }
    return to_dict(r);
  }
  void close() {
    nb::gil_scoped_release unlocked;
    std::unique_lock lock(shared_->mu);
    core_->reset();
  }
  bool is_closed() {
    std::shared_lock lock(shared_->mu);
    return !*core_;
  }
  const std::string& name() const { return name_; }
  const ArraySpec& spec() const { return spec_; }
  std::uint32_t parts() {
    std::shared_lock lock(shared_->mu);
    return core().parts();
  }

 private:
  detail::StoreCore& core() {
    if (!*core_) closed("store '" + name_ + "'", name_);
    return **core_;
  }

  std::shared_ptr<Shared> shared_;
  ArraySpec spec_;
  std::shared_ptr<BlockCache> cache_;
  std::shared_ptr<std::unique_ptr<detail::StoreCore>> core_;   ///< reset by close() of either
  std::string name_;
  std::string label_;   ///< "store 'name'", for messages
};

}  // namespace

void bind_runtime(nb::module_& m) {
  nb::class_<PyRuntime>(m, "Runtime",
                        "Starts the helper engine; close() (or leaving a with block) drains what durability owes\n"
                        "and stops it. Stores keep their runtime alive.")
      .def(nb::init<Config>(), nb::arg("config") = Config{})
      .def("close", &PyRuntime::close, "Closes the stores, drains, stops the helpers. Idempotent.")
      .def_prop_ro("closed", &PyRuntime::is_closed)
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__exit__", [](PyRuntime& rt, nb::handle, nb::handle, nb::handle) { rt.close(); },
           nb::arg("exc_type").none(), nb::arg("exc").none(), nb::arg("tb").none())
      .def(
          "store",
          [](PyRuntime& rt, std::string name, nb::handle shape, nb::handle dtype, std::optional<std::string> codec,
             nb::handle parts) {
            return new PyStore(rt, std::move(name), ArraySpec::from_python(shape, dtype), codec.value_or(""),
                               part_count(parts));
          },
          nb::arg("name"), nb::arg("shape"), nb::arg("dtype") = nb::none(), nb::kw_only(),
          nb::arg("codec") = nb::none(), nb::arg("parts") = 1, nb::keep_alive<0, 1>(),
          nb::sig("def store(self, name: str, shape: int | collections.abc.Sequence[int], dtype: "
                  "numpy.typing.DTypeLike = None, *, codec: str | None = None, parts: int | str = 1) -> Store"),
          "A store of arrays of that shape and dtype (default float64); persistent stores recover here. "
          "codec: the store's own (\"zstd:3\", \"zfp:precision=20\", \"none\" ...) instead of the runtime's. "
          "parts: each record kept as that many parts, or \"auto\": the store chooses from the array's size and "
          "DRAM (docs/parts.md; a persistent store reopens with the count it was written with).")
      .def("stats", &PyRuntime::stats, "The catalog's counters: a dict, 'tiers' a list of dicts.")
      .def_prop_ro("config", &PyRuntime::config)
      .def_prop_ro("rank", &PyRuntime::rank)
      .def_prop_ro("ranks", &PyRuntime::ranks);

  nb::class_<PyStore>(m, "Store", "Records of one shape and dtype; made by Runtime.store().")
      .def("write", &PyStore::write, nb::arg("id"), nb::arg("array"),
           nb::sig("def write(self, id: int, array: numpy.typing.ArrayLike) -> None"),
           "Copies array (the store's shape and dtype, any strides) as record id; it may change at once.")
      .def("read", &PyStore::read, nb::arg("id"), nb::arg("out") = nb::none(),
           nb::sig("def read(self, id: int, out: numpy.ndarray | None = None) -> numpy.ndarray"),
           "Record id: into out (writable, the store's shape and dtype, any strides) and returns it,\n"
           "or as a new array.")
      .def("_native_loop", &PyStore::native_loop, nb::arg("op"), nb::arg("ids"), nb::arg("array"),
           "Benchmark support (benchmarks/python_overhead.py): the same calls in a C++ loop; ns.")
      .def("contains", &PyStore::contains, nb::arg("id"))
      .def("__contains__", &PyStore::contains, nb::arg("id"))
      .def("erase", &PyStore::erase, nb::arg("id"))
      .def("ids", &PyStore::ids, "Ids held, ascending.")
      .def("flush", &PyStore::flush, "Returns once every record written before is durable (persistent mode).")
      .def("info", &PyStore::info, nb::arg("id"), "What the catalog knows of record id (tiers, lineage, ...).")
      .def("close", &PyStore::close, "Closes this store (its records stay in the runtime). Idempotent.")
      .def_prop_ro("closed", &PyStore::is_closed)
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__exit__", [](PyStore& s, nb::handle, nb::handle, nb::handle) { s.close(); },
           nb::arg("exc_type").none(), nb::arg("exc").none(), nb::arg("tb").none())
      .def_prop_ro("name", &PyStore::name)
      .def_prop_ro("shape", [](const PyStore& s) { return s.spec().shape_tuple(); })
      .def_prop_ro("dtype", [](const PyStore& s) { return s.spec().np_dtype; })
      .def_prop_ro("nbytes", [](const PyStore& s) { return s.spec().nbytes; })
      .def_prop_ro("parts", &PyStore::parts, "The parts each record is kept in (1: whole), as chosen for \"auto\".")
      .def("__repr__", [](const PyStore& s) { return "mlbs.Store('" + s.name() + "', " + s.spec().describe() + ")"; });
}

}  // namespace mlbs::python

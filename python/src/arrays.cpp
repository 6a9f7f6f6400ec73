// mlbs Python bindings — arrays in and out of records (arrays.hpp).
#include "arrays.hpp"

#include <cstring>
#include <limits>
#include <utility>

// numpy's C API makes the arrays read() returns: ~0.7 us less per call than
// nanobind's export, which goes through numpy.asarray and the buffer protocol.
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL mlbs_python_ARRAY_API
#include <numpy/arrayobject.h>

namespace mlbs::python {

namespace {

std::string dtype_name(nb::dlpack::dtype d) {
  using Code = nb::dlpack::dtype_code;
  const std::string bits = std::to_string(d.bits);
  switch (static_cast<Code>(d.code)) {
    case Code::Int: return "int" + bits;
    case Code::UInt: return "uint" + bits;
    case Code::Float: return "float" + bits;
    case Code::Complex: return "complex" + bits;
    case Code::Bool: return "bool";
    case Code::Bfloat: return "bfloat" + bits;
    default: return "dtype(code " + std::to_string(d.code) + ", " + bits + " bits)";
  }
}

std::string shape_text(const std::size_t* shape, std::size_t ndim) {
  std::string s = "(";
  for (std::size_t i = 0; i < ndim; ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (ndim == 1 ? ",)" : ")");
}

std::string where(std::string_view who, std::string_view op) {
  return std::string(who) + " " + std::string(op);
}

std::string given_text(const AnyArray& a) {
  std::vector<std::size_t> shape(a.ndim());
  for (std::size_t i = 0; i < a.ndim(); ++i) shape[i] = a.shape(i);
  return dtype_name(a.dtype()) + " of shape " + shape_text(shape.data(), shape.size());
}

// The strided walk behind pack and unpack: `inner` copies the last
// dimension's run of elements; every other dimension is an odometer.
template <class Inner>
void walk(const AnyArray& a, Inner&& inner) {
  const std::size_t ndim = a.ndim();
  const std::size_t item = a.itemsize();
  if (ndim == 0) return inner(static_cast<const std::byte*>(a.data()), std::int64_t(item), std::size_t{1});
  for (std::size_t i = 0; i < ndim; ++i)
    if (a.shape(i) == 0) return;
  const auto* base = static_cast<const std::byte*>(a.data());
  const std::size_t last = ndim - 1;
  std::vector<std::size_t> index(ndim, 0);
  for (;;) {
    const std::byte* p = base;
    for (std::size_t i = 0; i < last; ++i) p += std::int64_t(index[i]) * a.stride(i) * std::int64_t(item);
    inner(p, a.stride(last) * std::int64_t(item), a.shape(last));
    std::size_t d = last;
    while (d > 0) {
      --d;
      if (++index[d] < a.shape(d)) break;
      index[d] = 0;
      if (d == 0) return;
    }
    if (last == 0) return;
  }
}

template <std::size_t N>
void gather(std::byte* dst, const std::byte* src, std::int64_t stride, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i, dst += N, src += stride) std::memcpy(dst, src, N);
}
template <std::size_t N>
void scatter(std::byte* dst, std::int64_t stride, const std::byte* src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i, dst += stride, src += N) std::memcpy(dst, src, N);
}

// One run of n elements of `item` bytes, `stride` bytes apart on the array's
// side, packed on the record's side.
void copy_run(std::byte* packed, const std::byte* strided, std::int64_t stride, std::size_t n, std::size_t item,
              bool to_packed) {
  if (stride == std::int64_t(item)) {
    to_packed ? std::memcpy(packed, strided, n * item) : std::memcpy(const_cast<std::byte*>(strided), packed, n * item);
    return;
  }
  auto* s = const_cast<std::byte*>(strided);
  switch (item) {   // fixed-size copies compile to single moves
#define MLBS_RUN(N) \
  case N: to_packed ? gather<N>(packed, s, stride, n) : scatter<N>(s, stride, packed, n); return;
    MLBS_RUN(1) MLBS_RUN(2) MLBS_RUN(4) MLBS_RUN(8) MLBS_RUN(16)
#undef MLBS_RUN
    default:
      for (std::size_t i = 0; i < n; ++i, packed += item, s += stride)
        to_packed ? std::memcpy(packed, s, item) : std::memcpy(s, packed, item);
  }
}

}  // namespace

ArraySpec ArraySpec::from_python(nb::handle shape, nb::handle dtype) {
  ArraySpec spec;
  nb::object np = nb::module_::import_("numpy");
  try {
    spec.np_dtype = np.attr("dtype")(dtype);
  } catch (nb::python_error&) {
    throw nb::type_error(("dtype: " + std::string(nb::str(nb::repr(dtype)).c_str()) +
                          " is not a numpy dtype").c_str());
  }
  const std::string kind = nb::cast<std::string>(spec.np_dtype.attr("kind"));
  const std::string order = nb::cast<std::string>(spec.np_dtype.attr("byteorder"));
  spec.itemsize = nb::cast<std::size_t>(spec.np_dtype.attr("itemsize"));
  using Code = nb::dlpack::dtype_code;
  Code code;
  if (kind == "f") code = Code::Float;
  else if (kind == "i") code = Code::Int;
  else if (kind == "u") code = Code::UInt;
  else if (kind == "c") code = Code::Complex;
  else if (kind == "b") code = Code::Bool;
  else
    throw nb::type_error(("dtype: " + std::string(nb::str(spec.np_dtype).c_str()) +
                          " is not numeric (expected a bool, int, uint, float or complex dtype)").c_str());
  if (order == ">" || nb::len(nb::object(spec.np_dtype.attr("shape"))) != 0)
    throw nb::type_error(("dtype: " + std::string(nb::str(spec.np_dtype).c_str()) +
                          " is not a native-order scalar dtype").c_str());
  spec.dtype = {static_cast<std::uint8_t>(code), static_cast<std::uint8_t>(spec.itemsize * 8), 1};

  std::vector<nb::handle> dims;
  nb::object shape_obj = nb::borrow(shape);
  if (nb::isinstance<nb::int_>(shape)) shape_obj = nb::make_tuple(shape);
  try {
    for (nb::handle d : shape_obj) dims.push_back(d);
  } catch (nb::python_error&) {
    throw nb::type_error("shape: expected an int or a sequence of ints");
  }
  if (dims.size() > NPY_MAXDIMS)
    throw nb::value_error(("shape: " + std::to_string(dims.size()) + " dimensions (numpy allows at most " +
                           std::to_string(NPY_MAXDIMS) + ")").c_str());
  spec.nbytes = spec.itemsize;
  for (nb::handle d : dims) {
    // Anything with __index__ (Python and numpy integers), not floats.
    nb::object index = nb::steal(PyNumber_Index(d.ptr()));
    long long n = 0;
    if (!index.is_valid() || !nb::try_cast<long long>(index, n, false)) {
      PyErr_Clear();
      throw nb::type_error(("shape: " + std::string(nb::str(nb::repr(d)).c_str()) + " is not an int").c_str());
    }
    if (n < 0) throw nb::value_error(("shape: dimension " + std::to_string(n) + " is negative").c_str());
    const auto u = static_cast<std::size_t>(n);
    if (u && spec.nbytes > std::numeric_limits<std::size_t>::max() / u)
      throw nb::value_error("shape: the array's byte size overflows");
    spec.nbytes *= u;
    spec.shape.push_back(u);
  }
  return spec;
}

std::string ArraySpec::describe() const {
  return dtype_name(dtype) + " arrays of shape " + shape_text(shape.data(), shape.size());
}

nb::tuple ArraySpec::shape_tuple() const {
  nb::list l;
  for (std::size_t d : shape) l.append(d);
  return nb::tuple(l);
}

AnyArray ArraySpec::check(nb::handle array, std::string_view who, std::string_view op) const {
  AnyArray a;
  if (!nb::try_cast<AnyArray>(array, a, false))
    throw nb::type_error((where(who, op) + ": expected " + describe() + ", got " +
                          nb::type_name(array.type()).c_str()).c_str());
  verify(a, who, op);
  return a;
}

void ArraySpec::verify(const AnyArray& a, std::string_view who, std::string_view op) const {
  if (a.dtype() != dtype)
    throw nb::type_error((where(who, op) + ": expected " + describe() + ", got " + given_text(a)).c_str());
  bool same = a.ndim() == shape.size();
  for (std::size_t i = 0; same && i < shape.size(); ++i) same = a.shape(i) == shape[i];
  if (!same) throw nb::value_error((where(who, op) + ": expected " + describe() + ", got " + given_text(a)).c_str());
}

AnyArray ArraySpec::check_out(nb::handle array, std::string_view who, std::string_view op) const {
  // Writable arrays only (nanobind refuses read-only ones for a non-ro view);
  // the ro view tells a read-only array from something that is no array.
  nb::ndarray<nb::device::cpu> writable;
  if (!nb::try_cast(array, writable, false)) {
    AnyArray any;
    if (nb::try_cast(array, any, false))
      throw nb::value_error((where(who, op) + ": out= is read-only (expected writable " + describe() + ")").c_str());
    throw nb::type_error((where(who, op) + ": out= must be a writable array of " + describe() + ", got " +
                          nb::type_name(array.type()).c_str()).c_str());
  }
  AnyArray a(writable);
  verify(a, who, op);
  return a;
}

bool c_contiguous(const AnyArray& a) {
  std::int64_t expect = 1;
  for (std::size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) == 1) continue;
    if (a.stride(i) != expect) return false;
    expect *= std::int64_t(a.shape(i));
  }
  return true;
}

void pack(std::byte* dst, const AnyArray& a) {
  const std::size_t item = a.itemsize();
  walk(a, [&](const std::byte* p, std::int64_t stride, std::size_t n) {
    copy_run(dst, p, stride, n, item, true);
    dst += n * item;
  });
}

void unpack(const AnyArray& a, const std::byte* src) {
  const std::size_t item = a.itemsize();
  walk(a, [&](const std::byte* p, std::int64_t stride, std::size_t n) {
    copy_run(const_cast<std::byte*>(src), p, stride, n, item, false);
    src += n * item;
  });
}

detail::Block BlockCache::take() {
  {
    std::lock_guard lock(mu_);
    if (!blocks_.empty()) {
      detail::Block b = std::move(blocks_.back());
      blocks_.pop_back();
      return b;
    }
  }
  return detail::Block::allocate(bytes_);
}

void BlockCache::give(detail::Block b) noexcept {
  // Only blocks a swap can use again: exactly a slot's capacity for a record.
  if (!b || b.capacity() != detail::round_up_block(bytes_)) return;
  std::lock_guard lock(mu_);
  if (blocks_.size() < kKeep) blocks_.push_back(std::move(b));
}

namespace {
struct Owned {
  detail::Block block;
  std::weak_ptr<BlockCache> cache;
};
}  // namespace

nb::object adopt(detail::Block block, const ArraySpec& spec, const std::shared_ptr<BlockCache>& cache) {
  void* data = block.data();
  auto* owned = new Owned{std::move(block), cache};
  nb::capsule owner(owned, [](void* p) noexcept {
    auto* o = static_cast<Owned*>(p);
    if (auto c = o->cache.lock()) c->give(std::move(o->block));
    delete o;
  });
  // An empty record has no block: numpy still needs a valid pointer.
  static std::byte empty[detail::kBlockAlign];
  npy_intp dims[NPY_MAXDIMS];
  for (std::size_t i = 0; i < spec.shape.size(); ++i) dims[i] = static_cast<npy_intp>(spec.shape[i]);
  auto* descr = reinterpret_cast<PyArray_Descr*>(spec.np_dtype.ptr());
  Py_INCREF(descr);  // PyArray_NewFromDescr steals it
  PyObject* arr = PyArray_NewFromDescr(&PyArray_Type, descr, static_cast<int>(spec.shape.size()), dims, nullptr,
                                       data ? data : empty, NPY_ARRAY_CARRAY, nullptr);
  if (!arr) throw nb::python_error();
  // The array owns the block through its base (the capsule gives it back).
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(arr), owner.release().ptr()) != 0) {
    Py_DECREF(arr);
    throw nb::python_error();
  }
  return nb::steal(arr);
}

void import_numpy() {
  if (_import_array() < 0) throw nb::python_error();
}

}  // namespace mlbs::python

#include "mlbs/detail/store_core.hpp"

#include <fmt/format.h>

#include "engine/engine.hpp"
#include "mlbs/errors.hpp"
#include "mlbs/runtime.hpp"

#if MLBS_HAVE_MPI
#include "mpi/group.hpp"
#endif

namespace mlbs::detail {

namespace {
codec::Element codec_element(ElementKind k) {
  switch (k) {
    case ElementKind::float32: return codec::Element::float32;
    case ElementKind::float64: return codec::Element::float64;
    default: return codec::Element::any;
  }
}

/// The elements the options say, where the type leaves it open.
ElementKind resolve(ElementKind from_type, StoreOptions::Elements given, const std::string& store) {
  if (given == StoreOptions::Elements::from_type) return from_type;
  const ElementKind said = given == StoreOptions::Elements::float32 ? ElementKind::float32 : ElementKind::float64;
  if (from_type != ElementKind::bytes && from_type != said)
    throw InvalidArgumentError(EINVAL,
                               fmt::format("StoreOptions::elements says {} but the store's elements are {}",
                                           said == ElementKind::float32 ? "float32" : "float64",
                                           from_type == ElementKind::float32   ? "float"
                                           : from_type == ElementKind::float64 ? "double"
                                                                               : "of another type"),
                               {store, {}, {}});
  return said;
}
}  // namespace

StoreCore::StoreCore(Runtime& rt, std::string name, ElementKind element, std::uint32_t plane_nx,
                     std::uint32_t plane_ny)
    : StoreCore(rt, std::move(name), element, StoreOptions{{}, plane_nx, plane_ny}) {}

StoreCore::StoreCore(Runtime& rt, std::string name, ElementKind element, const StoreOptions& options)
    : engine_(rt.engine_),
      handle_(engine_->open_store(name, codec_element(resolve(element, options.elements, name)),
                                  {options.plane_nx, options.plane_ny}, options.codec)),
      name_(std::move(name)) {}

StoreCore::~StoreCore() {
  if (engine_) engine_->close_store(handle_);
}

StoreCore::StoreCore(StoreCore&& o) noexcept
    : engine_(std::move(o.engine_)), handle_(o.handle_), name_(std::move(o.name_)) {}

StoreCore& StoreCore::operator=(StoreCore&& o) noexcept {
  if (this != &o) {
    if (engine_) engine_->close_store(handle_);
    engine_ = std::move(o.engine_);
    handle_ = o.handle_;
    name_ = std::move(o.name_);
  }
  return *this;
}

namespace {
engine::Engine& live(const std::shared_ptr<engine::Engine>& e, const std::string& name) {
  if (!e) throw InvalidArgumentError(EBADF, "store was moved from", {name, {}, {}});
  return *e;
}
}  // namespace

void StoreCore::write(std::uint64_t id, const std::byte* data, std::size_t bytes) {
  live(engine_, name_).write(handle_, id, data, bytes);
}
std::size_t StoreCore::read(std::uint64_t id, Block& buf, std::size_t elem_size) {
  return live(engine_, name_).read(handle_, id, buf, elem_size);
}
void StoreCore::read_exact(std::uint64_t id, Block& buf, std::size_t bytes) {
  live(engine_, name_).read(handle_, id, buf, 1, bytes);
}
std::size_t StoreCore::read_into(std::uint64_t id, std::byte* dst, std::size_t offset, std::size_t len) {
  return live(engine_, name_).read_into(handle_, id, dst, offset, len);
}

std::optional<Block> StoreCore::lend_slot(std::size_t bytes) { return live(engine_, name_).lend_slot(bytes); }

void StoreCore::write_lent(std::uint64_t id, Block& slot, std::size_t bytes) {
  live(engine_, name_).write_lent(handle_, id, slot, bytes);
}

void StoreCore::return_slot(Block slot) noexcept {
  if (engine_) engine_->return_slot(std::move(slot));
}
bool StoreCore::contains(std::uint64_t id) const { return live(engine_, name_).contains(handle_, id); }
void StoreCore::erase(std::uint64_t id) { live(engine_, name_).erase(handle_, id); }
std::vector<std::uint64_t> StoreCore::ids() const { return live(engine_, name_).ids(handle_); }
void StoreCore::flush() { live(engine_, name_).flush(handle_); }
RecordInfo StoreCore::info(std::uint64_t id) const { return live(engine_, name_).info(handle_, id); }

#if MLBS_HAVE_MPI
MPI_Comm StoreCore::runtime_comm() const {
  const auto* g = dynamic_cast<const mpi::MpiGroup*>(live(engine_, name_).group());
  return g ? g->user_comm() : MPI_COMM_NULL;
}
#endif

}  // namespace mlbs::detail

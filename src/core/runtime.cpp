#include "mlbs/runtime.hpp"

#include "engine/engine.hpp"

#if MLBS_HAVE_MPI
#include "mpi/group.hpp"
#endif

namespace mlbs {

namespace {
std::shared_ptr<core::Group> default_group() {
#if MLBS_HAVE_MPI
  if (mpi::active()) return std::make_shared<mpi::MpiGroup>(MPI_COMM_WORLD);
#endif
  return nullptr;
}
}  // namespace

Runtime::Runtime(Config cfg) : engine_(std::make_shared<engine::Engine>(std::move(cfg), default_group())) {}

#if MLBS_HAVE_MPI
Runtime::Runtime(Config cfg, MPI_Comm comm)
    : engine_(std::make_shared<engine::Engine>(std::move(cfg), std::make_shared<mpi::MpiGroup>(comm))) {}

MPI_Comm Runtime::comm() const {
  const auto* g = dynamic_cast<const mpi::MpiGroup*>(engine_->group());
  return g ? g->user_comm() : MPI_COMM_NULL;
}
#endif

Runtime::~Runtime() {
  // Stores may outlive the runtime (they share the engine): stop the helpers
  // now so nothing moves after the runtime is gone.
  if (engine_) engine_->shutdown();
}

Stats Runtime::stats() const { return engine_->stats(); }
void Runtime::set_schedule(const Schedule& schedule) { engine_->set_schedule(schedule); }
const Config& Runtime::config() const { return engine_->config(); }
int Runtime::rank() const { return engine_->group() ? engine_->group()->rank() : 0; }
int Runtime::ranks() const { return engine_->group() ? engine_->group()->size() : 1; }

}  // namespace mlbs

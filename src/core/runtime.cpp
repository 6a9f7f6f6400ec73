#include "mlbs/runtime.hpp"

#include "engine/engine.hpp"

namespace mlbs {

Runtime::Runtime(Config cfg) : engine_(std::make_shared<engine::Engine>(std::move(cfg))) {}

Runtime::~Runtime() {
  // Stores may outlive the runtime (they share the engine): stop the helpers
  // now so nothing moves after the runtime is gone.
  if (engine_) engine_->shutdown();
}

Stats Runtime::stats() const { return engine_->stats(); }
const Config& Runtime::config() const { return engine_->config(); }

}  // namespace mlbs

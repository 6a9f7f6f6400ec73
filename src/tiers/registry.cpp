#include "tiers/registry.hpp"

#include <map>
#include <mutex>

#include <fmt/format.h>

#include "mlbs/features.hpp"
#include "tiers/directory/io_select.hpp"
#include "tiers/memory/memory_backend.hpp"
#if MLBS_HAVE_MPI
#include "tiers/mpiio/mpiio_backend.hpp"
#endif
#include "tiers/wrappers/faults.hpp"
#include "tiers/wrappers/throttle.hpp"

namespace mlbs::tiers {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, Factory> factories;
  Registry() {
    // Built-in kinds; optional ones (mpiio, cuda) register when compiled in.
    // "memory" is tier 0: the DRAM slot pool.
    factories["memory"] = [](int index, const Tier& desc, const core::Group*) {
      return std::make_unique<MemoryBackend>(index, desc);
    };
    // "directory" is io_uring + O_DIRECT or pread, as desc.io_backend says.
    factories["directory"] = [](int index, const Tier& desc, const core::Group*) {
      return make_directory_backend(index, desc);
    };
    // The program's own files under mlbs-run: the interposition library
    // registers the real backend (src/intercept/); anywhere else, say so.
    factories["files"] = [](int index, const Tier&, const core::Group*) -> std::unique_ptr<Backend> {
      throw ConfigError(fmt::format("tiers[{}].kind", index),
                        "the files tier is the folder mlbs-run intercepts (docs/transparent.md); a program "
                        "using mlbs keeps its records in a directory tier");
    };
#if MLBS_HAVE_MPI
    // One file shared by all ranks, collective MPI-IO (needs an MPI group).
    factories["mpiio"] = [](int index, const Tier& desc, const core::Group* group) {
      return make_mpiio_backend(index, desc, group);
    };
#endif
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

Factory register_backend(const std::string& kind, Factory factory) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  Factory previous = std::move(r.factories[kind]);
  r.factories[kind] = std::move(factory);
  return previous;
}

std::unique_ptr<Backend> make_backend(int index, const Tier& desc, const core::Group* group) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.factories.find(desc.kind);
  if (it == r.factories.end())
    throw ConfigError(fmt::format("tiers[{}].kind", index),
                      fmt::format("unknown tier kind '{}'", desc.kind));
  std::unique_ptr<Backend> backend = it->second(index, desc, group);
  // Cross-cutting features wrap the backend rather than living inside it;
  // faults sit next to the device, the cap outside them.
  if (!desc.faults.empty())
    backend = std::make_unique<FaultyBackend>(std::move(backend),
                                              parse_fault_plan(desc.faults, fmt::format("tiers[{}].faults", index)));
  if (desc.bandwidth_bytes_per_s)
    backend = std::make_unique<ThrottledBackend>(std::move(backend), desc.bandwidth_bytes_per_s);
  return backend;
}

std::vector<std::string> registered_kinds() {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> kinds;
  for (auto& [k, f] : r.factories) kinds.push_back(k);
  return kinds;
}

}  // namespace mlbs::tiers

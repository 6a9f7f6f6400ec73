// The mpiio tier: every rank's records in one shared file, moved by
// collective MPI-IO (docs/mpiio.md). Known to every build, so that one
// without MPI can say why it cannot run it.
#include <fmt/format.h>

#include "mlbs/features.hpp"
#include "tiers/kinds.hpp"
#include "tiers/wrappers/faults.hpp"

namespace mlbs::tiers {

TierKind mpiio_tier_kind() {
  TierKind kind;
  kind.name = "mpiio";
  kind.spellings = {"mpiio"};
  kind.noun = "an mpiio tier";
  // Every transfer to it is a collective round of all ranks: it is the slow,
  // shared end of the hierarchy, never a cache in front of another tier.
  kind.place = TierKind::Place::last;
  kind.has_path = true;
  // One shared file moved with MPI-IO: no I/O backend, queue or layout of its own.
  kind.keys = {"path", "bandwidth", "page_cache", "faults"};
  if (!MLBS_HAVE_MPI)
    kind.unavailable = "mlbs was built without MPI: the mpiio tier needs it (configure with MLBS_ENABLE_MPI=ON and an "
                       "MPI installed)";
  kind.make = [](std::string path, std::uint64_t capacity) { return Tier::mpiio(std::move(path), capacity); };
  kind.check = [](const Tier& tier, const Config&, const TierKind::Fail& fail) {
    if (const std::string why = fault_plan_error(tier.faults); !why.empty()) fail(".faults", why);
  };
  return kind;
}

}  // namespace mlbs::tiers

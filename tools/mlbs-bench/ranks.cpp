#include "ranks.hpp"

#include <cstdlib>
#include <string_view>

#include <mlbs/features.hpp>

#if MLBS_HAVE_MPI
#include <mpi.h>
#endif

namespace mlbs_bench {

#if MLBS_HAVE_MPI

namespace {
/// Started by a launcher (mpirun/mpiexec, srun with PMI/PMIx, hydra), or
/// MLBS_BENCH_MPI=1. A plain start stays a plain process: an MPI singleton
/// costs ~0.7 s of start-up and leaves Open MPI's allocations to sanitizers.
bool launched_by_mpi() {
  for (const char* var : {"MLBS_BENCH_MPI", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE",
                          "MPI_LOCALNRANKS"})
    if (const char* v = std::getenv(var); v && *v && std::string_view(v) != "0") return true;
  return false;
}
}  // namespace

Ranks::Ranks() : mpi_(launched_by_mpi()) {
  if (!mpi_) return;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &thread_level_);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
  int node_rank = 0;
  MPI_Comm_rank(node, &node_rank);
  node_leader_ = node_rank == 0;
  MPI_Comm_free(&node);
}

Ranks::~Ranks() {
  if (mpi_) MPI_Finalize();
}

void Ranks::barrier() const {
  if (mpi_) MPI_Barrier(MPI_COMM_WORLD);
}

bool Ranks::all(bool ok) const {
  if (!mpi_) return ok;
  int mine = ok ? 1 : 0, every = 0;
  MPI_Allreduce(&mine, &every, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return every == 1;
}

std::uint64_t Ranks::broadcast(std::uint64_t value) const {
  if (!mpi_) return value;
  MPI_Bcast(&value, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return value;
}

std::vector<std::string> Ranks::gather(const std::string& text) const {
  if (!mpi_) return {text};
  // Lengths first, then the texts side by side (MPI_Gatherv).
  const int len = int(text.size());
  std::vector<int> lens(root() ? std::size_t(size_) : 0), offsets(lens.size());
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string all;
  if (root()) {
    for (std::size_t r = 1; r < lens.size(); ++r) offsets[r] = offsets[r - 1] + lens[r - 1];
    all.resize(std::size_t(offsets.back() + lens.back()));
  }
  MPI_Gatherv(text.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (std::size_t r = 0; r < lens.size(); ++r) out.push_back(all.substr(std::size_t(offsets[r]), std::size_t(lens[r])));
  return out;
}

void Ranks::abort(int code) const {
  if (mpi_) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);   // MPI_Abort does not return; this keeps [[noreturn]] honest
}

#else  // one process, no MPI

Ranks::Ranks() = default;
Ranks::~Ranks() = default;
void Ranks::barrier() const {}
bool Ranks::all(bool ok) const { return ok; }
std::uint64_t Ranks::broadcast(std::uint64_t value) const { return value; }
std::vector<std::string> Ranks::gather(const std::string& text) const { return {text}; }
void Ranks::abort(int code) const { std::exit(code); }

#endif

}  // namespace mlbs_bench

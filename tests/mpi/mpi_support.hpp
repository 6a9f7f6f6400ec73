// Test helpers for the suites that run under mpiexec (tests/mpi/).
#pragma once

#include <gtest/gtest.h>
#include <mlbs/mlbs.hpp>
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "support/temp_dir.hpp"

namespace mlbs::test {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

/// A fresh folder per test that every rank shares (rank 0 names and creates
/// it, everyone learns the name), removed after by rank 0 once all are done.
class SharedTempDir {
 public:
  SharedTempDir() {
    std::string path;
    if (world_rank() == 0) path = fresh_test_folder(".np" + std::to_string(world_size())).string();
    int len = static_cast<int>(path.size());
    MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
    path.resize(static_cast<std::size_t>(len));
    MPI_Bcast(path.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
    path_ = path;
  }
  ~SharedTempDir() {
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0) {
      std::error_code ec;
      std::filesystem::remove_all(path_, ec);
    }
  }
  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& sub) const { return (path_ / sub).string(); }

 private:
  std::filesystem::path path_;
};

/// True on every rank iff `ok` is true on every rank: a test asserts this so
/// that one rank's failure fails the test on all of them.
inline bool all_ranks(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

/// A value no two (rank, id, element) share, exact in float below 2^24.
inline float value(int rank, std::uint64_t id, std::size_t i) {
  return static_cast<float>((static_cast<std::uint64_t>(rank) * 64 + id) * 1024 + i % 1024);
}

/// The suites' records: 4096 floats (16 KiB) of value(rank, id, i).
constexpr std::size_t kElems = 4096;
constexpr std::uint64_t kRecord = kElems * sizeof(float);

inline void fill(mlbs::Store<float>& u, std::uint64_t id, int rank = world_rank()) {
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = value(rank, id, i);
}

/// The working buffer is this rank's record `id`, every byte.
inline bool holds(const mlbs::Store<float>& u, std::uint64_t id) {
  if (u.size() != kElems) return false;
  for (std::size_t i = 0; i < u.size(); ++i)
    if (u[i] != value(world_rank(), id, i)) return false;
  return true;
}

}  // namespace mlbs::test

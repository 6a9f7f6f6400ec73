// mlbs under MPI: every rank runs the RTM pattern on its own sub-domain with
// the same tier paths and store name (mlbs keeps each rank's records apart),
// the node-local "NVMe" tier is one budget shared by the node's ranks, and
// the partial images are summed onto rank 0 with Store<T>::reduce.
//   mpirun -np 4 mlbs_mpi_rtm [base-dir]      (docs/mpi.md; Slurm: srun)
#include <mlbs/mlbs.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

#if !MLBS_HAVE_MPI
int main() {
  std::puts("mlbs was built without MPI (MLBS_ENABLE_MPI=OFF or no MPI found): nothing to run");
  return 0;
}
#else
int main(int argc, char** argv) {
  // mpiio tiers call MPI from mlbs's helper threads: ask for MPI_THREAD_MULTIPLE.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::string base = argc > 1 ? argv[1] : "mlbs-mpi-rtm";
  if (rank == 0) std::filesystem::create_directories(base);
  MPI_Barrier(MPI_COMM_WORLD);

  int rc = 0;
  try {
    mlbs::Config cfg;
    mlbs::Tier nvme = mlbs::Tier::directory(base + "/nvme", 64ull << 20);  // 64 MiB for the whole node
    nvme.shared = true;  // one budget for the node's ranks, divided fairly
    cfg.tiers = {mlbs::Tier::memory(8ull << 20), nvme, mlbs::Tier::directory(base + "/pfs")};
    cfg.schedule = mlbs::Schedule::lifo();

    mlbs::Runtime rt(cfg);  // collective over MPI_COMM_WORLD
    mlbs::Store<float> u(rt, "wavefield", 1 << 18);  // 1 MiB per rank
    mlbs::Store<float> image(rt, "image", u.size());

    const int snapshots = 32;
    for (int t = 0; t < snapshots; ++t) {
      for (std::size_t i = 0; i < u.size(); ++i) u[i] = float(rank + 1) * float(t);
      u.write(t);
    }
    for (int t = snapshots - 1; t >= 0; --t) {
      u.read(t);
      for (std::size_t i = 0; i < u.size(); ++i) image[i] += u[i];
    }
    image.reduce(MPI_SUM, 0);  // element-wise sum of every rank's image onto rank 0

    int ranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    // sum over ranks r of (r + 1) * sum over t of t
    const float expect = float(ranks) * float(ranks + 1) / 2 * float(snapshots * (snapshots - 1) / 2);
    if (rank == 0) {
      if (image[0] != expect) {
        std::fprintf(stderr, "image[0] = %g, expected %g\n", image[0], expect);
        rc = 1;
      }
      const mlbs::Stats s = rt.stats();
      std::printf("rank 0 of %d: image ok; nvme peak %s of a %s node budget\n", ranks,
                  mlbs::format_bytes(s.tiers[1].peak_used_bytes).c_str(),
                  mlbs::format_bytes(cfg.tiers[1].capacity_bytes).c_str());
    }
  } catch (const mlbs::Error& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);  // the other ranks would wait in a collective
  }
  MPI_Finalize();
  return rc;
}
#endif

// gtest main for the suites run under mpiexec: MPI with MPI_THREAD_MULTIPLE
// (mlbs's mpiio helpers call MPI), full output from rank 0, failures from all.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

namespace {

/// Prints only failed assertions, prefixed by the rank, for ranks other than 0.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?",
                   r.line_number(), r.summary());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(rank));
  }
  if (provided < MPI_THREAD_MULTIPLE && rank == 0)
    std::fprintf(stderr, "mlbs mpi tests: MPI provides thread level %d < MPI_THREAD_MULTIPLE\n", provided);
  const int failed = RUN_ALL_TESTS();
  // Any rank's failure fails the run on rank 0's exit code too.
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}

#!/usr/bin/env bash
# Installs the Debian packages mlbs needs to build, test and plot. Idempotent:
# prints nothing and installs nothing when everything is already present.
#
# Usage: scripts/setup.sh [--fuzz]
#   --fuzz  also the libFuzzer toolchain that scripts/fuzz.sh builds with
set -euo pipefail

fuzz=0
for arg in "$@"; do
  case $arg in
    --fuzz) fuzz=1 ;;
    *) echo "usage: $0 [--fuzz]" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build pkg-config  # toolchain
  libtomlplusplus-dev    # TOML configuration files (Config::from_file)
  libxxhash-dev          # xxHash3 record checksums
  libfmt-dev             # message formatting (g++ 12 has no std::format)
  liburing-dev           # io_uring + O_DIRECT backend of directory tiers (optional at build time)
  libopenmpi-dev openmpi-bin  # MPI: store collectives, node-shared quotas, the mpiio tier, the mpi tests (optional at build time)
  libgtest-dev libgmock-dev  # unit and integration tests
  libcli11-dev           # mlbs-bench's command line
  nlohmann-json3-dev     # mlbs-bench's JSON results, trace tests
  libbenchmark-dev       # micro-benchmarks of the copy into DRAM slots (benchmarks/)
  gfortran               # the Fortran module mlbs (fortran/; optional at build time)
  libzstd-dev liblz4-dev libzfp-dev  # codecs zstd, lz4, zfp between DRAM and the file tiers (each optional at build time)
)
if ((fuzz)); then
  packages+=(
    # The fuzz build's compiler: libFuzzer is clang's (-fsanitize=fuzzer).
    # Debian 12's default clang (14) rejects libstdc++ 12's std::views over
    # our catalog; 16 compiles them.
    clang-16
    libclang-rt-16-dev  # its runtime libraries: libFuzzer, ASan and UBSan (libclang_rt.*)
    libomp-16-dev       # its OpenMP, which zfp's CMake package looks for
  )
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "mlbs setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# mlbs-plot draws with matplotlib (a Python package: pip, not apt, because the
# python3 on PATH may not be Debian's).
if command -v python3 >/dev/null 2>&1 && ! python3 -c "import matplotlib" >/dev/null 2>&1; then
  echo "mlbs setup: installing matplotlib (pip)"
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore matplotlib
fi

# The Python package (python/, docs/python.md): scripts/run-tests.sh builds it
# with these (no build isolation, so rebuilds are incremental) and runs its
# pytest suite, which also runs the Devito RTM and checkpointing examples
# (devito with scipy for its seismic examples; checkpoint-schedules; scipy's
# HiGHS also solves benchmarks/lp_bound.py's linear programs). `pip
# install .` alone fetches the build tools itself. h5py: transparent mode's
# test of an HDF5 file written and read by an unmodified program.
if command -v python3 >/dev/null 2>&1; then
  py_missing=()
  for mod in nanobind scikit_build_core numpy pytest scipy devito checkpoint_schedules h5py; do
    python3 -c "import $mod" >/dev/null 2>&1 || py_missing+=("${mod//_/-}")
  done
  if ((${#py_missing[@]})); then
    echo "mlbs setup: installing ${py_missing[*]} (pip)"
    python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore "${py_missing[@]}"
  fi
fi

# mlbs-bench's adios2 mode (an external peer in the comparison) builds against
# ADIOS2's C++ package, which the PyPI wheel ships (headers, libraries and a
# CMake package under site-packages/adios2/). Best effort: without it the
# mode reports "not built" and everything else builds.
if command -v python3 >/dev/null 2>&1 && ! python3 -c "import adios2" >/dev/null 2>&1; then
  echo "mlbs setup: installing adios2 (pip)"
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore adios2 ||
    echo "mlbs setup: adios2 could not be installed: mlbs-bench's adios2 mode will not be built"
fi

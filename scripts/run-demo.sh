#!/usr/bin/env bash
# mlbs — THE main-job command: builds the `default` preset's stencil demo and
# runs it from the repository root, so its tiers live under ./mlbs-demo (the
# demo's default). Extra arguments go to the demo, e.g.
#   scripts/run-demo.sh --grid 96 --steps 120 --tiers mem:64MiB,dir:/nvme/x:256MiB,dir:/pfs/x
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"

bash scripts/setup.sh
cmake --preset default >/dev/null
cmake --build --preset default --target mlbs_stencil_demo

exec build/default/examples/mlbs_stencil_demo "$@"

#!/usr/bin/env bash
# Installs the Debian packages mlbs needs to build, test and plot. Idempotent:
# prints nothing and installs nothing when everything is already present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config  # toolchain
  libtomlplusplus-dev    # TOML configuration files (Config::from_file)
  libxxhash-dev          # xxHash3 record checksums
  libfmt-dev             # message formatting (g++ 12 has no std::format)
  libgtest-dev libgmock-dev  # unit and integration tests
)

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

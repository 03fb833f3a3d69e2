#!/usr/bin/env bash
# Compiles tandem.cu to the PTX the cuda backend loads: one file for sm_90 (Hopper) and one for
# sm_80 (Ampere and newer cards without their own), written to OUT_DIR (default: the resource
# folder the jar carries them from). PtxFreshnessTest runs this into a temporary folder and fails
# when the committed PTX differs.
#
#   engine-adapters/src/main/cuda/build-ptx.sh [OUT_DIR]
#
# nvcc 13 writes PTX ISA 9.0, which only drivers of CUDA 13 (r580+) JIT-compile. The kernels use
# nothing newer than ISA 7.8 (sm_90's first), so the header is lowered to 7.8 (sm_90) and 7.0
# (sm_80), which every CUDA 12 driver takes, and ptxas checks that the lowered text still
# assembles for its target: a kernel that starts needing a newer ISA fails here, not on a GPU.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/../resources/dev/tandem/engine/cuda}"
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/bin/nvcc)}"
if [ ! -x "$nvcc" ]; then
  echo "build-ptx.sh: nvcc not found (set NVCC or install the CUDA toolkit)" >&2
  exit 2
fi
ptxas="$(dirname "$(readlink -f "$nvcc")")/ptxas"
mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
build() { # sm isa
  local sm="$1" isa="$2"
  (cd "$here" && "$nvcc" -ptx -O3 -std=c++17 -arch="compute_$sm" tandem.cu -o "$tmp/tandem-sm$sm.ptx")
  sed -e "s/^\.version [0-9.]*$/.version $isa/" "$tmp/tandem-sm$sm.ptx" > "$out/tandem-sm$sm.ptx"
  if [ -x "$ptxas" ]; then
    "$ptxas" -arch="sm_$sm" "$out/tandem-sm$sm.ptx" -o "$tmp/check-sm$sm.cubin"
  fi
}
build 90 7.8
build 80 7.0
echo "build-ptx.sh: wrote $out/tandem-sm90.ptx and tandem-sm80.ptx" >&2

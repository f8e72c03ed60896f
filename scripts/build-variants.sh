#!/usr/bin/env bash
# Builds a tuning harness, benches/NAME.cu (box_filter_variants, box_filter_band,
# lorenz96_variants or
# normalize_variants), here with the pinned toolchain: SASS sm_90 and the CUDA
# runtime linked statically, so the GPU machine needs only its driver. Output:
# .gpu/NAME; run it there. For box_filter_variants the box filter of git
# revision $BASELINE (default HEAD) is compiled in as the baseline.
#   bash scripts/build-variants.sh box_filter_variants
set -euo pipefail
name=${1:?usage: scripts/build-variants.sh box_filter_variants|box_filter_band|normalize_variants}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
nvcc=$(compgen -G ".toolchain/venv/lib/python3*/site-packages/nvidia/cu13/bin/nvcc" | head -1)
[ -n "$nvcc" ] || { echo "no pinned nvcc: run scripts/setup-toolchain.sh" >&2; exit 1; }
mkdir -p .gpu
extra=()
if [ "$name" = box_filter_variants ]; then
  git show "${BASELINE:-HEAD}:csrc/stencil.cu" |
    sed -e 's/box_filter_/old_box_filter_/g' -e 's/namespace stencil /namespace stencil_old /' \
        -e 's/kp::stencil::/kp::stencil_old::/g' -e 's/^#include "kernpack_params.h"//' > .gpu/old_stencil.cuh
  extra+=(-DKP_OLD_STENCIL="\"$top/.gpu/old_stencil.cuh\"")
fi
"$nvcc" -O3 --use_fast_math -std=c++17 -arch=sm_90 -cudart static -Icsrc -L"$(dirname "$nvcc")/../lib" \
  "${extra[@]}" "benches/$name.cu" -o ".gpu/$name"
echo "built .gpu/$name"

#!/usr/bin/env bash
# Builds benches/box_filter_variants.cu here with the pinned toolchain (SASS
# sm_90, the CUDA runtime linked statically, so the GPU machine needs only its
# driver) into .gpu/box_filter_variants, with the box filter of git revision
# $BASELINE (default HEAD) compiled in as the baseline. Run it there:
#   .gpu/box_filter_variants [rows cols]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
nvcc=$(compgen -G ".toolchain/venv/lib/python3*/site-packages/nvidia/cu13/bin/nvcc" | head -1)
[ -n "$nvcc" ] || { echo "no pinned nvcc: run scripts/setup-toolchain.sh" >&2; exit 1; }
mkdir -p .gpu
git show "${BASELINE:-HEAD}:csrc/stencil.cu" |
  sed -e 's/box_filter_/old_box_filter_/g' -e 's/namespace stencil /namespace stencil_old /' \
      -e 's/kp::stencil::/kp::stencil_old::/g' -e 's/^#include "kernpack_params.h"//' > .gpu/old_stencil.cuh
"$nvcc" -O3 --use_fast_math -std=c++17 -arch=sm_90 -cudart static -Icsrc -L"$(dirname "$nvcc")/../lib" \
  -DKP_OLD_STENCIL='"'"$top/.gpu/old_stencil.cuh"'"' \
  ${KP_STENCIL_SOURCE:+-DKP_STENCIL_SOURCE='"'"$KP_STENCIL_SOURCE"'"'} \
  benches/box_filter_variants.cu -o ".gpu/${OUTPUT:-box_filter_variants}"
echo "built .gpu/box_filter_variants"

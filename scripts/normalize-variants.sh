#!/usr/bin/env bash
# Builds benches/normalize_variants.cu here with the pinned toolchain (SASS
# sm_90, the CUDA runtime linked statically) into .gpu/normalize_variants.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
nvcc=$(compgen -G ".toolchain/venv/lib/python3*/site-packages/nvidia/cu13/bin/nvcc" | head -1)
[ -n "$nvcc" ] || { echo "no pinned nvcc: run scripts/setup-toolchain.sh" >&2; exit 1; }
mkdir -p .gpu
"$nvcc" -O3 --use_fast_math -std=c++17 -arch=sm_90 -cudart static -Icsrc -L"$(dirname "$nvcc")/../lib" \
  benches/normalize_variants.cu -o .gpu/normalize_variants
echo "built .gpu/normalize_variants"

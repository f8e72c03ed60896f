#!/usr/bin/env bash
# Rebuilds fatbin/kernpack.fatbin and fatbin/manifest.txt from csrc/ with both
# toolkits: the pinned CUDA 13.0 (sm_75..sm_121 + PTX of the highest) and CUDA
# 11.8 (sm_35..sm_72 + compute_35 PTX), each installed into .toolchain/ by its
# setup script if missing. Commit both files afterwards; tests/fatbin.rs checks
# the arch list and that they match csrc/.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
bash scripts/setup-toolchain.sh >/dev/null
bash scripts/setup-toolchain-legacy.sh >/dev/null
nvcc=$(compgen -G ".toolchain/venv/lib/python3*/site-packages/nvidia/cu13/bin/nvcc" | head -n 1)
# The committed fatbin is always built by the pinned toolchains, whatever else is on PATH.
env -u KERNPACK_CUDA_ARCHS NVCC="$top/$nvcc" KERNPACK_LEGACY_NVCC="$top/.toolchain/cuda-11.8/bin/nvcc" \
  KERNPACK_LEGACY_REBUILD=1 KERNPACK_FATBIN_EXPORT="$top/fatbin" cargo build --release --lib
grep -E '^(toolkit|legacy_toolkit|families|sass|ptx|source_hash)=' fatbin/manifest.txt
ls -l fatbin/kernpack.fatbin

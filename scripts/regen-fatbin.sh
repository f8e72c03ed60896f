#!/usr/bin/env bash
# Rebuilds fatbin/kernpack.fatbin and fatbin/manifest.txt from csrc/ with the
# pinned CUDA 13.0 toolchain (installed by setup-toolchain.sh if missing).
# Commit both files afterwards; tests/fatbin.rs checks they match csrc/.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
bash scripts/setup-toolchain.sh >/dev/null
nvcc=$(compgen -G ".toolchain/venv/lib/python3*/site-packages/nvidia/cu13/bin/nvcc" | head -n 1)
# The committed fatbin is always built by the pinned toolchain, whatever else is on PATH.
env -u KERNPACK_CUDA_ARCHS NVCC="$top/$nvcc" KERNPACK_FATBIN_EXPORT="$top/fatbin" cargo build --release --lib
grep -E '^(toolkit|sass|ptx|source_hash)=' fatbin/manifest.txt
ls -l fatbin/kernpack.fatbin

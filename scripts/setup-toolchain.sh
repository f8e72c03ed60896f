#!/usr/bin/env bash
# Installs the pinned CUDA 13.0 compiler toolchain from NVIDIA's pip wheels into
# .toolchain/ (git-ignored), so a machine with no CUDA install can build the fatbin
# (CCCL for cooperative_groups, which the fused normalisation uses).
# 13.0 is pinned on purpose: PTX from a newer toolkit is refused by R580 drivers.
# Idempotent: a second run with the toolchain present does nothing.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
venv="$top/.toolchain/venv"
nvcc="$venv/lib/python3*/site-packages/nvidia/cu13/bin/nvcc"
if compgen -G "$nvcc" >/dev/null && $(compgen -G "$nvcc") --version | grep -q 'release 13.0' \
   && compgen -G "$venv/lib/python3*/site-packages/nvidia/cu13/include/cccl/nv/target" >/dev/null; then
  echo "toolchain present: $(compgen -G "$nvcc")"
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 \
  nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85
echo "toolchain installed: $(compgen -G "$nvcc")"

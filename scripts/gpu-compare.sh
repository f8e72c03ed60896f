#!/usr/bin/env bash
# Before/after on the GPU machine in one call: two builds of kernpack, staged
# here (the GPU machine has no Rust toolchain) as .gpu-cmp/base/ and .gpu-cmp/new/,
# each holding the CLI (`kernpack`), examples/host_calls and the Python wheel
# (*.whl). Both are timed in the same process order, alternating, twice:
# the CLI's kernel benchmarks (CUDA events on device buffers), host_calls
# (wall clock of the safe API's host calls, copies included), and the Python
# binding's per-call overhead on a small CuPy call.
#
#   stage:  cargo build --release --bin kernpack --example host_calls, and
#           maturin build (scripts/gpu-python.sh) in each tree; copy the three
#           into .gpu-cmp/base/ and .gpu-cmp/new/
#   run:    device tool, carry [".gpu-cmp"], command: bash scripts/gpu-compare.sh
#
# RESULT lines and tables go to stdout; logs to $OUT.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for v in base new; do
  site=$(mktemp -d)
  python3 -c "import sys, zipfile, glob; zipfile.ZipFile(glob.glob(sys.argv[2] + '/*.whl')[0]).extractall(sys.argv[1])" "$site" ".gpu-cmp/$v"
  echo "$site" > ".gpu-cmp/$v/site"
done
cli_benches=(
  "lombscargle --nx 150 --nf 10000 --uniform"
  "lombscargle --nx 1024 --nf 1048576 --uniform"
  "lombscargle --nx 1024 --nf 1048576"
  "lombscargle-batch"
  "box-filter --size 3"
  "box-filter --size 31"
  "reduce --n 10000000"
  "lorenz96 --members 100000 --steps 1000"
  "fg --n 512 --steps 100"
)
for round in $(seq "${ROUNDS:-2}"); do
  for v in base new; do
    echo "== $v, round $round"
    # PY_ONLY=1: the Python overhead rows alone (ROUNDS=n: n rounds, default 2).
    [ -n "${PY_ONLY:-}" ] || for b in "${cli_benches[@]}"; do
      # shellcheck disable=SC2086
      ".gpu-cmp/$v/kernpack" bench $b 2>>"$out/$v.err" | grep '^RESULT' | sed "s/^RESULT/RESULT $v/"
    done
    [ -n "${PY_ONLY:-}" ] || ".gpu-cmp/$v/host_calls" gpu 11 | sed "s/^|/| $v |/"
    PYTHONPATH=$(cat ".gpu-cmp/$v/site") python3 -c "
import sys, os; sys.path.insert(0, 'python/benches')
# A build whose native signatures differ brings its own copy of the bench.
if os.path.exists('.gpu-cmp/$v/bench_python.py'): sys.path.insert(0, '.gpu-cmp/$v')
import numpy as np
np.row_stack = np.vstack
import bench_python as b; b.overhead()" 2>>"$out/$v.err" | sed "s/^/PY $v /"
  done
done

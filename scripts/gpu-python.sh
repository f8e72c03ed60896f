#!/usr/bin/env bash
# Builds the Python wheel here (the GPU machine has no Rust toolchain) and
# stages it in .gpu/python/ with a runner for the GPU machine:
#
#   bash scripts/gpu-python.sh
#   device tool: run, carry [".gpu"], command: bash .gpu/python.sh [tests|bench|all]
#
# The runner unpacks the wheel into a temporary site folder (no pip install:
# nothing is fetched there), then runs the Python tests with
# KERNPACK_REQUIRE_GPU=1 (CuPy and PyTorch tests included) and/or the
# side-by-side benchmark, writing logs to $OUT.
set -euo pipefail
top=$(git rev-parse --show-toplevel)
cd "$top"
excl=$(git rev-parse --git-path info/exclude); mkdir -p "$(dirname "$excl")"
grep -qx '/.gpu/' "$excl" 2>/dev/null || echo '/.gpu/' >> "$excl"
rm -rf .gpu/python && mkdir -p .gpu/python
python3 -m pip --version >/dev/null
if ! command -v maturin >/dev/null; then
  python3 -m pip install -q "maturin>=1.7,<2"
fi
maturin build --release -m python/Cargo.toml -o .gpu/python --compatibility linux >/dev/null
ls .gpu/python
cat > .gpu/python.sh <<'RUN'
#!/usr/bin/env bash
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
site=$(mktemp -d)
python3 -c "import sys, zipfile, glob; zipfile.ZipFile(glob.glob('.gpu/python/*.whl')[0]).extractall(sys.argv[1])" "$site"
export PYTHONPATH="$site" KERNPACK_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
out=${OUT:-/tmp}
what=${1:-all}
fails=0
python3 -c "import numpy, scipy, cupy, torch; print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'cupy', cupy.__version__, 'torch', torch.__version__)"
if [ "$what" = tests ] || [ "$what" = all ]; then
  python3 -m pytest python/tests -q -p no:cacheprovider 2>&1 | tee "$out/pytest.log" | tail -40 || fails=1
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  python3 python/benches/bench_python.py 2>&1 | tee "$out/bench_python.log" || fails=1
fi
exit $fails
RUN
chmod +x .gpu/python.sh

#!/usr/bin/env bash
# On the GPU machine, after ../shared/tools/gpu-stage.sh --bin kernpack (and the
# prebuilt ffi programs copied to .gpu/ffi): every test with KERNPACK_REQUIRE_GPU=1,
# a longer property-test run, compute-sanitizer over the GPU-using test binaries,
# `kernpack info`, the demo, and the side-by-side comparison. Logs go to $OUT.
set -u
out=${OUT:-/tmp/kernpack-gpu}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KERNPACK_FFI_PREBUILT=$PWD/.gpu/ffi
summary() { grep -E "test result|Test failed|panicked|ERROR SUMMARY|RACECHECK SUMMARY" "$1" | sort | uniq -c; }
bash .gpu/run.sh > "$out/tests.log" 2>&1; echo "== all tests rc=$?"; summary "$out/tests.log"
PROPTEST_CASES=${CASES:-400} bash .gpu/run.sh matches_reference > "$out/prop.log" 2>&1
echo "== property tests (${CASES:-400} cases per dtype) rc=$?"; summary "$out/prop.log"
for tool in memcheck racecheck initcheck synccheck; do
  : > "$out/san.log"
  # Every staged test binary that launches kernels (the staging may hold a subset:
  # all of them together exceed one call's 64 MiB).
  for bin in .gpu/bin/*; do
    case "$(basename "$bin")" in *.dir | header_fresh-* | params_bindings-* | fatbin-* | ffi_programs-* | kernpack-*) continue ;; esac
    PROPTEST_CASES=4 compute-sanitizer --tool "$tool" --error-exitcode 99 "$bin" --test-threads=1 >> "$out/san.log" 2>&1
    echo "$tool $(basename "$bin") rc=$?" >> "$out/san_rc.log"
  done
  echo "== compute-sanitizer $tool"; summary "$out/san.log"
done
cat "$out/san_rc.log"
.gpu/kernpack info > "$out/info.txt" 2>&1; tail -7 "$out/info.txt"
.gpu/kernpack demo --plot "$out/demo.png" 2>&1 | tail -3
if [ -z "${SKIP_COMPARE:-}" ]; then
  python3 benches/compare_lombscargle.py .gpu/kernpack 1024 1048576 3000 1000000 2>&1 | grep -v Warn > "$out/compare.log"
  tail -22 "$out/compare.log"
fi

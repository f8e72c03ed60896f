#!/usr/bin/env bash
# On the GPU machine, after ../shared/tools/gpu-stage.sh --bin kernpack: the
# checks of "every GPU from Kepler on" without old hardware. Every test with
# KERNPACK_REQUIRE_GPU=1 three times: natively (SASS for this GPU), with
# CUDA_FORCE_PTX_JIT=1 (the driver JITs the compute_35 PTX, i.e. CUDA 11.8's
# code with its old-arch paths) and with KERNPACK_GPU_NO_COOPERATIVE=1 (planned
# as on a GPU without cooperative launch); compute-sanitizer (memcheck,
# racecheck, synccheck, initcheck) natively and under forced JIT; `kernpack info` both ways; the cold start in fresh
# processes; kernel timings beside a previous build (.gpu/kernpack-old, if
# staged). Logs go to $OUT. STEPS picks a subset, e.g. STEPS="native coldstart".
set -u
out=${OUT:-/tmp/kernpack-gpu}; mkdir -p "$out"
steps=${STEPS:-"native jit nocoop sanitize info coldstart speed"}
summary() { grep -E "test result|Test failed|panicked|ERROR SUMMARY" "$1" | sort | uniq -c; }
has() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

if has native; then
  bash .gpu/run.sh > "$out/native.log" 2>&1; echo "== native rc=$?"; summary "$out/native.log"
fi
if has jit; then
  CUDA_FORCE_PTX_JIT=1 bash .gpu/run.sh > "$out/jit.log" 2>&1; echo "== CUDA_FORCE_PTX_JIT=1 rc=$?"; summary "$out/jit.log"
fi
if has nocoop; then
  KERNPACK_GPU_NO_COOPERATIVE=1 bash .gpu/run.sh > "$out/nocoop.log" 2>&1
  echo "== KERNPACK_GPU_NO_COOPERATIVE=1 rc=$?"; summary "$out/nocoop.log"
fi
if has sanitize; then
  for tool in ${SAN_TOOLS:-memcheck racecheck synccheck initcheck}; do
  for mode in ${SAN_MODES:-native jit}; do
    log="$out/$tool-$mode.log"; : > "$log"
    # The kernel families' own test binaries (MEMCHECK_BINS to change the set).
    for name in ${MEMCHECK_BINS:-lombscargle_gpu reduce reduce_batched box_filter lorenz fg streams}; do
      bin=$(ls .gpu/bin/"$name"-* 2>/dev/null | grep -v '[.]dir$' | head -n 1)
      [ -n "$bin" ] || continue
      dir=$(cat "$bin.dir" 2>/dev/null || echo .)
      if [ "$mode" = jit ]; then export CUDA_FORCE_PTX_JIT=1; else unset CUDA_FORCE_PTX_JIT; fi
      (cd "$dir" && KERNPACK_REQUIRE_GPU=1 PROPTEST_CASES=4 compute-sanitizer --tool "$tool" --error-exitcode 99 \
        "$OLDPWD/$bin" --test-threads=1 gpu) >> "$log" 2>&1
      echo "$tool $mode $(basename "$bin") rc=$?" >> "$out/sanitize_rc.log"
    done
    unset CUDA_FORCE_PTX_JIT
    echo "== $tool ($mode)"; summary "$log"
  done
  done
  grep -v "rc=0" "$out/sanitize_rc.log" || echo "every sanitizer run rc=0"
fi
if has info; then
  .gpu/kernpack info > "$out/info.txt" 2>&1; sed -n 1,3p "$out/info.txt"; grep -A7 "^GPU 0" "$out/info.txt"
  CUDA_FORCE_PTX_JIT=1 .gpu/kernpack info > "$out/info-jit.txt" 2>&1; grep -A7 "^GPU 0" "$out/info-jit.txt"
  grep -E "lombscargle_uniform_f64|fg_cooperative_k1_c64" "$out/info-jit.txt"
fi
if has coldstart; then
  # Fresh processes: context, then module load + the first Lomb-Scargle result
  # (device buffers, f32, uniform grid, 1000 samples x 10^4 frequencies).
  for i in $(seq 1 11); do
    .gpu/kernpack bench lombscargle --nx 1000 --nf 10000 --uniform --reps 3 2>&1 | grep "cold start"
  done > "$out/coldstart.log"
  cat "$out/coldstart.log"
  if [ -x .gpu/kernpack-old ]; then
    for i in $(seq 1 5); do .gpu/kernpack-old bench lombscargle --nx 1000 --nf 10000 --uniform --reps 3 2>&1 | grep "cold start"; done
  fi
fi
if has speed; then
  for bin in .gpu/kernpack .gpu/kernpack-old; do
    [ -x "$bin" ] || continue
    for args in "--uniform --dtype f32" "--uniform --dtype f64" "--dtype f32" "--dtype f64"; do
      echo "$bin $args: $($bin bench lombscargle --nx 1024 --nf 1048576 $args 2>&1 | grep -o 'median_ms=[0-9.]*')"
    done
    echo "$bin box 3x3 f32: $($bin bench box-filter 2>&1 | grep -m3 -iE 'median|RESULT' | tr '\n' ' ')"
  done
fi

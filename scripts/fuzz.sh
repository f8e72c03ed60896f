#!/usr/bin/env bash
# Fuzzes kernpack's C ABI with libFuzzer (cargo-fuzz) on the CPU backend for a
# bounded time: the target fuzz/fuzz_targets/c_abi.rs calls the exported
# extern "C" functions with arbitrary arguments (huge counts, NULLs, NaN/Inf,
# arbitrary option structs) and fails on any crash, sanitizer report, panic
# (KP_ERROR_INTERNAL), write on failure, or empty error message.
#
#   scripts/fuzz.sh [seconds]      default 60 s of fuzzing, after the build
#
# Stable Rust is enough: cargo-fuzz passes nightly -Z flags (AddressSanitizer,
# SanitizerCoverage), which RUSTC_BOOTSTRAP=1 lets the stable compiler accept.
# It starts from the committed seed corpus fuzz/corpus/c_abi/ and writes new
# inputs to a temporary directory, so the committed corpus stays small; a
# crashing input lands in fuzz/artifacts/c_abi/ (git-ignored) and is replayed
# with KP_FUZZ_TRACE=1, which prints each call with its resolved arguments.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}

if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
export RUSTC_BOOTSTRAP=1
# The target runs on the CPU backend only: when build.rs finds an nvcc (CI
# installs one), compile the kernels for one architecture instead of all.
export KERNPACK_CUDA_ARCHS=${KERNPACK_CUDA_ARCHS:-75}
# LeakSanitizer: ignore the worker threads' own bookkeeping (see the file).
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$top/fuzz/lsan.supp:print_suppressions=0}

cd "$top/fuzz"
cargo fuzz build c_abi
binary="$top/fuzz/target/x86_64-unknown-linux-gnu/release/c_abi"

new=$(mktemp -d)
trap 'rm -rf "$new"' EXIT
mkdir -p "$top/fuzz/artifacts/c_abi"
before=$(ls "$top/fuzz/artifacts/c_abi" | wc -l)
# -timeout: seconds per input (one takes milliseconds); -rss_limit_mb also
# caps single allocations (-malloc_limit_mb defaults to it), so an attempt to
# allocate for an impossible size is a finding, not a slow OOM; -max_len: the
# decoder needs no more bytes than this for 8 calls.
status=0
cargo fuzz run c_abi "$new" "$top/fuzz/corpus/c_abi" -- \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
  -print_final_stats=1 || status=$?
if [ "$status" -ne 0 ]; then
  crash=$(ls -t "$top/fuzz/artifacts/c_abi"/* 2>/dev/null | head -1 || true)
  if [ -n "$crash" ] && [ "$(ls "$top/fuzz/artifacts/c_abi" | wc -l)" -gt "$before" ]; then
    echo "== fuzz: the calls of the failing input ($crash), KP_FUZZ_TRACE=1:"
    KP_FUZZ_TRACE=1 "$binary" "$crash" 2>&1 | grep -v '^INFO:\|^Running' | head -80 || true
  fi
  exit "$status"
fi
echo "== fuzz: no finding in $seconds s"

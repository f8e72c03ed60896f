#!/usr/bin/env bash
# Installs kernpack as a C library into a temporary prefix with cargo-c and
# builds C and C++ programs against that prefix the way users do:
#
#   1. `cargo cinstall --release --prefix P --libdir lib`, then the layout
#      (and libkernpack.a exports no C-level symbols but kp_*):
#      P/lib/libkernpack.so.0 (SONAME, checked with readelf), libkernpack.a,
#      P/include/kernpack/kernpack.h (identical to include/kernpack.h),
#      P/lib/pkgconfig/kernpack.pc, P/share/cmake/kernpack/*.cmake;
#   2. ffi-tests/lombscargle.c with `pkg-config --cflags --libs kernpack`
#      (shared), and against libkernpack.a with `pkg-config --static` (the
#      Libs.private), both run;
#   3. the prefix is moved elsewhere (the CMake package must be relocatable),
#      then ffi-tests/cmake/ (ffi-tests/lombscargle.cpp) is configured with
#      find_package(kernpack <crate version> EXACT), built against
#      kernpack::kernpack and kernpack::kernpack_static, and run.
#
# Every program must exit 0 and print "all checks passed". Needs cargo-c
# (`cargo install cargo-c --version 0.10.24 --locked`), cmake, pkg-config,
# readelf, cc and c++. CI (.ci/run) installs what is missing.
#
#   scripts/test-c-install.sh
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

for tool in cmake pkg-config readelf nm cc c++; do
  command -v "$tool" >/dev/null || { echo "test-c-install: $tool is missing" >&2; exit 1; }
done
cargo cinstall --version >/dev/null 2>&1 || {
  echo "test-c-install: cargo-c is missing: cargo install cargo-c --version 0.10.24 --locked" >&2
  exit 1
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

# When build.rs finds an nvcc (CI installs one) it would compile the kernels
# for every architecture again for this release build; one is enough here:
# this tests the packaging, the programs run on the CPU backend.
export KERNPACK_CUDA_ARCHS=${KERNPACK_CUDA_ARCHS:-75}

echo "-- cargo cinstall --release --prefix $prefix --libdir lib"
cargo cinstall --release --prefix "$prefix" --libdir lib

fail() { echo "test-c-install: $*" >&2; exit 1; }

echo "-- installed files"
(cd "$prefix" && find . \( -type f -o -type l \) | sort)
libdir=$prefix/lib
for f in lib/libkernpack.so lib/libkernpack.so.0 lib/libkernpack.a \
         include/kernpack/kernpack.h lib/pkgconfig/kernpack.pc \
         share/cmake/kernpack/kernpackConfig.cmake \
         share/cmake/kernpack/kernpackConfigVersion.cmake; do
  [ -e "$prefix/$f" ] || fail "$f is not installed"
done
soname=$(readelf -d "$libdir/libkernpack.so.0" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libkernpack.so.0 ] || fail "SONAME is '$soname', not libkernpack.so.0"
echo "SONAME $soname"
cmp include/kernpack.h "$prefix/include/kernpack/kernpack.h" \
  || fail "the installed header differs from the committed include/kernpack.h"

echo "-- the static archive defines no C-level symbols but kp_*"
# An application linking libkernpack.a with its own copy of a C library (zstd,
# say) must not meet duplicate definitions: besides kp_*, only Rust-mangled
# names, the compiler's runtime (__*) and local labels may be global.
leaked=$(nm -g --defined-only "$libdir/libkernpack.a" 2>/dev/null | awk 'NF == 3 {print $3}' \
  | grep -v -E '^(kp_|_ZN|_R|__|anon\.|DW\.ref\.|\.L)' | sort -u || true)
[ -z "$leaked" ] || fail "libkernpack.a exports C symbols besides kp_*: $(head -5 <<<"$leaked" | tr '\n' ' ')"

echo "-- kernpack.pc"
cat "$libdir/pkgconfig/kernpack.pc"
export PKG_CONFIG_PATH=$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
[ "$(pkg-config --variable=prefix kernpack)" = "$prefix" ] \
  || fail "pkg-config finds a kernpack.pc other than the one just installed"

run() {
  local out
  echo "-- run $1"
  if ! out=$("$1" 2>&1); then
    printf '%s\n' "$out"
    fail "$1 failed"
  fi
  printf '%s\n' "$out"
  grep -q "all checks passed" <<<"$out" || fail "$1 did not print 'all checks passed'"
}

cflags=(-std=c99 -Wall -Wextra -Werror -pedantic-errors)
# The program itself uses libm (sqrt, ...): -lm is its own, not kernpack's.
echo "-- C, shared: cc lombscargle.c \$(pkg-config --cflags --libs kernpack)"
# shellcheck disable=SC2046 # pkg-config output is meant to be split
cc "${cflags[@]}" ffi-tests/lombscargle.c $(pkg-config --cflags --libs kernpack) -lm \
  -Wl,-rpath,"$(pkg-config --variable=libdir kernpack)" -o "$work/lombscargle_c_shared"
readelf -d "$work/lombscargle_c_shared" | grep -q 'NEEDED.*\[libkernpack\.so\.0\]' \
  || fail "lombscargle_c_shared does not depend on libkernpack.so.0"
run "$work/lombscargle_c_shared"

# Static: the archive by path (next to the .so, -lkernpack would pick the
# shared object), then what it needs: Libs.private, via `pkg-config --static`.
static_libs=$(pkg-config --static --libs-only-l kernpack | sed 's/-lkernpack //')
[ -n "${static_libs// /}" ] || fail "kernpack.pc has no Libs.private"
echo "-- C, static: cc lombscargle.c \$(pkg-config --cflags kernpack) libkernpack.a $static_libs"
# shellcheck disable=SC2046,SC2086 # pkg-config output is meant to be split
cc "${cflags[@]}" ffi-tests/lombscargle.c $(pkg-config --cflags kernpack) \
  "$(pkg-config --variable=libdir kernpack)/libkernpack.a" $static_libs -lm \
  -o "$work/lombscargle_c_static"
if readelf -d "$work/lombscargle_c_static" | grep -q 'NEEDED.*libkernpack'; then
  fail "lombscargle_c_static depends on a shared libkernpack"
fi
run "$work/lombscargle_c_static"

# Relocatability of the CMake package: move the whole prefix.
moved=$work/moved-prefix
mv "$prefix" "$moved"
pkgid=$(cargo pkgid -p kernpack)
version=${pkgid##*[#@]}
echo "-- C++, CMake: find_package(kernpack $version EXACT) from $moved"
cmake -S ffi-tests/cmake -B "$work/build" -DCMAKE_PREFIX_PATH="$moved" \
  -DKERNPACK_EXPECTED_VERSION="$version" -DCMAKE_BUILD_TYPE=Debug
cmake --build "$work/build" -j 2
run "$work/build/lombscargle_cpp_shared"
readelf -d "$work/build/lombscargle_cpp_shared" | grep -q 'NEEDED.*\[libkernpack\.so\.0\]' \
  || fail "lombscargle_cpp_shared does not depend on libkernpack.so.0"
run "$work/build/lombscargle_cpp_static"
if readelf -d "$work/build/lombscargle_cpp_static" | grep -q 'NEEDED.*libkernpack'; then
  fail "lombscargle_cpp_static depends on a shared libkernpack"
fi
echo "-- C/C++ install test passed"

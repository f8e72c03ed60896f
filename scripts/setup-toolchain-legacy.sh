#!/usr/bin/env bash
# Installs the CUDA 11.8 compiler, the last toolkit that targets Kepler, Maxwell,
# Pascal and Volta (sm_35..sm_72), into .toolchain/cuda-11.8/ (git-ignored).
# Only scripts/regen-fatbin.sh needs it: the committed fatbin carries the
# 11.8-built entries, and build.rs reuses them while csrc/ is unchanged.
#
# Source: Debian bookworm's non-free packages (nvidia-cuda-toolkit 11.8.89), read
# through a private apt configuration under .toolchain/ so that the system's apt
# sources and installed packages are left alone. apt checks the packages against
# Debian's signed release files. Unpacked, not installed: the compiler driver,
# cicc, ptxas and fatbinary (nvidia-cuda-toolkit), libnvvm (libnvvm4), the
# headers of nvidia-cuda-dev (its libraries are not extracted) and libcu++'s
# headers, which cooperative_groups.h includes. About 200 MB on disk.
#
# Host compiler: nvcc 11.8 supports g++ <= 11; the kernels are compiled
# device-only (-fatbin), where the host compiler only preprocesses, so the
# system g++ is used with -allow-unsupported-compiler (see the `nvcc` wrapper).
# Idempotent: a second run with the toolchain present does nothing.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir="$top/.toolchain/cuda-11.8"
nvcc="$dir/bin/nvcc"
if [ -x "$nvcc" ] && "$nvcc" --version | grep -q 'release 11.8'; then
  echo "legacy toolchain present: $nvcc"
  exit 0
fi
version="11.8.89~11.8.0-5~deb12u1"
packages=("nvidia-cuda-toolkit=$version" "nvidia-cuda-dev=$version" "libnvvm4=$version" "libcu++-dev")

apt_dir="$dir/apt"
rm -rf "$dir"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs" "$dir/root"
echo "deb http://deb.debian.org/debian bookworm main contrib non-free" >"$apt_dir/sources.list"
apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o Dir::Etc::sourceparts=/dev/null
  -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
  -o APT::Sandbox::User=root -qq)
apt-get "${apt_opts[@]}" update
(cd "$apt_dir/debs" && apt-get "${apt_opts[@]}" download "${packages[@]}")

root="$dir/root"
for deb in "$apt_dir"/debs/*.deb; do
  case "$(basename "$deb")" in
    nvidia-cuda-dev_*)
      # 770 MB of libraries we do not need: take the headers only.
      dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$root" --wildcards './usr/include/*' ;;
    *) dpkg-deb -x "$deb" "$root" ;;
  esac
done
rm -rf "$apt_dir/debs" "$apt_dir/cache"

# Debian's nvcc.profile points at /usr; this one points into the unpacked tree.
# nvcc reads the profile next to its own binary.
tk="$root/usr/lib/nvidia-cuda-toolkit"
cat >"$tk/bin/nvcc.profile" <<'EOF'
TOP = $(_HERE_)/../../..
NVVMIR_LIBRARY_DIR = $(_HERE_)/../libdevice
PATH += $(_HERE_):$(TOP)/bin:
INCLUDES += "-I$(TOP)/include" $(_SPACE_)
LIBRARIES =+ $(_SPACE_) "-L$(TOP)/lib/x86_64-linux-gnu"
EOF
mkdir -p "$dir/bin"
cat >"$nvcc" <<EOF
#!/usr/bin/env bash
# nvcc 11.8 with the system g++ as host compiler (device-only builds; see
# scripts/setup-toolchain-legacy.sh).
# An absolute path: nvcc's own PATH starts with Debian's g++ wrapper, which
# looks only for g++-11 and older.
cxx="\${KERNPACK_LEGACY_CXX:-\$(command -v g++)}"
exec "$tk/bin/nvcc" -ccbin "\$cxx" -allow-unsupported-compiler "\$@"
EOF
chmod +x "$nvcc"
"$nvcc" --version | grep -q 'release 11.8'
echo "legacy toolchain installed: $nvcc"

#!/bin/bash
# make_bundle.sh: prepares, on this (CPU) machine, everything a lent GPU machine needs to
# run hv's GPU checks in one call (tools/device/gpu_checks.sh runs them there), because
# that machine reaches no package registry and its image has CUDA, PyTorch and the pip
# builds of NCCL, cuDNN, cuBLAS and cuSOLVER, but not Debian's Open MPI, PMIx, hwloc,
# OpenBLAS or oneDNN (seen on the H100 lent on 2026-11-26).
#
#   tools/device/make_bundle.sh [BUILD_DIR]     (default: build-device)
#
# 1. Configures and builds BUILD_DIR as a CUDA Release build for Hopper only
#    (CMAKE_CUDA_ARCHITECTURES=90: the H100 and H200; one architecture keeps the
#    bundle small), unless it is already configured (then it is only brought up to date).
# 2. Copies what the tests and benchmarks run (executables, libraries, CTest files,
#    scripts; no object files) into .device/BUILD_DIR, keeping the relative paths.
# 3. Packs into .device/runtime.tar.gz the installed files of every Debian package that
#    a built program, Open MPI's launcher or one of its plugins loads, except glibc,
#    libgcc and libstdc++ (the image has newer ones) and the CUDA libraries (the image's
#    own are used: gpu_checks.sh puts them on LD_LIBRARY_PATH).
# 4. Records the source and build paths (.device/origin), since CTest files name them.
# Then, in the same session (the carry limit is 64 MiB for the whole tree; the script
# prints the bundle's size):
#   device run, carry [".device"], command "bash tools/device/gpu_checks.sh", timeout_s 540
# .device is in .gitignore. Nothing here needs a GPU; nothing is installed.
set -euo pipefail

die() { echo "make_bundle.sh: $*" >&2; exit 2; }
[ -f CMakeLists.txt ] && [ -d tools/device ] || die "run it from hv's source root"
build=${1:-build-device}
case "$build" in /*|*..*) die "BUILD_DIR must be a folder below the source root, got '$build'" ;; esac
command -v dpkg-query >/dev/null || die "needs Debian's dpkg (the bundle is made of Debian's packages)"
[ -x /usr/local/cuda/bin/nvcc ] || die "no CUDA toolkit at /usr/local/cuda: the GPU build needs it"

src=$(pwd)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DHV_ENABLE_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
fi
grep -Eq '^HV_ENABLE_CUDA:[A-Z]+=ON' "$build/CMakeCache.txt" || die "$build is not a CUDA build (-DHV_ENABLE_CUDA=ON)"
cmake --build "$build" -j"$(nproc)" >/dev/null || die "the build of $build failed (run cmake --build $build to see why)"

rm -rf .device
mkdir -p ".device/$build"
# Everything but compiler intermediates: CTest needs its files, tests their scripts and data.
tar -C "$build" --exclude=./sim --exclude=CMakeFiles --exclude='*.o' --exclude='*.a' --exclude=Testing -cf - . |
  tar -C ".device/$build" -xf -
printf 'src=%s\nbuild=%s\n' "$src" "$src/$build" > .device/origin

# The Debian packages of every library the bundle's programs and Open MPI load.
elves=$(find ".device/$build" -type f -perm -u+x -exec sh -c 'head -c4 "$1" | grep -q ELF && echo "$1"' _ {} \;)
elves="$elves $(command -v mpirun) $(command -v orted) $(ls /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so)"
elves="$elves $(ls /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so 2>/dev/null || true)"
libs=$(for f in $elves; do LD_LIBRARY_PATH=".device/$build/collectives" ldd "$f" 2>/dev/null; done |
  awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u)
owner() { # the package that installed a path (merged /usr: /lib is /usr/lib)
  local p; p=$(readlink -f "$1")
  dpkg-query -S "$p" 2>/dev/null || dpkg-query -S "${p#/usr}" 2>/dev/null || dpkg-query -S "/usr$p" 2>/dev/null || true
}
pkgs=$(for l in $libs; do owner "$l"; done | cut -d: -f1 | sort -u)
pkgs="$pkgs openmpi-bin openmpi-common libopenmpi3 libpmix2 libhwloc15 libhwloc-plugins"
keep=$(for p in $pkgs; do
  case "$p" in libc6|libc6:*|libgcc-s1|libgcc-s1:*|libstdc++6|libstdc++6:*) ;; *) echo "${p%%:*}" ;; esac
done | sort -u)
files=$(for p in $keep; do dpkg-query -L "$p" 2>/dev/null; done | sort -u |
  while read -r f; do [ -f "$f" ] || [ -L "$f" ] && echo "${f#/}"; done)
echo "$files" | tar -C / -czf .device/runtime.tar.gz --no-recursion -T -
echo "$keep" > .device/packages.txt

size=$(du -sm .device | cut -f1)
echo "make_bundle.sh: .device holds $build ($(du -sm ".device/$build" | cut -f1) MiB) and runtime.tar.gz" \
  "($(du -sm .device/runtime.tar.gz | cut -f1) MiB, $(echo "$keep" | wc -w) packages: .device/packages.txt)"
echo "make_bundle.sh: $size MiB in all; the device tool carries at most 64 MiB with the tree"
[ "$size" -lt 60 ] || die ".device is $size MiB: too much to carry (strip the build, or build fewer targets)"

#!/bin/sh
# check_install.sh SOURCE_DIR BUILD_DIR: installs the build into a temporary prefix,
# then builds tests/install/consumer.c against it twice, through find_package(hv)
# and through pkg-config, and runs both on 2 ranks.
set -eu
src=$1
build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -x "$tmp/prefix/lib/libhvcoll.so" || test -e "$tmp/prefix/lib/libhvcoll.so"
cmake -S "$src/tests/install" -B "$tmp/cmake-consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cmake-consumer" >/dev/null
PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" cc -std=c11 -o "$tmp/pc-consumer" "$src/tests/install/consumer.c" \
  $(PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --cflags --libs hv) -Wl,-rpath,"$tmp/prefix/lib"
for exe in "$tmp/cmake-consumer/consumer" "$tmp/pc-consumer"; do
  LD_LIBRARY_PATH="$tmp/prefix/lib" timeout 60 mpirun --oversubscribe --bind-to none -np 2 "$exe"
done
# The installed programs find libhvcoll by themselves (RPATH), as users launch them.
for prog in bin/hvrun bin/hvbench workloads/cifar_ddp workloads/mnist_svm workloads/mnist_nn; do
  env -u LD_LIBRARY_PATH "$tmp/prefix/$prog" --help >/dev/null ||
    { echo "install check: $prog does not start from the prefix" >&2; exit 1; }
done
echo "install check: find_package(hv) and pkg-config hv both build and run; installed programs start"


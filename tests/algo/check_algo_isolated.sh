#!/bin/sh
# check_algo_isolated.sh COLLECTIVES_DIR CC MPI_FLAGS: every file of collectives/algo
# includes only its own headers and the public hv.h, and compiles with nothing else
# on the include path (a copy of algo/ and hv.h in an empty directory), so no engine
# type can reach an algorithm. Exit 1 naming the file otherwise.
set -u
src=$1 cc=$2 mpi=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/algo"
cp "$src"/algo/*.c "$src"/algo/*.h "$tmp/algo/"
cp "$src/hv.h" "$tmp/"
fail=0
for f in "$src"/algo/*.c "$src"/algo/*.h; do
  for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
    case "$inc" in */*) bad=1 ;; *) bad=0 ;; esac
    if [ "$inc" != hv.h ] && { [ $bad -eq 1 ] || [ ! -f "$src/algo/$inc" ]; }; then
      echo "algo isolation: $(basename "$f") includes \"$inc\", which is not algo/'s own header nor hv.h" >&2
      fail=1
    fi
  done
done
# MPI's include flags come as a CMake list (';'-separated): options and directories.
flags=""
old_ifs=$IFS
IFS=';'
for x in $mpi; do
  [ -z "$x" ] && continue
  case "$x" in -*) flags="$flags $x" ;; *) flags="$flags -I$x" ;; esac
done
IFS=$old_ifs
for f in "$tmp"/algo/*.c; do
  # shellcheck disable=SC2086
  if ! "$cc" -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -fsyntax-only -I"$tmp/algo" -I"$tmp" $flags "$f" \
      2>"$tmp/err"; then
    echo "algo isolation: $(basename "$f") does not compile with only algo/ and hv.h:" >&2
    cat "$tmp/err" >&2
    fail=1
  fi
done
[ $fail -eq 0 ] && echo "algo isolation: $(ls "$src"/algo/*.c | wc -l) files include only algo/ and hv.h and compile alone"
exit $fail

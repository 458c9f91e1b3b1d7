#!/bin/sh
# check_exports.sh LIBHVCOLL COLLECTIVES_DIR: the shared library exports exactly the
# functions its public headers declare with HV_API: no internal hv__ symbol, nothing
# undeclared, nothing declared missing. Exit 1 listing the differences.
set -u
lib=$1 dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort -u >"$tmp/exported"
cat "$dir"/hv.h "$dir"/hv_mpi.h "$dir"/hv_cuda.h "$dir"/hv_internal_bench.h |
  sed -n 's/^HV_API [^(]*[ *]\(hv_[a-z0-9_]*\)(.*/\1/p' | sort -u >"$tmp/declared"
fail=0
if grep -q '^hv__' "$tmp/exported"; then
  echo "exports: internal symbols exported:" >&2
  grep '^hv__' "$tmp/exported" >&2
  fail=1
fi
extra=$(comm -23 "$tmp/exported" "$tmp/declared")
missing=$(comm -13 "$tmp/exported" "$tmp/declared")
[ -n "$extra" ] && { echo "exports: exported but not declared with HV_API: $extra" >&2; fail=1; }
[ -n "$missing" ] && { echo "exports: declared with HV_API but not exported: $missing" >&2; fail=1; }
[ "$(wc -l <"$tmp/declared")" -gt 40 ] || { echo "exports: found only $(wc -l <"$tmp/declared") HV_API declarations" >&2; fail=1; }
[ $fail -eq 0 ] && echo "exports: $(wc -l <"$tmp/exported") symbols, exactly the HV_API declarations"
exit $fail

#!/bin/bash
# alloc_sweep.sh NAME STRIDE CMD...: the out-of-memory sweep (issue 27). Runs CMD once
# with no failure to count hv's allocations (libhv_alloc_faults.so, built with
# -DHV_ALLOC_FAULTS=ON; HV_FAIL_ALLOC_COUNT), then once for every STRIDE-th K from 1 to
# that count with HV_FAIL_ALLOC=K, so that the K-th allocation of hv returns NULL.
# Each run must end either with exit 0 (the allocation had a fallback) or with a
# non-zero exit and a message naming the failure (ALLOC_SWEEP_EXPECT, an ERE; default:
# out of memory / HV_ERR_NO_MEMORY / cannot allocate ...) - never a signal, a sanitizer
# report or a hang (ALLOC_SWEEP_TIMEOUT seconds, default 60).
# Multi-rank CMD (an mpirun line): ALLOC_SWEEP_RANK=R fails allocations on rank R only
# (HV_FAIL_ALLOC_RANK), and ALLOC_SWEEP_NP=N asks for N lines matching
# ALLOC_SWEEP_END (default '^(OK|FAILED) rank=') in every run: each rank must end with
# its own result or named error, not be killed by the launcher or hang. A line
# matching ALLOC_SWEEP_FAILED (default '^FAILED ') counts as a non-zero exit (mpirun
# told to let every rank end reports 0).
# ALLOC_SWEEP_FIRST / ALLOC_SWEEP_LAST narrow K to a range (re-checking a few).
# Prints one line per bad K and a summary: runs, failures injected, survived,
# distinct allocation sites hit (module+offset; ALLOC_SWEEP_SITES=FILE keeps them,
# symbolized with addr2line). Exit 0 when every run survived.
set -u
name=$1 stride=$2; shift 2
timeout_s=${ALLOC_SWEEP_TIMEOUT:-60}
expect=${ALLOC_SWEEP_EXPECT:-'out of ([a-z]+ )?memory|HV_ERR_NO_MEMORY|[Cc]annot allocate|[Nn]o memory'}
end_re=${ALLOC_SWEEP_END:-'^(OK|FAILED) rank='}
np=${ALLOC_SWEEP_NP:-0}
failed_re=${ALLOC_SWEEP_FAILED:-'^FAILED '}
tmp=$(mktemp -d /tmp/hv-alloc-sweep.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset HV_FAIL_ALLOC HV_FAIL_ALLOC_RANK HV_FAIL_ALLOC_COUNT
[ -n "${ALLOC_SWEEP_RANK:-}" ] && export HV_FAIL_ALLOC_RANK=$ALLOC_SWEEP_RANK

# One run; sets rc and leaves the output in $tmp/out.
run() {
  rm -f "$tmp/count"
  HV_FAIL_ALLOC_COUNT=$tmp/count timeout --signal=KILL "$timeout_s" "$@" >"$tmp/out" 2>&1
  rc=$?
}

run "$@"
count=$(sed -n 's/.*count=\([0-9]*\).*/\1/p' "$tmp/count" 2>/dev/null | sort -n | tail -1)
if [ "$rc" -ne 0 ] || [ -z "$count" ] || [ "$count" -eq 0 ]; then
  echo "FAIL $name: the run without injected failures exited $rc with ${count:-no} allocations counted" \
       "(is the build configured with -DHV_ALLOC_FAULTS=ON?)"
  tail -30 "$tmp/out" | sed 's/^/    | /'
  exit 1
fi
first=${ALLOC_SWEEP_FIRST:-1} last=${ALLOC_SWEEP_LAST:-$count}
[ "$last" -le "$count" ] || last=$count
echo "# $name: $count allocations of hv in a clean run; failing every ${stride}th from $first to $last (timeout $timeout_s s)"

runs=0 injected=0 fallback=0 named=0 bad=0 shown=0
: >"$tmp/sites"
t0=$(date +%s)
for ((k = first; k <= last; k += stride)); do
  HV_FAIL_ALLOC=$k run "$@"
  runs=$((runs + 1))
  [ "$rc" -eq 0 ] && [ "$np" -gt 0 ] && grep -Eq "$failed_re" "$tmp/out" && rc=1
  site=$(sed -n 's/^hv_alloc_faults: injected failure of allocation [0-9]* (\([a-z_]*\) .* at \(.*\)$/\2 \1/p' "$tmp/out" | head -1)
  why=
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then why="hang (killed after $timeout_s s)"
  elif grep -Eq 'AddressSanitizer|LeakSanitizer|ThreadSanitizer|runtime error:' "$tmp/out"; then
    why="sanitizer report: $(grep -Em1 'ERROR: [A-Za-z]*Sanitizer|runtime error:' "$tmp/out")"
  elif [ "$rc" -gt 128 ] || grep -Eq 'exited on signal|Segmentation fault|Aborted' "$tmp/out"; then
    why="killed by a signal (exit $rc)"
  elif [ "$np" -gt 0 ] && [ "$(grep -Ec "$end_re" "$tmp/out")" -lt "$np" ]; then
    why="only $(grep -Ec "$end_re" "$tmp/out") of $np ranks ended with a result or a named error (exit $rc)"
  elif [ "$rc" -ne 0 ] && ! grep -v '^hv_alloc_faults: ' "$tmp/out" | grep -Eq "$expect"; then
    why="exit $rc without a message naming the failure (/$expect/)"
  fi
  if [ -n "$site" ]; then
    injected=$((injected + 1))
    echo "$site" >>"$tmp/sites"
  fi
  if [ -n "$why" ]; then
    bad=$((bad + 1))
    echo "FAIL $name k=$k${site:+ at $site}: $why"
    if [ $shown -lt 3 ]; then
      shown=$((shown + 1))
      grep -v '^\[.*\] \[ *[0-9]*\] ' "$tmp/out" | tail -40 | sed 's/^/    | /'
    fi
  elif [ -n "$site" ]; then
    [ "$rc" -eq 0 ] && fallback=$((fallback + 1)) || named=$((named + 1))
  fi
done
sites=$(sort -u "$tmp/sites" | wc -l)
if [ -n "${ALLOC_SWEEP_SITES:-}" ]; then
  sort "$tmp/sites" | uniq -c | sort -k2 | while read -r n mod fn; do
    loc=$(addr2line -f -i -e "${mod%+0x*}" "${mod##*+}" 2>/dev/null | paste -sd' ' -)
    echo "$n $fn ${loc:-$mod}"
  done >"$ALLOC_SWEEP_SITES"
fi
echo "# $name: $runs runs in $(($(date +%s) - t0)) s, $injected failures injected at $sites distinct sites:" \
     "$named ended with a named error, $fallback recovered (exit 0), $bad bad"
[ $bad -eq 0 ]

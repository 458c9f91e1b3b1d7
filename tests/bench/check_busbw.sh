#!/bin/sh
# check_busbw.sh: proves hvbench's bus bandwidth factors are exactly nccl-tests':
# busbw / algbw = 2(n-1)/n for allreduce, 1 for broadcast, (n-1)/n for allgather,
# reducescatter and alltoall, read from --csv on 4 ranks; that algbw is the size
# column over the time column; and that the last column is cpu_us, the CPU time per
# iteration, above 0.
# usage: check_busbw.sh OUTDIR HVBENCH MPIRUN [MPIRUN FLAGS...]
out=$1
bench=$2
shift 2
np=4
status=0
for coll in allreduce allgather broadcast reducescatter alltoall; do
  csv="$out/busbw_$coll.csv"
  rm -f "$csv"
  if ! "$@" -np $np "$bench" "$coll" -b 4K -e 64K -f 4 -n 2 -w 0 -c 0 --no-peer \
      --csv "$csv" >/dev/null; then
    echo "check_busbw.sh: hvbench $coll failed" >&2
    exit 1
  fi
  case $coll in
    allreduce) factor="2*($np-1)/$np" ;;
    broadcast) factor="1" ;;
    *) factor="($np-1)/$np" ;;
  esac
  # Columns: 6 size_bytes, 11 time_us, 16 algbw_gbs, 17 busbw_gbs, 23 cpu_us.
  awk -F, -v coll="$coll" -v f="$(awk "BEGIN { print $factor }")" '
    NR == 1 { if ($23 != "cpu_us") { print coll ": column 23 is \"" $23 "\", want cpu_us"; bad++ } next }
    {
      rows++
      if (!($23 > 0)) { printf "%s %s B: cpu_us %s, want above 0\n", coll, $6, $23; bad++ }
      want_alg = $6 / 1e9 / ($11 / 1e6)
      if ($16 <= 0 || ($17 / $16 - f) > 1e-6 || (f - $17 / $16) > 1e-6) {
        printf "%s %s B: busbw/algbw = %.9g, want %.9g\n", coll, $6, $17 / $16, f; bad++
      }
      if ((want_alg - $16) / want_alg > 1e-3 || ($16 - want_alg) / want_alg > 1e-3) {
        printf "%s %s B: algbw %s, want size/time = %.9g\n", coll, $6, $16, want_alg; bad++
      }
    }
    END { if (rows == 0) { print coll ": no rows"; exit 1 } exit bad > 0 }' "$csv" || status=1
done
[ $status -eq 0 ] && echo "check_busbw.sh: busbw factors match nccl-tests for $np ranks"
exit $status

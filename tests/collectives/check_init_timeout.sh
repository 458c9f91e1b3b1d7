#!/bin/sh
# check_init_timeout.sh NP MPIRUN_CMD...: runs mpi_init_timeout under an outer bound;
# passes when every rank but the last printed INIT-TIMEOUT-OK (its hv_init failed
# with HV_ERR_TIMEOUT within HV_TIMEOUT and a little more) and none printed BAD. The
# launcher's exit code is not judged: ranks leave without MPI_Finalize on purpose.
np=$1
shift
out=$(timeout --signal=KILL 60 "$@" 2>&1)
status=$?
printf '%s\n' "$out" | grep -v '^\[.*\] \[ *[0-9]*\] '
if [ $status -eq 137 ] || [ $status -eq 124 ]; then
  echo "check_init_timeout: hv_init hung until the outer timeout" >&2
  exit 1
fi
ok=$(printf '%s\n' "$out" | grep -c "^INIT-TIMEOUT-OK ")
if [ "$ok" -ne $((np - 1)) ] || printf '%s\n' "$out" | grep -q "^INIT-TIMEOUT-BAD"; then
  echo "check_init_timeout: $ok of $((np - 1)) ranks failed hv_init with HV_ERR_TIMEOUT in time" >&2
  exit 1
fi
echo "check_init_timeout: $ok ranks gave up on the missing rank within HV_TIMEOUT"

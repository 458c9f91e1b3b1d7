# doctor_lib.sh: helpers of the tests/doctor scripts (sourced), on top of
# tests/launch/launch_lib.sh (lib_expect, lib_ok, lib_bad, lib_summary):
#   expect_line NAME RC LINE CMD...   pass when CMD exits RC and prints LINE exactly
#                                     (a whole line, no regex: verdicts have parentheses)
H_LAUNCH=$(cd "$(dirname "${BASH_SOURCE[0]}")/../launch" && pwd)
. "$H_LAUNCH/launch_lib.sh"

expect_line() {
  local name=$1 want=$2 line=$3; shift 3
  local out rc t0; t0=$(date +%s%N)
  out=$(timeout --signal=KILL "$LIB_TIMEOUT" "$@" 2>&1); rc=$?
  if [ "$rc" = "$want" ] && printf '%s\n' "$out" | grep -Fxq -- "$line"; then
    lib_ok "$name (rc $rc, $(lib_ms "$t0") ms)"
  else
    lib_bad "$name: rc $rc (want $want), no line '$line' in:"
    printf '%s\n' "$out" | sed 's/^/    | /' | head -40
  fi
}

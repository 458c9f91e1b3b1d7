#!/bin/sh
# expect_output.sh [--status N] REGEX COMMAND...: runs COMMAND, passes only if it exits
# with status N (0 unless given) AND its combined output matches REGEX (grep -E).
# Prints the output either way. (CTest's PASS_REGULAR_EXPRESSION alone ignores the
# exit status: a program that prints PASSED and then fails would pass.)
want=0
if [ "$1" = "--status" ]; then
  want=$2
  shift 2
fi
regex=$1
shift
out=$("$@" 2>&1)
status=$?
printf '%s\n' "$out"
if [ $status -ne "$want" ]; then
  echo "expect_output: command exited with status $status, expected $want" >&2
  exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$regex"; then
  echo "expect_output: output does not match: $regex" >&2
  exit 1
fi

#!/bin/sh
# expect_output.sh REGEX COMMAND...: runs COMMAND, passes only if it exits 0 AND its
# combined output matches REGEX (grep -E). Prints the output either way.
regex=$1
shift
out=$("$@" 2>&1)
status=$?
printf '%s\n' "$out"
if [ $status -ne 0 ]; then
  echo "expect_output: command exited with status $status" >&2
  exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$regex"; then
  echo "expect_output: output does not match: $regex" >&2
  exit 1
fi

#!/bin/sh
# expect_output.sh [--status N] [--also REGEX2]... REGEX COMMAND...: runs COMMAND, passes
# only if it exits with status N (0 unless given) AND its combined output matches REGEX
# and every REGEX2 (grep -E, each on some line). Prints the output either way.
# (CTest's PASS_REGULAR_EXPRESSION alone ignores the exit status: a program that
# prints PASSED and then fails would pass.)
want=0
also=""
while :; do
  case "$1" in
    --status) want=$2; shift 2 ;;
    --also) also="$also
$2"; shift 2 ;;
    *) break ;;
  esac
done
regex=$1
shift
out=$("$@" 2>&1)
status=$?
printf '%s\n' "$out"
if [ $status -ne "$want" ]; then
  echo "expect_output: command exited with status $status, expected $want" >&2
  exit 1
fi
printf '%s\n' "$regex$also" | while IFS= read -r r; do
  [ -z "$r" ] && continue
  if ! printf '%s\n' "$out" | grep -Eq -- "$r"; then
    echo "expect_output: output does not match: $r" >&2
    exit 1
  fi
done || exit 1

#!/bin/sh
# expect_exit.sh: runs a command and succeeds only when it exits with the given
# status. The bench tests use it (once per rank, under mpirun) to prove that hvbench
# fails the right way: 3 for wrong results, 2 for a bad command line, rather than
# passing or crashing. With EXPECT_STDERR set, the command's stderr must also contain
# that text (so a test can name the cause, not only the status).
# usage: [EXPECT_STDERR=TEXT] expect_exit.sh STATUS COMMAND [ARGS...]
want=$1
shift
if [ -z "$EXPECT_STDERR" ]; then
  "$@"
  got=$?
else
  errfile=$(mktemp) || exit 1
  "$@" 2>"$errfile"
  got=$?
  cat "$errfile" >&2
  if ! grep -qF -- "$EXPECT_STDERR" "$errfile"; then
    echo "expect_exit.sh: '$1' did not print '$EXPECT_STDERR' on stderr" >&2
    rm -f "$errfile"
    exit 1
  fi
  rm -f "$errfile"
fi
if [ "$got" -ne "$want" ]; then
  echo "expect_exit.sh: '$1' exited with status $got, expected $want" >&2
  exit 1
fi
exit 0

#!/bin/sh
# expect_exit.sh: runs a command and succeeds only when it exits with the given
# status. The bench tests use it (once per rank, under mpirun) to prove that hvbench
# fails the right way: 3 for wrong results, 2 for a bad command line, rather than
# passing or crashing.
# usage: expect_exit.sh STATUS COMMAND [ARGS...]
want=$1
shift
"$@"
got=$?
if [ "$got" -ne "$want" ]; then
  echo "expect_exit.sh: '$1' exited with status $got, expected $want" >&2
  exit 1
fi
exit 0

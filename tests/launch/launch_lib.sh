# launch_lib.sh: helpers shared by the launch test scripts (sourced).
#   lib_expect NAME RC PATTERN CMD...   run CMD (under a timeout); pass when its exit code is
#                                       RC and its output matches the extended regex PATTERN
#                                       (LIB_SHOW=1 lib_expect ...: print the output anyway)
#   lib_check_probe NAME FILE N NODES [disjoint]
#                                       FILE holds launch_probe output: N lines ending OK,
#                                       ranks 0..N-1, NODES nodes, (disjoint cores)
#   lib_check_cifar NAME RC FILE N NODES RESULTS
#                                       a cifar_ddp run of 3 epochs: exit code RC is 0, FILE
#                                       (its output) names N ranks on NODES nodes and every
#                                       epoch, RESULTS/results.csv has a finite training
#                                       loss that decreased from epoch 1 to epoch 3
#   lib_summary                         print the tally; exit 1 on any failure
# Every launch goes through `timeout`: a launch that cannot be satisfied queues or hangs.
LIB_PASS=0; LIB_FAIL=0
LIB_TIMEOUT=${LIB_TIMEOUT:-60}
lib_ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
lib_ok()  { echo "ok   - $*"; LIB_PASS=$((LIB_PASS+1)); }
lib_bad() { echo "FAIL - $*"; LIB_FAIL=$((LIB_FAIL+1)); }

lib_expect() {
  local name=$1 want=$2 pat=$3; shift 3
  local out rc t0; t0=$(date +%s%N)
  out=$(timeout --signal=KILL "$LIB_TIMEOUT" "$@" 2>&1); rc=$?
  if [ "$rc" = "$want" ] && printf '%s\n' "$out" | grep -Eq -- "$pat"; then
    lib_ok "$name (rc $rc, $(lib_ms "$t0") ms)"
    [ "${LIB_SHOW:-0}" = 0 ] || printf '%s\n' "$out" | sed 's/^/    | /' | tail -8
  else
    lib_bad "$name: rc $rc (want $want), output should match /$pat/:"
    printf '%s\n' "$out" | grep -v '^\[.*\] \[ *[0-9]*\] ' | sed 's/^/    | /' | tail -60
  fi
}

lib_check_probe() {
  local name=$1 file=$2 n=$3 nodes=$4 disjoint=${5:-} why=
  local ok_lines; ok_lines=$(grep -c '^probe .* OK$' "$file" || true)
  [ "$ok_lines" = "$n" ] || why="$why $ok_lines/$n ranks OK;"
  ! grep -q ' BAD' "$file" || why="$why a rank says BAD;"
  local ranks; ranks=$(sed -n 's/^probe rank=\([0-9]*\) .*/\1/p' "$file" | sort -n | tr '\n' ' ')
  [ "$ranks" = "$(seq 0 $((n-1)) | tr '\n' ' ')" ] || why="$why ranks are '$ranks';"
  [ "$(grep -c "^probe .* nodes=$nodes " "$file" || true)" = "$n" ] || why="$why not $nodes nodes everywhere;"
  if [ "$disjoint" = disjoint ]; then
    [ "$(grep -c '^probe .* disjoint=yes ' "$file" || true)" = "$n" ] || why="$why core sets not disjoint;"
  fi
  if [ -z "$why" ]; then lib_ok "$name"; sed 's/^/    /' "$file" | grep '^    probe' | sort -t= -k2 -n
  else lib_bad "$name:$why"; sed 's/^/    | /' "$file" | tail -20; fi
}

lib_check_cifar() {
  local name=$1 rc=$2 file=$3 n=$4 nodes=$5 res=$6 why= l
  [ "$rc" = 0 ] || why="$why exit code $rc;"
  for l in "World size: $n" "Number of nodes: $nodes" "Ranks per node: $((n / nodes))" \
           "Epoch 1/3 completed in .* seconds" "Epoch 3/3 completed in .* seconds" \
           "Validation Loss: .*, Validation Accuracy: .*" "Total ranks: $n"; do
    grep -Eq "^$l\$" "$file" || why="$why no line '$l';"
  done
  local first last
  first=$(awk -F, 'NR == 2 { print $2 }' "$res/results.csv" 2>/dev/null)
  last=$(awk -F, 'NR == 4 { print $2 }' "$res/results.csv" 2>/dev/null)
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b + 0 < a + 0) }' ||
    why="$why training loss not finite and decreasing (epoch 1: '$first', epoch 3: '$last');"
  if [ -z "$why" ]; then lib_ok "$name: loss $first -> $last"
  else lib_bad "$name:$why"; sed 's/^/    | /' "$file" | tail -20; fi
}

lib_summary() {
  echo "# $LIB_PASS passed, $LIB_FAIL failed"
  [ "$LIB_FAIL" = 0 ]
}

# lib_need_root_tools TOOL...: exit 77 (CTest SKIP_RETURN_CODE) without root or a tool
lib_need_root_tools() {
  [ "$(id -u)" = 0 ] || { echo "SKIP: needs root (network namespaces, Slurm daemons)"; exit 77; }
  local t; for t in "$@"; do
    command -v "$t" >/dev/null 2>&1 || { echo "SKIP: $t not installed (see tools/deps/launch.txt)"; exit 77; }
  done
}

# lib_free_port: the first of 6817, 6827, ... whose pair (port, port+1) nobody listens on,
# so a test cluster never collides with a Slurm already running on this machine
lib_free_port() {
  local p; for p in $(seq 6817 10 6997); do
    ss -ltn | grep -qE ":($p|$((p+1))) " || { echo "$p"; return 0; }
  done
  return 1
}

# lib_shm_leftovers BEFORE_LIST: /dev/shm entries that are new since BEFORE_LIST (a file
# from `ls /dev/shm`) and mapped by no process a second later: what a job left behind
lib_shm_leftovers() {
  local f new; sleep 1
  new=$(ls /dev/shm 2>/dev/null | grep -vxF -f "$1" || true)
  for f in $new; do
    grep -qlF "/dev/shm/$f" /proc/[0-9]*/maps 2>/dev/null || echo "$f"
  done
}

# lib_cluster_procs DIR: pids of processes that belong to the Slurm test cluster in DIR
# (daemons and steps holding its logs open, tasks and sruns with its SLURM_CONF),
# leaving out this script's own descendants (the scan's pipeline inherits SLURM_CONF)
# and processes that exit while we look.
lib_descends_from_us() {
  local p=$1 ppid
  while [ -n "$p" ] && [ "$p" -gt 1 ] 2>/dev/null; do
    [ "$p" = "$$" ] && return 0
    ppid=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f2)
    [ -n "$ppid" ] || return 1
    p=$ppid
  done
  return 1
}
lib_cluster_procs() {
  local p cmd
  for p in $( { find /proc/[0-9]*/fd -maxdepth 1 -lname "$1/log/*" 2>/dev/null | cut -d/ -f3
                grep -lzx "SLURM_CONF=$1/slurm.conf" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3
              } | sort -u); do
    lib_descends_from_us "$p" && continue
    cmd=$(tr '\0' ' ' 2>/dev/null < "/proc/$p/cmdline" | cut -c1-40) || continue
    [ -e "/proc/$p" ] && [ -n "$cmd" ] && printf '%s(%s) ' "$p" "$cmd"
  done
}

#!/bin/bash
# Stops the Slurm test cluster whose files are under HV_SLURM_DIR (made by
# slurm-local-up.sh or slurm-netns-up.sh), by pid file only, then reaps what a hung
# step leaves: slurmstepd ignores SIGTERM on purpose (steps outlive slurmd restarts).
# Only processes of THIS cluster are touched: those holding a file under $D/log open
# (slurmstepd), and those whose environment has SLURM_CONF=$D/slurm.conf and either a
# SLURM_JOB_ID (job tasks) or srun as executable (clients still waiting on it).
# Usage: slurm-down.sh [--keep-munge]     (run it before netns-down.sh)
D=${HV_SLURM_DIR:-/tmp/hv-slurm-local}
reap() {  # one pass over /proc with find and grep: a per-process shell loop takes seconds
  local p f pids=()
  for p in $(find /proc/[0-9]*/fd -maxdepth 1 -lname "$D/log/*" 2>/dev/null | cut -d/ -f3 | sort -u); do
    pids+=("$p")
  done
  for f in $(grep -lzx "SLURM_CONF=$D/slurm.conf" /proc/[0-9]*/environ 2>/dev/null); do
    p=$(echo "$f" | cut -d/ -f3)
    if grep -qz '^SLURM_JOB_ID=' "$f" 2>/dev/null || [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = /usr/bin/srun ]; then
      pids+=("$p")
    fi
  done
  local keep=()
  for p in "${pids[@]}"; do [ "$p" = $$ ] || [ "$p" = "$PPID" ] || keep+=("$p"); done
  [ ${#keep[@]} = 0 ] || { echo "slurm-down: reaping leftover pids: ${keep[*]}" >&2; kill -9 "${keep[@]}" 2>/dev/null || true; }
}
pids=()
for f in "$D"/run/slurmd*.pid "$D/run/slurmctld.pid"; do
  [ -s "$f" ] && p=$(cat "$f") && kill "$p" 2>/dev/null && pids+=("$p")
done
if [ -e "$D/run/munged.ours" ] && [ "${1:-}" != --keep-munge ] && [ -s /run/munge/munged.pid ]; then
  p=$(cat /run/munge/munged.pid) && kill "$p" 2>/dev/null && pids+=("$p"); rm -f "$D/run/munged.ours"
fi
# all signalled at once, then waited for: each Slurm daemon takes ~2 s to exit
for p in "${pids[@]}"; do
  for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$p" 2>/dev/null || true
done
reap
rm -f "$D"/run/*.pid
exit 0

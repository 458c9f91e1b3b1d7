#!/bin/bash
# peer_mpi_bench.sh: hv's allreduce beside other MPI libraries and oneCCL on one node,
# measured back to back in one sitting, so one table has them all side by side:
#   hv:auto   hvbench through the engine (HV_ALLREDUCE_ALGO=auto), Open MPI underneath
#   alg:shm   hvbench --no-engine --algo shm: the shared-memory algorithm alone
#   ompi      hvbench's own peer column: MPI_Allreduce of the Open MPI hv is built with
#   impi      MPI_Allreduce of Intel MPI           (peer_allreduce.c built with its mpigcc)
#   oneccl    oneCCL's ccl::allreduce on host buffers (peer_oneccl.cpp, under Intel MPI)
#   mpi       MPI_Allreduce of any other MPI given by --mpicc (MPICH, Open MPI 5, ...)
# Every backend runs each round, one after the other (rounds alternate, so a slow spell
# of a shared machine hits all of them); the table gives, per size, the median over the
# rounds of each run's p50 (the slowest rank per iteration, as hvbench reports it), the
# 1-minute load average at each round, and each peer's time over hv:auto's (above 1: hv
# is faster). Float32 sum, out of place (--in-place: in place), as hvbench.
#
# It installs nothing. The peers come from PyPI:
#   python3 -m venv /opt/peers && /opt/peers/bin/pip install impi-rt impi-devel oneccl-devel
# then: tests/perf/peer_mpi_bench.sh --impi /opt/peers --oneccl /opt/peers
# (Intel MPI is run with I_MPI_ROOT=PREFIX, PREFIX/lib, lib/release and
# opt/mpi/libfabric/lib on LD_LIBRARY_PATH and FI_PROVIDER=shm, as on a single node.)
#
# Options:
#   --build DIR        hv's build folder (default: build), for DIR/bin/hvbench
#   --old-build DIR    another hv build (an earlier commit): its hv:auto runs in the same
#                      rounds as hv:old, so a change is measured against what it replaced
#   --impi PREFIX      Intel MPI's pip prefix (has bin/mpigcc)
#   --oneccl PREFIX    oneCCL's pip prefix (has include/oneapi/ccl.hpp; needs --impi)
#   --mpicc PATH       another MPI's compiler wrapper; its mpirun is taken beside it
#   -np N              ranks (default 2); more than the cores: oversubscribed, unbound,
#                      and the table adds CPU time per byte (wall time means little then)
#   -b SIZE -e SIZE -f F   sizes as hvbench (default 4K to 256M, factor 4)
#   -n N -w N          timed and warm-up iterations per size (default 50 and 10)
#   --tensors K        K tensors per iteration: hv as K named requests in one group
#                      (hvbench --tensors), the peers as K calls
#   --grouped          with --tensors: hv as one hv_grouped_allreduce
#   --rounds R         rounds (default 5)
#   --in-place         in place instead of out of place (peers only: hvbench times
#                      its p50 on out of place)
#   --keep DIR         keep the peers' binaries and raw outputs in DIR
set -euo pipefail

die() { echo "peer_mpi_bench.sh: $*" >&2; exit 2; }

build=build old_build= impi= oneccl= mpicc= np=2 minb=4K maxb=256M factor=4 iters=50 warm=10
tensors=1 grouped= rounds=5 in_place= keep=
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift ;;
    --old-build) old_build=$2; shift ;;
    --impi) impi=$2; shift ;;
    --oneccl) oneccl=$2; shift ;;
    --mpicc) mpicc=$2; shift ;;
    -np) np=$2; shift ;;
    -b) minb=$2; shift ;;
    -e) maxb=$2; shift ;;
    -f) factor=$2; shift ;;
    -n) iters=$2; shift ;;
    -w) warm=$2; shift ;;
    --tensors) tensors=$2; shift ;;
    --grouped) grouped=--grouped ;;
    --rounds) rounds=$2; shift ;;
    --in-place) in_place=--in-place ;;
    --keep) keep=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (--help lists them)" ;;
  esac
  shift
done
hvbench=$build/bin/hvbench
[ -x "$hvbench" ] || die "no $hvbench: build hv first (cmake --build $build --target hvbench) or give --build"
[ -z "$old_build" ] || [ -x "$old_build/bin/hvbench" ] || die "--old-build $old_build has no bin/hvbench"
[ -z "$impi" ] || [ -x "$impi/bin/mpigcc" ] || die "--impi $impi has no bin/mpigcc: pip install impi-rt impi-devel into it"
[ -z "$oneccl" ] || [ -n "$impi" ] || die "--oneccl runs under Intel MPI: give --impi too"
[ -z "$oneccl" ] || [ -f "$oneccl/include/oneapi/ccl.hpp" ] || die "--oneccl $oneccl has no include/oneapi/ccl.hpp: pip install oneccl-devel into it"
[ -z "$mpicc" ] || [ -x "$mpicc" ] || die "--mpicc $mpicc is not an executable"
[ "$tensors" -ge 1 ] 2>/dev/null || die "--tensors takes a count"

work=${keep:-$(mktemp -d)}
mkdir -p "$work"
[ -n "$keep" ] || trap 'rm -rf "$work"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
cores=$(nproc)
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1} OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
if [ "$np" -le "$cores" ]; then ompi_bind=(--bind-to core) impi_pin=1; else ompi_bind=(--oversubscribe --bind-to none) impi_pin=0; fi

impi_env() {
  env I_MPI_ROOT="$impi" PATH="$impi/bin:$PATH" FI_PROVIDER=shm I_MPI_PIN=$impi_pin \
    LD_LIBRARY_PATH="$impi/lib:$impi/lib/release:$impi/opt/mpi/libfabric/lib:${LD_LIBRARY_PATH:-}" "$@"
}
if [ -n "$impi" ]; then
  impi_env mpigcc -O2 -o "$work/peer_impi" "$here/peer_allreduce.c"
fi
if [ -n "$oneccl" ]; then
  impi_env mpigxx -O2 -std=c++17 -I"$oneccl/include" -o "$work/peer_oneccl" "$here/peer_oneccl.cpp" \
    -L"$oneccl/lib" -Wl,-rpath,"$oneccl/lib" -lccl 2>"$work/oneccl_build.log" ||
    { cat "$work/oneccl_build.log" >&2; die "building the oneCCL peer failed"; }
fi
if [ -n "$mpicc" ]; then
  "$mpicc" -O2 -o "$work/peer_mpi" "$here/peer_allreduce.c"
  mpi_run=$(dirname "$mpicc")/mpirun
  [ -x "$mpi_run" ] || mpi_run=$(dirname "$mpicc")/mpiexec
fi

sizes=(-b "$minb" -e "$maxb" -f "$factor")
peer_args=("${sizes[@]}" -n "$iters" -w "$warm" --tensors "$tensors" $in_place)
raw=$work/raw.txt
: > "$raw"
# hvbench's --csv rows, out of place: "backend size p50_us cpu_us_per_rank wrong", as
# the peers' lines (its MPI peer is Open MPI, "ompi").
hvbench_p50() {
  awk -F, 'NR > 1 && $10 == "out-of-place" { t = $1 == "mpi" ? "ompi" : $1; print t, $6, $14, $23, $18 }' "$1"
}
for round in $(seq "$rounds"); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  echo "load $round $load" >> "$raw"
  mpirun -np "$np" "${ompi_bind[@]}" "$hvbench" allreduce "${sizes[@]}" -n "$iters" -w "$warm" --algo auto \
    --tensors "$tensors" $grouped --csv "$work/hv.$round.csv" > "$work/hv.$round.txt" 2>&1 ||
    { cat "$work/hv.$round.txt" >&2; die "hvbench failed"; }
  hvbench_p50 "$work/hv.$round.csv" >> "$raw"
  if [ -n "$old_build" ]; then
    mpirun -np "$np" "${ompi_bind[@]}" "$old_build/bin/hvbench" allreduce "${sizes[@]}" -n "$iters" -w "$warm" \
      --algo auto --tensors "$tensors" $grouped --no-peer --csv "$work/old.$round.csv" > "$work/old.$round.txt" 2>&1 ||
      { cat "$work/old.$round.txt" >&2; die "the old build's hvbench failed"; }
    hvbench_p50 "$work/old.$round.csv" | sed 's/^hv:auto /hv:old /' >> "$raw"
  fi
  if [ "$tensors" = 1 ]; then
    mpirun -np "$np" "${ompi_bind[@]}" "$hvbench" allreduce "${sizes[@]}" -n "$iters" -w "$warm" --algo shm \
      --no-engine --no-peer --csv "$work/shm.$round.csv" > "$work/shm.$round.txt" 2>&1 ||
      { cat "$work/shm.$round.txt" >&2; die "hvbench --no-engine failed"; }
    hvbench_p50 "$work/shm.$round.csv" >> "$raw"
  fi
  if [ -n "$impi" ]; then
    impi_env mpirun -np "$np" "$work/peer_impi" "${peer_args[@]}" 2>&1 | awk '$1 == "peer" { print "impi", $2, $3, $5, $6 }' >> "$raw"
  fi
  if [ -n "$oneccl" ]; then
    impi_env mpirun -np "$np" "$work/peer_oneccl" "${peer_args[@]}" 2>&1 | awk '$1 == "peer" { print "oneccl", $2, $3, $5, $6 }' >> "$raw"
  fi
  if [ -n "$mpicc" ]; then
    "$mpi_run" -np "$np" "$work/peer_mpi" "${peer_args[@]}" 2>&1 | awk '$1 == "peer" { print "mpi", $2, $3, $5, $6 }' >> "$raw"
  fi
done

python3 - "$raw" "$np" "$cores" "$tensors" <<'EOF'
import statistics, sys
raw, np, cores, tensors = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
times, cpu, loads, wrong = {}, {}, [], 0
for line in open(raw):
    f = line.split()
    if f[0] == "load":
        loads.append(f[2]); continue
    times.setdefault(f[0], {}).setdefault(int(f[1]), []).append(float(f[2]))
    if len(f) >= 5:
        cpu.setdefault(f[0], {}).setdefault(int(f[1]), []).append(float(f[3]))
        wrong += int(f[4])
order = [t for t in ("hv:auto", "hv:old", "alg:shm", "impi", "oneccl", "ompi", "mpi") if t in times]
sizes = sorted({s for t in order for s in times[t]})
med = lambda v: statistics.median(v) if v else float("nan")
print(f"# {np} ranks on {cores} cores{' (oversubscribed)' if np > cores else ''}, float32 sum, "
      f"{tensors} tensor(s) per iteration; medians over {len(loads)} rounds of each run's p50 (us); "
      f"load average at each round: {' '.join(loads)}")
print("| size | " + " | ".join(order) + " | " + " | ".join(f"{t} / hv:auto" for t in order if t != "hv:auto") + " |")
print("|---" * (1 + 2 * len(order) - 1) + "|")
for s in sizes:
    m = {t: med(times[t].get(s, [])) for t in order}
    name = f"{s >> 20} MiB" if s >= 1 << 20 else f"{s >> 10} KiB"
    cells = [f"{m[t]:.2f}" for t in order]
    ratios = [f"{m[t] / m['hv:auto']:.2f}" for t in order if t != "hv:auto"] if "hv:auto" in m else []
    print(f"| {name} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
if np > cores and cpu:
    print("\n# CPU time per rank per byte (ns/B, medians over the rounds; every thread of a rank counts)")
    print("| size | " + " | ".join(t for t in order if t in cpu) + " | " +
          " | ".join(f"{t} / hv:auto" for t in order if t in cpu and t != "hv:auto") + " |")
    print("|---" * (len([t for t in order if t in cpu]) * 2) + "|")
    for s in sizes:
        c = {t: med(cpu[t].get(s, [])) * 1e3 / s for t in order if t in cpu}
        name = f"{s >> 20} MiB" if s >= 1 << 20 else f"{s >> 10} KiB"
        ratios = [f"{c[t] / c['hv:auto']:.2f}" for t in c if t != "hv:auto"] if "hv:auto" in c else []
        print(f"| {name} | " + " | ".join(f"{v:.3f}" for v in c.values()) + " | " + " | ".join(ratios) + " |")
if wrong:
    print(f"# WRONG RESULTS: {wrong} elements in the checked runs")
    sys.exit(3)
EOF

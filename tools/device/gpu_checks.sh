#!/bin/bash
# gpu_checks.sh: hv's GPU checks in one call on a lent GPU machine, over the bundle that
# tools/device/make_bundle.sh made here (.device: a CUDA build and Debian's runtime).
# Every step runs even when an earlier one failed, each under its own time limit, so
# one call (timeout_s 540) brings back all there is to see; logs land in $OUT (at most
# 8 files come back):
#   summary.txt   the GPU, the libraries each program resolved, every step's exit status
#   ctest_gpu.log ctest -L gpu: every test that needs a GPU (skipped, 77, elsewhere)
#   bench.log     hvbench --device cuda against raw NCCL (allreduce, 1 rank)
#   train.log     cifar_ddp on the GPU: --amp, then 2 ranks sharing the GPU as 2 emulated
#                 nodes with --sync-bn and with --comm-hook powersgd (device paths)
#   torch.log     tests/perf/gpu_vs_torch.py: hv's trainer against the image's PyTorch
#   STEPS="ctest bench train torch" (default all) picks steps; EXTRA="cmd" runs one more
#   command into extra.log.
# The image's PyTorch wheel brings NCCL, cuDNN, cuBLAS and cuSOLVER for CUDA 13: their
# folders go on LD_LIBRARY_PATH. Debian's runtime is unpacked over / without replacing
# anything the image has (--skip-old-files).
set -uo pipefail
OUT=${OUT:-/tmp/hv-gpu-checks}
mkdir -p "$OUT"
summary=$OUT/summary.txt
say() { echo "$*" | tee -a "$summary"; }
[ -f .device/origin ] || { echo "gpu_checks.sh: no .device/origin: run tools/device/make_bundle.sh here first and carry .device" >&2; exit 2; }
. .device/origin
name=$(basename "$build")
: > "$summary"
say "# gpu_checks.sh $(date -u '+%F %T') on $(hostname)"
nvidia-smi -L 2>&1 | tee -a "$summary" || say "nvidia-smi failed: no GPU?"

# Debian's Open MPI, hwloc, OpenBLAS and oneDNN.
tar -xzf .device/runtime.tar.gz -C / --skip-old-files 2>>"$summary" && ldconfig 2>/dev/null
# The CTest files name the source and build folders of the machine that built them.
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
[ -e "$PWD/$name" ] || ln -s "$PWD/.device/$name" "$PWD/$name"
[ -e "$build" ] || { say "gpu_checks.sh: $build is not reachable from here"; exit 2; }

# The image's CUDA 13 libraries (pip wheels beside its PyTorch).
site=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null || true)
cuda_libs=$(ls -d "$site"/nvidia/*/lib 2>/dev/null | tr '\n' ':')
export LD_LIBRARY_PATH="$build/collectives:${cuda_libs}${LD_LIBRARY_PATH:-}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
for prog in bin/hvbench workloads/cifar_ddp tests/trainer/bench_trainer; do
  [ -x "$build/$prog" ] || continue
  missing=$(ldd "$build/$prog" | grep 'not found' | awk '{print $1}' | tr '\n' ' ')
  say "$prog: ${missing:+MISSING $missing}${missing:-every library found}"
done

step() { # NAME LIMIT_S LOG command...: runs it, records its exit status
  local name=$1 limit=$2 log=$3; shift 3
  case " ${STEPS:-ctest bench train torch extra} " in *" $name "*) ;; *) return 0 ;; esac
  local t0=$SECONDS
  echo "\$ $*" >> "$OUT/$log"
  timeout --signal=KILL "$limit" "$@" >> "$OUT/$log" 2>&1
  local rc=$?
  say "step $name: exit $rc after $((SECONDS - t0)) s ($log)"
}

data="--dataset fashion-mnist --data-dir $src/workloads/data/mnist-10k"
step ctest 240 ctest_gpu.log ctest --test-dir "$build" -L gpu --output-on-failure --timeout 200 -j4
step bench 60 bench.log mpirun -np 1 "$build/bin/hvbench" allreduce --device cuda --algo all -b 4K -e 256M -f 4 -n 20 -w 5
step train 60 train.log mpirun -np 1 "$build/workloads/cifar_ddp" --device cuda --amp --model wrn-16-4 --epochs 1 \
  --no-plots --results "$OUT/run_amp" $data
step train 60 train.log mpirun -np 2 -x HV_RANKS_PER_NODE=1 "$build/workloads/cifar_ddp" --device cuda --sync-bn \
  --model wrn-10-1 --epochs 1 --no-plots --results "$OUT/run_syncbn" $data
step train 60 train.log mpirun -np 2 -x HV_RANKS_PER_NODE=1 "$build/workloads/cifar_ddp" --device cuda \
  --comm-hook powersgd:rank=4,start=10 --model wrn-10-1 --epochs 1 --no-plots --results "$OUT/run_powersgd" $data
step torch 120 torch.log python3 "$src/tests/perf/gpu_vs_torch.py" --bench "$build/tests/trainer/bench_trainer" \
  --models wrn-16-4 --batch 512
[ -n "${EXTRA:-}" ] && step extra 120 extra.log bash -c "$EXTRA"
rm -rf "$OUT"/run_* # their folders would not come back (at most 8 files); the logs hold their lines
say "# done $(date -u '+%T')"

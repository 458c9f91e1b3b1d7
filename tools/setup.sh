#!/usr/bin/env bash
# tools/setup.sh run|test: everything a fresh Debian 12 machine needs, in one command.
#   run   installs the missing Debian packages (tools/deps/*.txt), builds, and runs the
#         main job (workloads/cifar_ddp on 2 ranks; about 11 minutes on 2 idle cores);
#   test  does the same set-up, then the whole test suite: the normal build (with the
#         GPU code compiled and linked when the CUDA toolkit is present), an
#         address+undefined sanitizer build of the whole suite, a thread sanitizer
#         build of the engine tests, the trainer's data loader and DDP and the soak
#         (label tsan), and the libFuzzer targets (clang, bounded time).
# HV_BUILD_DIR chooses the build directory (default: build/ in the source tree).
set -euo pipefail
mode=${1:-run}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${HV_BUILD_DIR:-$root/build}
jobs=$(nproc)

install_packages() {
  local wanted missing=()
  wanted=$(cat "$root"/tools/deps/*.txt | sed 's/#.*//' | tr -s ' \t' '\n' | sort -u)
  for p in $wanted; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

configure_and_build() { # dir, extra cmake args..., [-- targets...]
  local dir=$1 args=() targets=()
  shift
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do args+=("$1"); shift; done
  [ $# -gt 0 ] && shift && targets=(--target "$@")
  cmake -S "$root" -B "$dir" -DHV_WERROR=ON "${args[@]}" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; exit 1; }
  grep -A12 "hv .* configuration" "$dir.configure.log" || true
  cmake --build "$dir" -j"$jobs" "${targets[@]}"
}

# Open MPI refuses root unless told; CI and containers run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

install_packages
mkdir -p "$(dirname "$build")"
configure_and_build "$build"

case "$mode" in
  run)
    # The main job: cifar_ddp, WideResNet data-parallel training on 2 ranks of this
    # machine through hvrun, on Fashion-MNIST (Debian's dataset-fashion-mnist),
    # with its per-epoch report; results and plots land in build/cifar_ddp_results.
    cd "$build"
    PATH="$build/bin:$PATH" hvrun -np 2 workloads/cifar_ddp --results cifar_ddp_results \
      --checkpoint-dir cifar_ddp_checkpoints
    ;;
  test)
    # Label 'long': repeats and sweeps that take tens of minutes (ctest -L long by hand).
    (cd "$build" && ctest --output-on-failure -j2 --timeout 900 -LE long)
    # Sanitizers: CPU-only builds (the GPU code cannot run here anyway).
    # Full unwinding and no dlclose of Open MPI's plugins, so leak stacks name their
    # library and the suppressions of MPI's own exit-time allocations match.
    export OMPI_MCA_mca_base_component_disable_dlclose=1
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:fast_unwind_on_malloc=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    export LSAN_OPTIONS=suppressions=$root/tests/sanitizer/lsan.supp:print_suppressions=0
    export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$root/tests/sanitizer/tsan.supp"
    # With the allocation-failure injector (cmake/hv_alloc_faults.cmake): the faults.alloc
    # tests fail hv's allocations one by one under ASan (the full sweeps are 'slow').
    configure_and_build "$build-asan" -DHV_ENABLE_CUDA=OFF -DHV_SANITIZE=address,undefined \
      -DCMAKE_BUILD_TYPE=Debug -DHV_ALLOC_FAULTS=ON
    (cd "$build-asan" && ctest --output-on-failure -j2 --timeout 900 -LE "slow|cluster|long")
    configure_and_build "$build-tsan" -DHV_ENABLE_CUDA=OFF -DHV_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug \
      -- mpi_collectives mpi_grouped mpi_comm_split mpi_join mpi_vector mpi_stress mpi_errors mpi_flight algo_test faults_threads test_data_cifar test_ddp mpi_soak
    # The shared-memory allreduce's flags and the node's AND, ranks as threads.
    cmake --build "$build-tsan" -j2 --target shm_allreduce_test
    (cd "$build-tsan" && ctest --output-on-failure -j2 --timeout 900 -L tsan)
    # libFuzzer targets of the input readers and parsers (clang; tests/fuzz/README.md):
    # each fuzzes for a bounded time from its seed corpus; -V prints its executions.
    CC=clang configure_and_build "$build-fuzz" -DHV_ENABLE_CUDA=OFF -DHV_FUZZ=ON -- fuzz_targets
    (cd "$build-fuzz" && ctest -V -j2 -L fuzz)
    ;;
  *)
    echo "usage: tools/setup.sh run|test" >&2
    exit 2
    ;;
esac

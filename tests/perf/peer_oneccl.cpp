// peer_oneccl.cpp: oneCCL's allreduce on host buffers, timed as hvbench times hv and as
// peer_allreduce.c times an MPI (a barrier, back-to-back iterations each timed on every
// rank, the slowest rank per iteration, p50 over iterations), for
// tests/perf/peer_mpi_bench.sh. oneCCL is C++ only for host buffers, hence this file;
// it is built by that script against a pip-installed oneCCL (oneccl-devel) and run
// under Intel MPI's mpirun (oneCCL brings Intel MPI as its launcher and transport).
//
//   mpirun -np 2 peer_oneccl [-b 4K] [-e 256M] [-f 4] [-n 50] [-w 10] [--tensors K] [--in-place]
// prints one line per size: "peer BYTES P50_US MEAN_US CPU_US_PER_RANK WRONG" (WRONG: elements
// differing from the exact float32 sum of small integers in a checked run).
#include <mpi.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <oneapi/ccl.hpp>
#include <vector>

static size_t parse_size(const char *s) {
  char *end;
  double v = strtod(s, &end);
  if (*end == 'K' || *end == 'k') v *= 1024.0;
  else if (*end == 'M' || *end == 'm') v *= 1024.0 * 1024;
  else if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024 * 1024;
  return (size_t)v;
}

static double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  ccl::init();
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t minb = 4096, maxb = size_t(256) << 20;
  double factor = 4;
  int iters = 50, warm = 10, tensors = 1, in_place = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!strcmp(a, "-b") && v) minb = parse_size(v), i++;
    else if (!strcmp(a, "-e") && v) maxb = parse_size(v), i++;
    else if (!strcmp(a, "-f") && v) factor = atof(v), i++;
    else if (!strcmp(a, "-n") && v) iters = atoi(v), i++;
    else if (!strcmp(a, "-w") && v) warm = atoi(v), i++;
    else if (!strcmp(a, "--tensors") && v) tensors = atoi(v), i++;
    else if (!strcmp(a, "--in-place")) in_place = 1;
    else {
      if (rank == 0) fprintf(stderr, "peer_oneccl: unknown or incomplete option '%s'\n", a);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (iters < 1 || tensors < 1 || factor <= 1 || minb < 4 || maxb < minb) {
    if (rank == 0) fprintf(stderr, "peer_oneccl: bad sizes or counts\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  // The key-value store's address travels over MPI, as oneCCL's own examples do.
  ccl::shared_ptr_class<ccl::kvs> kvs;
  ccl::kvs::address_type address;
  if (rank == 0) {
    kvs = ccl::create_main_kvs();
    address = kvs->get_address();
  }
  MPI_Bcast(address.data(), (int)address.size(), MPI_BYTE, 0, MPI_COMM_WORLD);
  if (rank != 0) kvs = ccl::create_kvs(address);
  auto comm = ccl::create_communicator(size, rank, kvs);

  std::vector<double> times((size_t)iters), slowest((size_t)iters);
  for (size_t bytes = minb; bytes <= maxb; bytes = (size_t)(bytes * factor)) {
    const size_t count = bytes / sizeof(float);
    std::vector<std::vector<float>> send((size_t)tensors, std::vector<float>(count)),
        recv((size_t)tensors, std::vector<float>(count));
    for (int t = 0; t < tensors; t++)
      for (size_t k = 0; k < count; k++) recv[t][k] = send[t][k] = (float)((k * 7 + (size_t)rank * 3) % 5 + 1);
    auto call = [&](int t) {
      const float *src = in_place ? recv[t].data() : send[t].data();
      ccl::allreduce(src, recv[t].data(), count, ccl::reduction::sum, comm).wait();
    };
    for (int w = 0; w < warm; w++)
      for (int t = 0; t < tensors; t++) call(t);
    MPI_Barrier(MPI_COMM_WORLD);
    double total = 0, cpu0 = cpu_seconds();
    for (int it = 0; it < iters; it++) {
      double t0 = MPI_Wtime();
      for (int t = 0; t < tensors; t++) call(t);
      times[(size_t)it] = MPI_Wtime() - t0;
      total += times[(size_t)it];
    }
    double cpu = (cpu_seconds() - cpu0) / iters, cpu_sum = 0, mean = total / iters, mean_sum = 0;
    MPI_Allreduce(times.data(), slowest.data(), iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&cpu, &cpu_sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&mean, &mean_sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    std::sort(slowest.begin(), slowest.end());
    long wrong = 0, wrong_all = 0;
    recv[0] = send[0];
    call(0);
    for (size_t k = 0; k < count; k++) {
      double want = 0;
      for (int r = 0; r < size; r++) want += (double)((k * 7 + (size_t)r * 3) % 5 + 1);
      wrong += recv[0][k] != (float)want;
    }
    MPI_Allreduce(&wrong, &wrong_all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
      printf("peer %zu %.2f %.2f %.2f %ld\n", bytes, slowest[(size_t)(iters - 1) / 2] * 1e6, mean_sum / size * 1e6,
             cpu_sum / size * 1e6, wrong_all);
    fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}

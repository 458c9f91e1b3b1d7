/* fuzz_bench_options.c: libFuzzer target of hvbench's option parser
 * (tools/hvbench/bench_options.c, with the dtype/op names of bench_dtype.c).
 * Input: the number of ranks (1 byte: 1..16) | the arguments after the program name,
 * separated by NUL bytes. The parser runs as rank 0, which prints its one error line
 * to stderr (run with -close_fd_mask=2 to keep the log short). No MPI call is made. */
#include <stdio.h>

#include "fuzz_util.h"
#include "hvbench.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const int nranks = 1 + (data[0] & 15);
  int argc;
  char **argv = fuzz_argv("hvbench", data + 1, size - 1, 64, &argc);
  bench_options_t o;
  const int rc = options_parse(argc, argv, 0, nranks, &o);
  if (rc != 0 && rc != BENCH_EXIT_USAGE) __builtin_trap();
  if (rc == 0 && !o.help) {
    /* The promises the benchmark loop relies on. */
    if (o.coll >= BENCH_NUM_COLLS || o.min_bytes > o.max_bytes || o.iters < 1 ||
        o.num_dtypes < 1 || o.num_dtypes > BENCH_MAX_DTYPES || o.num_ops < 1 ||
        o.num_ops > BENCH_MAX_OPS || o.tensors < 1 || o.root < 0 || o.root >= nranks)
      __builtin_trap();
    char line[256];
    snprintf(line, sizeof line, "%s %s %s", coll_name(o.coll), algo_name(o.algo),
             dtype_short_name((hv_dtype_t)o.dtypes[0]));
  }
  fuzz_argv_free(argv);
  return 0;
}

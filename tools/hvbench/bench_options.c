/* bench_options.c: hvbench's command line (nccl-tests' options plus hv's own) and
 * --help. Parsing is by hand rather than getopt_long so every error names the option
 * and the value at fault, and "--opt=value" and "--opt value" both work. Every rank
 * parses the same argv; only rank 0 prints. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "hvbench.h"

static const char *const coll_names[BENCH_NUM_COLLS] = {"allreduce", "allgather", "broadcast",
                                                        "reducescatter", "alltoall", "alltoallv",
                                                        "reduce", "gather", "scatter", "sendrecv"};
static const char *const algo_names[BENCH_NUM_ALGOS] = {"auto", "ring", "rd",  "hier", "mpi",
                                                        "nccl", "shm",  "rab", "2d"};

const char *coll_name(bench_coll_t coll) { return coll_names[coll]; }
const char *algo_name(bench_algo_t algo) { return algo_names[algo]; }

void options_print_help(void) {
  printf(
      "Usage: mpirun -np N hvbench COLLECTIVE [options]\n"
      "       (or srun ... hvbench, or hvrun -np N hvbench ...)\n"
      "\n"
      "Measures hv's collectives as nccl-tests does, with the MPI library's own collective\n"
      "run on the same buffers as the peer, in the same output.\n"
      "\n"
      "COLLECTIVE: allreduce | allgather | broadcast | reducescatter | alltoall |\n"
      "            alltoallv | reduce | gather | scatter | sendrecv\n"
      "  (alltoallv with equal splits, as nccl-tests' alltoall; sendrecv: each rank sends\n"
      "  to rank+1 and receives from rank-1, a named hv_send/hv_recv pair each)\n"
      "\n"
      "Sizes (suffixes K, M, G are powers of 1024):\n"
      "  -b, --minbytes SIZE      smallest size (default 32M)\n"
      "  -e, --maxbytes SIZE      largest size (default 32M)\n"
      "  -f, --stepfactor F       multiply the size by F each step (default 2)\n"
      "  -i, --stepbytes SIZE     or add SIZE each step\n"
      "  The size is the whole buffer as nccl-tests counts it: for allgather the gathered\n"
      "  output, for reducescatter and alltoall(v) the whole input, for gather and\n"
      "  scatter the root's whole buffer; these need sizes that\n"
      "  divide by (ranks x element size).\n"
      "Iterations and checking:\n"
      "  -n, --iters N            timed iterations per size (default 20)\n"
      "  -w, --warmup_iters N     untimed iterations first (default 5)\n"
      "  -c, --check 0|1          check one extra run against exactly known results\n"
      "                           (default 1); wrong elements are summed over ranks\n"
      "Data:\n"
      "  -d, --datatype T         int8 uint8 int32 int64 half(float16) bfloat16\n"
      "                           float(float32) double(float64) or all (default float)\n"
      "  -o, --op OP              sum prod min max avg or all (default sum); reducing\n"
      "                           collectives only; avg needs a float type\n"
      "  -r, --root R             root of broadcast, reduce, gather, scatter (default 0)\n"
      "hv:\n"
      "  --algo A                 auto ring rd rab 2d shm hier mpi nccl all (default auto).\n"
      "                           --device cpu, allreduce: ring, rd (recursive doubling),\n"
      "                           rab (Rabenseifner's), 2d (over a grid of the ranks),\n"
      "                           shm (node shared memory), hier (hierarchical), mpi (the\n"
      "                           MPI library inside hv). Other collectives have one hv\n"
      "                           algorithm (auto). 'all' runs every available algorithm.\n"
      "                           --device cuda: auto (hv through hv_cuda.h), nccl (raw\n"
      "                           NCCL alone) or all (both); mpi is not offered there.\n"
      "  --compression C          none fp16 bf16: wire compression of float allreduce\n"
      "                           (cuda: through hv_allreduce_cuda_group's options)\n");
  printf("  --device D               cpu (default) or cuda%s\n",
         cuda_built() ? "" : " (cuda is not available in this build)");
  printf(
      "                           cuda: buffers in GPU memory, rank r on GPU (local rank)\n"
      "                           mod (GPUs visible); every collective\n"
      "  --tensors K              K tensors of the size per iteration, submitted together\n"
      "                           and fused by the engine (cuda: one hv_allreduce_cuda_group\n"
      "                           of K for allreduce); the peer makes K separate calls\n"
      "                           (default 1). Time and bandwidth cover all K.\n"
      "  --grouped                allreduce, cpu: the K tensors as one hv_grouped_allreduce\n"
      "                           (one name, one negotiation, one handle) instead of K\n"
      "                           named requests in an hv group\n"
      "  --engine / --no-engine   through queue, negotiation and fusion (default), or the\n"
      "                           allreduce algorithm alone, called directly (tables\n"
      "                           'alg:NAME'); other collectives: --algo mpi only; CPU only\n"
      "  --no-peer                do not run the peer beside hv (MPI's own collective;\n"
      "                           with --device cuda, raw NCCL)\n"
      "Output:\n"
      "  --json FILE, --csv FILE  every row with every statistic (written by rank 0)\n"
      "  --plot FILE.png|.svg     bus bandwidth against size per algorithm (gnuplot);\n"
      "                           FILE.dat and FILE.gp are kept beside it\n"
      "  --min-busbw X            exit 4 when a table's average bus bandwidth (GB/s) is\n"
      "                           below X (hv tables only, not the peer)\n"
      "  -h, --help               this text\n"
      "\n"
      "One table per backend: hv:ALGO (through the engine), alg:ALGO (--no-engine), mpi\n"
      "(the peer); with several, a closing summary gives per size the fastest and each\n"
      "one's speed relative to MPI (MPI's time / its time).\n"
      "--device cuda: tables hv:cuda (hv_cuda.h: NCCL within a node, MPI between nodes)\n"
      "and nccl, the peer there: raw ncclAllReduce/ncclAllGather/ncclBroadcast over all\n"
      "ranks on the same buffers and stream, as nccl-tests calls them; the summary's\n"
      "ratios are then to nccl. Timing as nccl-tests on GPUs: a barrier, the iterations\n"
      "enqueued back to back on one stream, one wait at the end (hv: hv_cuda_wait), time\n"
      "/ iterations; p50/p99 come from CUDA events recorded between iterations. Inputs\n"
      "are built and results checked on the host, copied over outside the timing.\n"
      "Table: size (B), count (elements), type, redop, root, then for out-of-place and\n"
      "in-place: time (us, average over ranks of each rank's mean), algbw = size/time,\n"
      "busbw = algbw x factor (allreduce 2(n-1)/n; allgather, reducescatter, alltoall(v),\n"
      "gather, scatter (n-1)/n; broadcast, reduce, sendrecv 1), #wrong. The last four columns are min/max over ranks of the\n"
      "per-rank mean, and p50/p99 of per-iteration times (slowest rank per iteration),\n"
      "for the first placement the backend has. n/a: placement not offered (hv's\n"
      "reducescatter, alltoall(v), reduce, gather, scatter and sendrecv are out-of-place\n"
      "only; broadcast is in-place only).\n"
      "\n"
      "Checking: inputs are small integers (powers of two for prod) chosen so the exact\n"
      "result is known in any reduction order; tolerance is 0 except for avg (2 units in\n"
      "the last place of the type) and fp16/bf16 compression (2 units in the last place\n"
      "of the compressed format: relative 2^-9 for fp16, 2^-6 for bf16).\n"
      "\n"
      "Exit status: 0 ok; 1 runtime error; 2 bad command line; 3 wrong or out-of-bounds\n"
      "values; 4 below --min-busbw. --device cuda with no CUDA device visible: 1 on\n"
      "every rank (77 when HVBENCH_SKIP_NO_GPU=1, for test suites to skip).\n"
      "Testing: HVBENCH_INJECT_FAULT=1 damages one result element on the last rank before\n"
      "each check, to prove corruption is caught (exit 3). Never set it otherwise.\n"
      "Engine settings come from HV_* variables (HV_FUSION_THRESHOLD, HV_CYCLE_TIME...);\n"
      "hvbench sets HV_ALLREDUCE_ALGO itself for each algorithm it runs.\n");
}

/* Parses "4K", "256M", "1G", "4096" (also KB/KiB forms) into bytes. */
static int parse_size(const char *text, size_t *bytes) {
  char *end = NULL;
  errno = 0;
  if (text[0] == '-' || text[0] == '\0') return -1;
  unsigned long long value = strtoull(text, &end, 10);
  if (errno != 0 || end == text) return -1;
  unsigned long long mult = 1;
  switch (*end) {
  case 'k': case 'K': mult = 1ull << 10; end++; break;
  case 'm': case 'M': mult = 1ull << 20; end++; break;
  case 'g': case 'G': mult = 1ull << 30; end++; break;
  default: break;
  }
  if (mult > 1 && (strcmp(end, "B") == 0 || strcmp(end, "iB") == 0 || strcmp(end, "b") == 0))
    end += strlen(end);
  if (*end == 'B' && end[1] == '\0' && mult == 1) end++;
  if (*end != '\0') return -1;
  if (value > (unsigned long long)SIZE_MAX / mult) return -1;
  *bytes = (size_t)(value * mult);
  return 0;
}

static void set_defaults(bench_options_t *o) {
  memset(o, 0, sizeof(*o));
  o->coll = BENCH_NUM_COLLS;
  o->min_bytes = o->max_bytes = 32u << 20;
  o->step_factor = 2.0;
  o->iters = 20;
  o->warmup = 5;
  o->check = 1;
  o->dtypes[0] = HV_FLOAT32;
  o->num_dtypes = 1;
  o->ops[0] = HV_SUM;
  o->num_ops = 1;
  o->algo = BENCH_ALGO_AUTO;
  o->compression = HV_COMPRESSION_NONE;
  o->tensors = 1;
  o->engine = 1;
  o->peer = 1;
}

#define USAGE_ERROR(...)                                                                   \
  do {                                                                                     \
    if (rank == 0) {                                                                       \
      fprintf(stderr, "hvbench: rank 0: ");                                                \
      fprintf(stderr, __VA_ARGS__);                                                        \
      fprintf(stderr, " (hvbench --help lists the options)\n");                            \
    }                                                                                      \
    return BENCH_EXIT_USAGE;                                                               \
  } while (0)

/* Options that take a value, long name -> short letter. */
static const struct {
  const char *long_name;
  char short_name;
} valued[] = {{"minbytes", 'b'},     {"maxbytes", 'e'},   {"stepfactor", 'f'},
              {"stepbytes", 'i'},    {"iters", 'n'},      {"warmup_iters", 'w'},
              {"check", 'c'},        {"datatype", 'd'},   {"op", 'o'},
              {"root", 'r'},         {"algo", 'A'},       {"compression", 'C'},
              {"device", 'D'},       {"tensors", 'K'},    {"json", 'J'},
              {"csv", 'V'},          {"plot", 'P'},       {"min-busbw", 'M'}};

static int apply_value(char key, const char *name, const char *val, int rank, int nranks,
                       bench_options_t *o, int *step_bytes_given, int *root_given) {
  long long n = 0;
  switch (key) {
  case 'b':
  case 'e':
  case 'i': {
    size_t bytes = 0;
    if (parse_size(val, &bytes) != 0)
      USAGE_ERROR("bad size '%s' for %s: use a byte count with an optional K/M/G suffix", val,
                  name);
    if (key == 'b') o->min_bytes = bytes;
    if (key == 'e') o->max_bytes = bytes;
    if (key == 'i') {
      if (bytes == 0) USAGE_ERROR("%s must be > 0", name);
      o->step_bytes = bytes;
      *step_bytes_given = 1;
    }
    return 0;
  }
  case 'f':
    if (parse_double(name, val, -HUGE_VAL, HUGE_VAL, &o->step_factor, NULL, 0) != 0 ||
        o->step_factor <= 1.0)
      USAGE_ERROR("bad step factor '%s' for %s: it must be a number > 1", val, name);
    *step_bytes_given = 0;
    return 0;
  case 'n':
    if (parse_int(name, val, 1, 100000000, &n, NULL, 0) != 0)
      USAGE_ERROR("bad iteration count '%s' for %s: it must be >= 1", val, name);
    o->iters = (int)n;
    return 0;
  case 'w':
    if (parse_int(name, val, 0, 100000000, &n, NULL, 0) != 0)
      USAGE_ERROR("bad warm-up count '%s' for %s: it must be >= 0", val, name);
    o->warmup = (int)n;
    return 0;
  case 'c':
    if (parse_int(name, val, 0, 1, &n, NULL, 0) != 0)
      USAGE_ERROR("bad value '%s' for %s: use 0 or 1", val, name);
    o->check = (int)n;
    return 0;
  case 'd':
    if (strcmp(val, "all") == 0) {
      static const int all[] = {HV_INT8,     HV_UINT8,    HV_INT32,   HV_INT64,
                                HV_FLOAT16, HV_BFLOAT16, HV_FLOAT32, HV_FLOAT64};
      memcpy(o->dtypes, all, sizeof(all));
      o->num_dtypes = (int)(sizeof(all) / sizeof(all[0]));
    } else {
      hv_dtype_t dt;
      if (dtype_parse(val, &dt) != 0)
        USAGE_ERROR("unknown datatype '%s' for %s: use int8 uint8 int32 int64 half bfloat16 "
                    "float double or all",
                    val, name);
      o->dtypes[0] = (int)dt;
      o->num_dtypes = 1;
    }
    return 0;
  case 'o':
    if (strcmp(val, "all") == 0) {
      for (int i = 0; i < HV_NUM_OPS; i++) o->ops[i] = i;
      o->num_ops = HV_NUM_OPS;
    } else {
      hv_op_t op;
      if (op_parse(val, &op) != 0)
        USAGE_ERROR("unknown op '%s' for %s: use sum prod min max avg or all", val, name);
      o->ops[0] = (int)op;
      o->num_ops = 1;
    }
    return 0;
  case 'r':
    if (parse_int(name, val, -1000000000, 1000000000, &n, NULL, 0) != 0 || n < 0 || n >= nranks)
      USAGE_ERROR("root '%s' for %s is outside the rank range 0..%d of this job", val, name,
                  nranks - 1);
    o->root = (int)n;
    *root_given = 1;
    return 0;
  case 'A':
    if (strcmp(val, "all") == 0) {
      o->algo_all = 1;
      return 0;
    }
    o->algo_all = 0;
    for (int a = 0; a < BENCH_NUM_ALGOS; a++)
      if (strcmp(val, algo_names[a]) == 0) {
        o->algo = (bench_algo_t)a;
        return 0;
      }
    USAGE_ERROR("unknown algorithm '%s' for %s: use auto ring rd rab 2d shm hier mpi nccl or all", val,
                name);
  case 'C':
    if (strcmp(val, "none") == 0) o->compression = HV_COMPRESSION_NONE;
    else if (strcmp(val, "fp16") == 0) o->compression = HV_COMPRESSION_FP16;
    else if (strcmp(val, "bf16") == 0) o->compression = HV_COMPRESSION_BF16;
    else USAGE_ERROR("unknown compression '%s' for %s: use none fp16 or bf16", val, name);
    return 0;
  case 'D':
    if (strcmp(val, "cpu") == 0) {
      o->device = BENCH_DEVICE_CPU;
      return 0;
    }
    if (strcmp(val, "cuda") == 0) {
      if (!cuda_built())
        USAGE_ERROR("--device cuda is not available in this build (no CUDA toolkit with "
                    "NCCL when it was configured); use --device cpu");
      o->device = BENCH_DEVICE_CUDA;
      return 0;
    }
    USAGE_ERROR("unknown device '%s' for %s: use cpu or cuda", val, name);
  case 'K':
    if (parse_int(name, val, 1, 1000000, &n, NULL, 0) != 0)
      USAGE_ERROR("bad tensor count '%s' for %s: it must be 1..1000000", val, name);
    o->tensors = (int)n;
    return 0;
  case 'J': o->json_path = val; return 0;
  case 'V': o->csv_path = val; return 0;
  case 'P': {
    size_t len = strlen(val);
    if (len < 5 || (strcmp(val + len - 4, ".png") != 0 && strcmp(val + len - 4, ".svg") != 0))
      USAGE_ERROR("plot file '%s' must end in .png or .svg", val);
    o->plot_path = val;
    return 0;
  }
  case 'M':
    if (parse_double(name, val, -HUGE_VAL, HUGE_VAL, &o->min_busbw, NULL, 0) != 0 ||
        o->min_busbw < 0)
      USAGE_ERROR("bad bandwidth '%s' for %s: give GB/s as a number >= 0", val, name);
    return 0;
  default: return 0;
  }
}

/* --device cuda: what hv_cuda.h offers, hv (auto) and raw NCCL. */
static int validate_cuda(const bench_options_t *o, int rank) {
  if (!o->algo_all && o->algo != BENCH_ALGO_AUTO && o->algo != BENCH_ALGO_NCCL)
    USAGE_ERROR("--algo %s is not offered with --device cuda: use auto (hv through "
                "hv_cuda.h), nccl (raw NCCL) or all",
                algo_names[o->algo]);
  if (!o->engine)
    USAGE_ERROR("--no-engine applies to --device cpu: with --device cuda hv_cuda.h is "
                "called directly anyway; drop --no-engine");
  return 0;
}

/* Cross-option rules, checked once everything is read. */
static int validate(bench_options_t *o, int rank, int nranks, int root_given) {
  if (o->coll == BENCH_NUM_COLLS)
    USAGE_ERROR("no collective given: use allreduce, allgather, broadcast, reducescatter, "
                "alltoall, alltoallv, reduce, gather, scatter or sendrecv as the first argument");
  if (o->coll >= BENCH_ALLTOALLV && o->device == BENCH_DEVICE_CUDA)
    USAGE_ERROR("%s is benchmarked on --device cpu only so far (hv_cuda.h has it; hvbench's "
                "device loop does not)", coll_names[o->coll]);
  if (o->coll == BENCH_SENDRECV && nranks < 2) USAGE_ERROR("sendrecv needs 2 ranks or more");
  if (o->min_bytes > o->max_bytes)
    USAGE_ERROR("--minbytes %zu is larger than --maxbytes %zu", o->min_bytes, o->max_bytes);
  if (o->min_bytes == 0 && o->step_bytes == 0 && o->max_bytes > 0)
    USAGE_ERROR("--minbytes 0 with a step factor never grows: use -i/--stepbytes or -b > 0");
  if (root_given && !coll_has_root(o->coll))
    USAGE_ERROR("--root applies to broadcast, reduce, gather and scatter only, not %s", coll_names[o->coll]);
  if (!coll_is_reducing(o->coll)) {
    o->num_ops = 1; /* the redop column shows "none" */
    o->ops[0] = HV_SUM;
  } else {
    for (int k = 0; k < o->num_ops; k++) {
      if (o->ops[k] != HV_AVERAGE) continue;
      int any_float = 0;
      for (int d = 0; d < o->num_dtypes; d++) any_float |= dtype_is_float(o->dtypes[d]);
      if (!any_float)
        USAGE_ERROR("op avg needs a float datatype (half, bfloat16, float, double)");
    }
  }
  if (o->compression != HV_COMPRESSION_NONE) {
    if (o->coll != BENCH_ALLREDUCE)
      USAGE_ERROR("--compression applies to allreduce only, not %s", coll_names[o->coll]);
    for (int d = 0; d < o->num_dtypes; d++)
      if (o->dtypes[d] != HV_FLOAT32)
        USAGE_ERROR("--compression applies to float (float32) data only, not %s",
                    dtype_short_name(o->dtypes[d]));
  }
  if (o->grouped && o->coll != BENCH_ALLREDUCE)
    USAGE_ERROR("--grouped applies to allreduce only (hv_grouped_allreduce), not %s", coll_names[o->coll]);
  if (o->grouped && o->device == BENCH_DEVICE_CUDA)
    USAGE_ERROR("--grouped is for --device cpu: with --device cuda, --tensors K already runs one "
                "hv_allreduce_cuda_group of the K tensors; drop --grouped");
  if (o->grouped && !o->engine)
    USAGE_ERROR("--grouped submits through the engine (hv_grouped_allreduce); drop --no-engine");
  if (o->device == BENCH_DEVICE_CUDA) return validate_cuda(o, rank);
  if (!o->algo_all) {
    if (o->algo == BENCH_ALGO_NCCL && !cuda_built())
      USAGE_ERROR("--algo nccl is not available in this build: NCCL comes with the GPU path; "
                  "use ring, rd, shm, hier, mpi or all");
    if (o->algo == BENCH_ALGO_NCCL)
      USAGE_ERROR("--algo nccl runs with --device cuda (raw NCCL on device buffers); on the "
                  "CPU use ring, rd, shm, hier, mpi or all");
    if (o->coll != BENCH_ALLREDUCE && o->algo != BENCH_ALGO_AUTO &&
        !(o->algo == BENCH_ALGO_MPI && !o->engine))
      USAGE_ERROR("--algo %s: %s has one hv algorithm in this build; use --algo auto or all",
                  algo_names[o->algo], coll_names[o->coll]);
  }
  if (!o->engine) {
    if (o->coll != BENCH_ALLREDUCE && !(o->algo_all || o->algo == BENCH_ALGO_MPI))
      USAGE_ERROR("--no-engine: %s has no hv algorithm that runs without the engine in this "
                  "build; use --algo mpi for MPI's own collective alone",
                  coll_names[o->coll]);
    if (o->compression != HV_COMPRESSION_NONE)
      USAGE_ERROR("--compression needs the engine (it compresses while fusing); drop "
                  "--no-engine");
  }
  (void)nranks;
  return 0;
}

int options_parse(int argc, char **argv, int rank, int nranks, bench_options_t *o) {
  set_defaults(o);
  int step_bytes_given = 0, root_given = 0;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      o->help = 1;
      return 0;
    }
    if (arg[0] != '-') {
      if (o->coll != BENCH_NUM_COLLS)
        USAGE_ERROR("unexpected argument '%s': the collective is already %s", arg,
                    coll_names[o->coll]);
      for (int c = 0; c < BENCH_NUM_COLLS; c++)
        if (strcmp(arg, coll_names[c]) == 0) o->coll = (bench_coll_t)c;
      if (o->coll == BENCH_NUM_COLLS)
        USAGE_ERROR("unknown collective '%s': use allreduce, allgather, broadcast, "
                    "reducescatter, alltoall, alltoallv, reduce, gather, scatter or sendrecv",
                    arg);
      continue;
    }
    if (strcmp(arg, "--engine") == 0) { o->engine = 1; continue; }
    if (strcmp(arg, "--no-engine") == 0) { o->engine = 0; continue; }
    if (strcmp(arg, "--no-peer") == 0) { o->peer = 0; continue; }
    if (strcmp(arg, "--grouped") == 0) { o->grouped = 1; continue; }
    /* Valued options: -x V, -xV, --name V, --name=V. */
    char key = 0;
    const char *val = NULL;
    char name[48];
    if (arg[1] == '-') {
      const char *eq = strchr(arg + 2, '=');
      size_t len = eq ? (size_t)(eq - (arg + 2)) : strlen(arg + 2);
      for (size_t k = 0; k < sizeof(valued) / sizeof(valued[0]); k++)
        if (strlen(valued[k].long_name) == len && strncmp(arg + 2, valued[k].long_name, len) == 0)
          key = valued[k].short_name;
      snprintf(name, sizeof(name), "--%.*s", (int)(len < 40 ? len : 40), arg + 2);
      if (eq) val = eq + 1;
    } else if (arg[1] != '\0') {
      static const char shorts[] = "befinwcdor";
      if (strchr(shorts, arg[1])) key = arg[1];
      snprintf(name, sizeof(name), "-%c", arg[1]);
      if (arg[2] != '\0') val = arg + 2;
    }
    if (key == 0) USAGE_ERROR("unknown option '%s'", arg);
    if (val == NULL) {
      if (i + 1 >= argc) USAGE_ERROR("option %s needs a value", name);
      val = argv[++i];
    }
    if (apply_value(key, name, val, rank, nranks, o, &step_bytes_given, &root_given) != 0)
      return BENCH_EXIT_USAGE;
  }
  if (!step_bytes_given) o->step_bytes = 0;
  return validate(o, rank, nranks, root_given);
}

const char *compression_name(hv_compression_t c) {
  return c == HV_COMPRESSION_FP16 ? "fp16" : c == HV_COMPRESSION_BF16 ? "bf16" : "none";
}

const char *device_name(bench_device_t d) { return d == BENCH_DEVICE_CUDA ? "cuda" : "cpu"; }

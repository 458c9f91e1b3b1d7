/* bench_fusion_kernels.c: memory bandwidth of the CUDA fusion kernels
 * (collectives/cuda/fusion_kernels.h) against the device's own copy bandwidth, the
 * bound they should approach (the goal: at least 80% of it).
 *
 * For each batch shape (many small tensors, few large ones) it times, with CUDA
 * events on device buffers: one cudaMemcpyAsync device-to-device of the batch's total
 * bytes (the reference), one cudaMemcpyAsync per tensor (what a launch per tensor
 * would cost), then hv__cuda_fusion_pack and hv__cuda_fusion_unpack with the
 * conversions hv uses (float32 as is, to/from float16 and bfloat16, with and without a
 * scale). Bytes are counted as read + written for every line alike: a copy of B bytes
 * moves 2B; packing float32 to float16 reads 4 and writes 2 bytes per element.
 * Each line is the best of TRIALS runs of REPS back-to-back launches.
 *
 * A benchmark, not a test: it reports and exits 0; it exits 1 with a message when no
 * GPU is visible or a CUDA call fails. Usage: bench_fusion_kernels (no arguments). */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda/fusion_kernels.h"

enum { TRIALS = 5, REPS = 50, WARMUP = 3 };

#define CUDA_OK(call)                                                                          \
  do {                                                                                         \
    cudaError_t rc_ = (call);                                                                  \
    if (rc_ != cudaSuccess) {                                                                  \
      fprintf(stderr, "bench_fusion_kernels: %s failed: %s (%s:%d)\n", #call,                 \
              cudaGetErrorString(rc_), __FILE__, __LINE__);                                    \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

/* The kernels return 0 or a cudaError_t code. */
#define KERNEL_OK(call)                                                                        \
  do {                                                                                         \
    int krc_ = (call);                                                                         \
    if (krc_ != 0) {                                                                           \
      fprintf(stderr, "bench_fusion_kernels: %s failed: %s\n", #call,                         \
              cudaGetErrorString((cudaError_t)krc_));                                          \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

/* One batch on the device: n tensors of count float32 elements, carved from one
 * allocation; a fused buffer big enough for float32; the entry array. */
typedef struct batch {
  int n;
  size_t count; /* elements per tensor */
  char *tensors;
  void *fused;
  hv__fusion_entry_t *entries; /* device */
  cudaStream_t stream;
  cudaEvent_t start, stop;
} batch_t;

typedef enum { OP_COPY, OP_COPY_EACH, OP_PACK, OP_UNPACK } op_t;

typedef struct kase {
  op_t op;
  hv_dtype_t wire;
  float scale;
  const char *label;
} kase_t;

static size_t tensor_bytes(const batch_t *b) { return b->count * sizeof(float); }

/* Writes the entries for a scale (the kernels read it per tensor). */
static void set_entries(batch_t *b, float scale) {
  hv__fusion_entry_t *host = malloc((size_t)b->n * sizeof(*host));
  if (!host) {
    fprintf(stderr, "bench_fusion_kernels: out of memory\n");
    exit(1);
  }
  for (int i = 0; i < b->n; i++)
    host[i] = (hv__fusion_entry_t){b->tensors + (size_t)i * tensor_bytes(b), b->count,
                                   (size_t)i * b->count, scale};
  CUDA_OK(cudaMemcpy(b->entries, host, (size_t)b->n * sizeof(*host), cudaMemcpyHostToDevice));
  free(host);
}

static void enqueue(batch_t *b, const kase_t *k) {
  const size_t total = (size_t)b->n * tensor_bytes(b);
  switch (k->op) {
  case OP_COPY:
    CUDA_OK(cudaMemcpyAsync(b->fused, b->tensors, total, cudaMemcpyDeviceToDevice, b->stream));
    break;
  case OP_COPY_EACH:
    for (int i = 0; i < b->n; i++)
      CUDA_OK(cudaMemcpyAsync((char *)b->fused + (size_t)i * tensor_bytes(b),
                              b->tensors + (size_t)i * tensor_bytes(b), tensor_bytes(b),
                              cudaMemcpyDeviceToDevice, b->stream));
    break;
  case OP_PACK:
    KERNEL_OK(hv__cuda_fusion_pack(b->entries, b->n, b->fused, HV_FLOAT32, k->wire, b->count,
                                   b->stream));
    break;
  case OP_UNPACK:
    KERNEL_OK(hv__cuda_fusion_unpack(b->entries, b->n, b->fused, k->wire, HV_FLOAT32, b->count,
                                     b->stream));
    break;
  }
}

/* Best time of one launch (or copy), in seconds. */
static double time_case(batch_t *b, const kase_t *k) {
  if (k->op == OP_PACK || k->op == OP_UNPACK) set_entries(b, k->scale);
  for (int w = 0; w < WARMUP; w++) enqueue(b, k);
  CUDA_OK(cudaStreamSynchronize(b->stream));
  double best = 0.0;
  for (int t = 0; t < TRIALS; t++) {
    CUDA_OK(cudaEventRecord(b->start, b->stream));
    for (int r = 0; r < REPS; r++) enqueue(b, k);
    CUDA_OK(cudaEventRecord(b->stop, b->stream));
    CUDA_OK(cudaEventSynchronize(b->stop));
    float ms = 0.0f;
    CUDA_OK(cudaEventElapsedTime(&ms, b->start, b->stop));
    const double s = (double)ms * 1e-3 / REPS;
    if (t == 0 || s < best) best = s;
  }
  return best;
}

/* Bytes read + written by one launch. */
static double moved_bytes(const batch_t *b, const kase_t *k) {
  const double elems = (double)b->n * (double)b->count;
  const double wire = k->op == OP_COPY || k->op == OP_COPY_EACH ? 4.0 : (double)hv_dtype_size(k->wire);
  return elems * (4.0 + wire);
}

static void run_batch(int n, size_t count) {
  batch_t b = {.n = n, .count = count};
  const size_t total = (size_t)n * count * sizeof(float);
  CUDA_OK(cudaMalloc((void **)&b.tensors, total));
  CUDA_OK(cudaMalloc(&b.fused, total));
  CUDA_OK(cudaMalloc((void **)&b.entries, (size_t)n * sizeof(hv__fusion_entry_t)));
  /* 0x3F3F3F3F is the float 0.747: an ordinary normal number, in range of float16. */
  CUDA_OK(cudaMemset(b.tensors, 0x3F, total));
  CUDA_OK(cudaMemset(b.fused, 0x3F, total));
  CUDA_OK(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
  CUDA_OK(cudaEventCreate(&b.start));
  CUDA_OK(cudaEventCreate(&b.stop));

  static const kase_t cases[] = {
      {OP_COPY, HV_FLOAT32, 1.0f, "copy D2D, one cudaMemcpyAsync"},
      {OP_COPY_EACH, HV_FLOAT32, 1.0f, "copy D2D, one cudaMemcpyAsync each"},
      {OP_PACK, HV_FLOAT32, 1.0f, "pack   float32 -> float32   x1"},
      {OP_PACK, HV_FLOAT16, 0.5f, "pack   float32 -> float16   x0.5"},
      {OP_PACK, HV_BFLOAT16, 1.0f, "pack   float32 -> bfloat16  x1"},
      {OP_UNPACK, HV_FLOAT32, 1.0f, "unpack float32 -> float32   x1"},
      {OP_UNPACK, HV_FLOAT32, 0.5f, "unpack float32 -> float32   x0.5"},
      {OP_UNPACK, HV_FLOAT16, 2.0f, "unpack float16 -> float32   x2"},
      {OP_UNPACK, HV_BFLOAT16, 2.0f, "unpack bfloat16 -> float32  x2"},
  };
  printf("#\n# %d tensors of %zu KiB float32 (%zu MiB in all)\n", n, count * 4 / 1024,
         total >> 20);
  printf("# %-36s  %12s  %10s  %8s  %7s\n", "case", "moved (B)", "time (us)", "GB/s", "vs copy");
  double copy_gbps = 0.0;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const double s = time_case(&b, &cases[i]);
    const double moved = moved_bytes(&b, &cases[i]), gbps = moved / s / 1e9;
    if (cases[i].op == OP_COPY) copy_gbps = gbps;
    const double ratio = copy_gbps > 0 ? gbps / copy_gbps : 0.0;
    const int kernel = cases[i].op == OP_PACK || cases[i].op == OP_UNPACK;
    printf("  %-36s  %12.0f  %10.2f  %8.1f  %6.0f%%%s\n", cases[i].label, moved, s * 1e6, gbps,
           ratio * 100.0, kernel && ratio < 0.8 ? "  below the 80% goal" : "");
  }
  fflush(stdout);
  CUDA_OK(cudaEventDestroy(b.start));
  CUDA_OK(cudaEventDestroy(b.stop));
  CUDA_OK(cudaStreamDestroy(b.stream));
  CUDA_OK(cudaFree(b.entries));
  CUDA_OK(cudaFree(b.fused));
  CUDA_OK(cudaFree(b.tensors));
}

int main(void) {
  int devices = 0;
  cudaError_t rc = cudaGetDeviceCount(&devices);
  if (rc != cudaSuccess || devices == 0) {
    fprintf(stderr, "bench_fusion_kernels: no CUDA device visible (cudaGetDeviceCount: %s)\n",
            rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices");
    return 1;
  }
  int dev = 0;
  CUDA_OK(cudaGetDevice(&dev));
  struct cudaDeviceProp p;
  CUDA_OK(cudaGetDeviceProperties(&p, dev));
  printf("# bench_fusion_kernels: GPU %d %s (%d SMs, %.1f GiB, compute %d.%d)\n", dev, p.name,
         p.multiProcessorCount, (double)p.totalGlobalMem / (1 << 30), p.major, p.minor);
  printf("# bytes moved = read + written (a copy of B bytes moves 2B); time per launch, best "
         "of %d x %d; goal: kernels >= 80%% of the one-copy line\n",
         TRIALS, REPS);
  run_batch(256, (64u << 10) / sizeof(float));
  run_batch(16, (4u << 20) / sizeof(float));
  return 0;
}

/* bench_cuda_stub.c: --device cuda in a build without NCCL: cuda_built() says no, so
 * bench_options.c rejects the option with "not available in this build" and nothing
 * else here is ever reached; the other entry points only fail, to link. */
#include <stdio.h>

#include "hvbench.h"

static int unavailable(char *err, size_t err_len) {
  snprintf(err, err_len, "--device cuda is not available in this build");
  return -1;
}

int cuda_built(void) { return 0; }
int cuda_setup(MPI_Comm world, int rank) {
  (void)world;
  fprintf(stderr, "hvbench: rank %d: --device cuda is not available in this build\n", rank);
  return BENCH_EXIT_USAGE;
}
void cuda_teardown(void) {}
void cuda_describe(char *out, size_t len) { snprintf(out, len, "(no CUDA in this build)"); }
int cuda_buffers_alloc(bench_buffers_t *b, char *err, size_t err_len) {
  (void)b;
  return unavailable(err, err_len);
}
void cuda_buffers_free(bench_buffers_t *b) { (void)b; }
int cuda_upload(bench_buffers_t *b, char *err, size_t err_len) {
  (void)b;
  return unavailable(err, err_len);
}
int cuda_download(bench_buffers_t *b, char *err, size_t err_len) {
  (void)b;
  return unavailable(err, err_len);
}
int cuda_hv_backend_create(bench_backend_t *be, MPI_Comm world, char *err, size_t err_len) {
  (void)be, (void)world;
  return unavailable(err, err_len);
}
int cuda_nccl_backend_create(bench_backend_t *be, MPI_Comm world, char *err, size_t err_len) {
  (void)be, (void)world;
  return unavailable(err, err_len);
}
int cuda_timed_loop(bench_backend_t *be, const bench_case_t *c, bench_buffers_t *b, int in_place,
                    int iters, double *times, double *total, char *err, size_t err_len) {
  (void)be, (void)c, (void)b, (void)in_place, (void)iters, (void)times, (void)total;
  return unavailable(err, err_len);
}

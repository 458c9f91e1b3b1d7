/* test_comm_hooks.c (under mpirun, 2 ranks): the comm-hook API of ddp.h.
 *  1. fp16 and bf16 hooks: per element within the README's Compression bound of the
 *     float64 average: n u sum_r |x_r| / n + t + 2^-23 |avg| (u = 2^-11 or 2^-8).
 *  2. A hook that fails, one that completes a bucket twice and one that never
 *     completes it: ddp_wait returns -1 on every rank with a message naming the hook
 *     and the bucket; after re-registering the default hook, steps work again.
 *  3. Hook names: bad names, keys and values are one line naming what is wrong. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ddp.h"
#include "ddp_hooks.h"
#include "model.h"
#include "rng.h"

static hv_comm_t *comm;
static int rank, size;

static void grads_of(int q, size_t n, real_t *g) {
  rng_t r;
  rng_seed(&r, 90 + (uint64_t)q);
  for (size_t i = 0; i < n; i++) g[i] = (real_t)(rng_normal(&r) * (i % 5 == 0 ? 1e-4 : 3.0));
}

static void check_half(ddp_t *d, model_t *m, const char *name, double u, double tiny) {
  char err[256];
  ddp_hook_spec_t s;
  ddp_comm_hook_t h;
  CHECK(ddp_hook_spec_parse(name, &s, err, sizeof err) == 0 && ddp_hook_make(&s, &h, err, sizeof err) == 0);
  CHECK(ddp_register_comm_hook(d, &h) == 0);
  const size_t n = m->n_params;
  real_t *g = malloc(n * sizeof *g);
  grads_of(rank, n, m->grads);
  CHECK(ddp_reduce_grads(d) == 0 && ddp_wait(d) == 0, "%s", ddp_error(d));
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    double avg = 0, abs_sum = 0;
    for (int r = 0; r < size; r++) {
      grads_of(r, n, g);
      avg += (double)g[i] / size;
      abs_sum += fabs((double)g[i]);
    }
    const double bound = size * u * abs_sum / size + tiny + 0x1p-23 * fabs(avg);
    worst = fmax(worst, fabs(m->grads[i] - avg) / bound);
  }
  if (rank == 0) printf("%s hook: worst error / bound %.3g\n", name, worst);
  CHECK(worst <= 1.0);
  CHECK(!strcmp(ddp_comm_hook_name(d), name));
  free(g);
}

/* Hooks that break the contract. */
static int failing_start(void *state, ddp_bucket_t *b) {
  (void)state;
  return ddp_bucket_fail(b, "the test's hook refuses");
}
static int twice_start(void *state, ddp_bucket_t *b) {
  (void)state;
  ddp_bucket_complete(b, 0);
  return 0;
}
static int twice_finish(void *state, ddp_bucket_t *b) {
  (void)state;
  return ddp_bucket_complete(b, 0);
}
static int never_start(void *state, ddp_bucket_t *b) {
  (void)state, (void)b;
  return 0;
}

static void check_bad_hook(ddp_t *d, model_t *m, const ddp_comm_hook_t *h, const char *want) {
  CHECK(ddp_register_comm_hook(d, h) == 0);
  grads_of(rank, m->n_params, m->grads);
  int rc = ddp_reduce_grads(d);
  if (rc == 0) rc = ddp_wait(d);
  else ddp_wait(d);
  CHECK(rc == -1, "hook %s: ddp step returned %d", h->name, rc);
  CHECK(strstr(ddp_error(d), want) && strstr(ddp_error(d), h->name), "hook %s: message '%s' lacks '%s'", h->name,
        ddp_error(d), want);
  if (rank == 0) printf("hook %s: %s\n", h->name, ddp_error(d));
}

static void check_spec_error(const char *text, const char *want) {
  char err[512] = "";
  ddp_hook_spec_t s;
  CHECK(ddp_hook_spec_parse(text, &s, err, sizeof err) == -1, "'%s' accepted", text);
  CHECK(strstr(err, want) != NULL && !strchr(err, '\n'), "'%s': message '%s' lacks '%s'", text, err, want);
}

int main(int argc, char **argv) {
  if (hv_init(&argc, &argv, &comm) != HV_SUCCESS) {
    fprintf(stderr, "hv_init failed: %s\n", hv_comm_last_error(NULL));
    return 2;
  }
  hv_comm_rank(comm, &rank);
  hv_comm_size(comm, &size);
  char err[512];
  model_t *m = model_create(1, 1, 40);
  int id = model_add_linear(m, "fc1", -1, 30, 1);
  id = model_add_linear(m, "fc2", id, 10, 1);
  if (id < 0 || model_finalize(m, 1, INIT_PYTORCH_DEFAULT, 1)) return 2;
  ddp_config_t small = {.first_bucket_bytes = 1024, .bucket_bytes = 4096};
  ddp_t *d = ddp_create(comm, m, &small, err, sizeof err);
  CHECK(d && ddp_num_buckets(d) >= 2);
  check_half(d, m, "fp16", 0x1p-11, 0x1p-25);
  check_half(d, m, "bf16", 0x1p-8, 0);

  const ddp_comm_hook_t failing = {.name = "failing", .start = failing_start};
  const ddp_comm_hook_t twice = {.name = "twice", .start = twice_start, .finish = twice_finish};
  const ddp_comm_hook_t never = {.name = "never", .start = never_start};
  check_bad_hook(d, m, &failing, "the test's hook refuses");
  ddp_free(d); /* a failed DDP keeps its first error: a new one for each case */
  d = ddp_create(comm, m, &small, err, sizeof err);
  check_bad_hook(d, m, &twice, "twice in one step");
  ddp_free(d);
  d = ddp_create(comm, m, &small, err, sizeof err);
  check_bad_hook(d, m, &never, "did not complete");
  ddp_free(d);

  check_spec_error("powersgd:rank=0", "rank='0' is not valid");
  check_spec_error("powersgd:rank=2.5", "whole number");
  check_spec_error("powersgd:start=x", "start='x'");
  check_spec_error("powersgd:sharpness=3", "no option 'sharpness'");
  check_spec_error("powersgd:rank", "not key=value");
  check_spec_error("fp16:rank=2", "is not valid");
  check_spec_error("topk", "unknown comm hook 'topk'");
  check_spec_error("int8:chunk=0", "chunk='0'");
  ddp_hook_spec_t s;
  CHECK(ddp_hook_spec_parse("powersgd:rank=4,start=10", &s, err, sizeof err) == 0 && s.kind == DDP_HOOK_POWERSGD &&
        s.powersgd.rank == 4 && s.powersgd.start_iter == 10 && s.powersgd.min_compression_rate == 2.0);
  CHECK(ddp_hook_spec_parse("powersgd", &s, err, sizeof err) == 0 && s.powersgd.rank == 1 &&
        s.powersgd.start_iter == 1000);

  model_free(m);
  int failures = check_failures;
  hv_allreduce(comm, "test.failures", &failures, &failures, 1, HV_INT32, HV_SUM, NULL);
  hv_shutdown(comm);
  return failures ? 1 : 0;
}

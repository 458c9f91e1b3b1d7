/* ddp.c: bucket assignment, the backward hook that submits full buckets, waiting,
 * and the broadcasts. Parameters are laid out in layer order, so a bucket of
 * consecutive layers (walking from the last) is one contiguous slice of the flat
 * gradient array, reduced in place with no packing copy on our side. A model on the
 * GPU goes through hv_cuda.h on the stream its layers run on (the default stream):
 * each bucket's NCCL allreduce is queued behind the backward kernels that wrote it.
 * Which of the two is a transport table chosen once in ddp_create from the model's
 * device table (device.h); the rest of this file does not ask. */
#include "ddp.h"

#include "device.h"
#include "hv_cuda.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if HV_REAL_F64
#define DDP_DTYPE HV_FLOAT64
#else
#define DDP_DTYPE HV_FLOAT32
#endif

typedef struct ddp_bucket bucket_t;
struct ddp_bucket {
  struct ddp *d;
  int index;
  size_t lo, hi;      /* parameter range */
  int n_layers;       /* layers with parameters in it */
  int pending;        /* layers whose backward has not run yet this step */
  int launch_layer;   /* layer that completed it last time */
  hv_handle_t handle;
  int submitted;      /* the hook started it this step */
  int completed;      /* ddp_bucket_complete calls this step */
  ddp_tensor_t *tensors; /* weight (a matrix) and bias (a vector) of each layer */
  int n_tensors;
  char name[32];
};

struct ddp {
  hv_comm_t *comm;
  model_t *m;
  bucket_t *buckets;
  int n_buckets;
  int *layer_bucket;  /* (n_layers): bucket of each layer, -1 without parameters */
  int rank, syncing, failed, id;
  int bcast_root; /* the root of broadcasts: 0, or ddp_join's last joiner */
  const struct ddp_transport *tr; /* host or device memory (ddp_create) */
  ddp_comm_hook_t hook;
  long long steps;                /* synchronised steps finished */
  unsigned long long bytes_sent, bytes_dense;
  char err[512];
};

/* How the model's arrays reach hv: host memory through the engine's named calls,
 * one handle per bucket; device memory through hv_cuda.h, queued in order on one
 * stream, so that one wait covers every bucket. */
typedef struct ddp_transport {
  hv_result_t (*broadcast)(ddp_t *d, const char *name, real_t *buf, size_t n); /* and waits */
  hv_result_t (*reduce)(ddp_t *d, bucket_t *k, real_t *g); /* submits the average of bucket k, at g */
  hv_result_t (*wait)(ddp_t *d, bucket_t *k);    /* bucket k's own completion */
  hv_result_t (*wait_all)(ddp_t *d);             /* then, after the submitted buckets' waits */
} ddp_transport_t;

static hv_result_t host_broadcast(ddp_t *d, const char *name, real_t *buf, size_t n) {
  return hv_broadcast(d->comm, name, buf, n, DDP_DTYPE, d->bcast_root);
}
static hv_result_t host_reduce(ddp_t *d, bucket_t *k, real_t *g) {
  return hv_allreduce_async(d->comm, k->name, g, g, k->hi - k->lo, DDP_DTYPE, HV_AVERAGE, NULL, &k->handle);
}
static hv_result_t host_wait(ddp_t *d, bucket_t *k) {
  (void)d;
  return hv_wait(k->handle);
}
static hv_result_t nothing_left(ddp_t *d) {
  (void)d;
  return HV_SUCCESS;
}

static hv_result_t device_broadcast(ddp_t *d, const char *name, real_t *buf, size_t n) {
  (void)name; /* the device calls are matched by order, not by name */
  hv_result_t r = hv_broadcast_cuda(d->comm, buf, n, DDP_DTYPE, d->bcast_root, NULL);
  return r == HV_SUCCESS ? hv_cuda_wait(d->comm, NULL) : r;
}
static hv_result_t device_reduce(ddp_t *d, bucket_t *k, real_t *g) {
  return hv_allreduce_cuda(d->comm, g, g, k->hi - k->lo, DDP_DTYPE, HV_AVERAGE, NULL);
}
/* HV_COMPRESSION fp16/bf16: packed through the fusion kernels (float32 -> fp16/bf16
 * on the wire) by the group call. */
static hv_result_t device_reduce_compressed(ddp_t *d, bucket_t *k, real_t *g) {
  const hv_cuda_tensor_t t = {NULL, g, k->hi - k->lo};
  return hv_allreduce_cuda_group(d->comm, &t, 1, DDP_DTYPE, HV_AVERAGE, NULL, NULL);
}
static hv_result_t device_wait(ddp_t *d, bucket_t *k) {
  (void)d, (void)k;
  return HV_SUCCESS;
}
static hv_result_t device_wait_all(ddp_t *d) { return hv_cuda_wait(d->comm, NULL); }

static const ddp_transport_t host_transport = {host_broadcast, host_reduce, host_wait, nothing_left};
static const ddp_transport_t device_transport = {device_broadcast, device_reduce, device_wait, device_wait_all};
static const ddp_transport_t device_compressed_transport = {device_broadcast, device_reduce_compressed,
                                                            device_wait, device_wait_all};

__attribute__((format(printf, 2, 3))) static void ddp_fail(ddp_t *d, const char *fmt, ...) {
  if (d->failed) return; /* keep the first cause */
  va_list ap;
  va_start(ap, fmt);
  int k = snprintf(d->err, sizeof d->err, "rank %d: ", d->rank);
  vsnprintf(d->err + k, sizeof d->err - (size_t)k, fmt, ap);
  va_end(ap);
  d->failed = 1;
}

static int hv_check(ddp_t *d, hv_result_t r, const char *what);

/* The default hook: the bucket's allreduce (HV_AVERAGE) in place, through the
 * transport of the model's memory. */
static int allreduce_start(void *state, ddp_bucket_t *k) {
  ddp_t *d = state;
  return hv_check(d, d->tr->reduce(d, k, d->m->grads + k->lo), k->name);
}
static int allreduce_finish(void *state, ddp_bucket_t *k) {
  ddp_t *d = state;
  if (hv_check(d, d->tr->wait(d, k), k->name)) return -1;
  return ddp_bucket_complete(k, (k->hi - k->lo) * sizeof(real_t));
}

static int hv_check(ddp_t *d, hv_result_t r, const char *what) {
  if (r == HV_SUCCESS) return 0;
  ddp_fail(d, "%s: %s (%s)", what, hv_strerror(r), hv_comm_last_error(d->comm));
  return -1;
}

static void build_buckets(ddp_t *d, size_t first_cap, size_t cap) {
  model_t *m = d->m;
  d->n_buckets = 0;
  bucket_t *cur = NULL;
  for (int i = m->n_layers - 1; i >= 0; i--) {
    const layer_t *l = &m->layers[i];
    d->layer_bucket[i] = -1;
    if (l->n_params == 0) continue;
    const size_t bytes = l->n_params * sizeof(real_t);
    const size_t limit = d->n_buckets <= 1 ? first_cap : cap;
    /* Start a new bucket when this layer would overflow the current one. */
    if (!cur || (cur->hi - cur->lo) * sizeof(real_t) + bytes > limit) {
      cur = &d->buckets[d->n_buckets];
      memset(cur, 0, sizeof *cur);
      cur->hi = l->param_off + l->n_params;
      cur->lo = cur->hi;
      cur->launch_layer = -1;
      /* Names carry the instance number: two models trained side by side (created in
       * the same order on every rank) never share a tensor name. */
      snprintf(cur->name, sizeof cur->name, "ddp%d.grad.bucket%d", d->id, d->n_buckets);
      d->n_buckets++;
    }
    cur->lo = l->param_off; /* walking down: the range grows toward the front */
    cur->n_layers++;
    cur->index = d->n_buckets - 1;
    cur->d = d;
    d->layer_bucket[i] = d->n_buckets - 1;
  }
}

/* Each bucket's tensors, in parameter order: a layer's weight as an out x rest
 * matrix (convolutions, linear layers), every bias and batch-norm vector as 1 x n. */
static int build_tensors(ddp_t *d) {
  const model_t *m = d->m;
  for (int b = 0; b < d->n_buckets; b++) {
    bucket_t *k = &d->buckets[b];
    k->tensors = calloc(2 * (size_t)k->n_layers, sizeof *k->tensors);
    if (!k->tensors) return -1;
    for (int i = 0; i < m->n_layers; i++) {
      const layer_t *l = &m->layers[i];
      if (d->layer_bucket[i] != b) continue;
      const size_t w = l->weight_count, base = l->param_off - k->lo;
      const int matrix = (l->kind == LAYER_CONV2D || l->kind == LAYER_LINEAR) && l->out_ch > 0 &&
                         w % (size_t)l->out_ch == 0;
      if (w) k->tensors[k->n_tensors++] = (ddp_tensor_t){base, matrix ? (size_t)l->out_ch : 1,
                                                         matrix ? w / (size_t)l->out_ch : w, l->name};
      if (l->n_params > w)
        k->tensors[k->n_tensors++] = (ddp_tensor_t){base + w, 1, l->n_params - w, l->name};
    }
  }
  return 0;
}

static int broadcast(ddp_t *d, const char *name, real_t *buf, size_t n) {
  if (n == 0) return 0;
  return hv_check(d, d->tr->broadcast(d, name, buf, n), name);
}

ddp_t *ddp_create(hv_comm_t *comm, model_t *m, const ddp_config_t *cfg, char *err,
                  size_t errlen) {
  ddp_t *d = calloc(1, sizeof *d);
  if (!d) {
    snprintf(err, errlen, "ddp: out of memory");
    return NULL;
  }
  static int instances; /* ddp_create is collective: the same count on every rank */
  d->id = instances++;
  d->comm = comm;
  d->m = m;
  hv_compression_t wire = HV_COMPRESSION_NONE;
  hv_comm_compression(comm, &wire);
  d->tr = m->dev->kind == DEVICE_CPU      ? &host_transport
          : wire == HV_COMPRESSION_NONE ? &device_transport
                                        : &device_compressed_transport;
  hv_comm_rank(comm, &d->rank);
  d->buckets = calloc((size_t)m->n_layers + 1, sizeof *d->buckets);
  d->layer_bucket = calloc((size_t)m->n_layers + 1, sizeof *d->layer_bucket);
  if (!d->buckets || !d->layer_bucket) {
    snprintf(err, errlen, "ddp: out of memory");
    ddp_free(d);
    return NULL;
  }
  size_t first = cfg && cfg->first_bucket_bytes ? cfg->first_bucket_bytes : (size_t)1 << 20;
  size_t cap = cfg && cfg->bucket_bytes ? cfg->bucket_bytes : (size_t)25 << 20;
  build_buckets(d, first, cap);
  d->hook = (ddp_comm_hook_t){.name = "allreduce", .state = d, .start = allreduce_start, .finish = allreduce_finish};
  if (build_tensors(d)) {
    snprintf(err, errlen, "ddp: out of memory");
    ddp_free(d);
    return NULL;
  }
  char pn[32], bn[32];
  snprintf(pn, sizeof pn, "ddp%d.init.params", d->id);
  snprintf(bn, sizeof bn, "ddp%d.init.buffers", d->id);
  if (broadcast(d, pn, m->params, m->n_params) || broadcast(d, bn, m->buffers, m->n_buffers)) {
    snprintf(err, errlen, "%s", d->err);
    ddp_free(d);
    return NULL;
  }
  return d;
}

void ddp_free(ddp_t *d) {
  if (!d) return;
  if (d->buckets) {
    /* Buckets a failed step left started: their hook waits for what it submitted. */
    int any = 0;
    for (int b = 0; b < d->n_buckets; b++)
      if (d->buckets[b].submitted) {
        any = 1;
        if (d->hook.finish) d->hook.finish(d->hook.state, &d->buckets[b]);
      }
    if (any) d->tr->wait_all(d);
    for (int b = 0; b < d->n_buckets; b++) free(d->buckets[b].tensors);
  }
  if (d->hook.free_state) d->hook.free_state(d->hook.state);
  free(d->buckets);
  free(d->layer_bucket);
  free(d);
}

/* The hook's start; a bucket whose start failed is not finished (ddp_wait reports the
 * failure, which ddp_fail kept). */
static void start_bucket(ddp_t *d, bucket_t *k) {
  if (d->hook.start(d->hook.state, k) == 0) {
    k->submitted = 1;
    return;
  }
  if (!d->failed)
    ddp_fail(d, "comm hook '%s' failed on bucket %d (%s) without a message", d->hook.name, k->index, k->name);
}

static void on_layer_done(void *ctx, model_t *m, int layer) {
  ddp_t *d = ctx;
  const int b = d->layer_bucket[layer];
  if (b < 0 || !d->syncing || d->failed) return;
  bucket_t *k = &d->buckets[b];
  if (--k->pending > 0) return;
  k->launch_layer = layer;
  (void)m;
  start_bucket(d, k);
}

int ddp_backward(ddp_t *d, int sync) {
  if (d->failed) return -1;
  for (int b = 0; b < d->n_buckets; b++) {
    if (d->buckets[b].submitted) {
      ddp_fail(d, "ddp_backward called again before ddp_wait");
      return -1;
    }
    d->buckets[b].pending = d->buckets[b].n_layers;
    d->buckets[b].launch_layer = -1;
    d->buckets[b].completed = 0;
  }
  d->syncing = sync;
  /* A step that reduces gradients starts here: its first bucket is the request the
   * straggler report times (hv.h). Device buckets go through hv_cuda.h, which
   * negotiates nothing: no mark, or a later named request would take it. */
  if (sync && d->tr == &host_transport) hv_straggler_step(d->comm);
  model_backward(d->m, on_layer_done, d);
  if (d->m->failed) ddp_fail(d, "%s", d->m->err); /* SyncBatchNorm's reductions */
  return d->failed ? -1 : 0;
}

int ddp_reduce_grads(ddp_t *d) {
  if (d->failed) return -1;
  for (int b = 0; b < d->n_buckets; b++) {
    bucket_t *k = &d->buckets[b];
    if (k->submitted) {
      ddp_fail(d, "ddp_reduce_grads called again before ddp_wait");
      return -1;
    }
    k->completed = 0;
    k->launch_layer = -1;
    start_bucket(d, k);
  }
  return d->failed ? -1 : 0;
}

int ddp_wait(ddp_t *d) {
  int any = 0;
  for (int b = 0; b < d->n_buckets; b++) {
    bucket_t *k = &d->buckets[b];
    if (!k->submitted) continue;
    k->submitted = 0;
    any = 1;
    /* After a failure the remaining buckets still finish: their collectives were
     * submitted and must be waited for before the buffers are touched again. */
    if (d->hook.finish && d->hook.finish(d->hook.state, k) && !d->failed)
      ddp_fail(d, "comm hook '%s' failed on bucket %d (%s) without a message", d->hook.name, k->index, k->name);
    if (k->completed != 1 && !d->failed)
      ddp_fail(d, "comm hook '%s' did not complete bucket %d (%s): its start or finish must call "
               "ddp_bucket_complete once", d->hook.name, k->index, k->name);
  }
  /* Device buckets: one wait for all of them (queued in order on one stream). */
  if (any) hv_check(d, d->tr->wait_all(d), "the gradient buckets");
  if (any && !d->failed) d->steps++;
  return d->failed ? -1 : 0;
}

int ddp_register_comm_hook(ddp_t *d, const ddp_comm_hook_t *hook) {
  for (int b = 0; b < d->n_buckets; b++)
    if (d->buckets[b].submitted) {
      ddp_fail(d, "ddp_register_comm_hook called between ddp_backward and ddp_wait");
      return -1;
    }
  if (hook && !hook->start) hook = NULL; /* ddp_hook_make's "allreduce" */
  if (hook && !hook->name) {
    ddp_fail(d, "ddp_register_comm_hook: a hook needs a name");
    return -1;
  }
  if (d->hook.free_state) d->hook.free_state(d->hook.state);
  d->hook = hook ? *hook
                 : (ddp_comm_hook_t){.name = "allreduce", .state = d, .start = allreduce_start,
                                     .finish = allreduce_finish};
  for (int b = 0; b < d->n_buckets && d->hook.prepare; b++)
    if (d->hook.prepare(d->hook.state, &d->buckets[b])) {
      ddp_fail(d, "comm hook '%s' could not prepare bucket %d", d->hook.name, b);
      return -1;
    }
  return 0;
}

void ddp_set_step(ddp_t *d, long long steps) { d->steps = steps; }

const char *ddp_comm_hook_name(const ddp_t *d) { return d->hook.name; }

real_t *ddp_bucket_grads(ddp_bucket_t *b, size_t *n) {
  *n = b->hi - b->lo;
  return b->d->m->grads + b->lo;
}
int ddp_bucket_index(const ddp_bucket_t *b) { return b->index; }
const char *ddp_bucket_name(const ddp_bucket_t *b) { return b->name; }
hv_comm_t *ddp_bucket_comm(const ddp_bucket_t *b) { return b->d->comm; }
const ddp_tensor_t *ddp_bucket_tensors(const ddp_bucket_t *b, int *n) {
  *n = b->n_tensors;
  return b->tensors;
}
hv_handle_t *ddp_bucket_handle(ddp_bucket_t *b) { return &b->handle; }
long long ddp_bucket_step(const ddp_bucket_t *b) { return b->d->steps; }
int ddp_bucket_on_host(const ddp_bucket_t *b) { return b->d->m->dev->kind == DEVICE_CPU; }

int ddp_bucket_complete(ddp_bucket_t *b, size_t wire_bytes) {
  ddp_t *d = b->d;
  if (++b->completed > 1) {
    ddp_fail(d, "comm hook '%s' completed bucket %d (%s) twice in one step", d->hook.name, b->index, b->name);
    return -1;
  }
  d->bytes_sent += wire_bytes;
  d->bytes_dense += (b->hi - b->lo) * sizeof(float);
  return 0;
}

int ddp_bucket_fail(ddp_bucket_t *b, const char *fmt, ...) {
  ddp_t *d = b->d;
  if (d->failed) return -1;
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ddp_fail(d, "comm hook '%s', bucket %d (%s): %s", d->hook.name, b->index, b->name, msg);
  return -1;
}

void ddp_comm_bytes(const ddp_t *d, unsigned long long *sent, unsigned long long *dense) {
  *sent = d->bytes_sent;
  *dense = d->bytes_dense;
}

size_t ddp_hook_state_count(const ddp_t *d) {
  return d->hook.state_count ? d->hook.state_count(d->hook.state) : 0;
}
void ddp_hook_state_copy(ddp_t *d, real_t *buf, int load) {
  if (d->hook.state_copy) d->hook.state_copy(d->hook.state, buf, load);
}

int ddp_broadcast_buffers(ddp_t *d) {
  char name[32];
  snprintf(name, sizeof name, "ddp%d.buffers", d->id);
  return broadcast(d, name, d->m->buffers, d->m->n_buffers);
}

int ddp_broadcast_array(ddp_t *d, const char *name, real_t *buf, size_t n) { return broadcast(d, name, buf, n); }

int ddp_broadcast_array_from(ddp_t *d, const char *name, real_t *buf, size_t n, int root) {
  d->bcast_root = root;
  int rc = broadcast(d, name, buf, n);
  d->bcast_root = 0;
  return rc;
}

int ddp_join(ddp_t *d, int *last) {
  const char *hook = d->hook.name ? d->hook.name : "allreduce";
  if (d->m->dev->kind != DEVICE_CPU) {
    ddp_fail(d, "ddp_join: a model on the GPU reduces through NCCL, whose calls are matched by order and cannot "
                "complete without a rank; uneven inputs need a CPU model");
    return -1;
  }
  if (strcmp(hook, "allreduce") && strcmp(hook, "fp16") && strcmp(hook, "bf16")) {
    ddp_fail(d, "ddp_join: the comm hook '%s' divides by the rank count itself; join works with the allreduce, "
                "fp16 and bf16 hooks", hook);
    return -1;
  }
  if (hv_check(d, hv_join(d->comm), "ddp_join")) return -1;
  /* Every rank continues from the model of the rank that trained longest (the last to
   * join; the lowest rank among equals), as DDP's Join syncs the final model. */
  int size = 1;
  hv_comm_size(d->comm, &size);
  int64_t key = (int64_t)d->steps * size + (size - 1 - d->rank);
  char name[48];
  snprintf(name, sizeof name, "ddp%d.join.last", d->id);
  if (hv_check(d, hv_allreduce(d->comm, name, &key, &key, 1, HV_INT64, HV_MAX, NULL), name)) return -1;
  const int root = size - 1 - (int)(key % size);
  d->bcast_root = root;
  snprintf(name, sizeof name, "ddp%d.join.params", d->id);
  int rc = broadcast(d, name, d->m->params, d->m->n_params);
  snprintf(name, sizeof name, "ddp%d.join.buffers", d->id);
  if (!rc) rc = broadcast(d, name, d->m->buffers, d->m->n_buffers);
  d->bcast_root = 0;
  d->steps = key / size;
  if (last) *last = root;
  return rc;
}

/* SyncBatchNorm's sums through the communicator of the buckets: host doubles by name
 * (blocking), device doubles through hv_cuda.h on the layers' stream, waited for as
 * the next kernel reads them. */
static int sync_bn_sum(void *ctx, const char *name, double *v, size_t n, char *err, size_t errlen) {
  ddp_t *d = ctx;
  hv_result_t r = d->tr == &host_transport ? hv_allreduce(d->comm, name, v, v, n, HV_FLOAT64, HV_SUM, NULL)
                                           : hv_allreduce_cuda(d->comm, v, v, n, HV_FLOAT64, HV_SUM, NULL);
  if (r == HV_SUCCESS) return 0;
  snprintf(err, errlen, "rank %d: %s: %s (%s)", d->rank, name, hv_strerror(r), hv_comm_last_error(d->comm));
  return -1;
}

void ddp_set_sync_bn(ddp_t *d, int on) {
  const model_bn_sync_t s = {sync_bn_sum, d};
  model_set_bn_sync(d->m, on ? &s : NULL);
}

int ddp_allreduce_sum(ddp_t *d, const char *name, double *v, size_t n) {
  return hv_check(d, hv_allreduce(d->comm, name, v, v, n, HV_FLOAT64, HV_SUM, NULL), name);
}

const char *ddp_error(const ddp_t *d) { return d->err; }
int ddp_num_buckets(const ddp_t *d) { return d->n_buckets; }
int ddp_bucket_launch_layer(const ddp_t *d, int b) { return d->buckets[b].launch_layer; }
void ddp_bucket_range(const ddp_t *d, int b, size_t *lo, size_t *hi) {
  *lo = d->buckets[b].lo;
  *hi = d->buckets[b].hi;
}

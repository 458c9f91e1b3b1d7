/* conv2d_dnnl.c: convolution forward, backward-data and backward-weights through
 * oneDNN's C API. The primitives are created with format "any", so oneDNN chooses its
 * fast blocked layouts (nChw8c/16c, JIT kernels) instead of the plain NCHW/OIHW the
 * trainer keeps; tensors are reordered in and out around each call, as PyTorch does
 * for its CPU tensors. A model that keeps its activations in the channel-blocked layout
 * (layout_blocked.h, oneDNN's aBcd16b) says so at creation; then the input and output
 * (and their gradients) need no reorder at all. Gradients are computed into scratch
 * and then added, because the trainer's contract is accumulation and oneDNN
 * overwrites. Each direction asks oneDNN for Winograd where that measures faster than
 * the direct convolution (preferred_algorithm), and for the direct one elsewhere. */
#include "conv2d_dnnl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

static dnnl_engine_t g_engine;
static dnnl_stream_t g_stream;
static int g_ok;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void global_init(void) {
  g_ok = dnnl_engine_create(&g_engine, dnnl_cpu, 0) == dnnl_success &&
         dnnl_stream_create(&g_stream, g_engine, dnnl_stream_default_flags) == dnnl_success;
}

/* A tensor as the user keeps it and as a primitive wants it, with the reorder
 * between them when the layouts differ. */
typedef struct tens {
  dnnl_memory_t user, prim;   /* prim == user when no reorder is needed */
  dnnl_primitive_t reorder;   /* user -> prim (inputs) or prim -> user (outputs) */
  void *buf;                  /* storage of prim when it differs */
} tens_t;

struct conv2d_dnnl {
  conv2d_shape_t shape;
  int flags; /* CONV2D_DNNL_*: the caller's layouts, and whether dx is written or added to */
  int has_bias, built, failed;
  dnnl_primitive_t fwd, bwd_data, bwd_w;
  /* forward */
  tens_t f_src, f_w, f_dst;
  dnnl_memory_t f_bias;
  /* backward data: diff_dst in, weights in, diff_src out */
  tens_t d_dst, d_w, d_src;
  /* backward weights: src in, diff_dst in, diff_weights out, diff_bias out */
  tens_t w_src, w_dst, w_dw;
  dnnl_memory_t w_db;
  float *dx_tmp, *dw_tmp, *db_tmp;
  /* Reorders that backward can skip: the forward's blocked copy of x serves backward
   * weights when both want the same layout (backward always follows the forward of
   * the same x in training), and dy is reordered once for both backward primitives. */
  int reuse_src, reuse_dst;
  const float *fwd_x; /* x of the last forward, to check the reuse is valid */
};

/* The buffers this file gives primitives are 64-byte aligned: Winograd's backward
 * weights stores its blocked diff_weights with aligned non-temporal writes (vmovntps)
 * and crashes on malloc's 16-byte alignment. NULL without memory. */
static void *alloc64(size_t bytes) {
  void *p = NULL;
  return posix_memalign(&p, 64, bytes ? bytes : 1) == 0 ? p : NULL;
}

static void tens_free(tens_t *t) {
  if (t->reorder) dnnl_primitive_destroy(t->reorder);
  if (t->prim && t->prim != t->user) dnnl_memory_destroy(t->prim);
  if (t->user) dnnl_memory_destroy(t->user);
  free(t->buf);
  memset(t, 0, sizeof *t);
}

/* input: reorder user -> prim; else prim -> user. */
static int tens_init(tens_t *t, const dnnl_memory_desc_t *user_md,
                     const dnnl_memory_desc_t *prim_md, int input) {
  memset(t, 0, sizeof *t);
  if (dnnl_memory_create(&t->user, user_md, g_engine, DNNL_MEMORY_NONE) != dnnl_success)
    return -1;
  if (dnnl_memory_desc_equal(user_md, prim_md)) {
    t->prim = t->user;
    return 0;
  }
  t->buf = alloc64(dnnl_memory_desc_get_size(prim_md));
  if (!t->buf || dnnl_memory_create(&t->prim, prim_md, g_engine, t->buf) != dnnl_success)
    return -1;
  dnnl_primitive_desc_t rpd;
  const dnnl_memory_desc_t *from = input ? user_md : prim_md, *to = input ? prim_md : user_md;
  if (dnnl_reorder_primitive_desc_create(&rpd, from, g_engine, to, g_engine, NULL) != dnnl_success)
    return -1;
  dnnl_status_t st = dnnl_primitive_create(&t->reorder, rpd);
  dnnl_primitive_desc_destroy(rpd);
  return st == dnnl_success ? 0 : -1;
}

static int reorder_in(const tens_t *t, const void *ptr) {
  dnnl_memory_set_data_handle(t->user, (void *)ptr);
  if (!t->reorder) return 0;
  dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, t->user}, {DNNL_ARG_TO, t->prim}};
  return dnnl_primitive_execute(t->reorder, g_stream, 2, a) == dnnl_success ? 0 : -1;
}

static int reorder_out(const tens_t *t, void *ptr) {
  dnnl_memory_set_data_handle(t->user, ptr);
  if (!t->reorder) return 0;
  dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, t->prim}, {DNNL_ARG_TO, t->user}};
  return dnnl_primitive_execute(t->reorder, g_stream, 2, a) == dnnl_success ? 0 : -1;
}

static void destroy_all(conv2d_dnnl_t *c) {
  if (c->fwd) dnnl_primitive_destroy(c->fwd);
  if (c->bwd_data) dnnl_primitive_destroy(c->bwd_data);
  if (c->bwd_w) dnnl_primitive_destroy(c->bwd_w);
  tens_t *ts[] = {&c->f_src, &c->f_w, &c->f_dst, &c->d_dst, &c->d_w, &c->d_src,
                  &c->w_src, &c->w_dst, &c->w_dw};
  for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) tens_free(ts[i]);
  if (c->f_bias) dnnl_memory_destroy(c->f_bias);
  if (c->w_db) dnnl_memory_destroy(c->w_db);
  free(c->dx_tmp);
  free(c->dw_tmp);
  free(c->db_tmp);
  conv2d_shape_t keep = c->shape;
  const int flags = c->flags;
  memset(c, 0, sizeof *c);
  c->shape = keep;
  c->flags = flags;
}

conv2d_dnnl_t *conv2d_dnnl_create(int flags) {
  pthread_once(&g_once, global_init);
  if (!g_ok) return NULL;
  conv2d_dnnl_t *c = calloc(1, sizeof(conv2d_dnnl_t));
  if (c) c->flags = flags;
  return c;
}

void conv2d_dnnl_free(conv2d_dnnl_t *c) {
  if (!c) return;
  destroy_all(c);
  free(c);
}

enum { DIR_FORWARD, DIR_BACKWARD_DATA, DIR_BACKWARD_WEIGHTS };

/* oneDNN implements Winograd F(4x4, 3x3) (jit_wino_4x3, AVX-512 only) for 3x3 stride-1
 * convolutions with multiples of 16 channels; where it does not, create_pd falls back
 * to direct. Measured on this project's 2-core AVX-512 machine (batch 64, 1 and 2
 * threads), Winograd takes 0.4-0.75x the direct kernel's time from 32 channels up, in
 * every direction (the WideResNets' convolutions after their first group), but at 16
 * channels, where the tile transforms outweigh the multiplications saved, 0.86-1.14x
 * forward and 1.1-1.4x for backward data (inside a model: 1.1x and 1.4x); backward
 * weights still gains there (0.83-0.93x). Its rounding differs from the
 * direct kernel's (tiles are transformed, multiplied and transformed back):
 * tests/kernels/test_conv2d_dnnl.c bounds it. The flags CONV2D_DNNL_DIRECT and
 * CONV2D_DNNL_WINOGRAD override the choice. */
static dnnl_alg_kind_t preferred_algorithm(int flags, const conv2d_shape_t *s, int direction) {
  if ((flags & CONV2D_DNNL_DIRECT) || s->kh != 3 || s->kw != 3 || s->stride != 1)
    return dnnl_convolution_direct;
  if (flags & CONV2D_DNNL_WINOGRAD) return dnnl_convolution_winograd;
  const int narrow = s->c < s->k ? s->c : s->k;
  return narrow >= (direction == DIR_BACKWARD_WEIGHTS ? 16 : 32) ? dnnl_convolution_winograd
                                                                : dnnl_convolution_direct;
}

/* The memory descriptors and geometry that all three directions share. */
typedef struct conv_desc_args {
  const dnnl_memory_desc_t *src, *w, *bias, *dst; /* bias may be NULL */
  const dnnl_dim_t *strides, *pad_l, *pad_r;
} conv_desc_args_t;

/* One direction's primitive descriptor with its preferred algorithm, or with the
 * direct one where oneDNN has no kernel for that; NULL when neither can be made. */
static dnnl_primitive_desc_t create_pd(const conv2d_dnnl_t *c, int direction,
                                       const conv_desc_args_t *a, const_dnnl_primitive_desc_t hint) {
  const dnnl_alg_kind_t preferred = preferred_algorithm(c->flags, &c->shape, direction);
  const dnnl_alg_kind_t tries[2] = {preferred, dnnl_convolution_direct};
  for (int i = 0; i < (preferred == dnnl_convolution_direct ? 1 : 2); i++) {
    dnnl_convolution_desc_t d;
    dnnl_status_t st =
        direction == DIR_FORWARD
            ? dnnl_convolution_forward_desc_init(&d, dnnl_forward_training, tries[i], a->src, a->w,
                                                 a->bias, a->dst, a->strides, a->pad_l, a->pad_r)
        : direction == DIR_BACKWARD_DATA
            ? dnnl_convolution_backward_data_desc_init(&d, tries[i], a->src, a->w, a->dst,
                                                       a->strides, a->pad_l, a->pad_r)
            : dnnl_convolution_backward_weights_desc_init(&d, tries[i], a->src, a->w, a->bias,
                                                          a->dst, a->strides, a->pad_l, a->pad_r);
    dnnl_primitive_desc_t pd = NULL;
    if (st == dnnl_success && dnnl_primitive_desc_create(&pd, &d, NULL, g_engine, hint) == dnnl_success)
      return pd;
  }
  return NULL;
}

static int same_shape(const conv2d_shape_t *a, const conv2d_shape_t *b) {
  return a->n == b->n && a->c == b->c && a->h == b->h && a->w == b->w && a->k == b->k &&
         a->kh == b->kh && a->kw == b->kw && a->stride == b->stride && a->pad == b->pad;
}

#define Q(pd, what) dnnl_primitive_desc_query_md(pd, what, 0)

static int build(conv2d_dnnl_t *c, const conv2d_shape_t *s, int has_bias) {
  if (c->built && same_shape(&c->shape, s) && c->has_bias == has_bias) return 0;
  destroy_all(c);
  c->shape = *s;
  c->has_bias = has_bias;
  dnnl_dims_t src_d = {s->n, s->c, s->h, s->w}, w_d = {s->k, s->c, s->kh, s->kw},
              dst_d = {s->n, s->k, s->ho, s->wo}, b_d = {s->k},
              strides = {s->stride, s->stride}, pad = {s->pad, s->pad};
  /* Right padding so that the output size matches (the input may not be consumed). */
  dnnl_dims_t pad_r = {(s->ho - 1) * s->stride + s->kh - s->h - s->pad,
                       (s->wo - 1) * s->stride + s->kw - s->w - s->pad};
  dnnl_memory_desc_t u_src, u_w, u_dst, u_b, a_src, a_w, a_dst;
  dnnl_memory_desc_init_by_tag(&u_src, 4, src_d, dnnl_f32, c->flags & CONV2D_DNNL_SRC_BLOCKED ? dnnl_aBcd16b : dnnl_nchw);
  dnnl_memory_desc_init_by_tag(&u_w, 4, w_d, dnnl_f32, dnnl_oihw);
  dnnl_memory_desc_init_by_tag(&u_dst, 4, dst_d, dnnl_f32, c->flags & CONV2D_DNNL_DST_BLOCKED ? dnnl_aBcd16b : dnnl_nchw);
  dnnl_memory_desc_init_by_tag(&u_b, 1, b_d, dnnl_f32, dnnl_a);
  dnnl_memory_desc_init_by_tag(&a_src, 4, src_d, dnnl_f32, dnnl_format_tag_any);
  dnnl_memory_desc_init_by_tag(&a_w, 4, w_d, dnnl_f32, dnnl_format_tag_any);
  dnnl_memory_desc_init_by_tag(&a_dst, 4, dst_d, dnnl_f32, dnnl_format_tag_any);

  const conv_desc_args_t args = {&a_src, &a_w, has_bias ? &u_b : NULL, &a_dst, strides, pad, pad_r};
  dnnl_primitive_desc_t fpd = NULL, bpd = NULL, wpd = NULL;
  int rc = -1;
  if (!(fpd = create_pd(c, DIR_FORWARD, &args, NULL)) ||
      !(bpd = create_pd(c, DIR_BACKWARD_DATA, &args, fpd)) ||
      !(wpd = create_pd(c, DIR_BACKWARD_WEIGHTS, &args, fpd)))
    goto out;
  if (dnnl_primitive_create(&c->fwd, fpd) || dnnl_primitive_create(&c->bwd_data, bpd) ||
      dnnl_primitive_create(&c->bwd_w, wpd))
    goto out;
  if (tens_init(&c->f_src, &u_src, Q(fpd, dnnl_query_src_md), 1) ||
      tens_init(&c->f_w, &u_w, Q(fpd, dnnl_query_weights_md), 1) ||
      tens_init(&c->f_dst, &u_dst, Q(fpd, dnnl_query_dst_md), 0) ||
      tens_init(&c->d_dst, &u_dst, Q(bpd, dnnl_query_diff_dst_md), 1) ||
      tens_init(&c->d_w, &u_w, Q(bpd, dnnl_query_weights_md), 1) ||
      tens_init(&c->d_src, &u_src, Q(bpd, dnnl_query_diff_src_md), 0) ||
      tens_init(&c->w_src, &u_src, Q(wpd, dnnl_query_src_md), 1) ||
      tens_init(&c->w_dst, &u_dst, Q(wpd, dnnl_query_diff_dst_md), 1) ||
      tens_init(&c->w_dw, &u_w, Q(wpd, dnnl_query_diff_weights_md), 0))
    goto out;
  c->reuse_src = c->f_src.reorder && c->w_src.reorder &&
                 dnnl_memory_desc_equal(Q(fpd, dnnl_query_src_md), Q(wpd, dnnl_query_src_md));
  c->reuse_dst = c->d_dst.reorder && c->w_dst.reorder &&
                 dnnl_memory_desc_equal(Q(bpd, dnnl_query_diff_dst_md),
                                        Q(wpd, dnnl_query_diff_dst_md));
  if (has_bias && (dnnl_memory_create(&c->f_bias, &u_b, g_engine, DNNL_MEMORY_NONE) ||
                   dnnl_memory_create(&c->w_db, &u_b, g_engine, DNNL_MEMORY_NONE)))
    goto out;
  if (!(c->flags & CONV2D_DNNL_DX_OVERWRITE)) c->dx_tmp = alloc64(sizeof(float) * (size_t)s->n * s->c * s->h * s->w);
  c->dw_tmp = alloc64(sizeof(float) * (size_t)s->k * s->c * s->kh * s->kw);
  c->db_tmp = alloc64(sizeof(float) * (size_t)s->k);
  if ((!c->dx_tmp && !(c->flags & CONV2D_DNNL_DX_OVERWRITE)) || !c->dw_tmp || !c->db_tmp) goto out;
  c->built = 1;
  rc = 0;
out:
  if (fpd) dnnl_primitive_desc_destroy(fpd);
  if (bpd) dnnl_primitive_desc_destroy(bpd);
  if (wpd) dnnl_primitive_desc_destroy(wpd);
  if (rc) destroy_all(c);
  return rc;
}

const char *conv2d_dnnl_impl(const conv2d_dnnl_t *c, int direction) {
  const dnnl_primitive_t p = !c || !c->built ? NULL
                             : direction == DIR_FORWARD       ? c->fwd
                             : direction == DIR_BACKWARD_DATA ? c->bwd_data
                                                              : c->bwd_w;
  const_dnnl_primitive_desc_t pd;
  const char *name = NULL;
  if (!p || dnnl_primitive_get_primitive_desc(p, &pd) != dnnl_success ||
      dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name) != dnnl_success)
    return NULL;
  return name;
}

int conv2d_dnnl_forward(conv2d_dnnl_t *c, const conv2d_shape_t *s, const float *x,
                        const float *w, const float *b, float *y) {
  if (build(c, s, b != NULL)) return -1;
  if (reorder_in(&c->f_src, x) || reorder_in(&c->f_w, w)) return -1;
  c->fwd_x = x;
  dnnl_memory_set_data_handle(c->f_dst.user, y);
  dnnl_exec_arg_t a[4] = {{DNNL_ARG_SRC, c->f_src.prim},
                          {DNNL_ARG_WEIGHTS, c->f_w.prim},
                          {DNNL_ARG_DST, c->f_dst.prim},
                          {DNNL_ARG_BIAS, c->f_bias}};
  if (b) dnnl_memory_set_data_handle(c->f_bias, (void *)b);
  if (dnnl_primitive_execute(c->fwd, g_stream, b ? 4 : 3, a) != dnnl_success) return -1;
  if (reorder_out(&c->f_dst, y)) return -1;
  return dnnl_stream_wait(g_stream) == dnnl_success ? 0 : -1;
}

static void add_into(float *dst, const float *src, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] += src[i];
}

int conv2d_dnnl_backward(conv2d_dnnl_t *c, const conv2d_shape_t *s, const float *x,
                         const float *w, const float *dy, float *dx, float *dw, float *db) {
  if (build(c, s, db != NULL)) return -1;
  const int dx_write = (c->flags & CONV2D_DNNL_DX_OVERWRITE) != 0;
  const size_t nx = (size_t)s->n * s->c * s->h * s->w;
  if (dx) {
    float *dx_out = dx_write ? dx : c->dx_tmp;
    if (reorder_in(&c->d_dst, dy) || reorder_in(&c->d_w, w)) return -1;
    dnnl_memory_set_data_handle(c->d_src.user, dx_out);
    dnnl_exec_arg_t a[3] = {{DNNL_ARG_DIFF_DST, c->d_dst.prim},
                            {DNNL_ARG_WEIGHTS, c->d_w.prim},
                            {DNNL_ARG_DIFF_SRC, c->d_src.prim}};
    if (dnnl_primitive_execute(c->bwd_data, g_stream, 3, a) != dnnl_success ||
        reorder_out(&c->d_src, dx_out))
      return -1;
  }
  const int src_ok = c->reuse_src && c->fwd_x == x;
  const int dst_ok = c->reuse_dst && dx;
  if ((!src_ok && reorder_in(&c->w_src, x)) || (!dst_ok && reorder_in(&c->w_dst, dy))) return -1;
  dnnl_memory_t src_mem = src_ok ? c->f_src.prim : c->w_src.prim,
                dst_mem = dst_ok ? c->d_dst.prim : c->w_dst.prim;
  dnnl_memory_set_data_handle(c->w_dw.user, c->dw_tmp);
  if (db) dnnl_memory_set_data_handle(c->w_db, c->db_tmp);
  dnnl_exec_arg_t a[4] = {{DNNL_ARG_SRC, src_mem},
                          {DNNL_ARG_DIFF_DST, dst_mem},
                          {DNNL_ARG_DIFF_WEIGHTS, c->w_dw.prim},
                          {DNNL_ARG_DIFF_BIAS, c->w_db}};
  if (dnnl_primitive_execute(c->bwd_w, g_stream, db ? 4 : 3, a) != dnnl_success ||
      reorder_out(&c->w_dw, c->dw_tmp))
    return -1;
  if (dnnl_stream_wait(g_stream) != dnnl_success) return -1;
  if (dx && !dx_write) add_into(dx, c->dx_tmp, nx);
  add_into(dw, c->dw_tmp, (size_t)s->k * s->c * s->kh * s->kw);
  if (db) add_into(db, c->db_tmp, (size_t)s->k);
  return 0;
}

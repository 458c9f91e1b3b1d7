/* layer_batchnorm2d.c: BatchNorm2d (affine, running statistics, PyTorch defaults
 * eps 1e-5, momentum 0.1). Under DDP the statistics stay local to each rank (as
 * PyTorch's DDP without SyncBatchNorm): each rank normalises with its own batch's
 * statistics and keeps its own running statistics; only gamma/beta gradients are
 * averaged. Evaluation uses the running statistics broadcast from rank 0 at start. */
#include <stdio.h>
#include <string.h>

#include "batchnorm.h"
#include "model_internal.h"

static int bn_setup(layer_t *l, char *err, size_t errlen) {
  l->c = l->in_c;
  l->h = l->in_h;
  l->w = l->in_w;
  l->weight_count = (size_t)l->c;
  l->n_params = 2 * (size_t)l->c;
  l->n_buffers = 2 * (size_t)l->c;
  return 0;
}

static void bn_init(layer_t *l, model_t *m) {
  real_t *g = layer_w(m, l), *b = layer_b(m, l), *buf = m->buffers + l->buf_off;
  for (int i = 0; i < l->c; i++) g[i] = 1, b[i] = 0, buf[i] = 0, buf[l->c + i] = 1;
}

static void bn_forward(layer_t *l, model_t *m, int train) {
  real_t *buf = m->buffers + l->buf_off;
  l->train = train;
  if (l->blocked && train) {
    batchnorm_forward_train_blocked(m->batch, l->c, l->h * l->w, model_src(m, l->in[0]), layer_w(m, l),
                                    layer_b(m, l), l->eps, l->bn_momentum, buf, buf + l->c, l->save,
                                    l->save + l->c, l->out, l->scratch);
  } else if (l->blocked) {
    batchnorm_forward_eval_blocked(m->batch, l->c, l->h * l->w, model_src(m, l->in[0]), layer_w(m, l),
                                   layer_b(m, l), l->eps, buf, buf + l->c, l->save, l->save + l->c, l->out,
                                   l->scratch);
  } else if (train) {
    batchnorm_forward_train(m->batch, l->c, l->h * l->w, model_src(m, l->in[0]), layer_w(m, l),
                            layer_b(m, l), l->eps, l->bn_momentum, buf, buf + l->c, l->save,
                            l->save + l->c, l->out);
  } else {
    batchnorm_forward_eval(m->batch, l->c, l->h * l->w, model_src(m, l->in[0]), layer_w(m, l),
                           layer_b(m, l), l->eps, buf, buf + l->c, l->save, l->save + l->c,
                           l->out);
  }
}

static void bn_backward(layer_t *l, model_t *m) {
  real_t *dx = l->in[0] < 0 && !m->want_input_grad ? NULL : model_dsrc(m, l->in[0]);
  if (l->blocked) {
    batchnorm_backward_blocked(m->batch, l->c, l->h * l->w, l->train, model_src(m, l->in[0]), l->dout,
                               layer_w(m, l), l->save, l->save + l->c, dx, l->dx_overwrite, layer_dw(m, l),
                               layer_db(m, l), l->scratch);
    return;
  }
  batchnorm_backward(m->batch, l->c, l->h * l->w, l->train, model_src(m, l->in[0]), l->dout,
                     layer_w(m, l), l->save, l->save + l->c, dx, l->dx_overwrite, layer_dw(m, l), layer_db(m, l));
}

const layer_ops_t layer_batchnorm2d_cpu_ops = {"batchnorm2d", bn_setup, bn_init, bn_forward,
                                               bn_backward};

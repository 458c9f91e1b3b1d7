/* device.h: the device table: everything about a model that differs between the CPU
 * and the GPU (its layers' kernels, where its arrays live, the copies in and out, the
 * loss and the SGD update), as one struct of function pointers chosen once per model:
 * model_create sets the CPU's (device.c), model_to_gpu the GPU's (gpu/model_gpu.c).
 * Code that works on any model calls m->dev->... instead of asking where the model is,
 * so the GPU half stays in gpu/ and builds without one link gpu/model_gpu_stub.c.
 * Also the one helper that puts a host batch where the model reads it. */
#ifndef HV_TRAINER_DEVICE_H
#define HV_TRAINER_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "layer.h"
#include "model.h"
#include "real.h"

typedef struct device_ops {
  device_kind_t kind;
  const char *name;    /* "CPU", "GPU": for messages */
  int blocked_layout;  /* activations may stay in oneDNN's blocked layout (model.c: assign_layouts) */
  /* The implementation of a layer kind, or NULL when this device has none. */
  const layer_ops_t *(*layer_ops)(layer_kind_t kind);
  /* Runs the layers' init (model_init_layers) into the model's parameters and buffers
   * (m->rng seeded); sets m->failed and m->err when that fails. */
  void (*init_params)(model_t *m);
  /* Frees the model's arrays and layer state, not the layers array. */
  void (*free_model)(model_t *m);
  /* Replaces *x, the batch of a forward of n images, by what the layers read (mixed
   * precision converts it). 0, or -1 with m->err and m->failed. */
  int (*forward_input)(model_t *m, const real_t **x, int n);
  /* model_loss (model.h) on the last forward's output. */
  double (*loss)(model_t *m, const uint8_t *labels, real_t grad_scale, int *correct);
  /* The model's kind of memory: zeroed bytes (NULL when out of memory), release,
   * memset 0, and copies from and to the host (0, or -1 when the copy failed). */
  void *(*alloc_zeroed)(size_t bytes);
  void (*release)(void *p);
  void (*zero)(void *p, size_t bytes);
  int (*upload)(void *dst, const void *host, size_t bytes);
  int (*download)(void *host, const void *src, size_t bytes);
  /* sgd_update (kernels/sgd.h) on arrays of this memory. */
  void (*sgd_update)(size_t n, real_t *param, const real_t *grad, real_t *momentum_buf, real_t lr,
                     real_t momentum, real_t weight_decay, int nesterov, int first);
  /* A batch's staging buffer of bytes (*buf NULL where the model reads host memory),
   * and host batch x put there: returns what model_forward takes, NULL when the copy
   * failed. Used through device_batch_*. */
  int (*batch_alloc)(void **buf, size_t bytes);
  const real_t *(*batch_put)(void *buf, const real_t *x, size_t bytes);
} device_ops_t;

extern const device_ops_t device_cpu_ops;

/* Host batches on their way to a model: where the model reads them, with room for up
 * to `images` images of its input shape. */
typedef struct device_batch {
  const device_ops_t *dev;  /* NULL: not initialised (device_batch_free does nothing) */
  void *buf;                /* the device copy; NULL where the model reads host memory */
  size_t image_bytes;
} device_batch_t;

/* 0, or -1 when out of (device) memory. */
int device_batch_init(device_batch_t *b, const model_t *m, int images);
/* n images of x where the model reads them (x itself on the CPU); NULL when the copy
 * to the device failed. */
const real_t *device_batch_put(device_batch_t *b, const real_t *x, int n);
void device_batch_free(device_batch_t *b);

#endif /* HV_TRAINER_DEVICE_H */

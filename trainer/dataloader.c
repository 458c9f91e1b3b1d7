/* dataloader.c: a producer thread and two batch slots. Slot states move
 * FREE -> FILLING (producer, unlocked while it works) -> READY -> HELD (consumer,
 * until its next call) -> FREE. A new epoch bumps a generation number; a batch
 * filled for an older generation is thrown away, and start_epoch waits for a slot
 * being filled so the producer never reads an index array being replaced. */
#include "dataloader.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

enum { SLOT_FREE, SLOT_FILLING, SLOT_READY, SLOT_HELD };

struct dataloader {
  const dataset_t *ds;
  int batch, drop_last;
  batch_transform_t t;
  int *indices, count, cap, nbatches;
  uint64_t seed;
  real_t *x[2];
  uint8_t *y[2];
  int slot_n[2], slot_state[2], slot_batch[2];
  int next_fill, next_take, held, gen, stop, threaded;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
};

static int batch_size_of(const dataloader_t *dl, int b) {
  int left = dl->count - b * dl->batch;
  return left < dl->batch ? left : dl->batch;
}

static void fill(dataloader_t *dl, int slot, int b, const int *indices, uint64_t seed) {
  rng_t r;
  rng_seed(&r, seed ^ (0xd1b54a32d192ed03ull * (uint64_t)(b + 1)));
  int n = batch_size_of(dl, b);
  batch_fill(dl->ds, indices + (size_t)b * dl->batch, n, &dl->t, &r, dl->x[slot], dl->y[slot]);
  dl->slot_n[slot] = n;
}

static void *producer(void *arg) {
  dataloader_t *dl = arg;
  prctl(PR_SET_NAME, "hv-loader", 0, 0, 0);
  pthread_mutex_lock(&dl->mu);
  while (!dl->stop) {
    int s = dl->next_fill % 2;
    if (dl->next_fill < dl->nbatches && dl->slot_state[s] == SLOT_FREE) {
      int b = dl->next_fill++, g = dl->gen;
      dl->slot_state[s] = SLOT_FILLING;
      const int *idx = dl->indices;
      uint64_t seed = dl->seed;
      pthread_mutex_unlock(&dl->mu);
      fill(dl, s, b, idx, seed);
      pthread_mutex_lock(&dl->mu);
      if (g == dl->gen) {
        dl->slot_state[s] = SLOT_READY;
        dl->slot_batch[s] = b;
      } else {
        dl->slot_state[s] = SLOT_FREE;
      }
      pthread_cond_broadcast(&dl->cv);
    } else {
      pthread_cond_wait(&dl->cv, &dl->mu);
    }
  }
  pthread_mutex_unlock(&dl->mu);
  return NULL;
}

dataloader_t *dataloader_create(const dataset_t *ds, int batch, int drop_last,
                                const batch_transform_t *t, int prefetch, char *err,
                                size_t errlen) {
  if (batch < 1) {
    snprintf(err, errlen, "dataloader: batch size %d must be >= 1", batch);
    return NULL;
  }
  dataloader_t *dl = calloc(1, sizeof *dl);
  if (!dl) goto oom;
  dl->ds = ds;
  dl->batch = batch;
  dl->drop_last = drop_last;
  if (t) dl->t = *t;
  dl->held = -1;
  const size_t img = (size_t)ds->c * ds->h * ds->w;
  for (int s = 0; s < 2; s++) {
    dl->x[s] = malloc(sizeof(real_t) * img * batch);
    dl->y[s] = malloc((size_t)batch);
    if (!dl->x[s] || !dl->y[s]) goto oom;
  }
  pthread_mutex_init(&dl->mu, NULL);
  pthread_cond_init(&dl->cv, NULL);
  if (prefetch && pthread_create(&dl->thread, NULL, producer, dl) == 0) dl->threaded = 1;
  return dl;
oom:
  snprintf(err, errlen, "dataloader: out of memory for batch %d", batch);
  if (dl) {
    for (int s = 0; s < 2; s++) free(dl->x[s]), free(dl->y[s]);
    free(dl);
  }
  return NULL;
}

int dataloader_start_epoch(dataloader_t *dl, const int *indices, int count, uint64_t seed) {
  pthread_mutex_lock(&dl->mu);
  dl->gen++;
  while (dl->slot_state[0] == SLOT_FILLING || dl->slot_state[1] == SLOT_FILLING)
    pthread_cond_wait(&dl->cv, &dl->mu);
  if (count > dl->cap) {
    int *grown = realloc(dl->indices, sizeof(int) * (size_t)count);
    if (!grown) {
      pthread_mutex_unlock(&dl->mu);
      return -1;
    }
    dl->indices = grown;
    dl->cap = count;
  }
  if (count) memcpy(dl->indices, indices, sizeof(int) * (size_t)count);
  dl->count = count;
  dl->seed = seed;
  dl->nbatches = dl->drop_last ? count / dl->batch : (count + dl->batch - 1) / dl->batch;
  dl->next_fill = dl->next_take = 0;
  dl->slot_state[0] = dl->slot_state[1] = SLOT_FREE;
  dl->held = -1;
  pthread_cond_broadcast(&dl->cv);
  pthread_mutex_unlock(&dl->mu);
  return 0;
}

void dataloader_seek(dataloader_t *dl, int first) {
  pthread_mutex_lock(&dl->mu);
  dl->gen++;
  while (dl->slot_state[0] == SLOT_FILLING || dl->slot_state[1] == SLOT_FILLING)
    pthread_cond_wait(&dl->cv, &dl->mu);
  dl->next_fill = dl->next_take = first < dl->nbatches ? first : dl->nbatches;
  dl->slot_state[0] = dl->slot_state[1] = SLOT_FREE;
  dl->held = -1;
  pthread_cond_broadcast(&dl->cv);
  pthread_mutex_unlock(&dl->mu);
}

int dataloader_next(dataloader_t *dl, const real_t **x, const uint8_t **y) {
  pthread_mutex_lock(&dl->mu);
  if (dl->held >= 0) {
    dl->slot_state[dl->held] = SLOT_FREE;
    dl->held = -1;
    pthread_cond_broadcast(&dl->cv);
  }
  if (dl->next_take >= dl->nbatches) {
    pthread_mutex_unlock(&dl->mu);
    return 0;
  }
  const int b = dl->next_take++, s = b % 2;
  if (!dl->threaded) {
    fill(dl, s, b, dl->indices, dl->seed);
  } else {
    while (dl->slot_state[s] != SLOT_READY || dl->slot_batch[s] != b)
      pthread_cond_wait(&dl->cv, &dl->mu);
  }
  dl->slot_state[s] = SLOT_HELD;
  dl->held = s;
  *x = dl->x[s];
  *y = dl->y[s];
  int n = dl->slot_n[s];
  pthread_mutex_unlock(&dl->mu);
  return n;
}

int dataloader_num_batches(const dataloader_t *dl) { return dl->nbatches; }

void dataloader_free(dataloader_t *dl) {
  if (!dl) return;
  if (dl->threaded) {
    pthread_mutex_lock(&dl->mu);
    dl->stop = 1;
    pthread_cond_broadcast(&dl->cv);
    pthread_mutex_unlock(&dl->mu);
    pthread_join(dl->thread, NULL);
  }
  pthread_mutex_destroy(&dl->mu);
  pthread_cond_destroy(&dl->cv);
  for (int s = 0; s < 2; s++) free(dl->x[s]), free(dl->y[s]);
  free(dl->indices);
  free(dl);
}

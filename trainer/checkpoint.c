/* checkpoint.c: serialise to memory, CRC-32 (zlib), atomic write; read back, verify
 * everything, then copy into the model. The header is read and checked first (magic,
 * version, counts against the model, the size they imply against the file's), so
 * the body is allocated only for a file that can be what its header says. A model on the GPU is copied through the host
 * (its device table's upload and download): the file is the same as the CPU model's. */
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "atomic_file.h"
#include "file_read.h"
#include "device.h"

static const char kMagic[8] = {'H', 'V', 'C', 'K', 'P', 'T', '\r', '\n'};

typedef struct ckpt_header {
  char magic[8];
  uint32_t version, real_size;
  uint64_t n_params, n_buffers;
  uint32_t has_momentum, pad;
  int64_t epoch, step;
  double lr;
  uint64_t model_rng[4], user_rng[4];
} ckpt_header_t;

static uint32_t crc_of(const uint8_t *p, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (n > 0) {
    uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
    crc = crc32(crc, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return (uint32_t)crc;
}

int checkpoint_save(const char *path, const model_t *m, const sgd_t *opt,
                    const checkpoint_meta_t *meta, char *err, size_t errlen) {
  ckpt_header_t h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, kMagic, 8);
  h.version = CHECKPOINT_VERSION;
  h.real_size = sizeof(real_t);
  h.n_params = m->n_params;
  h.n_buffers = m->n_buffers;
  h.has_momentum = opt && opt->has_buf;
  h.epoch = meta ? meta->epoch : 0;
  h.step = meta ? meta->step : 0;
  h.lr = meta ? meta->lr : 0;
  memcpy(h.model_rng, m->rng.s, sizeof h.model_rng);
  if (meta) memcpy(h.user_rng, meta->rng.s, sizeof h.user_rng);
  const size_t np = m->n_params * sizeof(real_t), nb = m->n_buffers * sizeof(real_t),
               nm = h.has_momentum ? np : 0, total = sizeof h + np + nb + nm + 4;
  uint8_t *buf = malloc(total);
  if (!buf) {
    snprintf(err, errlen, "%s: out of memory for a %zu-byte checkpoint", path, total);
    return -1;
  }
  uint8_t *p = buf;
  memcpy(p, &h, sizeof h), p += sizeof h;
  /* The model's arrays live on the device for a GPU model: 0, or -1 when a copy fails. */
  const device_ops_t *dev = m->dev;
  if (dev->download(p, m->params, np) || dev->download(p + np, m->buffers, nb) ||
      (nm && dev->download(p + np + nb, opt->momentum_buf, nm))) {
    snprintf(err, errlen, "%s: copying the model from the GPU failed", path);
    free(buf);
    return -1;
  }
  p += np + nb + nm;
  uint32_t crc = crc_of(buf, total - 4);
  memcpy(p, &crc, 4);

  /* Owner-only, unpredictably named temporary file renamed over path: a crash leaves
   * the old checkpoint or the new one, never half of one. */
  atomic_file_t af;
  if (atomic_file_open(&af, path, err, errlen)) {
    free(buf);
    return -1;
  }
  const size_t written = fwrite(buf, 1, total, af.f);
  free(buf);
  if (written != total) {
    snprintf(err, errlen, "%s: write failed after %zu of %zu bytes: %s", af.tmp, written, total,
             strerror(errno));
    atomic_file_abort(&af);
    return -1;
  }
  if (atomic_file_commit(&af, 1, err, errlen)) return -1;
  return 0;
}

int checkpoint_load(const char *path, model_t *m, sgd_t *opt, checkpoint_meta_t *meta,
                    char *err, size_t errlen) {
  /* The header first, checked against the model and the file's size; the body is
   * allocated only for a file that can be what the header says. */
  file_stream_t s;
  if (file_stream_open(&s, path, err, errlen)) return -1;
  uint8_t *data = NULL;
  int rc = -1;
  ckpt_header_t h;
  size_t got;
  if (file_stream_read(&s, &h, sizeof h, &got, err, errlen)) goto done;
  if (got < sizeof h) {
    snprintf(err, errlen, "%s: truncated: %llu bytes, a checkpoint header needs %zu", path,
             s.gzip ? (unsigned long long)got : s.bytes, sizeof h + 4);
    goto done;
  }
  if (memcmp(h.magic, kMagic, 8) != 0) {
    snprintf(err, errlen, "%s: not an hv checkpoint (wrong magic at byte 0)", path);
    goto done;
  }
  if (h.version != CHECKPOINT_VERSION) {
    snprintf(err, errlen, "%s: checkpoint version %u, this build reads version %u", path,
             h.version, CHECKPOINT_VERSION);
    goto done;
  }
  if (h.real_size != sizeof(real_t)) {
    snprintf(err, errlen, "%s: written with %u-byte reals, this build uses %zu", path,
             h.real_size, sizeof(real_t));
    goto done;
  }
  /* The counts must be the model's (already in memory), so the sizes below are bounded
   * by it and cannot overflow. */
  if (h.n_params != m->n_params || h.n_buffers != m->n_buffers) {
    snprintf(err, errlen,
             "%s: holds %llu parameters and %llu buffers, the model has %zu and %zu (another "
             "architecture?)",
             path, (unsigned long long)h.n_params, (unsigned long long)h.n_buffers, m->n_params,
             m->n_buffers);
    goto done;
  }
  if (h.has_momentum > 1) {
    snprintf(err, errlen, "%s: momentum flag %u at byte 32 is neither 0 nor 1: the file is "
             "corrupt", path, h.has_momentum);
    goto done;
  }
  const size_t np = m->n_params * sizeof(real_t), nb = m->n_buffers * sizeof(real_t),
               nm = h.has_momentum ? np : 0, want = sizeof h + np + nb + nm + 4;
  if (!s.gzip && s.bytes != want) {
    snprintf(err, errlen, "%s: %s: %llu bytes, the header implies %zu", path,
             s.bytes < want ? "truncated" : "oversized", s.bytes, want);
    goto done;
  }
  if (s.gzip && want > file_stream_capacity(&s)) {
    snprintf(err, errlen, "%s: truncated: the header implies %zu bytes, more than a %llu-byte "
             "gzip file can hold", path, want, s.bytes);
    goto done;
  }
  data = malloc(want);
  if (!data) {
    snprintf(err, errlen, "%s: out of memory for a %zu-byte checkpoint", path, want);
    goto done;
  }
  memcpy(data, &h, sizeof h);
  if (file_stream_read(&s, data + sizeof h, want - sizeof h, &got, err, errlen)) goto done;
  uint8_t extra;
  size_t more = 0;
  if (got == want - sizeof h && file_stream_read(&s, &extra, 1, &more, err, errlen)) goto done;
  if (got < want - sizeof h || more) {
    snprintf(err, errlen, "%s: %s: %s bytes, the header implies %zu", path,
             more ? "oversized" : "truncated", more ? "more" : "fewer", want);
    goto done;
  }
  const size_t size = want;
  uint32_t crc;
  memcpy(&crc, data + size - 4, 4);
  if (crc != crc_of(data, size - 4)) {
    snprintf(err, errlen, "%s: checksum mismatch: the file is corrupt", path);
    goto done;
  }
  if (h.has_momentum && opt && opt->n != m->n_params) {
    snprintf(err, errlen, "%s: optimiser has %zu values, the model %zu", path, opt->n, m->n_params);
    goto done;
  }
  const uint8_t *p = data + sizeof h;
  const device_ops_t *dev = m->dev;
  if (dev->upload(m->params, p, np) || dev->upload(m->buffers, p + np, nb) ||
      (opt && nm && dev->upload(opt->momentum_buf, p + np + nb, nm))) {
    snprintf(err, errlen, "%s: copying the checkpoint to the GPU failed", path);
    goto done;
  }
  memcpy(m->rng.s, h.model_rng, sizeof h.model_rng);
  if (opt) {
    opt->has_buf = (int)h.has_momentum;
    if (!nm) dev->zero(opt->momentum_buf, np);
    opt->steps = h.step;
  }
  if (meta) {
    meta->epoch = h.epoch;
    meta->step = h.step;
    meta->lr = h.lr;
    memcpy(meta->rng.s, h.user_rng, sizeof h.user_rng);
  }
  rc = 0;
done:
  free(data);
  file_stream_close(&s);
  return rc;
}

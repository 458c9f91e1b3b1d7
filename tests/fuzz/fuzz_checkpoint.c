/* fuzz_checkpoint.c: libFuzzer target of the checkpoint reader (trainer/checkpoint.c,
 * checkpoint_load) into the small model of fuzz_ckpt_model.c.
 * Input: flags (1 byte) | the checkpoint file. Flags: bit 0 recompute the trailing
 * CRC-32 before writing (a mutated file almost never carries a valid checksum, and
 * without this the reader's later checks and its copy into the model would never run);
 * bit 1 load the optimiser state too (an sgd_t with momentum); bit 2 load the meta
 * (epoch, step, lr, RNG); bit 3 gzip the file (the reader takes both). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "checkpoint.h"
#include "fuzz_util.h"

static model_t *model;
static sgd_t opt;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  model = fuzz_ckpt_model();
  char err[256];
  if (sgd_init(&opt, model, 0.1, 0.9, 5e-4, 0, err, sizeof err)) {
    fprintf(stderr, "fuzz_checkpoint: %s\n", err);
    __builtin_trap();
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const unsigned flags = data[0];
  data++, size--;
  uint8_t *file = malloc(size + 1); /* +1: malloc(0) may return NULL */
  if (!file) __builtin_trap();
  memcpy(file, data, size);
  if ((flags & 1) && size >= 4) {
    /* The reader compares the last 4 bytes, in host order, with zlib's CRC-32 of the rest. */
    const uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), file, (uInt)(size - 4));
    memcpy(file + size - 4, &crc, 4);
  }
  fuzz_tmpdir_clear();
  char path[4200];
  snprintf(path, sizeof path, "%s/model.ckpt", fuzz_tmpdir());
  fuzz_write_file(path, file, size, (flags >> 3) & 1);
  free(file);

  checkpoint_meta_t meta;
  char err[512] = "";
  if (checkpoint_load(path, model, (flags >> 1) & 1 ? &opt : NULL, (flags >> 2) & 1 ? &meta : NULL,
                      err, sizeof err) != 0 &&
      err[0] == '\0')
    __builtin_trap(); /* a failure must say why */
  return 0;
}

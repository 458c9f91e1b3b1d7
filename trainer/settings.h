/* settings.h: the trainer's HV_* environment settings, parsed strictly: a value that
 * is not one of the accepted words, or not a whole number in range, is refused with
 * one line naming the variable, the value and what is accepted (the form of the
 * engine's settings: "HV_X='v' is not valid: expected ..."). model_finalize reads
 * them, so a typo fails the model's build instead of being ignored.
 *   HV_LAYOUT      auto (default) | nchw        activations' layout between convolutions
 *   HV_CONV        auto | dnnl (default) | im2col  the CPU convolution
 *   HV_CONV_ALGO   auto (default) | direct | winograd  oneDNN's algorithm
 *   HV_CONV_WS_KB  1 .. 16777216                the im2col workspace target, KiB
 *   HV_FUSE        auto (default) | off         fused CPU passes (model.c: fuse_layers)
 * Unset or empty means the default. */
#ifndef HV_TRAINER_SETTINGS_H
#define HV_TRAINER_SETTINGS_H

#include <stddef.h>

enum { TRAINER_CONV_ALGO_AUTO = 0, TRAINER_CONV_ALGO_DIRECT, TRAINER_CONV_ALGO_WINOGRAD };

#define TRAINER_CONV_WS_KB_MAX (1LL << 24) /* 16 GiB */

typedef struct trainer_settings {
  int layout_nchw;       /* HV_LAYOUT=nchw */
  int conv_im2col;       /* HV_CONV=im2col */
  int conv_algo;         /* HV_CONV_ALGO, TRAINER_CONV_ALGO_* */
  long long conv_ws_kb;  /* HV_CONV_WS_KB; 0 when unset (the built-in target) */
  int fuse_off;          /* HV_FUSE=off: every layer runs its own passes (the reference) */
} trainer_settings_t;

/* Reads the environment into *s (defaults for what is unset). 0, or -1 with the line
 * about the first bad variable in err (*s then holds the defaults for it). */
int trainer_settings_read(trainer_settings_t *s, char *err, size_t errlen);

#endif /* HV_TRAINER_SETTINGS_H */

/* settings.c: strict parsing of the trainer's HV_* variables (settings.h). Words
 * match exactly; numbers go through strtoll with an end pointer and errno, so "12abc",
 * "", "1e3", " 5" or an overflow are refused rather than read as a prefix or as 0
 * (what atol did). */
#include "settings.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The index of env's value in words (NULL-terminated), dflt when unset or empty;
 * -1 with a message otherwise. */
static int read_word(const char *name, const char *const *words, int dflt, const char *expected,
                     char *err, size_t errlen) {
  const char *v = getenv(name);
  if (!v || !*v) return dflt;
  for (int i = 0; words[i]; i++)
    if (strcmp(v, words[i]) == 0) return i;
  snprintf(err, errlen, "%s='%s' is not valid: expected %s", name, v, expected);
  return -1;
}

/* env as a whole decimal integer in [lo, hi] into *out (left alone when unset or
 * empty). 0, or -1 with a message. */
static int read_int(const char *name, long long lo, long long hi, const char *unit,
                    long long *out, char *err, size_t errlen) {
  const char *v = getenv(name);
  if (!v || !*v) return 0;
  char *end = NULL;
  errno = 0;
  const long long x = strtoll(v, &end, 10);
  /* strtoll skips leading blanks; a value is the number alone. */
  if (*v == ' ' || *v == '\t' || *end != '\0' || errno || x < lo || x > hi) {
    snprintf(err, errlen, "%s='%s' is not valid: expected %s, a whole number from %lld to %lld",
             name, v, unit, lo, hi);
    return -1;
  }
  *out = x;
  return 0;
}

int trainer_settings_read(trainer_settings_t *s, char *err, size_t errlen) {
  static const char *const layouts[] = {"auto", "nchw", NULL};
  static const char *const convs[] = {"auto", "dnnl", "im2col", NULL};
  static const char *const algos[] = {"auto", "direct", "winograd", NULL};
  static const char *const fuses[] = {"auto", "off", NULL};
  memset(s, 0, sizeof *s);
  int w = read_word("HV_LAYOUT", layouts, 0, "auto or nchw", err, errlen);
  if (w < 0) return -1;
  s->layout_nchw = w == 1;
  w = read_word("HV_CONV", convs, 0, "auto, dnnl or im2col", err, errlen);
  if (w < 0) return -1;
  s->conv_im2col = w == 2;
  w = read_word("HV_CONV_ALGO", algos, 0, "auto, direct or winograd", err, errlen);
  if (w < 0) return -1;
  s->conv_algo = w; /* the order of algos[] is TRAINER_CONV_ALGO_*'s */
  w = read_word("HV_FUSE", fuses, 0, "auto or off", err, errlen);
  if (w < 0) return -1;
  s->fuse_off = w == 1;
  return read_int("HV_CONV_WS_KB", 1, TRAINER_CONV_WS_KB_MAX, "KiB of convolution workspace",
                  &s->conv_ws_kb, err, errlen);
}

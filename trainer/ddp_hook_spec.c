/* ddp_hook_spec.c: the hook names of ddp_hooks.h ("powersgd:rank=4,start=10") parsed
 * strictly (an unknown name, key or malformed number is one line naming it and what
 * is accepted), and the hook a parsed spec names. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp_hooks.h"

static const char *const accepted =
    "allreduce, fp16, bf16, powersgd[:rank=R,start=S,min_rate=C,seed=N] or int8[:chunk=N]";

static int number(const char *key, const char *v, size_t len, double lo, double hi, double *out, char *err,
                  size_t errlen) {
  char buf[64];
  char *end;
  if (len == 0 || len >= sizeof buf) goto bad;
  memcpy(buf, v, len);
  buf[len] = 0;
  errno = 0;
  *out = strtod(buf, &end);
  if (errno || *end || !(*out >= lo && *out <= hi)) goto bad;
  return 0;
bad:
  snprintf(err, errlen, "comm hook option %s='%.*s' is not valid: expected a number from %g to %g", key,
           (int)(len < 60 ? len : 60), v, lo, hi);
  return -1;
}

/* key=value pairs separated by commas; keys[i] gets its value through set(i, value). */
static int options(const char *hook, const char *opts, ddp_hook_spec_t *s, char *err, size_t errlen) {
  const char *p = opts;
  while (*p) {
    const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);
    const char *eq = memchr(p, '=', (size_t)(end - p));
    if (!eq) {
      snprintf(err, errlen, "comm hook '%s': option '%.*s' is not key=value", hook, (int)(end - p), p);
      return -1;
    }
    const size_t klen = (size_t)(eq - p), vlen = (size_t)(end - eq - 1);
    double v;
#define KEY(k) (klen == strlen(k) && !strncmp(p, k, klen))
    if (s->kind == DDP_HOOK_POWERSGD && KEY("rank")) {
      if (number("rank", eq + 1, vlen, 1, 4096, &v, err, errlen) || v != (int)v) goto bad_int;
      s->powersgd.rank = (int)v;
    } else if (s->kind == DDP_HOOK_POWERSGD && KEY("start")) {
      if (number("start", eq + 1, vlen, 0, 1e15, &v, err, errlen) || v != (long long)v) goto bad_int;
      s->powersgd.start_iter = (long long)v;
    } else if (s->kind == DDP_HOOK_POWERSGD && KEY("min_rate")) {
      if (number("min_rate", eq + 1, vlen, 0, 1e6, &v, err, errlen)) return -1;
      s->powersgd.min_compression_rate = v;
    } else if (s->kind == DDP_HOOK_POWERSGD && KEY("seed")) {
      if (number("seed", eq + 1, vlen, 0, 9e15, &v, err, errlen) || v != (long long)v) goto bad_int;
      s->powersgd.seed = (uint64_t)v;
    } else if (s->kind == DDP_HOOK_INT8 && KEY("chunk")) {
      if (number("chunk", eq + 1, vlen, 1, 1 << 24, &v, err, errlen) || v != (long long)v) goto bad_int;
      s->int8_chunk = (size_t)v;
    } else {
      snprintf(err, errlen, "comm hook '%s' has no option '%.*s' (accepted: %s)", hook, (int)klen, p, accepted);
      return -1;
    }
#undef KEY
    p = comma ? comma + 1 : end;
    continue;
  bad_int:
    if (!err[0]) /* a number, not a whole one */
      snprintf(err, errlen, "comm hook option '%.*s' is not valid: expected a whole number", (int)(end - p), p);
    return -1;
  }
  return 0;
}

int ddp_hook_spec_parse(const char *text, ddp_hook_spec_t *s, char *err, size_t errlen) {
  static const ddp_powersgd_config_t psgd = DDP_POWERSGD_CONFIG_INIT;
  memset(s, 0, sizeof *s);
  s->powersgd = psgd;
  s->int8_chunk = 1024;
  if (err && errlen) err[0] = 0;
  const char *colon = strchr(text, ':');
  const size_t len = colon ? (size_t)(colon - text) : strlen(text);
  static const struct { const char *name; ddp_hook_kind_t kind; } names[] = {
      {"allreduce", DDP_HOOK_ALLREDUCE}, {"fp16", DDP_HOOK_FP16}, {"bf16", DDP_HOOK_BF16},
      {"powersgd", DDP_HOOK_POWERSGD},   {"int8", DDP_HOOK_INT8}};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (len == strlen(names[i].name) && !strncmp(text, names[i].name, len)) {
      s->kind = names[i].kind;
      if (!colon) return 0;
      if ((s->kind != DDP_HOOK_POWERSGD && s->kind != DDP_HOOK_INT8) || !colon[1]) {
        snprintf(err, errlen, "comm hook '%s' is not valid: expected %s", text, accepted);
        return -1;
      }
      return options(names[i].name, colon + 1, s, err, errlen);
    }
  snprintf(err, errlen, "unknown comm hook '%s': expected %s", text, accepted);
  return -1;
}

int ddp_hook_make(const ddp_hook_spec_t *s, ddp_comm_hook_t *hook, char *err, size_t errlen) {
  switch (s->kind) {
  case DDP_HOOK_ALLREDUCE:
    memset(hook, 0, sizeof *hook); /* no start: ddp_register_comm_hook installs the default */
    return 0;
  case DDP_HOOK_FP16:
  case DDP_HOOK_BF16:
    return ddp_hook_half_make(hook, s->kind == DDP_HOOK_BF16);
  case DDP_HOOK_POWERSGD:
    return ddp_hook_powersgd_make(hook, &s->powersgd, err, errlen);
  case DDP_HOOK_INT8:
    return ddp_hook_int8_make(hook, s->int8_chunk, err, errlen);
  }
  snprintf(err, errlen, "unknown comm hook kind %d", (int)s->kind);
  return -1;
}

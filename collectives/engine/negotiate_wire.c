/* negotiate_wire.c: the wire format of negotiation messages: a growable byte
 * buffer, a bounds-checked reader, names as u16 length + bytes, and the
 * coordinator's responses. Same-machine encoding: every rank runs the same build on
 * the same architecture, so integers travel in host order. */
#include <stdlib.h>
#include <string.h>

#include "negotiate.h"

int hv__bytes_reserve(hv__bytes_t *b, size_t total) {
  if (total > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < total) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) return -1;
    b->data = d;
    b->cap = cap;
  }
  return 0;
}

int hv__bytes_put(hv__bytes_t *b, const void *p, size_t n) {
  if (hv__bytes_reserve(b, b->len + n)) return -1;
  memcpy(b->data + b->len, p, n);
  b->len += n;
  return 0;
}

void hv__read_bytes(hv__reader_t *r, void *out, size_t n) {
  if ((size_t)(r->end - r->p) < n) {
    r->bad = 1;
    memset(out, 0, n);
    return;
  }
  memcpy(out, r->p, n);
  r->p += n;
}

/* A name is stored as u16 length + bytes; returns a pointer into the buffer (not
 * terminated) through *name and its length. */
int hv__put_name(hv__bytes_t *b, const char *name) {
  uint16_t len = (uint16_t)strlen(name);
  return hv__bytes_put(b, &len, sizeof len) || hv__bytes_put(b, name, len);
}

char *hv__read_name(hv__reader_t *r) {
  uint16_t len;
  hv__read_bytes(r, &len, sizeof len);
  if (r->bad || (size_t)(r->end - r->p) < len) {
    r->bad = 1;
    return NULL;
  }
  char *s = malloc((size_t)len + 1);
  if (!s) {
    r->bad = r->oom = 1;
    return NULL;
  }
  memcpy(s, r->p, len);
  s[len] = '\0';
  r->p += len;
  return s;
}

int hv__wire_put_response(hv__bytes_t *out, uint8_t kind, hv_result_t code, const hv__meta_t *meta,
                          const char *name, const uint64_t *counts, int n, const char *msg) {
  uint8_t k = kind, rc = (uint8_t)code;
  hv__meta_t zero;
  memset(&zero, 0, sizeof zero);
  if (hv__bytes_put(out, &k, 1) || hv__bytes_put(out, &rc, 1) ||
      hv__bytes_put(out, meta ? meta : &zero, sizeof zero) || hv__put_name(out, name))
    return -1;
  if (kind == HV__RESP_OK && meta->coll == HV__COLL_ALLGATHERV)
    if (hv__bytes_put(out, counts, sizeof(uint64_t) * (size_t)n)) return -1;
  if (kind == HV__RESP_ERROR) {
    uint16_t len = (uint16_t)strlen(msg);
    if (hv__bytes_put(out, &len, sizeof len) || hv__bytes_put(out, msg, len)) return -1;
  }
  return 0;
}


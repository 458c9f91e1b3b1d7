/* response_cache.h: Horovod-style response cache. Once a name has been negotiated
 * through the coordinator, every rank stores it under the same bit index; later
 * submissions of that name with identical metadata are agreed on by one bit-vector
 * allreduce instead of a coordinator round trip. Every rank applies the same inserts
 * and evictions in the same (response) order, so bit indices agree everywhere. */
#ifndef HV_RESPONSE_CACHE_H
#define HV_RESPONSE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"

struct hv__meta;

typedef struct hv__cache_entry {
  char *name;
  unsigned char meta[32]; /* a copy of hv__meta_t (kept opaque here) */
  uint64_t *all_counts;   /* allgatherv: every rank's count; NULL otherwise */
  int in_use;
} hv__cache_entry_t;

typedef struct hv__cache {
  hv__cache_entry_t *entries; /* capacity entries, index == bit */
  size_t capacity;
  int nranks;
  hv__map_t by_name; /* name -> entry */
} hv__cache_t;

int hv__cache_init(hv__cache_t *cache, size_t capacity, int nranks);
void hv__cache_free(hv__cache_t *cache);
/* The bit of name when cached with exactly this metadata, else -1. */
int hv__cache_lookup(const hv__cache_t *cache, const char *name, uint64_t name_hash, const struct hv__meta *meta);
/* The bit of name whatever its metadata, else -1. */
int hv__cache_find(const hv__cache_t *cache, const char *name);
/* Inserts (lowest free bit); returns the bit, -1 when full (the name then keeps
 * going through the coordinator), or -2 when out of memory (this rank alone: its
 * caller must fail, as the ranks' caches would part). all_counts is copied when not
 * NULL. */
int hv__cache_insert(hv__cache_t *cache, const char *name, const struct hv__meta *meta,
                     const void *all_counts);
void hv__cache_evict(hv__cache_t *cache, int bit);
const hv__cache_entry_t *hv__cache_entry(const hv__cache_t *cache, int bit);

#endif

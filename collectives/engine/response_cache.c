/* response_cache.c: the name -> bit table behind the negotiation fast path (see
 * response_cache.h). Full cache: new names are simply not cached, which keeps the
 * bit assignment deterministic without coordinating an eviction policy. */
#include "response_cache.h"

#include <stdlib.h>
#include <string.h>

#include "hv_internal.h"

_Static_assert(sizeof(hv__meta_t) <= 32, "hv__meta_t must fit the cache entry");

int hv__cache_init(hv__cache_t *cache, size_t capacity, int nranks) {
  memset(cache, 0, sizeof *cache);
  cache->capacity = capacity;
  cache->nranks = nranks;
  if (capacity && !(cache->entries = calloc(capacity, sizeof *cache->entries))) {
    cache->capacity = 0; /* no entries for hv__cache_free to walk */
    return -1;
  }
  return 0;
}

void hv__cache_free(hv__cache_t *cache) {
  for (size_t i = 0; i < cache->capacity; i++) {
    free(cache->entries[i].name);
    free(cache->entries[i].all_counts);
  }
  free(cache->entries);
  hv__map_free(&cache->by_name);
  memset(cache, 0, sizeof *cache);
}

static int find_hashed(const hv__cache_t *cache, const char *name, uint64_t name_hash) {
  hv__cache_entry_t *e = hv__map_get_hashed(&cache->by_name, name, name_hash);
  return e ? (int)(e - cache->entries) : -1;
}

int hv__cache_find(const hv__cache_t *cache, const char *name) {
  return find_hashed(cache, name, hv__hash_string(name));
}

int hv__cache_lookup(const hv__cache_t *cache, const char *name, uint64_t name_hash, const hv__meta_t *meta) {
  int bit = find_hashed(cache, name, name_hash);
  if (bit < 0 || memcmp(cache->entries[bit].meta, meta, sizeof *meta) != 0) return -1;
  return bit;
}

int hv__cache_insert(hv__cache_t *cache, const char *name, const hv__meta_t *meta,
                     const void *all_counts) {
  if (hv__cache_find(cache, name) >= 0) return -1;
  for (size_t i = 0; i < cache->capacity; i++) {
    hv__cache_entry_t *e = &cache->entries[i];
    if (e->in_use) continue;
    e->name = strdup(name);
    if (!e->name) return -2;
    memset(e->meta, 0, sizeof e->meta);
    memcpy(e->meta, meta, sizeof *meta);
    if (all_counts) {
      e->all_counts = malloc(sizeof(uint64_t) * (size_t)cache->nranks);
      if (!e->all_counts) {
        free(e->name);
        e->name = NULL;
        return -2;
      }
      memcpy(e->all_counts, all_counts, sizeof(uint64_t) * (size_t)cache->nranks);
    }
    if (hv__map_put(&cache->by_name, e->name, e)) {
      free(e->name);
      free(e->all_counts);
      e->name = NULL;
      e->all_counts = NULL;
      return -2;
    }
    e->in_use = 1;
    return (int)i;
  }
  return -1;
}

void hv__cache_evict(hv__cache_t *cache, int bit) {
  if (bit < 0 || (size_t)bit >= cache->capacity || !cache->entries[bit].in_use) return;
  hv__cache_entry_t *e = &cache->entries[bit];
  hv__map_remove(&cache->by_name, e->name);
  free(e->name);
  free(e->all_counts);
  memset(e, 0, sizeof *e);
}

const hv__cache_entry_t *hv__cache_entry(const hv__cache_t *cache, int bit) {
  return &cache->entries[bit];
}

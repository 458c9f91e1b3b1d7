/* hashmap.h: a string-keyed hash map (open addressing, linear probing, backward-shift
 * deletion) used for tensor names. Keys are borrowed: the caller keeps them alive
 * while they are in the map. Not thread-safe. */
#ifndef HV_HASHMAP_H
#define HV_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct hv__map_slot {
  const char *key; /* NULL when empty */
  uint64_t hash;
  void *value;
} hv__map_slot_t;

typedef struct hv__map {
  hv__map_slot_t *slots;
  size_t capacity; /* power of two, or 0 */
  size_t count;
} hv__map_t;

uint64_t hv__hash_string(const char *s);
/* The same hash of the n bytes at s, for a caller that knows the length already. */
uint64_t hv__hash_bytes(const char *s, size_t n);
void *hv__map_get(const hv__map_t *map, const char *key);
/* Inserts or replaces; returns 0, or -1 when out of memory. */
int hv__map_put(hv__map_t *map, const char *key, void *value);
/* Removes key; returns its value or NULL. */
void *hv__map_remove(hv__map_t *map, const char *key);
/* The same with the key's hash (hv__hash_string) already computed: a tensor's name is
 * hashed once, when it is submitted, for all the maps it goes through. */
void *hv__map_get_hashed(const hv__map_t *map, const char *key, uint64_t hash);
int hv__map_put_hashed(hv__map_t *map, const char *key, uint64_t hash, void *value);
/* Inserts key unless it is present (one probe for "is it there? if not, add it"):
 * returns 0 when inserted, 1 when present (the map unchanged), -1 when out of memory. */
int hv__map_insert_new_hashed(hv__map_t *map, const char *key, uint64_t hash, void *value);
void *hv__map_remove_hashed(hv__map_t *map, const char *key, uint64_t hash);
void hv__map_free(hv__map_t *map);

#endif

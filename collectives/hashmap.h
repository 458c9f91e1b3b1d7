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
void *hv__map_get(const hv__map_t *map, const char *key);
/* Inserts or replaces; returns 0, or -1 when out of memory. */
int hv__map_put(hv__map_t *map, const char *key, void *value);
/* Removes key; returns its value or NULL. */
void *hv__map_remove(hv__map_t *map, const char *key);
void hv__map_free(hv__map_t *map);

#endif

/* hashmap.c: string-keyed open-addressing hash map with linear probing. Deletion
 * shifts the following cluster back instead of leaving tombstones, so lookups stay
 * short however many names come and go during a long training run. */
#include "hashmap.h"

#include <stdlib.h>
#include <string.h>

/* Eight bytes per step (multiply and fold), not FNV's one: tensor names are long
 * ("hvbench/allreduce/float/sum/4096/in-place/17", "model/block3/conv2/weight") and
 * a fused step hashes each of hundreds of them. */
uint64_t hv__hash_string(const char *s) { return hv__hash_bytes(s, strlen(s)); }

uint64_t hv__hash_bytes(const char *s, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n, w;
  for (; n >= 8; n -= 8, s += 8) {
    memcpy(&w, s, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  w = 0;
  memcpy(&w, s, n);
  h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 29);
}

/* The key's own pointer matches without a comparison: a request's name leaves the
 * in-flight map through the same pointer it entered by. */
static size_t find_slot(const hv__map_t *map, const char *key, uint64_t hash) {
  size_t mask = map->capacity - 1;
  size_t i = hash & mask;
  while (map->slots[i].key && map->slots[i].key != key &&
         !(map->slots[i].hash == hash && strcmp(map->slots[i].key, key) == 0))
    i = (i + 1) & mask;
  return i;
}

void *hv__map_get_hashed(const hv__map_t *map, const char *key, uint64_t hash) {
  if (map->capacity == 0) return NULL;
  size_t i = find_slot(map, key, hash);
  return map->slots[i].key ? map->slots[i].value : NULL;
}

void *hv__map_get(const hv__map_t *map, const char *key) { return hv__map_get_hashed(map, key, hv__hash_string(key)); }

static int grow(hv__map_t *map) {
  size_t cap = map->capacity ? map->capacity * 2 : 64;
  hv__map_slot_t *slots = calloc(cap, sizeof *slots);
  if (!slots) return -1;
  hv__map_t bigger = {slots, cap, 0};
  for (size_t i = 0; i < map->capacity; i++)
    if (map->slots[i].key) {
      size_t j = find_slot(&bigger, map->slots[i].key, map->slots[i].hash);
      bigger.slots[j] = map->slots[i];
      bigger.count++;
    }
  free(map->slots);
  *map = bigger;
  return 0;
}

int hv__map_put(hv__map_t *map, const char *key, void *value) {
  return hv__map_put_hashed(map, key, hv__hash_string(key), value);
}

int hv__map_put_hashed(hv__map_t *map, const char *key, uint64_t hash, void *value) {
  if ((map->count + 1) * 4 > map->capacity * 3 && grow(map)) return -1;
  size_t i = find_slot(map, key, hash);
  if (!map->slots[i].key) map->count++;
  map->slots[i].key = key;
  map->slots[i].hash = hash;
  map->slots[i].value = value;
  return 0;
}

int hv__map_insert_new_hashed(hv__map_t *map, const char *key, uint64_t hash, void *value) {
  if ((map->count + 1) * 4 > map->capacity * 3 && grow(map)) return -1;
  size_t i = find_slot(map, key, hash);
  if (map->slots[i].key) return 1;
  map->slots[i] = (hv__map_slot_t){key, hash, value};
  map->count++;
  return 0;
}

void *hv__map_remove(hv__map_t *map, const char *key) { return hv__map_remove_hashed(map, key, hv__hash_string(key)); }

void *hv__map_remove_hashed(hv__map_t *map, const char *key, uint64_t hash) {
  if (map->capacity == 0) return NULL;
  size_t mask = map->capacity - 1;
  size_t i = find_slot(map, key, hash);
  if (!map->slots[i].key) return NULL;
  void *value = map->slots[i].value;
  /* Backward-shift: move later members of the cluster into the hole when their home
   * slot does not lie cyclically in (hole, j]. */
  size_t hole = i, j = i;
  for (;;) {
    j = (j + 1) & mask;
    if (!map->slots[j].key) break;
    size_t home = map->slots[j].hash & mask;
    int in_range = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!in_range) {
      map->slots[hole] = map->slots[j];
      hole = j;
    }
  }
  map->slots[hole].key = NULL;
  map->count--;
  return value;
}

void hv__map_free(hv__map_t *map) {
  free(map->slots);
  map->slots = NULL;
  map->capacity = map->count = 0;
}

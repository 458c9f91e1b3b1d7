/* config.h: the engine's knobs, read once from HV_* environment variables at
 * communicator creation. Every variable is listed in the README's table. */
#ifndef HV_CONFIG_INTERNAL_H
#define HV_CONFIG_INTERNAL_H

#include <stddef.h>

#include "algo.h"
#include "hv.h"

typedef struct hv__config {
  size_t fusion_threshold;      /* HV_FUSION_THRESHOLD, bytes */
  double cycle_time_ms;         /* HV_CYCLE_TIME */
  hv__algo_t allreduce_algo;    /* HV_ALLREDUCE_ALGO */
  size_t small_allreduce_bytes; /* HV_SMALL_ALLREDUCE_BYTES: auto uses rd at or below */
  int small_allreduce_given;    /* HV_SMALL_ALLREDUCE_BYTES was set: it beats the link model */
  double link_gbits;            /* HV_LINK_GBITS: one rank's share of the network, 0 unknown */
  double link_latency_us;       /* HV_LINK_LATENCY_US: one message across the network */
  int hierarchical;             /* HV_HIERARCHICAL_ALLREDUCE: -1 auto, 0 off, 1 forced */
  size_t shm_slot_bytes;        /* HV_SHM_SLOT_BYTES: per-rank shared slot, 0 disables */
  int shm_cma;                  /* HV_SHM_CMA: -1 auto, 0 off, 1 at every size */
  size_t ring_chunk_bytes;      /* HV_RING_CHUNK_BYTES */
  size_t net_chunk_bytes;       /* HV_NET_CHUNK_BYTES: the same across nodes; 0 auto (net_chunk.c) */
  size_t cuda_staging_bytes;    /* HV_CUDA_STAGING_BYTES: one pinned host slot of hv_cuda.h's staging */
  size_t cache_capacity;        /* HV_CACHE_CAPACITY, 0 disables the response cache */
  double stall_check_s;         /* HV_STALL_CHECK_TIME, 0 disables */
  double stall_shutdown_s;      /* HV_STALL_SHUTDOWN_TIME, 0 disables */
  double timeout_s;             /* HV_TIMEOUT: a wait on peers longer than this fails, 0 never */
  hv_compression_t compression; /* HV_COMPRESSION */
  char timeline_path[512];      /* HV_TIMELINE, "" when off */
  int log_level;                /* HV_LOG_LEVEL */
  size_t flight_recorder_size;  /* HV_FLIGHT_RECORDER_SIZE: events kept, 0 turns the recorder off */
  int flight_signal;            /* HV_FLIGHT_RECORDER_SIGNAL: 0 installs no SIGUSR1 handler */
  double autotune_sample_s;     /* HV_AUTOTUNE_SAMPLE_SECONDS: an autotune sample's least length */
} hv__config_t;

/* Fills config from the environment; on a malformed value writes a message naming the
 * variable and the accepted forms into err and returns HV_ERR_INVALID_ARGUMENT. */
hv_result_t hv__config_load(hv__config_t *config, char *err, size_t errlen);

/* Parses "64M", "4K", "1G", "1048576" (binary units). Returns 0 on success. */
int hv__parse_size(const char *text, size_t *out);

#endif

/* libcachesim_prefetch.c: a driver for libCacheSim's C library that runs one eviction policy
 * paired with one of its prefetchers (OBL, Mithril, PG) on an oracleGeneral trace, the cache
 * counted in objects (cachesim's --ignore-obj-size 1), and prints the exact counts cachesim
 * rounds to four digits: requests, misses, and the blocks its prefetcher inserted.
 *
 * Built and run by scripts/libcachesim_prefetch.py against the library it builds; it is not
 * part of the project's build. The loop is cachesim's `simulate` (bin/cachesim/sim.c) without
 * warm-up; the reader is set up as cachesim sets it up (bin/cachesim/cli_parser.c).
 *
 * usage: libcachesim_prefetch TRACE POLICY SIZE[,SIZE...] PREFETCHER [PREFETCH-PARAMS]
 * prints one line per size: POLICY SIZE requests misses prefetches
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../include/libCacheSim/cache.h"
#include "../../include/libCacheSim/prefetchAlgo.h"
#include "../../include/libCacheSim/reader.h"
#include "cache_init.h"

/* The prefetcher's own hook and the cache's insert, wrapped to count what the prefetcher
 * inserts: an insert made while the prefetch hook runs is a prefetched block. */
static prefetcher_prefetch_func_ptr real_prefetch;
static cache_insert_func_ptr real_insert;
static int in_prefetch;
static unsigned long long prefetched;

static cache_obj_t *counting_insert(cache_t *cache, const request_t *req) {
  if (in_prefetch) prefetched++;
  return real_insert(cache, req);
}

static void counting_prefetch(cache_t *cache, const request_t *req) {
  in_prefetch = 1;
  real_prefetch(cache, req);
  in_prefetch = 0;
}

static void run(const char *trace, const char *policy, unsigned long size, const char *prefetcher,
                const char *params) {
  reader_init_param_t init;
  memset(&init, 0, sizeof(init));
  init.ignore_obj_size = true;
  init.ignore_size_zero_req = true;
  init.obj_id_is_num = true;
  reader_t *reader = setup_reader(trace, ORACLE_GENERAL_TRACE, &init);

  cache_t *cache = create_cache(trace, policy, size, NULL, false);
  if (strcmp(prefetcher, "none") != 0) {
    cache->prefetcher = create_prefetcher(prefetcher, params, size);
    real_prefetch = cache->prefetcher->prefetch;
    cache->prefetcher->prefetch = counting_prefetch;
  }
  real_insert = cache->insert;
  cache->insert = counting_insert;
  prefetched = 0;

  unsigned long long requests = 0, misses = 0;
  request_t *req = new_request();
  read_one_req(reader, req);
  while (req->valid) {
    requests++;
    if (!cache->get(cache, req)) misses++;
    read_one_req(reader, req);
  }
  printf("%s %lu %llu %llu %llu\n", policy, size, requests, misses, prefetched);
  fflush(stdout);

  free_request(req);
  cache->cache_free(cache);
  close_reader(reader);
}

int main(int argc, char **argv) {
  if (argc < 5 || argc > 6) {
    fprintf(stderr, "usage: %s TRACE POLICY SIZE[,SIZE...] PREFETCHER [PREFETCH-PARAMS]\n",
            argv[0]);
    return 2;
  }
  const char *params = argc == 6 ? argv[5] : NULL;
  char *sizes = strdup(argv[3]);
  for (char *s = strtok(sizes, ","); s != NULL; s = strtok(NULL, ",")) {
    run(argv[1], argv[2], strtoul(s, NULL, 10), argv[4], params);
  }
  free(sizes);
  return 0;
}

/*
 * pfdyn.h - finds the libprefetch API at run time with dlsym, so that one binary runs without the library,
 * under LD_PRELOAD=libprefetch.so, or linked with -lprefetch, and its output can be compared across the three.
 *
 * The identity and threads examples print only what the application sees (bytes, return values, errno); whether
 * the library was found goes to stderr.
 */
#ifndef EXAMPLES_PFDYN_H
#define EXAMPLES_PFDYN_H

#include <dlfcn.h>
#include <string.h>

#define LIBPREFETCH_NO_PAPER_NAMES
#include "libprefetch.h"

/* The pf_ functions, or all NULL when the library is not loaded. */
struct pf_api {
    __typeof__(&pf_register_client) register_client;
    __typeof__(&pf_unregister_client) unregister_client;
    __typeof__(&pf_register_region) register_region;
    __typeof__(&pf_unregister_region) unregister_region;
    __typeof__(&pf_request_prefetching) request_prefetching;
    __typeof__(&pf_ignore_accesses) ignore_accesses;
    __typeof__(&pf_unignore_accesses) unignore_accesses;
    __typeof__(&pf_get_stats) get_stats;
};

/* Looks the API up in the running process; returns 1 if every function was found, else 0 (api zeroed). */
static inline int pf_api_load(struct pf_api *api)
{
    *(void **)&api->register_client = dlsym(RTLD_DEFAULT, "pf_register_client");
    *(void **)&api->unregister_client = dlsym(RTLD_DEFAULT, "pf_unregister_client");
    *(void **)&api->register_region = dlsym(RTLD_DEFAULT, "pf_register_region");
    *(void **)&api->unregister_region = dlsym(RTLD_DEFAULT, "pf_unregister_region");
    *(void **)&api->request_prefetching = dlsym(RTLD_DEFAULT, "pf_request_prefetching");
    *(void **)&api->ignore_accesses = dlsym(RTLD_DEFAULT, "pf_ignore_accesses");
    *(void **)&api->unignore_accesses = dlsym(RTLD_DEFAULT, "pf_unignore_accesses");
    *(void **)&api->get_stats = dlsym(RTLD_DEFAULT, "pf_get_stats");
    if (api->register_client && api->unregister_client && api->register_region && api->unregister_region &&
        api->request_prefetching && api->ignore_accesses && api->unignore_accesses && api->get_stats)
        return 1;
    memset(api, 0, sizeof *api);
    return 0;
}

#endif /* EXAMPLES_PFDYN_H */

/* read_cost.c - what an interposed pread of a cached 4 KiB page costs, tracked or not (a measurement, not a test). */
/*
 * The header promises that "reads of descriptors with no registered region pay one lookup".  This program times
 * ROUNDS x READS preads of cached pages and prints the nanoseconds per call of the fastest pass in each setting:
 * without the library, or (found with dlsym; run it under LD_PRELOAD or as read_cost_linked) with the library and
 *   - no region registered anywhere,
 *   - a region registered on another descriptor (the read pays the lookup),
 *   - the read's descriptor registered and the reads on the access list (the tracked path: probe and planner),
 *   - the same, inside pf_ignore_accesses.
 * The numbers are this machine's page cache and CPU; the test suite only checks that the program runs.
 *
 * Usage: read_cost FILE [SIZE_MIB]   (default 32 MiB; FILE is read once first so that it is cached)
 */
#define _GNU_SOURCE
#include "common.h"
#include "pfdyn.h"
#include <time.h>

#define READS 20000
#define ROUNDS 15

static struct pf_api pf;
static uint64_t offsets[READS];

/* Nanoseconds of the monotonic clock. */
static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Nanoseconds per pread in the fastest of ROUNDS passes of READS reads of fd (the machine is shared: the
 * fastest pass is the one least disturbed by other processes). */
static double best_ns(int fd)
{
    static unsigned char buf[PAGE_SIZE_BYTES];
    double per_call[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        uint64_t start = now_ns();
        for (int i = 0; i < READS; i++)
            if (pread(fd, buf, sizeof buf, (off_t)offsets[i]) != (ssize_t)sizeof buf)
                fail("pread: %s", strerror(errno));
        per_call[r] = (double)(now_ns() - start) / READS;
    }
    double best = per_call[0];
    for (int r = 1; r < ROUNDS; r++)
        best = per_call[r] < best ? per_call[r] : best;
    return best;
}

/* Hands over the READS offsets once per pass, so that the tracked reads follow the list. */
static void plan(void *arg, int lastMarkedFD, loff_t lastMarkedOffset, int requestedFD, loff_t requestedOffset)
{
    static struct access_entry e[READS];
    pf_client_t c = *(pf_client_t *)arg;
    (void)lastMarkedFD, (void)lastMarkedOffset, (void)requestedOffset;
    for (int i = 0; i < READS; i++) {
        e[i].page_offset = (loff_t)offsets[i];
        e[i].fd = requestedFD;
        e[i].marked = false;
    }
    pf.request_prefetching(c, e, READS, PF_SET | PF_DONE);
}

/* Times the settings that need the library. */
static void with_library(const char *path, int fd, uint64_t size)
{
    static pf_client_t client;
    int other = open(path, O_RDONLY);
    printf("%-52s %8.0f ns\n", "library loaded, no region anywhere", best_ns(fd));
    client = pf.register_client(plan, &client);
    if (client == NULL || pf.register_region(client, other, 0, (loff_t)size) == NULL)
        fail("registering: %s", strerror(errno));
    printf("%-52s %8.0f ns\n", "region on another descriptor (one lookup)", best_ns(fd));
    if (pf.register_region(client, fd, 0, (loff_t)size) == NULL)
        fail("registering: %s", strerror(errno));
    printf("%-52s %8.0f ns\n", "tracked: registered, reads on the access list", best_ns(fd));
    pf.ignore_accesses(client);
    printf("%-52s %8.0f ns\n", "registered, inside pf_ignore_accesses", best_ns(fd));
    pf.unignore_accesses(client);
    pf.unregister_client(client);
    close(other);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        fail("usage: %s FILE [SIZE_MIB]", argv[0]);
    uint64_t size = size_arg(argc, argv, 2, 32), seed = 5;
    int fd = pattern_open(argv[1], size);
    static unsigned char chunk[MIB];
    for (uint64_t off = 0; off < size; off += sizeof chunk)
        if (pread(fd, chunk, sizeof chunk, (off_t)off) <= 0)
            fail("warming the cache: %s", strerror(errno));
    for (int i = 0; i < READS; i++)
        offsets[i] = rng_below(&seed, size / PAGE_SIZE_BYTES) * PAGE_SIZE_BYTES;
    printf("pread of a cached 4 KiB page, fastest of %d passes of %d reads (this machine's page cache):\n", ROUNDS,
           READS);
    if (!pf_api_load(&pf)) {
        printf("%-52s %8.0f ns\n", "without the library", best_ns(fd));
        return EXIT_PASS;
    }
    with_library(argv[1], fd, size);
    return EXIT_PASS;
}

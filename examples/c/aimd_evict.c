/* aimd_evict.c - prefetched pages evicted before use halve the budget; a clean round then adds 10% (section 4.6). */
/*
 * Follows the paper's section 4.6: libprefetch "infers a contention signal when it finds that some of the pages
 * it prefetched have been prematurely evicted", halves its reorder buffer, and "when libprefetch consumes all of
 * the pages it prefetched without any of them being prematurely evicted, it increases its reorder buffer size by
 * an additive constant" of 10% of the memory available for caching; it starts at 90% of that memory.
 *
 * Memory pressure is played by the program itself, without a cgroup: after the first round it reads a few
 * entries, then drops the whole file from the page cache with POSIX_FADV_DONTNEED (which the library does not
 * see) and reads on. The memory the library may use is capped at 16 MiB (LIBPREFETCH_MAX_MEMORY), which the
 * list's pages (about 12.6 MiB) mostly fill: the library halves only when its own pages could have been the
 * cause, that is when they take half of that memory or more.  Checks: no premature eviction before the drop; after it, at least one, the budget exactly
 * halved and a new round; after the rest of the list is read with nothing dropped, the budget grown by 10% of the
 * available memory per clean round (90% / 9 of the starting budget, within 5%); every byte right.  Pages evicted by real memory pressure from other processes are real premature
 * evictions too: when one happens after the drop, the growth is not checked (the program says so).
 *
 * Usage: aimd_evict FILE [SIZE_MIB]   (default 32 MiB)
 */
#define _GNU_SOURCE
#include "common.h"
#include "libprefetch.h"

#define NREADS 4096
#define BEFORE_DROP 100

/* The application: its access order and position. */
struct app {
    client_t client;
    int fd;
    uint64_t pages[NREADS];
    size_t pos;
};

/* Hands over the rest of the access order from the read in progress. */
static void plan(void *arg, int lastMarkedFD, loff_t lastMarkedOffset, int requestedFD, loff_t requestedOffset)
{
    static struct access_entry e[NREADS];
    struct app *a = arg;
    size_t n = 0;
    (void)lastMarkedFD, (void)lastMarkedOffset, (void)requestedFD, (void)requestedOffset;
    for (size_t i = a->pos; i < NREADS; i++, n++) {
        e[n].page_offset = (loff_t)(a->pages[i] * PAGE_SIZE_BYTES);
        e[n].fd = a->fd;
        e[n].marked = false;
    }
    if (request_prefetching(a->client, e, n, PF_SET | PF_DONE) != (ssize_t)n)
        fail("request_prefetching: %s", strerror(errno));
}

/* Reads entries [a->pos, end) and checks their bytes. */
static void read_until(struct app *a, size_t end)
{
    unsigned char buf[PAGE_SIZE_BYTES];
    for (; a->pos < end; a->pos++) {
        uint64_t off = a->pages[a->pos] * PAGE_SIZE_BYTES;
        ssize_t r = pread(a->fd, buf, sizeof buf, (off_t)off);
        if (r != (ssize_t)sizeof buf || pattern_mismatch(buf, off, sizeof buf) >= 0)
            fail("wrong read at %llu", (unsigned long long)off);
    }
}

/* The client's counters. */
static struct pf_stats stats(const struct app *a)
{
    struct pf_stats st;
    if (pf_get_stats(a->client, &st) != 0)
        fail("pf_get_stats: %s", strerror(errno));
    return st;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        fail("usage: %s FILE [SIZE_MIB]", argv[0]);
    uint64_t size = size_arg(argc, argv, 2, 32), seed = 46;
    static struct app a;
    a.fd = pattern_open(argv[1], size);
    for (size_t i = 0; i < NREADS; i++)
        a.pages[i] = rng_below(&seed, size / PAGE_SIZE_BYTES);
    /* The paper's controller: start at 90% of the memory available (16 MiB), no slow start; and each round's advice
     * issued before request_prefetching returns, so that the drop below comes after it (a page whose advice is
     * still being issued is not counted as evicted). */
    if (setenv("LIBPREFETCH_START_WINDOW", "0", 1) != 0 || setenv("LIBPREFETCH_BACKGROUND_ADVICE", "0", 1) != 0 ||
        setenv("LIBPREFETCH_MAX_MEMORY", "16M", 1) != 0)
        fail("setenv: %s", strerror(errno));
    a.client = register_client(plan, &a);
    if (a.client == NULL || register_region(a.client, a.fd, 0, (loff_t)size) == NULL)
        fail("registering: %s", strerror(errno));

    plan(&a, -1, -1, a.fd, 0);
    read_until(&a, BEFORE_DROP);
    struct pf_stats before = stats(&a);
    evict_file(a.fd);
    read_until(&a, BEFORE_DROP + 1);
    struct pf_stats after_drop = stats(&a);
    read_until(&a, NREADS);
    struct pf_stats end = stats(&a);

    printf("budget %llu -> %llu after the drop -> %llu after a clean round\n",
           (unsigned long long)before.budget_bytes, (unsigned long long)after_drop.budget_bytes,
           (unsigned long long)end.budget_bytes);
    printf("premature evictions %llu -> %llu -> %llu; rounds %llu -> %llu -> %llu; misses %llu\n",
           (unsigned long long)before.premature_evictions, (unsigned long long)after_drop.premature_evictions,
           (unsigned long long)end.premature_evictions, (unsigned long long)before.rounds,
           (unsigned long long)after_drop.rounds, (unsigned long long)end.rounds, (unsigned long long)end.misses);
    if (before.premature_evictions != 0)
        fail("premature evictions before anything was dropped");
    if (after_drop.premature_evictions < 1 || after_drop.rounds <= before.rounds)
        fail("dropping the prefetched pages was not noticed as a premature eviction with a new round");
    if (after_drop.budget_bytes != before.budget_bytes / 2)
        fail("the budget went from %llu to %llu, not halved", (unsigned long long)before.budget_bytes,
             (unsigned long long)after_drop.budget_bytes);
    if (end.premature_evictions != after_drop.premature_evictions) {
        printf("pages were evicted again without this program dropping them (memory pressure from other "
               "processes?): the growth after a clean round is not checked this time\n");
        if (end.budget_bytes > before.budget_bytes)
            fail("the budget grew above its starting size, the 90%% cap");
    } else {
        /* One step of 10% of the available memory per clean round (the halved buffer may take a few rounds). */
        uint64_t grown = end.budget_bytes - after_drop.budget_bytes, step = before.budget_bytes / 9;
        uint64_t steps = (grown + step / 2) / step;
        if (end.budget_bytes <= after_drop.budget_bytes || steps < 1 || grown < steps * step * 95 / 100 ||
            grown > steps * step * 105 / 100)
            fail("after clean rounds the budget grew by %llu, not a whole number of steps of about %llu (10%% of "
                 "the available memory)",
                 (unsigned long long)grown, (unsigned long long)step);
    }
    printf("PASS\n");
    return EXIT_PASS;
}

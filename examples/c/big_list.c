/* big_list.c - a 10-million-entry access list gets short counts and the process's memory stays bounded. */
/*
 * Follows the paper's section 4.2: "once libprefetch's access-list buffer fills up, [the number of accepted
 * entries] will be less than the number passed in".  The access list lives in memory that could otherwise hold
 * data, so its buffer must be bounded whatever the application passes.
 *
 * Phase 1: one PF_SET call with ENTRIES entries (built in an mmap'd array that is unmapped afterwards) must accept
 * fewer than ENTRIES, and the peak resident set (VmHWM) may grow during the call by at most BYTES_PER_ENTRY bytes
 * per accepted entry plus SLACK_KIB: memory in proportion to what is offered would be unbounded.  Phase 2: the
 * application keeps appending in batches of BATCH, as a careless Figure 7 loop would, until it has offered
 * ENTRIES more; every call must accept fewer than it was given (the list is full) and
 * the resident set (VmRSS in /proc/self/status) must not grow by more than SLACK_KIB.  Overall the library may hold
 * at most BYTES_PER_ENTRY bytes per accepted entry plus SLACK_KIB.  Phase 3: PF_DONE starts a round on the full
 * list and the first pages read back right.
 *
 * Usage: big_list FILE [SIZE_MIB]   (default 32 MiB)
 */
#define _GNU_SOURCE
#include "common.h"
#include "libprefetch.h"
#include <sys/mman.h>

#define ENTRIES 10000000UL
#define BATCH 65536UL
#define BYTES_PER_ENTRY 64
#define SLACK_KIB (64 * 1024L)

/* A callback that never needs to plan: the list is given up front. */
static void no_plan(void *arg, int lastMarkedFD, loff_t lastMarkedOffset, int requestedFD, loff_t requestedOffset)
{
    (void)arg, (void)lastMarkedFD, (void)lastMarkedOffset, (void)requestedFD, (void)requestedOffset;
}

/* Fills n entries with the pages of a pseudo-random walk over the file (repeats allowed). */
static void fill(struct access_entry *a, size_t n, int fd, uint64_t npages, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++) {
        a[i].page_offset = (loff_t)(rng_below(seed, npages) * PAGE_SIZE_BYTES);
        a[i].fd = fd;
        a[i].marked = i % 100 == 0;
    }
}

/* Phase 1: one call with ENTRIES entries; returns how many were accepted and the growth of the peak RSS. */
static size_t set_huge_list(client_t c, int fd, uint64_t npages, uint64_t *seed, long *peak_growth_kib)
{
    size_t bytes = ENTRIES * sizeof(struct access_entry);
    struct access_entry *a = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED)
        fail("cannot map %zu MiB for the entries: %s", bytes / MIB, strerror(errno));
    fill(a, ENTRIES, fd, npages, seed);
    long peak_before = vm_status_kib("VmHWM");
    ssize_t accepted = request_prefetching(c, a, ENTRIES, PF_SET);
    int err = errno;
    *peak_growth_kib = vm_status_kib("VmHWM") - peak_before;
    munmap(a, bytes);
    if (accepted < 0)
        fail("request_prefetching(%lu entries, PF_SET) failed: %s", ENTRIES, strerror(err));
    if ((size_t)accepted >= ENTRIES)
        fail("request_prefetching accepted all %lu entries: no short count", ENTRIES);
    return (size_t)accepted;
}

/* Phase 2: appends ENTRIES more in batches; returns how many were accepted (0 expected: the list is full). */
static size_t append_more(client_t c, int fd, uint64_t npages, uint64_t *seed)
{
    static struct access_entry a[BATCH];
    size_t accepted = 0;
    for (size_t offered = 0; offered < ENTRIES; offered += BATCH) {
        fill(a, BATCH, fd, npages, seed);
        ssize_t r = request_prefetching(c, a, BATCH, PF_APPEND);
        if (r < 0)
            fail("request_prefetching(PF_APPEND) on a full list failed: %s", strerror(errno));
        if ((size_t)r >= BATCH)
            fail("a full list accepted a whole batch of %lu", BATCH);
        accepted += (size_t)r;
    }
    return accepted;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        fail("usage: %s FILE [SIZE_MIB]", argv[0]);
    uint64_t size = size_arg(argc, argv, 2, 32), seed = 10;
    int fd = pattern_open(argv[1], size);
    client_t c = register_client(no_plan, NULL);
    if (c == NULL || register_region(c, fd, 0, (loff_t)size) == NULL)
        fail("registering: %s", strerror(errno));

    long rss0 = vm_status_kib("VmRSS"), peak_growth;
    size_t accepted = set_huge_list(c, fd, size / PAGE_SIZE_BYTES, &seed, &peak_growth);
    long rss1 = vm_status_kib("VmRSS");
    size_t appended = append_more(c, fd, size / PAGE_SIZE_BYTES, &seed);
    long rss2 = vm_status_kib("VmRSS");
    struct pf_stats st;
    if (pf_get_stats(c, &st) != 0)
        fail("pf_get_stats: %s", strerror(errno));
    printf("offered %lu, accepted %zu; appended %lu more, accepted %zu; list_length %llu\n", ENTRIES, accepted,
           ENTRIES, appended, (unsigned long long)st.list_length);
    printf("VmRSS: %ld KiB before, %ld after the huge call, %ld after the appends; VmHWM grew %ld KiB in the call\n",
           rss0, rss1, rss2, peak_growth);

    long bound = (long)(accepted + appended) * BYTES_PER_ENTRY / 1024 + SLACK_KIB;
    if (peak_growth > (long)accepted * BYTES_PER_ENTRY / 1024 + SLACK_KIB)
        fail("the peak RSS grew by %ld KiB during a call that accepted %zu of %lu entries (bound %ld KiB)",
             peak_growth, accepted, ENTRIES, (long)accepted * BYTES_PER_ENTRY / 1024 + SLACK_KIB);
    if (rss0 < 0 || rss2 - rss0 > bound)
        fail("VmRSS grew by %ld KiB for %zu entries (bound %ld KiB)", rss2 - rss0, accepted + appended, bound);
    if (rss2 - rss1 > SLACK_KIB)
        fail("VmRSS grew by %ld KiB while the list was full", rss2 - rss1);
    if (st.list_length != accepted + appended)
        fail("list_length %llu, accepted %zu", (unsigned long long)st.list_length, accepted + appended);

    if (request_prefetching(c, NULL, 0, PF_APPEND | PF_DONE) != 0)
        fail("request_prefetching(PF_DONE): %s", strerror(errno));
    if (pf_get_stats(c, &st) != 0 || st.rounds < 1)
        fail("PF_DONE started no round");
    unsigned char buf[PAGE_SIZE_BYTES];
    if (pread(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf || pattern_mismatch(buf, 0, sizeof buf) >= 0)
        fail("wrong bytes after the round");
    if (unregister_client(c) != 0)
        fail("unregister_client: %s", strerror(errno));
    printf("PASS\n");
    return EXIT_PASS;
}

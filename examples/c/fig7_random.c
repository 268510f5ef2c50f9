/* fig7_random.c - random 4 KiB reads driven by the callback of Figure 7; checks every byte and that rounds ran. */
/*
 * Follows the paper's section 4.3, Figure 7, written with the paper's names (register_client,
 * request_prefetching, PF_SET, PF_APPEND, PF_DONE) and Figure 7's field spellings (page_offset, marked).
 * The application never asks for prefetching itself: its first read of the registered region is not on the
 * (empty) access list, so libprefetch calls back; the callback hands over the next HORIZON reads in batches of
 * BATCH_SIZE exactly as Figure 7 does (PF_SET first, PF_APPEND after, stop when a short count says the list is
 * full, PF_DONE last).  When those reads are used up the next read is again off the list and calls back.
 *
 * Deviations: Figure 7 finds its position from the requested offset (getTileInfo); a random reader with repeated
 * pages cannot, so the callback takes the position from the application's own counter and checks that the
 * requested fd and offset are the read in progress.  "lastTile" is the end of a HORIZON-entry plan, so that the
 * callback runs several times.
 *
 * Usage: fig7_random FILE [SIZE_MIB]   (FILE is created as a pattern file if needed; default 32 MiB)
 */
#define _GNU_SOURCE
#include "common.h"
#include "libprefetch.h"

#define BATCH_SIZE 256
#define HORIZON 2048
#define NREADS 20000
#define MIN_CALLBACKS ((NREADS + HORIZON - 1) / HORIZON)

/* What the callback needs: the client, the file and the application's access order and position. */
struct state {
    client_t client;
    int fd;
    const uint64_t *pages; /* page numbers in access order */
    size_t nreads;
    size_t pos;            /* index of the read in progress */
    uint64_t callbacks;    /* times the callback ran */
    int errors;            /* wrong callback arguments or failed calls */
};

/* Figure 7's callback: plans from the read in progress to the end of the horizon. */
static void callback(void *arg, int markFd, loff_t markOffset, int reqFd, loff_t reqOffset)
{
    struct state *state = arg;
    struct access_entry accesses[BATCH_SIZE];
    ssize_t accepted;
    int full, n = 0;
    int mode = PF_SET;
    size_t i = state->pos;
    size_t last = i + HORIZON < state->nreads ? i + HORIZON : state->nreads;

    state->callbacks++;
    if (markFd != -1 || markOffset != -1 || reqFd != state->fd ||
        reqOffset != (loff_t)(state->pages[i] * PAGE_SIZE_BYTES)) {
        fprintf(stderr, "callback %llu: mark (%d, %lld) requested (%d, %lld), expected (-1, -1) (%d, %llu)\n",
                (unsigned long long)state->callbacks, markFd, (long long)markOffset, reqFd,
                (long long)reqOffset, state->fd,
                (unsigned long long)(state->pages[i] * PAGE_SIZE_BYTES));
        state->errors++;
    }
    for (; i < last; i++) {
        accesses[n].page_offset = (loff_t)(state->pages[i] * PAGE_SIZE_BYTES);
        accesses[n].fd = state->fd;
        accesses[n++].marked = 0;
        if (n == BATCH_SIZE) {
            accepted = request_prefetching(state->client, accesses, n, mode);
            if (accepted < 0) {
                fprintf(stderr, "request_prefetching: %s\n", strerror(errno));
                state->errors++;
            }
            full = (accepted < n);
            mode = PF_APPEND;
            n = 0;
            if (full)
                break;
        }
    }
    if (request_prefetching(state->client, accesses, n, mode | PF_DONE) < 0) {
        fprintf(stderr, "request_prefetching(PF_DONE): %s\n", strerror(errno));
        state->errors++;
    }
}

/* Reads the pages in order with pread, checking each page; returns the checksum of all bytes read. */
static uint64_t read_all(struct state *state)
{
    static unsigned char buf[PAGE_SIZE_BYTES];
    uint64_t sum = FNV_START;
    for (state->pos = 0; state->pos < state->nreads; state->pos++) {
        off_t off = (off_t)(state->pages[state->pos] * PAGE_SIZE_BYTES);
        ssize_t r = pread(state->fd, buf, sizeof buf, off);
        check_read("pread", buf, off, r, sizeof buf);
        sum = fnv1a(sum, buf, sizeof buf);
    }
    return sum;
}

/* The checksum the reads must produce, computed from the pattern alone. */
static uint64_t reference_checksum(const uint64_t *pages, size_t n)
{
    static unsigned char buf[PAGE_SIZE_BYTES];
    uint64_t sum = FNV_START;
    for (size_t i = 0; i < n; i++) {
        pattern_fill(buf, pages[i] * PAGE_SIZE_BYTES, sizeof buf);
        sum = fnv1a(sum, buf, sizeof buf);
    }
    return sum;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        fail("usage: %s FILE [SIZE_MIB]", argv[0]);
    uint64_t size = size_arg(argc, argv, 2, 32);
    static uint64_t pages[NREADS];
    uint64_t seed = 7;
    for (size_t i = 0; i < NREADS; i++)
        pages[i] = rng_below(&seed, size / PAGE_SIZE_BYTES);

    struct state state = {.fd = pattern_open(argv[1], size), .pages = pages, .nreads = NREADS};
    state.client = register_client(callback, &state);
    if (state.client == NULL)
        fail("register_client: %s", strerror(errno));
    region_t region = register_region(state.client, state.fd, 0, (loff_t)size);
    if (region == NULL)
        fail("register_region: %s", strerror(errno));

    uint64_t sum = read_all(&state);
    uint64_t want = reference_checksum(pages, NREADS);
    struct pf_stats st;
    if (pf_get_stats(state.client, &st) != 0)
        fail("pf_get_stats: %s", strerror(errno));
    printf("reads %d checksum %016llx (reference %016llx)\n", NREADS, (unsigned long long)sum,
           (unsigned long long)want);
    printf("stats: rounds %llu callbacks %llu tracked_reads %llu divergences %llu misses %llu "
           "pages_prefetched %llu budget_bytes %llu\n",
           (unsigned long long)st.rounds, (unsigned long long)st.callbacks,
           (unsigned long long)st.tracked_reads, (unsigned long long)st.divergences,
           (unsigned long long)st.misses, (unsigned long long)st.pages_prefetched,
           (unsigned long long)st.budget_bytes);

    if (sum != want)
        fail("checksum %016llx != reference %016llx", (unsigned long long)sum, (unsigned long long)want);
    if (state.errors != 0)
        fail("%d callback errors (see above)", state.errors);
    if (st.callbacks != state.callbacks)
        fail("stats.callbacks %llu but the callback ran %llu times", (unsigned long long)st.callbacks,
             (unsigned long long)state.callbacks);
    if (state.callbacks < MIN_CALLBACKS)
        fail("%llu callbacks: each plans %d reads, so %d reads need at least %d",
             (unsigned long long)state.callbacks, HORIZON, NREADS, MIN_CALLBACKS);
    if (st.tracked_reads != NREADS)
        fail("stats.tracked_reads %llu, expected %d", (unsigned long long)st.tracked_reads, NREADS);
    if (st.rounds < 1 || st.pages_prefetched < 1)
        fail("no prefetching happened (rounds %llu, pages_prefetched %llu)", (unsigned long long)st.rounds,
             (unsigned long long)st.pages_prefetched);
    if (unregister_region(state.client, region) != 0 || unregister_client(state.client) != 0)
        fail("unregister: %s", strerror(errno));
    printf("PASS\n");
    return EXIT_PASS;
}

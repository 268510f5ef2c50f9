/* env_config.c - LIBPREFETCH_* environment variables tune a client without recompiling (docs/api.md, Environment). */
/*
 * pf_register_client reads LIBPREFETCH_INFILL, LIBPREFETCH_MAX_MEMORY, LIBPREFETCH_LIST_CAPACITY,
 * LIBPREFETCH_REVERSE_PASS and LIBPREFETCH_BACKGROUND_ADVICE; this program is unchanged between runs, only its
 * environment differs.  It hands over a list with small gaps, two runs of RUN_PAGES pages each, every other page
 * (4 KiB gaps), the second run 1 MiB after the first (a gap no infill fills), and asks for one round.  The round
 * is planned inside pf_request_prefetching, so pf_stats.pages_prefetched then counts exactly the pages it advised:
 *
 *   LIBPREFETCH_INFILL=0          each listed page alone:                 64 pages (the 64 listed)
 *   default (32 KiB infill)       each run as one range, its gaps too:   126 pages (2 x 63)
 *   LIBPREFETCH_INFILL=12Q        refused with one line on stderr, default kept: 126 pages
 *
 * The program computes the expected count itself from the INFILL_BYTES argument (gaps of at most that many bytes
 * are filled) and checks it, and that ACCEPTED entries were taken (fewer than listed when
 * LIBPREFETCH_LIST_CAPACITY is small).  It then reads the accepted pages and checks their bytes.  A second client
 * is registered and unregistered: a refused value is reported once per process, not once per client (the test
 * counts the lines).  It prints the counters, budget_bytes included (LIBPREFETCH_MAX_MEMORY sets the memory AIMD
 * starts from: the budget is 90% of it).
 *
 * Usage: env_config FILE INFILL_BYTES [ACCEPTED] [SIZE_MIB]   (default: all 64 entries accepted, 4 MiB file)
 */
#define _GNU_SOURCE
#define LIBPREFETCH_NO_PAPER_NAMES
#include "common.h"
#include "libprefetch.h"

#define RUN_PAGES 32
#define LISTED (2 * RUN_PAGES)
#define SECOND_RUN_PAGE (1024 * 1024 / PAGE_SIZE_BYTES + 2 * RUN_PAGES)

/* The listed pages, ascending: every other page from 0, then every other page from SECOND_RUN_PAGE. */
static uint64_t listed_page(size_t i)
{
    return i < RUN_PAGES ? 2 * i : SECOND_RUN_PAGE + 2 * (i - RUN_PAGES);
}

/* Pages covered by the first n listed pages once gaps of at most infill_pages pages are filled. */
static uint64_t pages_with_infill(size_t n, uint64_t infill_pages)
{
    uint64_t pages = n > 0;
    for (size_t i = 1; i < n; i++) {
        uint64_t gap = listed_page(i) - listed_page(i - 1) - 1;
        pages += gap <= infill_pages ? gap + 1 : 1;
    }
    return pages;
}

/* A non-negative integer argument, or fail. */
static uint64_t number_arg(const char *what, const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno != 0 || *s == '-')
        fail("bad %s '%s'", what, s);
    return v;
}

/* Hands the list to the client and starts a round; returns how many entries it accepted. */
static size_t request_list(pf_client_t c, int fd)
{
    struct access_entry e[LISTED];
    for (size_t i = 0; i < LISTED; i++) {
        e[i].page_offset = (loff_t)(listed_page(i) * PAGE_SIZE_BYTES);
        e[i].fd = fd;
        e[i].marked = false;
    }
    ssize_t accepted = pf_request_prefetching(c, e, LISTED, PF_SET | PF_DONE);
    if (accepted < 0)
        fail("pf_request_prefetching: %s", strerror(errno));
    return (size_t)accepted;
}

/* Reads the first n listed pages and checks their bytes. */
static void read_listed(int fd, size_t n)
{
    unsigned char buf[PAGE_SIZE_BYTES];
    for (size_t i = 0; i < n; i++) {
        uint64_t off = listed_page(i) * PAGE_SIZE_BYTES;
        ssize_t r = pread(fd, buf, sizeof buf, (off_t)off);
        if (r != (ssize_t)sizeof buf || pattern_mismatch(buf, off, sizeof buf) >= 0)
            fail("wrong read at %llu", (unsigned long long)off);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3)
        fail("usage: %s FILE INFILL_BYTES [ACCEPTED] [SIZE_MIB]", argv[0]);
    uint64_t infill_pages = number_arg("INFILL_BYTES", argv[2]) / PAGE_SIZE_BYTES;
    size_t want_accepted = argc > 3 ? (size_t)number_arg("ACCEPTED", argv[3]) : LISTED;
    uint64_t size = size_arg(argc, argv, 4, 4);
    if (size < (SECOND_RUN_PAGE + 2 * RUN_PAGES) * PAGE_SIZE_BYTES)
        fail("the file must hold page %d", SECOND_RUN_PAGE + 2 * RUN_PAGES);
    int fd = pattern_open(argv[1], size);

    /* One round must hold the whole list: start at the paper's full window unless the caller chose a start. */
    if (setenv("LIBPREFETCH_START_WINDOW", "0", 0) != 0)
        fail("setenv: %s", strerror(errno));
    pf_client_t c = pf_register_client(NULL, NULL);
    pf_client_t second = pf_register_client(NULL, NULL);
    if (c == NULL || second == NULL)
        fail("pf_register_client: %s", strerror(errno));
    if (pf_unregister_client(second) != 0)
        fail("pf_unregister_client: %s", strerror(errno));
    if (pf_register_region(c, fd, 0, (loff_t)size) == NULL)
        fail("pf_register_region: %s", strerror(errno));

    size_t accepted = request_list(c, fd);
    struct pf_stats st;
    if (pf_get_stats(c, &st) != 0)
        fail("pf_get_stats: %s", strerror(errno));
    uint64_t want_pages = pages_with_infill(accepted, infill_pages);
    printf("listed %d accepted %zu pages_prefetched %llu (expected %llu with infill %llu pages) budget_bytes %llu "
           "rounds %llu\n",
           LISTED, accepted, (unsigned long long)st.pages_prefetched, (unsigned long long)want_pages,
           (unsigned long long)infill_pages, (unsigned long long)st.budget_bytes, (unsigned long long)st.rounds);
    if (accepted != want_accepted)
        fail("%zu entries accepted, expected %zu", accepted, want_accepted);
    if (st.rounds != 1 || st.pages_prefetched != want_pages)
        fail("round %llu advised %llu pages, expected 1 round of %llu", (unsigned long long)st.rounds,
             (unsigned long long)st.pages_prefetched, (unsigned long long)want_pages);

    read_listed(fd, accepted);
    if (pf_unregister_client(c) != 0)
        fail("pf_unregister_client: %s", strerror(errno));
    close(fd);
    return EXIT_PASS;
}

/* index_marks.c - an index scan: marked index pages, unmarked data pages, PF_SET_FROM_MARK refreshes; checks bytes. */
/*
 * Follows the paper's section 4.1 (marked pages as landmarks for a database reading data through an index) and
 * 4.2 (PF_SET_FROM_MARK), written with Figure 6's names and field spellings (pageOffset, mark).
 *
 * File layout: pages [0, NIDX) are index pages, the rest data pages.  Index page g "points to" FANOUT data pages
 * chosen pseudo-randomly.  The scan reads index page g, then its data pages, for g = 0, 1, ...  Every SKIP_EVERY-th
 * index page is "in the application's own cache" and is not read, although it stays on the access list: the
 * paper says the last marked page need not have been read as long as later pages were.
 *
 * The callback checks that lastMarkedOffset names an index page no older than the previous group and no newer than
 * the current one, then replaces the list after that mark with PF_SET_FROM_MARK (PF_SET the first time, when no
 * mark has been passed), planning GROUPS_AHEAD index groups.  Mode "from-mark" plans from the mark, as the
 * paper's database does ("allowing its callback to quickly determine the most recently read index page, and
 * therefore how far reading has progressed"): the new list re-sends data pages the scan has already read, which
 * libprefetch must step over.  Mode "from-position" plans from the read in progress.
 *
 * Deviations: in mode "from-position" the program uses its own exact position, which a real database would not
 * track; the mark then only chooses the mode and checks libprefetch's bookkeeping.
 *
 * Usage: index_marks FILE from-mark|from-position [SIZE_MIB]   (default 32 MiB)
 */
#define _GNU_SOURCE
#include "common.h"
#include "libprefetch.h"

#define NIDX 256
#define FANOUT 16
#define GROUP (FANOUT + 1) /* entries per index group: the index page, then its data pages */
#define GROUPS_AHEAD 16
#define SKIP_EVERY 7

/* The scan's state, shared with the callback. */
struct scan {
    client_t client;
    int fd;
    uint64_t data_pages; /* number of data pages after the index */
    size_t pos;          /* access-list position of the read in progress: group * GROUP + step */
    long last_mark;      /* index page of the last mark the callback saw, -1 before any */
    int from_mark;       /* plan from the last mark (1) or from the read in progress (0) */
    uint64_t callbacks;
    int errors;
};

/* The page read at list position pos: the index page of the group, or one of its data pages. */
static uint64_t page_at(const struct scan *s, size_t pos)
{
    uint64_t group = pos / GROUP, step = pos % GROUP;
    if (step == 0)
        return group;
    return NIDX + splitmix64(group * FANOUT + step - 1 + 12345) % s->data_pages;
}

/* True if the scan finds index page `group` in its own cache and does not read it. */
static int index_cached(uint64_t group)
{
    return group % SKIP_EVERY == 3;
}

/* Checks the mark libprefetch reports against the scan's position; returns the marked group or -1. */
static long check_mark(struct scan *s, int markFd, loff_t markOffset)
{
    long group = (long)(s->pos / GROUP);
    if (markFd == -1 && markOffset == -1 && s->last_mark == -1)
        return -1;
    long mark = (long)(markOffset / PAGE_SIZE_BYTES);
    if (markFd != s->fd || markOffset % PAGE_SIZE_BYTES != 0 || mark >= NIDX || mark < group - 1 ||
        mark > group || mark < s->last_mark) {
        fprintf(stderr, "callback at group %ld: last mark (%d, %lld), previous mark group %ld\n", group, markFd,
                (long long)markOffset, s->last_mark);
        s->errors++;
    }
    return mark;
}

/* Plans GROUPS_AHEAD groups from the last mark or the read in progress, replacing the list after the mark. */
static void callback(void *arg, int lastMarkedFD, loff_t lastMarkedOffset, int requestedFD,
                     loff_t requestedOffset)
{
    struct scan *s = arg;
    struct access_entry a[GROUPS_AHEAD * GROUP];
    size_t n = 0;

    s->callbacks++;
    if (requestedFD != s->fd || requestedOffset != (loff_t)(page_at(s, s->pos) * PAGE_SIZE_BYTES)) {
        fprintf(stderr, "callback: requested (%d, %lld), expected page %llu\n", requestedFD,
                (long long)requestedOffset, (unsigned long long)page_at(s, s->pos));
        s->errors++;
    }
    long mark = check_mark(s, lastMarkedFD, lastMarkedOffset);
    size_t start = s->from_mark && mark >= 0 ? (size_t)mark * GROUP + 1 : s->pos;
    size_t end = (start / GROUP + GROUPS_AHEAD) * GROUP;
    if (end > NIDX * GROUP)
        end = NIDX * GROUP;
    for (size_t p = start; p < end; p++, n++) {
        a[n].pageOffset = (loff_t)(page_at(s, p) * PAGE_SIZE_BYTES);
        a[n].fd = s->fd;
        a[n].mark = (p % GROUP == 0);
    }
    int mode = (mark == -1 ? PF_SET : PF_SET_FROM_MARK) | PF_DONE;
    ssize_t accepted = request_prefetching(s->client, a, n, mode);
    if (accepted != (ssize_t)n) {
        fprintf(stderr, "request_prefetching(%zu entries) = %zd (%s)\n", n, accepted, strerror(errno));
        s->errors++;
    }
    if (mark > s->last_mark)
        s->last_mark = mark;
}

/* Reads one page at list position s->pos (index pages with pread, data pages with lseek + read) and checks it. */
static void read_page(struct scan *s, unsigned char *buf)
{
    off_t off = (off_t)(page_at(s, s->pos) * PAGE_SIZE_BYTES);
    ssize_t r;
    if (s->pos % GROUP == 0) {
        r = pread(s->fd, buf, PAGE_SIZE_BYTES, off);
    } else {
        if (lseek(s->fd, off, SEEK_SET) != off)
            fail("lseek: %s", strerror(errno));
        r = read(s->fd, buf, PAGE_SIZE_BYTES);
    }
    check_read("read", buf, off, r, PAGE_SIZE_BYTES);
}

/* Runs the scan; returns the number of reads made. */
static uint64_t scan_all(struct scan *s)
{
    static unsigned char buf[PAGE_SIZE_BYTES];
    uint64_t reads = 0;
    for (s->pos = 0; s->pos < NIDX * GROUP; s->pos++) {
        if (s->pos % GROUP == 0 && index_cached(s->pos / GROUP))
            continue;
        read_page(s, buf);
        reads++;
    }
    return reads;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[2], "from-mark") != 0 && strcmp(argv[2], "from-position") != 0))
        fail("usage: %s FILE from-mark|from-position [SIZE_MIB]", argv[0]);
    uint64_t size = size_arg(argc, argv, 3, 32);
    struct scan s = {.fd = pattern_open(argv[1], size), .last_mark = -1, .from_mark = !strcmp(argv[2], "from-mark")};
    s.data_pages = size / PAGE_SIZE_BYTES - NIDX;
    s.client = register_client(callback, &s);
    if (s.client == NULL)
        fail("register_client: %s", strerror(errno));
    region_t region = register_region(s.client, s.fd, 0, (loff_t)size);
    if (region == NULL)
        fail("register_region: %s", strerror(errno));

    uint64_t reads = scan_all(&s);
    struct pf_stats st;
    if (pf_get_stats(s.client, &st) != 0)
        fail("pf_get_stats: %s", strerror(errno));
    uint64_t cached = (NIDX + SKIP_EVERY - 1 - 3) / SKIP_EVERY;
    uint64_t max_callbacks = 2 * ((NIDX + GROUPS_AHEAD - 1) / GROUPS_AHEAD) + cached + 2;
    printf("reads %llu callbacks %llu (at most %llu expected) last mark group %ld\n",
           (unsigned long long)reads, (unsigned long long)s.callbacks, (unsigned long long)max_callbacks,
           s.last_mark);
    printf("stats: rounds %llu callbacks %llu tracked_reads %llu divergences %llu pages_prefetched %llu\n",
           (unsigned long long)st.rounds, (unsigned long long)st.callbacks,
           (unsigned long long)st.tracked_reads, (unsigned long long)st.divergences,
           (unsigned long long)st.pages_prefetched);

    if (s.errors != 0)
        fail("%d callback errors (see above)", s.errors);
    if (s.callbacks < 2 || s.callbacks > max_callbacks)
        fail("%llu callbacks, expected 2..%llu", (unsigned long long)s.callbacks,
             (unsigned long long)max_callbacks);
    if (s.last_mark < NIDX - GROUPS_AHEAD - 1)
        fail("the last callback saw mark group %ld; the scan had passed group %d", s.last_mark,
             NIDX - GROUPS_AHEAD - 1);
    if (st.callbacks != s.callbacks || st.tracked_reads != reads)
        fail("stats say %llu callbacks and %llu tracked reads; the program saw %llu and made %llu",
             (unsigned long long)st.callbacks, (unsigned long long)st.tracked_reads,
             (unsigned long long)s.callbacks, (unsigned long long)reads);
    if (st.rounds < 1)
        fail("no prefetch round ran");
    if (unregister_region(s.client, region) != 0 || unregister_client(s.client) != 0)
        fail("unregister: %s", strerror(errno));
    printf("PASS\n");
    return EXIT_PASS;
}

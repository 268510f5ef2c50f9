/* callback_reads.c - a callback that reads index pages inside pf_ignore_accesses to plan; no recursion, bytes right. */
/*
 * Follows the paper's section 4.2: "sometimes a callback must itself read prefetchable data while calculating the
 * upcoming access list", which ignore_accesses makes safe.  Written with the pf_ names only
 * (LIBPREFETCH_NO_PAPER_NAMES), so it also checks that the prefixed API stands alone.
 *
 * File layout: pages [0, NIDX) are index pages whose bytes are the pointers: the j-th little-endian 32-bit word
 * of index page g names data page NIDX + word % data_pages.  The scan reads index page g, decodes it, and reads
 * the FANOUT data pages it points to.  The callback does the same ahead of the scan: it reads the next
 * GROUPS_AHEAD index pages (with pread, preadv and lseek + read, so that every interposer's guard is used) between
 * pf_ignore_accesses and pf_unignore_accesses, and hands over the resulting list.
 *
 * Checks: the callback is never re-entered; the bytes it reads are right; its reads are not counted as tracked
 * reads (pf_get_stats before and after, called from inside the callback); the scan's reads are all tracked and
 * right; an ignored read outside any callback neither counts nor calls back; a read off the list calls back.
 *
 * Usage: callback_reads FILE [SIZE_MIB]   (default 32 MiB)
 */
#define _GNU_SOURCE
#define LIBPREFETCH_NO_PAPER_NAMES
#include "common.h"
#include "libprefetch.h"
#include <sys/uio.h>

#define NIDX 128
#define FANOUT 32
#define GROUP (FANOUT + 1)
#define GROUPS_AHEAD 8

/* The scan's state, shared with the callback. */
struct scan {
    pf_client_t client;
    int fd;
    uint64_t data_pages;
    size_t pos;        /* access-list position of the read in progress: group * GROUP + step */
    int depth;         /* callback nesting depth: must never exceed 1 */
    uint64_t callbacks;
    uint64_t callback_reads;
    int errors;
};

/* Reads index page g the way the callback's i-th read is made (three read calls in turn); checks its bytes. */
static void read_index_page(struct scan *s, uint64_t g, int i, unsigned char *buf)
{
    off_t off = (off_t)(g * PAGE_SIZE_BYTES);
    struct iovec iov[2] = {{buf, 1000}, {buf + 1000, PAGE_SIZE_BYTES - 1000}};
    ssize_t r;
    if (i % 3 == 0)
        r = pread(s->fd, buf, PAGE_SIZE_BYTES, off);
    else if (i % 3 == 1)
        r = preadv(s->fd, iov, 2, off);
    else
        r = lseek(s->fd, off, SEEK_SET) == off ? read(s->fd, buf, PAGE_SIZE_BYTES) : -1;
    if (r != PAGE_SIZE_BYTES || pattern_mismatch(buf, (uint64_t)off, PAGE_SIZE_BYTES) >= 0) {
        fprintf(stderr, "callback read of index page %llu: %zd bytes, %s\n", (unsigned long long)g, r,
                r < 0 ? strerror(errno) : "wrong bytes");
        s->errors++;
    }
}

/* Data page j of an index page, decoded from the index page's bytes. */
static uint64_t pointer(const struct scan *s, const unsigned char *index_page, int j)
{
    const unsigned char *w = index_page + 4 * j;
    uint32_t v = (uint32_t)w[0] | (uint32_t)w[1] << 8 | (uint32_t)w[2] << 16 | (uint32_t)w[3] << 24;
    return NIDX + v % s->data_pages;
}

/* Tracked-read count of the client, or -1 (and an error) if pf_get_stats fails. */
static long long tracked_reads(struct scan *s)
{
    struct pf_stats st;
    if (pf_get_stats(s->client, &st) != 0) {
        fprintf(stderr, "pf_get_stats: %s\n", strerror(errno));
        s->errors++;
        return -1;
    }
    return (long long)st.tracked_reads;
}

/* Plans GROUPS_AHEAD groups from the read in progress by reading their index pages, ignored. */
static void callback(void *arg, int lastMarkedFD, loff_t lastMarkedOffset, int requestedFD,
                     loff_t requestedOffset)
{
    struct scan *s = arg;
    static struct access_entry a[GROUPS_AHEAD * GROUP];
    unsigned char page[PAGE_SIZE_BYTES];
    size_t n = 0;
    (void)lastMarkedFD, (void)lastMarkedOffset, (void)requestedOffset;

    if (++s->depth > 1) {
        fprintf(stderr, "callback re-entered (depth %d)\n", s->depth);
        s->errors++;
    }
    s->callbacks++;
    if (requestedFD != s->fd)
        s->errors++;
    long long before = tracked_reads(s);
    if (pf_ignore_accesses(s->client) != 0)
        s->errors++;
    for (uint64_t g = s->pos / GROUP; g < NIDX && g < s->pos / GROUP + GROUPS_AHEAD; g++) {
        read_index_page(s, g, (int)s->callback_reads++, page);
        for (int j = 0; j <= FANOUT; j++, n++) {
            a[n].page_offset = (loff_t)((j == 0 ? g : pointer(s, page, j - 1)) * PAGE_SIZE_BYTES);
            a[n].fd = s->fd;
            a[n].marked = false;
        }
    }
    if (pf_unignore_accesses(s->client) != 0)
        s->errors++;
    if (tracked_reads(s) != before) {
        fprintf(stderr, "the callback's own reads were tracked\n");
        s->errors++;
    }
    size_t skip = s->pos % GROUP; /* entries of the current group already read */
    n = n > skip ? n - skip : 0;
    if (pf_request_prefetching(s->client, a + skip, n, PF_SET | PF_DONE) != (ssize_t)n) {
        fprintf(stderr, "pf_request_prefetching: %s\n", strerror(errno));
        s->errors++;
    }
    s->depth--;
}

/* Reads one page with pread and checks it. */
static void read_checked(int fd, uint64_t page, unsigned char *buf)
{
    off_t off = (off_t)(page * PAGE_SIZE_BYTES);
    ssize_t r = pread(fd, buf, PAGE_SIZE_BYTES, off);
    check_read("pread", buf, off, r, PAGE_SIZE_BYTES);
}

/* The scan: each index page, then the data pages it points to.  Returns the number of reads. */
static uint64_t scan_all(struct scan *s)
{
    unsigned char index_page[PAGE_SIZE_BYTES], data[PAGE_SIZE_BYTES];
    uint64_t reads = 0;
    for (uint64_t g = 0; g < NIDX; g++) {
        s->pos = g * GROUP;
        read_checked(s->fd, g, index_page);
        reads++;
        for (int j = 0; j < FANOUT; j++) {
            s->pos = g * GROUP + 1 + j;
            read_checked(s->fd, pointer(s, index_page, j), data);
            reads++;
        }
    }
    return reads;
}

/* An ignored read neither counts nor calls back; then a read off the (used-up) list calls back once. */
static void check_ignore_and_divergence(struct scan *s, uint64_t reads)
{
    unsigned char buf[PAGE_SIZE_BYTES];
    uint64_t callbacks = s->callbacks;
    if (pf_ignore_accesses(s->client) != 0)
        fail("pf_ignore_accesses: %s", strerror(errno));
    read_checked(s->fd, NIDX + 5, buf);
    if (pf_unignore_accesses(s->client) != 0)
        fail("pf_unignore_accesses: %s", strerror(errno));
    if (tracked_reads(s) != (long long)reads || s->callbacks != callbacks)
        fail("an ignored read was tracked or called back");
    s->pos = NIDX * GROUP; /* past the end: the callback plans nothing */
    read_checked(s->fd, 0, buf);
    if (tracked_reads(s) != (long long)reads + 1 || s->callbacks != callbacks + 1)
        fail("a read off the list made %llu callbacks (expected 1)",
             (unsigned long long)(s->callbacks - callbacks));
}

int main(int argc, char **argv)
{
    if (argc < 2)
        fail("usage: %s FILE [SIZE_MIB]", argv[0]);
    uint64_t size = size_arg(argc, argv, 2, 32);
    struct scan s = {.fd = pattern_open(argv[1], size)};
    s.data_pages = size / PAGE_SIZE_BYTES - NIDX;
    s.client = pf_register_client(callback, &s);
    if (s.client == NULL)
        fail("pf_register_client: %s", strerror(errno));
    pf_region_t region = pf_register_region(s.client, s.fd, 0, (loff_t)size);
    if (region == NULL)
        fail("pf_register_region: %s", strerror(errno));

    uint64_t reads = scan_all(&s);
    long long tracked = tracked_reads(&s);
    printf("reads %llu tracked %lld callbacks %llu callback reads %llu\n", (unsigned long long)reads, tracked,
           (unsigned long long)s.callbacks, (unsigned long long)s.callback_reads);
    if (s.errors != 0)
        fail("%d errors in callbacks (see above)", s.errors);
    if (tracked != (long long)reads)
        fail("tracked_reads %lld, the scan made %llu reads", tracked, (unsigned long long)reads);
    if (s.callbacks < NIDX / GROUPS_AHEAD || s.callback_reads < NIDX)
        fail("%llu callbacks read %llu index pages; expected at least %d and %d",
             (unsigned long long)s.callbacks, (unsigned long long)s.callback_reads, NIDX / GROUPS_AHEAD, NIDX);
    check_ignore_and_divergence(&s, reads);
    if (s.errors != 0)
        fail("%d errors in callbacks (see above)", s.errors);
    if (pf_unregister_region(s.client, region) != 0 || pf_unregister_client(s.client) != 0)
        fail("unregister: %s", strerror(errno));
    printf("PASS\n");
    return EXIT_PASS;
}

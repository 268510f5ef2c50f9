/* close_reuse.c - a region whose descriptor is closed and its number reused: no hang, no advice to the other file. */
/*
 * Regions belong to a descriptor number.  An application that closes a registered descriptor without
 * unregistering it, and then opens another file, gets the same number back.  The library must not hang (it used
 * to deadlock here: its own /proc read got the closed number and was tracked as the application's read, waiting
 * for a lock its own thread held), must not follow reads of the new file as the old region, and must not advise
 * the new file with the old list.  Three scenarios, each on a fresh cold copy of the "other" file:
 *
 *   1. close the region's descriptor, hand over a list naming its number (a round runs while the number is
 *      free), open the other file (same number), hand over the list again;
 *   2. a callback that closes its region's descriptor, opens the other file and lists its pages;
 *   3. the region handle of a closed descriptor still unregisters (returns 0).
 *
 * Advice is issued synchronously (LIBPREFETCH_BACKGROUND_ADVICE=0), so when pf_request_prefetching returns,
 * every WILLNEED the round made has been submitted and its pages show in mincore.  The harness kills the
 * program if it hangs.
 *
 * Usage: close_reuse FILE [SIZE_MIB]   (default 32 MiB; FILE.other is created beside it)
 */
#define _GNU_SOURCE
#define LIBPREFETCH_NO_PAPER_NAMES
#include <sys/mman.h>

#include "common.h"
#include "libprefetch.h"

#define LISTED_PAGES 64

static char other_path[4096];
static uint64_t file_size;

/* Pages of fd's first `pages` pages that are in the page cache. */
static size_t resident_pages(int fd, size_t pages)
{
    unsigned char vec[LISTED_PAGES];
    void *map = mmap(NULL, pages * PAGE_SIZE_BYTES, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
        fail("mmap: %s", strerror(errno));
    if (mincore(map, pages * PAGE_SIZE_BYTES, vec) != 0)
        fail("mincore: %s", strerror(errno));
    munmap(map, pages * PAGE_SIZE_BYTES);
    size_t n = 0;
    for (size_t i = 0; i < pages; i++)
        n += vec[i] & 1;
    return n;
}

/* Opens the other file, cold; it must get the free number fd. */
static void open_other(int fd)
{
    int other = pattern_open(other_path, file_size);
    if (other != fd)
        fail("the other file got descriptor %d, not the closed %d", other, fd);
}

/* Closes fd and opens the other file, cold, under the same number. */
static void reuse_number(int fd)
{
    if (close(fd) != 0)
        fail("close: %s", strerror(errno));
    open_other(fd);
}

/* Hands over the first LISTED_PAGES pages of descriptor fd and starts a round. */
static void list_pages(pf_client_t c, int fd)
{
    struct access_entry list[LISTED_PAGES];
    for (int i = 0; i < LISTED_PAGES; i++) {
        list[i].page_offset = (loff_t)i * PAGE_SIZE_BYTES;
        list[i].fd = fd;
        list[i].mark = 0;
    }
    if (pf_request_prefetching(c, list, LISTED_PAGES, PF_SET | PF_DONE) != LISTED_PAGES)
        fail("pf_request_prefetching: %s", strerror(errno));
}

/* After the round: the other file (now behind fd) was not advised, and a read of it is not tracked. */
static void check_not_followed(const char *scenario, pf_client_t c, int fd)
{
    size_t advised = resident_pages(fd, LISTED_PAGES);
    if (advised != 0)
        fail("%s: %zu of %d pages of the other file were advised through the reused number", scenario, advised,
             LISTED_PAGES);
    struct pf_stats before, after;
    unsigned char buf[PAGE_SIZE_BYTES];
    pf_get_stats(c, &before);
    check_read("read of the other file", buf, 0, pread(fd, buf, sizeof buf, 0), sizeof buf);
    pf_get_stats(c, &after);
    if (after.tracked_reads != before.tracked_reads)
        fail("%s: a read of the other file was tracked as the closed region's", scenario);
    printf("%s: returned, 0 of %d pages of the other file advised, its read not tracked\n", scenario,
           LISTED_PAGES);
}

static void quiet(void *arg, int lastMarkedFD, loff_t lastMarkedOffset, int requestedFD, loff_t requestedOffset)
{
    (void)arg, (void)lastMarkedFD, (void)lastMarkedOffset, (void)requestedFD, (void)requestedOffset;
}

/* Scenario 1: close, a round while the number is free (the library's own /proc reads get it), then reuse and a
 * list naming the number. */
static void close_then_request(const char *path)
{
    int fd = pattern_open(path, file_size);
    pf_client_t c = pf_register_client(quiet, NULL);
    if (c == NULL || pf_register_region(c, fd, 0, (loff_t)file_size) == NULL)
        fail("register: %s", strerror(errno));
    if (close(fd) != 0)
        fail("close: %s", strerror(errno));
    list_pages(c, fd);
    open_other(fd);
    list_pages(c, fd);
    check_not_followed("close, reuse, request", c, fd);
    pf_unregister_client(c);
    close(fd);
}

/* The callback of scenario 2: its descriptor is closed and reused, then listed. */
static void closing_callback(void *arg, int lastMarkedFD, loff_t lastMarkedOffset, int requestedFD,
                             loff_t requestedOffset)
{
    (void)lastMarkedFD, (void)lastMarkedOffset, (void)requestedOffset;
    static int done;
    if (done++)
        return;
    reuse_number(requestedFD);
    list_pages(*(pf_client_t *)arg, requestedFD);
}

/* Scenario 2: a callback closes its own descriptor. */
static void callback_closes(const char *path)
{
    static pf_client_t c;
    int fd = pattern_open(path, file_size);
    c = pf_register_client(closing_callback, &c);
    if (c == NULL || pf_register_region(c, fd, 0, (loff_t)file_size) == NULL)
        fail("register: %s", strerror(errno));
    /* The read calls back before it reaches the kernel, so it reads the other file: the last page, away from
     * the listed ones. */
    unsigned char buf[PAGE_SIZE_BYTES];
    off_t last = (off_t)file_size - PAGE_SIZE_BYTES;
    check_read("first read", buf, last, pread(fd, buf, sizeof buf, last), sizeof buf);
    check_not_followed("callback closes its descriptor", c, fd);
    pf_unregister_client(c);
    close(fd);
}

/* Scenario 3: the region of a closed descriptor still unregisters. */
static void unregister_after_close(const char *path)
{
    int fd = pattern_open(path, file_size);
    pf_client_t c = pf_register_client(quiet, NULL);
    pf_region_t r = pf_register_region(c, fd, 0, (loff_t)file_size);
    if (r == NULL)
        fail("register: %s", strerror(errno));
    close(fd);
    if (pf_unregister_region(c, r) != 0)
        fail("pf_unregister_region after close: %s", strerror(errno));
    if (pf_unregister_client(c) != 0)
        fail("pf_unregister_client: %s", strerror(errno));
    printf("unregister after close: region and client unregistered\n");
}

int main(int argc, char **argv)
{
    if (argc < 2)
        fail("usage: close_reuse FILE [SIZE_MIB]");
    file_size = size_arg(argc, argv, 2, 32);
    snprintf(other_path, sizeof other_path, "%s.other", argv[1]);
    if (setenv("LIBPREFETCH_BACKGROUND_ADVICE", "0", 1) != 0)
        fail("setenv: %s", strerror(errno));
    close_then_request(argv[1]);
    callback_closes(argv[1]);
    unregister_after_close(argv[1]);
    return EXIT_PASS;
}

/* How the page cache holds a file: its pages counted by the size of the folio that holds each
 * (single pages, or large folios of 2^k pages as the kernel's read-ahead allocates them; the
 * library's WILLNEED advice reads single pages, plan/src/readahead.rs). Used in docs/repro.md to
 * compare the strided pass of libprefetch (ATC 2009, section 5.3) with stock's after each.
 *
 * The file is mapped read-only and each page touched (a page not cached is read in, so run it on
 * a file a pass has just read whole); /proc/self/pagemap gives each page's frame and
 * /proc/kpageflags whether the frame heads or continues a large folio. Needs root.
 *
 * Usage: folio_sizes FILE   (build: cc -O2 -o folio_sizes scripts/folio_sizes.c) */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGE 4096
#define PRESENT (1ULL << 63)
#define PFN_MASK ((1ULL << 55) - 1)
#define KPF_COMPOUND_HEAD 15
#define KPF_COMPOUND_TAIL 16
#define ORDERS 16

static uint64_t flags_of(int kpageflags, uint64_t pfn) {
    uint64_t flags = 0;
    if (pread(kpageflags, &flags, sizeof flags, pfn * sizeof flags) != sizeof flags)
        return 0;
    return flags;
}

/* Pages from `i` on in the folio headed by frame `pfn`: the frames after it that are its tails. */
static size_t folio_pages(const uint64_t *entries, size_t i, size_t pages, int kpageflags) {
    uint64_t pfn = entries[i] & PFN_MASK;
    size_t n = 1;
    while (i + n < pages && (entries[i + n] & PRESENT) && (entries[i + n] & PFN_MASK) == pfn + n &&
           (flags_of(kpageflags, pfn + n) >> KPF_COMPOUND_TAIL & 1))
        n++;
    return n;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: folio_sizes FILE\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < PAGE) {
        perror(argv[1]);
        return 1;
    }
    size_t pages = st.st_size / PAGE;
    const volatile unsigned char *map = mmap(NULL, pages * PAGE, PROT_READ, MAP_SHARED, fd, 0);
    int pagemap = open("/proc/self/pagemap", O_RDONLY);
    int kpageflags = open("/proc/kpageflags", O_RDONLY);
    uint64_t *entries = malloc(pages * sizeof *entries);
    if (map == MAP_FAILED || pagemap < 0 || kpageflags < 0 || !entries) {
        perror("folio_sizes");
        return 1;
    }
    for (size_t i = 0; i < pages; i++)
        (void)map[i * PAGE];
    off_t first = (off_t)((uintptr_t)map / PAGE * sizeof *entries);
    if (pread(pagemap, entries, pages * sizeof *entries, first) != (ssize_t)(pages * sizeof *entries)) {
        perror("pagemap");
        return 1;
    }
    long by_order[ORDERS] = {0}, absent = 0;
    for (size_t i = 0; i < pages;) {
        size_t n = 1;
        if (!(entries[i] & PRESENT))
            absent++;
        else if (flags_of(kpageflags, entries[i] & PFN_MASK) >> KPF_COMPOUND_HEAD & 1)
            n = folio_pages(entries, i, pages, kpageflags);
        int order = 0;
        while ((1UL << order) < n && order < ORDERS - 1)
            order++;
        if (entries[i] & PRESENT)
            by_order[order] += n;
        i += n;
    }
    printf("%zu pages, %ld not mapped; pages by folio size:", pages, absent);
    for (int order = 0; order < ORDERS; order++)
        if (by_order[order])
            printf(" %lu KiB %ld", (PAGE << order) / 1024UL, by_order[order]);
    printf("\n");
    return 0;
}

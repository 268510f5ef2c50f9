/* threads.c - 8 threads read their own registered regions concurrently; prints each thread's checksum. */
/*
 * Checks that libprefetch is thread-safe and never changes what a thread reads: each thread opens the file, reads
 * READS random extents of its eighth of it with pread, preadv and lseek + read, checks every byte against the
 * pattern and prints an FNV-1a checksum.  The test suite compares the checksums with and without the library.
 * With the library (found with dlsym, see pfdyn.h) the regions are registered either with one client per thread
 * ("per-thread", the paper's section 4.1 use of register_client for threads with their own access lists) or with
 * one client for all ("shared", whose callback then runs in several threads and rewrites one list); callbacks
 * hand over the calling thread's next PLAN_READS reads.  Per client, pf_get_stats must count exactly the reads
 * and callbacks the threads saw, and every callback must run in the thread whose read triggered it.
 *
 * Usage: threads FILE per-thread|shared [SIZE_MIB]   (default 32 MiB)
 */
#define _GNU_SOURCE
#include "common.h"
#include "pfdyn.h"
#include <pthread.h>
#include <sys/uio.h>

#define NTHREADS 8
#define READS 3000
#define PLAN_READS 128
#define MAX_LEN 16384

/* One reader thread. */
struct reader {
    int index;
    int fd;
    pthread_t thread;     /* the thread itself, as it sees itself */
    uint64_t start, len;  /* the thread's region */
    off_t off[READS];
    size_t size[READS];
    size_t pos;           /* the read in progress */
    pf_client_t client;
    unsigned long callbacks;
    int errors;
    uint64_t sum;
};

static struct reader readers[NTHREADS];
static struct pf_api pf;
static int shared;

/* The reader whose descriptor is fd, or NULL. */
static struct reader *reader_of(int fd)
{
    for (int i = 0; i < NTHREADS; i++)
        if (readers[i].fd == fd)
            return &readers[i];
    return NULL;
}

/* Hands over the pages of the calling reader's next PLAN_READS reads. */
static void plan(void *arg, int lastMarkedFD, loff_t lastMarkedOffset, int requestedFD, loff_t requestedOffset)
{
    struct reader *r = shared ? reader_of(requestedFD) : arg;
    static __thread struct access_entry a[PLAN_READS * (MAX_LEN / PAGE_SIZE_BYTES + 2)];
    size_t n = 0;
    (void)lastMarkedFD, (void)lastMarkedOffset, (void)requestedOffset;
    if (r == NULL || requestedFD != r->fd || !pthread_equal(pthread_self(), r->thread)) {
        fprintf(stderr, "callback for fd %d ran in the wrong thread or for a foreign fd\n", requestedFD);
        if (r != NULL)
            r->errors++;
        return;
    }
    r->callbacks++;
    for (size_t i = r->pos; i < READS && i < r->pos + PLAN_READS; i++)
        for (uint64_t p = (uint64_t)r->off[i] / PAGE_SIZE_BYTES;
             p <= ((uint64_t)r->off[i] + r->size[i] - 1) / PAGE_SIZE_BYTES; p++, n++) {
            a[n].page_offset = (loff_t)(p * PAGE_SIZE_BYTES);
            a[n].fd = r->fd;
            a[n].marked = false;
        }
    if (pf.request_prefetching(shared ? readers[0].client : r->client, a, n, PF_SET | PF_DONE) < 0) {
        fprintf(stderr, "pf_request_prefetching: %s\n", strerror(errno));
        r->errors++;
    }
}

/* Reads extent i of the reader with the i-th kind of call; returns the bytes read. */
static ssize_t read_extent(struct reader *r, size_t i, unsigned char *buf)
{
    struct iovec iov[2] = {{buf, r->size[i] / 2}, {buf + r->size[i] / 2, r->size[i] - r->size[i] / 2}};
    if (i % 3 == 0)
        return pread(r->fd, buf, r->size[i], r->off[i]);
    if (i % 3 == 1)
        return preadv(r->fd, iov, 2, r->off[i]);
    if (lseek(r->fd, r->off[i], SEEK_SET) != r->off[i])
        return -1;
    return read(r->fd, buf, r->size[i]);
}

/* The thread body: all reads in order, each checked and added to the checksum. */
static void *reader_main(void *arg)
{
    struct reader *r = arg;
    static __thread unsigned char buf[MAX_LEN];
    r->thread = pthread_self();
    r->sum = FNV_START;
    for (r->pos = 0; r->pos < READS; r->pos++) {
        ssize_t got = read_extent(r, r->pos, buf);
        if (got != (ssize_t)r->size[r->pos] || pattern_mismatch(buf, (uint64_t)r->off[r->pos], (size_t)got) >= 0) {
            fprintf(stderr, "thread %d read %zu at %lld: %zd bytes, wrong\n", r->index, r->pos,
                    (long long)r->off[r->pos], got);
            r->errors++;
        }
        if (got > 0)
            r->sum = fnv1a(r->sum, buf, (size_t)got);
    }
    return NULL;
}

/* Opens the reader's descriptor and draws its extents inside its eighth of the file. */
static void prepare(struct reader *r, int index, const char *path, uint64_t size)
{
    uint64_t seed = 1000 + (uint64_t)index;
    r->index = index;
    r->len = size / NTHREADS;
    r->start = r->len * (uint64_t)index;
    r->fd = open(path, O_RDONLY);
    if (r->fd < 0)
        fail("open %s: %s", path, strerror(errno));
    for (size_t i = 0; i < READS; i++) {
        r->size[i] = 1 + (size_t)rng_below(&seed, MAX_LEN);
        r->off[i] = (off_t)(r->start + rng_below(&seed, r->len - r->size[i]));
    }
}

/* Registers the regions (one client per thread, or one shared) when the library is loaded. */
static void register_if_loaded(void)
{
    if (!pf_api_load(&pf)) {
        fprintf(stderr, "threads: libprefetch not loaded\n");
        return;
    }
    for (int i = 0; i < NTHREADS; i++) {
        struct reader *r = &readers[i];
        r->client = shared && i > 0 ? readers[0].client : pf.register_client(plan, r);
        if (r->client == NULL || pf.register_region(r->client, r->fd, (loff_t)r->start,
                                                    (loff_t)(r->start + r->len)) == NULL)
            fail("registering thread %d: %s", i, strerror(errno));
    }
}

/* Compares each client's counters with what its threads saw; prints them on stderr. */
static int check_stats(void)
{
    int errors = 0;
    for (int i = 0; i < (shared ? 1 : NTHREADS); i++) {
        struct pf_stats st;
        unsigned long callbacks = 0, reads = shared ? NTHREADS * READS : READS;
        for (int j = 0; j < NTHREADS; j++)
            callbacks += (shared || j == i) ? readers[j].callbacks : 0;
        if (pf.get_stats(readers[i].client, &st) != 0)
            fail("pf_get_stats: %s", strerror(errno));
        fprintf(stderr, "client %d: callbacks %lu (stats %llu) tracked_reads %llu (made %lu) rounds %llu\n", i,
                callbacks, (unsigned long long)st.callbacks, (unsigned long long)st.tracked_reads, reads,
                (unsigned long long)st.rounds);
        if (st.callbacks != callbacks || st.tracked_reads != reads || callbacks == 0)
            errors++;
    }
    return errors;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[2], "per-thread") != 0 && strcmp(argv[2], "shared") != 0))
        fail("usage: %s FILE per-thread|shared [SIZE_MIB]", argv[0]);
    shared = strcmp(argv[2], "shared") == 0;
    uint64_t size = size_arg(argc, argv, 3, 32);
    close(pattern_open(argv[1], size));
    for (int i = 0; i < NTHREADS; i++)
        prepare(&readers[i], i, argv[1], size);
    register_if_loaded();
    pthread_t threads[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        if (pthread_create(&threads[i], NULL, reader_main, &readers[i]) != 0)
            fail("pthread_create");
    int errors = 0;
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(threads[i], NULL);
        printf("thread %d reads %d checksum %016llx\n", i, READS, (unsigned long long)readers[i].sum);
        errors += readers[i].errors;
    }
    if (pf.get_stats != NULL)
        errors += check_stats();
    if (errors != 0)
        fail("%d errors (see above)", errors);
    return EXIT_PASS;
}

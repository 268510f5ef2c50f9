/* identity.c - reads through every interposed call, odd cases included, and prints what each call returned. */
/*
 * Checks the rule of the issue and DESIGN.md: libprefetch never changes the bytes, return value, errno or file
 * position an application sees.  The program makes the same calls whether or not libprefetch is loaded and prints,
 * per call, the return value, errno (preset to a sentinel, so a success that clobbers errno shows), the file
 * position after the call and an FNV-1a digest of the whole destination buffer (poisoned before the call, so
 * stray writes show).  The test suite runs it without the library, under LD_PRELOAD=libprefetch.so and linked
 * with -lprefetch and compares the outputs byte for byte.  When the library is present (found with dlsym) the
 * file is registered in two regions, one reaching past EOF, and a callback hands over the pages of the next
 * PLAN_CALLS calls, so the tracked path (probes, rounds, callbacks) runs under every call.
 *
 * Calls: read, pread, pread64, readv, preadv, preadv64, preadv2 (also at offset -1, the current position) and the
 * fortified __read_chk and __pread_chk (fortified.c, built with -O2 -D_FORTIFY_SOURCE=2): RANDOM_CALLS at random
 * offsets and lengths, some past EOF or of length 0; then each call on a directory (EISDIR), a closed descriptor
 * (EBADF), a write-only descriptor (EBADF), a non-blocking pipe (data, ESPIPE, EAGAIN), at a negative and a huge
 * offset, into an unmapped buffer (EFAULT), with 0, -1 and IOV_MAX + 1 iovecs, with unknown preadv2 flags; then,
 * with the whole file cached and every other page listed until the client rests (its preads made with
 * RWF_NOWAIT first), each call on listed pages, across a 2 MiB block evicted meanwhile (partly cached), at and past EOF and
 * into an unmapped buffer; last, the registered descriptor is closed and its number reused for a directory that
 * is read again.
 *
 * Usage: identity FILE DIR [SIZE_MIB]   (FILE is created if needed; its size is SIZE_MIB MiB + 1234 bytes)
 */
#define _GNU_SOURCE
#include "common.h"
#include "fortified.h"
#include "pfdyn.h"
#include <limits.h>
#include <sys/mman.h>
#include <sys/uio.h>

#define RANDOM_CALLS 450
#define PLAN_CALLS 64
#define PLAN_PAGES (PLAN_CALLS * (FORTIFIED_MAX_LEN / PAGE_SIZE_BYTES + 2))
#define ERRNO_SENTINEL 4242
#define ODD_SIZE 1234
#define RESTING_LIST 8192

/* The interposed calls, in the order the header lists them. */
enum op {
    OP_READ, OP_PREAD, OP_PREAD64, OP_READV, OP_PREADV, OP_PREADV64, OP_PREADV2, OP_READ_CHK, OP_PREAD_CHK, NOPS
};
static const char *const op_names[NOPS] = {"read",    "pread",    "pread64", "readv",     "preadv",
                                            "preadv64", "preadv2", "__read_chk", "__pread_chk"};

/* One call: which function, on which descriptor (named, never numbered: the library may hold descriptors). */
struct call {
    enum op op;
    const char *what;
    int fd;
    off_t off;  /* pread family: the offset; read family: lseek there first if >= 0; preadv2: -1 = current */
    size_t len;
    int iovcnt; /* vector calls: number of iovecs the length is split into (may be 0, -1 or > IOV_MAX) */
    int flags;  /* preadv2 flags */
    unsigned char *buf;
};

static unsigned char buffer[FORTIFIED_MAX_LEN];
static uint64_t total = FNV_START;
static int line_number;
static int file_fd = -1;
static int pattern_errors;

static struct pf_api pf;
static pf_client_t client;
static struct call random_calls[RANDOM_CALLS];
static size_t current_call;
static unsigned long callbacks;
static int resting_phase; /* the callback lists every other page of the file from the requested one */
static uint64_t file_size;

/* True for the calls that read at the file position (the read family). */
static int reads_at_position(enum op op)
{
    return op == OP_READ || op == OP_READV || op == OP_READ_CHK;
}

/* True for the calls that take an iovec array. */
static int is_vector(enum op op)
{
    return op == OP_READV || op == OP_PREADV || op == OP_PREADV64 || op == OP_PREADV2;
}

/* Splits [buf, buf + len) into cnt iovecs (the first cnt - 1 of len / cnt bytes each, the rest in the last). */
static void split(unsigned char *buf, size_t len, int cnt, struct iovec *iov)
{
    size_t piece = cnt > 0 ? len / (size_t)cnt : 0;
    for (int i = 0; i < cnt; i++) {
        iov[i].iov_base = buf + piece * (size_t)i;
        iov[i].iov_len = i == cnt - 1 ? len - piece * (size_t)(cnt - 1) : piece;
    }
}

/* Makes the call; returns its result and stores errno as it was right after the call. */
static ssize_t make_call(const struct call *c, int *err)
{
    static struct iovec iov[IOV_MAX + 8];
    ssize_t r = -1;
    if (is_vector(c->op))
        split(c->buf, c->len, c->iovcnt < 0 ? 1 : c->iovcnt, iov);
    if (reads_at_position(c->op) && c->off >= 0)
        lseek(c->fd, c->off, SEEK_SET);
    errno = ERRNO_SENTINEL;
    switch (c->op) {
    case OP_READ: r = read(c->fd, c->buf, c->len); break;
    case OP_PREAD: r = pread(c->fd, c->buf, c->len, c->off); break;
    case OP_PREAD64: r = pread64(c->fd, c->buf, c->len, c->off); break;
    case OP_READV: r = readv(c->fd, iov, c->iovcnt); break;
    case OP_PREADV: r = preadv(c->fd, iov, c->iovcnt, c->off); break;
    case OP_PREADV64: r = preadv64(c->fd, iov, c->iovcnt, c->off); break;
    case OP_PREADV2: r = preadv2(c->fd, iov, c->iovcnt, c->off, c->flags); break;
    case OP_READ_CHK: r = chk_read(c->fd, c->buf, c->len); break;
    case OP_PREAD_CHK: r = chk_pread(c->fd, c->buf, c->len, c->off); break;
    case NOPS: break;
    }
    *err = errno;
    return r;
}

/* Makes the call and prints one line: call, arguments, result, errno, position after, digest of the buffer. */
static void run(const struct call *c)
{
    char line[512];
    int err;
    int own_buffer = c->buf == buffer;
    if (own_buffer)
        memset(buffer, 0xa5, c->len);
    ssize_t r = make_call(c, &err);
    off_t after = lseek(c->fd, 0, SEEK_CUR);
    int at_position = reads_at_position(c->op) || (c->op == OP_PREADV2 && c->off == -1);
    off_t start = at_position ? after - r : c->off;
    uint64_t digest = own_buffer ? fnv1a(FNV_START, buffer, c->len) : 0;
    const char *check = "";
    if (c->fd == file_fd && r > 0 && own_buffer && pattern_mismatch(buffer, (uint64_t)start, (size_t)r) >= 0) {
        check = " WRONG-BYTES";
        pattern_errors++;
    }
    snprintf(line, sizeof line,
             "%4d %-11s %-6s off=%lld len=%zu iov=%d flags=%#x -> ret=%zd errno=%d pos=%lld bytes=%016llx%s\n",
             line_number++, op_names[c->op], c->what, (long long)c->off, c->len, c->iovcnt, (unsigned)c->flags, r,
             err, (long long)after, (unsigned long long)digest, check);
    fputs(line, stdout);
    total = fnv1a(total, line, strlen(line));
}

/* Runs one call of each kind with the same arguments. */
static void run_each(const char *what, int fd, off_t off, size_t len, int iovcnt, unsigned char *buf)
{
    for (int op = 0; op < NOPS; op++) {
        int fortified = op == OP_READ_CHK || op == OP_PREAD_CHK;
        if (fortified && buf != buffer)
            continue; /* the fortified wrappers copy through the buffer; an unmapped one would fault */
        struct call c = {(enum op)op, what, fd, off, len, iovcnt, 0, buf};
        run(&c);
    }
}

/* The callback: hands over the pages of the next PLAN_CALLS random calls (every tenth call's pages marked). */
static void plan(void *arg, int lastMarkedFD, loff_t lastMarkedOffset, int requestedFD, loff_t requestedOffset)
{
    static struct access_entry a[PLAN_PAGES];
    size_t n = 0;
    (void)arg, (void)lastMarkedFD, (void)lastMarkedOffset, (void)requestedFD, (void)requestedOffset;
    callbacks++;
    if (resting_phase) {
        static struct access_entry every_other[RESTING_LIST];
        for (uint64_t p = (uint64_t)requestedOffset / PAGE_SIZE_BYTES; n < RESTING_LIST; p += 2, n++) {
            if (p * PAGE_SIZE_BYTES >= file_size)
                break;
            every_other[n].page_offset = (loff_t)(p * PAGE_SIZE_BYTES);
            every_other[n].fd = file_fd;
            every_other[n].marked = 0;
        }
        pf.request_prefetching(client, every_other, n, PF_SET | PF_DONE);
        return;
    }
    for (size_t i = current_call; i < RANDOM_CALLS && i < current_call + PLAN_CALLS; i++) {
        const struct call *c = &random_calls[i];
        if (c->off < 0)
            continue;
        uint64_t first = (uint64_t)c->off / PAGE_SIZE_BYTES;
        uint64_t last = ((uint64_t)c->off + (c->len ? c->len : 1) - 1) / PAGE_SIZE_BYTES;
        for (uint64_t p = first; p <= last && n < PLAN_PAGES; p++, n++) {
            a[n].page_offset = (loff_t)(p * PAGE_SIZE_BYTES);
            a[n].fd = file_fd;
            a[n].marked = i % 10 == 0;
        }
    }
    pf.request_prefetching(client, a, n, PF_SET | PF_DONE);
}

/* Random calls on the file: any kind, any offset (a tenth near or past EOF), lengths from 0 to the maximum. */
static void make_random_calls(uint64_t size)
{
    static const size_t lens[] = {0, 1, 4095, 4096, 4097, 8192};
    uint64_t seed = 2009;
    for (size_t i = 0; i < RANDOM_CALLS; i++) {
        struct call *c = &random_calls[i];
        c->op = (enum op)(i % NOPS);
        c->what = "file";
        c->fd = file_fd;
        c->buf = buffer;
        c->off = rng_below(&seed, 10) == 0 ? (off_t)(size - 5000 + rng_below(&seed, 25000))
                                           : (off_t)rng_below(&seed, size);
        uint64_t pick = rng_below(&seed, 12);
        c->len = pick < 6 ? lens[pick] : (size_t)rng_below(&seed, FORTIFIED_MAX_LEN + 1);
        c->iovcnt = is_vector(c->op) ? 1 + (int)rng_below(&seed, 4) : 0;
        if (c->op == OP_PREADV2 && rng_below(&seed, 4) == 0)
            c->off = -1;
    }
}

/* Runs the random calls, keeping the callback informed of the position. */
static void run_random_calls(uint64_t size)
{
    uint64_t seed = 77;
    for (current_call = 0; current_call < RANDOM_CALLS; current_call++) {
        struct call *c = &random_calls[current_call];
        if (c->off == -1)
            lseek(file_fd, (off_t)rng_below(&seed, size), SEEK_SET);
        run(c);
    }
}

/* Writes n bytes into the pipe (bytes of the pattern, continuing where the last write stopped). */
static void feed_pipe(int wfd, size_t n)
{
    static uint64_t fed;
    unsigned char bytes[64];
    pattern_fill(bytes, fed, n);
    if (write(wfd, bytes, n) != (ssize_t)n)
        fail("write to pipe: %s", strerror(errno));
    fed += n;
}

/* Each call on a non-blocking pipe with data, then on the drained pipe (EAGAIN), then preadv2 RWF_NOWAIT. */
static void run_pipe_calls(void)
{
    int p[2];
    unsigned char drain[4096];
    if (pipe2(p, O_NONBLOCK) != 0)
        fail("pipe2: %s", strerror(errno));
    for (int op = 0; op < NOPS; op++) {
        feed_pipe(p[1], 32);
        struct call c = {(enum op)op, "pipe", p[0], 0, 20, is_vector((enum op)op) ? 2 : 0, 0, buffer};
        run(&c);
    }
    feed_pipe(p[1], 32);
    struct call current = {OP_PREADV2, "pipe", p[0], -1, 20, 2, 0, buffer};
    run(&current);
    while (read(p[0], drain, sizeof drain) > 0)
        continue;
    run_each("pipe-empty", p[0], 0, 20, 1, buffer);
    struct call nowait = {OP_PREADV2, "pipe-empty", p[0], -1, 20, 1, RWF_NOWAIT, buffer};
    run(&nowait);
    close(p[0]);
    close(p[1]);
}

/* Calls at the edges of the file: EOF, past it, negative and huge offsets, zero length, odd iovec counts. */
static void run_edge_calls(uint64_t size)
{
    run_each("file-eof", file_fd, (off_t)size, 100, 1, buffer);
    run_each("file-tail", file_fd, (off_t)size - 10, 100, 2, buffer);
    run_each("file-past", file_fd, (off_t)size + 1000000, 100, 1, buffer);
    run_each("file-zero", file_fd, 100, 0, 1, buffer);
    run_each("file-neg", file_fd, -4096, 100, 1, buffer);
    run_each("file-huge", file_fd, LLONG_MAX - 10, 100, 1, buffer);
    run_each("file-iov0", file_fd, 8192, 100, 0, buffer);
    run_each("file-iovneg", file_fd, 8192, 100, -1, buffer);
    run_each("file-iovmax", file_fd, 8192, IOV_MAX + 1, IOV_MAX + 1, buffer);
    struct call badflags = {OP_PREADV2, "file-flags", file_fd, 0, 100, 1, 0x40000000, buffer};
    run(&badflags);
}

/* Each call on descriptors that cannot be read: a directory, a closed number, a write-only descriptor. */
static void run_unreadable_calls(const char *file, const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    int wfd = open(file, O_WRONLY);
    if (dfd < 0 || wfd < 0)
        fail("open %s / %s: %s", dir, file, strerror(errno));
    run_each("dir", dfd, 0, 100, 1, buffer);
    run_each("dir-zero", dfd, 0, 0, 1, buffer);
    run_each("closed", 987, 0, 100, 1, buffer);
    run_each("closed-zero", 987, 0, 0, 1, buffer);
    run_each("wronly", wfd, 0, 100, 1, buffer);
    close(dfd);
    close(wfd);
}

/* Reads into a page that is not mapped: the kernel says EFAULT; the library must not touch the buffer. */
static void run_fault_calls(void)
{
    unsigned char *hole = mmap(NULL, PAGE_SIZE_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (hole == MAP_FAILED)
        fail("mmap: %s", strerror(errno));
    run_each("file-efault", file_fd, 4096, 100, 1, hole);
    munmap(hole, PAGE_SIZE_BYTES);
}

/* Closes the registered descriptor and reuses its number for a directory, which is then read. */
static void run_reused_descriptor_calls(const char *dir)
{
    close(file_fd);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd < 0)
        fail("open %s: %s", dir, strerror(errno));
    file_fd = -1;
    run_each("reused-dir", dfd, 0, 100, 1, buffer);
    close(dfd);
}

/* The whole file cached and read page by page (every other page, as the callback lists them) until the client
 * rests; then each call on listed pages, across an evicted 2 MiB block, at and past EOF, into an unmapped buffer. */
static void run_resting_calls(uint64_t size)
{
    static unsigned char warm[MIB];
    unsigned char *hole = mmap(NULL, PAGE_SIZE_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (hole == MAP_FAILED)
        fail("mmap: %s", strerror(errno));
    for (uint64_t at = 0; at < size; at += MIB)
        if (pread(file_fd, warm, MIB, (off_t)at) < 0)
            fail("pread: %s", strerror(errno));
    resting_phase = 1;
    file_size = size;
    for (uint64_t p = 0; p < 2048; p += 2)
        if (pread(file_fd, warm, PAGE_SIZE_BYTES, (off_t)(p * PAGE_SIZE_BYTES)) < 0)
            fail("pread: %s", strerror(errno));
    struct pf_stats before = {0}, after = {0};
    if (client != NULL)
        pf.get_stats(client, &before);
    for (int op = 0, i = 0; i < 4 * NOPS; i++, op = (op + 1) % NOPS) {
        struct call c = {(enum op)op, "rest", file_fd, (off_t)((2048 + 2 * i) * PAGE_SIZE_BYTES), PAGE_SIZE_BYTES,
                         is_vector((enum op)op) ? 2 : 0, 0, buffer};
        run(&c);
    }
    if (client != NULL) {
        pf.get_stats(client, &after);
        fprintf(stderr, "identity: %llu rounds during %d calls on cached listed pages (none: the client rested)\n",
                (unsigned long long)(after.rounds - before.rounds), 4 * NOPS);
    }
    run_each("rest-part", file_fd, 24 * MIB - 2 * PAGE_SIZE_BYTES, 3 * PAGE_SIZE_BYTES, 2, buffer);
    run_each("rest-eof", file_fd, (off_t)size - 10, 100, 2, buffer);
    run_each("rest-past", file_fd, (off_t)size + 4096, 100, 1, buffer);
    run_each("rest-efault", file_fd, 8 * PAGE_SIZE_BYTES, 100, 1, hole);
    munmap(hole, PAGE_SIZE_BYTES);
    resting_phase = 0;
}

/* Registers the file with libprefetch when it is loaded; says on stderr whether it is. */
static void register_if_loaded(uint64_t size)
{
    if (!pf_api_load(&pf)) {
        fprintf(stderr, "identity: libprefetch not loaded\n");
        return;
    }
    client = pf.register_client(plan, NULL);
    if (client == NULL || pf.register_region(client, file_fd, 0, (loff_t)(size / 2)) == NULL ||
        pf.register_region(client, file_fd, (loff_t)(size / 2), (loff_t)(size + MIB)) == NULL)
        fail("registering with libprefetch: %s", strerror(errno));
}

/* Says on stderr what the library did, so a run that never reached the tracked path is visible. */
static void report_library(void)
{
    struct pf_stats st;
    if (client == NULL)
        return;
    if (pf.get_stats(client, &st) != 0)
        fail("pf_get_stats: %s", strerror(errno));
    fprintf(stderr, "identity: libprefetch loaded: callbacks %lu (stats %llu) tracked_reads %llu rounds %llu\n",
            callbacks, (unsigned long long)st.callbacks, (unsigned long long)st.tracked_reads,
            (unsigned long long)st.rounds);
    if (st.tracked_reads == 0 || callbacks == 0)
        fail("the library was loaded but tracked no read");
}

int main(int argc, char **argv)
{
    if (argc < 3)
        fail("usage: %s FILE DIR [SIZE_MIB]", argv[0]);
    uint64_t size = size_arg(argc, argv, 3, 32) + ODD_SIZE;
    file_fd = pattern_open(argv[1], size);
    register_if_loaded(size);
    make_random_calls(size);
    run_random_calls(size);
    run_edge_calls(size);
    run_pipe_calls();
    run_unreadable_calls(argv[1], argv[2]);
    run_fault_calls();
    run_resting_calls(size);
    report_library();
    run_reused_descriptor_calls(argv[2]);
    printf("calls %d digest %016llx wrong-bytes %d\n", line_number, (unsigned long long)total, pattern_errors);
    if (pattern_errors != 0)
        fail("%d calls returned wrong bytes", pattern_errors);
    return EXIT_PASS;
}

/* intercept.c - every interposed entry point (and pf_note_read) counts one tracked read and keeps errno. */
/*
 * Checks the interposed functions (the list in libprefetch.h) one entry point at a time: after each call on a registered region,
 * pf_get_stats().tracked_reads must have grown by exactly one, the bytes must be the file's and errno must still
 * hold the sentinel set before the call.  Reads outside the region and on an unregistered descriptor of the same
 * file must not count.  Successful pf_ calls must leave errno alone too (the header's error convention).
 *
 * "std" checks the symbols the header lists: read, pread, pread64, readv, preadv, preadv64, preadv2 (at an offset
 * and at -1, the file position), __read_chk and __pread_chk (fortified.c), and pf_note_read before a raw
 * syscall(SYS_pread64), which no interposer sees.  "lfs" checks what a program built
 * with -D_FILE_OFFSET_BITS=64 -D_FORTIFY_SOURCE=2 calls instead (lfs.c): __pread64_chk, preadv64, preadv64v2.
 *
 * Usage: intercept FILE std|lfs [SIZE_MIB]   (default 32 MiB)
 */
#define _GNU_SOURCE
#include "common.h"
#include "fortified.h"
#include "lfs.h"
#include "libprefetch.h"
#include <sys/syscall.h>
#include <sys/uio.h>

#define SENTINEL 4242
#define LEN PAGE_SIZE_BYTES

static client_t client;
static int fd;
static unsigned long callbacks;
static int failures;

/* Counts callbacks; plans nothing, so every tracked read is a divergence. */
static void count(void *arg, int lastMarkedFD, loff_t lastMarkedOffset, int requestedFD, loff_t requestedOffset)
{
    (void)arg, (void)lastMarkedFD, (void)lastMarkedOffset, (void)requestedFD, (void)requestedOffset;
    callbacks++;
}

/* The client's tracked-read count. */
static unsigned long long tracked(void)
{
    struct pf_stats st;
    errno = SENTINEL;
    if (pf_get_stats(client, &st) != 0)
        fail("pf_get_stats: %s", strerror(errno));
    if (errno != SENTINEL)
        fail("a successful pf_get_stats changed errno to %d", errno);
    return (unsigned long long)st.tracked_reads;
}

/* The calls under test; each reads LEN bytes at off into buf through one entry point. */
enum entry {
    E_READ, E_PREAD, E_PREAD64, E_READV, E_PREADV, E_PREADV64, E_PREADV2, E_PREADV2_CUR, E_READ_CHK, E_PREAD_CHK,
    E_NOTE_SYSCALL, E_LFS_PREAD_CHK, E_LFS_PREADV, E_LFS_PREADV2, NENTRIES
};
static const char *const entry_names[NENTRIES] = {
    "read", "pread", "pread64", "readv", "preadv", "preadv64", "preadv2", "preadv2(-1)", "__read_chk",
    "__pread_chk", "pf_note_read", "__pread64_chk", "preadv64 (LFS)", "preadv64v2"};

/* Makes the call; the file position is set first for the calls that read at it. */
static ssize_t call(enum entry e, int d, unsigned char *buf, off_t off)
{
    struct iovec iov[2] = {{buf, 100}, {buf + 100, LEN - 100}};
    if (e == E_READ || e == E_READV || e == E_PREADV2_CUR || e == E_READ_CHK)
        lseek(d, off, SEEK_SET);
    errno = SENTINEL;
    switch (e) {
    case E_READ: return read(d, buf, LEN);
    case E_PREAD: return pread(d, buf, LEN, off);
    case E_PREAD64: return pread64(d, buf, LEN, off);
    case E_READV: return readv(d, iov, 2);
    case E_PREADV: return preadv(d, iov, 2, off);
    case E_PREADV64: return preadv64(d, iov, 2, off);
    case E_PREADV2: return preadv2(d, iov, 2, off, 0);
    case E_PREADV2_CUR: return preadv2(d, iov, 2, -1, 0);
    case E_READ_CHK: return chk_read(d, buf, LEN);
    case E_PREAD_CHK: return chk_pread(d, buf, LEN, off);
    case E_NOTE_SYSCALL:
        pf_note_read(d, off, LEN);
        return syscall(SYS_pread64, d, buf, LEN, off);
    case E_LFS_PREAD_CHK: return lfs_pread_chk(d, buf, LEN, off);
    case E_LFS_PREADV: return lfs_preadv(d, iov, 2, off);
    case E_LFS_PREADV2: return lfs_preadv2(d, iov, 2, off, 0);
    case NENTRIES: break;
    }
    return -1;
}

/* Calls entry e on descriptor d at off and checks the bytes, errno and that tracked_reads grew by want. */
static void check(enum entry e, int d, off_t off, unsigned long long want, const char *where)
{
    unsigned char buf[LEN];
    unsigned long long before = tracked();
    ssize_t r = call(e, d, buf, off);
    int err = errno;
    unsigned long long grew = tracked() - before;
    int ok = r == LEN && err == SENTINEL && pattern_mismatch(buf, (uint64_t)off, LEN) < 0 && grew == want;
    printf("%-15s %-22s ret %zd errno %s tracked +%llu (want +%llu) %s\n", entry_names[e], where, r,
           err == SENTINEL ? "kept" : strerror(err), grew, want, ok ? "ok" : "WRONG");
    failures += !ok;
}

/* Registers the first half of the file, with errno checks on the successful calls. */
static void register_half(uint64_t size)
{
    errno = SENTINEL;
    client = register_client(count, NULL);
    if (client == NULL)
        fail("register_client: %s", strerror(errno));
    if (register_region(client, fd, 0, (loff_t)(size / 2)) == NULL)
        fail("register_region: %s", strerror(errno));
    if (errno != SENTINEL)
        fail("successful register calls changed errno to %d", errno);
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[2], "std") != 0 && strcmp(argv[2], "lfs") != 0))
        fail("usage: %s FILE std|lfs [SIZE_MIB]", argv[0]);
    int lfs = strcmp(argv[2], "lfs") == 0;
    uint64_t size = size_arg(argc, argv, 3, 32);
    fd = pattern_open(argv[1], size);
    int other = open(argv[1], O_RDONLY);
    if (other < 0)
        fail("open %s: %s", argv[1], strerror(errno));
    register_half(size);
    enum entry first = lfs ? E_LFS_PREAD_CHK : E_READ, last = lfs ? NENTRIES : E_LFS_PREAD_CHK;
    for (enum entry e = first; e < last; e++) {
        off_t page = (off_t)(7 * (e + 1)) * PAGE_SIZE_BYTES + 100;
        check(e, fd, page, 1, "registered region");
        check(e, fd, (off_t)(size * 3 / 4) + page, 0, "outside the region");
        check(e, other, page, 0, "unregistered descriptor");
    }
    printf("callbacks %lu\n", callbacks);
    if (failures != 0)
        fail("%d entry points misbehaved (see WRONG above)", failures);
    printf("PASS\n");
    return EXIT_PASS;
}

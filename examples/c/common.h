/*
 * common.h - helpers shared by the C examples: the pseudo-random test file, byte checks, checksums, exit codes.
 *
 * Every example reads a "pattern file" whose byte at offset o is a pure function of o (splitmix64 of the 8-byte
 * word index), so a program can check any byte it reads without keeping a copy of the file.  A program given a
 * path creates the file if it is missing or has the wrong size, then evicts it from the page cache
 * (POSIX_FADV_DONTNEED after fdatasync) so that prefetching has real work to do.
 *
 * Exit codes: 0 pass, 1 fail (with the reason printed). None skips: every example needs only what the
 * library itself needs.
 */
#ifndef EXAMPLES_COMMON_H
#define EXAMPLES_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXIT_PASS 0
#define EXIT_FAIL 1

#define PAGE_SIZE_BYTES 4096
#define MIB (1024 * 1024)

/* Prints "TAG: message" on stderr. */
static inline void report(const char *tag, const char *fmt, va_list ap)
{
    fprintf(stderr, "%s: ", tag);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

/* Prints "FAIL: ..." on stderr and exits 1. */
__attribute__((format(printf, 1, 2), noreturn)) static inline void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report("FAIL", fmt, ap);
    va_end(ap);
    exit(EXIT_FAIL);
}

/* One step of splitmix64: a good 64-bit mix of x. */
static inline uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Next value of a seeded pseudo-random sequence (the state advances). */
static inline uint64_t rng_next(uint64_t *state)
{
    *state += 1;
    return splitmix64(*state * 0x2545f4914f6cdd1dULL);
}

/* Uniform value in [0, n) for n > 0. */
static inline uint64_t rng_below(uint64_t *state, uint64_t n)
{
    return rng_next(state) % n;
}

/* The byte of the pattern file at offset off. */
static inline unsigned char pattern_byte(uint64_t off)
{
    return (unsigned char)(splitmix64(off / 8) >> (8 * (off % 8)));
}

/* Fills buf with the pattern file's bytes [off, off + len). */
static inline void pattern_fill(unsigned char *buf, uint64_t off, size_t len)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = pattern_byte(off + i);
}

/* Index of the first byte of buf that differs from the pattern at off, or -1 if all match. */
static inline long pattern_mismatch(const unsigned char *buf, uint64_t off, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (buf[i] != pattern_byte(off + i))
            return (long)i;
    return -1;
}

/* Fails unless a read (`what`) of len bytes at off returned len bytes matching the pattern. */
static inline void check_read(const char *what, const unsigned char *buf, off_t off, ssize_t r, size_t len)
{
    if (r != (ssize_t)len)
        fail("%s at %lld returned %zd (%s)", what, (long long)off, r, strerror(errno));
    long bad = pattern_mismatch(buf, (uint64_t)off, len);
    if (bad >= 0)
        fail("wrong byte at offset %lld", (long long)off + bad);
}

/* Adds n bytes to an FNV-1a 64-bit hash (start from FNV_START). */
#define FNV_START 0xcbf29ce484222325ULL
static inline uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* Writes the pattern file at path with the given size (through a temporary name, then rename). */
static inline void pattern_create(const char *path, uint64_t size)
{
    char tmp[4096];
    static unsigned char chunk[MIB];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        fail("create %s: %s", tmp, strerror(errno));
    for (uint64_t off = 0; off < size; off += sizeof chunk) {
        size_t len = size - off < sizeof chunk ? (size_t)(size - off) : sizeof chunk;
        pattern_fill(chunk, off, len);
        if (pwrite(fd, chunk, len, (off_t)off) != (ssize_t)len)
            fail("write %s: %s", tmp, strerror(errno));
    }
    if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0)
        fail("finish %s: %s", path, strerror(errno));
}

/* Drops the file's clean pages from the page cache so that the next reads go to the disk. */
static inline void evict_file(int fd)
{
    int err = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (err != 0)
        fail("posix_fadvise(DONTNEED): %s", strerror(err));
}

/* Opens the pattern file read-only (creating it if missing or of another size) with a cold page cache. */
static inline int pattern_open(const char *path, uint64_t size)
{
    struct stat st;
    if (stat(path, &st) != 0 || (uint64_t)st.st_size != size)
        pattern_create(path, size);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        fail("open %s: %s", path, strerror(errno));
    evict_file(fd);
    return fd;
}

/* The file size in bytes given by argument i as MiB, or the default. */
static inline uint64_t size_arg(int argc, char **argv, int i, uint64_t default_mib)
{
    if (argc <= i)
        return default_mib * MIB;
    char *end;
    unsigned long long mib = strtoull(argv[i], &end, 10);
    if (*end != '\0' || mib == 0 || mib > 1024 * 1024)
        fail("bad size '%s' (MiB, 1..1048576)", argv[i]);
    return (uint64_t)mib * MIB;
}

/* A KiB field of /proc/self/status ("VmRSS", "VmHWM", ...), or -1. */
static inline long vm_status_kib(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t n = strlen(field);
    long kib = -1;
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, field, n) == 0 && line[n] == ':') {
            kib = atol(line + n + 1);
            break;
        }
    fclose(f);
    return kib;
}

#endif /* EXAMPLES_COMMON_H */

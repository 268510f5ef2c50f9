/* The service of the copy-beside-a-service benchmark (docs/cache-budget.md): reads FILE once
 * to load its pages (its working set), prints `ready`, then reads random 4 KiB pages of it
 * (from a fixed seed) until SIGTERM or SIGINT. Before each read, cachestat (Linux 6.5) says
 * whether the page is cached: a read of a page that is not is a miss, counted exactly however
 * loaded the machine is (preadv2's RWF_NOWAIT would tell the same on ext4, but fails on FUSE
 * even for cached pages). At the end prints one line:
 * `reads N misses M seconds S per-second R p50-us A p99-us B`.
 *
 * Written in C so that its own memory stays small beside the memory cgroup's page cache.
 *
 * Usage: service FILE */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define MAX_SAMPLES (1 << 22)

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* The kernel's struct cachestat_range and the first field of struct cachestat. */
struct range { uint64_t off, len; };
struct counts { uint64_t cache, dirty, writeback, evicted, recently_evicted; };

static int cached(int fd, off_t offset) {
    struct range r = {(uint64_t)offset, PAGE};
    struct counts c;
    return syscall(451 /* cachestat */, fd, &r, &c, 0) == 0 && c.cache > 0;
}

static int by_value(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: service FILE\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < PAGE) {
        perror(argv[1]);
        return 1;
    }
    static char buf[1 << 20];
    while (read(fd, buf, sizeof buf) > 0)
        ;
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    printf("ready\n");
    fflush(stdout);
    float *samples = malloc(sizeof(float) * MAX_SAMPLES);
    uint64_t pages = st.st_size / PAGE, reads = 0, misses = 0, seed = 42;
    double start = now();
    while (!stop) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        off_t offset = (off_t)((seed >> 33) % pages) * PAGE;
        double t = now();
        misses += !cached(fd, offset);
        if (pread(fd, buf, PAGE, offset) != PAGE && !stop) {
            perror("pread");
            return 1;
        }
        if (reads < MAX_SAMPLES)
            samples[reads] = (float)((now() - t) * 1e6);
        reads++;
    }
    double seconds = now() - start;
    uint64_t n = reads < MAX_SAMPLES ? reads : MAX_SAMPLES;
    qsort(samples, n, sizeof(float), by_value);
    printf("reads %llu misses %llu seconds %.3f per-second %.0f p50-us %.1f p99-us %.1f\n",
           (unsigned long long)reads, (unsigned long long)misses, seconds, reads / seconds,
           n ? samples[n / 2] : 0.0, n ? samples[n * 99 / 100] : 0.0);
    return 0;
}

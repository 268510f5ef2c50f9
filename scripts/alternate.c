/* The alternating program of docs/cache-budget.md: ROUNDS times, a sequential pass over SEQ
 * (1 MiB reads), then READS random 4 KiB reads of RAND (the same offsets every round, from a
 * fixed seed). Prints a checksum of everything read, so that runs with and without the budget
 * can be compared. Written in C so that its own memory (a few hundred KiB) leaves the memory
 * cgroup's room to the page cache.
 *
 * With OPEN given as `keep-open`, SEQ stays open across rounds (rewound), so that a budget can
 * drop its pages while the random reads run; by default each pass opens and closes it.
 *
 * Usage: alternate SEQ RAND [ROUNDS=6] [READS=1500] [OPEN] */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t sum(uint64_t h, const unsigned char *p, ssize_t n) {
    for (ssize_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: alternate SEQ RAND [ROUNDS] [READS] [keep-open]\n");
        return 2;
    }
    int rounds = argc > 3 ? atoi(argv[3]) : 6;
    int reads = argc > 4 ? atoi(argv[4]) : 1500;
    int keep_open = argc > 5 && strcmp(argv[5], "keep-open") == 0;
    int rfd = open(argv[2], O_RDONLY);
    struct stat st;
    if (rfd < 0 || fstat(rfd, &st) != 0) {
        perror(argv[2]);
        return 1;
    }
    uint64_t pages = (uint64_t)st.st_size / 4096, h = 14695981039346656037ULL, x = 1;
    off_t *offsets = malloc(sizeof(off_t) * (size_t)reads);
    for (int i = 0; i < reads; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        offsets[i] = (off_t)((x >> 17) % pages) * 4096;
    }
    static unsigned char buf[1 << 20];
    for (int r = 0; r < rounds; r++) {
        static int sfd = -1;
        if (sfd < 0)
            sfd = open(argv[1], O_RDONLY);
        else
            lseek(sfd, 0, SEEK_SET);
        if (sfd < 0) {
            perror(argv[1]);
            return 1;
        }
        ssize_t n;
        while ((n = read(sfd, buf, sizeof buf)) > 0)
            h = sum(h, buf, n);
        if (!keep_open) {
            close(sfd);
            sfd = -1;
        }
        for (int i = 0; i < reads; i++)
            h = sum(h, buf, pread(rfd, buf, 4096, offsets[i]));
    }
    printf("%016llx\n", (unsigned long long)h);
    return 0;
}

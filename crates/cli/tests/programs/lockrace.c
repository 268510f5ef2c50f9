/* lockrace FILE ITERATIONS OTHER_FILE: each iteration reads 12 x 64 KiB of FILE through one
   descriptor (a stream `prefetch run --competitive` follows), closes it, reopens FILE, takes a POSIX
   read lock (F_SETLK) on it, reads OTHER_FILE the same way, and checks in /proc/locks that the lock
   is still held. Prints how many iterations lost it; exits 1 if any did, 2 on an error. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* True if /proc/locks lists a POSIX lock of this process on inode `ino`. */
static int held(ino_t ino) {
    char line[512], want[64];
    snprintf(want, sizeof want, " %d ", getpid());
    FILE *locks = fopen("/proc/locks", "r");
    if (!locks) { perror("/proc/locks"); exit(2); }
    int found = 0;
    while (fgets(line, sizeof line, locks)) {
        char *owner = strstr(line, want);
        unsigned major, minor;
        unsigned long inode;
        if (strstr(line, "POSIX") && owner &&
            sscanf(owner + strlen(want), "%x:%x:%lu", &major, &minor, &inode) == 3 && inode == ino)
            found = 1;
    }
    fclose(locks);
    return found;
}

/* Reads 12 x 64 KiB of `path` from its start, its pages evicted first. */
static void read_burst(const char *path) {
    static char buf[65536];
    int fd = open(path, O_RDONLY);
    if (fd < 0) { perror(path); exit(2); }
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    for (int i = 0; i < 12; i++)
        if (read(fd, buf, sizeof buf) <= 0) break;
    close(fd);
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: lockrace FILE ITERATIONS OTHER_FILE\n"); return 2; }
    const char *path = argv[1];
    int iterations = atoi(argv[2]), lost = 0;
    struct stat st;
    if (stat(path, &st)) { perror(path); return 2; }
    for (int it = 0; it < iterations; it++) {
        struct flock lock = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
        read_burst(path);
        int locked = open(path, O_RDONLY);
        if (locked < 0 || fcntl(locked, F_SETLK, &lock)) { perror("lock"); return 2; }
        usleep((it % 50) * 20);
        read_burst(argv[3]); /* another stream's end */
        usleep(1000);
        if (!held(st.st_ino)) {
            lost++;
            fprintf(stderr, "iteration %d: lock lost\n", it);
        }
        close(locked);
    }
    printf("%d of %d iterations lost the lock\n", lost, iterations);
    return lost ? 1 : 0;
}

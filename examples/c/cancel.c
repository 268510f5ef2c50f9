/* cancel.c - pthread_cancel of a thread in an interposed read, in a round or in a callback, cancels only it. */
/*
 * read() and pread() are cancellation points: a thread cancelled while in one (or arriving at one with a
 * cancellation pending) is unwound by glibc with a forced unwind, through every frame on its stack.  With
 * libprefetch loaded those frames include the interposer's and, for tracked reads, the library's own, and the
 * library's work itself calls cancellation points (reading /proc, the callback's reads).  The application must
 * see what it sees without the library: the thread is cancelled, pthread_join returns PTHREAD_CANCELED, and the
 * process lives on with the library still working.  Three cases:
 *   1. a thread blocked in read() on an empty pipe (a descriptor with no region) is cancelled;
 *   2. a thread arrives with a cancellation pending at a tracked pread that starts a prefetching round;
 *   3. a thread is cancelled while its read is inside the client's callback, which blocks reading a pipe until
 *      the main thread writes to it.
 * After each, the main thread reads the registered region and checks the bytes and that the client still works.
 *
 * Usage: cancel FILE [SIZE_MIB]   (default 32 MiB)
 */
#define _GNU_SOURCE
#include "common.h"
#include "libprefetch.h"
#include <pthread.h>
#include <time.h>

static int fd, pipe_fds[2];
static client_t client;
static pthread_barrier_t barrier;
static volatile int in_callback;

/* Case 3's callback: blocks on the pipe until the main thread writes to it. */
static void block_on_pipe(void *arg, int lastMarkedFD, loff_t lastMarkedOffset, int requestedFD,
                          loff_t requestedOffset)
{
    char byte;
    (void)arg, (void)lastMarkedFD, (void)lastMarkedOffset, (void)requestedFD, (void)requestedOffset;
    if (!*(int *)arg)
        return;
    in_callback = 1;
    (void)!read(pipe_fds[0], &byte, 1);
}

/* Case 1: blocks in read() on the empty pipe. */
static void *read_pipe(void *arg)
{
    char byte;
    (void)arg;
    (void)!read(pipe_fds[0], &byte, 1);
    return NULL;
}

/* Case 2: makes a tracked pread (off the empty list: it calls back and starts a round) with a cancel pending. */
static void *read_with_cancel_pending(void *arg)
{
    unsigned char buf[PAGE_SIZE_BYTES];
    (void)arg;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    pthread_barrier_wait(&barrier); /* the main thread cancels now */
    pthread_barrier_wait(&barrier);
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
    (void)!pread(fd, buf, sizeof buf, 5 * PAGE_SIZE_BYTES);
    return NULL;
}

/* Case 3: a tracked pread whose callback blocks. */
static void *read_into_callback(void *arg)
{
    unsigned char buf[PAGE_SIZE_BYTES];
    (void)arg;
    (void)!pread(fd, buf, sizeof buf, 9 * PAGE_SIZE_BYTES);
    return NULL;
}

/* Joins t and checks that it was cancelled. */
static void expect_cancelled(pthread_t t, const char *what)
{
    void *ret;
    if (pthread_join(t, &ret) != 0 || ret != PTHREAD_CANCELED)
        fail("%s: the thread was not cancelled", what);
    printf("%-58s cancelled\n", what);
}

/* The main thread's reads still return the file's bytes and the client still answers. */
static void check_still_working(const char *after)
{
    unsigned char buf[PAGE_SIZE_BYTES];
    struct pf_stats st;
    for (uint64_t page = 100; page < 110; page++)
        if (pread(fd, buf, sizeof buf, (off_t)(page * PAGE_SIZE_BYTES)) != (ssize_t)sizeof buf ||
            pattern_mismatch(buf, page * PAGE_SIZE_BYTES, sizeof buf) >= 0)
            fail("after %s: wrong bytes", after);
    if (pf_get_stats(client, &st) != 0)
        fail("after %s: pf_get_stats: %s", after, strerror(errno));
}

int main(int argc, char **argv)
{
    static int callback_blocks;
    pthread_t t;
    struct timespec ms = {0, 1000000};
    if (argc < 2)
        fail("usage: %s FILE [SIZE_MIB]", argv[0]);
    setvbuf(stdout, NULL, _IONBF, 0); /* each case's line survives an abort in the next */
    uint64_t size = size_arg(argc, argv, 2, 32);
    fd = pattern_open(argv[1], size);
    if (pipe(pipe_fds) != 0 || pthread_barrier_init(&barrier, NULL, 2) != 0)
        fail("pipe: %s", strerror(errno));
    client = register_client(block_on_pipe, &callback_blocks);
    if (client == NULL || register_region(client, fd, 0, (loff_t)size) == NULL)
        fail("registering: %s", strerror(errno));

    pthread_create(&t, NULL, read_pipe, NULL);
    nanosleep(&(struct timespec){0, 50000000}, NULL);
    pthread_cancel(t);
    expect_cancelled(t, "1. blocked in read() of a pipe");
    check_still_working("case 1");

    pthread_create(&t, NULL, read_with_cancel_pending, NULL);
    pthread_barrier_wait(&barrier);
    pthread_cancel(t);
    pthread_barrier_wait(&barrier);
    expect_cancelled(t, "2. cancel pending at a tracked read that starts a round");
    check_still_working("case 2");

    callback_blocks = 1;
    pthread_create(&t, NULL, read_into_callback, NULL);
    while (!in_callback)
        nanosleep(&ms, NULL);
    pthread_cancel(t);
    nanosleep(&(struct timespec){0, 20000000}, NULL);
    (void)!write(pipe_fds[1], "x", 1);
    expect_cancelled(t, "3. cancelled inside the callback");
    callback_blocks = 0;
    check_still_working("case 3");

    if (unregister_client(client) != 0)
        fail("unregister_client: %s", strerror(errno));
    printf("PASS\n");
    return EXIT_PASS;
}

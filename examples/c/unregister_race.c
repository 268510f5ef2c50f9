/* unregister_race.c - no callback runs after pf_unregister_client returns, though other threads keep reading. */
/*
 * The header promises: "Unregistering a client removes its regions and waits for a callback running in another
 * thread; no callback runs after it returns."  So an application may free the callback's argument right after
 * unregistering.  Each of ROUNDS rounds registers a client whose argument is a fresh object marked ALIVE, starts
 * READERS threads that read the region off the (empty) list, so that every read calls back, lets them run for a
 * moment, unregisters the client from the main thread and at once marks the argument DEAD.  The callback checks
 * the mark when it starts and again after a short pause; seeing DEAD means it ran after unregistering returned
 * (a use-after-free in a real program; here the object is freed only after the readers stopped).
 *
 * Usage: unregister_race FILE [SIZE_MIB]   (default 32 MiB)
 */
#define _GNU_SOURCE
#include "common.h"
#include "libprefetch.h"
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define ROUNDS 60
#define READERS 2
#define ALIVE 0x1ee7
#define DEAD 0xdead

/* The callback's argument, freed by the application once the client is gone. */
struct target {
    atomic_int mark;
};

static atomic_long violations, callbacks;
static atomic_int stop;
static int fd;
static uint64_t npages;

/* Sleeps about `us` microseconds. */
static void pause_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/* Checks that its argument is still alive, before and after a pause. */
static void check_alive(void *arg, int lastMarkedFD, loff_t lastMarkedOffset, int requestedFD,
                        loff_t requestedOffset)
{
    struct target *t = arg;
    (void)lastMarkedFD, (void)lastMarkedOffset, (void)requestedFD, (void)requestedOffset;
    atomic_fetch_add(&callbacks, 1);
    if (atomic_load(&t->mark) != ALIVE)
        atomic_fetch_add(&violations, 1);
    pause_us(200);
    if (atomic_load(&t->mark) != ALIVE)
        atomic_fetch_add(&violations, 1);
}

/* Reads random pages until told to stop; each read is off the list, so it calls back while registered. */
static void *reader(void *arg)
{
    uint64_t seed = (uint64_t)(uintptr_t)arg;
    unsigned char buf[PAGE_SIZE_BYTES];
    while (!atomic_load(&stop)) {
        uint64_t page = rng_below(&seed, npages);
        if (pread(fd, buf, sizeof buf, (off_t)(page * PAGE_SIZE_BYTES)) != (ssize_t)sizeof buf ||
            pattern_mismatch(buf, page * PAGE_SIZE_BYTES, sizeof buf) >= 0)
            fail("wrong read of page %llu", (unsigned long long)page);
    }
    return NULL;
}

/* One round: register, read from READERS threads, unregister, mark DEAD, stop the readers, free. */
static void one_round(int round, uint64_t size)
{
    struct target *t = malloc(sizeof *t);
    pthread_t threads[READERS];
    atomic_store(&t->mark, ALIVE);
    client_t c = register_client(check_alive, t);
    if (c == NULL || register_region(c, fd, 0, (loff_t)size) == NULL)
        fail("registering: %s", strerror(errno));
    atomic_store(&stop, 0);
    for (int i = 0; i < READERS; i++)
        if (pthread_create(&threads[i], NULL, reader, (void *)(uintptr_t)(round * READERS + i + 1)) != 0)
            fail("pthread_create");
    pause_us(500 + 100 * (round % 20));
    if (unregister_client(c) != 0)
        fail("unregister_client: %s", strerror(errno));
    atomic_store(&t->mark, DEAD);
    pause_us(1000);
    atomic_store(&stop, 1);
    for (int i = 0; i < READERS; i++)
        pthread_join(threads[i], NULL);
    free(t);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        fail("usage: %s FILE [SIZE_MIB]", argv[0]);
    uint64_t size = size_arg(argc, argv, 2, 32);
    fd = pattern_open(argv[1], size);
    npages = size / PAGE_SIZE_BYTES;
    for (int round = 0; round < ROUNDS; round++)
        one_round(round, size);
    printf("rounds %d callbacks %ld ran after unregistering: %ld\n", ROUNDS, atomic_load(&callbacks),
           atomic_load(&violations));
    if (atomic_load(&callbacks) == 0)
        fail("no callback ran: the test did not exercise anything");
    if (atomic_load(&violations) != 0)
        fail("%ld callback checks saw their argument after pf_unregister_client had returned",
             atomic_load(&violations));
    printf("PASS\n");
    return EXIT_PASS;
}

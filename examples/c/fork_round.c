/* fork_round.c - forks while a prefetch round is in flight; parent and children read correct bytes, none hangs. */
/*
 * Checks fork safety (the API is thread-safe and fork-safe).  The parent registers the file and a callback, hands
 * over a list with PF_DONE and forks at once (a round just started); the child reads through the inherited,
 * registered descriptor and exits.  Then a worker thread reads the file in random order again and again, evicting
 * it between passes so that every pass runs prefetch rounds, while the main thread forks FORKS children at random
 * moments: if a fork lands while the worker holds one of the library's locks, a child that inherited the lock
 * locked would hang in its first tracked read.  Each child checks its bytes, checks that the parent's client is
 * inert in the child (libprefetch's fork rule: a child starts with no clients) and that a client of its own
 * tracks its reads, and exits.  The parent waits at most CHILD_TIMEOUT_S seconds for each (a deadlock detector,
 * not a performance limit) and kills a child that hangs.
 *
 * Usage: fork_round FILE [SIZE_MIB]   (default 32 MiB)
 */
#define _GNU_SOURCE
#include "common.h"
#include "libprefetch.h"
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>

#define NPAGES_READ 2000
#define PLAN 512
#define FORKS 100
#define CHILD_READS 300
#define CHILD_TIMEOUT_S 30

/* The application's state, shared with the callback. */
struct app {
    client_t client;
    int fd;
    uint64_t npages;
    uint64_t pages[NPAGES_READ];
    size_t pos;
    atomic_int stop;
    atomic_int errors;
};

static struct app app;

/* Hands over the next PLAN pages from the current position (or from the start in a child). */
static void plan(void *arg, int lastMarkedFD, loff_t lastMarkedOffset, int requestedFD, loff_t requestedOffset)
{
    struct app *a = arg;
    struct access_entry e[PLAN];
    size_t n = 0;
    (void)lastMarkedFD, (void)lastMarkedOffset, (void)requestedFD, (void)requestedOffset;
    for (size_t i = a->pos; i < NPAGES_READ && n < PLAN; i++, n++) {
        e[n].page_offset = (loff_t)(a->pages[i] * PAGE_SIZE_BYTES);
        e[n].fd = a->fd;
        e[n].marked = false;
    }
    if (request_prefetching(a->client, e, n, PF_SET | PF_DONE) < 0)
        atomic_fetch_add(&a->errors, 1);
}

/* Reads page p with pread and checks it; returns 0 if right. */
static int read_page(int fd, uint64_t p)
{
    unsigned char buf[PAGE_SIZE_BYTES];
    ssize_t r = pread(fd, buf, sizeof buf, (off_t)(p * PAGE_SIZE_BYTES));
    return r == (ssize_t)sizeof buf && pattern_mismatch(buf, p * PAGE_SIZE_BYTES, sizeof buf) < 0 ? 0 : -1;
}

/* The child: reads CHILD_READS pages of the access order, from where the parent was, through the inherited
 * registered descriptor; the parent's client must be inert here (its calls fail, they do not hang), and a client
 * of the child's own must work.  Exits 0 if all went right. */
static void child(void)
{
    int bad = 0;
    size_t start = app.pos;
    for (size_t i = 0; i < CHILD_READS; i++)
        bad |= read_page(app.fd, app.pages[(start + i) % NPAGES_READ]);
    if (bad)
        fprintf(stderr, "child %d: wrong bytes\n", (int)getpid());
    struct pf_stats st;
    if (pf_get_stats(app.client, &st) != -1) {
        fprintf(stderr, "child %d: the parent's client still answers after fork\n", (int)getpid());
        bad = 1;
    }
    app.client = register_client(plan, &app);
    loff_t size = (loff_t)(app.npages * PAGE_SIZE_BYTES);
    if (app.client == NULL || register_region(app.client, app.fd, 0, size) == NULL) {
        fprintf(stderr, "child %d: registering its own client: %s\n", (int)getpid(), strerror(errno));
        _exit(EXIT_FAIL);
    }
    for (size_t i = 0; i < CHILD_READS; i++)
        bad |= read_page(app.fd, app.pages[(start + i) % NPAGES_READ]);
    if (pf_get_stats(app.client, &st) != 0 || st.tracked_reads != CHILD_READS) {
        fprintf(stderr, "child %d: its own client tracked %llu of %d reads\n", (int)getpid(),
                (unsigned long long)st.tracked_reads, CHILD_READS);
        bad = 1;
    }
    _exit(bad ? EXIT_FAIL : EXIT_PASS);
}

/* Waits for the child, killing it after CHILD_TIMEOUT_S seconds; returns 0 if it exited 0. */
static int wait_child(pid_t pid)
{
    int status;
    for (int waited_ms = 0; waited_ms < CHILD_TIMEOUT_S * 1000; waited_ms++) {
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid)
            return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
        if (done < 0)
            return -1;
        usleep(1000);
    }
    fprintf(stderr, "child %d did not finish in %d s: killed (deadlock after fork?)\n", (int)pid, CHILD_TIMEOUT_S);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

/* Forks a child that reads and exits; returns 0 if it passed. */
static int fork_and_check(void)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        fail("fork: %s", strerror(errno));
    if (pid == 0)
        child();
    return wait_child(pid);
}

/* The worker: passes over the access order on a cold file until told to stop (at least one pass). */
static void *worker(void *arg)
{
    (void)arg;
    do {
        evict_file(app.fd);
        for (app.pos = 0; app.pos < NPAGES_READ; app.pos++)
            if (read_page(app.fd, app.pages[app.pos]) != 0)
                atomic_fetch_add(&app.errors, 1);
    } while (!atomic_load(&app.stop));
    return NULL;
}

/* Sleeps a pseudo-random 0-10 ms. */
static void jitter(uint64_t *seed)
{
    struct timespec ts = {0, (long)rng_below(seed, 10 * 1000 * 1000)};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        fail("usage: %s FILE [SIZE_MIB]", argv[0]);
    uint64_t size = size_arg(argc, argv, 2, 32), seed = 99;
    app.fd = pattern_open(argv[1], size);
    app.npages = size / PAGE_SIZE_BYTES;
    for (size_t i = 0; i < NPAGES_READ; i++)
        app.pages[i] = rng_below(&seed, app.npages);
    app.client = register_client(plan, &app);
    if (app.client == NULL || register_region(app.client, app.fd, 0, (loff_t)size) == NULL)
        fail("registering: %s", strerror(errno));

    int failed = 0;
    plan(&app, -1, -1, app.fd, 0);
    failed += fork_and_check() != 0;

    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        fail("pthread_create");
    for (int i = 0; i < FORKS; i++) {
        jitter(&seed);
        failed += fork_and_check() != 0;
    }
    atomic_store(&app.stop, 1);
    pthread_join(t, NULL);

    struct pf_stats st;
    if (pf_get_stats(app.client, &st) != 0)
        fail("pf_get_stats: %s", strerror(errno));
    printf("children %d failed %d; parent errors %d; parent rounds %llu callbacks %llu\n", FORKS + 1, failed,
           atomic_load(&app.errors), (unsigned long long)st.rounds, (unsigned long long)st.callbacks);
    if (failed != 0 || atomic_load(&app.errors) != 0)
        fail("%d children failed, %d parent errors", failed, atomic_load(&app.errors));
    if (st.rounds < 2)
        fail("only %llu prefetch rounds ran: the forks did not overlap prefetching", (unsigned long long)st.rounds);
    printf("PASS\n");
    return EXIT_PASS;
}

/* api_errors.c - each pf_ function's failures: -1 or NULL with the documented errno; errno kept on success. */
/*
 * Checks the header's error convention ("on failure a function returns -1 (or NULL) and sets errno; on success
 * errno is left unchanged") for every function, with the errno values docs/api.md lists under ERRORS: stale and
 * NULL handles, closed descriptors, empty regions, negative offsets, unknown or conflicting PF_ modes, NULL
 * arrays, unbalanced pf_unignore_accesses.  Also the non-error corner cases docs/api.md states: a NULL callback,
 * a zero-length request with a NULL array, a mode with no list operation (appends), nested ignores.
 *
 * Usage: api_errors FILE [SIZE_MIB]   (default 32 MiB)
 */
#define _GNU_SOURCE
#define LIBPREFETCH_NO_PAPER_NAMES
#include "common.h"
#include "libprefetch.h"

#define SENTINEL 4242

static int failures;

/* Records whether a call that must fail did so with want_errno (ret_failed says it returned -1 / NULL). */
static void expect_error(const char *what, int ret_failed, int want_errno)
{
    int err = errno;
    int ok = ret_failed && err == want_errno;
    printf("%-58s -> %s errno %d (%s), want %d: %s\n", what, ret_failed ? "failed" : "SUCCEEDED", err,
           strerror(err), want_errno, ok ? "ok" : "WRONG");
    failures += !ok;
    errno = SENTINEL;
}

/* Records whether a call that must succeed did so without touching errno. */
static void expect_success(const char *what, int ret_ok)
{
    int ok = ret_ok && errno == SENTINEL;
    printf("%-58s -> %s, errno %s: %s\n", what, ret_ok ? "succeeded" : "FAILED",
           errno == SENTINEL ? "kept" : strerror(errno), ok ? "ok" : "WRONG");
    failures += !ok;
    errno = SENTINEL;
}

/* A callback that never plans. */
static void quiet(void *arg, int lastMarkedFD, loff_t lastMarkedOffset, int requestedFD, loff_t requestedOffset)
{
    (void)arg, (void)lastMarkedFD, (void)lastMarkedOffset, (void)requestedFD, (void)requestedOffset;
}

/* A live handle of one kind passed where the other kind is expected: EINVAL, never used as that kind. */
static void check_handle_kinds(pf_client_t c, pf_region_t r)
{
    struct pf_stats st;
    pf_client_t region_as_client = (pf_client_t)(void *)r;
    pf_region_t client_as_region = (pf_region_t)(void *)c;
    expect_error("pf_register_region(region handle as client)",
                 pf_register_region(region_as_client, 0, 0, 4096) == NULL, EINVAL);
    expect_error("pf_request_prefetching(region handle as client)",
                 pf_request_prefetching(region_as_client, NULL, 0, PF_DONE) == -1, EINVAL);
    expect_error("pf_ignore_accesses(region handle as client)", pf_ignore_accesses(region_as_client) == -1, EINVAL);
    expect_error("pf_get_stats(region handle as client)", pf_get_stats(region_as_client, &st) == -1, EINVAL);
    expect_error("pf_unregister_region(region handle as client)", pf_unregister_region(region_as_client, r) == -1,
                 EINVAL);
    expect_error("pf_unregister_region(client handle as region)", pf_unregister_region(c, client_as_region) == -1,
                 EINVAL);
    expect_error("pf_unregister_client(region handle)", pf_unregister_client(region_as_client) == -1, EINVAL);
}

/* Failures of the client and region functions. */
static void check_registration(int fd, pf_client_t c)
{
    int closed = dup(fd);
    close(closed);
    expect_error("pf_unregister_client(NULL)", pf_unregister_client(NULL) == -1, EINVAL);
    expect_error("pf_register_region(NULL client)", pf_register_region(NULL, fd, 0, 4096) == NULL, EINVAL);
    expect_error("pf_register_region(closed fd)", pf_register_region(c, closed, 0, 4096) == NULL, EBADF);
    expect_error("pf_register_region(fd -1)", pf_register_region(c, -1, 0, 4096) == NULL, EBADF);
    expect_error("pf_register_region(start == end)", pf_register_region(c, fd, 4096, 4096) == NULL, EINVAL);
    expect_error("pf_register_region(start > end)", pf_register_region(c, fd, 8192, 4096) == NULL, EINVAL);
    expect_error("pf_register_region(negative start)", pf_register_region(c, fd, -4096, 4096) == NULL, EINVAL);
    pf_region_t r = pf_register_region(c, fd, 0, 4096);
    expect_success("pf_register_region(valid)", r != NULL);
    expect_error("pf_unregister_region(NULL client)", pf_unregister_region(NULL, r) == -1, EINVAL);
    expect_error("pf_unregister_region(NULL region)", pf_unregister_region(c, NULL) == -1, EINVAL);
    check_handle_kinds(c, r);
    pf_client_t other = pf_register_client(quiet, NULL);
    expect_error("pf_unregister_region(another client's region)", pf_unregister_region(other, r) == -1, EINVAL);
    expect_success("pf_unregister_region(valid)", pf_unregister_region(c, r) == 0);
    expect_error("pf_unregister_region(twice)", pf_unregister_region(c, r) == -1, EINVAL);
    expect_success("pf_unregister_client(other)", pf_unregister_client(other) == 0);
    expect_error("pf_unregister_client(twice)", pf_unregister_client(other) == -1, EINVAL);
}

/* Failures and corner cases of pf_request_prefetching. */
static void check_requests(int fd, pf_client_t c)
{
    struct access_entry e[2] = {{{0}, fd, {false}}, {{4096}, fd, {true}}};
    struct access_entry negative = {{-4096}, fd, {false}};
    struct access_entry no_fd = {{0}, -1, {false}};
    struct pf_stats st;
    expect_error("pf_request_prefetching(NULL client)", pf_request_prefetching(NULL, e, 2, PF_SET) == -1, EINVAL);
    expect_error("pf_request_prefetching(type 64)", pf_request_prefetching(c, e, 2, 64) == -1, EINVAL);
    expect_error("pf_request_prefetching(PF_SET | PF_APPEND)",
                 pf_request_prefetching(c, e, 2, PF_SET | PF_APPEND) == -1, EINVAL);
    expect_error("pf_request_prefetching(NULL array, n 2)", pf_request_prefetching(c, NULL, 2, PF_SET) == -1,
                 EFAULT);
    expect_error("pf_request_prefetching(negative offset)", pf_request_prefetching(c, &negative, 1, PF_SET) == -1,
                 EINVAL);
    expect_error("pf_request_prefetching(fd -1)", pf_request_prefetching(c, &no_fd, 1, PF_SET) == -1, EBADF);
    expect_success("pf_request_prefetching(NULL array, n 0, PF_SET)", pf_request_prefetching(c, NULL, 0, PF_SET) == 0);
    expect_success("pf_request_prefetching(2 entries, PF_SET)", pf_request_prefetching(c, e, 2, PF_SET) == 2);
    expect_success("pf_request_prefetching(2 entries, type 0: appends)", pf_request_prefetching(c, e, 2, 0) == 2);
    expect_success("pf_get_stats: list_length 4", pf_get_stats(c, &st) == 0 && st.list_length == 4);
    expect_success("pf_request_prefetching(1 entry, PF_SET | PF_DONE)",
                   pf_request_prefetching(c, e, 1, PF_SET | PF_DONE) == 1);
    expect_success("pf_get_stats: list_length 1, one round", pf_get_stats(c, &st) == 0 && st.list_length == 1 &&
                                                               st.rounds == 1);
}

/* Failures of ignore/unignore and pf_get_stats, and nesting. */
static void check_ignore_and_stats(pf_client_t c)
{
    struct pf_stats st;
    expect_error("pf_unignore_accesses(without ignore)", pf_unignore_accesses(c) == -1, EINVAL);
    expect_error("pf_ignore_accesses(NULL)", pf_ignore_accesses(NULL) == -1, EINVAL);
    expect_error("pf_unignore_accesses(NULL)", pf_unignore_accesses(NULL) == -1, EINVAL);
    expect_success("pf_ignore_accesses twice (nests)", pf_ignore_accesses(c) == 0 && pf_ignore_accesses(c) == 0);
    expect_success("pf_unignore_accesses twice", pf_unignore_accesses(c) == 0 && pf_unignore_accesses(c) == 0);
    expect_error("pf_unignore_accesses(a third time)", pf_unignore_accesses(c) == -1, EINVAL);
    expect_error("pf_get_stats(NULL client)", pf_get_stats(NULL, &st) == -1, EINVAL);
    expect_error("pf_get_stats(NULL out)", pf_get_stats(c, NULL) == -1, EFAULT);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        fail("usage: %s FILE [SIZE_MIB]", argv[0]);
    int fd = pattern_open(argv[1], size_arg(argc, argv, 2, 32));
    errno = SENTINEL;
    pf_client_t c = pf_register_client(quiet, NULL);
    expect_success("pf_register_client(callback)", c != NULL);
    pf_client_t no_callback = pf_register_client(NULL, NULL);
    expect_success("pf_register_client(NULL callback)", no_callback != NULL);
    expect_success("pf_unregister_client(NULL callback client)", pf_unregister_client(no_callback) == 0);
    check_registration(fd, c);
    check_requests(fd, c);
    check_ignore_and_stats(c);
    expect_success("pf_unregister_client", pf_unregister_client(c) == 0);
    expect_error("pf_get_stats(unregistered client)", pf_get_stats(c, &(struct pf_stats){0}) == -1, EINVAL);
    if (failures != 0)
        fail("%d calls broke the error convention (see WRONG above)", failures);
    printf("PASS\n");
    return EXIT_PASS;
}

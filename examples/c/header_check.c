/* header_check.c - libprefetch.h compiles alone under strict C11 and C++ (built with -std=c11 -pedantic, g++). */
/*
 * Nothing to run: the Makefile compiles this file with -std=c11 -pedantic -Werror (where glibc hides loff_t)
 * and the test suite also compiles it as C++17, as a program embedding the header would.
 */
#include "libprefetch.h"

/* Uses both spellings of the entry's fields and every paper name, so that none can silently disappear. */
ssize_t header_check(client_t c, int fd)
{
    struct access_entry e[2];
    e[0].pageOffset = 0;
    e[0].fd = fd;
    e[0].mark = true;
    e[1].page_offset = 4096;
    e[1].fd = fd;
    e[1].marked = false;
    region_t r = register_region(c, fd, 0, 8192);
    ssize_t n = request_prefetching(c, e, 2, PF_SET | PF_DONE);
    (void)!ignore_accesses(c);
    (void)!unignore_accesses(c);
    (void)!unregister_region(c, r);
    (void)!unregister_client(c);
    pf_note_read(fd, 0, 4096);
    return n + (register_client((callback_t)0, (void *)0) != 0);
}

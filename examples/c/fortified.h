/* fortified.h - read() and pread() built with -O2 -D_FORTIFY_SOURCE=2 (fortified.c): __read_chk, __pread_chk. */
#ifndef EXAMPLES_FORTIFIED_H
#define EXAMPLES_FORTIFIED_H

#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* The longest fortified read (the fortified reads go through a buffer of this size). */
#define FORTIFIED_MAX_LEN 70000

/* read() compiled with _FORTIFY_SOURCE=2, so it calls __read_chk; n <= FORTIFIED_MAX_LEN. */
ssize_t chk_read(int fd, unsigned char *out, size_t n);

/* pread() compiled with _FORTIFY_SOURCE=2, so it calls __pread_chk; n <= FORTIFIED_MAX_LEN. */
ssize_t chk_pread(int fd, unsigned char *out, size_t n, off_t off);

#endif /* EXAMPLES_FORTIFIED_H */

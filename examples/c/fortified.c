/* fortified.c - read() and pread() built with -O2 -D_FORTIFY_SOURCE=2, so they call __read_chk and __pread_chk. */
/*
 * Used by identity.c and intercept.c.  With _FORTIFY_SOURCE=2 and a destination whose size the compiler knows,
 * glibc turns read() into __read_chk() and pread() into __pread_chk(), which libprefetch interposes too.  The
 * reads land in a local buffer of known size and are copied out whole, poison included, so the caller sees the
 * same bytes as from a plain read.
 */
#include "fortified.h"

#if !defined(_FORTIFY_SOURCE) || _FORTIFY_SOURCE < 2 || !defined(__OPTIMIZE__)
#error "fortified.c must be built with -O2 -D_FORTIFY_SOURCE=2"
#endif

ssize_t chk_read(int fd, unsigned char *out, size_t n)
{
    unsigned char buf[FORTIFIED_MAX_LEN];
    memcpy(buf, out, n);
    ssize_t r = read(fd, buf, n);
    memcpy(out, buf, n);
    return r;
}

ssize_t chk_pread(int fd, unsigned char *out, size_t n, off_t off)
{
    unsigned char buf[FORTIFIED_MAX_LEN];
    memcpy(buf, out, n);
    ssize_t r = pread(fd, buf, n, off);
    memcpy(out, buf, n);
    return r;
}

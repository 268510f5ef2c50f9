/* lfs.c - reads built with -D_FILE_OFFSET_BITS=64 -O2 -D_FORTIFY_SOURCE=2, so glibc binds them to its 64 symbols. */
/*
 * Autoconf's AC_SYS_LARGEFILE, meson and most distribution builds compile with -D_FILE_OFFSET_BITS=64; glibc then
 * redirects pread to pread64 (or __pread64_chk when fortified), preadv to preadv64 and preadv2 to preadv64v2.
 * intercept.c calls these to check that libprefetch sees reads made through those symbols too.
 */
#define _GNU_SOURCE
#include "lfs.h"
#include <string.h>
#include <unistd.h>

#if !defined(_FILE_OFFSET_BITS) || _FILE_OFFSET_BITS != 64 || !defined(_FORTIFY_SOURCE) || !defined(__OPTIMIZE__)
#error "lfs.c must be built with -D_FILE_OFFSET_BITS=64 -O2 -D_FORTIFY_SOURCE=2"
#endif

ssize_t lfs_pread_chk(int fd, unsigned char *out, size_t n, long long off)
{
    unsigned char buf[65536];
    ssize_t r = pread(fd, buf, n, (off_t)off);
    if (r > 0)
        memcpy(out, buf, (size_t)r);
    return r;
}

ssize_t lfs_preadv(int fd, const struct iovec *iov, int cnt, long long off)
{
    return preadv(fd, iov, cnt, (off_t)off);
}

ssize_t lfs_preadv2(int fd, const struct iovec *iov, int cnt, long long off, int flags)
{
    return preadv2(fd, iov, cnt, (off_t)off, flags);
}

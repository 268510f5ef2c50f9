/* lfs.h - reads built with -D_FILE_OFFSET_BITS=64 -O2 -D_FORTIFY_SOURCE=2 (lfs.c), as most distribution builds are. */
#ifndef EXAMPLES_LFS_H
#define EXAMPLES_LFS_H

#include <sys/types.h>
#include <sys/uio.h>

/* pread() in a large-file fortified build: glibc binds it to __pread64_chk; n <= 65536. */
ssize_t lfs_pread_chk(int fd, unsigned char *out, size_t n, long long off);

/* preadv() in a large-file build: glibc binds it to preadv64. */
ssize_t lfs_preadv(int fd, const struct iovec *iov, int cnt, long long off);

/* preadv2() in a large-file build: glibc binds it to preadv64v2. */
ssize_t lfs_preadv2(int fd, const struct iovec *iov, int cnt, long long off, int flags);

#endif /* EXAMPLES_LFS_H */

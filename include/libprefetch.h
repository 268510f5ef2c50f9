/*
 * libprefetch.h - application-directed prefetching for Linux.
 *
 * The interface of "Application-directed prefetching" (libprefetch, USENIX
 * ATC 2009), section 4 and Figure 6: an application registers a client with
 * a callback, declares the file regions whose reads libprefetch should track,
 * and hands libprefetch its future reads as an access list.  libprefetch
 * prefetches as much of the list as memory allows, in file-offset (C-LOOK)
 * order, and calls the callback from inside read()/pread()/readv() when the
 * list runs out or the application strays from it.
 *
 * ERROR CONVENTION (every function below): on failure a function returns -1
 * (or NULL for the handle-returning ones) and sets errno; on success errno is
 * left unchanged.  No function ever changes the bytes or the errno that the
 * application's own read calls see.
 *
 * Offsets are in bytes.  A region covers [start, end).  Access-list offsets
 * are rounded down to the page that holds them.  A read is placed on the
 * list by the page holding its first byte; its further pages are consumed
 * only if they are the next entries (so one entry per multi-page record, as
 * in the paper's Figure 7, is enough).
 *
 * request_prefetching: `type` holds at most one of PF_APPEND, PF_SET,
 * PF_SET_FROM_MARK (none means append; two is EINVAL), optionally or-ed with
 * PF_DONE and PF_WHOLE_LIST.  Without PF_WHOLE_LIST the window starts at
 * 128 KiB and grows as the application consumes the list (so an abandoned
 * list, a LIMIT query's, costs little); with it, the window starts at 90% of
 * the memory available, as in the paper.  PF_SET keeps the position: the new list starts where the
 * application is.  PF_SET_FROM_MARK replaces what follows the last marked
 * entry passed (with no mark passed, what follows the position).  PF_DONE
 * from application code plans a prefetching round before returning; from a
 * callback, right after the callback returns.  The round's advice is issued
 * by a background thread while the application reads.  Entries are validated all or
 * nothing (fd < 0: EBADF, offset < 0: EINVAL); NULL with n > 0 is EFAULT.
 * Memory stays bounded by the list's capacity whatever n is: the return
 * value is short once the list is full.
 *
 * Callbacks may be NULL.  A client's callback never runs in two threads at
 * once: while one thread is in it, other threads' reads proceed without
 * calling back.  ignore_accesses is per client (not per thread) and nests;
 * an unbalanced unignore is EINVAL.  Unregistering a client removes its
 * regions and waits for a callback running in another thread; no callback
 * runs after it returns (except when unregistering from inside a callback:
 * then a callback already running in another thread may still finish).
 * Thread cancellation is held off while the library works inside a read or
 * an API call; a pending cancel acts at the application's read itself.
 *
 * Regions are keyed by descriptor number: unregister a region before
 * close()ing its descriptor (a reused number would be tracked as the old
 * region; bytes read stay right).
 *
 * fork(): a child starts with no clients; handles inherited from the parent
 * are unknown there and fail with EINVAL.
 *
 * ENVIRONMENT (docs/api.md, "Environment"): pf_register_client reads
 * LIBPREFETCH_INFILL, LIBPREFETCH_MAX_MEMORY, LIBPREFETCH_LIST_CAPACITY,
 * LIBPREFETCH_REVERSE_PASS, LIBPREFETCH_BACKGROUND_ADVICE,
 * LIBPREFETCH_START_WINDOW and LIBPREFETCH_SCHEDULE; a malformed value keeps
 * its default and is reported once on stderr. libprefetch.so, as it is
 * loaded, reads LIBPREFETCH_RECORD, LIBPREFETCH_RECORD_REREADS,
 * LIBPREFETCH_REPLAY, LIBPREFETCH_REPLAY_REPORT, LIBPREFETCH_COMPETITIVE,
 * LIBPREFETCH_CACHE_BUDGET,
 * LIBPREFETCH_CACHE_POLICY, LIBPREFETCH_CACHE_BUDGET_REPORT,
 * LIBPREFETCH_CACHE_WRITEBACK and LIBPREFETCH_NO_CHILDREN (set by prefetch run and prefetch record); the
 * SQLite extension reads PREFETCH_SQLITE_STATS and PREFETCH_SQLITE_SCAN.
 *
 * FUSE: a region on a FUSE file gets a private read-only descriptor of the
 * same file for the library's advice (FUSE drops advice through a descriptor
 * that has been read sequentially when its queue is congested).
 *
 * Linking with -lprefetch (or LD_PRELOAD=libprefetch.so) interposes read,
 * pread, pread64, readv, preadv, preadv64, preadv2, preadv64v2, __read_chk,
 * __pread_chk and __pread64_chk (the last three are what _FORTIFY_SOURCE and
 * _FILE_OFFSET_BITS=64 builds call); reads of descriptors with no registered
 * region pay one lookup.  It also interposes close, dup2 and dup3 (so that a
 * region whose descriptor is closed or replaced is retired at once), and on
 * glibc interposes fread, fread_unlocked, __fread_chk, __fread_unlocked_chk,
 * fgets, fgets_unlocked, __fgets_chk, __fgets_unlocked_chk, getline,
 * getdelim, __getdelim, fgetc, getc, _IO_getc, fgetc_unlocked, getc_unlocked,
 * __uflow and __underflow (stdio reads its file with glibc's internal read:
 * these tell the library of the read a call may make to refill its buffer).
 * It also interposes fclose (glibc closes the stream's descriptor with its
 * internal close, which the close interposer does not see).
 * For `prefetch record`, it interposes mmap, mmap64 and munmap (the
 * resident pages of a mapped file are recorded when it is unmapped);
 * anonymous mappings pass straight through.
 * For the page-cache budget (LIBPREFETCH_CACHE_BUDGET), it interposes write,
 * pwrite, pwrite64, writev, pwritev, pwritev64, pwritev2, pwritev64v2,
 * copy_file_range, sendfile, sendfile64, splice, fwrite, fwrite_unlocked,
 * fputs, fputs_unlocked, fputc, putc, _IO_putc, fputc_unlocked,
 * putc_unlocked, __overflow, lseek and lseek64 (the pages a program writes,
 * and those the kernel copies for it, count as its own; writes at the file
 * position are counted a batch at a time, and before the position moves;
 * characters written one at a time are counted as their stream's full
 * buffer is flushed); without a budget each costs one atomic load.
 *
 * The exported symbols carry the pf_ prefix.  The paper's own names
 * (register_client, request_prefetching, ...) are provided as static inline
 * wrappers unless LIBPREFETCH_NO_PAPER_NAMES is defined, so a program written
 * from Figures 6 and 7 compiles unchanged.
 */
#ifndef LIBPREFETCH_H
#define LIBPREFETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* loff_t is only declared by glibc in its default (GNU/BSD) modes; provide
 * it under strict -std=c11 too (a repeated identical typedef is valid C11). */
#if defined(__GLIBC__) && !defined(__USE_MISC)
typedef __loff_t loff_t;
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* request_prefetching modes (Figure 6).  PF_DONE may be or-ed with any. */
#define PF_APPEND 1        /* add the entries after the current list        */
#define PF_SET 2           /* replace the whole list                         */
#define PF_SET_FROM_MARK 4 /* replace the part after the last marked entry   */
#define PF_DONE 8          /* the list is complete: start prefetching now    */
#define PF_WHOLE_LIST 16   /* the application reads all of it: start at the
                              paper's window, 90% of memory, not small      */
#define PF_SHARED_EDGES 32 /* pages its reads begin or end inside are other
                              processes' too: leave them, do not drop them  */

/*
 * One future read.  Both spellings used by the paper are accepted:
 * Figure 6 names the fields pageOffset and mark, Figure 7 page_offset and
 * marked.  The offset is a byte offset (rounded down to its page).
 */
struct access_entry {
    union {
        loff_t pageOffset;
        loff_t page_offset;
    };
    int fd;
    union {
        bool mark;
        bool marked;
    };
};

/* Opaque handles. */
typedef struct pf_client *pf_client_t;
typedef struct pf_region *pf_region_t;

/*
 * Called from inside an intercepted read when libprefetch needs the access
 * list updated: arg is the pointer given to pf_register_client; the last
 * marked entry the application has passed (-1, -1 if none); the read that
 * triggered the call.  The callback may call pf_request_prefetching and may
 * read files (reads made from inside a callback are never tracked).
 */
typedef void (*pf_callback_t)(void *arg, int lastMarkedFD, loff_t lastMarkedOffset,
                              int requestedFD, loff_t requestedOffset);

/* Counters of one client, for benchmarks and debugging. */
struct pf_stats {
    uint64_t rounds;              /* prefetch rounds started                 */
    uint64_t callbacks;           /* callback invocations                    */
    uint64_t tracked_reads;       /* reads that fell in a registered region  */
    uint64_t divergences;         /* tracked reads not on the access list    */
    uint64_t misses;              /* tracked reads of non-resident pages     */
    uint64_t premature_evictions; /* prefetched pages gone before their use  */
    uint64_t pages_prefetched;    /* pages asked for with WILLNEED           */
    uint64_t pages_dropped;       /* pages released with DONTNEED            */
    uint64_t budget_bytes;        /* current reorder-buffer size (AIMD)      */
    uint64_t list_length;         /* entries on the access list now          */
    uint64_t pages_fetched;       /* advised pages not cached when advised   */
    uint64_t prefetched_used;     /* prefetched pages read while kept        */
    uint64_t prefetched_unused_dropped; /* prefetched pages dropped unread */
    uint64_t infill_pages;        /* gap pages advised as infill             */
};

pf_client_t pf_register_client(pf_callback_t cb, void *arg);
int pf_unregister_client(pf_client_t c);
pf_region_t pf_register_region(pf_client_t c, int fd, loff_t start, loff_t end);
int pf_unregister_region(pf_client_t c, pf_region_t r);
ssize_t pf_request_prefetching(pf_client_t c, const struct access_entry *a, size_t n,
                               int type);
int pf_ignore_accesses(pf_client_t c);
int pf_unignore_accesses(pf_client_t c);
int pf_get_stats(pf_client_t c, struct pf_stats *out);

/* Which libprefetch instance this copy of the library uses: the same number
 * in every copy that shares one (libprefetch.so, the SQLite extension, the
 * Python module; docs/api.md, "One libprefetch per process").  Never fails. */
uint64_t pf_instance_id(void);

/* Reports a read the interposers cannot see (io_uring, mmap, fread of a
 * stdio buffer, syscall()) before it is made; may run the callback and a
 * prefetching round.  Never fails, never changes errno. */
void pf_note_read(int fd, loff_t offset, size_t len);

#ifndef LIBPREFETCH_NO_PAPER_NAMES
typedef pf_client_t client_t;
typedef pf_region_t region_t;
typedef pf_callback_t callback_t;

static inline client_t register_client(callback_t cb, void *arg)
{
    return pf_register_client(cb, arg);
}
static inline int unregister_client(client_t c) { return pf_unregister_client(c); }
static inline region_t register_region(client_t c, int fd, loff_t start, loff_t end)
{
    return pf_register_region(c, fd, start, end);
}
static inline int unregister_region(client_t c, region_t r)
{
    return pf_unregister_region(c, r);
}
static inline ssize_t request_prefetching(client_t c, const struct access_entry *a,
                                          size_t n, int type)
{
    return pf_request_prefetching(c, a, n, type);
}
static inline int ignore_accesses(client_t c) { return pf_ignore_accesses(c); }
static inline int unignore_accesses(client_t c) { return pf_unignore_accesses(c); }
#endif

#ifdef __cplusplus
}
#endif

#endif /* LIBPREFETCH_H */

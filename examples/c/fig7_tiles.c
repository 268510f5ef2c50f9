/* fig7_tiles.c - Figure 7's callback almost verbatim: a tiled image read in column order (the GIMP case). */
/*
 * Follows the paper's section 4.3 and Figure 7 line by line (the same names: tileInfo_t, imageInfo_t,
 * getTileInfo, nextTile, lastTile, accessOrder, swap_offset, swap_file, BATCH_SIZE) and section 5.3: an image of
 * ROWS x COLS tiles of TILE_BYTES each, stored row-major in a swap file and read in column-major order, so each
 * read seeks.  The callback finds the application's position from the requested offset (Figure 7 line 4) and
 * hands over the tiles from there in access order, in batches, until the list is full or the image ends.
 * docs/api.md uses this program as its worked example.
 *
 * Mode "tile" lists one entry per tile, as Figure 7 does; mode "page" lists every page of every tile.  A tile is
 * read with one pread of TILE_BYTES, so it spans TILE_BYTES / 4096 pages.  Checks: every byte; the callback runs at
 * most MAX_CALLBACKS times (the whole image fits in one list, so one call suffices, plus one at the end).
 *
 * Deviations: Figure 7's loop stops at lastTile(tile), the last tile of the image, and does not add it; here
 * lastTile is "past the last tile", so the last tile is prefetched too.
 *
 * Usage: fig7_tiles FILE tile|page [SIZE_MIB]   (default 32 MiB)
 */
#define _GNU_SOURCE
#include "common.h"
#include "libprefetch.h"

#define BATCH_SIZE 256
#define TILE_BYTES (16 * 1024) /* a 64 x 64 RGBA tile, as GIMP's */
#define COLS 64
#define MAX_CALLBACKS 4

/* The image: its swap file, its size in tiles and the order the current operation visits them. */
typedef struct {
    int swap_file;
    long rows, cols;
    enum { ROW_MAJOR, COLUMN_MAJOR } accessOrder;
} imageInfo_t;

/* One tile: where it is in the image and in the swap file. */
typedef struct {
    imageInfo_t *imageInfo;
    long row, col;
    loff_t swap_offset;
} tileInfo_t;

/* What the callback gets as its void * argument. */
struct state {
    client_t client;
    imageInfo_t *img;
    tileInfo_t tile; /* storage for getTileInfo's answer */
    int entries_per_tile; /* 1 as in Figure 7, or one per page of the tile */
    unsigned long callbacks;
};

static struct state state_storage;

/* The tile holding byte reqOffset of the swap file. */
static tileInfo_t *getTileInfo(int reqFd, loff_t reqOffset)
{
    struct state *s = &state_storage;
    long index = (long)(reqOffset / TILE_BYTES);
    (void)reqFd;
    s->tile = (tileInfo_t){s->img, index / s->img->cols, index % s->img->cols, (loff_t)index * TILE_BYTES};
    return &s->tile;
}

/* The tile after `tile` in the given order; past the last one, row == rows. */
static tileInfo_t *nextTile(tileInfo_t *tile, int accessOrder)
{
    imageInfo_t *img = tile->imageInfo;
    if (accessOrder == COLUMN_MAJOR && ++tile->row == img->rows && ++tile->col < img->cols)
        tile->row = 0;
    else if (accessOrder == ROW_MAJOR && ++tile->col == img->cols) {
        tile->col = 0;
        tile->row++;
    }
    tile->swap_offset = (loff_t)(tile->row * img->cols + tile->col) * TILE_BYTES;
    return tile;
}

/* True once `tile` is past the last tile of the image. */
static int lastTile(const tileInfo_t *tile)
{
    return tile->row >= tile->imageInfo->rows;
}

/* Figure 7, with its line numbers; the inner loop adds the other pages of a tile in mode "page". */
static void callback(void *arg, int markFd, loff_t markOffset, int reqFd, loff_t reqOffset)
{
    struct state *state = arg;
    struct access_entry accesses[BATCH_SIZE];         /* 1 */
    int accepted, full, n = 0;                        /* 2 */
    int mode = PF_SET;                                /* 3 */
    tileInfo_t *tile = getTileInfo(reqFd, reqOffset); /* 4 */
    imageInfo_t *img = tile->imageInfo;               /* 5 */

    (void)markFd, (void)markOffset;
    state->callbacks++;
    for (; !lastTile(tile); tile = nextTile(tile, img->accessOrder)) { /* 6 */
        for (int page = 0; page < state->entries_per_tile; page++) {
            accesses[n].page_offset = tile->swap_offset + page * PAGE_SIZE_BYTES; /* 7 */
            accesses[n].fd = img->swap_file;                                      /* 8 */
            accesses[n++].marked = 0;                                             /* 9 */
            if (n == BATCH_SIZE) {                                                /* 10 */
                accepted = (int)request_prefetching(state->client, accesses, n, mode); /* 11 */
                full = (accepted < n);                                                 /* 12 */
                mode = PF_APPEND;                                                      /* 13 */
                n = 0;                                                                 /* 14 */
                if (full)                                                              /* 15 */
                    goto done; /* 16: Figure 7's break, out of both loops */
            }
        }
    }
done:
    request_prefetching(state->client, accesses, n, mode | PF_DONE); /* 18 */
}

/* Reads every tile once in column order, checking each; returns the number of reads. */
static long column_pass(imageInfo_t *img)
{
    static unsigned char buf[TILE_BYTES];
    long reads = 0;
    for (long col = 0; col < img->cols; col++)
        for (long row = 0; row < img->rows; row++, reads++) {
            off_t off = (off_t)(row * img->cols + col) * TILE_BYTES;
            if (pread(img->swap_file, buf, TILE_BYTES, off) != TILE_BYTES)
                fail("pread of tile (%ld, %ld): %s", row, col, strerror(errno));
            if (pattern_mismatch(buf, (uint64_t)off, TILE_BYTES) >= 0)
                fail("wrong bytes in tile (%ld, %ld)", row, col);
        }
    return reads;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[2], "tile") != 0 && strcmp(argv[2], "page") != 0))
        fail("usage: %s FILE tile|page [SIZE_MIB]", argv[0]);
    uint64_t size = size_arg(argc, argv, 3, 32);
    imageInfo_t img = {pattern_open(argv[1], size), (long)(size / TILE_BYTES / COLS), COLS, COLUMN_MAJOR};
    struct state *state = &state_storage;
    state->img = &img;
    state->entries_per_tile = strcmp(argv[2], "page") == 0 ? TILE_BYTES / PAGE_SIZE_BYTES : 1;
    state->client = register_client(callback, state);
    if (state->client == NULL || register_region(state->client, img.swap_file, 0, (loff_t)size) == NULL)
        fail("registering: %s", strerror(errno));

    long reads = column_pass(&img);
    struct pf_stats st;
    if (pf_get_stats(state->client, &st) != 0)
        fail("pf_get_stats: %s", strerror(errno));
    printf("%s entries: %ld tile reads, callbacks %lu, rounds %llu, divergences %llu, pages_prefetched %llu\n",
           argv[2], reads, state->callbacks, (unsigned long long)st.rounds, (unsigned long long)st.divergences,
           (unsigned long long)st.pages_prefetched);
    if (state->callbacks > MAX_CALLBACKS)
        fail("%lu callbacks for one pass over %ld tiles that fit in one list (at most %d expected)",
             state->callbacks, reads, MAX_CALLBACKS);
    if (unregister_client(state->client) != 0)
        fail("unregister_client: %s", strerror(errno));
    printf("PASS\n");
    return EXIT_PASS;
}

/* Internals of the store reader shared by reader.c (store, segments,
 * index, verify) and reader_rows.c (row groups: reading column blocks and
 * rows). Not installed. */
#ifndef BA_ARCHIVE_READER_INT_H
#define BA_ARCHIVE_READER_INT_H

#include <stddef.h>
#include <stdint.h>

#include "archive/archive.h"
#include "bitarc/store.h"

typedef struct colcache {
  int64_t group; /* -1: empty */
  int rc;
  int in_gbuf;          /* data points into the segment's group buffer */
  const uint8_t *data;  /* the payload: raw, or inside gbuf (uncompressed) */
  uint8_t *raw;
  size_t cap, len;
} colcache_t;

struct ba_segment {
  ba_store_t *store;
  char *name;
  int fd;
  uint64_t fsize;
  int open_rc;
  ba_seg_hdr_t h;
  ba_seg_footer_t f;
  int table_rc; /* 1 = not loaded */
  ba_group_ent_t *groups;
  /* Index directory (reader_dir.c): the block at dir_off, CRC-checked; an
   * attribute's entries are read (ATTRDIR: its DIRENT block) and checked
   * when first used. */
  int dir_rc;      /* 1 = not loaded */
  int dir_whole;   /* the whole directory in one IDXDIR block (before §7.3) */
  uint8_t *dir;    /* IDXDIR or ATTRDIR payload */
  size_t ndir;     /* its entries */
  uint64_t bm_end; /* bitmaps lie in [index_off, bm_end) */
  unsigned ev, el, ec; /* offsets of value, length, CRC in a 24-byte entry */
  int ar_rc[BA_ATTR_COUNT]; /* per attribute: 1 = not checked yet */
  const uint8_t *ar_ent[BA_ATTR_COUNT]; /* first entry (in dir or ar_buf) */
  uint32_t ar_n[BA_ATTR_COUNT];
  int32_t ar_at[BA_ATTR_COUNT]; /* ATTRDIR entry of the attribute, -1: none */
  uint8_t *ar_buf[BA_ATTR_COUNT]; /* ATTRDIR: the DIRENT block, header first */
  uint64_t ar_bm_off[BA_ATTR_COUNT], ar_bm_len[BA_ATTR_COUNT]; /* ATTRDIR: the attribute's bitmaps */
  uint8_t *bmbuf; /* scratch for one serialized bitmap */
  size_t bmcap;
  ba_idxz_t idxz; /* 3.2: decompressing bitmap records (idxz.c) */
  colcache_t cache[BA_NCOLS_MAX];
  uint8_t *cbuf;
  size_t ccap;
  uint8_t *gbuf; /* bytes of one row group read in few preads, at their
                    offsets relative to the group (read_group_cols) */
  size_t gcap;
  ba_record_t *recs; /* decoded group */
  int64_t recs_group;
  uint32_t recs_mask;  /* column ids decoded into recs */
  uint32_t recs_dirty; /* column ids whose fields may be non-zero in recs */
  ba_record_t *pick;   /* 3.0: the picked rows of one group (block_rows records) */
  uint32_t *pick_idx;  /* their row numbers inside the group */
  uint64_t *sumv;      /* reader_sums.c: first, packets, bytes of one group's rows, then their row list */
  uint64_t *fldv;      /* reader_fields.c: fldv_n vectors of block_rows values, then the row list */
  /* reader_hint.c: the batch of picked rows being read (the caller's array,
   * set only during ba_segment_read_rows/_fields) and its columns, to be
   * hinted at its first run not in the page cache; NULL: none or hinted. */
  const uint64_t *hint_rows;
  size_t hint_n;
  uint32_t hint_need;
  size_t fldv_n;
  unsigned ncols;      /* ba_seg_ncols(h.major) */
  /* Zone maps (zone.c), read on demand: the ZONEDIR payload, and per field
   * its min[ngroups] then max[ngroups]; state 0 = not read, 1 = read, < 0
   * the error (kept until released). */
  uint8_t *zdir;
  uint32_t nzdir;
  int zdir_state;
  uint64_t *zone[BA_ZF_COUNT];
  int zone_state[BA_ZF_COUNT];
};

struct ba_store {
  char *dir;
  int dirfd;
  ba_segment_t **segs;
  size_t n, cap;
  char errmsg[512];
};

/* Detail of the last error into the store's message (printf format). */
void ba_rd_serr(ba_store_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* reader_prefetch.c: at a store's first open, every segment's header and
 * footer pages asked of the kernel before the first is read (cold only). */
void ba_rd_prefetch_heads(ba_store_t *s);
/* reader_dir.c: the directory entry of attr == value (reader_prefetch.c
 * hints it): 1 = found, 0 = absent, < 0 = a directory error. */
struct ba_idx_dirent;
int ba_rd_find_entry(ba_segment_t *g, ba_attr_t attr, uint32_t value, struct ba_idx_dirent *e);
/* Loads and checks the segment's row-group table once (its result is kept). */
int ba_rd_load_table(ba_segment_t *g);
/* Column c of group gi, read (two preads), CRC-checked and decompressed into
 * cc; an absent 3.0 column (all zero) gives len 0. */
int ba_rd_read_col_block(ba_segment_t *g, uint32_t gi, int c, colcache_t *cc);
/* reader_dir.c: frees the index directory; the rows of a segment's index
 * bitmaps and its directory, for ba_segment_info and ba_segment_verify. */
void ba_rd_dir_release(ba_segment_t *g);
void ba_rd_index_attr_bytes(ba_segment_t *g, uint64_t bytes[BA_ATTR_COUNT]);
/* Checks every directory block and bitmap; counts damage in *nbad and sets
 * the store's message at the first (if *first is BA_OK), which it keeps. */
void ba_rd_verify_index(ba_segment_t *g, uint64_t *nbad, int *first);
/* reader_rows.c, shared with reader_sums.c. Loads the columns `need`
 * (column ids) of group gi into g->cache; *bad gets the failed column. */
int ba_rd_load_cols(ba_segment_t *g, uint32_t gi, uint32_t need, int *bad);
/* Marks column c of group gi damaged (rc), naming the block in errmsg. */
int ba_rd_col_damaged(ba_segment_t *g, uint32_t gi, int c, int rc);
/* Decodes columns `need` of group gi into g->recs (1.0/2.0 and whole groups);
 * fields of columns outside `mask` are cleared. */
int ba_rd_decode_group(ba_segment_t *g, uint32_t gi, uint32_t need, uint32_t mask);
/* Where column c's block of group ge ends (the next present column's
 * start, or the group's end). */
uint32_t ba_rd_col_end(const ba_group_ent_t *ge, unsigned ncols, unsigned c);
/* Blocks of the needed columns closer than this are read by one pread with
 * the bytes between them: a pread costs about what copying 12 KB does. */
#define BA_RD_READ_GAP 12288u
/* The columns of `need` that group gi holds and the cache does not (bit c),
 * with end[c] where each block ends; *hi: the furthest end. */
uint32_t ba_rd_col_todo(const ba_segment_t *g, uint32_t gi, uint32_t need, uint32_t *end, uint32_t *hi);
/* The runs [runs[k][0], runs[k][1]) of group-relative bytes that read the
 * blocks of columns todo, neighbours closer than BA_RD_READ_GAP joined;
 * returns their number (at most ncols). */
size_t ba_rd_col_runs(const ba_group_ent_t *ge, unsigned ncols, uint32_t todo, const uint32_t *end,
                      uint32_t runs[][2]);
/* reader_hint.c: the batch of rows[0..n) (ascending; the array stays the
 * caller's and must outlive ba_rd_hint_clear) whose columns `need` are about
 * to be read: the kernel is asked to start reading their groups' blocks at
 * the first run ba_rd_pread_run finds outside the page cache (at once where
 * reads without waiting are not supported). */
void ba_rd_hint_set(ba_segment_t *g, const uint64_t *rows, size_t n, uint32_t need);
void ba_rd_hint_clear(ba_segment_t *g);
/* Reads len bytes at off (a run of group gi's blocks) into buf, as
 * ba_pread_full; with a batch set, first without waiting. */
int ba_rd_pread_run(ba_segment_t *g, uint32_t gi, uint8_t *buf, size_t len, uint64_t off);
/* Column ids holding the ba_col_t fields cols (with META and dependencies);
 * *asked: those asked for. */
uint32_t ba_rd_cols_needed(const ba_segment_t *g, uint32_t cols, uint32_t *asked);

/* zone.c: frees the zone maps read (ba_segment_release). */
void ba_rd_zone_release(ba_segment_t *g);
/* zone.c, for ba_segment_verify: checks the ZONEDIR and every ZONE block
 * (CRC, field, ngroups, min <= max); *nbad gets the bad blocks, msg the
 * first one's description (segment, block, field); returns its error. */
int ba_rd_zone_verify(ba_segment_t *g, uint64_t *nbad, char *msg, size_t cap);

#endif

/* Archive module internals: column blocks, compressors, segment layout
 * (doc/format.md), shared by the writer, the reader and recovery. */
#ifndef BA_ARCHIVE_H
#define BA_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>

#include "bitarc/store.h"
#include "index/index.h"

#define BA_SEG_MAGIC "BITARCSG"
#define BA_SEG_END_MAGIC "BASEGEND"
#define BA_BLK_MAGIC "BABK"
#define BA_SEG_MAJOR 3
#define BA_SEG_MINOR 2 /* 3.1: IPv6 attributes (format.md §7.4); 3.2: compressed bitmaps (§7.8) */
#define BA_SEG_HDR_BYTES 64u
#define BA_SEG_FOOTER_BYTES 80u
#define BA_BLK_HDR_BYTES 32u
#define BA_SEG_FLAG_OLSH 1u
#define BA_SEG_FLAG_CLUSTER 2u /* rows in address-cluster order (format.md §7.9) */

/* Compressed index bitmap records (format.md §7.8, idxz.c): 3.2 segments
 * may set flag bit 0 of a bitmap record (u8 codec, u8 flags, u16 0, u64
 * nrows, u64 nwords, words): the words are then one zstd frame. */
#define BA_BM_REC_HDR 20u
#define BA_BM_FLAG_ZSTD 1u
#define BA_IDXZ_LEVEL 1 /* where zstd lacks the literals-only setting ba_idxz_pack uses */
typedef struct ba_idxz {
  void *cctx;   /* ZSTD_CCtx, made when first needed (decompression: one per thread, idxz.c) */
  uint8_t *buf; /* one packed record */
  size_t cap;
} ba_idxz_t;
void ba_idxz_free(ba_idxz_t *z);
/* Largest word bytes a reader accepts for a bitmap of `rows` rows. */
uint64_t ba_idxz_max_raw(ba_codec_t codec, uint64_t rows);
/* ba_idx_pack_fn (ctx: a ba_idxz_t): the record compressed when that takes
 * at most 7/8 of its bytes, else the record itself. */
int ba_idxz_pack(void *ctx, const uint8_t *rec, size_t len, const uint8_t **out, size_t *olen);
/* Checks crc (of the stored bytes) and decodes a raw or (when allow: a 3.2
 * segment) compressed record, as ba_idx_bitmap_load; a bad frame is
 * BA_ERR_CORRUPT. A compressed record's bytes 16..19 are overwritten (the
 * frame is decoded in place). */
int ba_idxz_load(ba_idxz_t *z, uint8_t *p, size_t len, uint32_t crc, int allow, ba_codec_t codec, uint64_t rows,
                 ba_bitmap_t **out);
/* The raw record of a record read (CRC checked by the caller): a raw one as
 * it is, a compressed one decoded (checked as ba_idxz_load does) into a
 * buffer of the calling thread, valid until its next call. Compressed
 * records are changed as ba_idxz_load changes them. */
int ba_idxz_unpack(uint8_t *p, size_t len, int allow, ba_codec_t codec, uint64_t rows, const uint8_t **rec,
                   size_t *rlen);
/* reader_dir.c: index records of at least this many bytes are mapped from
 * the segment file instead of read into a buffer (default 256 KiB; tests
 * set 0 to map every record). Not thread-safe: set it before reading. */
void ba_rd_set_map_min(size_t bytes);

/* LIVE (journals only, doc/format.md §5): rows of a row group not yet full,
 * written early so live queries see them; superseded by the GROUP block of
 * the same number. ZONE and ZONEDIR: zone maps (§7.2, zone.c). IDXDIR is
 * the whole index directory of segments written before §7.3; ATTRDIR (at the
 * footer's dir_off) and one DIRENT block per attribute replace it. */
enum {
  BA_BLK_GROUP = 1, BA_BLK_COLUMN = 2, BA_BLK_IDXDIR = 3, BA_BLK_TABLE = 4, BA_BLK_ZONE = 5, BA_BLK_LIVE = 6,
  BA_BLK_ATTRDIR = 7, BA_BLK_DIRENT = 8, BA_BLK_ZONEDIR = 9
};
/* ATTRDIR payload: u32 nattr, u32 0, then per attribute holding bitmaps
 * (ascending): u16 attr, u16 0, u32 nentries, u64 offset of its DIRENT
 * block, u32 payload length (24 * nentries), u32 payload CRC, u64 bytes of
 * the attribute's bitmaps (back to back: ba_segment_info needs no DIRENT
 * block). DIRENT
 * payload (block col = attr, rows = nentries): per bitmap, by value:
 * u32 value, u32 length, u64 offset, u32 CRC, u32 0. */
#define BA_ATTRDIR_HDR_BYTES 8u
#define BA_ATTRDIR_ENT_BYTES 32u
#define BA_DIRENT_BYTES 24u

/* Column ids: 0..15 are bit numbers of ba_col_t, 16 is META (kind, ipver;
 * always read), 17..28 (3.0) are ba_col_t bits 16..27 (ba_col_bit). */
#define BA_NCOLS2 17 /* columns of 1.0 and 2.0 segments */
#define BA_NCOLS3 29 /* columns of 3.0 segments */
#define BA_NCOLS_MAX BA_NCOLS3
static inline unsigned ba_seg_ncols(int major) { return major >= 3 ? BA_NCOLS3 : BA_NCOLS2; }
#define BA_COLID_FRAME 15
#define BA_COLID_META 16
#define BA_MAX_CAPLEN 262144u
#define BA_MAX_BLOCK_ROWS (1u << 20)
/* A slice holding this many rows is closed and continued in another segment
 * (row ids stay 32-bit for the batch builder). */
#define BA_SEG_MAX_ROWS (1ull << 31)
#define BA_SEG_DEFAULT_ROWS (1ull << 25) /* ba_store_opts.max_segment_rows */

/* GROUP payload and TABLE entry sizes for a segment of nc columns. */
static inline uint32_t ba_group_payload_bytes(unsigned nc) { return 24u + 4u * nc; }
static inline uint32_t ba_table_entry_bytes(unsigned nc) { return 16u + 4u * nc; }

typedef struct ba_blk_hdr {
  uint8_t type, col, compress;
  uint32_t rows, raw_len, comp_len, group, payload_crc;
} ba_blk_hdr_t;

void ba_blk_hdr_encode(const ba_blk_hdr_t *h, uint8_t out[BA_BLK_HDR_BYTES]);
/* Checks header CRC, magic, reserved byte. */
int ba_blk_hdr_decode(const uint8_t in[BA_BLK_HDR_BYTES], ba_blk_hdr_t *h);

/* ---- compressors ---- */
size_t ba_compress_bound(ba_compress_t c, size_t raw);
/* wrk: per-thread scratch of ba_compress_wrkmem() bytes (LZO). */
size_t ba_compress_wrkmem(void);
int ba_compress_block(ba_compress_t c, const uint8_t *src, size_t n, uint8_t *dst, size_t cap,
                      size_t *out, void *wrk);
/* Exactly raw bytes must come out. */
int ba_decompress_block(ba_compress_t c, const uint8_t *src, size_t n, uint8_t *dst, size_t raw);

/* ---- columns ---- */
/* Column layouts by segment major version (doc/format.md §3, §7): 1 = byte
 * planes of fixed width; 2 = per-block transformed, bit-packed integers
 * (a BA_COL2_FIELD_HDR-byte header per integer field) and byte-plane
 * addresses, so the raw length varies; 3 = 29 columns, integers only,
 * bit-packed, and a column that is all zero in a group is absent: its
 * ba_col_encode length is 0. */
#define BA_COL2_FIELD_HDR 24u
/* Smallest valid raw length of column `col` for n rows (frame bytes apart),
 * and the most ba_col_encode writes (frames: their caplen bytes come from
 * `frames`, concatenated in row order). */
size_t ba_col_raw_min(int major, int col, size_t n);
size_t ba_col_raw_max(int major, int col, size_t n, size_t frame_bytes);
/* Per-thread scratch of ba_col_encode (about 170 KB plus 8 bytes a row). */
typedef struct ba_col_scratch ba_col_scratch_t;
int ba_col_scratch_create(ba_col_scratch_t **out);
void ba_col_scratch_free(ba_col_scratch_t *x);
/* Writes the raw column payload (at most ba_col_raw_max bytes) and its
 * length to *len. x: scratch of the calling thread (NULL: one is made and
 * freed for the call). */
int ba_col_encode(int major, int col, const ba_record_t *r, size_t n, const uint8_t *frames,
                  size_t frame_bytes, uint8_t *out, size_t *len, ba_col_scratch_t *x);
/* Fills column `col` of recs[0..n) from raw; checks raw_len and every header
 * field, never reads outside raw[0..raw_len). Frame pointers point into raw.
 * Columns named by ba_col_deps must already be decoded into recs (2.0 LAST
 * is stored relative to FIRST). */
int ba_col_decode(int major, int col, const uint8_t *raw, size_t raw_len, size_t n, ba_record_t *recs);
/* Column-id bit mask of the columns that column `col` needs decoded first. */
uint32_t ba_col_deps(int major, int col);
/* Checks decoded records: caplen of each within BA_MAX_CAPLEN and their sum
 * exactly frame_bytes (FRAME); kind a flow or a packet (META). */
int ba_col_frames_fit(const ba_record_t *r, size_t n, size_t frame_bytes);
int ba_col_meta_ok(const ba_record_t *r, size_t n);
/* Zeroes the fields of column `col` in recs[0..n). */
void ba_col_clear(int col, ba_record_t *recs, size_t n);
/* 3.0 only: decodes rows rows[0..k) (ascending, < n) of a block into
 * out[0..k) without decoding the others (columns named by ba_col_deps
 * first). Other majors: BA_ERR_INVALID. */
int ba_col_decode_rows(int major, int col, const uint8_t *raw, size_t raw_len, size_t n,
                       const uint32_t *rows, size_t k, ba_record_t *out);

/* ---- index attribute values ---- */
/* Ports held by fewer than rows >> BA_PORT_FOLD_SHIFT rows of a segment are
 * folded into bins (ba_port_bin) when the segment is finished (doc/format.md
 * §7.4, measured in §7.6). */
#define BA_PORT_FOLD_SHIFT 10
/* Domain (values < domain) of each attribute for a segment's parameters. */
uint32_t ba_attr_domain(ba_attr_t a, uint64_t slice_ns, uint64_t bin_ns);
/* Values of attribute a for n records (BA_IDX_NONE where it does not apply). */
void ba_attr_values(ba_attr_t a, const ba_record_t *r, size_t n, uint64_t slice_start,
                    uint64_t bin_ns, uint32_t *out);

/* ---- segment header/footer ---- */
typedef struct ba_seg_hdr {
  uint16_t major, minor; /* set by decode; encode writes them (0: the current version) */
  uint32_t flags;
  uint64_t start_ns, end_ns;
  uint32_t block_rows, time_bin_seconds;
  uint8_t codec, compress;
  uint16_t ncols;
} ba_seg_hdr_t;
/* 3.2 and later: bitmap records may be compressed (§7.8). */
static inline int ba_seg_has_idxz(const ba_seg_hdr_t *h) { return h->major > 3 || (h->major == 3 && h->minor >= 2); }
void ba_seg_hdr_encode(const ba_seg_hdr_t *h, uint8_t out[BA_SEG_HDR_BYTES]);
int ba_seg_hdr_decode(const uint8_t in[BA_SEG_HDR_BYTES], ba_seg_hdr_t *h);

typedef struct ba_seg_footer {
  uint64_t rows, min_first, max_first, table_off, dir_off, index_off;
  uint64_t zone_off; /* the ZONEDIR block; 0: no zone maps (§7.2) */
  uint32_t ngroups, kinds;
} ba_seg_footer_t;
void ba_seg_footer_encode(const ba_seg_footer_t *f, uint8_t out[BA_SEG_FOOTER_BYTES]);
int ba_seg_footer_decode(const uint8_t in[BA_SEG_FOOTER_BYTES], ba_seg_footer_t *f);

/* Zone of one row group (zone.c): min and max of each ba_zfield_t. */
typedef struct ba_zone {
  uint64_t min[BA_ZF_COUNT], max[BA_ZF_COUNT];
} ba_zone_t;
/* The zone of recs[0..n) (n >= 1). */
void ba_zone_compute(const ba_record_t *recs, size_t n, ba_zone_t *z);
/* Of ba_zone_compute, only LAST and DURATION (from two fields of each
 * record); the store writer takes the others from its column encoder's
 * first pass (ba_col3_encode_fields_range), field by field: a zone field
 * other than these is field *k of 3.0 column *col (ba_zone_col_field: 0;
 * -1 for LAST and DURATION). */
void ba_zone_times(const ba_record_t *recs, size_t n, ba_zone_t *z);
int ba_zone_col_field(ba_zfield_t f, int *col, int *k);

/* One TABLE entry. */
typedef struct ba_group_ent {
  uint64_t off;
  uint32_t rows, len;
  uint32_t col_off[BA_NCOLS_MAX]; /* 3.0: 0 = absent column (all zero) */
  ba_zone_t zone; /* writers: the group's zone (ba_seg_finish writes them); not read from the TABLE */
} ba_group_ent_t;

/* Checks a GROUP block payload (doc/format.md §2.3, §7.1) of group gi:
 * *rows gets its rows, lens[0..ncols) its column block lengths (0: absent). */
int ba_group_check(const uint8_t *p, uint32_t raw_len, int major, uint32_t gi, uint32_t block_rows,
                   uint32_t *rows, uint32_t lens[BA_NCOLS_MAX]);

/* Reads a whole block at off (header + payload) from fd of size fsize,
 * checking header and payload CRCs. *buf is grown as needed (payload at
 * *buf). */
int ba_blk_read(int fd, uint64_t off, uint64_t fsize, ba_blk_hdr_t *h, uint8_t **buf,
                size_t *cap);
int ba_pread_full(int fd, void *buf, size_t n, uint64_t off);
int ba_write_full(int fd, const void *buf, size_t n);

/* Finishing a segment from its journal: fd positioned/sized at `end`
 * (everything after the last row group), the row-group table, the finished
 * index. Writes bitmaps, DIRENT blocks, ATTRDIR, TABLE, footer, fsyncs, renames
 * dir/name.open -> dir/name, fsyncs dir. */
typedef struct ba_seg_finish {
  int fd;
  int dirfd;
  const char *open_name, *final_name;
  uint64_t end;
  const ba_group_ent_t *groups;
  uint32_t ngroups;
  unsigned ncols; /* of the segment's version (ba_seg_ncols) */
  uint64_t rows, min_first, max_first;
  uint32_t kinds;
  ba_idx_attr_t *attrs; /* BA_ATTR_COUNT */
  uint16_t major, minor; /* the segment's version; major 0: the current one (the writer's) */
  int folded;           /* the rare ports are in their bins already (ba_idx_online_finish_fold) */
  uint64_t bytes_index; /* out */
} ba_seg_finish_t;
int ba_seg_finish(ba_seg_finish_t *f);
/* Zone maps are written for segments of at most this many row groups (a
 * ZONE block's length is 32-bit). */
#define BA_ZONE_MAX_GROUPS ((UINT32_MAX - 8u) / 16u)
/* Writes the ZONE blocks of groups[0..ngroups) (their zone members), then
 * the ZONEDIR block, through put (as ba_idx_write's); off: the file offset
 * of the first byte put. *zdir_off gets the ZONEDIR block's offset. */
int ba_zone_write(const ba_group_ent_t *groups, uint32_t ngroups, uint64_t off,
                  int (*put)(void *ctx, const void *p, size_t n), void *ctx, uint64_t *zdir_off);

/* Segment file name for a slice: "seg-YYYYMMDDTHHMMSSZ[-N].bitarc" (N =
 * seq, left out when 0). */
int ba_seg_name(uint64_t start_ns, unsigned seq, char *out, size_t cap);

/* Calls fn(ctx, dfd, name) for each entry of the directory dirfd, or of its
 * subdirectory sub (never through a symlink), "." and ".." left out, until fn
 * returns non-zero: that value is returned. dfd is the directory walked.
 * BA_ERR_NOT_FOUND if sub does not exist, BA_ERR_IO if it cannot be read. */
typedef int (*ba_dir_fn)(void *ctx, int dfd, const char *name);
int ba_dir_each(int dirfd, const char *sub, ba_dir_fn fn, void *ctx);
/* 1 if s ends with suffix and is longer than it. */
int ba_name_ends_with(const char *s, const char *suffix);

/* Opens the store directory and takes its writer lock (DIR/.lock, flock
 * exclusive, not waiting: BA_ERR_BUSY while a writer runs). */
int ba_store_lock(const char *dir, int *dirfd, int *lockfd, char *errbuf, size_t errcap);

/* The expire lock (DIR/.expire.lock, flock exclusive): held by
 * ba_store_expire while it lists and deletes, and by a clustering for the
 * moment it swaps a segment. Waits up to wait_ms (BA_ERR_BUSY after). */
int ba_store_expire_lock(int dirfd, int wait_ms, int *lockfd);
/* The cluster lock (DIR/.cluster.lock, flock exclusive, not waiting:
 * BA_ERR_BUSY): one rewrite of segments beside a writer at a time; the
 * writer-locked rewrites (upgrade, reindex) take it too. */
int ba_store_cluster_lock(int dirfd, int *lockfd);

/* Calls fn for each segment of the store (the caller holds its lock; dirfd is
 * the store directory). fn returns BA_OK (counted in *nsegs), a positive value
 * (skipped) or an error (its text in err); a segment that cannot be opened is
 * an error. Returns the first error, its text in errbuf; the others go on. */
typedef int (*ba_seg_each_fn)(void *ctx, int dirfd, ba_segment_t *seg, const char *name, char *err,
                              size_t errcap);
int ba_store_each_segment(const char *dir, int dirfd, ba_seg_each_fn fn, void *ctx, size_t *nsegs, char *errbuf,
                          size_t errcap);

/* ---- clustered segments (cluster.c, format.md §7.9) ---- */
#define BA_CLUSTER_DEFAULT_MEM ((size_t)1 << 30) /* records held while feeding one chunk */
typedef void (*ba_cluster_note_fn)(void *ctx, const char *msg);
/* The Morton key of a row from its source and destination ranks (source
 * rank in the odd bits). */
uint64_t ba_cluster_morton(uint32_t src_rank, uint32_t dst_rank);
/* pos[row] = the row's place in key order (ba_free it); rows = the segment's.
 * Two column scans; holds 64 bytes a row while ordering (radix sorts), then 4. */
int ba_cluster_positions(ba_segment_t *seg, uint64_t rows, uint32_t **pos);
/* Calls fn with every record of seg in key order (records of about mem_bytes
 * at a time, one linear scan per such chunk; 0 = BA_CLUSTER_DEFAULT_MEM);
 * note (may be NULL) gets progress lines. Damage is BA_ERR_CORRUPT. */
int ba_cluster_feed(ba_segment_t *seg, size_t mem_bytes, ba_record_sink_fn fn, void *ctx, ba_cluster_note_fn note,
                    void *nctx);

/* ---- journals (journal.c) ---- */
/* Reads a journal's row groups and LIVE blocks (doc/format.md §5). */
typedef struct ba_jreader {
  ba_seg_hdr_t h;
  uint8_t *buf, *raw, *fraw; /* fraw: the FRAME column (frame pointers point into it) */
  size_t cap, raw_cap, fraw_cap;
  ba_record_t *recs; /* block_rows records: the rows of the last group read */
} ba_jreader_t;
typedef struct ba_jgroup {
  int live;           /* a LIVE block: rows of the open group `group` */
  uint32_t group, rows;
  uint64_t first_row; /* row number in the slice of its first row */
  ba_group_ent_t e;   /* its TABLE entry (off, rows, len, col_off) */
} ba_jgroup_t;
/* Reads and checks the file header of fd (fsize bytes), allocates buffers. */
int ba_jreader_open(ba_jreader_t *r, int fd, uint64_t fsize);
void ba_jreader_close(ba_jreader_t *r);
/* Reads the GROUP block of group gi at off, or a LIVE block of group gi
 * (whose first row must follow the live_rows rows earlier LIVE blocks of gi
 * held), with its column blocks; the rows are decoded into r->recs.
 * BA_ERR_TRUNCATED: a block runs past fsize (a group being written). */
int ba_jreader_group(ba_jreader_t *r, int fd, uint64_t fsize, uint64_t off, uint32_t gi, uint32_t live_rows,
                     ba_jgroup_t *g);

/* Encodes recs[0..n) (frames: their caplen bytes concatenated) as row group
 * gi of a journal with header h, columns uncompressed, and writes it at
 * offset `at`; e gets its TABLE entry. Recovery keeps a journal's trailing
 * LIVE rows this way. */
int ba_journal_write_group(int fd, const ba_seg_hdr_t *h, uint32_t gi, const ba_record_t *recs, uint32_t n,
                           const uint8_t *frames, size_t nframes, uint64_t at, ba_group_ent_t *e);

/* The store's directory (the handle's descriptor, for listing its journals). */
int ba_store_dirfd(const ba_store_t *s);

/* Recovers every journal in the store (dirfd); adds recovered rows. */
int ba_store_recover(int dirfd, const ba_store_opts_t *defaults, uint64_t *recovered,
                     char *errmsg, size_t errcap);

#endif

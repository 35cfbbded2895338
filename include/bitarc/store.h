/* A store: a directory of immutable, self-describing segments, one per time
 * slice, each holding compressed column blocks and bitmap indexes.
 * Format: doc/format.md. Writer: ingest/collect. Reader: query/stat/verify.
 *
 * Ownership: open/close pairs; close(NULL) is a no-op. A ba_segment_t
 * borrowed from a reader stays valid until the reader is closed. */
#ifndef BITARC_STORE_H
#define BITARC_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "bitarc/bitmap.h"
#include "bitarc/errors.h"
#include "bitarc/record.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Indexed attributes: one bitmap per (attribute, value) present in a segment. */
typedef enum ba_attr {
  BA_ATTR_SRC_IP0 = 0, BA_ATTR_SRC_IP1, BA_ATTR_SRC_IP2, BA_ATTR_SRC_IP3, /* bytes of IPv4 src a.b.c.d */
  BA_ATTR_DST_IP0, BA_ATTR_DST_IP1, BA_ATTR_DST_IP2, BA_ATTR_DST_IP3,
  BA_ATTR_SRC_PORT, BA_ATTR_DST_PORT,   /* 0..65535 */
  BA_ATTR_PROTO,                        /* 0..255 */
  BA_ATTR_TCP_FLAGS,                    /* 0..255, the flag byte as a value */
  BA_ATTR_TIME_BIN,                     /* (first_ns - segment start) / bin width */
  BA_ATTR_IPVER,                        /* 0 = non-IP, 4, 6 */
  /* 3.0: ports held by fewer than 1/1024 of a segment's rows have no
   * SRC_PORT/DST_PORT bitmap; their rows are in the bitmap of their bin,
   * ba_port_bin(port) (doc/format.md §7.4). */
  BA_ATTR_SRC_PORT_BIN, BA_ATTR_DST_PORT_BIN,
  /* 3.1: IPv6 addresses (ipver 6 rows only), as 16-bit hashes
   * (ba_v6_hash): of the first 48 bits (a /48 network) and of the whole
   * address; a query checks the address column of the rows they give
   * (hashes collide). doc/format.md §7.4. */
  BA_ATTR_SRC_V6NET, BA_ATTR_DST_V6NET, BA_ATTR_SRC_V6HOST, BA_ATTR_DST_V6HOST,
  BA_ATTR_COUNT
} ba_attr_t;
const char *ba_attr_name(ba_attr_t a);
/* The bin of a folded port: bin 0 = ports 0..1023, bin k >= 1 = ports
 * [(k-1) * 4096, k * 4096) from 1024 on, so "port < 1024" and "port > 1023"
 * cover whole bins. */
#define BA_PORT_NBINS 17u
/* The value of an IPv6 attribute: a BA_V6_HASH_BITS-bit hash of the first
 * nbytes bytes of an address (6 for V6NET, 16 for V6HOST): FNV-1a (32 bits)
 * over them, folded by XOR of its BA_V6_HASH_BITS-bit pieces from the low
 * end. Part of the on-disk format (doc/format.md §7.4). */
#define BA_V6_HASH_BITS 8 /* chosen by measurement: doc/format.md §7.6 */
uint32_t ba_v6_hash(const uint8_t *addr, unsigned nbytes);
static inline uint32_t ba_port_bin(uint32_t port) { return port < 1024 ? 0 : 1 + (port >> 12); }
static inline void ba_port_bin_range(uint32_t bin, uint32_t *lo, uint32_t *hi) {
  *lo = bin == 0 ? 0 : bin == 1 ? 1024 : (bin - 1) << 12;
  *hi = bin == 0 ? 1023 : (bin << 12) - 1;
}

typedef enum ba_compress { BA_COMPRESS_LZO = 1, BA_COMPRESS_LZ4 = 2, BA_COMPRESS_ZSTD = 3, BA_COMPRESS_NONE = 4 } ba_compress_t;
const char *ba_compress_name(ba_compress_t c);
int ba_compress_from_name(const char *name, ba_compress_t *out);

typedef enum ba_reorder { BA_REORDER_NONE = 0, BA_REORDER_OLSH = 1 } ba_reorder_t;

typedef struct ba_store_opts {
  ba_codec_t codec;           /* index codec (default plwah, chosen by measurement: bench/RESULTS.md) */
  ba_compress_t compress;     /* default none: 3.0 blocks are bit-packed and addressable; a compressor is kept
                                 per block only where it saves 1/8 (doc/format.md §7.1, §7.6) */
  uint32_t block_rows;        /* default 4000 */
  uint32_t slice_seconds;     /* default 3600 */
  uint32_t time_bin_seconds;  /* start-time index bin width, default 60 */
  ba_reorder_t reorder;       /* default none */
  uint32_t olsh_mem_records;  /* oLSH buffer budget (records); 0 = default */
  int threads;                /* index/compress worker threads; 0 = default */
  uint64_t max_segment_rows;  /* rows of one segment at most (a slice with more continues in the next
                                 segment "seg-...-N"): bounds the open slice's index in memory;
                                 default 2^25 (about 1.2 GB while writing, bench/RESULTS.md) */
  int clustered;              /* records arrive in address-cluster order (ba_store_cluster's writer): segments
                                 are flagged clustered and have no TIME_BIN bitmaps (doc/format.md 7.9);
                                 default 0 */
} ba_store_opts_t;
/* Fills the defaults. */
void ba_store_opts_init(ba_store_opts_t *o);

/* ---------- writing ---------- */
typedef struct ba_store_writer ba_store_writer_t;
typedef struct ba_store_writer_stats {
  uint64_t records_in, records_stored, records_dropped; /* dropped: outside any slice etc. */
  uint64_t segments_written, bytes_archive, bytes_index;
} ba_store_writer_stats_t;

/* Creates the directory (mode 0700) if needed. Recovers any unfinished slice
 * left by a crash (reported through ba_store_writer_recovered). One writer
 * per store: a second one gets BA_ERR_BUSY (flock on DIR/.lock).
 * Open slices: a record of a new slice closes every slice more than one slice
 * older; at most 4 slices are open (least recently used is closed); records of
 * an already closed slice go to a new segment "seg-...-N.bitarc". Records with
 * an unknown kind, caplen > 262144 or caplen > 0 without a frame are dropped.
 * With threads >= 2 a closed slice (or full segment) is finished by a
 * background thread while appending goes on, one at a time: its segment
 * appears to readers shortly after the append that closed it (its rows stay
 * readable by live queries from the journal meanwhile); close waits for it,
 * sync makes its journal durable without waiting. An error of that finish is
 * returned by a later call. */
int ba_store_writer_open(const char *dir, const ba_store_opts_t *opts, ba_store_writer_t **out);
/* After ba_store_writer_open failed: why, naming the file ("st: mkdir: No
 * such file or directory", "st: another writer holds it ..."), for the
 * calling thread; "" when there is nothing more to say than the code. */
const char *ba_store_writer_open_error(void);
/* Records may arrive in any time order; each goes to the slice of first_ns.
 * Frames of packet records are copied. */
int ba_store_writer_append(ba_store_writer_t *w, const ba_record_t *recs, size_t n);
/* The last report of `bitarc collect` in a store (per socket, exporter and
 * template; doc/format.md section 1), rewritten atomically while it runs. */
#define BA_STORE_COLLECTOR_JSON "collector.json"
#define BA_STORE_COLLECTOR_TEXT "collector.txt"

/* Makes every finished block of the open slices durable (fsync). */
int ba_store_writer_sync(ba_store_writer_t *w);
/* Live queries (doc/format.md §5): makes every record appended at least
 * age_ns ago readable from the journals (ba_query_run reads them): groups in
 * flight are written, and the rows of a group not yet full that waited that
 * long are appended as a LIVE block (a cost of up to one more column
 * encoding and one more write of those rows; groups filled within age_ns
 * cost nothing). 0 = every record appended so far. No fsync (see
 * ba_store_writer_sync). Call it from the thread that appends; a collector
 * calls it every few hundred ms, also when no records arrive. With
 * BA_REORDER_OLSH, a buffer that has held records for age_ns is emptied
 * first (its records reordered among themselves, as at a slice's end), so
 * they are seen too: the reordering window is then at most age_ns. */
int ba_store_writer_flush(ba_store_writer_t *w, uint64_t age_ns);
/* LIVE blocks ba_store_writer_flush wrote, and their bytes. */
void ba_store_writer_live_stats(const ba_store_writer_t *w, uint64_t *blocks, uint64_t *bytes);
/* Finishes all open slices into segments and frees the writer. */
int ba_store_writer_close(ba_store_writer_t *w);
void ba_store_writer_get_stats(const ba_store_writer_t *w, ba_store_writer_stats_t *st);
/* Records recovered from crash leftovers at open (0 if none). */
uint64_t ba_store_writer_recovered(const ba_store_writer_t *w);
const char *ba_store_writer_errmsg(const ba_store_writer_t *w);

/* ---------- reading ---------- */
typedef struct ba_store ba_store_t;
typedef struct ba_segment ba_segment_t;

typedef struct ba_segment_info {
  const char *name;          /* file name inside the store */
  uint64_t start_ns, end_ns; /* the slice [start, end) */
  uint64_t min_first_ns, max_first_ns;
  uint64_t rows;
  uint32_t block_rows, nblocks, time_bin_seconds;
  ba_codec_t codec;
  ba_compress_t compress;
  ba_reorder_t reorder;
  uint8_t kind;              /* BA_REC_FLOW or BA_REC_PACKET (mixed stores keep both) */
  uint16_t version_major;    /* segment format: 1, 2 or 3 (doc/format.md) */
  uint16_t version_minor;    /* 3.1 and later index IPv6 addresses */
  uint64_t bytes_archive, bytes_index, bytes_file;
  uint64_t bytes_index_attr[BA_ATTR_COUNT];
  uint8_t clustered;         /* rows in address-cluster order (reindex --cluster, doc/format.md §7.9) */
} ba_segment_info_t;

/* Opens a store for reading; sees every complete segment present now.
 * ba_store_refresh picks up segments completed since. */
int ba_store_open(const char *dir, ba_store_t **out);
int ba_store_refresh(ba_store_t *s);
/* A second, independent handle on the same store: the segments of s, the
 * same files (find one by ba_store_segment_name); one handle per thread.
 * It may be made while another thread reads s (it reads only what opening
 * s fixed), not while s is refreshed. */
int ba_store_reopen(const ba_store_t *s, ba_store_t **out);
void ba_store_close(ba_store_t *s);
const char *ba_store_errmsg(const ba_store_t *s);
size_t ba_store_segment_count(const ba_store_t *s);
/* Segments are ordered by start time. Opening validates the header and
 * footer (magic, version, CRC32C); blocks are checked when read. */
int ba_store_segment(ba_store_t *s, size_t i, ba_segment_t **out);
/* File name of segment i, also for one that failed to open (NULL if i is out
 * of range). */
const char *ba_store_segment_name(const ba_store_t *s, size_t i);
/* 1 if name is a segment file name as a store writer makes them,
 * "seg-YYYYMMDDTHHMMSSZ[-N].bitarc" (N from 1 to 1,000,000, no leading
 * zero), with its slice start and N (0 when there is none); either pointer
 * may be NULL. 0 if it is not one (journals, temp files, anything else):
 * the one test of what counts as a segment, for readers, retention and
 * tools. */
int ba_segment_name_parse(const char *name, uint64_t *start_ns, unsigned *seq);
/* The store's order of segment names, as strcmp: slice start, then seg-X,
 * seg-X-1, ..., seg-X-9, seg-X-10 (names that do not parse first). */
int ba_segment_name_cmp(const char *a, const char *b);
int ba_segment_info(const ba_segment_t *seg, ba_segment_info_t *out);
/* Asks the kernel to read in the background what a query reads first of
 * each open segment holding flows that start in [start_ns, end_ns): its
 * index directory (and with rows != 0, for a query that reads rows or
 * columns, its zone maps and row-group table), where they are not in the
 * page cache: after a cold start the disk serves them for every segment at
 * once instead of one pread after another. A hint only (nothing is read
 * into the handle, no error); returns the number of segments hinted. */
size_t ba_store_prefetch_index(ba_store_t *s, uint64_t start_ns, uint64_t end_ns, int rows);
/* Asks the kernel to read in the background the index bitmap records of
 * attrs[k] == values[k] (k < n) that are not in the page cache (a one-byte
 * RWF_NOWAIT read of each tells), each at most max_bytes: a plan about to
 * read several of them one after another then waits for the disk once. A
 * hint only (nothing read into the handle). Returns the number of records
 * hinted (absent values, larger and cached records are not), their byte
 * ranges [off, end) into ranges[i] when it is not NULL (room for n), or < 0
 * when the index directory cannot be read (as ba_segment_index would). */
int ba_segment_index_prefetch(ba_segment_t *seg, const ba_attr_t *attrs, const uint32_t *values, size_t n,
                              uint64_t max_bytes, uint64_t (*ranges)[2]);

/* The bitmap of rows whose attribute equals value; an all-zero bitmap of
 * `rows` rows when the value does not occur. Caller frees. */
int ba_segment_index(ba_segment_t *seg, ba_attr_t attr, uint32_t value, ba_bitmap_t **out);
/* a AND the bitmap ba_segment_index gives (a: a finished bitmap of the
 * segment's rows), in the segment's codec: the same words and errors as
 * loading it and calling ba_bitmap_and, but the bitmap is combined where it
 * was read or decoded (ba_bitmap_and_record, ba_bitmap_and_words), never
 * built. Caller frees *out. out NULL: only the rows of the AND are counted
 * into *count (as ba_bitmap_and_count). */
int ba_segment_index_and(ba_segment_t *seg, ba_attr_t attr, uint32_t value, const ba_bitmap_t *a,
                         ba_bitmap_t **out, uint64_t *count);
/* The rows of a AND the bitmaps of attrs[i] == values[i] (i < n <= 8)
 * counted in one pass where they are read, when each is a large raw dense
 * literal record (ba_bitmap_and_records_count); 1 = declined (nothing
 * counted: AND them one by one). A record with a bad CRC is an error. */
int ba_segment_index_and_count_all(ba_segment_t *seg, const ba_attr_t *attrs, const uint32_t *values, size_t n,
                                   const ba_bitmap_t *a, uint64_t *count);
/* Values present for an attribute, ascending; *n gets the count (may exceed cap). */
int ba_segment_index_values(ba_segment_t *seg, ba_attr_t attr, uint32_t *values, size_t cap, size_t *n);
/* The present values v of attr with lo_value <= v <= hi_value, ascending
 * (binary search in the index directory); bytes[i] (if bytes is not NULL)
 * gets the serialized size of values[i]'s bitmap, a planner's cost estimate
 * without reading it. *n gets the count (may exceed cap; cap 0 counts). */
int ba_segment_index_range(ba_segment_t *seg, ba_attr_t attr, uint32_t lo_value, uint32_t hi_value,
                           uint32_t *values, uint32_t *bytes, size_t cap, size_t *n);
/* Frees what the segment handle cached from its file (index directory, block
 * table, decompressed blocks, buffers); it is read again when needed. A
 * reader going through many segments calls this when done with each. */
void ba_segment_release(ba_segment_t *seg);

/* Zone maps (doc/format.md §7.2): per row group, the smallest and the
 * largest value of a field. DURATION is last_ns - first_ns in ns (0 when
 * last_ns <= first_ns). */
typedef enum ba_zfield {
  BA_ZF_FIRST = 0, BA_ZF_LAST, BA_ZF_DURATION, BA_ZF_PACKETS, BA_ZF_BYTES, BA_ZF_OUT_BYTES,
  BA_ZF_SRC_PORT, BA_ZF_DST_PORT, BA_ZF_PROTO, BA_ZF_COUNT
} ba_zfield_t;
/* Name of a zoned field ("first", "bytes", ...), or NULL. */
const char *ba_zfield_name(ba_zfield_t f);
/* *min and *max get the field's zone: min[g], max[g] for each row group g
 * (the info's nblocks), valid until ba_segment_release. BA_ERR_NOT_FOUND:
 * the segment has no zone maps (written before them); a damaged ZONE or
 * ZONEDIR block gives its error, ba_store_errmsg naming segment, block and
 * field. */
int ba_segment_zone(ba_segment_t *seg, ba_zfield_t f, const uint64_t **min, const uint64_t **max);

/* Which columns a read needs (bit mask of ba_col_t). */
typedef enum ba_col {
  BA_COL_FIRST = 1u << 0, BA_COL_LAST = 1u << 1, BA_COL_SRC = 1u << 2, BA_COL_DST = 1u << 3,
  BA_COL_PORTS = 1u << 4, BA_COL_PROTO = 1u << 5, BA_COL_FLAGS = 1u << 6, BA_COL_TOS = 1u << 7,
  BA_COL_AS = 1u << 8, BA_COL_IF = 1u << 9, BA_COL_PACKETS = 1u << 10, BA_COL_BYTES = 1u << 11,
  BA_COL_EXPORTER = 1u << 12, BA_COL_VLAN = 1u << 13, BA_COL_ICMP = 1u << 14,
  BA_COL_FRAME = 1u << 15,   /* packets: caplen, wirelen, linktype and frame bytes */
  /* Extended flow fields (record.h), stored from segment format 3.0 on; in
   * 1.0/2.0 segments they read as zero. */
  BA_COL_OUT = 1u << 16,       /* out_packets, out_bytes */
  BA_COL_NEXTHOP = 1u << 17,   /* next_hop, bgp_next_hop */
  BA_COL_MASK = 1u << 18,      /* src_mask, dst_mask */
  BA_COL_DSTTOS = 1u << 19,    /* dst_tos, dst_vlan */
  BA_COL_ENGINE = 1u << 20,    /* obs_domain, engine_type, engine_id, direction */
  BA_COL_SAMPLING = 1u << 21,  /* sampling, sampling_algo */
  BA_COL_NAT = 1u << 22,       /* xsrc, xdst, xsrc_port, xdst_port, nat_event */
  BA_COL_FW = 1u << 23,        /* fw_event, fw_xevent, ingress_vrf, egress_vrf */
  BA_COL_MPLS = 1u << 24,      /* mpls[10] */
  BA_COL_MAC = 1u << 25,       /* the four MAC addresses */
  BA_COL_BGPAS = 1u << 26,     /* prev_as, next_as */
  BA_COL_MISC = 1u << 27,      /* received_ns, aggr_flows */
  BA_COL_ALL = 0x0FFFFFFFu
} ba_col_t;

/* Bytes on disk of each column, summed over the segment's row groups
 * (block headers included; a column absent from a group counts 0): bytes[c]
 * for column id c < *ncols (at most 32; ids as ba_segment_column_name). */
int ba_segment_column_bytes(ba_segment_t *seg, uint64_t bytes[32], unsigned *ncols);
/* Name of column id c ("first", "src", ..., "meta", "out", ...), or NULL. */
const char *ba_segment_column_name(unsigned c);

/* Reads the given rows (ascending) decompressing only the blocks holding them
 * and only the columns asked for; fn receives records in row order (fields not
 * asked for are zero; frame pointers valid during the call). A damaged block
 * is skipped: its rows are not delivered, *damaged (if not NULL) counts them,
 * and ba_store_errmsg names segment and block. */
int ba_segment_read_rows(ba_segment_t *seg, const uint64_t *rows, size_t n, uint32_t cols,
                         ba_record_sink_fn fn, void *ctx, uint64_t *damaged);
/* Damage with damaged == NULL: the undamaged rows are still delivered, then
 * the first error is returned. Segment handles are not thread-safe: use one
 * store handle per thread. */
/* A second reader of seg for another thread: its own file descriptor,
 * buffers and error detail, the block table copied; reads through it give
 * what reads through seg give. seg must outlive it. */
int ba_segment_clone(ba_segment_t *seg, ba_segment_t **out);
void ba_segment_clone_free(ba_segment_t *clone);
/* The error detail of the last failed read through seg (for a clone its
 * own; otherwise its store's, as ba_store_errmsg), and setting it (a
 * clone's damage reported through the segment it was cloned from). */
const char *ba_segment_errmsg(const ba_segment_t *seg);
void ba_segment_set_errmsg(ba_segment_t *seg, const char *msg);
/* Every row in order (the linear scan used as the test oracle). */
int ba_segment_scan(ba_segment_t *seg, uint32_t cols, ba_record_sink_fn fn, void *ctx,
                    uint64_t *damaged);
/* Sums per start-time bin (bitarc graph): bin k holds the rows whose first_ns
 * is in [start_ns + k * bin_ns, start_ns + (k + 1) * bin_ns); sums[3k],
 * sums[3k + 1] and sums[3k + 2] are its rows, packets and bytes. */
typedef struct ba_bin_sums {
  uint64_t start_ns, bin_ns; /* bin_ns > 0 */
  size_t nbins;
  uint64_t *sums; /* 3 * nbins, added to */
} ba_bin_sums_t;
/* Adds the given rows (ascending; rows NULL and n 0: every row) to the bins,
 * reading only the first, packets and bytes columns and building no record
 * (3.0: a group whose every row is asked for is decoded whole, others value
 * by value). Rows outside every bin are not added. *summed (may be NULL)
 * gets the rows added. Damage as ba_segment_read_rows: a damaged block's
 * rows are skipped and counted in *damaged (if not NULL, else the first
 * error is returned after the rest is summed). */
int ba_segment_sum_bins(ba_segment_t *seg, const uint64_t *rows, size_t n, const ba_bin_sums_t *b,
                        uint64_t *summed, uint64_t *damaged);
/* ba_segment_sum_bins of every row of row groups [g0, g1) (g1 <= the
 * segment's groups; its info's nblocks). */
int ba_segment_sum_groups(ba_segment_t *seg, uint32_t g0, uint32_t g1, const ba_bin_sums_t *b, uint64_t *summed,
                          uint64_t *damaged);
/* ba_segment_sum_bins of rows idx[0..k) of row group gi, as offsets inside
 * the group (ascending; idx NULL and k 0, or k = the group's rows: every
 * row, decoded whole). For a caller walking a bitmap group by group. */
int ba_segment_sum_group(ba_segment_t *seg, uint32_t gi, const uint32_t *idx, size_t k, const ba_bin_sums_t *b,
                         uint64_t *summed, uint64_t *damaged);
/* Column vectors (late materialization): fields of ba_record_t named by
 * their offset (offsetof(ba_record_t, f); an address is four fields, its
 * 32-bit words at +0, +4, +8, +12, each the number its four bytes make
 * big-endian). vals[f][0..n) are the values of field fields[f] of n rows in
 * row order; last_ns is the absolute time. */
#define BA_FIELDS_MAX 48
typedef int (*ba_field_sink_fn)(void *ctx, const uint64_t *const *vals, size_t n);
/* 1 if off names a stored field of ba_record_t (ba_segment_read_fields). */
int ba_record_field_ok(size_t off);
/* The value of field off (ba_record_field_ok) of r, as in a column vector. */
uint64_t ba_record_field_get(const ba_record_t *r, size_t off);
/* Field off's width in bytes and whether it is an address word; -1 if off
 * names no stored field. With them, ba_record_field_value reads it fast. */
int ba_record_field_info(size_t off, unsigned *width, int *word);
static inline uint64_t ba_record_field_value(const ba_record_t *r, size_t off, unsigned width, int word) {
  const uint8_t *p = (const uint8_t *)r + off;
  if (word) return (uint64_t)p[0] << 24 | (uint64_t)p[1] << 16 | (uint64_t)p[2] << 8 | p[3];
  uint64_t v = 0;
  for (unsigned i = 0; i < width; i++) v |= (uint64_t)p[i] << (8 * i); /* little-endian in memory */
  return v;
}
/* Reads fields[0..nf) (nf <= BA_FIELDS_MAX) of the given rows (ascending;
 * rows NULL and n 0: every row) and hands them to fn a row group at a time,
 * building no record (3.0: only those fields are decoded, a group whose rows
 * are dense decoded whole; 1.0/2.0: the group's records, fields taken from
 * them). Damage as ba_segment_read_rows. */
int ba_segment_read_fields(ba_segment_t *seg, const uint64_t *rows, size_t n, const uint16_t *fields, size_t nf,
                           ba_field_sink_fn fn, void *ctx, uint64_t *damaged);
/* Rebuilds every segment's index with the batch builder on `device` ("cpu";
 * others answer BA_ERR_NODEVICE until built) using `threads` threads, in
 * `codec`, replacing each segment atomically (write to a temp name, fsync,
 * rename). Takes the store's writer lock (BA_ERR_BUSY while a writer runs).
 * *nsegs (may be NULL) counts rewritten segments; detail of a failure goes
 * to errbuf. A segment with damaged blocks is left as it is (error). */
int ba_store_reindex(const char *dir, ba_codec_t codec, const char *device, int threads,
                     size_t *nsegs, char *errbuf, size_t errcap);
/* Rewrites every 1.0 and 2.0 segment of the store in format 3.0 (records in
 * the same order, index rebuilt in the segment's codec), each replacing the
 * old one atomically; 3.0 segments are left alone. Crash-safe: a scratch
 * directory DIR/.upgrade holds the segment being written. Takes the writer
 * lock (BA_ERR_BUSY while a writer runs). A damaged segment is left as it is
 * (error in errbuf). *nsegs (may be NULL) counts upgraded segments. */
int ba_store_upgrade(const char *dir, int threads, size_t *nsegs, char *errbuf, size_t errcap);
/* Rewrites every segment of the store that is not yet clustered in address-
 * cluster order (doc/format.md §7.9: rows sorted by the Morton key of their
 * source and destination address ranks), each replacing the old one
 * atomically through a scratch directory DIR/.cluster (crash-safe: a reader
 * sees the old file or the new one; segments older than 3.2 come out as
 * 3.2). Runs beside a writer (a collector): only complete segments are
 * touched, never the slices being written (journals); takes DIR/.cluster.lock
 * (BA_ERR_BUSY while another clustering, upgrade or reindex runs) and, for
 * the moment of each swap, the expire lock; a segment deleted or replaced
 * while it was rewritten is left alone. mem_bytes bounds the records held at
 * once (0 = 1 GiB; more passes over a segment when smaller); note (may be
 * NULL) receives progress lines. A damaged segment is left as it is (error
 * in errbuf). *nsegs (may be NULL) counts clustered segments. */
int ba_store_cluster(const char *dir, int threads, size_t mem_bytes, void (*note)(void *ctx, const char *msg),
                     void *note_ctx, size_t *nsegs, char *errbuf, size_t errcap);
/* The same for one segment (its file name in DIR): BA_OK when it was
 * clustered, 1 when nothing was done (already clustered, or deleted or
 * replaced meanwhile), BA_ERR_NOT_FOUND when the store has no such segment. */
int ba_store_cluster_segment(const char *dir, const char *name, int threads, size_t mem_bytes,
                             void (*note)(void *ctx, const char *msg), void *note_ctx, char *errbuf, size_t errcap);
/* Empties DIR/.cluster, what a killed clustering left (BA_ERR_BUSY while a
 * clustering runs: nothing done). */
int ba_store_cluster_scratch_clear(const char *dir);
/* ---------- retention (nfexpire's job) ---------- */
typedef enum ba_expire_reason { BA_EXPIRE_AGE = 1, BA_EXPIRE_SIZE = 2 } ba_expire_reason_t;
typedef struct ba_expire_item {
  const char *name;          /* segment file name inside the store */
  uint64_t start_ns, end_ns; /* its slice; end = start when the header cannot be read */
  uint64_t bytes;            /* file size */
  ba_expire_reason_t reason; /* the age limit, else the size limit */
} ba_expire_item_t;
typedef struct ba_expire_opts {
  uint64_t max_age_ns; /* delete segments whose slice ended at or before now - max_age; 0 = none */
  uint64_t max_bytes;  /* then delete oldest segments until segments + journals <= this; 0 = none */
  uint64_t now_ns;     /* 0 = the real-time clock */
  int dry_run;         /* report what would be deleted, delete nothing */
  void (*report)(void *ctx, const ba_expire_item_t *it); /* each segment deleted, oldest first */
  void *report_ctx;
} ba_expire_opts_t;
typedef struct ba_expire_stats {
  uint64_t segments, bytes;                  /* complete segments before */
  uint64_t journals, journal_bytes;          /* *.open journals (never deleted, counted in size) */
  uint64_t segments_deleted, bytes_deleted;  /* (or that would be, in a dry run) */
  uint64_t bytes_after;                      /* segments + journals left */
  int size_unmet;                            /* max_bytes still exceeded (journals alone exceed it) */
} ba_expire_stats_t;
void ba_expire_opts_init(ba_expire_opts_t *o);
/* Deletes a store's oldest complete segments (by slice start) beyond the age
 * and size limits. Only files named like segments (seg-<time>[-n].bitarc,
 * regular files) are ever deleted: never a journal (*.open, the slice a
 * writer is filling), the lock or temp files. Safe beside a running writer
 * (it never touches its journals; it does not need DIR/.lock) and readers (an
 * unlinked segment stays readable through open descriptors). Two expires on
 * one store are serialised by DIR/.expire.lock (BA_ERR_BUSY). A collector
 * may call this between slices with its own limits. Detail of a failure
 * goes to err. */
int ba_store_expire(const char *dir, const ba_expire_opts_t *o, ba_expire_stats_t *st, char *err,
                    size_t errcap);

/* Checks every block and index of a segment; returns 0 if clean, else the
 * first error, with detail in ba_store_errmsg. *nbad counts damaged blocks. */
int ba_segment_verify(ba_segment_t *seg, uint64_t *nbad);

#ifdef __cplusplus
}
#endif
#endif

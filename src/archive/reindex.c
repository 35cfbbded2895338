/* bitarc reindex: rebuild each segment's index with the batch builder (any
 * codec, any built device) and replace the segment atomically. The archive
 * part (header aside, whose codec byte changes) is copied byte for byte. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive/archive.h"
#include "common/common.h"

typedef struct collect {
  uint32_t *vals[BA_ATTR_COUNT];
  uint64_t n, start, bin_ns;
  ba_zone_t *zones; /* per row group (zone.c) */
  uint64_t block_rows, ngroups;
} collect_t;

static int collect_sink(void *ctx, const ba_record_t *recs, size_t n) {
  collect_t *c = ctx;
  if (c->n + n > c->ngroups * c->block_rows) return BA_ERR_CORRUPT; /* more rows than the segment says */
  for (int a = 0; a < BA_ATTR_COUNT; a++)
    ba_attr_values((ba_attr_t)a, recs, n, c->start, c->bin_ns, c->vals[a] + c->n);
  /* Zones of the groups these rows belong to (a call may span groups). */
  for (size_t i = 0; i < n;) {
    uint64_t row = c->n + i, g = row / c->block_rows, k = BA_MIN((uint64_t)(n - i), (g + 1) * c->block_rows - row);
    ba_zone_t z;
    ba_zone_compute(recs + i, (size_t)k, &z);
    ba_zone_t *d = &c->zones[g];
    for (int f = 0; f < BA_ZF_COUNT; f++) {
      if (row % c->block_rows == 0 || z.min[f] < d->min[f]) d->min[f] = z.min[f];
      if (row % c->block_rows == 0 || z.max[f] > d->max[f]) d->max[f] = z.max[f];
    }
    i += (size_t)k;
  }
  c->n += n;
  return 0;
}

static int copy_range(int from, int to, uint64_t off, uint64_t end) {
  uint8_t *buf = ba_malloc(1u << 20);
  BA_RETURN_IF(!buf, BA_ERR_NOMEM);
  int rc = BA_OK;
  while (off < end && rc == BA_OK) {
    size_t k = (size_t)BA_MIN(end - off, (uint64_t)(1u << 20));
    rc = ba_pread_full(from, buf, k, off);
    if (rc == BA_OK) rc = ba_write_full(to, buf, k);
    off += k;
  }
  ba_free(buf);
  return rc;
}

/* Rewrites one segment; `name` is a file name produced by the store listing. */
/* The header (raw in hb, decoded in *h), footer and row-group table of the
 * segment file src, the table with c's zones into *groups (the caller frees
 * it). */
static int read_groups(int src, const collect_t *c, uint8_t hb[BA_SEG_HDR_BYTES], ba_seg_hdr_t *h,
                       ba_seg_footer_t *f, ba_group_ent_t **groups) {
  struct stat sb;
  uint8_t fb[BA_SEG_FOOTER_BYTES];
  if (fstat(src, &sb) != 0 || (uint64_t)sb.st_size < BA_SEG_HDR_BYTES + BA_SEG_FOOTER_BYTES) return BA_ERR_IO;
  uint64_t fsize = (uint64_t)sb.st_size;
  BA_FORWARD(ba_pread_full(src, hb, BA_SEG_HDR_BYTES, 0));
  BA_FORWARD(ba_seg_hdr_decode(hb, h));
  BA_FORWARD(ba_pread_full(src, fb, sizeof fb, fsize - sizeof fb));
  BA_FORWARD(ba_seg_footer_decode(fb, f));
  ba_blk_hdr_t bh;
  uint8_t *tbuf = NULL;
  size_t tcap = 0;
  int rc = ba_blk_read(src, f->table_off, fsize - sizeof fb, &bh, &tbuf, &tcap);
  unsigned nc = ba_seg_ncols(h->major);
  if (rc >= 0 && (bh.type != BA_BLK_TABLE || bh.raw_len != (uint64_t)f->ngroups * ba_table_entry_bytes(nc) ||
                  f->ngroups != c->ngroups))
    rc = BA_ERR_CORRUPT;
  if (rc >= 0 && !(*groups = ba_malloc((size_t)f->ngroups * sizeof **groups))) rc = BA_ERR_NOMEM;
  for (uint32_t g = 0; rc >= 0 && g < f->ngroups; g++) {
    const uint8_t *e = tbuf + (size_t)g * ba_table_entry_bytes(nc);
    ba_group_ent_t *ge = &(*groups)[g];
    ge->off = ba_load_le64(e);
    ge->rows = ba_load_le32(e + 8);
    ge->len = ba_load_le32(e + 12);
    for (unsigned k = 0; k < nc; k++) ge->col_off[k] = ba_load_le32(e + 16 + 4 * k);
    ge->zone = c->zones[g];
  }
  ba_free(tbuf);
  return rc < 0 ? rc : BA_OK;
}

static int reindex_one(int dirfd, ba_segment_t *seg, const char *name, ba_codec_t codec,
                       const char *device, int threads, char *err, size_t errcap) {
  ba_segment_info_t in;
  BA_FORWARD(ba_segment_info(seg, &in));
  collect_t c = {.start = in.start_ns, .bin_ns = (uint64_t)in.time_bin_seconds * 1000000000ull};
  ba_idx_attr_t attrs[BA_ATTR_COUNT];
  memset(attrs, 0, sizeof attrs);
  ba_group_ent_t *groups = NULL;
  uint8_t hb[BA_SEG_HDR_BYTES];
  ba_seg_hdr_t h;
  ba_seg_footer_t f;
  int rc = BA_OK, src = -1, dst = -1;
  char tmp[300];
  snprintf(tmp, sizeof tmp, "%s.tmp", name);
  for (int a = 0; a < BA_ATTR_COUNT; a++)
    if (!(c.vals[a] = ba_malloc((size_t)(in.rows ? in.rows : 1) * sizeof(uint32_t)))) rc = BA_ERR_NOMEM;
  c.block_rows = in.block_rows;
  c.ngroups = in.nblocks;
  if (!(c.zones = ba_calloc(in.nblocks ? in.nblocks : 1, sizeof *c.zones))) rc = BA_ERR_NOMEM;
  uint64_t damaged = 0;
  if (rc == BA_OK)
    rc = ba_segment_scan(seg, BA_COL_FIRST | BA_COL_LAST | BA_COL_SRC | BA_COL_DST | BA_COL_PORTS | BA_COL_PROTO |
                                  BA_COL_FLAGS | BA_COL_PACKETS | BA_COL_BYTES | BA_COL_OUT,
                         collect_sink, &c, &damaged);
  if (rc == BA_OK && (damaged || c.n != in.rows)) {
    snprintf(err, errcap, "%s: %llu damaged rows; not reindexed (run bitarc verify)", name,
             (unsigned long long)damaged);
    rc = BA_ERR_CORRUPT;
    goto done;
  }
  if (rc < 0) goto done;
  uint32_t doms[BA_ATTR_COUNT];
  for (int a = 0; a < BA_ATTR_COUNT; a++)
    doms[a] = ba_attr_domain((ba_attr_t)a, in.end_ns - in.start_ns, c.bin_ns);
  if ((rc = ba_idx_batch_build_many(device, codec, (const uint32_t *const *)c.vals, doms,
                                    BA_ATTR_COUNT, (size_t)in.rows, threads, attrs)) < 0)
    goto done;
  src = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (src < 0) {
    rc = BA_ERR_IO;
    goto done;
  }
  if ((rc = read_groups(src, &c, hb, &h, &f, &groups)) < 0) goto done;
  unlinkat(dirfd, tmp, 0);
  dst = openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (dst < 0) {
    rc = BA_ERR_IO;
    goto done;
  }
  h.codec = (uint8_t)codec;
  ba_seg_hdr_encode(&h, hb);
  if ((rc = ba_write_full(dst, hb, sizeof hb)) < 0 ||
      (rc = copy_range(src, dst, BA_SEG_HDR_BYTES, f.index_off)) < 0)
    goto done;
  ba_seg_finish_t sf = {.fd = dst, .dirfd = dirfd, .open_name = tmp, .final_name = name,
                        .end = f.index_off, .groups = groups, .ngroups = f.ngroups, .ncols = ba_seg_ncols(h.major), .rows = f.rows,
                        .min_first = f.min_first, .max_first = f.max_first, .kinds = f.kinds,
                        .attrs = attrs, .major = h.major, .minor = h.minor};
  rc = ba_seg_finish(&sf);
done:
  if (rc < 0) {
    if (dst >= 0) unlinkat(dirfd, tmp, 0);
    if (!err[0]) snprintf(err, errcap, "%s: %s", name, ba_strerror(rc));
  }
  if (src >= 0) close(src);
  if (dst >= 0) close(dst);
  for (int a = 0; a < BA_ATTR_COUNT; a++) {
    ba_free(c.vals[a]);
    ba_idx_attr_clear(&attrs[a]);
  }
  ba_free(groups);
  ba_free(c.zones);
  return rc;
}

int ba_store_lock(const char *dir, int *dirfd_out, int *lockfd_out, char *errbuf, size_t errcap) {
  int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) {
    snprintf(errbuf, errcap, "%s: %s", dir, strerror(errno));
    return errno == ENOENT ? BA_ERR_NOT_FOUND : BA_ERR_IO;
  }
  int lockfd = openat(dirfd, ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lockfd < 0 || flock(lockfd, LOCK_EX | LOCK_NB) != 0) {
    int rc = (lockfd >= 0 && errno == EWOULDBLOCK) ? BA_ERR_BUSY : BA_ERR_IO;
    snprintf(errbuf, errcap, "%s: %s", dir, rc == BA_ERR_BUSY ? "a writer holds the store" : strerror(errno));
    if (lockfd >= 0) close(lockfd);
    close(dirfd);
    return rc;
  }
  *dirfd_out = dirfd;
  *lockfd_out = lockfd;
  return BA_OK;
}

int ba_store_each_segment(const char *dir, int dirfd, ba_seg_each_fn fn, void *ctx, size_t *nsegs, char *errbuf,
                          size_t errcap) {
  ba_store_t *s = NULL;
  int first = ba_store_open(dir, &s);
  if (first < 0) snprintf(errbuf, errcap, "%s: %s", dir, ba_strerror(first));
  for (size_t i = 0; s && i < ba_store_segment_count(s); i++) {
    ba_segment_t *seg;
    char err[512] = "";
    int r = ba_store_segment(s, i, &seg);
    if (r < 0) {
      snprintf(err, sizeof err, "%s", ba_store_errmsg(s));
    } else {
      r = fn(ctx, dirfd, seg, ba_store_segment_name(s, i), err, sizeof err);
      ba_segment_release(seg);
      if (r == BA_OK && nsegs) (*nsegs)++;
    }
    if (r < 0 && first == BA_OK) {
      first = r;
      snprintf(errbuf, errcap, "%s", err);
    }
  }
  ba_store_close(s);
  return first;
}

typedef struct reindex_ctx {
  ba_codec_t codec;
  const char *device;
  int threads;
} reindex_ctx_t;

static int reindex_seg(void *ctx, int dirfd, ba_segment_t *seg, const char *name, char *err, size_t errcap) {
  const reindex_ctx_t *x = ctx;
  return reindex_one(dirfd, seg, name, x->codec, x->device, x->threads, err, errcap);
}

int ba_store_reindex(const char *dir, ba_codec_t codec, const char *device, int threads,
                     size_t *nsegs, char *errbuf, size_t errcap) {
  char dummy[8];
  if (!errbuf || errcap == 0) {
    errbuf = dummy;
    errcap = sizeof dummy;
  }
  errbuf[0] = 0;
  if (nsegs) *nsegs = 0;
  BA_RETURN_IF(!dir || !ba_codec_name(codec), BA_ERR_INVALID);
  if (!device) device = "cpu";
  /* An unbuilt or unknown device fails before anything is touched. */
  uint32_t dom = 1;
  const uint32_t *none = NULL;
  ba_idx_attr_t probe;
  int rc = ba_idx_batch_build_many(device, codec, &none, &dom, 0, 0, 1, &probe);
  if (rc < 0) {
    snprintf(errbuf, errcap, "device '%s' %s", device,
             rc == BA_ERR_NODEVICE ? "not built" : "unknown");
    return rc;
  }
  int dirfd, lockfd, clockfd;
  BA_FORWARD(ba_store_lock(dir, &dirfd, &lockfd, errbuf, errcap));
  /* Not while a clustering (which runs beside writers) rewrites segments. */
  if ((rc = ba_store_cluster_lock(dirfd, &clockfd)) < 0) {
    snprintf(errbuf, errcap, "%s: %s", dir, rc == BA_ERR_BUSY ? "a clustering (reindex --cluster) is running on it"
                                                              : "cannot open .cluster.lock");
    close(lockfd);
    close(dirfd);
    return rc;
  }
  reindex_ctx_t rx = {codec, device, threads};
  int first = ba_store_each_segment(dir, dirfd, reindex_seg, &rx, nsegs, errbuf, errcap);
  close(clockfd);
  close(lockfd);
  close(dirfd);
  return first;
}

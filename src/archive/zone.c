/* Zone maps (doc/format.md §7.2): per row group the smallest and the largest
 * value of a few fields. Whoever builds a group (the writer's workers,
 * recovery, reindex) computes its zone into the group's TABLE entry;
 * ba_seg_finish writes one ZONE block per field and a ZONEDIR block listing
 * them, whose offset goes into the footer (0: no zone maps). The reader
 * reads the directory and a field's block when a query first asks for that
 * field (ba_segment_zone); verify checks them all. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "archive/archive.h"
#include "archive/col3.h"
#include "archive/reader_int.h"
#include "common/common.h"

#define ZONE_HDR 8u  /* u8 field, u8 0, u16 0, u32 ngroups */
#define ZDIR_ENT 24u /* u8 field, 3 x 0, u32 CRC, u64 offset, u32 length, u32 0 */

static const char *const zone_names[BA_ZF_COUNT] = {"first",     "last",     "duration", "packets", "bytes",
                                                    "out_bytes", "src_port", "dst_port", "proto"};

const char *ba_zfield_name(ba_zfield_t f) { return (unsigned)f < BA_ZF_COUNT ? zone_names[f] : NULL; }

void ba_zone_compute(const ba_record_t *r, size_t n, ba_zone_t *z) {
  uint64_t mn[BA_ZF_COUNT], mx[BA_ZF_COUNT];
  for (int f = 0; f < BA_ZF_COUNT; f++) {
    mn[f] = UINT64_MAX;
    mx[f] = 0;
  }
  for (size_t i = 0; i < n; i++) {
    const ba_record_t *x = &r[i];
    uint64_t v[BA_ZF_COUNT] = {x->first_ns,
                               x->last_ns,
                               x->last_ns > x->first_ns ? x->last_ns - x->first_ns : 0,
                               x->packets,
                               x->bytes,
                               x->out_bytes,
                               x->src_port,
                               x->dst_port,
                               x->proto};
    for (int f = 0; f < BA_ZF_COUNT; f++) {
      mn[f] = v[f] < mn[f] ? v[f] : mn[f];
      mx[f] = v[f] > mx[f] ? v[f] : mx[f];
    }
  }
  if (n == 0)
    for (int f = 0; f < BA_ZF_COUNT; f++) mn[f] = 0;
  memcpy(z->min, mn, sizeof mn);
  memcpy(z->max, mx, sizeof mx);
}

void ba_zone_times(const ba_record_t *r, size_t n, ba_zone_t *z) {
  uint64_t lmn = UINT64_MAX, lmx = 0, dmn = UINT64_MAX, dmx = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t f = r[i].first_ns, l = r[i].last_ns, d = l > f ? l - f : 0;
    lmn = l < lmn ? l : lmn;
    lmx = l > lmx ? l : lmx;
    dmn = d < dmn ? d : dmn;
    dmx = d > dmx ? d : dmx;
  }
  if (n == 0) lmn = dmn = 0;
  z->min[BA_ZF_LAST] = lmn;
  z->max[BA_ZF_LAST] = lmx;
  z->min[BA_ZF_DURATION] = dmn;
  z->max[BA_ZF_DURATION] = dmx;
}

int ba_zone_col_field(ba_zfield_t f, int *col, int *k) {
  size_t off;
  switch (f) {
    case BA_ZF_FIRST: off = offsetof(ba_record_t, first_ns); break;
    case BA_ZF_PACKETS: off = offsetof(ba_record_t, packets); break;
    case BA_ZF_BYTES: off = offsetof(ba_record_t, bytes); break;
    case BA_ZF_OUT_BYTES: off = offsetof(ba_record_t, out_bytes); break;
    case BA_ZF_SRC_PORT: off = offsetof(ba_record_t, src_port); break;
    case BA_ZF_DST_PORT: off = offsetof(ba_record_t, dst_port); break;
    case BA_ZF_PROTO: off = offsetof(ba_record_t, proto); break;
    default: return -1; /* LAST, DURATION: ba_zone_times */
  }
  unsigned w;
  return ba_col3_field_at(off, col, k, &w);
}

/* ---------- writing ---------- */

typedef int (*put_fn)(void *ctx, const void *p, size_t n);

static int put_blk(put_fn put, void *ctx, uint8_t type, const uint8_t *payload, size_t len, uint32_t *crc) {
  ba_blk_hdr_t h = {.type = type, .col = 0xFF, .compress = BA_COMPRESS_NONE, .rows = 0,
                    .raw_len = (uint32_t)len, .comp_len = (uint32_t)len, .group = 0,
                    .payload_crc = ba_crc32c(0, payload, len)};
  uint8_t hb[BA_BLK_HDR_BYTES];
  ba_blk_hdr_encode(&h, hb);
  if (crc) *crc = h.payload_crc;
  BA_FORWARD(put(ctx, hb, sizeof hb));
  return put(ctx, payload, len);
}

int ba_zone_write(const ba_group_ent_t *groups, uint32_t ngroups, uint64_t off, put_fn put, void *ctx,
                  uint64_t *zdir_off) {
  *zdir_off = 0;
  uint64_t plen = ZONE_HDR + 16ull * ngroups;
  if (ngroups == 0 || ngroups > BA_ZONE_MAX_GROUPS) return BA_OK; /* no zone maps: queries read the columns */
  uint8_t *buf = ba_malloc((size_t)plen);
  BA_RETURN_IF(!buf, BA_ERR_NOMEM);
  uint8_t dir[8 + ZDIR_ENT * BA_ZF_COUNT];
  memset(dir, 0, sizeof dir);
  ba_store_le32(dir, BA_ZF_COUNT);
  int rc = BA_OK;
  for (int f = 0; f < BA_ZF_COUNT && rc == BA_OK; f++) {
    memset(buf, 0, ZONE_HDR);
    buf[0] = (uint8_t)f;
    ba_store_le32(buf + 4, ngroups);
    for (uint32_t g = 0; g < ngroups; g++) {
      ba_store_le64(buf + ZONE_HDR + 16ull * g, groups[g].zone.min[f]);
      ba_store_le64(buf + ZONE_HDR + 16ull * g + 8, groups[g].zone.max[f]);
    }
    uint8_t *e = dir + 8 + ZDIR_ENT * (size_t)f;
    uint32_t crc = 0;
    rc = put_blk(put, ctx, BA_BLK_ZONE, buf, (size_t)plen, &crc);
    e[0] = (uint8_t)f;
    ba_store_le32(e + 4, crc);
    ba_store_le64(e + 8, off);
    ba_store_le32(e + 16, (uint32_t)(BA_BLK_HDR_BYTES + plen));
    off += BA_BLK_HDR_BYTES + plen;
  }
  ba_free(buf);
  BA_FORWARD(rc);
  *zdir_off = off;
  return put_blk(put, ctx, BA_BLK_ZONEDIR, dir, sizeof dir, NULL);
}

/* ---------- reading ---------- */

void ba_rd_zone_release(ba_segment_t *g) {
  ba_free(g->zdir);
  g->zdir = NULL;
  g->nzdir = 0;
  g->zdir_state = 0;
  for (int f = 0; f < BA_ZF_COUNT; f++) {
    ba_free(g->zone[f]);
    g->zone[f] = NULL;
    g->zone_state[f] = 0;
  }
}

static uint64_t zone_plen(const ba_segment_t *g) { return ZONE_HDR + 16ull * g->f.ngroups; }

/* Reads and checks the ZONEDIR block once. */
static int zdir_load(ba_segment_t *g) {
  if (g->zdir_state) return g->zdir_state < 0 ? g->zdir_state : BA_OK;
  if (g->f.zone_off == 0) return BA_ERR_NOT_FOUND;
  ba_blk_hdr_t h;
  uint8_t *buf = NULL;
  size_t cap = 0;
  int rc = ba_blk_read(g->fd, g->f.zone_off, g->f.table_off, &h, &buf, &cap);
  if (rc == BA_OK && (h.type != BA_BLK_ZONEDIR || h.compress != BA_COMPRESS_NONE || h.raw_len != h.comp_len))
    rc = BA_ERR_CORRUPT;
  if (rc == BA_OK && h.comp_len < 8) rc = BA_ERR_TRUNCATED;
  uint32_t n = 0;
  if (rc == BA_OK) {
    n = ba_load_le32(buf);
    if (ba_load_le32(buf + 4) != 0 || n > (h.comp_len - 8) / ZDIR_ENT || h.comp_len != 8 + (uint64_t)n * ZDIR_ENT)
      rc = BA_ERR_CORRUPT;
  }
  for (uint32_t i = 0; rc == BA_OK && i < n; i++) {
    const uint8_t *e = buf + 8 + (size_t)i * ZDIR_ENT;
    uint64_t off = ba_load_le64(e + 8), len = ba_load_le32(e + 16);
    if (e[1] || e[2] || e[3] || ba_load_le32(e + 20) != 0) rc = BA_ERR_CORRUPT;
    /* ZONE blocks lie after the index bitmaps, before their directory. */
    else if (off < g->f.index_off || off > g->f.zone_off || len > g->f.zone_off - off) rc = BA_ERR_CORRUPT;
    else if (e[0] < BA_ZF_COUNT && len != BA_BLK_HDR_BYTES + zone_plen(g)) rc = BA_ERR_CORRUPT;
  }
  if (rc < 0) {
    ba_free(buf);
    ba_rd_serr(g->store, "%s: zone directory (ZONEDIR block) at offset %llu: %s", g->name,
               (unsigned long long)g->f.zone_off, ba_strerror(rc));
    g->zdir_state = rc;
    return rc;
  }
  g->zdir = buf;
  g->nzdir = n;
  g->zdir_state = 1;
  return BA_OK;
}

/* Reads and checks the ZONE block of field f (directory entry e). */
static int zone_read(ba_segment_t *g, int f, const uint8_t *e, uint64_t **out) {
  uint64_t off = ba_load_le64(e + 8);
  ba_blk_hdr_t h;
  uint8_t *buf = NULL;
  size_t cap = 0;
  uint32_t ng = g->f.ngroups;
  uint64_t *z = NULL;
  int rc = ba_blk_read(g->fd, off, g->f.zone_off, &h, &buf, &cap);
  if (rc == BA_OK && (h.type != BA_BLK_ZONE || h.compress != BA_COMPRESS_NONE || h.raw_len != h.comp_len ||
                      h.comp_len != zone_plen(g)))
    rc = BA_ERR_CORRUPT;
  if (rc == BA_OK && h.payload_crc != ba_load_le32(e + 4)) rc = BA_ERR_CHECKSUM;
  if (rc == BA_OK && (buf[0] != f || buf[1] || buf[2] || buf[3] || ba_load_le32(buf + 4) != ng))
    rc = BA_ERR_CORRUPT;
  if (rc == BA_OK && !(z = ba_malloc(2 * (size_t)ng * sizeof *z))) rc = BA_ERR_NOMEM;
  for (uint32_t i = 0; rc == BA_OK && i < ng; i++) {
    z[i] = ba_load_le64(buf + ZONE_HDR + 16ull * i);
    z[ng + i] = ba_load_le64(buf + ZONE_HDR + 16ull * i + 8);
    if (z[i] > z[ng + i]) rc = BA_ERR_CORRUPT;
    else if (f == BA_ZF_FIRST && (z[i] < g->f.min_first || z[ng + i] > g->f.max_first)) rc = BA_ERR_CORRUPT;
  }
  ba_free(buf);
  if (rc < 0) {
    ba_free(z);
    ba_rd_serr(g->store, "%s: zone map (ZONE block) of field %s at offset %llu: %s", g->name, zone_names[f],
               (unsigned long long)off, ba_strerror(rc));
    return rc;
  }
  *out = z;
  return BA_OK;
}

/* The directory entry of field f, or NULL. */
static const uint8_t *zdir_find(const ba_segment_t *g, int f) {
  for (uint32_t i = 0; i < g->nzdir; i++)
    if (g->zdir[8 + (size_t)i * ZDIR_ENT] == f) return g->zdir + 8 + (size_t)i * ZDIR_ENT;
  return NULL;
}

int ba_segment_zone(ba_segment_t *g, ba_zfield_t f, const uint64_t **min, const uint64_t **max) {
  BA_RETURN_IF(!g || (unsigned)f >= BA_ZF_COUNT || !min || !max || g->open_rc < 0, BA_ERR_INVALID);
  if (g->zone_state[f] == 0) {
    int rc = zdir_load(g);
    const uint8_t *e = rc == BA_OK ? zdir_find(g, f) : NULL;
    if (rc == BA_OK && !e) rc = BA_ERR_NOT_FOUND;
    if (rc == BA_OK) rc = zone_read(g, f, e, &g->zone[f]);
    g->zone_state[f] = rc < 0 ? rc : 1;
  }
  if (g->zone_state[f] < 0) return g->zone_state[f];
  *min = g->zone[f];
  *max = g->zone[f] + g->f.ngroups;
  return BA_OK;
}

int ba_rd_zone_verify(ba_segment_t *g, uint64_t *nbad, char *msg, size_t cap) {
  *nbad = 0;
  if (g->f.zone_off == 0) return BA_OK;
  ba_rd_zone_release(g); /* read again from the file */
  int first = zdir_load(g);
  if (first < 0) {
    *nbad = 1;
    snprintf(msg, cap, "%s", g->store->errmsg);
    return first;
  }
  for (uint32_t i = 0; i < g->nzdir; i++) {
    const uint8_t *e = g->zdir + 8 + (size_t)i * ZDIR_ENT;
    if (e[0] >= BA_ZF_COUNT) continue; /* a field of a later version */
    uint64_t *z = NULL;
    int rc = zone_read(g, e[0], e, &z);
    ba_free(z);
    if (rc < 0) {
      if (!*nbad) {
        first = rc;
        snprintf(msg, cap, "%s", g->store->errmsg);
      }
      (*nbad)++;
    }
  }
  ba_rd_zone_release(g);
  return first;
}

/* Index serialization: bitmaps in (attr, value) order, and the directory that
 * finds one by binary search (doc/format.md §4). */
#include <string.h>

#include "common/common.h"
#include "index/index.h"

int ba_idx_write(const ba_idx_attr_t *attrs, size_t nattr, uint64_t base, ba_idx_write_fn fn,
                 void *ctx, ba_idx_pack_fn pack, void *pctx, ba_idx_dirent_t **dir, size_t *ndir,
                 uint64_t *bytes_attr) {
  BA_RETURN_IF(!attrs || !fn || !dir || !ndir, BA_ERR_INVALID);
  size_t total = 0;
  for (size_t a = 0; a < nattr; a++) total += attrs[a].n;
  ba_idx_dirent_t *d = ba_malloc((total ? total : 1) * sizeof *d);
  BA_RETURN_IF(!d, BA_ERR_NOMEM);
  uint8_t *buf = NULL;
  size_t cap = 0, k = 0;
  uint64_t off = base;
  int rc = BA_OK;
  for (size_t a = 0; a < nattr; a++) {
    if (bytes_attr) bytes_attr[a] = 0;
    for (size_t i = 0; i < attrs[a].n; i++) {
      size_t need = ba_bitmap_serialized_size(attrs[a].bms[i]), len = 0;
      if (need > cap) {
        void *p = buf;
        if ((rc = ba_grow(&p, &cap, need, 1)) < 0) goto fail;
        buf = p;
      }
      if ((rc = ba_bitmap_serialize(attrs[a].bms[i], buf, cap, &len)) < 0) goto fail;
      const uint8_t *rec = buf;
      if (pack && (rc = pack(pctx, buf, len, &rec, &len)) < 0) goto fail;
      if (len > UINT32_MAX) {
        rc = BA_ERR_OVERFLOW;
        goto fail;
      }
      if ((rc = fn(ctx, rec, len)) < 0) goto fail;
      d[k] = (ba_idx_dirent_t){.attr = (uint16_t)a, .value = attrs[a].values[i], .off = off,
                               .len = (uint32_t)len, .crc = ba_crc32c(0, rec, len)};
      k++;
      off += len;
      if (bytes_attr) bytes_attr[a] += len;
    }
  }
  ba_free(buf);
  *dir = d;
  *ndir = k;
  return BA_OK;
fail:
  ba_free(buf);
  ba_free(d);
  return rc;
}

size_t ba_idx_dir_size(size_t n) { return 8 + n * BA_IDX_DIRENT_BYTES; }

void ba_idx_dir_encode(const ba_idx_dirent_t *d, size_t n, uint8_t *out) {
  ba_store_le32(out, (uint32_t)n);
  ba_store_le32(out + 4, 0);
  uint8_t *p = out + 8;
  for (size_t i = 0; i < n; i++, p += BA_IDX_DIRENT_BYTES) {
    ba_store_le16(p, d[i].attr);
    ba_store_le16(p + 2, 0);
    ba_store_le32(p + 4, d[i].value);
    ba_store_le64(p + 8, d[i].off);
    ba_store_le32(p + 16, d[i].len);
    ba_store_le32(p + 20, d[i].crc);
  }
}

int ba_idx_dir_decode(const uint8_t *p, size_t len, size_t nattr, uint64_t lo, uint64_t hi,
                      ba_idx_dirent_t **d, size_t *n) {
  BA_RETURN_IF(!p || !d || !n, BA_ERR_INVALID);
  BA_RETURN_IF(len < 8, BA_ERR_TRUNCATED);
  uint32_t cnt = ba_load_le32(p);
  BA_RETURN_IF(ba_load_le32(p + 4) != 0, BA_ERR_CORRUPT);
  BA_RETURN_IF(cnt > (len - 8) / BA_IDX_DIRENT_BYTES || len - 8 != (size_t)cnt * BA_IDX_DIRENT_BYTES,
               BA_ERR_CORRUPT);
  ba_idx_dirent_t *e = ba_malloc((cnt ? cnt : 1) * sizeof *e);
  BA_RETURN_IF(!e, BA_ERR_NOMEM);
  const uint8_t *q = p + 8;
  for (uint32_t i = 0; i < cnt; i++, q += BA_IDX_DIRENT_BYTES) {
    e[i].attr = ba_load_le16(q);
    e[i].value = ba_load_le32(q + 4);
    e[i].off = ba_load_le64(q + 8);
    e[i].len = ba_load_le32(q + 16);
    e[i].crc = ba_load_le32(q + 20);
    int bad = ba_load_le16(q + 2) != 0 || e[i].attr >= nattr || e[i].off < lo || e[i].off > hi ||
              e[i].len > hi - e[i].off;
    if (i > 0 && !bad)
      bad = e[i].attr < e[i - 1].attr || (e[i].attr == e[i - 1].attr && e[i].value <= e[i - 1].value);
    if (bad) {
      ba_free(e);
      return BA_ERR_CORRUPT;
    }
  }
  *d = e;
  *n = cnt;
  return BA_OK;
}

long ba_idx_dir_find(const ba_idx_dirent_t *d, size_t n, uint16_t attr, uint32_t value) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (d[mid].attr < attr || (d[mid].attr == attr && d[mid].value < value)) lo = mid + 1;
    else hi = mid;
  }
  if (lo < n && d[lo].attr == attr && d[lo].value == value) return (long)lo;
  return -1;
}

int ba_idx_bitmap_load(const uint8_t *p, size_t len, uint32_t crc, ba_codec_t codec, uint64_t rows,
                       ba_bitmap_t **out) {
  BA_RETURN_IF(!p || !out, BA_ERR_INVALID);
  BA_RETURN_IF(ba_crc32c(0, p, len) != crc, BA_ERR_CHECKSUM);
  return ba_idx_bitmap_decode(p, len, codec, rows, out);
}

int ba_idx_bitmap_decode(const uint8_t *p, size_t len, ba_codec_t codec, uint64_t rows,
                         ba_bitmap_t **out) {
  BA_RETURN_IF(!p || !out, BA_ERR_INVALID);
  ba_bitmap_t *bm = NULL;
  size_t used = 0;
  BA_FORWARD(ba_bitmap_deserialize(p, len, &bm, &used));
  if (used != len || ba_bitmap_codec(bm) != codec || ba_bitmap_rows(bm) != rows) {
    ba_bitmap_free(bm);
    return BA_ERR_CORRUPT;
  }
  *out = bm;
  return BA_OK;
}

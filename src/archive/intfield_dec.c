/* Decoding of integer fields (doc/format.md §3.2, §7.1): a whole field of
 * FOR, DELTA, DICT or PDICT into its n values. Written by intfield.c;
 * single values without decoding: intfield_get.c. */
#include <string.h>

#include "archive/intfield.h"
#include "archive/intfield_int.h"
#include "common/common.h"

/* Unpacks n values of b bits (1..64) from p[0..len) (len >= ceil(n*b/8)). */
static void unpack_bits(const uint8_t *p, size_t len, size_t n, unsigned bits, uint64_t *v) {
  uint64_t pos = 0, bm = bmask(bits);
  size_t i = 0;
  if (bits <= 57 && len >= 8)
    for (; i < n && (pos >> 3) <= len - 8; i++, pos += bits) v[i] = (ba_load_le64(p + (pos >> 3)) >> (pos & 7)) & bm;
  for (; i < n; i++, pos += bits) v[i] = bit_get(p, len, pos, bits);
}

#define PDICT_RUN 256 /* escapes unpacked at a time */

static int decode2_pdict(const uint8_t *in, size_t len, size_t n, unsigned w, uint64_t *v, size_t *used) {
  uint64_t m = wmask(w);
  unsigned b = in[1], eb = in[3];
  uint32_t nd = ba_load_le32(in + 4);
  uint64_t ebase = ba_load_le64(in + 8), ne = ba_load_le64(in + 16);
  BA_RETURN_IF(in[2] != 0 || b < 1 || b > 8 || nd == 0 || nd >= (1u << b), BA_ERR_CORRUPT);
  BA_RETURN_IF(eb > 8 * w || ebase > m || ne > n, BA_ERR_CORRUPT);
  size_t off = BA_COL2_FIELD_HDR;
  const uint8_t *dict = in + off;
  BA_RETURN_IF((size_t)nd * w > len - off, BA_ERR_CORRUPT);
  off += (size_t)nd * w;
  size_t ib = (size_t)(((uint64_t)n * b + 7) / 8);
  BA_RETURN_IF(ib > len - off, BA_ERR_CORRUPT);
  const uint8_t *idx = in + off;
  off += ib;
  size_t eby = (size_t)((ne * eb + 7) / 8);
  BA_RETURN_IF(eby > len - off, BA_ERR_CORRUPT);
  const uint8_t *exc = in + off;
  off += eby;
  unpack_bits(idx, ib, n, b, v);
  /* nd < 2^b <= 256: the entries as numbers first (0 past nd), the escapes
   * unpacked ahead PDICT_RUN at a time; then no branch per value on whether
   * it escapes (escapes come at random) */
  uint64_t esc = ((uint64_t)1 << b) - 1, e = 0, d[256] = {0}, ev[PDICT_RUN + 1], bad = 0, ebase_i = 0, lim = 0;
  for (uint32_t j = 0; j < nd; j++) {
    uint64_t x = 0;
    for (unsigned q = 0; q < w; q++) x |= (uint64_t)dict[(size_t)j * w + q] << (8 * q);
    d[j] = x;
  }
  ev[0] = 0;
  for (size_t i = 0; i < n; i++) {
    if (e == lim && e < ne) {
      uint64_t cnt = BA_MIN((uint64_t)PDICT_RUN, ne - e);
      for (uint64_t k = 0; k < cnt; k++) ev[k] = (ebase + bit_get(exc, eby, (e + k) * eb, eb)) & m;
      ev[cnt] = 0;
      ebase_i = e;
      lim = e + cnt;
    }
    uint64_t ix = v[i], is = ix == esc;
    bad |= (is & (e >= ne)) | (!is & (ix >= nd));
    uint64_t dv = d[ix & 0xFF], xv = ev[e - ebase_i];
    v[i] = is ? xv : dv;
    e += is & (e < ne); /* an escape past the last is flagged above, e stays in the run */
  }
  BA_RETURN_IF(bad, BA_ERR_CORRUPT);
  BA_RETURN_IF(e != ne, BA_ERR_CORRUPT);
  *used = off;
  return BA_OK;
}

/* Decodes one field at in[0..len) into v[0..n); *used gets its bytes. */
#define DICT_TABLE 1024 /* dictionaries up to this many entries are read into a table */

static int decode2_int(const uint8_t *in, size_t len, size_t n, unsigned w, int allow_planes, uint64_t *v,
                       size_t *used) {
  uint64_t m = wmask(w);
  BA_RETURN_IF(len < BA_COL2_FIELD_HDR, BA_ERR_CORRUPT);
  int method = in[0], planes = in[2];
  unsigned bits = in[1], nb = (bits + 7) / 8;
  uint32_t nd = ba_load_le32(in + 4);
  uint64_t base = ba_load_le64(in + 8), sc = ba_load_le64(in + 16);
  if (method == XF_PDICT) return decode2_pdict(in, len, n, w, v, used);
  BA_RETURN_IF(planes > allow_planes || in[3] != 0 || (planes && method == XF_DICT), BA_ERR_CORRUPT);
  BA_RETURN_IF(method != XF_FOR && method != XF_DELTA && method != XF_DICT, BA_ERR_CORRUPT);
  BA_RETURN_IF(bits > 8 * w || base > m || sc == 0 || sc > m, BA_ERR_CORRUPT);
  BA_RETURN_IF(method == XF_DICT ? (nd == 0 || nd > n || base != 0 || sc != 1) : nd != 0, BA_ERR_CORRUPT);
  size_t off = BA_COL2_FIELD_HDR;
  const uint8_t *dict = in + off;
  size_t dict_bytes = (size_t)nd * w;
  BA_RETURN_IF(dict_bytes > len - off, BA_ERR_CORRUPT);
  off += dict_bytes;
  size_t packed = planes ? (size_t)nb * n : (size_t)(((uint64_t)n * bits + 7) / 8);
  BA_RETURN_IF(packed > len - off, BA_ERR_CORRUPT);
  const uint8_t *p = in + off;
  /* The stored values. */
  if (!bits) {
    memset(v, 0, n * sizeof *v);
  } else if (planes) {
    for (size_t i = 0; i < n; i++) v[i] = p[i];
    for (unsigned b = 1; b < nb; b++)
      for (size_t i = 0; i < n; i++) v[i] |= (uint64_t)p[(size_t)b * n + i] << (8 * b);
  } else {
    unpack_bits(p, packed, n, bits, v);
  }
  /* The values they stand for. */
  if (method == XF_DICT && nd <= DICT_TABLE) {
    /* the entries as numbers first: one load per value, the check folded */
    uint64_t d[DICT_TABLE], bad = 0;
    for (uint32_t j = 0; j < nd; j++) {
      uint64_t x = 0;
      for (unsigned b = 0; b < w; b++) x |= (uint64_t)dict[(size_t)j * w + b] << (8 * b);
      d[j] = x;
    }
    for (size_t i = 0; i < n; i++) {
      uint64_t ix = v[i];
      bad |= ix >= nd;
      v[i] = d[ix < nd ? ix : 0];
    }
    BA_RETURN_IF(bad, BA_ERR_CORRUPT);
  } else if (method == XF_DICT) {
    for (size_t i = 0; i < n; i++) {
      BA_RETURN_IF(v[i] >= nd, BA_ERR_CORRUPT);
      uint64_t x = 0;
      for (unsigned b = 0; b < w; b++) x |= (uint64_t)dict[v[i] * w + b] << (8 * b);
      v[i] = x;
    }
  } else {
    if (method == XF_DELTA) {
      uint64_t acc = 0;
      for (size_t i = 0; i < n; i++) v[i] = acc = (acc + unzz(v[i], m)) & m;
    }
    if (sc == 1) {
      for (size_t i = 0; i < n; i++) v[i] = (base + v[i]) & m;
    } else {
      for (size_t i = 0; i < n; i++) v[i] = (base + v[i] * sc) & m;
    }
  }
  *used = off + packed;
  return BA_OK;
}


int ba_if_decode(const uint8_t *in, size_t len, size_t n, unsigned w, int allow_planes, uint64_t *v,
                 size_t *used) {
  return decode2_int(in, len, n, w, allow_planes, v, used);
}

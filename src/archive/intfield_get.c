/* Single values of 3.0 integer fields (doc/format.md §7.1): ba_if_reader_t
 * reads chosen rows of a bit-packed field without decoding the others (FOR
 * and DICT at any row; DELTA sums and PDICT escape counts from a cursor). */
#include <pthread.h>
#include <string.h>

#include "archive/intfield.h"
#include "archive/intfield_int.h"
#include "common/common.h"

int ba_if_open(const uint8_t *in, size_t len, size_t n, unsigned w, ba_if_reader_t *r, size_t *used) {
  BA_RETURN_IF(len < BA_COL2_FIELD_HDR, BA_ERR_CORRUPT);
  memset(r, 0, sizeof *r);
  uint64_t m = wmask(w);
  r->method = in[0];
  r->bits = in[1];
  r->w = w;
  r->mask = m;
  unsigned layout = in[2];
  uint32_t nd = ba_load_le32(in + 4);
  uint64_t base = ba_load_le64(in + 8), sc = ba_load_le64(in + 16);
  BA_RETURN_IF(layout != 0, BA_ERR_CORRUPT);
  size_t off = BA_COL2_FIELD_HDR;
  if (r->method == XF_PDICT) {
    unsigned eb = in[3];
    BA_RETURN_IF(r->bits < 1 || r->bits > 8 || nd == 0 || nd >= (1u << r->bits), BA_ERR_CORRUPT);
    BA_RETURN_IF(eb > 8 * w || base > m || sc > n, BA_ERR_CORRUPT);
    r->eb = eb;
    r->ne = sc;
  } else {
    BA_RETURN_IF(in[3] != 0, BA_ERR_CORRUPT);
    BA_RETURN_IF(r->method != XF_FOR && r->method != XF_DELTA && r->method != XF_DICT, BA_ERR_CORRUPT);
    BA_RETURN_IF(r->bits > 8 * w || base > m || sc == 0 || sc > m, BA_ERR_CORRUPT);
    BA_RETURN_IF(r->method == XF_DICT ? (nd == 0 || nd > n || base != 0 || sc != 1) : nd != 0, BA_ERR_CORRUPT);
  }
  r->nd = nd;
  r->base = base;
  r->scale = sc;
  BA_RETURN_IF((size_t)nd * w > len - off, BA_ERR_CORRUPT);
  r->dict = in + off;
  /* entry i is read with one load if its first byte + 8 <= len */
  r->dict_fast = len - off >= 8 ? (uint32_t)BA_MIN((uint64_t)nd, (uint64_t)(len - off - 8) / w + 1) : 0;
  off += (size_t)nd * w;
  size_t packed = (size_t)(((uint64_t)n * r->bits + 7) / 8);
  BA_RETURN_IF(packed > len - off, BA_ERR_CORRUPT);
  r->vals = in + off;
  r->vals_len = packed;
  off += packed;
  if (r->method == XF_PDICT) {
    size_t eby = (size_t)((r->ne * r->eb + 7) / 8);
    BA_RETURN_IF(eby > len - off, BA_ERR_CORRUPT);
    r->exc = in + off;
    r->exc_len = eby;
    off += eby;
  }
  r->n = n;
  *used = off;
  return BA_OK;
}

/* Bit count without the popcnt instruction (the build targets baseline
 * x86-64, where __builtin_popcountll is a libgcc call). */
static inline uint64_t popcount_swar(uint64_t x) {
  x -= (x >> 1) & 0x5555555555555555ull;
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
  return (x * 0x0101010101010101ull) >> 56;
}

/* How many of the b-bit values (b <= 8) at rows [from, to) of a packed
 * stream have every bit set (PDICT escapes). A 64-bit window holds the
 * (64 - pos % 8) / b whole values from bit pos on; a value's lowest bit
 * survives the AND of the window with its shifts by 1 .. b-1 only if all of
 * its bits are set. `hw`: the popcnt instruction (a constant once inlined). */
static inline __attribute__((always_inline)) uint64_t count_ones_body(const uint8_t *p, size_t len, size_t from,
                                                                      size_t to, unsigned b, int hw) {
  uint64_t starts = 0, n = 0, pos = (uint64_t)from * b;
  for (unsigned s = 0; s + b <= 64; s += b) starts |= 1ull << s;
  size_t i = from;
  /* Windows of a fixed q = (64 - 7) / b values, whatever bit they start
   * at: each window's load and shift follow from i alone, so successive
   * windows do not wait for each other. Only windows whose 8 bytes lie in
   * the stream; the rest below. */
  const unsigned q = 57 / b;
  const uint64_t qmask = (1ull << (q * b)) - 1, qstarts = starts & qmask;
  size_t fast_to = len >= 8 ? (size_t)(((uint64_t)(len - 8) * 8) / b) : 0; /* rows whose window's load fits */
  fast_to = BA_MIN(fast_to, to);
  if (i + q <= fast_to) {
    uint64_t n1 = 0;
    for (; i + 2 * q <= fast_to; i += 2 * q) {
      uint64_t p0 = (uint64_t)i * b, p1 = p0 + (uint64_t)q * b;
      uint64_t x0 = (ba_load_le64(p + (p0 >> 3)) >> (p0 & 7)) & qmask;
      uint64_t x1 = (ba_load_le64(p + (p1 >> 3)) >> (p1 & 7)) & qmask;
      uint64_t y0 = x0, y1 = x1;
      for (unsigned s = 1; s < b; s++) y0 &= x0 >> s, y1 &= x1 >> s;
#if defined(__x86_64__) && defined(__GNUC__)
      n += hw ? (uint64_t)__builtin_popcountll(y0 & qstarts) : popcount_swar(y0 & qstarts);
      n1 += hw ? (uint64_t)__builtin_popcountll(y1 & qstarts) : popcount_swar(y1 & qstarts);
#else
      n += popcount_swar(y0 & qstarts);
      n1 += popcount_swar(y1 & qstarts);
#endif
    }
    n += n1;
    pos = (uint64_t)i * b;
  }
  for (; i < to;) {
    unsigned sh = (unsigned)(pos & 7);
    size_t k = BA_MIN(to - i, (64 - sh) / b), byte = (size_t)(pos >> 3);
    uint64_t x;
    if (len >= 8 && byte <= len - 8) {
      x = ba_load_le64(p + byte);
    } else { /* the stream's last bytes (byte < len: rows < n) */
      uint8_t t[8] = {0};
      memcpy(t, p + byte, len - byte);
      x = ba_load_le64(t);
    }
    unsigned nb = (unsigned)k * b; /* <= 64 - sh */
    x >>= sh;
    if (nb < 64) x &= (1ull << nb) - 1;
    uint64_t y = x;
    for (unsigned s = 1; s < b; s++) y &= x >> s;
#if defined(__x86_64__) && defined(__GNUC__)
    n += hw ? (uint64_t)__builtin_popcountll(y & starts) : popcount_swar(y & starts);
#else
    (void)hw;
    n += popcount_swar(y & starts);
#endif
    i += k;
    pos += nb;
  }
  return n;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* b a constant in each case: the shifts and ANDs unrolled */
__attribute__((target("popcnt"))) static uint64_t count_ones_hw(const uint8_t *p, size_t len, size_t from, size_t to,
                                                                unsigned b) {
  switch (b) {
    case 1: return count_ones_body(p, len, from, to, 1, 1);
    case 2: return count_ones_body(p, len, from, to, 2, 1);
    case 3: return count_ones_body(p, len, from, to, 3, 1);
    case 4: return count_ones_body(p, len, from, to, 4, 1);
    case 5: return count_ones_body(p, len, from, to, 5, 1);
    case 6: return count_ones_body(p, len, from, to, 6, 1);
    case 7: return count_ones_body(p, len, from, to, 7, 1);
    default: return count_ones_body(p, len, from, to, b, 1);
  }
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
static pthread_once_t g_popcnt_once = PTHREAD_ONCE_INIT;
static int g_popcnt;
static void popcnt_init(void) {
  __builtin_cpu_init();
  g_popcnt = __builtin_cpu_supports("popcnt") ? 1 : 0;
}
#endif

static uint64_t count_all_ones(const uint8_t *p, size_t len, size_t from, size_t to, unsigned b) {
#if defined(__x86_64__) && defined(__GNUC__)
  pthread_once(&g_popcnt_once, popcnt_init);
  if (g_popcnt) return count_ones_hw(p, len, from, to, b);
#endif
  return count_ones_body(p, len, from, to, b, 0);
}

static inline uint64_t dict_at(const ba_if_reader_t *r, uint64_t ix) {
  if (ix < r->dict_fast) return ba_load_le64(r->dict + ix * r->w) & r->mask;
  uint64_t x = 0;
  for (unsigned q = 0; q < r->w; q++) x |= (uint64_t)r->dict[ix * r->w + q] << (8 * q);
  return x;
}

int ba_if_get(ba_if_reader_t *r, size_t row, uint64_t *out) {
  BA_RETURN_IF(row >= r->n, BA_ERR_INVALID);
  switch (r->method) {
    case XF_FOR:
      *out = (r->base + bit_get(r->vals, r->vals_len, (uint64_t)row * r->bits, r->bits) * r->scale) & r->mask;
      return BA_OK;
    case XF_DICT: {
      uint64_t ix = bit_get(r->vals, r->vals_len, (uint64_t)row * r->bits, r->bits);
      BA_RETURN_IF(ix >= r->nd, BA_ERR_CORRUPT);
      *out = dict_at(r, ix);
      return BA_OK;
    }
    case XF_DELTA: {
      /* Forward cursor: the running sum of the rows before `row`. */
      if (row < r->cur) {
        r->cur = 0;
        r->acc = 0;
      }
      uint64_t acc = r->acc;
      for (size_t i = r->cur; i <= row; i++)
        acc = (acc + unzz(bit_get(r->vals, r->vals_len, (uint64_t)i * r->bits, r->bits), r->mask)) & r->mask;
      r->cur = row + 1;
      r->acc = acc;
      *out = (r->base + acc * r->scale) & r->mask;
      return BA_OK;
    }
    default: { /* XF_PDICT: forward cursor over the escapes before `row` */
      uint64_t esc = ((uint64_t)1 << r->bits) - 1;
      if (row < r->cur) {
        r->cur = 0;
        r->acc = 0;
      }
      uint64_t e = r->acc + (row > r->cur ? count_all_ones(r->vals, r->vals_len, r->cur, row, r->bits) : 0);
      uint64_t ix = bit_get(r->vals, r->vals_len, (uint64_t)row * r->bits, r->bits);
      r->cur = row + 1;
      r->acc = e + (ix == esc);
      if (ix == esc) {
        BA_RETURN_IF(e >= r->ne, BA_ERR_CORRUPT);
        *out = (r->base + bit_get(r->exc, r->exc_len, e * r->eb, r->eb)) & r->mask;
      } else {
        BA_RETURN_IF(ix >= r->nd, BA_ERR_CORRUPT);
        *out = dict_at(r, ix);
      }
      return BA_OK;
    }
  }
}

/* Zigzag-decoded sum of the 8 b-bit values from bit 0 of p (b a constant
 * once inlined: every load offset and shift is one). */
static inline __attribute__((always_inline)) uint64_t zz_sum8(const uint8_t *p, unsigned b) {
  uint64_t bm = bmask(b), s = 0;
  for (unsigned j = 0; j < 8; j++) {
    uint64_t z = (ba_load_le64(p + ((j * b) >> 3)) >> ((j * b) & 7)) & bm;
    s += (z >> 1) ^ (0 - (z & 1));
  }
  return s;
}

static inline __attribute__((always_inline)) uint64_t zz_sum_run(const uint8_t *v, size_t i, size_t end, unsigned b) {
  uint64_t s0 = 0, s1 = 0;
  for (; i + 16 <= end; i += 16) {
    s0 += zz_sum8(v + (i / 8) * b, b);
    s1 += zz_sum8(v + (i / 8 + 1) * b, b);
  }
  if (i < end) s0 += zz_sum8(v + (i / 8) * b, b);
  return s0 + s1;
}

/* DELTA: the running sum from the cursor (or from row 0 when the rows go
 * back) to each row. b (the value width) is a constant once inlined: every
 * load offset and shift of the sums is one. */
static inline __attribute__((always_inline)) int delta_rows_body(ba_if_reader_t *r, const uint32_t *rows, size_t k,
                                                                 uint64_t *out, unsigned b) {
  const uint8_t *v = r->vals;
  size_t vl = r->vals_len;
  uint64_t m = r->mask;
  if (rows[0] < r->cur) {
    r->cur = 0;
    r->acc = 0;
  }
  /* sums mod 2^64 agree with the masked sums in the field's width */
  uint64_t acc = r->acc;
  size_t i = r->cur;
  /* rows whose 8 bytes at the value's first byte lie in the stream are
   * read with one unchecked load each (b <= 57: one load holds the value) */
  size_t fast_end = (b && b <= 57 && vl >= 8) ? (size_t)(((uint64_t)(vl - 8) * 8) / b) + 1 : 0;
  uint64_t bm = bmask(b);
  for (size_t j = 0; j < k; j++) {
    size_t stop = (size_t)rows[j] + 1, fe = BA_MIN(stop, fast_end);
    if (fe >= i + 16) { /* to a multiple of 8, then 8 values at a time, shifts constant per width */
      for (; i % 8; i++) {
        uint64_t pos = (uint64_t)i * b, z = (ba_load_le64(v + (pos >> 3)) >> (pos & 7)) & bm;
        acc += (z >> 1) ^ (0 - (z & 1));
      }
      size_t e8 = fe & ~(size_t)7;
      acc += zz_sum_run(v, i, e8, b);
      i = e8;
    }
    if (i < fe) {
      uint64_t pos = (uint64_t)i * b, a2 = 0;
      for (; i + 1 < fe; i += 2, pos += 2 * b) {
        uint64_t z = (ba_load_le64(v + (pos >> 3)) >> (pos & 7)) & bm;
        uint64_t z2 = (ba_load_le64(v + ((pos + b) >> 3)) >> ((pos + b) & 7)) & bm;
        acc += (z >> 1) ^ (0 - (z & 1));
        a2 += (z2 >> 1) ^ (0 - (z2 & 1));
      }
      for (; i < fe; i++, pos += b) {
        uint64_t z = (ba_load_le64(v + (pos >> 3)) >> (pos & 7)) & bm;
        acc += (z >> 1) ^ (0 - (z & 1));
      }
      acc += a2;
    }
    for (; i < stop; i++) {
      uint64_t z = bit_get(v, vl, (uint64_t)i * b, b);
      acc += (z >> 1) ^ (0 - (z & 1));
    }
    out[j] = (r->base + acc * r->scale) & m;
  }
  r->cur = i;
  r->acc = acc & m;
  return BA_OK;
}

static int get_rows_delta(ba_if_reader_t *r, const uint32_t *rows, size_t k, uint64_t *out) {
  switch (r->bits) {
#define DELTA_CASE(w) \
  case w: return delta_rows_body(r, rows, k, out, w);
    DELTA_CASE(1) DELTA_CASE(2) DELTA_CASE(3) DELTA_CASE(4) DELTA_CASE(5) DELTA_CASE(6) DELTA_CASE(7) DELTA_CASE(8)
    DELTA_CASE(9) DELTA_CASE(10) DELTA_CASE(11) DELTA_CASE(12) DELTA_CASE(13) DELTA_CASE(14) DELTA_CASE(15)
    DELTA_CASE(16)
#undef DELTA_CASE
    default: return delta_rows_body(r, rows, k, out, r->bits);
  }
}

/* PDICT: a dictionary code per row, the escape code meaning the next
 * exception; the escapes before a row are counted from the cursor. b (the
 * code width, 1..8) and hw (popcnt) are constants once inlined, so the
 * escape counts between picked rows run without a call. */
static inline __attribute__((always_inline)) int pdict_rows_body(ba_if_reader_t *r, const uint32_t *rows, size_t k,
                                                                 uint64_t *out, unsigned b, int hw) {
  const uint8_t *v = r->vals;
  size_t vl = r->vals_len;
  uint64_t m = r->mask;
  uint64_t esc = ((uint64_t)1 << b) - 1;
  if (rows[0] < r->cur) {
    r->cur = 0;
    r->acc = 0;
  }
  uint64_t e = r->acc;
  size_t cur = r->cur;
  /* The escapes before a row are counted forward from the cursor, or
   * back from the field's end (ne in all): the largest gap in cur,
   * rows[0], .., rows[k-1], n is not walked. Rows from `back` on get
   * their escape counts (into out) walking back from n first. */
  size_t back = k, gap = r->n - rows[k - 1] - 1;
  if (rows[0] - cur > gap) back = 0, gap = rows[0] - cur;
  for (size_t j = 1; j < k; j++)
    if (rows[j] - rows[j - 1] - 1 > gap) back = j, gap = rows[j] - rows[j - 1] - 1;
  if (back < k) {
    uint64_t after = 0; /* escapes at rows [rows[j], n) */
    size_t hi = r->n;
    for (size_t j = k; j-- > back;) {
      after += count_ones_body(v, vl, rows[j], hi, b, hw);
      hi = rows[j];
      BA_RETURN_IF(after > r->ne, BA_ERR_CORRUPT);
      out[j] = r->ne - after;
    }
  }
  for (size_t j = 0; j < k; j++) {
    size_t row = rows[j];
    if (j >= back) e = out[j];
    else if (row > cur) e += count_ones_body(v, vl, cur, row, b, hw);
    uint64_t ix = bit_get(v, vl, (uint64_t)row * b, b);
    cur = row + 1;
    if (ix == esc) {
      BA_RETURN_IF(e >= r->ne, BA_ERR_CORRUPT);
      out[j] = (r->base + bit_get(r->exc, r->exc_len, e * r->eb, r->eb)) & m;
      e++;
    } else {
      BA_RETURN_IF(ix >= r->nd, BA_ERR_CORRUPT);
      out[j] = dict_at(r, ix);
    }
  }
  r->cur = cur;
  r->acc = e;
  return BA_OK;
}

#define PDICT_CASES(hw)                                                    \
  switch (r->bits) {                                                       \
    case 1: return pdict_rows_body(r, rows, k, out, 1, hw);                \
    case 2: return pdict_rows_body(r, rows, k, out, 2, hw);                \
    case 3: return pdict_rows_body(r, rows, k, out, 3, hw);                \
    case 4: return pdict_rows_body(r, rows, k, out, 4, hw);                \
    case 5: return pdict_rows_body(r, rows, k, out, 5, hw);                \
    case 6: return pdict_rows_body(r, rows, k, out, 6, hw);                \
    case 7: return pdict_rows_body(r, rows, k, out, 7, hw);                \
    default: return pdict_rows_body(r, rows, k, out, 8, hw); /* 1..8 (ba_if_open) */ \
  }

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("popcnt"))) static int get_rows_pdict_hw(ba_if_reader_t *r, const uint32_t *rows, size_t k,
                                                               uint64_t *out) {
  PDICT_CASES(1)
}
#endif

static int get_rows_pdict(ba_if_reader_t *r, const uint32_t *rows, size_t k, uint64_t *out) {
#if defined(__x86_64__) && defined(__GNUC__)
  pthread_once(&g_popcnt_once, popcnt_init);
  if (g_popcnt) return get_rows_pdict_hw(r, rows, k, out);
#endif
  PDICT_CASES(0)
}
#undef PDICT_CASES

int ba_if_get_rows(ba_if_reader_t *r, const uint32_t *rows, size_t k, uint64_t *out) {
  if (k == 0) return BA_OK;
  BA_RETURN_IF(rows[k - 1] >= r->n, BA_ERR_INVALID);
  const uint8_t *v = r->vals;
  size_t vl = r->vals_len;
  unsigned b = r->bits;
  uint64_t m = r->mask;
  switch (r->method) {
    case XF_FOR:
      for (size_t j = 0; j < k; j++) out[j] = (r->base + bit_get(v, vl, (uint64_t)rows[j] * b, b) * r->scale) & m;
      return BA_OK;
    case XF_DICT:
      for (size_t j = 0; j < k; j++) {
        uint64_t ix = bit_get(v, vl, (uint64_t)rows[j] * b, b);
        BA_RETURN_IF(ix >= r->nd, BA_ERR_CORRUPT);
        out[j] = dict_at(r, ix);
      }
      return BA_OK;
    case XF_DELTA:
      return get_rows_delta(r, rows, k, out);
    default: /* XF_PDICT */
      return get_rows_pdict(r, rows, k, out);
  }
}

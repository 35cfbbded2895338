/* Output building blocks shared by the record formats (format.c,
 * format_csv.c): an append buffer and hand-written number, address and time
 * writers, so the per-row loop makes no printf call (numbers and IPv4
 * addresses are the bulk of every format). */
#ifndef BA_QUERY_FORMAT_PUT_H
#define BA_QUERY_FORMAT_PUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bitarc/record.h"

typedef struct ob {
  char *buf;
  size_t cap, len;
} ob_t;

static inline void ob_put(ob_t *o, const char *s, size_t l) {
  if (o->len < o->cap) {
    size_t room = o->cap - o->len;
    memcpy(o->buf + o->len, s, l < room ? l : room);
  }
  o->len += l;
}
static inline void ob_putc(ob_t *o, char c) {
  if (o->len < o->cap) o->buf[o->len] = c;
  o->len++;
}
static inline void ob_puts(ob_t *o, const char *s) { ob_put(o, s, strlen(s)); }
static inline void ob_pad(ob_t *o, size_t n) {
  while (n--) ob_putc(o, ' ');
}
/* s padded to width w: right aligned (printf "%*s"), or left aligned if left. */
static inline void ob_putw(ob_t *o, const char *s, size_t l, size_t w, int left) {
  if (!left && l < w) ob_pad(o, w - l);
  ob_put(o, s, l);
  if (left && l < w) ob_pad(o, w - l);
}

/* Decimal digits of v into the end of tmp[24]; returns the first digit. */
static inline char *fmt_u64(uint64_t v, char tmp[24]) {
  char *p = tmp + 24;
  do {
    *--p = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  return p;
}
static inline void ob_u64(ob_t *o, uint64_t v) {
  char tmp[24];
  char *p = fmt_u64(v, tmp);
  ob_put(o, p, (size_t)(tmp + 24 - p));
}
/* printf "%*llu" / "%-*llu" */
static inline void ob_u64w(ob_t *o, uint64_t v, size_t w, int left) {
  char tmp[24];
  char *p = fmt_u64(v, tmp);
  ob_putw(o, p, (size_t)(tmp + 24 - p), w, left);
}
/* printf "%0*u" */
static inline void ob_u64z(ob_t *o, uint64_t v, size_t w) {
  char tmp[24];
  char *p = fmt_u64(v, tmp);
  size_t l = (size_t)(tmp + 24 - p);
  while (l < w) {
    ob_putc(o, '0');
    w--;
  }
  ob_put(o, p, l);
}

/* ---------- unchecked writers: the caller made room for a whole record ----------
 * (csv: FMT_FAST_ROOM bytes); each returns the end of what it wrote. */
extern const char fmt_d2[200]; /* "00" "01" ... "99" */

static inline unsigned fmt_ndig(uint64_t v) {
  unsigned n = 1;
  while (v >= 10000) {
    v /= 10000;
    n += 4;
  }
  if (v >= 100) {
    v /= 100;
    n += 2;
  }
  return n + (v >= 10);
}
/* Decimal digits of v at p. */
static inline char *pu64(char *p, uint64_t v) {
  if (v < 10) {
    *p = (char)('0' + v);
    return p + 1;
  }
  unsigned n = fmt_ndig(v);
  char *e = p + n, *q = e;
  while (v >= 100) {
    unsigned r = (unsigned)(v % 100);
    v /= 100;
    q -= 2;
    memcpy(q, fmt_d2 + 2 * r, 2);
  }
  if (v >= 10) memcpy(q - 2, fmt_d2 + 2 * v, 2);
  else q[-1] = (char)('0' + v);
  return e;
}
/* One byte 0..255 in decimal. */
static inline char *pu8(char *p, unsigned v) {
  if (v >= 100) {
    *p++ = (char)('0' + v / 100);
    v %= 100;
    memcpy(p, fmt_d2 + 2 * v, 2);
    return p + 2;
  }
  if (v >= 10) {
    memcpy(p, fmt_d2 + 2 * v, 2);
    return p + 2;
  }
  *p = (char)('0' + v);
  return p + 1;
}
/* IPv4 dotted quad of a 16-byte address's last four bytes. */
static inline char *pv4(char *p, const uint8_t a[16]) {
  p = pu8(p, a[12]);
  *p++ = '.';
  p = pu8(p, a[13]);
  *p++ = '.';
  p = pu8(p, a[14]);
  *p++ = '.';
  return pu8(p, a[15]);
}

/* The same, NUL-terminated in out; returns the length. */
static inline size_t fmt_v4(const uint8_t a[16], char out[16]) {
  char *e = pv4(out, a);
  *e = 0;
  return (size_t)(e - out);
}

#endif

/* The filter lexer and the scanners the grammar shares: numbers with
 * nfdump's k/m/g/t suffixes, comparators, value ranges and lists, IPv4
 * patterns and prefixes, IPv6 prefixes, times. The lexer is driven by the
 * parser: addresses (IPv4 patterns may contain ',' '-' '*' inside an octet)
 * are scanned straight from the text when the parser expects one, every other
 * token comes from qp_next(). */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "query/parse_int.h"

static int is_wordch(int c) {
  return c && !isspace(c) && !strchr("()[],#=<>!&|", c);
}

static void skip_space(parser_t *p) {
  for (;;) {
    while (p->pos < p->n && isspace((unsigned char)p->s[p->pos])) p->pos++;
    if (p->pos < p->n && p->s[p->pos] == '#') {
      while (p->pos < p->n && p->s[p->pos] != '\n') p->pos++;
      continue;
    }
    return;
  }
}

void qp_next(parser_t *p) {
  skip_space(p);
  tok_t t = {T_END, p->pos, 0};
  if (p->pos >= p->n) {
    p->cur = t;
    return;
  }
  const char *c = p->s + p->pos;
  size_t rem = p->n - p->pos;
  switch (c[0]) {
    case '(': t.t = T_LP; t.len = 1; break;
    case ')': t.t = T_RP; t.len = 1; break;
    case '[': t.t = T_LB; t.len = 1; break;
    case ']': t.t = T_RB; t.len = 1; break;
    case ',': t.t = T_COMMA; t.len = 1; break;
    case '&': t.t = rem > 1 && c[1] == '&' ? T_AND : T_BAD; t.len = t.t == T_AND ? 2 : 1; break;
    case '|': t.t = rem > 1 && c[1] == '|' ? T_OR : T_BAD; t.len = t.t == T_OR ? 2 : 1; break;
    case '!':
      if (rem > 1 && c[1] == '=') { t.t = T_CMP; t.len = 2; }
      else { t.t = T_NOT; t.len = 1; }
      break;
    case '=': case '<': case '>':
      t.t = T_CMP;
      t.len = rem > 1 && c[1] == '=' ? 2 : 1;
      break;
    default:
      if (is_wordch((unsigned char)c[0])) {
        t.t = T_WORD;
        while (t.len < rem && is_wordch((unsigned char)c[t.len])) t.len++;
      } else {
        t.t = T_BAD;
        t.len = 1;
      }
  }
  p->pos += t.len;
  p->cur = t;
}

void qp_reset(parser_t *p, size_t at) {
  p->pos = at;
  qp_next(p);
}

int qp_fail_at(parser_t *p, size_t col, const char *fmt, const char *what, size_t wlen) {
  char tokbuf[64];
  size_t l = wlen < sizeof(tokbuf) - 1 ? wlen : sizeof(tokbuf) - 1;
  memcpy(tokbuf, what, l);
  tokbuf[l] = 0;
  snprintf(p->q->errmsg, sizeof(p->q->errmsg), fmt, tokbuf);
  p->q->errcol = col;
  return BA_ERR_SYNTAX;
}

/* Error naming the current token. */
int qp_fail(parser_t *p, const char *why) {
  char fmt[160];
  if (p->cur.t == T_END) {
    snprintf(fmt, sizeof(fmt), "%s at end of filter%%s", why);
    return qp_fail_at(p, p->cur.pos, fmt, "", 0);
  }
  snprintf(fmt, sizeof(fmt), "%s at '%%s'", why);
  return qp_fail_at(p, p->cur.pos, fmt, p->s + p->cur.pos, p->cur.len);
}

int qp_word(const parser_t *p, const char *kw) {
  size_t l = strlen(kw);
  return p->cur.t == T_WORD && p->cur.len == l && !strncasecmp(p->s + p->cur.pos, kw, l);
}

/* ---------- numbers ---------- */

/* decimal | 0xHEX, optional k/m/g/t suffix (x1000). */
int qp_num_text(const char *s, size_t len, uint64_t *out) {
  if (len == 0) return -1;
  uint64_t v = 0;
  size_t i = 0;
  if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    i = 2;
    size_t start = i;
    for (; i < len && isxdigit((unsigned char)s[i]); i++) {
      if (v >> 60) return -1;
      int c = tolower((unsigned char)s[i]);
      v = v * 16 + (uint64_t)(isdigit(c) ? c - '0' : c - 'a' + 10);
    }
    if (i == start || i != len) return -1;
    *out = v;
    return 0;
  }
  size_t start = i;
  for (; i < len && isdigit((unsigned char)s[i]); i++) {
    if (v > (UINT64_MAX - 9) / 10) return -1;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  if (i == start) return -1;
  if (i < len) {
    uint64_t mul;
    switch (tolower((unsigned char)s[i])) {
      case 'k': mul = 1000ull; break;
      case 'm': mul = 1000000ull; break;
      case 'g': mul = 1000000000ull; break;
      case 't': mul = 1000000000000ull; break;
      default: return -1;
    }
    if (i + 1 != len) return -1;
    if (v > UINT64_MAX / mul) return -1;
    v *= mul;
  }
  *out = v;
  return 0;
}

int qp_expect_num(parser_t *p, uint64_t max, uint64_t *out) {
  if (p->cur.t != T_WORD || qp_num_text(p->s + p->cur.pos, p->cur.len, out) < 0)
    return qp_fail(p, "number expected");
  if (*out > max) return qp_fail(p, "number out of range");
  qp_next(p);
  return 0;
}

/* Optional comparator; default '=='. */
int qp_cmp(parser_t *p, qcmp_t *c) {
  *c = QC_EQ;
  if (p->cur.t == T_CMP) {
    const char *s = p->s + p->cur.pos;
    if (p->cur.len == 1) *c = s[0] == '=' ? QC_EQ : s[0] == '>' ? QC_GT : QC_LT;
    else if (s[0] == '=') *c = QC_EQ;
    else if (s[0] == '>') *c = QC_GE;
    else if (s[0] == '<') *c = QC_LE;
    else return qp_fail(p, "comparator '!=' is not supported; use 'not'");
    qp_next(p);
  } else if (qp_word(p, "eq")) { *c = QC_EQ; qp_next(p); }
  else if (qp_word(p, "gt")) { *c = QC_GT; qp_next(p); }
  else if (qp_word(p, "lt")) { *c = QC_LT; qp_next(p); }
  else if (qp_word(p, "ge")) { *c = QC_GE; qp_next(p); }
  else if (qp_word(p, "le")) { *c = QC_LE; qp_next(p); }
  return 0;
}

/* ---------- ranges ---------- */

static int range_cmp(const void *a, const void *b) {
  const qrange_t *x = a, *y = b;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sorts and merges overlapping/adjacent ranges in place. */
void qp_ranges_normalize(qrange_t *r, size_t *n) {
  if (*n == 0) return;
  qsort(r, *n, sizeof(*r), range_cmp);
  size_t k = 0;
  for (size_t i = 1; i < *n; i++) {
    if ((uint64_t)r[i].lo <= (uint64_t)r[k].hi + 1) {
      if (r[i].hi > r[k].hi) r[k].hi = r[i].hi;
    } else {
      r[++k] = r[i];
    }
  }
  *n = k + 1;
}

int qp_ranges_push(qnode_t *nd, size_t *cap, uint32_t lo, uint32_t hi) {
  if (nd->n == *cap) BA_FORWARD(ba_grow((void **)&nd->ranges, cap, nd->n + 1, sizeof(qrange_t)));
  nd->ranges[nd->n].lo = lo;
  nd->ranges[nd->n].hi = hi;
  nd->n++;
  return 0;
}

/* cmp value over [0, max] as at most one range; an empty result gives n = 0. */
int qp_ranges_from_cmp(qnode_t *nd, size_t *cap, qcmp_t c, uint64_t v, uint32_t max) {
  uint64_t lo = 0, hi = max;
  switch (c) {
    case QC_EQ: lo = hi = v; break;
    case QC_GT: lo = v + 1; break;
    case QC_GE: lo = v; break;
    case QC_LT: if (v == 0) return 0; hi = v - 1; break;
    case QC_LE: hi = v; break;
  }
  if (hi > max) hi = max;
  if (lo > hi) return 0;
  return qp_ranges_push(nd, cap, (uint32_t)lo, (uint32_t)hi);
}

/* "a" or "a-b" inside a list word. */
int qp_range_text(const char *s, size_t len, uint32_t max, uint32_t *lo, uint32_t *hi) {
  const char *dash = memchr(s, '-', len);
  uint64_t a, b;
  if (!dash) {
    if (qp_num_text(s, len, &a) < 0 || a > max) return -1;
    *lo = *hi = (uint32_t)a;
    return 0;
  }
  if (qp_num_text(s, (size_t)(dash - s), &a) < 0) return -1;
  if (qp_num_text(dash + 1, len - (size_t)(dash - s) - 1, &b) < 0) return -1;
  if (a > max || b > max || a > b) return -1;
  *lo = (uint32_t)a;
  *hi = (uint32_t)b;
  return 0;
}

/* '[' item (','? item)* ']' where item = num | num-num. */
int qp_num_list(parser_t *p, qnode_t *nd, size_t *cap, uint32_t max) {
  if (p->cur.t != T_LB) return qp_fail(p, "'[' expected");
  qp_next(p);
  int any = 0;
  while (p->cur.t != T_RB) {
    if (p->cur.t == T_COMMA && any) {
      qp_next(p);
      continue;
    }
    uint32_t lo, hi;
    if (p->cur.t != T_WORD || qp_range_text(p->s + p->cur.pos, p->cur.len, max, &lo, &hi) < 0)
      return qp_fail(p, "number or range expected");
    BA_FORWARD(qp_ranges_push(nd, cap, lo, hi));
    any = 1;
    qp_next(p);
  }
  if (!any) return qp_fail(p, "empty list");
  qp_next(p);
  return 0;
}

/* ---------- addresses ---------- */

static void oct_set(uint64_t set[4], unsigned lo, unsigned hi) {
  for (unsigned v = lo; v <= hi; v++) set[v >> 6] |= 1ull << (v & 63);
}

void qp_prefix4(qaddr_t *a, uint32_t v4, unsigned len) {
  memset(a, 0, sizeof(*a));
  for (int i = 0; i < 4; i++) {
    unsigned byte = (v4 >> (24 - 8 * i)) & 0xFF;
    int bits = (int)len - 8 * i;
    if (bits >= 8) oct_set(a->oct[i], byte, byte);
    else if (bits <= 0) oct_set(a->oct[i], 0, 255);
    else {
      unsigned m = (0xFFu << (8 - bits)) & 0xFF;
      oct_set(a->oct[i], byte & m, (byte & m) | (~m & 0xFF));
    }
  }
}

/* Scans an address at byte offset `at` of the text.
 * IPv4 pattern: octet{1,4} with octet = '*' | 'x' | item(','item)*, item = n | n-m;
 * optional /len (plain addresses only; fewer than 4 octets need /len).
 * IPv6: inet_pton text with optional /len. `allow_len` permits /len.
 * *end gets the offset after the address; *plain whether every octet is one value,
 * *v4 the plain value, *has_len whether /len was given. */
/* An IPv6 address (or prefix with allow_len) in s[at, j): the word of hex
 * digits, ':' and '.' that starts at at. */
static int scan_addr6(parser_t *p, size_t at, size_t j, qaddr_t *out, size_t *end, int allow_len, int *has_len) {
  const char *s = p->s;
  size_t n = p->n;
  char buf[64];
  if (j - at >= sizeof(buf)) return qp_fail_at(p, at, "bad IPv6 address '%s'", s + at, j - at);
  memcpy(buf, s + at, j - at);
  buf[j - at] = 0;
  uint8_t a6[16];
  if (inet_pton(AF_INET6, buf, a6) != 1) return qp_fail_at(p, at, "bad IPv6 address '%s'", buf, strlen(buf));
  unsigned plen = 128;
  if (j < n && s[j] == '/') {
    if (!allow_len) return qp_fail_at(p, j, "prefix length not allowed here '%s'", s + j, 1);
    size_t k = j + 1;
    uint64_t v = 0;
    while (k < n && isdigit((unsigned char)s[k]) && v <= 128) v = v * 10 + (uint64_t)(s[k++] - '0');
    if (k == j + 1 || v > 128) return qp_fail_at(p, j, "bad IPv6 prefix length '%s'", s + j, k - j);
    plen = (unsigned)v;
    j = k;
    *has_len = 1;
  }
  if (j < n && is_wordch((unsigned char)s[j]) && s[j] != ',')
    return qp_fail_at(p, at, "bad IPv6 address '%s'", s + at, j - at + 1);
  /* Mask the host bits so equal prefixes compare equal. */
  for (unsigned b = plen; b < 128; b++) a6[b / 8] &= (uint8_t)~(0x80u >> (b % 8));
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (plen >= 96 && !memcmp(a6, mapped, 12)) {
    /* IPv4-mapped: the record form of IPv4; use the v4 pattern. */
    qp_prefix4(out, ba_addr_get_v4(a6), plen - 96);
  } else {
    out->v6 = 1;
    out->plen = (uint8_t)plen;
    memcpy(out->a6, a6, 16);
  }
  *end = j;
  return 0;
}

/* IPv4 octet number noct at *i: a number, a range lo-hi, or a ','-list of
 * them, into out->oct[noct]; the first item's value goes into *v4 and any
 * range or list clears *plain. */
static int scan_octet(parser_t *p, size_t *i, int noct, qaddr_t *out, uint32_t *v4, int *plain) {
  const char *s = p->s;
  size_t n = p->n;
  int items = 0;
  for (;;) {
    size_t k = *i;
    uint32_t lo = 0, hi;
    while (k < n && isdigit((unsigned char)s[k]) && lo < 1000) lo = lo * 10 + (uint32_t)(s[k++] - '0');
    if (lo > 255) return qp_fail_at(p, *i, "IPv4 octet out of range '%s'", s + *i, k - *i);
    hi = lo;
    if (k < n && s[k] == '-') {
      size_t m = k + 1;
      hi = 0;
      while (m < n && isdigit((unsigned char)s[m]) && hi < 1000) hi = hi * 10 + (uint32_t)(s[m++] - '0');
      if (m == k + 1 || hi > 255 || hi < lo) return qp_fail_at(p, *i, "bad octet range '%s'", s + *i, m - *i);
      k = m;
      *plain = 0;
    }
    oct_set(out->oct[noct], lo, hi);
    if (!items) *v4 |= lo << (24 - 8 * noct);
    items++;
    *i = k;
    if (!(*i < n && s[*i] == ',' && *i + 1 < n && isdigit((unsigned char)s[*i + 1]))) return 0;
    /* In the last octet a ',' followed by an item and then '.', ':' or '/'
     * separates list elements instead. */
    if (noct == 3) {
      size_t m = *i + 1;
      while (m < n && (isdigit((unsigned char)s[m]) || s[m] == '-')) m++;
      if (m < n && (s[m] == '.' || s[m] == ':' || s[m] == '/' || isalpha((unsigned char)s[m]))) return 0;
    }
    (*i)++;
    *plain = 0;
  }
}

int qp_scan_addr(parser_t *p, size_t at, qaddr_t *out, size_t *end, int allow_len,
                     int *has_len) {
  const char *s = p->s;
  size_t n = p->n, i = at;
  memset(out, 0, sizeof(*out));
  *has_len = 0;
  /* v6 if a ':' appears before the word ends. */
  size_t j = at;
  int colon = 0;
  while (j < n && (isxdigit((unsigned char)s[j]) || s[j] == ':' || s[j] == '.')) {
    if (s[j] == ':') colon = 1;
    j++;
  }
  if (colon) return scan_addr6(p, at, j, out, end, allow_len, has_len);
  int noct = 0, plain = 1;
  uint32_t v4 = 0;
  while (i < n) {
    if (s[i] == '*' || s[i] == 'x' || s[i] == 'X') {
      oct_set(out->oct[noct], 0, 255);
      plain = 0;
      i++;
    } else if (isdigit((unsigned char)s[i])) {
      int rc = scan_octet(p, &i, noct, out, &v4, &plain);
      if (rc) return rc;
    } else {
      break;
    }
    noct++;
    if (noct == 4 || i >= n || s[i] != '.') break;
    i++;
  }
  if (noct == 0) {
    size_t k = at;
    while (k < n && is_wordch((unsigned char)s[k])) k++;
    return qp_fail_at(p, at, "address expected at '%s'", s + at, k > at ? k - at : 1);
  }
  if (i < n && s[i] == '/') {
    if (!allow_len || !plain) return qp_fail_at(p, i, "prefix length not allowed here '%s'", s + i, 1);
    size_t k = i + 1;
    uint32_t v = 0;
    while (k < n && isdigit((unsigned char)s[k]) && v <= 32) v = v * 10 + (uint32_t)(s[k++] - '0');
    if (k == i + 1 || v > 32) return qp_fail_at(p, i, "bad prefix length '%s'", s + i, k - i);
    if ((unsigned)noct * 8 < v) return qp_fail_at(p, at, "prefix longer than the address '%s'", s + at, k - at);
    qp_prefix4(out, v4, v);
    *has_len = 1;
    i = k;
  } else if (noct < 4) {
    return qp_fail_at(p, at, "incomplete IPv4 address '%s'", s + at, i - at);
  }
  if (i < n && is_wordch((unsigned char)s[i]) && s[i] != ',') {
    size_t k = i;
    while (k < n && is_wordch((unsigned char)s[k])) k++;
    return qp_fail_at(p, i, "bad address near '%s'", s + i, k - i);
  }
  *end = i;
  return 0;
}

int qp_addrs_push(qnode_t *nd, size_t *cap, const qaddr_t *a) {
  if (nd->n == *cap) BA_FORWARD(ba_grow((void **)&nd->addrs, cap, nd->n + 1, sizeof(qaddr_t)));
  nd->addrs[nd->n++] = *a;
  return 0;
}

/* Netmask "255.255.0.0" -> prefix length, or -1. */
int qp_mask_len(const char *s, size_t len) {
  char buf[32];
  if (len >= sizeof(buf)) return -1;
  memcpy(buf, s, len);
  buf[len] = 0;
  struct in_addr ia;
  if (inet_pton(AF_INET, buf, &ia) != 1) return -1;
  uint32_t m = ntohl(ia.s_addr);
  int l = 0;
  while (l < 32 && (m & (0x80000000u >> l))) l++;
  if (l < 32 && (m << l)) return -1;
  return l;
}

/* ISO time, or N<unit> 'ago'. */
int qp_time(parser_t *p, uint64_t *ns) {
  if (p->cur.t != T_WORD) return qp_fail(p, "time expected");
  const char *s = p->s + p->cur.pos;
  size_t len = p->cur.len;
  uint64_t rel;
  if (qp_parse_rel(s, len, &rel) == 0) {
    qp_next(p);
    if (!qp_word(p, "ago")) return qp_fail(p, "'ago' expected");
    qp_next(p);
    *ns = rel > p->q->now_ns ? 0 : p->q->now_ns - rel;
    return 0;
  }
  if (qp_parse_iso(s, len, ns) < 0) return qp_fail(p, "bad time (want YYYY-MM-DDThh:mm:ss or Nh ago)");
  qp_next(p);
  return 0;
}

qnode_t *qp_mk(qnode_kind_t k, size_t col) {
  qnode_t *n = qnode_new(k);
  if (n) n->col = (uint32_t)col;
  return n;
}

/* Address list: '[' (addr ','?)* ']' scanned raw. */
int qp_addr_list(parser_t *p, qnode_t *nd, size_t *cap) {
  if (p->cur.t != T_LB) return qp_fail(p, "'[' expected");
  size_t at = p->cur.pos + 1;
  int any = 0;
  for (;;) {
    while (at < p->n && (isspace((unsigned char)p->s[at]) || p->s[at] == ',')) at++;
    if (at < p->n && p->s[at] == ']') break;
    if (at >= p->n) {
      qp_reset(p, at);
      return qp_fail(p, "']' expected");
    }
    qaddr_t a;
    size_t end;
    int has_len;
    BA_FORWARD(qp_scan_addr(p, at, &a, &end, 1, &has_len));
    BA_FORWARD(qp_addrs_push(nd, cap, &a));
    any = 1;
    at = end;
  }
  if (!any) return qp_fail_at(p, at, "empty list%s", "", 0);
  qp_reset(p, at + 1);
  return 0;
}


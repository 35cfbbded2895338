/* Lexer and recursive-descent parser for nfdump's filter language with the
 * bitarc extensions (src/query/GRAMMAR.md). Precedence: not > and > or.
 *
 * The lexer is driven by the parser: addresses (IPv4 patterns may contain
 * ',' '-' '*' inside an octet) are scanned straight from the text when the
 * parser expects one, every other token comes from next_tok(). */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "query/query_internal.h"

typedef enum { T_END, T_WORD, T_LP, T_RP, T_LB, T_RB, T_COMMA, T_CMP, T_AND, T_OR, T_NOT, T_BAD } ttype_t;

typedef struct tok {
  ttype_t t;
  size_t pos, len;
} tok_t;

typedef struct parser {
  const char *s;
  size_t n;
  size_t pos;   /* next unread byte */
  tok_t cur;    /* current lookahead */
  ba_query_t *q;
  int depth;
} parser_t;

#define MAX_DEPTH 200

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

static void next_tok(parser_t *p) {
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

/* Re-lex from byte offset `at` (after a raw scan). */
static void reset_to(parser_t *p, size_t at) {
  p->pos = at;
  next_tok(p);
}

static int fail_at(parser_t *p, size_t col, const char *fmt, const char *what, size_t wlen) {
  char tokbuf[64];
  size_t l = wlen < sizeof(tokbuf) - 1 ? wlen : sizeof(tokbuf) - 1;
  memcpy(tokbuf, what, l);
  tokbuf[l] = 0;
  snprintf(p->q->errmsg, sizeof(p->q->errmsg), fmt, tokbuf);
  p->q->errcol = col;
  return BA_ERR_SYNTAX;
}

/* Error naming the current token. */
static int fail(parser_t *p, const char *why) {
  char fmt[160];
  if (p->cur.t == T_END) {
    snprintf(fmt, sizeof(fmt), "%s at end of filter%%s", why);
    return fail_at(p, p->cur.pos, fmt, "", 0);
  }
  snprintf(fmt, sizeof(fmt), "%s at '%%s'", why);
  return fail_at(p, p->cur.pos, fmt, p->s + p->cur.pos, p->cur.len);
}

static int word_is(const parser_t *p, const char *kw) {
  size_t l = strlen(kw);
  return p->cur.t == T_WORD && p->cur.len == l && !strncasecmp(p->s + p->cur.pos, kw, l);
}

/* ---------- numbers ---------- */

/* decimal | 0xHEX, optional k/m/g/t suffix (x1000). */
static int parse_num_text(const char *s, size_t len, uint64_t *out) {
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

static int expect_num(parser_t *p, uint64_t max, uint64_t *out) {
  if (p->cur.t != T_WORD || parse_num_text(p->s + p->cur.pos, p->cur.len, out) < 0)
    return fail(p, "number expected");
  if (*out > max) return fail(p, "number out of range");
  next_tok(p);
  return 0;
}

/* Optional comparator; default '=='. */
static int parse_cmp(parser_t *p, qcmp_t *c) {
  *c = QC_EQ;
  if (p->cur.t == T_CMP) {
    const char *s = p->s + p->cur.pos;
    if (p->cur.len == 1) *c = s[0] == '=' ? QC_EQ : s[0] == '>' ? QC_GT : QC_LT;
    else if (s[0] == '=') *c = QC_EQ;
    else if (s[0] == '>') *c = QC_GE;
    else if (s[0] == '<') *c = QC_LE;
    else return fail(p, "comparator '!=' is not supported; use 'not'");
    next_tok(p);
  } else if (word_is(p, "eq")) { *c = QC_EQ; next_tok(p); }
  else if (word_is(p, "gt")) { *c = QC_GT; next_tok(p); }
  else if (word_is(p, "lt")) { *c = QC_LT; next_tok(p); }
  else if (word_is(p, "ge")) { *c = QC_GE; next_tok(p); }
  else if (word_is(p, "le")) { *c = QC_LE; next_tok(p); }
  return 0;
}

/* ---------- ranges ---------- */

static int range_cmp(const void *a, const void *b) {
  const qrange_t *x = a, *y = b;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sorts and merges overlapping/adjacent ranges in place. */
static void ranges_normalize(qrange_t *r, size_t *n) {
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

static int ranges_push(qnode_t *nd, size_t *cap, uint32_t lo, uint32_t hi) {
  if (nd->n == *cap) BA_FORWARD(ba_grow((void **)&nd->ranges, cap, nd->n + 1, sizeof(qrange_t)));
  nd->ranges[nd->n].lo = lo;
  nd->ranges[nd->n].hi = hi;
  nd->n++;
  return 0;
}

/* cmp value over [0, max] as at most one range; an empty result gives n = 0. */
static int ranges_from_cmp(qnode_t *nd, size_t *cap, qcmp_t c, uint64_t v, uint32_t max) {
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
  return ranges_push(nd, cap, (uint32_t)lo, (uint32_t)hi);
}

/* "a" or "a-b" inside a list word. */
static int parse_range_text(const char *s, size_t len, uint32_t max, uint32_t *lo, uint32_t *hi) {
  const char *dash = memchr(s, '-', len);
  uint64_t a, b;
  if (!dash) {
    if (parse_num_text(s, len, &a) < 0 || a > max) return -1;
    *lo = *hi = (uint32_t)a;
    return 0;
  }
  if (parse_num_text(s, (size_t)(dash - s), &a) < 0) return -1;
  if (parse_num_text(dash + 1, len - (size_t)(dash - s) - 1, &b) < 0) return -1;
  if (a > max || b > max || a > b) return -1;
  *lo = (uint32_t)a;
  *hi = (uint32_t)b;
  return 0;
}

/* '[' item (','? item)* ']' where item = num | num-num. */
static int parse_num_list(parser_t *p, qnode_t *nd, size_t *cap, uint32_t max) {
  if (p->cur.t != T_LB) return fail(p, "'[' expected");
  next_tok(p);
  int any = 0;
  while (p->cur.t != T_RB) {
    if (p->cur.t == T_COMMA && any) {
      next_tok(p);
      continue;
    }
    uint32_t lo, hi;
    if (p->cur.t != T_WORD || parse_range_text(p->s + p->cur.pos, p->cur.len, max, &lo, &hi) < 0)
      return fail(p, "number or range expected");
    BA_FORWARD(ranges_push(nd, cap, lo, hi));
    any = 1;
    next_tok(p);
  }
  if (!any) return fail(p, "empty list");
  next_tok(p);
  return 0;
}

/* ---------- addresses ---------- */

static void oct_set(uint64_t set[4], unsigned lo, unsigned hi) {
  for (unsigned v = lo; v <= hi; v++) set[v >> 6] |= 1ull << (v & 63);
}

static void qaddr_from_prefix4(qaddr_t *a, uint32_t v4, unsigned len) {
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
static int scan_addr(parser_t *p, size_t at, qaddr_t *out, size_t *end, int allow_len,
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
  if (colon) {
    char buf[64];
    if (j - at >= sizeof(buf)) return fail_at(p, at, "bad IPv6 address '%s'", s + at, j - at);
    memcpy(buf, s + at, j - at);
    buf[j - at] = 0;
    uint8_t a6[16];
    if (inet_pton(AF_INET6, buf, a6) != 1) return fail_at(p, at, "bad IPv6 address '%s'", buf, strlen(buf));
    unsigned plen = 128;
    if (j < n && s[j] == '/') {
      if (!allow_len) return fail_at(p, j, "prefix length not allowed here '%s'", s + j, 1);
      size_t k = j + 1;
      uint64_t v = 0;
      while (k < n && isdigit((unsigned char)s[k]) && v <= 128) v = v * 10 + (uint64_t)(s[k++] - '0');
      if (k == j + 1 || v > 128) return fail_at(p, j, "bad IPv6 prefix length '%s'", s + j, k - j);
      plen = (unsigned)v;
      j = k;
      *has_len = 1;
    }
    if (j < n && is_wordch((unsigned char)s[j]) && s[j] != ',')
      return fail_at(p, at, "bad IPv6 address '%s'", s + at, j - at + 1);
    /* Mask the host bits so equal prefixes compare equal. */
    for (unsigned b = plen; b < 128; b++) a6[b / 8] &= (uint8_t)~(0x80u >> (b % 8));
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (plen >= 96 && !memcmp(a6, mapped, 12)) {
      /* IPv4-mapped: the record form of IPv4; use the v4 pattern. */
      qaddr_from_prefix4(out, ba_addr_get_v4(a6), plen - 96);
    } else {
      out->v6 = 1;
      out->plen = (uint8_t)plen;
      memcpy(out->a6, a6, 16);
    }
    *end = j;
    return 0;
  }
  int noct = 0, plain = 1;
  uint32_t v4 = 0;
  for (;;) {
    if (i >= n) break;
    if (s[i] == '*' || s[i] == 'x' || s[i] == 'X') {
      oct_set(out->oct[noct], 0, 255);
      plain = 0;
      i++;
    } else if (isdigit((unsigned char)s[i])) {
      int items = 0;
      for (;;) {
        size_t k = i;
        uint32_t lo = 0, hi;
        while (k < n && isdigit((unsigned char)s[k]) && lo < 1000) lo = lo * 10 + (uint32_t)(s[k++] - '0');
        if (lo > 255) return fail_at(p, i, "IPv4 octet out of range '%s'", s + i, k - i);
        hi = lo;
        if (k < n && s[k] == '-') {
          size_t m = k + 1;
          hi = 0;
          while (m < n && isdigit((unsigned char)s[m]) && hi < 1000) hi = hi * 10 + (uint32_t)(s[m++] - '0');
          if (m == k + 1 || hi > 255 || hi < lo) return fail_at(p, i, "bad octet range '%s'", s + i, m - i);
          k = m;
          plain = 0;
        }
        oct_set(out->oct[noct], lo, hi);
        if (!items) v4 |= lo << (24 - 8 * noct);
        items++;
        i = k;
        if (i < n && s[i] == ',' && i + 1 < n && isdigit((unsigned char)s[i + 1])) {
          /* In the last octet a ',' followed by an item and then '.', ':' or '/'
           * separates list elements instead. */
          if (noct == 3) {
            size_t m = i + 1;
            while (m < n && (isdigit((unsigned char)s[m]) || s[m] == '-')) m++;
            if (m < n && (s[m] == '.' || s[m] == ':' || s[m] == '/' || isalpha((unsigned char)s[m]))) break;
          }
          i++;
          plain = 0;
          continue;
        }
        break;
      }
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
    return fail_at(p, at, "address expected at '%s'", s + at, k > at ? k - at : 1);
  }
  if (i < n && s[i] == '/') {
    if (!allow_len || !plain) return fail_at(p, i, "prefix length not allowed here '%s'", s + i, 1);
    size_t k = i + 1;
    uint32_t v = 0;
    while (k < n && isdigit((unsigned char)s[k]) && v <= 32) v = v * 10 + (uint32_t)(s[k++] - '0');
    if (k == i + 1 || v > 32) return fail_at(p, i, "bad prefix length '%s'", s + i, k - i);
    if ((unsigned)noct * 8 < v) return fail_at(p, at, "prefix longer than the address '%s'", s + at, k - at);
    qaddr_from_prefix4(out, v4, v);
    *has_len = 1;
    i = k;
  } else if (noct < 4) {
    return fail_at(p, at, "incomplete IPv4 address '%s'", s + at, i - at);
  }
  if (i < n && is_wordch((unsigned char)s[i]) && s[i] != ',') {
    size_t k = i;
    while (k < n && is_wordch((unsigned char)s[k])) k++;
    return fail_at(p, i, "bad address near '%s'", s + i, k - i);
  }
  *end = i;
  return 0;
}

static int addrs_push(qnode_t *nd, size_t *cap, const qaddr_t *a) {
  if (nd->n == *cap) BA_FORWARD(ba_grow((void **)&nd->addrs, cap, nd->n + 1, sizeof(qaddr_t)));
  nd->addrs[nd->n++] = *a;
  return 0;
}

/* Netmask "255.255.0.0" -> prefix length, or -1. */
static int mask_len(const char *s, size_t len) {
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

/* ---------- times ---------- */

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  unsigned yoe = (unsigned)(y - era * 400);
  unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + (int64_t)doe - 719468;
}

/* YYYY-MM-DD[Thh[:mm[:ss[.fff]]]][Z] (also '/' and '.' as nfdump's -t), UTC. */
static int parse_iso(const char *s, size_t len, uint64_t *ns) {
  unsigned v[6] = {0, 1, 1, 0, 0, 0};
  size_t i = 0;
  int f;
  for (f = 0; f < 6; f++) {
    size_t st = i;
    unsigned x = 0;
    while (i < len && isdigit((unsigned char)s[i]) && i - st < 4) x = x * 10 + (unsigned)(s[i++] - '0');
    if (i == st || (f == 0 && i - st != 4) || (f > 0 && i - st != 2)) return -1;
    v[f] = x;
    if (i >= len) { f++; break; }
    char c = s[i];
    if (f < 2 && (c == '-' || c == '/')) { i++; continue; }
    if (f == 2 && (c == 'T' || c == 't' || c == '.')) { i++; continue; }
    if (f >= 3 && f < 5 && c == ':') { i++; continue; }
    f++;
    break;
  }
  if (f < 3) return -1;
  uint64_t frac = 0;
  if (i < len && s[i] == '.' && f == 6) {
    i++;
    uint64_t scale = 100000000ull;
    size_t st = i;
    while (i < len && isdigit((unsigned char)s[i])) {
      frac += (uint64_t)(s[i++] - '0') * scale;
      scale /= 10;
    }
    if (i == st) return -1;
  }
  if (i < len && (s[i] == 'Z' || s[i] == 'z')) i++;
  if (i != len) return -1;
  if (v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 || v[4] > 59 || v[5] > 60) return -1;
  int64_t days = days_from_civil((int64_t)v[0], v[1], v[2]);
  if (days < 0) return -1;
  *ns = ((uint64_t)days * 86400ull + v[3] * 3600ull + v[4] * 60ull + v[5]) * 1000000000ull + frac;
  return 0;
}

/* "3h" -> ns, units s m h d w. */
static int parse_rel(const char *s, size_t len, uint64_t *ns) {
  if (len < 2) return -1;
  uint64_t n = 0;
  size_t i = 0;
  while (i < len - 1 && isdigit((unsigned char)s[i])) {
    if (n > 1000000000ull) return -1;
    n = n * 10 + (uint64_t)(s[i++] - '0');
  }
  if (i == 0 || i != len - 1) return -1;
  uint64_t unit;
  switch (tolower((unsigned char)s[i])) {
    case 's': unit = 1; break;
    case 'm': unit = 60; break;
    case 'h': unit = 3600; break;
    case 'd': unit = 86400; break;
    case 'w': unit = 604800; break;
    default: return -1;
  }
  *ns = n * unit * 1000000000ull;
  return 0;
}

/* ISO time, or N<unit> 'ago'. */
static int parse_time(parser_t *p, uint64_t *ns) {
  if (p->cur.t != T_WORD) return fail(p, "time expected");
  const char *s = p->s + p->cur.pos;
  size_t len = p->cur.len;
  uint64_t rel;
  if (parse_rel(s, len, &rel) == 0) {
    next_tok(p);
    if (!word_is(p, "ago")) return fail(p, "'ago' expected");
    next_tok(p);
    *ns = rel > p->q->now_ns ? 0 : p->q->now_ns - rel;
    return 0;
  }
  if (parse_iso(s, len, ns) < 0) return fail(p, "bad time (want YYYY-MM-DDThh:mm:ss or Nh ago)");
  next_tok(p);
  return 0;
}

/* ---------- grammar ---------- */

static int parse_or(parser_t *p, qnode_t **out);

static qnode_t *mk(qnode_kind_t k, size_t col) {
  qnode_t *n = qnode_new(k);
  if (n) n->col = (uint32_t)col;
  return n;
}

static int parse_proto_value(parser_t *p, qnode_t *nd, size_t *cap) {
  static const struct { const char *name; unsigned num; } names[] = {
    {"icmp", 1}, {"igmp", 2}, {"ipip", 4}, {"tcp", 6}, {"egp", 8}, {"udp", 17}, {"ipv6", 41},
    {"rsvp", 46}, {"gre", 47}, {"esp", 50}, {"ah", 51}, {"icmp6", 58}, {"ipv6-icmp", 58},
    {"eigrp", 88}, {"ospf", 89}, {"pim", 103}, {"vrrp", 112}, {"l2tp", 115}, {"sctp", 132},
  };
  if (p->cur.t == T_WORD) {
    for (size_t i = 0; i < BA_ARRAY_LEN(names); i++)
      if (word_is(p, names[i].name)) {
        next_tok(p);
        return ranges_push(nd, cap, names[i].num, names[i].num);
      }
  }
  qcmp_t c;
  uint64_t v;
  BA_FORWARD(parse_cmp(p, &c));
  BA_FORWARD(expect_num(p, 255, &v));
  return ranges_from_cmp(nd, cap, c, v, 255);
}

static int parse_flags(parser_t *p, qnode_t *nd) {
  if (p->cur.t != T_WORD) return fail(p, "flags expected (A S F R P U X C E)");
  uint64_t m = 0;
  const char *s = p->s + p->cur.pos;
  uint64_t num;
  if (parse_num_text(s, p->cur.len, &num) == 0) {
    if (num > 255) return fail(p, "flags value out of range");
    m = num;
  } else {
    for (size_t i = 0; i < p->cur.len; i++) {
      switch (toupper((unsigned char)s[i])) {
        case 'F': m |= BA_TCP_FIN; break;
        case 'S': m |= BA_TCP_SYN; break;
        case 'R': m |= BA_TCP_RST; break;
        case 'P': m |= BA_TCP_PSH; break;
        case 'A': m |= BA_TCP_ACK; break;
        case 'U': m |= BA_TCP_URG; break;
        case 'E': m |= BA_TCP_ECE; break;
        case 'C': m |= BA_TCP_CWR; break;
        case 'X': m |= 0x3F; break;
        default:
          return fail_at(p, p->cur.pos + i, "unknown TCP flag '%s'", s + i, 1);
      }
    }
  }
  nd->value = m;
  next_tok(p);
  return 0;
}

/* Address list: '[' (addr ','?)* ']' scanned raw. */
static int parse_addr_list(parser_t *p, qnode_t *nd, size_t *cap) {
  if (p->cur.t != T_LB) return fail(p, "'[' expected");
  size_t at = p->cur.pos + 1;
  int any = 0;
  for (;;) {
    while (at < p->n && (isspace((unsigned char)p->s[at]) || p->s[at] == ',')) at++;
    if (at < p->n && p->s[at] == ']') break;
    if (at >= p->n) {
      reset_to(p, at);
      return fail(p, "']' expected");
    }
    qaddr_t a;
    size_t end;
    int has_len;
    BA_FORWARD(scan_addr(p, at, &a, &end, 1, &has_len));
    BA_FORWARD(addrs_push(nd, cap, &a));
    any = 1;
    at = end;
  }
  if (!any) return fail_at(p, at, "empty list%s", "", 0);
  reset_to(p, at + 1);
  return 0;
}

/* [dir] 'ip'|'host' ... / 'net' ... */
static int parse_addr_term(parser_t *p, qnode_t *nd, int is_net) {
  size_t cap = 0;
  if (!is_net && word_is(p, "in")) {
    next_tok(p);
    return parse_addr_list(p, nd, &cap);
  }
  if (p->cur.t != T_WORD) return fail(p, "address expected");
  qaddr_t a;
  size_t end;
  int has_len;
  BA_FORWARD(scan_addr(p, p->cur.pos, &a, &end, 1, &has_len));
  size_t astart = p->cur.pos;
  reset_to(p, end);
  if (is_net && !has_len) {
    /* nfdump's "net a.b.c.d m.m.m.m" */
    int l = p->cur.t == T_WORD ? mask_len(p->s + p->cur.pos, p->cur.len) : -1;
    if (l < 0 || a.v6) return fail(p, "'/len' or netmask expected");
    uint32_t v4 = 0;
    for (int i = 0; i < 4; i++) {
      unsigned v = 0;
      while (v < 256 && !qaddr_v4_in(&a, i, v)) v++;
      v4 |= (uint32_t)v << (24 - 8 * i);
    }
    qaddr_from_prefix4(&a, v4, (unsigned)l);
    next_tok(p);
  }
  (void)astart;
  return addrs_push(nd, &cap, &a);
}

static int parse_dir(parser_t *p, qdir_t *d) {
  *d = QD_EITHER;
  if (word_is(p, "src")) *d = QD_SRC;
  else if (word_is(p, "dst")) *d = QD_DST;
  else return 0;
  next_tok(p);
  /* nfdump's "src and dst" / "src or dst" qualifiers */
  size_t save = p->pos;
  tok_t cur = p->cur;
  if (p->cur.t == T_AND || p->cur.t == T_OR || word_is(p, "and") || word_is(p, "or")) {
    int is_and = p->cur.t == T_AND || word_is(p, "and");
    next_tok(p);
    if (word_is(p, *d == QD_SRC ? "dst" : "src")) {
      next_tok(p);
      *d = is_and ? QD_BOTH : QD_EITHER;
      return 0;
    }
    p->pos = save;
    p->cur = cur;
  }
  return 0;
}

static int parse_term(parser_t *p, qnode_t **out) {
  size_t col = p->cur.pos;
  qnode_t *nd = NULL;
  int rc = 0;
  size_t cap = 0;
  if (p->cur.t != T_WORD) return fail(p, "filter term expected");
  if (word_is(p, "any")) {
    next_tok(p);
    *out = mk(QN_TRUE, col);
    return *out ? 0 : BA_ERR_NOMEM;
  }
  if (word_is(p, "ipv4") || word_is(p, "inet") || word_is(p, "ipv6") || word_is(p, "inet6")) {
    int six = word_is(p, "ipv6") || word_is(p, "inet6");
    next_tok(p);
    if (!(nd = mk(QN_IPVER, col))) return BA_ERR_NOMEM;
    nd->value = six ? 6 : 4;
    *out = nd;
    return 0;
  }
  /* bare protocol names: tcp, udp, icmp, ... (BPF style) */
  static const char *const bare[] = {"tcp", "udp", "icmp", "icmp6", "gre", "esp", "sctp"};
  for (size_t i = 0; i < BA_ARRAY_LEN(bare); i++)
    if (word_is(p, bare[i])) {
      if (!(nd = mk(QN_PROTO, col))) return BA_ERR_NOMEM;
      if ((rc = parse_proto_value(p, nd, &cap)) < 0) goto fail;
      *out = nd;
      return 0;
    }
  if (word_is(p, "proto")) {
    next_tok(p);
    if (!(nd = mk(QN_PROTO, col))) return BA_ERR_NOMEM;
    if ((rc = parse_proto_value(p, nd, &cap)) < 0) goto fail;
    ranges_normalize(nd->ranges, &nd->n);
    *out = nd;
    return 0;
  }
  if (word_is(p, "flags")) {
    next_tok(p);
    if (!(nd = mk(QN_FLAGS, col))) return BA_ERR_NOMEM;
    if ((rc = parse_flags(p, nd)) < 0) goto fail;
    *out = nd;
    return 0;
  }
  if (word_is(p, "after") || word_is(p, "before")) {
    int after = word_is(p, "after");
    next_tok(p);
    if (!(nd = mk(QN_TIME, col))) return BA_ERR_NOMEM;
    nd->field = QF_FIRST;
    nd->cmp = after ? QC_GE : QC_LT;
    if ((rc = parse_time(p, &nd->value)) < 0) goto fail;
    *out = nd;
    return 0;
  }
  if (word_is(p, "first") || word_is(p, "last")) {
    int first = word_is(p, "first");
    next_tok(p);
    if (!word_is(p, "seen")) return fail(p, "'seen' expected");
    next_tok(p);
    if (!(nd = mk(QN_TIME, col))) return BA_ERR_NOMEM;
    nd->field = first ? QF_FIRST : QF_LAST;
    if ((rc = parse_cmp(p, &nd->cmp)) < 0) goto fail;
    if ((rc = parse_time(p, &nd->value)) < 0) goto fail;
    *out = nd;
    return 0;
  }
  static const struct { const char *kw; qfield_t f; uint64_t max; } nums[] = {
    {"packets", QF_PACKETS, UINT64_MAX}, {"bytes", QF_BYTES, UINT64_MAX},
    {"duration", QF_DURATION, UINT64_MAX}, {"pps", QF_PPS, UINT64_MAX},
    {"bps", QF_BPS, UINT64_MAX}, {"bpp", QF_BPP, UINT64_MAX}, {"flows", QF_FLOWS, UINT64_MAX},
    {"icmp-type", QF_ICMP_TYPE, 255}, {"icmp-code", QF_ICMP_CODE, 255},
  };
  /* 'in'/'out' qualify interfaces (and, ignored as in nfdump for single
   * counters, packets/bytes). */
  int inout = 0;
  if (word_is(p, "in") || word_is(p, "out")) {
    inout = word_is(p, "in") ? 1 : 2;
    next_tok(p);
    if (word_is(p, "if")) {
      next_tok(p);
      if (!(nd = mk(QN_NUM, col))) return BA_ERR_NOMEM;
      nd->field = QF_IF;
      nd->dir = inout == 1 ? QD_SRC : QD_DST;
      if ((rc = parse_cmp(p, &nd->cmp)) < 0 || (rc = expect_num(p, UINT32_MAX, &nd->value)) < 0) goto fail;
      *out = nd;
      return 0;
    }
    if (!word_is(p, "packets") && !word_is(p, "bytes")) return fail(p, "'if', 'packets' or 'bytes' expected");
  }
  for (size_t i = 0; i < BA_ARRAY_LEN(nums); i++)
    if (word_is(p, nums[i].kw)) {
      next_tok(p);
      if (!(nd = mk(QN_NUM, col))) return BA_ERR_NOMEM;
      nd->field = nums[i].f;
      if ((rc = parse_cmp(p, &nd->cmp)) < 0 || (rc = expect_num(p, nums[i].max, &nd->value)) < 0) goto fail;
      *out = nd;
      return 0;
    }
  if (word_is(p, "if")) {
    next_tok(p);
    if (!(nd = mk(QN_NUM, col))) return BA_ERR_NOMEM;
    nd->field = QF_IF;
    if ((rc = parse_cmp(p, &nd->cmp)) < 0 || (rc = expect_num(p, UINT32_MAX, &nd->value)) < 0) goto fail;
    *out = nd;
    return 0;
  }
  qdir_t dir;
  size_t dircol = p->cur.pos;
  BA_FORWARD(parse_dir(p, &dir));
  int has_dir = p->cur.pos != dircol;
  if (word_is(p, "ip") || word_is(p, "host") || word_is(p, "net")) {
    int is_net = word_is(p, "net");
    next_tok(p);
    if (!(nd = mk(QN_ADDR, col))) return BA_ERR_NOMEM;
    nd->dir = dir;
    if ((rc = parse_addr_term(p, nd, is_net)) < 0) goto fail;
    *out = nd;
    return 0;
  }
  if (word_is(p, "port") || word_is(p, "portrange")) {
    int is_range = word_is(p, "portrange");
    next_tok(p);
    if (!(nd = mk(QN_PORT, col))) return BA_ERR_NOMEM;
    nd->dir = dir;
    if (is_range) {
      uint32_t lo, hi;
      if (p->cur.t != T_WORD || parse_range_text(p->s + p->cur.pos, p->cur.len, 65535, &lo, &hi) < 0) {
        rc = fail(p, "port range a-b expected");
        goto fail;
      }
      next_tok(p);
      if ((rc = ranges_push(nd, &cap, lo, hi)) < 0) goto fail;
    } else if (word_is(p, "in")) {
      next_tok(p);
      if ((rc = parse_num_list(p, nd, &cap, 65535)) < 0) goto fail;
    } else {
      qcmp_t c;
      uint64_t v;
      if ((rc = parse_cmp(p, &c)) < 0 || (rc = expect_num(p, 65535, &v)) < 0) goto fail;
      if ((rc = ranges_from_cmp(nd, &cap, c, v, 65535)) < 0) goto fail;
    }
    ranges_normalize(nd->ranges, &nd->n);
    *out = nd;
    return 0;
  }
  if (word_is(p, "as") || word_is(p, "tos") || word_is(p, "vlan")) {
    qfield_t f = word_is(p, "as") ? QF_AS : word_is(p, "tos") ? QF_TOS : QF_VLAN;
    uint64_t max = f == QF_AS ? UINT32_MAX : f == QF_TOS ? 255 : 4095;
    next_tok(p);
    if (!(nd = mk(QN_NUM, col))) return BA_ERR_NOMEM;
    nd->field = f;
    nd->dir = dir;
    if ((rc = parse_cmp(p, &nd->cmp)) < 0 || (rc = expect_num(p, max, &nd->value)) < 0) goto fail;
    *out = nd;
    return 0;
  }
  if (has_dir) return fail(p, "'ip', 'host', 'net', 'port', 'as', 'tos' or 'vlan' expected");
  return fail(p, "unknown filter term");
fail:
  qnode_free(nd);
  return rc;
}

/* nfdump pushes `not` down to its leaves and tests an inverted `flags M` as
 * "none of M" (verified with nfdump 1.7.1: `not flags SA` keeps flows with
 * neither S nor A). With a plain boolean NOT that is: under an odd number of
 * NOTs a flags leaf means "any of M". Toggle the leaves under each NOT. */
static void flags_toggle(qnode_t *n) {
  if (!n) return;
  if (n->kind == QN_FLAGS) n->cmp = n->cmp == QC_EQ ? QC_GT : QC_EQ;
  flags_toggle(n->kid[0]);
  flags_toggle(n->kid[1]);
}

static int parse_unary(parser_t *p, qnode_t **out) {
  if (++p->depth > MAX_DEPTH) return fail(p, "filter nested too deeply");
  int rc;
  if (p->cur.t == T_NOT || word_is(p, "not")) {
    size_t col = p->cur.pos;
    next_tok(p);
    qnode_t *kid;
    if ((rc = parse_unary(p, &kid)) < 0) return rc;
    qnode_t *n = mk(QN_NOT, col);
    if (!n) {
      qnode_free(kid);
      return BA_ERR_NOMEM;
    }
    n->kid[0] = kid;
    flags_toggle(kid);
    *out = n;
  } else if (p->cur.t == T_LP) {
    next_tok(p);
    if ((rc = parse_or(p, out)) < 0) return rc;
    if (p->cur.t != T_RP) {
      qnode_free(*out);
      *out = NULL;
      return fail(p, "')' expected");
    }
    next_tok(p);
  } else {
    if ((rc = parse_term(p, out)) < 0) return rc;
  }
  p->depth--;
  return 0;
}

/* One left-associative level of binary operators: `sub (op sub)*`, where op is
 * the token `t` or the keyword `word`; builds nodes of `kind`. */
static int parse_binary(parser_t *p, qnode_t **out, ttype_t t, const char *word, qnode_kind_t kind,
                        int (*sub)(parser_t *, qnode_t **)) {
  qnode_t *l;
  BA_FORWARD(sub(p, &l));
  while (p->cur.t == t || word_is(p, word)) {
    size_t col = p->cur.pos;
    next_tok(p);
    qnode_t *r;
    int rc = sub(p, &r);
    if (rc < 0) {
      qnode_free(l);
      return rc;
    }
    qnode_t *n = mk(kind, col);
    if (!n) {
      qnode_free(l);
      qnode_free(r);
      return BA_ERR_NOMEM;
    }
    n->kid[0] = l;
    n->kid[1] = r;
    l = n;
  }
  *out = l;
  return 0;
}

static int parse_and(parser_t *p, qnode_t **out) { return parse_binary(p, out, T_AND, "and", QN_AND, parse_unary); }

static int parse_or(parser_t *p, qnode_t **out) { return parse_binary(p, out, T_OR, "or", QN_OR, parse_and); }

int ba_query_compile(ba_query_t *q, const char *text) {
  BA_RETURN_IF(!q || !text, BA_ERR_INVALID);
  qnode_free(q->root);
  q->root = NULL;
  q->errmsg[0] = 0;
  q->errcol = 0;
  if (!q->now_set) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    q->now_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  }
  parser_t p = {text, strlen(text), 0, {T_END, 0, 0}, q, 0};
  next_tok(&p);
  qnode_t *root;
  if (p.cur.t == T_END) {
    root = mk(QN_TRUE, 0);
    if (!root) return BA_ERR_NOMEM;
  } else {
    int rc = parse_or(&p, &root);
    if (rc < 0) return rc;
    if (p.cur.t != T_END) {
      qnode_free(root);
      return fail(&p, "syntax error");
    }
  }
  q->root = root;
  q->cols = qnode_columns(root);
  return 0;
}

int ba_query_parse_window(const char *text, uint64_t now_ns, int local, uint64_t *start_ns,
                          uint64_t *end_ns) {
  BA_RETURN_IF(!text || !start_ns || !end_ns, BA_ERR_INVALID);
  size_t len = strlen(text);
  uint64_t rel;
  if (parse_rel(text, len, &rel) == 0) {
    *start_ns = rel > now_ns ? 0 : now_ns - rel;
    *end_ns = now_ns + 1;
    return 0;
  }
  /* Split at the '-' that follows the first time (dates use '/'; ISO '-'
   * dates have their dash in position 4 or 7, so look for a dash after a
   * time part). */
  const char *dash = NULL;
  for (size_t i = 10; i < len; i++)
    if (text[i] == '-') {
      dash = text + i;
      break;
    }
  size_t l1 = dash ? (size_t)(dash - text) : len;
  uint64_t a, b = UINT64_MAX;
  if (parse_iso(text, l1, &a) < 0) return BA_ERR_SYNTAX;
  if (dash && parse_iso(dash + 1, len - l1 - 1, &b) < 0) return BA_ERR_SYNTAX;
  if (local) {
    /* Shift by the local offset at that instant. */
    time_t t = (time_t)(a / 1000000000ull);
    struct tm tm;
    localtime_r(&t, &tm);
    uint64_t off = (uint64_t)(int64_t)tm.tm_gmtoff * 1000000000ull;
    a -= off;
    if (b != UINT64_MAX) b -= off;
  }
  if (dash && b < a) return BA_ERR_SYNTAX;
  *start_ns = a;
  /* An end time is inclusive of its last second, as nfdump's. */
  *end_ns = b == UINT64_MAX ? UINT64_MAX : b + 1000000000ull;
  return 0;
}

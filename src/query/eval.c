/* The record evaluator (exact nfdump semantics), AST helpers and the
 * canonical AST dump. The evaluator is also the test oracle's predicate. */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "query/query_internal.h"

qnode_t *qnode_new(qnode_kind_t kind) {
  qnode_t *n = ba_calloc(1, sizeof(*n));
  if (n) n->kind = kind;
  return n;
}

void qnode_free(qnode_t *n) {
  if (!n) return;
  qnode_free(n->kid[0]);
  qnode_free(n->kid[1]);
  ba_free(n->ranges);
  ba_free(n->addrs);
  ba_free(n);
}

int qaddr_v4_in(const qaddr_t *a, int octet, unsigned v) {
  return (int)((a->oct[octet][v >> 6] >> (v & 63)) & 1);
}

/* `addr` is the record's 16-byte form; v4 patterns only match IPv4 rows. */
static int qaddr_match_ver(const qaddr_t *a, const uint8_t addr[16], int ipver) {
  if (a->v6) {
    unsigned full = a->plen / 8, rem = a->plen % 8;
    if (memcmp(a->a6, addr, full)) return 0;
    if (rem) {
      uint8_t m = (uint8_t)(0xFF00u >> rem);
      if ((a->a6[full] & m) != (addr[full] & m)) return 0;
    }
    return 1;
  }
  if (ipver != 4) return 0;
  for (int i = 0; i < 4; i++)
    if (!qaddr_v4_in(a, i, addr[12 + i])) return 0;
  return 1;
}

int qaddr_match(const qaddr_t *a, const uint8_t addr[16]) {
  return qaddr_match_ver(a, addr, ba_addr_is_v4(addr) ? 4 : 6);
}

static int addrs_match(const qnode_t *n, const uint8_t addr[16], int ipver) {
  for (size_t i = 0; i < n->n; i++)
    if (qaddr_match_ver(&n->addrs[i], addr, ipver)) return 1;
  return 0;
}

static int ranges_match(const qnode_t *n, uint32_t v) {
  size_t lo = 0, hi = n->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (v < n->ranges[mid].lo) hi = mid;
    else if (v > n->ranges[mid].hi) lo = mid + 1;
    else return 1;
  }
  return 0;
}

static int cmp_u64(qcmp_t c, uint64_t a, uint64_t b) {
  switch (c) {
    case QC_EQ: return a == b;
    case QC_GT: return a > b;
    case QC_LT: return a < b;
    case QC_GE: return a >= b;
    case QC_LE: return a <= b;
  }
  return 0;
}

static int dir_match(qdir_t d, qcmp_t c, uint64_t src, uint64_t dst, uint64_t v) {
  switch (d) {
    case QD_SRC: return cmp_u64(c, src, v);
    case QD_DST: return cmp_u64(c, dst, v);
    case QD_BOTH: return cmp_u64(c, src, v) && cmp_u64(c, dst, v);
    default: return cmp_u64(c, src, v) || cmp_u64(c, dst, v);
  }
}

/* Duration in ms, as nfdump. */
static uint64_t dur_ms(const ba_record_t *r) {
  return r->last_ns > r->first_ns ? (r->last_ns - r->first_ns) / 1000000ull : 0;
}

static uint64_t num_field(const qnode_t *n, const ba_record_t *r) {
  uint64_t d;
  switch (n->field) {
    case QF_PACKETS: return r->packets;
    case QF_BYTES: return r->bytes;
    case QF_DURATION: return dur_ms(r);
    case QF_PPS: d = dur_ms(r); return d ? r->packets * 1000ull / d : 0;
    case QF_BPS: d = dur_ms(r); return d ? r->bytes * 8000ull / d : 0;
    case QF_BPP: return r->packets ? r->bytes / r->packets : 0;
    case QF_FLOWS: return 1;
    case QF_TOS: return r->tos;
    case QF_VLAN: return r->vlan;
    case QF_ICMP_TYPE: return (r->icmp_type || r->icmp_code) ? r->icmp_type : (uint64_t)(r->dst_port >> 8);
    case QF_ICMP_CODE: return (r->icmp_type || r->icmp_code) ? r->icmp_code : (uint64_t)(r->dst_port & 0xFF);
    case QF_FIRST: return r->first_ns;
    case QF_LAST: return r->last_ns;
    default: return 0;
  }
}

int qnode_eval(const qnode_t *n, const ba_record_t *r) {
  for (;;) {
    switch (n->kind) {
      case QN_TRUE: return 1;
      case QN_FALSE: return 0;
      case QN_AND:
        if (!qnode_eval(n->kid[0], r)) return 0;
        n = n->kid[1];
        continue;
      case QN_OR:
        if (qnode_eval(n->kid[0], r)) return 1;
        n = n->kid[1];
        continue;
      case QN_NOT: return !qnode_eval(n->kid[0], r);
      case QN_IPVER: return r->ipver == n->value;
      case QN_ADDR:
        switch (n->dir) {
          case QD_SRC: return addrs_match(n, r->src, r->ipver);
          case QD_DST: return addrs_match(n, r->dst, r->ipver);
          case QD_BOTH: return addrs_match(n, r->src, r->ipver) && addrs_match(n, r->dst, r->ipver);
          default: return addrs_match(n, r->src, r->ipver) || addrs_match(n, r->dst, r->ipver);
        }
      case QN_PORT:
        switch (n->dir) {
          case QD_SRC: return ranges_match(n, r->src_port);
          case QD_DST: return ranges_match(n, r->dst_port);
          case QD_BOTH: return ranges_match(n, r->src_port) && ranges_match(n, r->dst_port);
          default: return ranges_match(n, r->src_port) || ranges_match(n, r->dst_port);
        }
      case QN_PROTO: return ranges_match(n, r->proto);
      case QN_FLAGS:
        /* cmp QC_EQ: all of the flags (nfdump); QC_GT: any of them (under `not`). */
        return n->cmp == QC_EQ ? (r->tcp_flags & n->value) == n->value : (r->tcp_flags & n->value) != 0;
      case QN_TIME: return cmp_u64(n->cmp, n->field == QF_FIRST ? r->first_ns : r->last_ns, n->value);
      case QN_NUM:
        if (n->field == QF_ICMP_TYPE || n->field == QF_ICMP_CODE) {
          if (r->proto != 1 && r->proto != 58) return 0;
          return cmp_u64(n->cmp, num_field(n, r), n->value);
        }
        if (n->field == QF_AS) return dir_match(n->dir, n->cmp, r->src_as, r->dst_as, n->value);
        if (n->field == QF_IF) return dir_match(n->dir, n->cmp, r->in_if, r->out_if, n->value);
        return cmp_u64(n->cmp, num_field(n, r), n->value);
    }
    return 0;
  }
}

uint32_t qnode_columns(const qnode_t *n) {
  if (!n) return 0;
  switch (n->kind) {
    case QN_AND: case QN_OR: case QN_NOT:
      return qnode_columns(n->kid[0]) | qnode_columns(n->kid[1]);
    case QN_IPVER: return BA_COL_SRC | BA_COL_DST;
    case QN_ADDR: return BA_COL_SRC | BA_COL_DST;
    case QN_PORT: return BA_COL_PORTS;
    case QN_PROTO: return BA_COL_PROTO;
    case QN_FLAGS: return BA_COL_FLAGS;
    case QN_TIME: return n->field == QF_FIRST ? BA_COL_FIRST : BA_COL_LAST;
    case QN_NUM:
      switch (n->field) {
        case QF_PACKETS: return BA_COL_PACKETS;
        case QF_BYTES: return BA_COL_BYTES;
        case QF_DURATION: return BA_COL_FIRST | BA_COL_LAST;
        case QF_PPS: return BA_COL_PACKETS | BA_COL_FIRST | BA_COL_LAST;
        case QF_BPS: return BA_COL_BYTES | BA_COL_FIRST | BA_COL_LAST;
        case QF_BPP: return BA_COL_BYTES | BA_COL_PACKETS;
        case QF_AS: return BA_COL_AS;
        case QF_IF: return BA_COL_IF;
        case QF_TOS: return BA_COL_TOS;
        case QF_VLAN: return BA_COL_VLAN;
        case QF_ICMP_TYPE: case QF_ICMP_CODE: return BA_COL_ICMP | BA_COL_PORTS | BA_COL_PROTO;
        default: return 0;
      }
    default: return 0;
  }
}

/* ---------- public handle ---------- */

int ba_query_create(ba_query_t **out) {
  BA_RETURN_IF(!out, BA_ERR_INVALID);
  ba_query_t *q = ba_calloc(1, sizeof(*q));
  BA_RETURN_IF(!q, BA_ERR_NOMEM);
  *out = q;
  return 0;
}

void ba_query_free(ba_query_t *q) {
  if (!q) return;
  qnode_free(q->root);
  ba_free(q);
}

void ba_query_set_now(ba_query_t *q, uint64_t now_ns) {
  q->now_ns = now_ns;
  q->now_set = 1;
}

const char *ba_query_errmsg(const ba_query_t *q) { return q ? q->errmsg : "no query"; }
size_t ba_query_errcol(const ba_query_t *q) { return q ? q->errcol : 0; }

int ba_query_match(const ba_query_t *q, const ba_record_t *r) {
  if (!q || !q->root || !r) return 0;
  return qnode_eval(q->root, r);
}

uint32_t ba_query_columns(const ba_query_t *q) { return q ? q->cols : 0; }

/* ---------- dump ---------- */

typedef struct sbuf {
  char *buf;
  size_t cap, len;
} sbuf_t;

static void sb_puts(sbuf_t *b, const char *s) {
  size_t l = strlen(s);
  if (b->cap && b->len < b->cap - 1) {
    size_t room = b->cap - 1 - b->len;
    memcpy(b->buf + b->len, s, l < room ? l : room);
  }
  b->len += l;
}

static void sb_printf(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf_t *b, const char *fmt, ...) {
  char tmp[128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof(tmp), fmt, ap);
  va_end(ap);
  sb_puts(b, tmp);
}

static const char *dir_name(qdir_t d) {
  return d == QD_SRC ? "src" : d == QD_DST ? "dst" : d == QD_BOTH ? "both" : "any";
}
static const char *cmp_name(qcmp_t c) {
  static const char *const n[] = {"==", ">", "<", ">=", "<="};
  return n[c];
}
static const char *field_name(qfield_t f) {
  static const char *const n[] = {"packets", "bytes", "duration", "pps", "bps", "bpp", "flows", "as",
                                  "if", "tos", "icmp-type", "icmp-code", "vlan", "first", "last"};
  return n[f];
}

static void dump_octet(sbuf_t *b, const qaddr_t *a, int i) {
  unsigned v = 0;
  int first = 1, all = 1;
  for (unsigned x = 0; x < 256; x++)
    if (!qaddr_v4_in(a, i, x)) all = 0;
  if (all) {
    sb_puts(b, "*");
    return;
  }
  while (v < 256) {
    if (!qaddr_v4_in(a, i, v)) {
      v++;
      continue;
    }
    unsigned e = v;
    while (e + 1 < 256 && qaddr_v4_in(a, i, e + 1)) e++;
    if (!first) sb_puts(b, ",");
    if (e == v) sb_printf(b, "%u", v);
    else sb_printf(b, "%u-%u", v, e);
    first = 0;
    v = e + 1;
  }
  if (first) sb_puts(b, "{}");
}

static void dump_node(sbuf_t *b, const qnode_t *n) {
  switch (n->kind) {
    case QN_TRUE: sb_puts(b, "(true)"); return;
    case QN_FALSE: sb_puts(b, "(false)"); return;
    case QN_AND: case QN_OR:
      sb_puts(b, n->kind == QN_AND ? "(and " : "(or ");
      dump_node(b, n->kid[0]);
      sb_puts(b, " ");
      dump_node(b, n->kid[1]);
      sb_puts(b, ")");
      return;
    case QN_NOT:
      sb_puts(b, "(not ");
      dump_node(b, n->kid[0]);
      sb_puts(b, ")");
      return;
    case QN_IPVER: sb_printf(b, "(ipver %u)", (unsigned)n->value); return;
    case QN_ADDR:
      sb_printf(b, "(ip %s", dir_name(n->dir));
      for (size_t i = 0; i < n->n; i++) {
        const qaddr_t *a = &n->addrs[i];
        sb_puts(b, " ");
        if (a->v6) {
          char t[INET6_ADDRSTRLEN];
          inet_ntop(AF_INET6, a->a6, t, sizeof(t));
          sb_printf(b, "%s/%u", t, a->plen);
        } else {
          for (int k = 0; k < 4; k++) {
            if (k) sb_puts(b, ".");
            dump_octet(b, a, k);
          }
        }
      }
      sb_puts(b, ")");
      return;
    case QN_PORT: case QN_PROTO:
      if (n->kind == QN_PORT) sb_printf(b, "(port %s [", dir_name(n->dir));
      else sb_puts(b, "(proto [");
      for (size_t i = 0; i < n->n; i++) {
        if (i) sb_puts(b, ",");
        if (n->ranges[i].lo == n->ranges[i].hi) sb_printf(b, "%u", n->ranges[i].lo);
        else sb_printf(b, "%u-%u", n->ranges[i].lo, n->ranges[i].hi);
      }
      sb_puts(b, "])");
      return;
    case QN_FLAGS:
      sb_printf(b, "(%s 0x%02x)", n->cmp == QC_EQ ? "flags" : "flags-any", (unsigned)n->value);
      return;
    case QN_TIME:
      sb_printf(b, "(%s %s %llu)", field_name(n->field), cmp_name(n->cmp), (unsigned long long)n->value);
      return;
    case QN_NUM:
      if (n->field == QF_AS || n->field == QF_IF)
        sb_printf(b, "(%s %s %s %llu)", field_name(n->field), dir_name(n->dir), cmp_name(n->cmp),
                  (unsigned long long)n->value);
      else
        sb_printf(b, "(%s %s %llu)", field_name(n->field), cmp_name(n->cmp), (unsigned long long)n->value);
      return;
  }
}

int ba_query_dump(const ba_query_t *q, char *buf, size_t cap, size_t *len) {
  BA_RETURN_IF(!q || !q->root, BA_ERR_INVALID);
  sbuf_t b = {buf, cap, 0};
  dump_node(&b, q->root);
  if (cap) buf[b.len < cap ? b.len : cap - 1] = 0;
  if (len) *len = b.len;
  return 0;
}

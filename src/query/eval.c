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

/* `addr` is the record's 16-byte form; v4 patterns only match IPv4 rows,
 * v6 patterns IPv4 and IPv6 rows (an IPv4 row's address is ::ffff:a.b.c.d):
 * a non-IP packet's zero address is no address, not "::". */
static int qaddr_match_ver(const qaddr_t *a, const uint8_t addr[16], int ipver) {
  if (a->v6) {
    if (ipver != 4 && ipver != 6) return 0;
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

int qflags_match(const qnode_t *n, unsigned v) {
  switch (n->aux) {
    case QF_ALLOF: return (v & n->value) == n->value;
    case QF_ANYOF: return (v & n->value) != 0;
    default: return cmp_u64(n->cmp, v, n->value);
  }
}

/* The (src, dst) pair a directional numeric field compares. */
static void pair_field(const qnode_t *n, const ba_record_t *r, uint64_t *s, uint64_t *d) {
  switch (n->field) {
    case QF_AS:
      *s = n->dir == QD_PREV ? r->prev_as : n->dir == QD_NEXT ? r->next_as : r->src_as;
      *d = n->dir == QD_PREV ? r->prev_as : n->dir == QD_NEXT ? r->next_as : r->dst_as;
      return;
    case QF_IF: *s = r->in_if; *d = r->out_if; return;
    case QF_TOS: *s = r->tos; *d = r->dst_tos; return;
    case QF_VLAN: *s = r->vlan; *d = r->dst_vlan; return;
    case QF_MASK: *s = r->src_mask; *d = r->dst_mask; return;
    default: *s = r->xsrc_port; *d = r->xdst_port; return; /* QF_XPORT */
  }
}

static uint64_t num_field(const qnode_t *n, const ba_record_t *r) {
  uint64_t d;
  switch (n->field) {
    case QF_PACKETS: return r->packets;
    case QF_BYTES: return r->bytes;
    case QF_OUT_PACKETS: return r->out_packets;
    case QF_OUT_BYTES: return r->out_bytes;
    case QF_DURATION: return dur_ms(r);
    case QF_PPS: d = dur_ms(r); return d ? r->packets * 1000ull / d : 0;
    case QF_BPS: d = dur_ms(r); return d ? r->bytes * 8000ull / d : 0;
    case QF_BPP: return r->packets ? r->bytes / r->packets : 0;
    case QF_FLOWS: return r->aggr_flows ? r->aggr_flows : 1;
    case QF_ICMP_TYPE: return (r->icmp_type || r->icmp_code) ? r->icmp_type : (uint64_t)(r->dst_port >> 8);
    case QF_ICMP_CODE: return (r->icmp_type || r->icmp_code) ? r->icmp_code : (uint64_t)(r->dst_port & 0xFF);
    case QF_FIRST: return r->first_ns;
    case QF_LAST: return r->last_ns;
    case QF_ENGINE_TYPE: return r->engine_type;
    case QF_ENGINE_ID: return r->engine_id;
    case QF_OBS_DOMAIN: return r->obs_domain;
    case QF_NAT_EVENT: return r->nat_event;
    case QF_FW_EVENT: return r->fw_event;
    case QF_FW_XEVENT: return r->fw_xevent;
    case QF_IVRF: return r->ingress_vrf;
    case QF_EVRF: return r->egress_vrf;
    case QF_DIRECTION: return r->direction;
    case QF_MPLS_LABEL: return r->mpls[n->aux - 1] >> 4;
    case QF_MPLS_EXP: return (r->mpls[n->aux - 1] >> 1) & 7;
    default: return 0;
  }
}

/* nfdump's `mpls eos`: the label of the entry with the bottom-of-stack bit;
 * `mpls any`: some entry carries the label. */
static int mpls_match(const qnode_t *n, const ba_record_t *r) {
  for (int i = 0; i < 10; i++) {
    uint32_t e = r->mpls[i];
    if (n->field == QF_MPLS_ANY) {
      if ((e >> 4) == n->value) return 1;
    } else if (e & 1) {
      return cmp_u64(n->cmp, e >> 4, n->value);
    }
  }
  return 0;
}

static int mac_match(const qnode_t *n, const ba_record_t *r) {
  return ((n->aux & QM_IN_SRC) && r->in_src_mac == n->value) || ((n->aux & QM_IN_DST) && r->in_dst_mac == n->value) ||
         ((n->aux & QM_OUT_SRC) && r->out_src_mac == n->value) || ((n->aux & QM_OUT_DST) && r->out_dst_mac == n->value);
}

static int num_eval(const qnode_t *n, const ba_record_t *r) {
  uint64_t s, d;
  switch (n->field) {
    case QF_ICMP_TYPE: case QF_ICMP_CODE:
      if (r->proto != 1 && r->proto != 58) return 0;
      return cmp_u64(n->cmp, num_field(n, r), n->value);
    case QF_AS: case QF_IF: case QF_TOS: case QF_VLAN: case QF_MASK: case QF_XPORT:
      pair_field(n, r, &s, &d);
      if (n->ranges) {
        switch (n->dir) {
          case QD_SRC: case QD_PREV: case QD_NEXT: return ranges_match(n, (uint32_t)s);
          case QD_DST: return ranges_match(n, (uint32_t)d);
          case QD_BOTH: return ranges_match(n, (uint32_t)s) && ranges_match(n, (uint32_t)d);
          default: return ranges_match(n, (uint32_t)s) || ranges_match(n, (uint32_t)d);
        }
      }
      if (n->dir == QD_PREV || n->dir == QD_NEXT) return cmp_u64(n->cmp, s, n->value);
      return dir_match(n->dir, n->cmp, s, d, n->value);
    case QF_MPLS_EOS: case QF_MPLS_ANY: return mpls_match(n, r);
    case QF_MAC: return mac_match(n, r);
    default: return cmp_u64(n->cmp, num_field(n, r), n->value);
  }
}

/* An address field that is all zero ("not sent") reads as 0.0.0.0, as
 * nfdump prints and matches it. */
static int xaddr_one(const qnode_t *n, const uint8_t a[16]) {
  static const uint8_t zero[16] = {0};
  uint8_t v4zero[16] = {0};
  if (!memcmp(a, zero, 16)) {
    v4zero[10] = v4zero[11] = 0xff;
    a = v4zero;
  }
  return addrs_match(n, a, ba_addr_is_v4(a) ? 4 : 6);
}

static int xaddr_eval(const qnode_t *n, const ba_record_t *r) {
  switch (n->field) {
    case QF_NEXTHOP: return xaddr_one(n, r->next_hop);
    case QF_BGPNEXTHOP: return xaddr_one(n, r->bgp_next_hop);
    case QF_ROUTER: return xaddr_one(n, r->exporter);
    default:
      switch (n->dir) {
        case QD_SRC: return xaddr_one(n, r->xsrc);
        case QD_DST: return xaddr_one(n, r->xdst);
        case QD_BOTH: return xaddr_one(n, r->xsrc) && xaddr_one(n, r->xdst);
        default: return xaddr_one(n, r->xsrc) || xaddr_one(n, r->xdst);
      }
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
      case QN_FLAGS: return qflags_match(n, r->tcp_flags);
      case QN_TIME: return cmp_u64(n->cmp, n->field == QF_FIRST ? r->first_ns : r->last_ns, n->value);
      case QN_NUM: return num_eval(n, r);
      case QN_XADDR: return xaddr_eval(n, r);
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
    case QN_XADDR:
      return n->field == QF_ROUTER ? BA_COL_EXPORTER : n->field == QF_XADDR ? BA_COL_NAT : BA_COL_NEXTHOP;
    case QN_NUM:
      switch (n->field) {
        case QF_PACKETS: return BA_COL_PACKETS;
        case QF_BYTES: return BA_COL_BYTES;
        case QF_OUT_PACKETS: case QF_OUT_BYTES: return BA_COL_OUT;
        case QF_DURATION: return BA_COL_FIRST | BA_COL_LAST;
        case QF_PPS: return BA_COL_PACKETS | BA_COL_FIRST | BA_COL_LAST;
        case QF_BPS: return BA_COL_BYTES | BA_COL_FIRST | BA_COL_LAST;
        case QF_BPP: return BA_COL_BYTES | BA_COL_PACKETS;
        case QF_FLOWS: return BA_COL_MISC;
        case QF_AS: return n->dir == QD_PREV || n->dir == QD_NEXT ? BA_COL_BGPAS : BA_COL_AS;
        case QF_IF: return BA_COL_IF;
        case QF_TOS: return BA_COL_TOS | BA_COL_DSTTOS;
        case QF_VLAN: return BA_COL_VLAN | BA_COL_DSTTOS;
        case QF_ICMP_TYPE: case QF_ICMP_CODE: return BA_COL_ICMP | BA_COL_PORTS | BA_COL_PROTO;
        case QF_MASK: return BA_COL_MASK;
        case QF_ENGINE_TYPE: case QF_ENGINE_ID: case QF_OBS_DOMAIN: case QF_DIRECTION: return BA_COL_ENGINE;
        case QF_NAT_EVENT: case QF_XPORT: return BA_COL_NAT;
        case QF_FW_EVENT: case QF_FW_XEVENT: case QF_IVRF: case QF_EVRF: return BA_COL_FW;
        case QF_MPLS_LABEL: case QF_MPLS_EXP: case QF_MPLS_EOS: case QF_MPLS_ANY: return BA_COL_MPLS;
        case QF_MAC: return BA_COL_MAC;
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
  static const char *const n[] = {"any", "src", "dst", "both", "prev", "next"};
  return n[d];
}
static const char *cmp_name(qcmp_t c) {
  static const char *const n[] = {"==", ">", "<", ">=", "<="};
  return n[c];
}
static const char *field_name(qfield_t f) {
  static const char *const n[QF_COUNT_] = {
    "packets", "bytes", "duration", "pps", "bps", "bpp", "flows", "as", "if", "tos", "icmp-type",
    "icmp-code", "vlan", "first", "last", "out-packets", "out-bytes", "mask", "engine-type", "engine-id",
    "obs-domain", "nat-event", "asa-event", "asa-xevent", "ingress-vrf", "egress-vrf", "xport",
    "mpls-label", "mpls-exp", "mpls-eos", "mpls-any", "mac", "flowdir", "next-ip", "bgpnext-ip",
    "router-ip", "xip"};
  return n[f];
}

static int field_has_dir(qfield_t f) {
  return f == QF_AS || f == QF_IF || f == QF_TOS || f == QF_VLAN || f == QF_MASK || f == QF_XPORT || f == QF_XADDR;
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

static void dump_addrs(sbuf_t *b, const qnode_t *n) {
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
}

static void dump_ranges(sbuf_t *b, const qnode_t *n) {
  sb_puts(b, "[");
  for (size_t i = 0; i < n->n; i++) {
    if (i) sb_puts(b, ",");
    if (n->ranges[i].lo == n->ranges[i].hi) sb_printf(b, "%u", n->ranges[i].lo);
    else sb_printf(b, "%u-%u", n->ranges[i].lo, n->ranges[i].hi);
  }
  sb_puts(b, "]");
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
    case QN_ADDR: case QN_XADDR:
      if (n->kind == QN_ADDR) sb_printf(b, "(ip %s", dir_name(n->dir));
      else if (n->field == QF_XADDR) sb_printf(b, "(xip %s", dir_name(n->dir));
      else sb_printf(b, "(%s", field_name(n->field));
      dump_addrs(b, n);
      sb_puts(b, ")");
      return;
    case QN_PORT: case QN_PROTO:
      if (n->kind == QN_PORT) sb_printf(b, "(port %s ", dir_name(n->dir));
      else sb_puts(b, "(proto ");
      dump_ranges(b, n);
      sb_puts(b, ")");
      return;
    case QN_FLAGS:
      if (n->aux == QF_CMP) sb_printf(b, "(flags %s 0x%02x)", cmp_name(n->cmp), (unsigned)n->value);
      else sb_printf(b, "(%s 0x%02x)", n->aux == QF_ALLOF ? "flags" : "flags-any", (unsigned)n->value);
      return;
    case QN_TIME:
      sb_printf(b, "(%s %s %llu)", field_name(n->field), cmp_name(n->cmp), (unsigned long long)n->value);
      return;
    case QN_NUM:
      sb_printf(b, "(%s", field_name(n->field));
      if (field_has_dir(n->field)) sb_printf(b, " %s", dir_name(n->dir));
      if (n->field == QF_MPLS_LABEL || n->field == QF_MPLS_EXP) sb_printf(b, " %u", n->aux);
      if (n->field == QF_MAC) sb_printf(b, " 0x%x", n->aux);
      if (n->ranges) {
        sb_puts(b, " in ");
        dump_ranges(b, n);
      } else {
        sb_printf(b, " %s %llu", cmp_name(n->cmp), (unsigned long long)n->value);
      }
      sb_puts(b, ")");
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

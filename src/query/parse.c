/* Recursive-descent parser for nfdump's filter language with the bitarc
 * extensions (src/query/GRAMMAR.md). Precedence: not > and > or. Chains of
 * one operator are built as balanced trees, so a filter of 100,000 terms
 * joined by `or` is a tree of depth 17 for every recursive walk (evaluator,
 * planner, dump). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "query/parse_int.h"

/* ---------- grammar ---------- */

static int parse_or(parser_t *p, qnode_t **out);

static int parse_proto_value(parser_t *p, qnode_t *nd, size_t *cap) {
  static const struct { const char *name; unsigned num; } names[] = {
    {"icmp", 1}, {"igmp", 2}, {"ipip", 4}, {"tcp", 6}, {"egp", 8}, {"udp", 17}, {"ipv6", 41},
    {"rsvp", 46}, {"gre", 47}, {"esp", 50}, {"ah", 51}, {"icmp6", 58}, {"ipv6-icmp", 58},
    {"eigrp", 88}, {"ospf", 89}, {"pim", 103}, {"vrrp", 112}, {"l2tp", 115}, {"sctp", 132},
  };
  if (p->cur.t == T_WORD) {
    for (size_t i = 0; i < BA_ARRAY_LEN(names); i++)
      if (qp_word(p, names[i].name)) {
        qp_next(p);
        return qp_ranges_push(nd, cap, names[i].num, names[i].num);
      }
  }
  qcmp_t c;
  uint64_t v;
  BA_FORWARD(qp_cmp(p, &c));
  BA_FORWARD(qp_expect_num(p, 255, &v));
  return qp_ranges_from_cmp(nd, cap, c, v, 255);
}

/* 'flags' [cmp] number | 'flags' letters. */
static int parse_flags(parser_t *p, qnode_t *nd) {
  qcmp_t c;
  size_t before = p->cur.pos;
  BA_FORWARD(qp_cmp(p, &c));
  int had_cmp = p->cur.pos != before;
  if (p->cur.t != T_WORD) return qp_fail(p, "flags expected (A S F R P U X C E or a number)");
  const char *s = p->s + p->cur.pos;
  uint64_t m = 0;
  if (qp_num_text(s, p->cur.len, &m) == 0) {
    /* nfdump compares the flag byte with the number (`flags 2` is SYN only) */
    if (m > 255) return qp_fail(p, "flags value out of range (0..255)");
    nd->aux = QF_CMP;
    nd->cmp = c;
  } else {
    if (had_cmp) return qp_fail(p, "a comparator needs a numeric flags value");
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
          return qp_fail_at(p, p->cur.pos + i, "unknown TCP flag '%s'", s + i, 1);
      }
    }
    nd->aux = QF_ALLOF;
  }
  nd->value = m;
  qp_next(p);
  return 0;
}

/* nfdump's flags terms imply TCP: `flags M` is `proto tcp and flags M`. */
static int flags_term(parser_t *p, size_t col, qnode_t **out) {
  qnode_t *f = qp_mk(QN_FLAGS, col), *t = qp_mk(QN_PROTO, col), *a = qp_mk(QN_AND, col);
  size_t cap = 0;
  int rc = f && t && a ? 0 : BA_ERR_NOMEM;
  if (rc == 0) rc = qp_ranges_push(t, &cap, 6, 6);
  if (rc == 0) rc = parse_flags(p, f);
  if (rc < 0) {
    qnode_free(f);
    qnode_free(t);
    qnode_free(a);
    return rc;
  }
  a->kid[0] = t;
  a->kid[1] = f;
  *out = a;
  return 0;
}

/* [dir] 'ip'|'host' ... / 'net' ... */
static int parse_addr_term(parser_t *p, qnode_t *nd, int is_net) {
  size_t cap = 0;
  if (!is_net && qp_word(p, "in")) {
    qp_next(p);
    return qp_addr_list(p, nd, &cap);
  }
  if (p->cur.t != T_WORD) return qp_fail(p, "address expected");
  qaddr_t a;
  size_t end;
  int has_len;
  BA_FORWARD(qp_scan_addr(p, p->cur.pos, &a, &end, 1, &has_len));
  size_t astart = p->cur.pos;
  qp_reset(p, end);
  if (is_net && !has_len) {
    /* nfdump's "net a.b.c.d m.m.m.m" */
    int l = p->cur.t == T_WORD ? qp_mask_len(p->s + p->cur.pos, p->cur.len) : -1;
    if (l < 0 || a.v6) return qp_fail(p, "'/len' or netmask expected");
    uint32_t v4 = 0;
    for (int i = 0; i < 4; i++) {
      unsigned v = 0;
      while (v < 256 && !qaddr_v4_in(&a, i, v)) v++;
      v4 |= (uint32_t)v << (24 - 8 * i);
    }
    qp_prefix4(&a, v4, (unsigned)l);
    qp_next(p);
  }
  (void)astart;
  return qp_addrs_push(nd, &cap, &a);
}

static int qp_dir(parser_t *p, qdir_t *d) {
  *d = QD_EITHER;
  if (qp_word(p, "src")) *d = QD_SRC;
  else if (qp_word(p, "dst")) *d = QD_DST;
  else return 0;
  qp_next(p);
  /* nfdump's "src and dst" / "src or dst" qualifiers */
  size_t save = p->pos;
  tok_t cur = p->cur;
  if (p->cur.t == T_AND || p->cur.t == T_OR || qp_word(p, "and") || qp_word(p, "or")) {
    int is_and = p->cur.t == T_AND || qp_word(p, "and");
    qp_next(p);
    if (qp_word(p, *d == QD_SRC ? "dst" : "src")) {
      qp_next(p);
      *d = is_and ? QD_BOTH : QD_EITHER;
      return 0;
    }
    p->pos = save;
    p->cur = cur;
  }
  return 0;
}

/* A numeric field term: [cmp] number, or for `as` also `in [list]`. */
static int num_term(parser_t *p, size_t col, qfield_t f, qdir_t dir, uint64_t max, qnode_t **out) {
  qnode_t *nd = qp_mk(QN_NUM, col);
  if (!nd) return BA_ERR_NOMEM;
  nd->field = f;
  nd->dir = dir;
  int rc;
  if (f == QF_AS && qp_word(p, "in")) {
    size_t cap = 0;
    qp_next(p);
    rc = qp_num_list(p, nd, &cap, UINT32_MAX);
    if (rc == 0) qp_ranges_normalize(nd->ranges, &nd->n);
  } else if ((rc = qp_cmp(p, &nd->cmp)) == 0) {
    rc = qp_expect_num(p, max, &nd->value);
  }
  if (rc < 0) {
    qnode_free(nd);
    return rc;
  }
  *out = nd;
  return 0;
}

/* 'portrange' a-b | 'port' 'in' [list] | 'port' [cmp] number */
static int port_term(parser_t *p, size_t col, qdir_t dir, int is_range, qnode_t **out) {
  qnode_t *nd = qp_mk(QN_PORT, col);
  size_t cap = 0;
  int rc = 0;
  if (!nd) return BA_ERR_NOMEM;
  nd->dir = dir;
  if (is_range) {
    uint32_t lo, hi;
    if (p->cur.t != T_WORD || qp_range_text(p->s + p->cur.pos, p->cur.len, 65535, &lo, &hi) < 0) {
      rc = qp_fail(p, "port range a-b expected");
    } else {
      qp_next(p);
      rc = qp_ranges_push(nd, &cap, lo, hi);
    }
  } else if (qp_word(p, "in")) {
    qp_next(p);
    rc = qp_num_list(p, nd, &cap, 65535);
  } else {
    qcmp_t c;
    uint64_t v;
    if ((rc = qp_cmp(p, &c)) == 0 && (rc = qp_expect_num(p, 65535, &v)) == 0)
      rc = qp_ranges_from_cmp(nd, &cap, c, v, 65535);
  }
  if (rc < 0) {
    qnode_free(nd);
    return rc;
  }
  qp_ranges_normalize(nd->ranges, &nd->n);
  *out = nd;
  return 0;
}

static int parse_term(parser_t *p, qnode_t **out) {
  size_t col = p->cur.pos;
  qnode_t *nd = NULL;
  int rc = 0;
  size_t cap = 0;
  if (p->cur.t != T_WORD) return qp_fail(p, "filter term expected");
  if (qp_word(p, "any")) {
    qp_next(p);
    *out = qp_mk(QN_TRUE, col);
    return *out ? 0 : BA_ERR_NOMEM;
  }
  if (qp_word(p, "ipv4") || qp_word(p, "inet") || qp_word(p, "ipv6") || qp_word(p, "inet6")) {
    int six = qp_word(p, "ipv6") || qp_word(p, "inet6");
    qp_next(p);
    if (!(nd = qp_mk(QN_IPVER, col))) return BA_ERR_NOMEM;
    nd->value = six ? 6 : 4;
    *out = nd;
    return 0;
  }
  /* bare protocol names: tcp, udp, icmp, ... (BPF style) */
  static const char *const bare[] = {"tcp", "udp", "icmp", "icmp6", "gre", "esp", "sctp"};
  for (size_t i = 0; i < BA_ARRAY_LEN(bare); i++)
    if (qp_word(p, bare[i])) {
      if (!(nd = qp_mk(QN_PROTO, col))) return BA_ERR_NOMEM;
      if ((rc = parse_proto_value(p, nd, &cap)) < 0) goto fail;
      *out = nd;
      return 0;
    }
  if (qp_word(p, "proto")) {
    qp_next(p);
    if (!(nd = qp_mk(QN_PROTO, col))) return BA_ERR_NOMEM;
    if ((rc = parse_proto_value(p, nd, &cap)) < 0) goto fail;
    qp_ranges_normalize(nd->ranges, &nd->n);
    *out = nd;
    return 0;
  }
  if (qp_word(p, "flags")) {
    qp_next(p);
    return flags_term(p, col, out);
  }
  if (qp_word(p, "after") || qp_word(p, "before")) {
    int after = qp_word(p, "after");
    qp_next(p);
    if (!(nd = qp_mk(QN_TIME, col))) return BA_ERR_NOMEM;
    nd->field = QF_FIRST;
    nd->cmp = after ? QC_GE : QC_LT;
    if ((rc = qp_time(p, &nd->value)) < 0) goto fail;
    *out = nd;
    return 0;
  }
  if (qp_word(p, "first") || qp_word(p, "last")) {
    int first = qp_word(p, "first");
    qp_next(p);
    if (!qp_word(p, "seen")) return qp_fail(p, "'seen' expected");
    qp_next(p);
    if (!(nd = qp_mk(QN_TIME, col))) return BA_ERR_NOMEM;
    nd->field = first ? QF_FIRST : QF_LAST;
    if ((rc = qp_cmp(p, &nd->cmp)) < 0) goto fail;
    if ((rc = qp_time(p, &nd->value)) < 0) goto fail;
    *out = nd;
    return 0;
  }
  static const struct { const char *kw; qfield_t f; uint64_t max; } nums[] = {
    {"duration", QF_DURATION, UINT64_MAX}, {"pps", QF_PPS, UINT64_MAX},
    {"bps", QF_BPS, UINT64_MAX}, {"bpp", QF_BPP, UINT64_MAX}, {"flows", QF_FLOWS, UINT64_MAX},
    {"icmp-type", QF_ICMP_TYPE, 255}, {"icmp-code", QF_ICMP_CODE, 255},
  };
  for (size_t i = 0; i < BA_ARRAY_LEN(nums); i++)
    if (qp_word(p, nums[i].kw)) {
      qp_next(p);
      return num_term(p, col, nums[i].f, QD_EITHER, nums[i].max, out);
    }
  /* nfdump's qualifiers: 'in'/'out' (counters, interfaces, MACs), then
   * 'src'/'dst'/'src and dst'/'src or dst'. */
  int inout = 0;
  if (qp_word(p, "in") || qp_word(p, "out")) {
    inout = qp_word(p, "in") ? 1 : 2;
    qp_next(p);
  }
  qdir_t dir;
  size_t dircol = p->cur.pos;
  BA_FORWARD(qp_dir(p, &dir));
  int has_dir = p->cur.pos != dircol;
  if (inout && !has_dir) {
    if (qp_word(p, "if")) {
      qp_next(p);
      return num_term(p, col, QF_IF, inout == 1 ? QD_SRC : QD_DST, UINT32_MAX, out);
    }
    if (qp_word(p, "packets") || qp_word(p, "bytes")) {
      int pk = qp_word(p, "packets");
      qp_next(p);
      qfield_t f = inout == 1 ? (pk ? QF_PACKETS : QF_BYTES) : (pk ? QF_OUT_PACKETS : QF_OUT_BYTES);
      return num_term(p, col, f, QD_EITHER, UINT64_MAX, out);
    }
  }
  if (!inout && !has_dir) {
    if (qp_word(p, "packets") || qp_word(p, "bytes")) {
      qfield_t f = qp_word(p, "packets") ? QF_PACKETS : QF_BYTES;
      qp_next(p);
      return num_term(p, col, f, QD_EITHER, UINT64_MAX, out);
    }
    if (qp_word(p, "if")) {
      qp_next(p);
      return num_term(p, col, QF_IF, QD_EITHER, UINT32_MAX, out);
    }
  }
  if (!inout && (qp_word(p, "ip") || qp_word(p, "host") || qp_word(p, "net"))) {
    int is_net = qp_word(p, "net");
    qp_next(p);
    if (!(nd = qp_mk(QN_ADDR, col))) return BA_ERR_NOMEM;
    nd->dir = dir;
    if ((rc = parse_addr_term(p, nd, is_net)) < 0) goto fail;
    *out = nd;
    return 0;
  }
  if (!inout && (qp_word(p, "port") || qp_word(p, "portrange"))) {
    int is_range = qp_word(p, "portrange");
    qp_next(p);
    return port_term(p, col, dir, is_range, out);
  }
  if (!inout && (qp_word(p, "as") || qp_word(p, "tos") || qp_word(p, "vlan"))) {
    qfield_t f = qp_word(p, "as") ? QF_AS : qp_word(p, "tos") ? QF_TOS : QF_VLAN;
    uint64_t max = f == QF_AS ? UINT32_MAX : f == QF_TOS ? 255 : 65535;
    qp_next(p);
    /* nfdump: a bare `tos` is the source ToS; `dst tos` the destination's */
    if (f == QF_TOS && !has_dir) dir = QD_SRC;
    return num_term(p, col, f, dir, max, out);
  }
  rc = qp_ext_term(p, dir, has_dir, inout, col, out);
  if (rc <= 0) return rc;
  if (has_dir || inout) return qp_fail(p, "'ip', 'host', 'net', 'port', 'as', 'tos', 'vlan', 'mask', 'mac' or 'xip' expected");
  return qp_fail(p, "unknown filter term");
fail:
  qnode_free(nd);
  return rc;
}

/* nfdump pushes `not` down to its leaves and tests an inverted `flags M` as
 * "none of M" (verified with nfdump 1.7.1: `not flags SA` keeps the non-TCP
 * flows and the TCP flows with neither S nor A). With a plain boolean NOT
 * that is: under an odd number of NOTs a letter flags leaf means "any of M".
 * Toggle the leaves under each NOT. A numeric `flags N` is a plain
 * comparison and negates plainly (nfdump: `not flags 2` = all but SYN-only). */
static void flags_toggle(qnode_t *n) {
  if (!n) return;
  if (n->kind == QN_FLAGS && n->aux != QF_CMP) n->aux = n->aux == QF_ALLOF ? QF_ANYOF : QF_ALLOF;
  flags_toggle(n->kid[0]);
  flags_toggle(n->kid[1]);
}

static int parse_unary(parser_t *p, qnode_t **out) {
  if (++p->depth > QP_MAX_DEPTH) return qp_fail(p, "filter nested too deeply");
  int rc;
  if (p->cur.t == T_NOT || qp_word(p, "not")) {
    size_t col = p->cur.pos;
    qp_next(p);
    qnode_t *kid;
    if ((rc = parse_unary(p, &kid)) < 0) return rc;
    qnode_t *n = qp_mk(QN_NOT, col);
    if (!n) {
      qnode_free(kid);
      return BA_ERR_NOMEM;
    }
    n->kid[0] = kid;
    flags_toggle(kid);
    *out = n;
  } else if (p->cur.t == T_LP) {
    qp_next(p);
    if ((rc = parse_or(p, out)) < 0) return rc;
    if (p->cur.t != T_RP) {
      qnode_free(*out);
      *out = NULL;
      return qp_fail(p, "')' expected");
    }
    qp_next(p);
  } else {
    if ((rc = parse_term(p, out)) < 0) return rc;
  }
  p->depth--;
  return 0;
}

/* Links ops[lo, hi) into a balanced tree with the preallocated nodes
 * joins[*nj...] (AND and OR are associative; the left half takes the extra
 * operand, so a chain of three is ((a b) c) as before). A node's column is
 * its operator's (cols[i]: the operator before operand i). */
static qnode_t *link_balanced(qnode_t **ops, const uint32_t *cols, size_t lo, size_t hi, qnode_t **joins,
                              size_t *nj) {
  if (hi - lo == 1) return ops[lo];
  size_t mid = lo + (hi - lo + 1) / 2;
  qnode_t *n = joins[(*nj)++];
  n->col = cols[mid];
  n->kid[0] = link_balanced(ops, cols, lo, mid, joins, nj);
  n->kid[1] = link_balanced(ops, cols, mid, hi, joins, nj);
  return n;
}

static int join_balanced(qnode_t **ops, const uint32_t *cols, size_t n, qnode_kind_t kind, qnode_t **out) {
  qnode_t **joins = ba_calloc(n, sizeof(*joins));
  BA_RETURN_IF(!joins, BA_ERR_NOMEM);
  int rc = 0;
  for (size_t i = 0; i + 1 < n && rc == 0; i++)
    if (!(joins[i] = qnode_new(kind))) rc = BA_ERR_NOMEM;
  if (rc == 0) {
    size_t nj = 0;
    *out = link_balanced(ops, cols, 0, n, joins, &nj);
  } else {
    for (size_t i = 0; i + 1 < n; i++) ba_free(joins[i]);
  }
  ba_free(joins);
  return rc;
}

/* One level of binary operators: `sub (op sub)*`, where op is the token `t`
 * or the keyword `word`; the operands are joined by join_balanced. */
static int parse_binary(parser_t *p, qnode_t **out, ttype_t t, const char *word, qnode_kind_t kind,
                        int (*sub)(parser_t *, qnode_t **)) {
  qnode_t *first;
  BA_FORWARD(sub(p, &first));
  if (p->cur.t != t && !qp_word(p, word)) {
    *out = first;
    return 0;
  }
  qnode_t **ops = NULL;
  uint32_t *cols = NULL;
  size_t n = 0, cap = 0, ccap = 0;
  int rc = ba_grow((void **)&ops, &cap, 8, sizeof(*ops));
  if (rc == 0) rc = ba_grow((void **)&cols, &ccap, 8, sizeof(*cols));
  if (rc == 0) {
    ops[n] = first;
    cols[n++] = first->col;
  } else {
    qnode_free(first);
  }
  while (rc == 0 && (p->cur.t == t || qp_word(p, word))) {
    uint32_t col = (uint32_t)p->cur.pos;
    qp_next(p);
    qnode_t *r;
    if ((rc = sub(p, &r)) < 0) break;
    if (n == cap && (rc = ba_grow((void **)&ops, &cap, n + 1, sizeof(*ops))) < 0) {
      qnode_free(r);
      break;
    }
    if (n == ccap && (rc = ba_grow((void **)&cols, &ccap, n + 1, sizeof(*cols))) < 0) {
      qnode_free(r);
      break;
    }
    ops[n] = r;
    cols[n++] = col;
  }
  qnode_t *root = NULL;
  if (rc == 0) rc = join_balanced(ops, cols, n, kind, &root);
  if (rc < 0)
    for (size_t i = 0; i < n; i++) qnode_free(ops[i]);
  ba_free(ops);
  ba_free(cols);
  if (rc < 0) return rc;
  *out = root;
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
  qp_next(&p);
  qnode_t *root;
  if (p.cur.t == T_END) {
    root = qp_mk(QN_TRUE, 0);
    if (!root) return BA_ERR_NOMEM;
  } else {
    int rc = parse_or(&p, &root);
    if (rc < 0) return rc;
    if (p.cur.t != T_END) {
      qnode_free(root);
      return qp_fail(&p, "syntax error");
    }
  }
  q->root = root;
  q->cols = qnode_columns(root);
  return 0;
}

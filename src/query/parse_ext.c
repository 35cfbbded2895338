/* nfdump's filter primitives on fields the bitmap index does not hold: next
 * hop, BGP next hop, router, prefix masks, exporter engine and observation
 * domain, NAT/NSEL (translated addresses and ports, events, VRFs), MPLS
 * labels, MAC addresses, flow direction, adjacent ASes. They become QN_NUM /
 * QN_XADDR nodes that the planner leaves to the record evaluator. Semantics
 * follow nfdump 1.7.1's grammar.y (src/query/GRAMMAR.md lists them). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "query/parse_int.h"

static int new_num(size_t col, qfield_t f, qdir_t dir, qnode_t **out) {
  *out = qp_mk(QN_NUM, col);
  BA_RETURN_IF(!*out, BA_ERR_NOMEM);
  (*out)->field = f;
  (*out)->dir = dir;
  return 0;
}

/* [cmp] number into a new QN_NUM node. */
static int cmp_num(parser_t *p, size_t col, qfield_t f, qdir_t dir, uint64_t max, qnode_t **out) {
  qnode_t *nd;
  BA_FORWARD(new_num(col, f, dir, &nd));
  int rc = qp_cmp(p, &nd->cmp);
  if (rc == 0) rc = qp_expect_num(p, max, &nd->value);
  if (rc < 0) {
    qnode_free(nd);
    return rc;
  }
  *out = nd;
  return 0;
}

/* A named value (nfdump's event reasons) or [cmp] number. */
typedef struct named { const char *name; unsigned v; } named_t;
static int named_num(parser_t *p, size_t col, qfield_t f, const named_t *names, size_t nn, uint64_t max,
                     qnode_t **out) {
  for (size_t i = 0; i < nn; i++)
    if (qp_word(p, names[i].name)) {
      qp_next(p);
      BA_FORWARD(new_num(col, f, QD_EITHER, out));
      (*out)->value = names[i].v;
      return 0;
    }
  return cmp_num(p, col, f, QD_EITHER, max, out);
}

/* ADDR | 'in' '[' list ']' into a new QN_XADDR node. */
static int xaddr(parser_t *p, size_t col, qfield_t f, qdir_t dir, int allow_list, qnode_t **out) {
  qnode_t *nd = qp_mk(QN_XADDR, col);
  BA_RETURN_IF(!nd, BA_ERR_NOMEM);
  nd->field = f;
  nd->dir = dir;
  size_t cap = 0;
  int rc;
  if (allow_list && qp_word(p, "in")) {
    qp_next(p);
    rc = qp_addr_list(p, nd, &cap);
  } else if (p->cur.t != T_WORD) {
    rc = qp_fail(p, "address expected");
  } else {
    qaddr_t a;
    size_t end;
    int has_len;
    rc = qp_scan_addr(p, p->cur.pos, &a, &end, 1, &has_len);
    if (rc == 0) rc = qp_addrs_push(nd, &cap, &a);
    if (rc == 0) qp_reset(p, end);
  }
  if (rc < 0) {
    qnode_free(nd);
    return rc;
  }
  *out = nd;
  return 0;
}

/* "aa:bb:cc:dd:ee:ff" (also '-' separated) -> 48-bit value, first octet high. */
static int mac_value(const char *s, size_t len, uint64_t *out) {
  uint64_t v = 0;
  size_t i = 0;
  for (int k = 0; k < 6; k++) {
    size_t st = i;
    unsigned o = 0;
    while (i < len && i - st < 2 && isxdigit((unsigned char)s[i])) {
      int c = tolower((unsigned char)s[i++]);
      o = o * 16 + (unsigned)(isdigit(c) ? c - '0' : c - 'a' + 10);
    }
    if (i == st) return -1;
    v = v << 8 | o;
    if (k < 5) {
      if (i >= len || (s[i] != ':' && s[i] != '-')) return -1;
      i++;
    }
  }
  if (i != len) return -1;
  *out = v;
  return 0;
}

static int mac_term(parser_t *p, size_t col, qdir_t dir, int has_dir, int inout, qnode_t **out) {
  unsigned in = QM_IN_SRC | QM_IN_DST, outm = QM_OUT_SRC | QM_OUT_DST;
  unsigned src = QM_IN_SRC | QM_OUT_SRC, dst = QM_IN_DST | QM_OUT_DST;
  unsigned m = inout == 1 ? in : inout == 2 ? outm : in | outm;
  if (has_dir) {
    if (dir == QD_SRC) m &= src;
    else if (dir == QD_DST) m &= dst;
    else return qp_fail(p, "'mac' takes in/out and src/dst, not both sides");
  }
  uint64_t v;
  if (p->cur.t != T_WORD || mac_value(p->s + p->cur.pos, p->cur.len, &v) < 0)
    return qp_fail(p, "MAC address expected (aa:bb:cc:dd:ee:ff)");
  qp_next(p);
  BA_FORWARD(new_num(col, QF_MAC, QD_EITHER, out));
  (*out)->aux = m;
  (*out)->value = v;
  return 0;
}

/* 'mpls' ('label'N | 'exp'N | 'eos') [cmp] value | 'mpls' 'any' value */
static int mpls_term(parser_t *p, size_t col, qnode_t **out) {
  if (p->cur.t != T_WORD) return qp_fail(p, "'label1'..'label10', 'exp1'..'exp10', 'eos' or 'any' expected");
  const char *s = p->s + p->cur.pos;
  size_t len = p->cur.len;
  qfield_t f;
  size_t skip = 0;
  if (len > 5 && !strncasecmp(s, "label", 5)) {
    f = QF_MPLS_LABEL;
    skip = 5;
  } else if (len > 3 && !strncasecmp(s, "exp", 3)) {
    f = QF_MPLS_EXP;
    skip = 3;
  } else if (qp_word(p, "eos")) {
    f = QF_MPLS_EOS;
  } else if (qp_word(p, "any")) {
    f = QF_MPLS_ANY;
  } else {
    return qp_fail(p, "'label1'..'label10', 'exp1'..'exp10', 'eos' or 'any' expected");
  }
  uint64_t idx = 0;
  if (skip && (qp_num_text(s + skip, len - skip, &idx) < 0 || idx < 1 || idx > 10))
    return qp_fail(p, "MPLS label number must be 1..10");
  qp_next(p);
  uint64_t max = f == QF_MPLS_EXP ? 7 : (1u << 20) - 1;
  if (f == QF_MPLS_ANY) {
    BA_FORWARD(new_num(col, f, QD_EITHER, out));
    int rc = qp_expect_num(p, max, &(*out)->value);
    if (rc < 0) {
      qnode_free(*out);
      *out = NULL;
    }
    return rc;
  }
  BA_FORWARD(cmp_num(p, col, f, QD_EITHER, max, out));
  (*out)->aux = (uint32_t)idx;
  return 0;
}

/* 'asa' 'event' (reason | [cmp] N | 'denied' (ingress|egress|interface|nosyn|N)) | 'asa' 'xevent' [cmp] N */
static int asa_term(parser_t *p, size_t col, qnode_t **out) {
  static const named_t ev[] = {{"ignore", 0}, {"create", 1}, {"term", 2}, {"delete", 2},
                               {"deny", 3},   {"alert", 4},  {"update", 5}};
  if (qp_word(p, "xevent")) {
    qp_next(p);
    return cmp_num(p, col, QF_FW_XEVENT, QD_EITHER, 65535, out);
  }
  if (!qp_word(p, "event")) return qp_fail(p, "'event' or 'xevent' expected");
  qp_next(p);
  if (!qp_word(p, "denied")) return named_num(p, col, QF_FW_EVENT, ev, BA_ARRAY_LEN(ev), 255, out);
  qp_next(p);
  static const named_t why[] = {{"ingress", 1001}, {"egress", 1002}, {"interface", 1003}, {"nosyn", 1004}};
  qnode_t *x, *e, *a;
  BA_FORWARD(named_num(p, col, QF_FW_XEVENT, why, BA_ARRAY_LEN(why), 65535, &x));
  if (new_num(col, QF_FW_EVENT, QD_EITHER, &e) < 0 || !(a = qp_mk(QN_AND, col))) {
    qnode_free(x);
    qnode_free(e);
    return BA_ERR_NOMEM;
  }
  e->value = 3; /* DENIED */
  a->kid[0] = e;
  a->kid[1] = x;
  *out = a;
  return 0;
}

/* Primitives nfdump has that bitarc cannot answer, with the reason. */
static int refused(parser_t *p) {
  static const struct { const char *kw, *why; } no[] = {
    {"sysid", "'sysid' is nfdump's exporter number inside its own files; bitarc names exporters by "
              "address: use 'router ip ADDR'"},
    {"ident", "'ident' tests nfdump's per-file ident string; bitarc stores have none (use the store "
              "or time window to select a source)"},
    {"count", "'count' tests nfdump's record sequence number in its files; bitarc has none (use -c N "
              "to limit the records printed)"},
    {"fwdstat", "'fwdstat' (forwarding status) is not stored by bitarc"},
    {"nfversion", "'nfversion' (the exporter's NetFlow version) is not stored by bitarc"},
    {"geo", "'geo' needs a geo location database; bitarc has none"},
  };
  for (size_t i = 0; i < BA_ARRAY_LEN(no); i++)
    if (qp_word(p, no[i].kw)) return qp_fail_at(p, p->cur.pos, "%s", no[i].why, strlen(no[i].why));
  return 1;
}

/* The primitives that take no src/dst/in/out qualifier. */
static int plain_term(parser_t *p, size_t col, qnode_t **out) {
  static const named_t nat[] = {{"invalid", 0}, {"add", 1}, {"create", 1}, {"delete", 2}};
  static const named_t fdir[] = {{"ingress", 0}, {"egress", 1}};
  int next = qp_word(p, "next"), prev = qp_word(p, "prev") || qp_word(p, "previous");
  if (next || prev) {
    qp_next(p);
    if (next && qp_word(p, "ip")) {
      qp_next(p);
      return xaddr(p, col, QF_NEXTHOP, QD_EITHER, 1, out);
    }
    if (!qp_word(p, "as")) return qp_fail(p, next ? "'ip' or 'as' expected" : "'as' expected");
    qp_next(p);
    return cmp_num(p, col, QF_AS, next ? QD_NEXT : QD_PREV, UINT32_MAX, out);
  }
  if (qp_word(p, "bgpnext") || qp_word(p, "router")) {
    qfield_t f = qp_word(p, "router") ? QF_ROUTER : QF_BGPNEXTHOP;
    qp_next(p);
    if (!qp_word(p, "ip")) return qp_fail(p, "'ip' expected");
    qp_next(p);
    return xaddr(p, col, f, QD_EITHER, 0, out);
  }
  if (qp_word(p, "engine-type") || qp_word(p, "engine-id")) {
    qfield_t f = qp_word(p, "engine-type") ? QF_ENGINE_TYPE : QF_ENGINE_ID;
    qp_next(p);
    return cmp_num(p, col, f, QD_EITHER, 255, out);
  }
  if (qp_word(p, "ingress") || qp_word(p, "egress")) {
    qfield_t f = qp_word(p, "ingress") ? QF_IVRF : QF_EVRF;
    qp_next(p);
    if (!qp_word(p, "vrf")) return qp_fail(p, "'vrf' expected");
    qp_next(p);
    return cmp_num(p, col, f, QD_EITHER, UINT32_MAX, out);
  }
  if (qp_word(p, "nat")) {
    qp_next(p);
    if (!qp_word(p, "event")) return qp_fail(p, "'event' expected");
    qp_next(p);
    return named_num(p, col, QF_NAT_EVENT, nat, BA_ARRAY_LEN(nat), 255, out);
  }
  if (qp_word(p, "asa")) {
    qp_next(p);
    return asa_term(p, col, out);
  }
  if (qp_word(p, "mpls")) {
    qp_next(p);
    return mpls_term(p, col, out);
  }
  if (qp_word(p, "flowdir") || qp_word(p, "dir")) {
    qp_next(p);
    return named_num(p, col, QF_DIRECTION, fdir, BA_ARRAY_LEN(fdir), 1, out);
  }
  if (qp_word(p, "observation")) {
    qp_next(p);
    if (!qp_word(p, "domain")) return qp_fail(p, "'domain' expected");
    qp_next(p);
    if (!qp_word(p, "id")) return qp_fail(p, "'id' expected");
    qp_next(p);
    return cmp_num(p, col, QF_OBS_DOMAIN, QD_EITHER, UINT32_MAX, out);
  }
  return refused(p);
}

int qp_ext_term(parser_t *p, qdir_t dir, int has_dir, int inout, size_t col, qnode_t **out) {
  if (qp_word(p, "mac")) {
    qp_next(p);
    return mac_term(p, col, dir, has_dir, inout, out);
  }
  if (inout) return 1;
  if (qp_word(p, "mask")) {
    qp_next(p);
    return cmp_num(p, col, QF_MASK, dir, 128, out);
  }
  if (qp_word(p, "xip") || qp_word(p, "nip")) {
    qp_next(p);
    return xaddr(p, col, QF_XADDR, dir, 1, out);
  }
  if (qp_word(p, "xnet")) {
    qp_next(p);
    return xaddr(p, col, QF_XADDR, dir, 0, out);
  }
  if (qp_word(p, "xport") || qp_word(p, "nport")) {
    qp_next(p);
    return cmp_num(p, col, QF_XPORT, dir, 65535, out);
  }
  if (has_dir) return 1;
  return plain_term(p, col, out);
}

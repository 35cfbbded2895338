/* NetFlow v5, NetFlow v9 (RFC 3954) and IPFIX (RFC 7011/7012) decoding.
 *
 * Templates live in a hash keyed by (exporter, version, source id /
 * observation domain, template id). A template is compiled once into a list
 * of (offset, length, op) for the elements bitarc keeps, so a fixed-length
 * data record is decoded without walking the skipped fields. Data sets whose
 * template is unknown are copied into a bounded FIFO and decoded when the
 * template arrives, or counted as dropped. */
#include <arpa/inet.h>
#include <pcap/dlt.h>
#include <stdio.h>
#include <string.h>

#include "bitarc/ingest.h"
#include "common/common.h"
#include "ingest/ingest_internal.h"

#define NF_BATCH 512
#define NTP_UNIX_OFFSET 2208988800ull
#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull
/* Flows outside [1990-01-01, 2100-01-01) come from broken clocks or
 * uptime arithmetic. */
#define MIN_FLOW_NS (631152000ull * NS_PER_S)
#define MAX_FLOW_NS (4102444800ull * NS_PER_S)

/* What a template field feeds. */
enum {
  OP_SKIP = 0, OP_SRC4, OP_DST4, OP_SRC6, OP_DST6, OP_SPORT, OP_DPORT, OP_PROTO, OP_TOS, OP_FLAGS,
  OP_BYTES, OP_PKTS, OP_BYTES_TOTAL, OP_PKTS_TOTAL, OP_IN_IF, OP_OUT_IF, OP_SRC_AS, OP_DST_AS,
  OP_FIRST_UP, OP_LAST_UP, OP_START_S, OP_END_S, OP_START_MS, OP_END_MS, OP_START_NTP, OP_END_NTP,
  OP_START_DUS, OP_END_DUS, OP_SYSINIT_MS, OP_ICMP_TC, OP_ICMP_TYPE, OP_ICMP_CODE, OP_VLAN,
  OP_IPVER, OP_FRAME_SECTION, OP_FRAME_SIZE
};

typedef struct nf_field {
  uint16_t type, len; /* len 65535 = variable (IPFIX) */
  uint8_t op, ent;
} nf_field_t;

typedef struct nf_plan {
  uint32_t off;
  uint16_t len;
  uint8_t op;
} nf_plan_t;

typedef struct nf_tmpl {
  struct nf_tmpl *next;
  uint8_t exporter[16];
  uint32_t domain;
  uint16_t id;
  uint8_t version, options;
  uint8_t varlen;
  uint16_t nfields, nplan;
  uint32_t min_len; /* fixed bytes + 1 per variable-length field */
  nf_field_t *fields;
  nf_plan_t *plan;
} nf_tmpl_t;

typedef struct nf_source {
  uint8_t addr[16];
  int used;
  int64_t sysinit_ms; /* from an options record (IPFIX element 160), -1 if unknown */
  uint64_t datagrams_seen;
  ba_ingest_counts_t counts;
} nf_source_t;

typedef struct nf_pending {
  uint8_t exporter[16];
  uint32_t domain;
  uint16_t tid;
  uint8_t version;
  uint64_t export_ns;
  uint32_t uptime_ms;
  uint64_t seen_at; /* source's datagram count when held */
  uint8_t *data;
  uint32_t len;
} nf_pending_t;

/* Header context of the datagram being decoded. */
typedef struct nf_hdr {
  int version;
  uint64_t export_ns;
  uint32_t uptime_ms;
  uint32_t domain;
} nf_hdr_t;

struct ba_flow_decoder {
  ba_flow_decoder_opts_t o;
  nf_tmpl_t **tab;
  size_t tab_cap, tab_n;
  nf_source_t *src;
  size_t src_cap, src_n;
  nf_source_t *cur;
  nf_pending_t *pend; /* FIFO ring */
  size_t pend_head, pend_n, pend_cap;
  uint64_t pend_bytes;
  ba_record_t out[NF_BATCH];
  size_t nout;
  ba_record_sink_fn fn;
  void *ctx;
  int sink_rc;
  char err[256];
};

void ba_flow_decoder_opts_init(ba_flow_decoder_opts_t *o) {
  memset(o, 0, sizeof(*o));
  o->pending_max_sets = 256;
  o->pending_max_bytes = 4u << 20;
  o->pending_max_age = 64;
  /* No relative limits by default: exporters replaying old captures (ipfixprobe,
   * softflowd -r) legitimately send times far from their export time. */
  o->past_s = 0;
  o->future_s = 0;
}

const char *ba_ingest_drop_name(ba_ingest_drop_t r) {
  static const char *const n[BA_DROP_COUNT] = {"unknown-template", "malformed", "truncated", "not-netflow",
                                               "time-outside",     "not-export", "queue-full", "store"};
  return (unsigned)r < BA_DROP_COUNT ? n[r] : "?";
}
const char *ba_ingest_drop_unit(ba_ingest_drop_t r) {
  static const char *const n[BA_DROP_COUNT] = {"data sets", "sets/datagrams", "datagrams/packets", "datagrams",
                                               "records",   "packets",        "datagrams",         "records"};
  return (unsigned)r < BA_DROP_COUNT ? n[r] : "?";
}

void ba_ingest_counts_add(ba_ingest_counts_t *a, const ba_ingest_counts_t *b) {
  a->packets += b->packets;
  a->datagrams += b->datagrams;
  a->datagrams_v5 += b->datagrams_v5;
  a->datagrams_v9 += b->datagrams_v9;
  a->datagrams_ipfix += b->datagrams_ipfix;
  a->records += b->records;
  a->templates += b->templates;
  a->template_withdrawals += b->template_withdrawals;
  a->options_templates += b->options_templates;
  a->options_records += b->options_records;
  a->late_decoded += b->late_decoded;
  for (int i = 0; i < BA_DROP_COUNT; i++) a->dropped[i] += b->dropped[i];
}

uint64_t ba_ingest_counts_dropped(const ba_ingest_counts_t *c) {
  uint64_t s = 0;
  for (int i = 0; i < BA_DROP_COUNT; i++) s += c->dropped[i];
  return s;
}

void ba_addr_format(const uint8_t a[16], char *buf, size_t len) {
  if (!len) return;
  if (ba_addr_is_v4(a)) {
    snprintf(buf, len, "%u.%u.%u.%u", a[12], a[13], a[14], a[15]);
  } else if (!inet_ntop(AF_INET6, a, buf, (socklen_t)len)) {
    buf[0] = 0;
  }
}

int ba_flow_port_is_export(uint16_t port) {
  switch (port) {
  case 2055: case 2056: case 2057: case 4739: case 4740: case 6343: case 9555: case 9995: case 9996:
  case 9999: case 9990: case 2100: case 6767:
    return 1;
  default:
    return 0;
  }
}

/* ---------- detection ---------- */

int ba_flow_detect(const uint8_t *buf, size_t len) {
  if (!buf || len < 4) return 0;
  uint16_t ver = ba_load_be16(buf);
  if (ver == 5) {
    if (len < 24) return 0;
    uint16_t count = ba_load_be16(buf + 2);
    if (count == 0 || count > 30 || len != 24 + 48u * count) return 0;
    return 5;
  }
  if (ver == 9) {
    if (len < 24) return 0;
    size_t off = 20;
    int sets = 0;
    while (len - off >= 4) {
      uint16_t id = ba_load_be16(buf + off), sl = ba_load_be16(buf + off + 2);
      if (sl < 4 || sl > len - off) return 0;
      if (id > 1 && id < 256) return 0;
      off += sl;
      sets++;
    }
    return sets > 0 && off == len ? 9 : 0;
  }
  if (ver == 10) {
    if (len < 20 || ba_load_be16(buf + 2) != len) return 0;
    size_t off = 16;
    while (len - off >= 4) {
      uint16_t id = ba_load_be16(buf + off), sl = ba_load_be16(buf + off + 2);
      if (sl < 4 || sl > len - off) return 0;
      if (id < 2 || (id > 3 && id < 256)) return 0;
      off += sl;
    }
    return off == len ? 10 : 0;
  }
  return 0;
}

/* ---------- create / free ---------- */

int ba_flow_decoder_create(const ba_flow_decoder_opts_t *opts, ba_flow_decoder_t **out) {
  BA_RETURN_IF(!out, BA_ERR_INVALID);
  *out = NULL;
  ba_flow_decoder_t *d = ba_calloc(1, sizeof(*d));
  BA_RETURN_IF(!d, BA_ERR_NOMEM);
  ba_flow_decoder_opts_t def;
  ba_flow_decoder_opts_init(&def);
  d->o = opts ? *opts : def;
  if (!d->o.pending_max_sets) d->o.pending_max_sets = def.pending_max_sets;
  if (!d->o.pending_max_bytes) d->o.pending_max_bytes = def.pending_max_bytes;
  if (!d->o.pending_max_age) d->o.pending_max_age = def.pending_max_age;
  d->tab_cap = 64;
  d->tab = ba_calloc(d->tab_cap, sizeof(*d->tab));
  d->src_cap = 16;
  d->src = ba_calloc(d->src_cap, sizeof(*d->src));
  d->pend_cap = d->o.pending_max_sets;
  d->pend = ba_calloc(d->pend_cap, sizeof(*d->pend));
  if (!d->tab || !d->src || !d->pend) {
    ba_flow_decoder_free(d);
    return BA_ERR_NOMEM;
  }
  *out = d;
  return BA_OK;
}

static void tmpl_free(nf_tmpl_t *t) {
  if (!t) return;
  ba_free(t->fields);
  ba_free(t->plan);
  ba_free(t);
}

void ba_flow_decoder_free(ba_flow_decoder_t *d) {
  if (!d) return;
  if (d->tab) {
    for (size_t i = 0; i < d->tab_cap; i++) {
      nf_tmpl_t *t = d->tab[i];
      while (t) {
        nf_tmpl_t *n = t->next;
        tmpl_free(t);
        t = n;
      }
    }
  }
  if (d->pend)
    for (size_t i = 0; i < d->pend_n; i++) ba_free(d->pend[(d->pend_head + i) % d->pend_cap].data);
  ba_free(d->pend);
  ba_free(d->tab);
  ba_free(d->src);
  ba_free(d);
}

const char *ba_flow_decoder_errmsg(const ba_flow_decoder_t *d) { return d ? d->err : ""; }

void ba_flow_decoder_counts(const ba_flow_decoder_t *d, ba_ingest_counts_t *out) {
  memset(out, 0, sizeof(*out));
  for (size_t i = 0; i < d->src_cap; i++)
    if (d->src[i].used) ba_ingest_counts_add(out, &d->src[i].counts);
}

size_t ba_flow_decoder_sources(const ba_flow_decoder_t *d, ba_flow_source_t *out, size_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < d->src_cap; i++) {
    if (!d->src[i].used) continue;
    if (n < cap) {
      memcpy(out[n].addr, d->src[i].addr, 16);
      out[n].counts = d->src[i].counts;
    }
    n++;
  }
  return n;
}

/* ---------- hashing ---------- */

static uint64_t hash_bytes(const uint8_t *p, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static size_t tmpl_slot(const ba_flow_decoder_t *d, const uint8_t ex[16], uint8_t ver, uint32_t dom, uint16_t id) {
  uint64_t h = hash_bytes(ex, 16, 0xcbf29ce484222325ull);
  h = (h ^ ver) * 0x100000001b3ull;
  h = (h ^ dom) * 0x100000001b3ull;
  h = (h ^ id) * 0x100000001b3ull;
  h ^= h >> 29;
  return (size_t)(h & (d->tab_cap - 1));
}

static nf_tmpl_t **tmpl_find(ba_flow_decoder_t *d, const uint8_t ex[16], uint8_t ver, uint32_t dom, uint16_t id) {
  nf_tmpl_t **pp = &d->tab[tmpl_slot(d, ex, ver, dom, id)];
  for (; *pp; pp = &(*pp)->next) {
    nf_tmpl_t *t = *pp;
    if (t->id == id && t->domain == dom && t->version == ver && !memcmp(t->exporter, ex, 16)) return pp;
  }
  return pp;
}

static int tmpl_grow(ba_flow_decoder_t *d) {
  size_t ncap = d->tab_cap * 2;
  nf_tmpl_t **nt = ba_calloc(ncap, sizeof(*nt));
  BA_RETURN_IF(!nt, BA_ERR_NOMEM);
  nf_tmpl_t **old = d->tab;
  size_t ocap = d->tab_cap;
  d->tab = nt;
  d->tab_cap = ncap;
  for (size_t i = 0; i < ocap; i++) {
    nf_tmpl_t *t = old[i];
    while (t) {
      nf_tmpl_t *n = t->next;
      size_t s = tmpl_slot(d, t->exporter, t->version, t->domain, t->id);
      t->next = nt[s];
      nt[s] = t;
      t = n;
    }
  }
  ba_free(old);
  return BA_OK;
}

static nf_source_t *source_get(ba_flow_decoder_t *d, const uint8_t ex[16]) {
  if (d->cur && !memcmp(d->cur->addr, ex, 16)) return d->cur;
  if (d->src_n * 2 >= d->src_cap) {
    size_t ncap = d->src_cap * 2;
    nf_source_t *ns = ba_calloc(ncap, sizeof(*ns));
    if (!ns) return NULL;
    for (size_t i = 0; i < d->src_cap; i++) {
      if (!d->src[i].used) continue;
      size_t s = (size_t)hash_bytes(d->src[i].addr, 16, 0xcbf29ce484222325ull) & (ncap - 1);
      while (ns[s].used) s = (s + 1) & (ncap - 1);
      ns[s] = d->src[i];
    }
    ba_free(d->src);
    d->src = ns;
    d->src_cap = ncap;
  }
  size_t s = (size_t)hash_bytes(ex, 16, 0xcbf29ce484222325ull) & (d->src_cap - 1);
  while (d->src[s].used && memcmp(d->src[s].addr, ex, 16)) s = (s + 1) & (d->src_cap - 1);
  if (!d->src[s].used) {
    d->src[s].used = 1;
    memcpy(d->src[s].addr, ex, 16);
    d->src[s].sysinit_ms = -1;
    d->src_n++;
  }
  return &d->src[s];
}

static void set_err(ba_flow_decoder_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static void set_err(ba_flow_decoder_t *d, const char *fmt, ...) {
  char a[64];
  ba_addr_format(d->cur ? d->cur->addr : (const uint8_t[16]){0}, a, sizeof(a));
  int n = snprintf(d->err, sizeof(d->err), "exporter %s: ", a);
  if (n < 0 || (size_t)n >= sizeof(d->err)) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->err + n, sizeof(d->err) - (size_t)n, fmt, ap);
  va_end(ap);
}

#define CNT(field) (d->cur->counts.field)
#define DROP(reason, n) (d->cur->counts.dropped[(reason)] += (n))

/* ---------- output ---------- */

static int out_flush(ba_flow_decoder_t *d) {
  if (!d->nout) return 0;
  size_t n = d->nout;
  d->nout = 0;
  if (d->sink_rc) {
    DROP(BA_DROP_STORE, n);
    return d->sink_rc;
  }
  int rc = d->fn ? d->fn(d->ctx, d->out, n) : 0;
  if (rc) {
    d->sink_rc = rc;
    DROP(BA_DROP_STORE, n);
    return rc;
  }
  CNT(records) += n;
  return 0;
}

static ba_record_t *out_next(ba_flow_decoder_t *d) {
  if (d->nout == NF_BATCH) out_flush(d);
  ba_record_t *r = &d->out[d->nout];
  memset(r, 0, sizeof(*r));
  return r;
}

/* ---------- templates ---------- */

static uint8_t element_op(uint16_t type, uint16_t len) {
  int u = len >= 1 && len <= 8; /* unsigned, reduced-size encoding allowed */
  switch (type) {
  case 1: return u ? OP_BYTES : OP_SKIP;
  case 2: return u ? OP_PKTS : OP_SKIP;
  case 85: return u ? OP_BYTES_TOTAL : OP_SKIP;
  case 86: return u ? OP_PKTS_TOTAL : OP_SKIP;
  case 4: return len == 1 ? OP_PROTO : OP_SKIP;
  case 5: return len == 1 ? OP_TOS : OP_SKIP;
  case 6: return u ? OP_FLAGS : OP_SKIP; /* 1 byte in v9, 2 in IPFIX */
  case 7: return u && len <= 2 ? OP_SPORT : OP_SKIP;
  case 11: return u && len <= 2 ? OP_DPORT : OP_SKIP;
  case 8: return len == 4 ? OP_SRC4 : OP_SKIP;
  case 12: return len == 4 ? OP_DST4 : OP_SKIP;
  case 27: return len == 16 ? OP_SRC6 : OP_SKIP;
  case 28: return len == 16 ? OP_DST6 : OP_SKIP;
  case 10: return u && len <= 4 ? OP_IN_IF : OP_SKIP;
  case 14: return u && len <= 4 ? OP_OUT_IF : OP_SKIP;
  case 16: return u && len <= 4 ? OP_SRC_AS : OP_SKIP;
  case 17: return u && len <= 4 ? OP_DST_AS : OP_SKIP;
  case 22: return u && len <= 4 ? OP_FIRST_UP : OP_SKIP;
  case 21: return u && len <= 4 ? OP_LAST_UP : OP_SKIP;
  case 150: return u ? OP_START_S : OP_SKIP;
  case 151: return u ? OP_END_S : OP_SKIP;
  case 152: case 323: return u ? OP_START_MS : OP_SKIP; /* 323: observationTimeMilliseconds */
  case 153: return u ? OP_END_MS : OP_SKIP;
  case 154: case 156: return len == 8 ? OP_START_NTP : OP_SKIP;
  case 155: case 157: return len == 8 ? OP_END_NTP : OP_SKIP;
  case 158: return u ? OP_START_DUS : OP_SKIP;
  case 159: return u ? OP_END_DUS : OP_SKIP;
  case 160: return u ? OP_SYSINIT_MS : OP_SKIP;
  case 32: case 139: return len == 2 ? OP_ICMP_TC : OP_SKIP;
  case 176: case 178: return len == 1 ? OP_ICMP_TYPE : OP_SKIP;
  case 177: case 179: return len == 1 ? OP_ICMP_CODE : OP_SKIP;
  case 58: case 243: return u && len <= 2 ? OP_VLAN : OP_SKIP;
  case 60: return len == 1 ? OP_IPVER : OP_SKIP;
  case 315: return OP_FRAME_SECTION;
  case 312: return u ? OP_FRAME_SIZE : OP_SKIP;
  default: return OP_SKIP;
  }
}

static int tmpl_store(ba_flow_decoder_t *d, const nf_hdr_t *h, uint16_t id, int options, nf_field_t *fields,
                      uint16_t nfields) {
  uint32_t min_len = 0, nplan = 0;
  int varlen = 0;
  for (uint16_t i = 0; i < nfields; i++) {
    if (fields[i].len == 65535) {
      varlen = 1;
      min_len += 1;
    } else {
      min_len += fields[i].len;
    }
    fields[i].op = fields[i].ent || options ? OP_SKIP : element_op(fields[i].type, fields[i].len);
    if (options && !fields[i].ent && fields[i].type == 160 && fields[i].len >= 1 && fields[i].len <= 8)
      fields[i].op = OP_SYSINIT_MS;
    if (fields[i].op != OP_SKIP) nplan++;
  }
  if (min_len == 0 || min_len > 65535) {
    set_err(d, "template %u: impossible record length %u", id, min_len);
    DROP(BA_DROP_MALFORMED, 1);
    return -1;
  }
  nf_tmpl_t **pp = tmpl_find(d, d->cur->addr, (uint8_t)h->version, h->domain, id);
  nf_tmpl_t *t = *pp;
  if (!t) {
    t = ba_calloc(1, sizeof(*t));
    if (!t) return BA_ERR_NOMEM;
    memcpy(t->exporter, d->cur->addr, 16);
    t->domain = h->domain;
    t->id = id;
    t->version = (uint8_t)h->version;
    *pp = t;
    d->tab_n++;
  }
  ba_free(t->fields);
  ba_free(t->plan);
  t->fields = fields;
  t->nfields = nfields;
  t->options = (uint8_t)options;
  t->varlen = (uint8_t)varlen;
  t->min_len = min_len;
  t->plan = NULL;
  t->nplan = 0;
  if (nplan) {
    t->plan = ba_calloc(nplan, sizeof(*t->plan));
    if (!t->plan) return BA_ERR_NOMEM;
    uint32_t off = 0;
    for (uint16_t i = 0; i < nfields; i++) {
      if (fields[i].op != OP_SKIP) {
        t->plan[t->nplan].off = off;
        t->plan[t->nplan].len = fields[i].len;
        t->plan[t->nplan].op = fields[i].op;
        t->nplan++;
      }
      off += fields[i].len == 65535 ? 1 : fields[i].len;
    }
  }
  if (options) CNT(options_templates)++;
  else CNT(templates)++;
  if (d->tab_n > d->tab_cap) tmpl_grow(d);
  return 0;
}

static void tmpl_withdraw(ba_flow_decoder_t *d, const nf_hdr_t *h, uint16_t id, int all) {
  for (size_t i = 0; i < d->tab_cap; i++) {
    nf_tmpl_t **pp = &d->tab[i];
    while (*pp) {
      nf_tmpl_t *t = *pp;
      if (t->domain == h->domain && t->version == h->version && !memcmp(t->exporter, d->cur->addr, 16) &&
          (all ? t->options == (id == 3) : t->id == id)) {
        *pp = t->next;
        tmpl_free(t);
        d->tab_n--;
        CNT(template_withdrawals)++;
      } else {
        pp = &t->next;
      }
    }
  }
}

/* ---------- data records ---------- */

typedef struct nf_rec_state {
  uint64_t start_abs, end_abs;     /* ns since epoch, 0 = absent */
  int64_t first_up, last_up;       /* ms sysUpTime, -1 = absent */
  int64_t start_dus, end_dus;      /* delta us before export, -1 = absent */
  int64_t sysinit_ms;
  uint64_t bytes_total, pkts_total, frame_size;
  int have_bytes, have_pkts, have_addr, have_icmp, have_frame;
  int src6, dst6; /* a non-zero IPv6 address was seen */
  const uint8_t *frame;
  uint32_t frame_len;
  uint8_t icmp_type, icmp_code;
} nf_rec_state_t;

static inline uint64_t be_uint(const uint8_t *p, unsigned len) {
  uint64_t v = 0;
  for (unsigned i = 0; i < len; i++) v = (v << 8) | p[i];
  return v;
}

static inline uint64_t ntp_to_ns(const uint8_t *p) {
  uint64_t sec = ba_load_be32(p), frac = ba_load_be32(p + 4);
  if (sec < NTP_UNIX_OFFSET) return 0;
  return (sec - NTP_UNIX_OFFSET) * NS_PER_S + ((frac * NS_PER_S) >> 32);
}

static inline int zero16(const uint8_t *p) {
  uint64_t a, b;
  memcpy(&a, p, 8);
  memcpy(&b, p + 8, 8);
  return !(a | b);
}

static inline void apply(ba_record_t *r, nf_rec_state_t *s, uint8_t op, const uint8_t *p, unsigned len) {
  switch (op) {
  /* Templates may carry both IPv4 and IPv6 addresses, the unused pair zero:
   * a zero address never replaces a non-zero one of the other family. */
  case OP_SRC4: if (ba_load_be32(p) || !s->src6) ba_addr_set_v4(r->src, ba_load_be32(p)); s->have_addr = 1; break;
  case OP_DST4: if (ba_load_be32(p) || !s->dst6) ba_addr_set_v4(r->dst, ba_load_be32(p)); s->have_addr = 1; break;
  case OP_SRC6: if (!zero16(p)) { memcpy(r->src, p, 16); s->src6 = 1; } else if (!s->have_addr) memcpy(r->src, p, 16); s->have_addr = 1; break;
  case OP_DST6: if (!zero16(p)) { memcpy(r->dst, p, 16); s->dst6 = 1; } else if (!s->have_addr) memcpy(r->dst, p, 16); s->have_addr = 1; break;
  case OP_SPORT: r->src_port = (uint16_t)be_uint(p, len); break;
  case OP_DPORT: r->dst_port = (uint16_t)be_uint(p, len); break;
  case OP_PROTO: r->proto = p[0]; break;
  case OP_TOS: r->tos = p[0]; break;
  case OP_FLAGS: r->tcp_flags = (uint8_t)be_uint(p, len); break;
  case OP_BYTES: r->bytes = be_uint(p, len); s->have_bytes = 1; break;
  case OP_PKTS: r->packets = be_uint(p, len); s->have_pkts = 1; break;
  case OP_BYTES_TOTAL: s->bytes_total = be_uint(p, len); break;
  case OP_PKTS_TOTAL: s->pkts_total = be_uint(p, len); break;
  case OP_IN_IF: r->in_if = (uint32_t)be_uint(p, len); break;
  case OP_OUT_IF: r->out_if = (uint32_t)be_uint(p, len); break;
  case OP_SRC_AS: r->src_as = (uint32_t)be_uint(p, len); break;
  case OP_DST_AS: r->dst_as = (uint32_t)be_uint(p, len); break;
  case OP_FIRST_UP: s->first_up = (int64_t)be_uint(p, len); break;
  case OP_LAST_UP: s->last_up = (int64_t)be_uint(p, len); break;
  case OP_START_S: s->start_abs = be_uint(p, len) * NS_PER_S; break;
  case OP_END_S: s->end_abs = be_uint(p, len) * NS_PER_S; break;
  case OP_START_MS: s->start_abs = be_uint(p, len) * NS_PER_MS; break;
  case OP_END_MS: s->end_abs = be_uint(p, len) * NS_PER_MS; break;
  case OP_START_NTP: s->start_abs = ntp_to_ns(p); break;
  case OP_END_NTP: s->end_abs = ntp_to_ns(p); break;
  case OP_START_DUS: s->start_dus = (int64_t)(be_uint(p, len) & 0x7fffffffffffull); break;
  case OP_END_DUS: s->end_dus = (int64_t)(be_uint(p, len) & 0x7fffffffffffull); break;
  case OP_SYSINIT_MS: s->sysinit_ms = (int64_t)(be_uint(p, len) & 0x7fffffffffffull); break;
  case OP_ICMP_TC: s->have_icmp = 1; s->icmp_type = p[0]; s->icmp_code = p[1]; break;
  case OP_ICMP_TYPE: s->have_icmp = 1; s->icmp_type = p[0]; break;
  case OP_ICMP_CODE: s->have_icmp = 1; s->icmp_code = p[0]; break;
  case OP_VLAN: if (!r->vlan) r->vlan = (uint16_t)(be_uint(p, len) & 0xfff); break;
  case OP_IPVER: if (!r->ipver && (p[0] == 4 || p[0] == 6)) r->ipver = p[0]; break;
  case OP_FRAME_SECTION: s->frame = p; s->frame_len = len; break;
  case OP_FRAME_SIZE: s->frame_size = be_uint(p, len); s->have_frame = 1; break;
  default: break;
  }
}

/* Finishes a record: times, counters, ICMP; returns 0 to keep it. */
static int rec_finish(ba_flow_decoder_t *d, const nf_hdr_t *h, ba_record_t *r, nf_rec_state_t *s) {
  if (s->frame && s->frame_len && !s->have_addr) {
    /* A sampled frame (IPFIX dataLinkFrameSection): take the headers from it. */
    ba_record_t pr;
    ba_packet_parse(DLT_EN10MB, s->frame, s->frame_len, s->frame_len, 0, &pr, NULL);
    if (pr.ipver) {
      memcpy(r->src, pr.src, 16);
      memcpy(r->dst, pr.dst, 16);
      r->ipver = pr.ipver;
      r->proto = pr.proto;
      r->src_port = pr.src_port;
      r->dst_port = pr.dst_port;
      r->tcp_flags |= pr.tcp_flags;
      r->tos = pr.tos;
      if (!r->vlan) r->vlan = pr.vlan;
      if (pr.proto == 1 || pr.proto == 58) {
        s->have_icmp = 1;
        s->icmp_type = pr.icmp_type;
        s->icmp_code = pr.icmp_code;
      }
    }
  }
  if (!s->have_bytes) r->bytes = s->bytes_total ? s->bytes_total : s->frame_size;
  if (!s->have_pkts) r->packets = s->pkts_total ? s->pkts_total : (s->have_frame ? 1 : 0);
  if (r->proto == 1 || r->proto == 58) {
    if (!s->have_icmp) {
      s->icmp_type = (uint8_t)(r->dst_port >> 8);
      s->icmp_code = (uint8_t)r->dst_port;
    }
    r->icmp_type = s->icmp_type;
    r->icmp_code = s->icmp_code;
    r->src_port = 0;
    r->dst_port = (uint16_t)(s->icmp_type << 8 | s->icmp_code);
  }
  /* Times. */
  uint64_t first = s->start_abs, last = s->end_abs;
  int64_t boot_ms = -1;
  if (h->version == 9) boot_ms = (int64_t)(h->export_ns / NS_PER_MS) - (int64_t)h->uptime_ms;
  else if (s->sysinit_ms >= 0) boot_ms = s->sysinit_ms;
  else if (d->cur->sysinit_ms >= 0) boot_ms = d->cur->sysinit_ms;
  if (!first && s->first_up >= 0) {
    if (h->version == 9) {
      /* uptime - FIRST_SWITCHED modulo 2^32 (uptime wraps after 49.7 days). */
      int64_t ago = (int32_t)(h->uptime_ms - (uint32_t)s->first_up);
      first = (uint64_t)((int64_t)h->export_ns - ago * (int64_t)NS_PER_MS);
    } else if (boot_ms >= 0) {
      first = (uint64_t)(boot_ms + s->first_up) * NS_PER_MS;
    }
  }
  if (!last && s->last_up >= 0) {
    if (h->version == 9) {
      int64_t ago = (int32_t)(h->uptime_ms - (uint32_t)s->last_up);
      last = (uint64_t)((int64_t)h->export_ns - ago * (int64_t)NS_PER_MS);
    } else if (boot_ms >= 0) {
      last = (uint64_t)(boot_ms + s->last_up) * NS_PER_MS;
    }
  }
  if (!first && s->start_dus >= 0 && (uint64_t)s->start_dus * 1000 <= h->export_ns)
    first = h->export_ns - (uint64_t)s->start_dus * 1000;
  if (!last && s->end_dus >= 0 && (uint64_t)s->end_dus * 1000 <= h->export_ns)
    last = h->export_ns - (uint64_t)s->end_dus * 1000;
  if (!first) first = last ? last : h->export_ns;
  if (!last) last = first;
  if (last < first) last = first;
  uint64_t past = (uint64_t)d->o.past_s * NS_PER_S, fut = (uint64_t)d->o.future_s * NS_PER_S;
  if ((int64_t)first < 0 || first < MIN_FLOW_NS || first >= MAX_FLOW_NS ||
      (past && h->export_ns > past && first < h->export_ns - past) || (fut && first > h->export_ns + fut)) {
    DROP(BA_DROP_TIME, 1);
    return -1;
  }
  r->first_ns = first;
  r->last_ns = last;
  r->kind = BA_REC_FLOW;
  memcpy(r->exporter, d->cur->addr, 16);
  if (s->have_addr) {
    r->ipver = s->src6 || s->dst6 || !ba_addr_is_v4(r->src) || !ba_addr_is_v4(r->dst) ? 6 : 4;
    if (r->ipver == 6) { /* an IPv4 partner of an IPv6 address was a zero placeholder */
      if (ba_addr_is_v4(r->src) && !ba_addr_get_v4(r->src)) memset(r->src, 0, 16);
      if (ba_addr_is_v4(r->dst) && !ba_addr_get_v4(r->dst)) memset(r->dst, 0, 16);
    }
  }
  if (!r->ipver) { /* no address elements: 0.0.0.0 */
    r->ipver = 4;
    ba_addr_set_v4(r->src, 0);
    ba_addr_set_v4(r->dst, 0);
  }
  return 0;
}

/* Length of a field of the record at rp (avail bytes left in the set) whose
 * data starts at *o2; a variable-length prefix (1 byte, or 255 + 2 bytes) is
 * consumed. Returns -1 when the field does not fit. */
static inline int field_len(const nf_field_t *f, const uint8_t *rp, size_t avail, size_t *o2, size_t *fl) {
  size_t l = f->len;
  if (l == 65535) {
    if (*o2 >= avail) return -1;
    l = rp[(*o2)++];
    if (l == 255) {
      if (avail - *o2 < 2) return -1;
      l = ba_load_be16(rp + *o2);
      *o2 += 2;
    }
  }
  if (l > avail - *o2) return -1;
  *fl = l;
  return 0;
}

static void data_set(ba_flow_decoder_t *d, const nf_hdr_t *h, const nf_tmpl_t *t, const uint8_t *p, size_t len) {
  size_t off = 0;
  while (len - off >= t->min_len) {
    const uint8_t *rp = p + off;
    if (t->options) {
      /* Options data: parsed for its length (and systemInitTimeMilliseconds), never a flow. */
      size_t o2 = 0, fl;
      for (uint16_t i = 0; i < t->nfields; i++) {
        if (field_len(&t->fields[i], rp, len - off, &o2, &fl)) goto bad;
        if (t->fields[i].op == OP_SYSINIT_MS) d->cur->sysinit_ms = (int64_t)(be_uint(rp + o2, (unsigned)fl) & 0x7fffffffffffull);
        o2 += fl;
      }
      off += o2;
      CNT(options_records)++;
      continue;
    }
    ba_record_t *r = out_next(d);
    nf_rec_state_t s;
    memset(&s, 0, sizeof(s));
    s.first_up = s.last_up = s.start_dus = s.end_dus = s.sysinit_ms = -1;
    if (!t->varlen) {
      for (uint16_t i = 0; i < t->nplan; i++) apply(r, &s, t->plan[i].op, rp + t->plan[i].off, t->plan[i].len);
      off += t->min_len;
    } else {
      size_t o2 = 0, fl;
      for (uint16_t i = 0; i < t->nfields; i++) {
        if (field_len(&t->fields[i], rp, len - off, &o2, &fl)) goto bad;
        if (t->fields[i].op != OP_SKIP) {
          uint8_t op = t->fields[i].op;
          /* Variable-length encodings only make sense for octet arrays. */
          if (t->fields[i].len == 65535 && op != OP_FRAME_SECTION) op = OP_SKIP;
          if (op != OP_SKIP) apply(r, &s, op, rp + o2, (unsigned)fl);
        }
        o2 += fl;
      }
      off += o2;
    }
    if (rec_finish(d, h, r, &s) == 0) d->nout++;
  }
  return;
bad:
  set_err(d, "data set of template %u: record overruns the set", t->id);
  DROP(BA_DROP_MALFORMED, 1);
}

/* ---------- held data sets ---------- */

static void pend_drop_front(ba_flow_decoder_t *d, int count_drop) {
  nf_pending_t *p = &d->pend[d->pend_head];
  if (count_drop) {
    nf_source_t *s = source_get(d, p->exporter);
    if (s) s->counts.dropped[BA_DROP_UNKNOWN_TEMPLATE]++;
  }
  d->pend_bytes -= p->len;
  ba_free(p->data);
  p->data = NULL;
  d->pend_head = (d->pend_head + 1) % d->pend_cap;
  d->pend_n--;
}

static void pend_add(ba_flow_decoder_t *d, const nf_hdr_t *h, uint16_t tid, const uint8_t *p, size_t len) {
  if (len > d->o.pending_max_bytes) {
    DROP(BA_DROP_UNKNOWN_TEMPLATE, 1);
    return;
  }
  nf_source_t *keep = d->cur;
  while (d->pend_n && (d->pend_n >= d->pend_cap || d->pend_bytes + len > d->o.pending_max_bytes))
    pend_drop_front(d, 1);
  d->cur = keep;
  uint8_t *copy = ba_malloc(len ? len : 1);
  if (!copy) {
    DROP(BA_DROP_UNKNOWN_TEMPLATE, 1);
    return;
  }
  memcpy(copy, p, len);
  nf_pending_t *e = &d->pend[(d->pend_head + d->pend_n) % d->pend_cap];
  memcpy(e->exporter, d->cur->addr, 16);
  e->domain = h->domain;
  e->tid = tid;
  e->version = (uint8_t)h->version;
  e->export_ns = h->export_ns;
  e->uptime_ms = h->uptime_ms;
  e->seen_at = d->cur->datagrams_seen;
  e->data = copy;
  e->len = (uint32_t)len;
  d->pend_n++;
  d->pend_bytes += len;
}

/* Decodes (and removes) the held sets a new template answers; drops the ones
 * of this exporter that waited too long. Order of the others is kept. */
static void pend_scan(ba_flow_decoder_t *d, const nf_tmpl_t *t) {
  if (!d->pend_n) return;
  size_t n = d->pend_n, w = 0;
  nf_pending_t *tmp = ba_malloc(n * sizeof(*tmp));
  if (!tmp) return;
  for (size_t i = 0; i < n; i++) tmp[i] = d->pend[(d->pend_head + i) % d->pend_cap];
  d->pend_head = 0;
  d->pend_n = 0;
  for (size_t i = 0; i < n; i++) {
    nf_pending_t *e = &tmp[i];
    int mine = !memcmp(e->exporter, d->cur->addr, 16);
    if (t && mine && e->tid == t->id && e->domain == t->domain && e->version == t->version) {
      nf_hdr_t h = {e->version, e->export_ns, e->uptime_ms, e->domain};
      data_set(d, &h, t, e->data, e->len);
      CNT(late_decoded)++;
      d->pend_bytes -= e->len;
      ba_free(e->data);
    } else if (mine && d->cur->datagrams_seen - e->seen_at > d->o.pending_max_age) {
      DROP(BA_DROP_UNKNOWN_TEMPLATE, 1);
      d->pend_bytes -= e->len;
      ba_free(e->data);
    } else {
      d->pend[w++] = *e;
    }
  }
  d->pend_n = w;
  ba_free(tmp);
}

void ba_flow_decoder_finish(ba_flow_decoder_t *d) {
  if (!d) return;
  nf_source_t *keep = d->cur;
  while (d->pend_n) pend_drop_front(d, 1);
  d->cur = keep;
}

/* ---------- v5 ---------- */

static void decode_v5(ba_flow_decoder_t *d, const uint8_t *b, size_t len) {
  if (len < 24) {
    DROP(BA_DROP_TRUNCATED, 1);
    set_err(d, "NetFlow v5 datagram of %zu bytes is shorter than its header", len);
    return;
  }
  CNT(datagrams)++;
  CNT(datagrams_v5)++;
  uint16_t count = ba_load_be16(b + 2);
  nf_hdr_t h;
  h.version = 5;
  h.uptime_ms = ba_load_be32(b + 4);
  h.export_ns = (uint64_t)ba_load_be32(b + 8) * NS_PER_S + BA_MIN(ba_load_be32(b + 12), 999999999u);
  h.domain = 0;
  size_t have = (len - 24) / 48;
  if (count > have) {
    DROP(BA_DROP_TRUNCATED, 1);
    set_err(d, "NetFlow v5 datagram says %u records but holds %zu", count, have);
  }
  size_t n = BA_MIN((size_t)count, have);
  for (size_t i = 0; i < n; i++) {
    const uint8_t *p = b + 24 + 48 * i;
    ba_record_t *r = out_next(d);
    ba_addr_set_v4(r->src, ba_load_be32(p));
    ba_addr_set_v4(r->dst, ba_load_be32(p + 4));
    r->ipver = 4;
    r->in_if = ba_load_be16(p + 12);
    r->out_if = ba_load_be16(p + 14);
    r->packets = ba_load_be32(p + 16);
    r->bytes = ba_load_be32(p + 20);
    r->src_port = ba_load_be16(p + 32);
    r->dst_port = ba_load_be16(p + 34);
    r->tcp_flags = p[37];
    r->proto = p[38];
    r->tos = p[39];
    r->src_as = ba_load_be16(p + 40);
    r->dst_as = ba_load_be16(p + 42);
    nf_rec_state_t s;
    memset(&s, 0, sizeof(s));
    s.start_dus = s.end_dus = s.sysinit_ms = -1;
    s.first_up = ba_load_be32(p + 24);
    s.last_up = ba_load_be32(p + 28);
    s.have_bytes = s.have_pkts = s.have_addr = 1;
    nf_hdr_t h9 = h;
    h9.version = 9; /* same sysUpTime arithmetic as v9 */
    if (rec_finish(d, &h9, r, &s) == 0) d->nout++;
  }
}

/* ---------- v9 / IPFIX ---------- */

static int template_set(ba_flow_decoder_t *d, const nf_hdr_t *h, const uint8_t *p, size_t len, int options) {
  size_t off = 0;
  int ipfix = h->version == 10;
  for (;;) {
    size_t hdr = options ? 6 : 4;
    if (len - off < hdr) break; /* padding */
    uint16_t tid = ba_load_be16(p + off);
    if (!ipfix && options && tid == 0) break; /* v9 options padding */
    uint16_t fc = 0, scope = 0;
    size_t nf = 0;
    if (ipfix) {
      fc = ba_load_be16(p + off + 2);
      if (fc == 0) { /* withdrawal */
        tmpl_withdraw(d, h, tid, tid == 2 || tid == 3);
        off += 4;
        continue;
      }
      if (options) {
        scope = ba_load_be16(p + off + 4);
        if (scope == 0 || scope > fc) {
          set_err(d, "options template %u: scope field count %u of %u", tid, scope, fc);
          DROP(BA_DROP_MALFORMED, 1);
          return -1;
        }
      }
      nf = fc;
    } else if (options) {
      uint16_t sl = ba_load_be16(p + off + 2), ol = ba_load_be16(p + off + 4);
      if (sl % 4 || ol % 4 || (size_t)sl + ol == 0) {
        set_err(d, "options template %u: scope length %u, option length %u", tid, sl, ol);
        DROP(BA_DROP_MALFORMED, 1);
        return -1;
      }
      nf = ((size_t)sl + ol) / 4;
    } else {
      fc = ba_load_be16(p + off + 2);
      if (fc == 0) {
        tmpl_withdraw(d, h, tid, 0);
        off += 4;
        continue;
      }
      nf = fc;
    }
    if (tid < 256) {
      set_err(d, "template id %u is reserved", tid);
      DROP(BA_DROP_MALFORMED, 1);
      return -1;
    }
    off += hdr;
    nf_field_t *fields = ba_calloc(nf, sizeof(*fields));
    if (!fields) return BA_ERR_NOMEM;
    for (size_t i = 0; i < nf; i++) {
      if (len - off < 4) goto trunc;
      uint16_t ty = ba_load_be16(p + off), fl = ba_load_be16(p + off + 2);
      off += 4;
      if (ipfix && (ty & 0x8000)) {
        if (len - off < 4) goto trunc;
        off += 4; /* enterprise number: element skipped */
        fields[i].ent = 1;
        ty &= 0x7fff;
      }
      if (fl == 65535 && !ipfix) { /* zero-length fields occur (Cisco options scope) */
        set_err(d, "template %u field %zu (element %u) has impossible length %u", tid, i, ty, fl);
        ba_free(fields);
        DROP(BA_DROP_MALFORMED, 1);
        return -1;
      }
      fields[i].type = ty;
      fields[i].len = fl;
    }
    int rc = tmpl_store(d, h, tid, options, fields, (uint16_t)nf);
    if (rc) {
      ba_free(fields);
      if (rc < -1) return rc;
      continue;
    }
    nf_tmpl_t *t = *tmpl_find(d, d->cur->addr, (uint8_t)h->version, h->domain, tid);
    pend_scan(d, t);
    continue;
  trunc:
    set_err(d, "template %u runs past its set", tid);
    ba_free(fields);
    DROP(BA_DROP_MALFORMED, 1);
    return -1;
  }
  return 0;
}

static void decode_sets(ba_flow_decoder_t *d, const nf_hdr_t *h, const uint8_t *b, size_t off, size_t len) {
  int ipfix = h->version == 10;
  while (len - off >= 4) {
    uint16_t id = ba_load_be16(b + off), sl = ba_load_be16(b + off + 2);
    if (sl < 4 || sl > len - off) {
      set_err(d, "set id %u at offset %zu has length %u (datagram %zu bytes)", id, off, sl, len);
      DROP(sl < 4 ? BA_DROP_MALFORMED : BA_DROP_TRUNCATED, 1);
      return;
    }
    const uint8_t *p = b + off + 4;
    size_t pl = sl - 4u;
    if (id == (ipfix ? 2 : 0)) {
      template_set(d, h, p, pl, 0);
    } else if (id == (ipfix ? 3 : 1)) {
      template_set(d, h, p, pl, 1);
    } else if (id >= 256) {
      nf_tmpl_t *t = *tmpl_find(d, d->cur->addr, (uint8_t)h->version, h->domain, id);
      if (t) data_set(d, h, t, p, pl);
      else pend_add(d, h, id, p, pl);
    } else {
      set_err(d, "reserved set id %u", id);
      DROP(BA_DROP_MALFORMED, 1);
    }
    off += sl;
  }
}

static void decode_v9(ba_flow_decoder_t *d, const uint8_t *b, size_t len) {
  if (len < 20) {
    DROP(BA_DROP_TRUNCATED, 1);
    set_err(d, "NetFlow v9 datagram of %zu bytes is shorter than its header", len);
    return;
  }
  CNT(datagrams)++;
  CNT(datagrams_v9)++;
  nf_hdr_t h;
  h.version = 9;
  h.uptime_ms = ba_load_be32(b + 4);
  h.export_ns = (uint64_t)ba_load_be32(b + 8) * NS_PER_S;
  h.domain = ba_load_be32(b + 16);
  decode_sets(d, &h, b, 20, len);
}

static void decode_ipfix(ba_flow_decoder_t *d, const uint8_t *b, size_t len) {
  if (len < 16) {
    DROP(BA_DROP_TRUNCATED, 1);
    set_err(d, "IPFIX message of %zu bytes is shorter than its header", len);
    return;
  }
  size_t ml = ba_load_be16(b + 2);
  if (ml < 16) {
    DROP(BA_DROP_MALFORMED, 1);
    set_err(d, "IPFIX message length %zu", ml);
    return;
  }
  CNT(datagrams)++;
  CNT(datagrams_ipfix)++;
  if (ml > len) {
    /* Decode the complete sets we have, count the message as truncated. */
    DROP(BA_DROP_TRUNCATED, 1);
    set_err(d, "IPFIX message says %zu bytes, datagram has %zu", ml, len);
    ml = len;
  }
  nf_hdr_t h;
  h.version = 10;
  h.uptime_ms = 0;
  h.export_ns = (uint64_t)ba_load_be32(b + 4) * NS_PER_S;
  h.domain = ba_load_be32(b + 12);
  decode_sets(d, &h, b, 16, ml);
}

int ba_flow_decode(ba_flow_decoder_t *d, const uint8_t exporter[16], const uint8_t *buf, size_t len,
                   ba_record_sink_fn fn, void *ctx) {
  if (!d || !exporter || (!buf && len)) return BA_ERR_INVALID;
  d->cur = source_get(d, exporter);
  if (!d->cur) return BA_ERR_NOMEM;
  d->fn = fn;
  d->ctx = ctx;
  d->sink_rc = 0;
  d->nout = 0;
  d->cur->datagrams_seen++;
  uint16_t ver = len >= 2 ? ba_load_be16(buf) : 0;
  switch (ver) {
  case 5: decode_v5(d, buf, len); break;
  case 9: decode_v9(d, buf, len); break;
  case 10: decode_ipfix(d, buf, len); break;
  default:
    set_err(d, "datagram of %zu bytes with version %u is no NetFlow v5/v9 or IPFIX", len, ver);
    DROP(len < 2 ? BA_DROP_TRUNCATED : BA_DROP_VERSION, 1);
    break;
  }
  if (d->pend_n) pend_scan(d, NULL); /* age out this exporter's held sets */
  out_flush(d);
  int rc = d->sink_rc;
  d->fn = NULL;
  d->ctx = NULL;
  return rc;
}

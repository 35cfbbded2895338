/* The flow decoder's shared state: NetFlow v5 (netflow_v5.c), v9/IPFIX sets
 * (flow_sets.c), the template cache and held sets (flow_templates.c), the
 * element-to-field mapping and record finishing (flow_fields.c), sFlow v5
 * (sflow.c), and the decoder object itself (flow_decoder.c). */
#ifndef BA_FLOW_INTERNAL_H
#define BA_FLOW_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bitarc/ingest.h"
#include "common/common.h"

#define NF_BATCH 512
#define NTP_UNIX_OFFSET 2208988800ull
#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull
#define NS_PER_DAY (86400ull * NS_PER_S)
#define PEN_REVERSE 29305u /* RFC 5103 reverse information elements */
#define NF_VARLEN 65535u   /* RFC 7011 §7: variable-length field */

/* What a template field feeds. Data-record ops first, then options-record ops. */
enum {
  OP_SKIP = 0, OP_SRC4, OP_DST4, OP_SRC6, OP_DST6, OP_SPORT, OP_DPORT, OP_PROTO, OP_TOS, OP_FLAGS,
  OP_BYTES, OP_PKTS, OP_BYTES_TOTAL, OP_PKTS_TOTAL, OP_OUT_BYTES, OP_OUT_PKTS, OP_OUT_BYTES_TOTAL,
  OP_OUT_PKTS_TOTAL, OP_INIT_BYTES, OP_INIT_PKTS, OP_RESP_BYTES, OP_RESP_PKTS, OP_REV_FLAGS,
  OP_IN_IF, OP_OUT_IF, OP_SRC_AS, OP_DST_AS, OP_PREV_AS, OP_NEXT_AS,
  OP_FIRST_UP, OP_LAST_UP, OP_START_S, OP_END_S, OP_START_MS, OP_END_MS, OP_START_NTP, OP_END_NTP,
  OP_START_DUS, OP_END_DUS, OP_SYSINIT_MS, OP_DURATION_MS, OP_EVENT_MS,
  OP_ICMP_TC, OP_ICMP_TYPE, OP_ICMP_CODE, OP_VLAN, OP_DST_VLAN, OP_IPVER, OP_FRAME_SECTION, OP_FRAME_SIZE,
  OP_SRC_MASK, OP_DST_MASK, OP_NH4, OP_NH6, OP_BGPNH4, OP_BGPNH6, OP_DST_TOS,
  OP_IN_SRC_MAC, OP_OUT_DST_MAC, OP_IN_DST_MAC, OP_OUT_SRC_MAC, OP_DIRECTION,
  OP_MPLS0, OP_MPLS9 = OP_MPLS0 + 9,
  OP_SAMPLING, OP_SAMPLING_ALGO, OP_SAMPLER_ID, OP_PKT_INTERVAL, OP_SPACE_INTERVAL,
  OP_ENGINE_TYPE, OP_ENGINE_ID, OP_OBS_DOMAIN,
  OP_XSRC4, OP_XDST4, OP_XSRC6, OP_XDST6, OP_XSPORT, OP_XDPORT, OP_NAT_EVENT, OP_FW_EVENT, OP_FW_XEVENT,
  OP_IN_VRF, OP_OUT_VRF, OP_AGGR_FLOWS, OP_SUBTMPL, OP_SUBTMPL_MULTI,
  /* options records */
  OPT_SYSINIT, OPT_SAMPLING, OPT_SAMPLING_ALGO, OPT_SAMPLER_ID, OPT_SPACE, OPT_PKT_INTERVAL,
  OPT_IFINDEX, OPT_IFNAME, OPT_IFDESC,
  OP_COUNT
};

typedef struct nf_field {
  uint16_t type, len; /* len NF_VARLEN = variable */
  uint32_t pen;       /* enterprise number, 0 = IETF */
  uint8_t op, scope;
} nf_field_t;

typedef struct nf_plan {
  uint32_t off;
  uint16_t len;
  uint8_t op;
  uint8_t rw;    /* a plain store (nf_plain_field): the record field's bytes (1, 2, 4, 8); 0: nf_apply */
  uint16_t roff; /* its offset in ba_record_t */
  uint8_t kind;  /* what nf_apply_plan does: NF_PK_* (nf_plan_kind) */
} nf_plan_t;

/* Plan entry kinds: one dispatch per field for the common widths and the
 * common non-plain elements of fixed-length templates, each doing exactly
 * what nf_apply_plan's general path (rw and len, or nf_apply) does. */
enum {
  NF_PK_APPLY = 0, /* nf_apply */
  NF_PK_PLAIN,     /* rw bytes from nf_be_uint of len bytes */
  NF_PK_1_1, NF_PK_2_2, NF_PK_4_4, NF_PK_8_8, NF_PK_4_2, NF_PK_8_4, /* rw_len, a plain store */
  NF_PK_SRC4, NF_PK_DST4,            /* 4-byte IPv4 addresses */
  NF_PK_BYTES4, NF_PK_BYTES8, NF_PK_PKTS4, NF_PK_PKTS8,
  NF_PK_FIRST_UP4, NF_PK_LAST_UP4,
  NF_PK_FLAGS1, NF_PK_FLAGS2 /* OP_FLAGS, OP_REV_FLAGS: ORed in */
};

typedef struct nf_tmpl {
  struct nf_tmpl *next;
  uint8_t exporter[16];
  uint32_t domain;
  uint16_t id;
  uint8_t version, options, varlen, live;
  uint16_t nfields, nplan, nscope;
  uint32_t min_len; /* fixed bytes + 1 per variable-length field */
  nf_field_t *fields;
  nf_plan_t *plan;
  uint32_t definitions;
  uint64_t sets, records, stored;
  uint64_t dropped[BA_DROP_COUNT];
  char last_drop[224];
} nf_tmpl_t;

typedef struct nf_sampler {
  uint32_t domain;
  uint64_t id;
  uint8_t generic, algorithm;
  uint32_t packet_interval, space_interval;
} nf_sampler_t;

typedef struct nf_ifname {
  uint32_t domain, ifindex;
  char name[64], desc[64];
} nf_ifname_t;

typedef struct nf_source {
  uint8_t addr[16];
  int used;
  int64_t sysinit_ms; /* from an options record (IPFIX element 160), -1 if unknown */
  uint64_t datagrams_seen;
  ba_ingest_counts_t counts;
  int64_t export_skew_s;
  uint8_t clock_suspicious;
  nf_sampler_t *samplers;
  size_t nsamplers, samplers_cap;
  nf_ifname_t *ifnames;
  size_t nifnames, ifnames_cap;
  char last_error[224];
} nf_source_t;

typedef struct nf_pending {
  uint8_t exporter[16];
  uint32_t domain;
  uint16_t tid;
  uint8_t version;
  uint64_t export_ns, received_ns;
  uint32_t uptime_ms;
  uint64_t seen_at; /* source's datagram count when held */
  uint8_t *data;
  uint32_t len;
} nf_pending_t;

/* Header context of the message being decoded. */
typedef struct nf_hdr {
  int version;
  uint64_t export_ns, received_ns;
  uint32_t uptime_ms;
  uint32_t domain;
} nf_hdr_t;

/* Values of one data record that are combined when it is finished. */
typedef struct nf_rec_state {
  uint64_t start_abs, end_abs;     /* ns since epoch, 0 = absent */
  int64_t first_up, last_up;       /* ms sysUpTime, -1 = absent */
  int64_t start_dus, end_dus;      /* delta us before export, -1 = absent */
  int64_t sysinit_ms, duration_ms, event_ms;
  uint64_t bytes_total, pkts_total, frame_size;
  uint64_t out_bytes_total, out_pkts_total, init_bytes, init_pkts, resp_bytes, resp_pkts;
  uint64_t sampler_id, pkt_interval, space_interval;
  int have_bytes, have_pkts, have_out_bytes, have_out_pkts, have_addr, have_icmp, have_frame;
  int have_init_bytes, have_init_pkts, have_resp_bytes, have_resp_pkts, have_obs;
  int have_sampler_id;
  int src6, dst6; /* a non-zero IPv6 address was seen */
  const uint8_t *frame;
  uint32_t frame_len;
  uint8_t icmp_type, icmp_code;
} nf_rec_state_t;

struct ba_flow_decoder {
  ba_flow_decoder_opts_t o;
  nf_tmpl_t **tab;
  size_t tab_cap, tab_n;
  nf_source_t *src;
  size_t src_cap, src_n;
  nf_source_t *cur;
  nf_tmpl_t *cur_tmpl;     /* template of the records being decoded (stats), or NULL */
  nf_pending_t *pend;      /* FIFO ring */
  size_t pend_head, pend_n, pend_cap;
  uint64_t pend_bytes;
  ba_record_t out[NF_BATCH];
  nf_tmpl_t *out_tmpl[NF_BATCH];
  size_t nout;
  ba_record_sink_fn fn;
  void *ctx;
  int sink_rc;
  char err[256];
};

#define CNT(d, field) ((d)->cur->counts.field)

/* flow_decoder.c */
void nf_set_err(ba_flow_decoder_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Counts n units dropped for reason (on the exporter and the current
 * template) with the reason text of the last nf_set_err. */
void nf_drop(ba_flow_decoder_t *d, ba_ingest_drop_t reason, uint64_t n);
ba_record_t *nf_out_next(ba_flow_decoder_t *d);
void nf_out_commit(ba_flow_decoder_t *d);
int nf_out_flush(ba_flow_decoder_t *d);
nf_source_t *nf_source_get(ba_flow_decoder_t *d, const uint8_t ex[16]);

/* flow_templates.c */
nf_tmpl_t *nf_tmpl_lookup(ba_flow_decoder_t *d, uint8_t ver, uint32_t dom, uint16_t id);
/* Takes ownership of fields (freed on failure). 0, -1 when the template is
 * malformed (counted), or BA_ERR_NOMEM. */
int nf_tmpl_store(ba_flow_decoder_t *d, const nf_hdr_t *h, uint16_t id, int options, uint16_t nscope,
                  nf_field_t *fields, uint16_t nfields);
void nf_tmpl_withdraw(ba_flow_decoder_t *d, const nf_hdr_t *h, uint16_t id, int all);
void nf_tmpl_free_all(ba_flow_decoder_t *d);
void nf_pend_add(ba_flow_decoder_t *d, const nf_hdr_t *h, uint16_t tid, const uint8_t *p, size_t len);
void nf_pend_scan(ba_flow_decoder_t *d, const nf_tmpl_t *t);
void nf_pend_drop_all(ba_flow_decoder_t *d);

/* flow_fields.c */
uint8_t nf_element_op(int version, uint32_t pen, uint16_t type, uint16_t len);
uint8_t nf_option_op(int version, int scope, uint16_t type, uint16_t len);
/* Zeroes n bytes at p (n a constant) with 16-byte stores: GCC turns
 * memset and a copy of a zero struct into rep stos / rep movs (a step per
 * 8 bytes with a start-up cost: a per-record cost of every decoder); the
 * may_alias vector type and the unrolled loop keep the stores. */
typedef uint64_t nf_v2_t __attribute__((vector_size(16), may_alias, aligned(1)));
static inline __attribute__((always_inline)) void nf_zero(void *p, size_t n) {
  const nf_v2_t z = {0, 0};
  unsigned char *b = p;
  size_t o = 0;
#pragma GCC unroll 32
  for (; o + 16 <= n; o += 16) *(nf_v2_t *)(b + o) = z;
  if (o < n) memset(b + o, 0, n - o);
}
static inline void nf_rec_zero(ba_record_t *r) { nf_zero(r, sizeof *r); }
/* A record's state before its fields: all zero, the times absent (-1). */
static inline void nf_state_init(nf_rec_state_t *s) {
  nf_zero(s, sizeof *s);
  __asm__("" : : "r"(s) : "memory"); /* else merged with the stores below into one rep stos */
  s->first_up = s->last_up = s->start_dus = s->end_dus = -1;
  s->sysinit_ms = s->duration_ms = s->event_ms = -1;
}
/* ba_addr_set_v4 in three stores (its byte loop was a per-address cost of
 * the v9/IPFIX plans). */
static inline void nf_addr_v4(uint8_t a[16], uint32_t host_order_v4) {
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  memcpy(a, mapped, 12);
  a[12] = (uint8_t)(host_order_v4 >> 24); /* (merged into one store) */
  a[13] = (uint8_t)(host_order_v4 >> 16);
  a[14] = (uint8_t)(host_order_v4 >> 8);
  a[15] = (uint8_t)host_order_v4;
}
void nf_apply(ba_record_t *r, nf_rec_state_t *s, uint8_t op, const uint8_t *p, unsigned len);
/* Whether op with a field of len bytes only stores the field's value,
 * truncated, into one record field (what nf_apply does for it): its offset
 * and width in *roff and *rw (else *rw = 0). Compiled into template plans,
 * so fixed-length records set such fields without nf_apply's dispatch. */
void nf_plain_field(uint8_t op, unsigned len, uint16_t *roff, uint8_t *rw);
/* The NF_PK_* kind of a plan entry of op and len, rw from nf_plain_field. */
uint8_t nf_plan_kind(uint8_t op, unsigned len, uint8_t rw);
/* Finishes a record: counters, sampling, ICMP, times, exporter identity;
 * returns 0 to keep it, -1 when it was dropped (counted). */
int nf_rec_finish(ba_flow_decoder_t *d, const nf_hdr_t *h, ba_record_t *r, nf_rec_state_t *s);
/* nf_rec_finish of a NetFlow v5 record (v5_record): r zeroed by
 * nf_out_next, then v5's fields set (both addresses IPv4, ipver 4), and a
 * state of FIRST/LAST (sysUpTime ms), counters and addresses only; the same
 * record without building that state (test_flow_v5_finish compares). */
int nf_rec_finish_v5(ba_flow_decoder_t *d, const nf_hdr_t *h, ba_record_t *r, uint32_t first_up, uint32_t last_up);
/* Moves the times of a finished record by the re-basing rule and checks the
 * exporter clock; shared with v5 and sFlow. */
int nf_rec_times(ba_flow_decoder_t *d, const nf_hdr_t *h, ba_record_t *r, uint64_t first, uint64_t last);
/* Per message: export time against the receive time (exporter clock report). */
void nf_hdr_clock(ba_flow_decoder_t *d, const nf_hdr_t *h);
/* Sampler of the current exporter: exact id (generic = 0), else the
 * domain's generic one; NULL if none. */
const nf_sampler_t *nf_sampler_find(const nf_source_t *s, uint32_t domain, int have_id, uint64_t id);
int nf_sampler_put(nf_source_t *s, const nf_sampler_t *smp);
int nf_ifname_put(nf_source_t *s, uint32_t domain, uint32_t ifindex, const char *name, const char *desc);
/* A big-endian unsigned of len bytes (0..8); the usual widths without the
 * byte loop (a per-field cost of the v9/IPFIX decoder). */
static inline uint64_t nf_be_uint(const uint8_t *p, unsigned len) {
  switch (len) {
  case 1: return p[0];
  case 2: return ba_load_be16(p);
  case 4: return ba_load_be32(p);
  case 8: return ba_load_be64(p);
  default: break;
  }
  uint64_t v = 0;
  for (unsigned i = 0; i < len; i++) v = (v << 8) | p[i];
  return v;
}

/* Applies one compiled plan entry to r (the record bytes at rp): the
 * general path, what every kind stands for. */
static inline void nf_apply_plan_general(ba_record_t *r, nf_rec_state_t *s, const nf_plan_t *pl, const uint8_t *rp) {
  const uint8_t *p = rp + pl->off;
  uint8_t *f = (uint8_t *)r + pl->roff;
  switch (pl->rw) {
  case 1: *f = (uint8_t)nf_be_uint(p, pl->len); break;
  case 2: { uint16_t x = (uint16_t)nf_be_uint(p, pl->len); memcpy(f, &x, 2); break; }
  case 4: { uint32_t x = (uint32_t)nf_be_uint(p, pl->len); memcpy(f, &x, 4); break; }
  case 8: { uint64_t x = nf_be_uint(p, pl->len); memcpy(f, &x, 8); break; }
  default: nf_apply(r, s, pl->op, p, pl->len); break;
  }
}

/* nf_apply_plan_general by the entry's kind: one dispatch per field. */
static inline void nf_apply_plan(ba_record_t *r, nf_rec_state_t *s, const nf_plan_t *pl, const uint8_t *rp) {
  const uint8_t *p = rp + pl->off;
  uint8_t *f = (uint8_t *)r + pl->roff;
  switch (pl->kind) {
  case NF_PK_1_1: *f = p[0]; break;
  case NF_PK_2_2: { uint16_t x = ba_load_be16(p); memcpy(f, &x, 2); break; }
  case NF_PK_4_4: { uint32_t x = ba_load_be32(p); memcpy(f, &x, 4); break; }
  case NF_PK_8_8: { uint64_t x = ba_load_be64(p); memcpy(f, &x, 8); break; }
  case NF_PK_4_2: { uint32_t x = ba_load_be16(p); memcpy(f, &x, 4); break; }
  case NF_PK_8_4: { uint64_t x = ba_load_be32(p); memcpy(f, &x, 8); break; }
  case NF_PK_SRC4: { uint32_t v = ba_load_be32(p); if (v || !s->src6) nf_addr_v4(r->src, v); s->have_addr = 1; break; }
  case NF_PK_DST4: { uint32_t v = ba_load_be32(p); if (v || !s->dst6) nf_addr_v4(r->dst, v); s->have_addr = 1; break; }
  case NF_PK_BYTES4: r->bytes = ba_load_be32(p); s->have_bytes = 1; break;
  case NF_PK_BYTES8: r->bytes = ba_load_be64(p); s->have_bytes = 1; break;
  case NF_PK_PKTS4: r->packets = ba_load_be32(p); s->have_pkts = 1; break;
  case NF_PK_PKTS8: r->packets = ba_load_be64(p); s->have_pkts = 1; break;
  case NF_PK_FIRST_UP4: s->first_up = (int64_t)ba_load_be32(p); break;
  case NF_PK_LAST_UP4: s->last_up = (int64_t)ba_load_be32(p); break;
  case NF_PK_FLAGS1: r->tcp_flags |= p[0]; break;
  case NF_PK_FLAGS2: r->tcp_flags |= p[1]; break; /* (uint8_t) of the 16-bit value */
  default: nf_apply_plan_general(r, s, pl, rp); break;
  }
}

/* flow_sets.c */
void nf_decode_v9(ba_flow_decoder_t *d, const uint8_t *b, size_t len, uint64_t received_ns);
void nf_decode_ipfix(ba_flow_decoder_t *d, const uint8_t *b, size_t len, uint64_t received_ns);
void nf_data_set(ba_flow_decoder_t *d, const nf_hdr_t *h, nf_tmpl_t *t, const uint8_t *p, size_t len);

/* netflow_v5.c */
void nf_decode_v5(ba_flow_decoder_t *d, const uint8_t *b, size_t len, uint64_t received_ns);
int nf_detect_v5(const uint8_t *buf, size_t len);

/* sflow.c */
void nf_decode_sflow(ba_flow_decoder_t *d, const uint8_t *b, size_t len, uint64_t received_ns);
int nf_detect_sflow(const uint8_t *buf, size_t len);

#endif

/* NetFlow v9 (RFC 3954) and IPFIX (RFC 7011) messages: headers, sets,
 * (options) template records, data records with fixed- and variable-length
 * fields (RFC 7011 §7), options data (samplers, interface names, system
 * init time). One UDP datagram may hold several IPFIX messages (and a TCP
 * stream is a sequence of them): each is decoded. */
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "ingest/flow_internal.h"

/* Length of a field of the record at rp (avail bytes left in the set) whose
 * data starts at *o2; a variable-length prefix (1 byte, or 255 + 2 bytes) is
 * consumed. Returns -1 when the field does not fit. */
static inline int field_len(const nf_field_t *f, const uint8_t *rp, size_t avail, size_t *o2, size_t *fl) {
  size_t l = f->len;
  if (l == NF_VARLEN) {
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

/* Values of one options data record. */
typedef struct opt_vals {
  uint64_t sampling, algo, id, space, pkt, ifindex;
  int has_sampling, has_algo, has_id, has_space, has_pkt, has_ifindex;
  char name[64], desc[64];
  int has_name, has_desc;
} opt_vals_t;

static void opt_field(ba_flow_decoder_t *d, opt_vals_t *v, uint8_t op, const uint8_t *p, size_t fl) {
  uint64_t x = fl <= 8 ? nf_be_uint(p, (unsigned)fl) : 0;
  switch (op) {
  case OPT_SYSINIT: d->cur->sysinit_ms = (int64_t)(x & 0x7fffffffffffull); break;
  case OPT_SAMPLING: v->sampling = x; v->has_sampling = 1; break;
  case OPT_SAMPLING_ALGO: v->algo = x; v->has_algo = 1; break;
  case OPT_SAMPLER_ID: v->id = x; v->has_id = 1; break;
  case OPT_SPACE: v->space = x; v->has_space = 1; break;
  case OPT_PKT_INTERVAL: v->pkt = x; v->has_pkt = 1; break;
  case OPT_IFINDEX: v->ifindex = x; v->has_ifindex = 1; break;
  case OPT_IFNAME: case OPT_IFDESC: {
    char *dst = op == OPT_IFNAME ? v->name : v->desc;
    size_t n = BA_MIN(fl, 63);
    memcpy(dst, p, n);
    dst[n] = 0;
    if (op == OPT_IFNAME) v->has_name = 1;
    else v->has_desc = 1;
    break;
  }
  default: break;
  }
}

/* Samplers as nfdump reads them: a sampler id or packet/space interval makes
 * an identified sampler (a plain interval N is 1 packet in N); elements 34/35
 * alone a generic one for the exporter's domain. */
static void opt_apply(ba_flow_decoder_t *d, const nf_hdr_t *h, const opt_vals_t *v) {
  if (v->has_id || v->has_space || v->has_pkt || v->has_sampling) {
    nf_sampler_t m;
    memset(&m, 0, sizeof(m));
    m.domain = h->domain;
    m.generic = !(v->has_id || v->has_space || v->has_pkt);
    m.id = m.generic ? 0 : v->id;
    m.algorithm = (uint8_t)v->algo;
    uint64_t space = v->has_space ? v->space : v->sampling;
    if (v->has_pkt && v->pkt) {
      m.packet_interval = (uint32_t)v->pkt;
      m.space_interval = (uint32_t)space;
    } else {
      m.packet_interval = 1;
      m.space_interval = space ? (uint32_t)(space - 1) : 0;
    }
    nf_sampler_put(d->cur, &m);
  }
  if (v->has_ifindex && (v->has_name || v->has_desc))
    nf_ifname_put(d->cur, h->domain, (uint32_t)v->ifindex, v->has_name ? v->name : NULL,
                  v->has_desc ? v->desc : NULL);
}

/* One options data record at rp; returns its length or 0 when it overruns. */
static size_t options_record(ba_flow_decoder_t *d, const nf_hdr_t *h, const nf_tmpl_t *t, const uint8_t *rp,
                             size_t avail, uint16_t *bad_field) {
  opt_vals_t v;
  memset(&v, 0, sizeof(v));
  size_t o2 = 0, fl;
  for (uint16_t i = 0; i < t->nfields; i++) {
    if (field_len(&t->fields[i], rp, avail, &o2, &fl)) {
      *bad_field = i;
      return 0;
    }
    if (t->fields[i].op != OP_SKIP) opt_field(d, &v, t->fields[i].op, rp + o2, fl);
    o2 += fl;
  }
  opt_apply(d, h, &v);
  return o2;
}

static size_t walk_record(ba_flow_decoder_t *d, const nf_hdr_t *h, const nf_tmpl_t *t, ba_record_t *r,
                          nf_rec_state_t *s, const uint8_t *rp, size_t avail, uint16_t *bad_field, int depth);

/* RFC 6313 subTemplateList (one template id, then its records) and
 * subTemplateMultiList (blocks of template id, length, records): the fields
 * of the sub-records feed the same flow record (YAF puts MAC addresses,
 * payload details, ... there). Unknown sub-templates are skipped. */
static void sub_list(ba_flow_decoder_t *d, const nf_hdr_t *h, ba_record_t *r, nf_rec_state_t *s, const uint8_t *p,
                     size_t len, int multi, int depth) {
  if (depth > 3 || len < 1) return;
  size_t off = 1; /* list semantic */
  while (len - off >= (multi ? 4u : 2u)) {
    uint16_t tid = ba_load_be16(p + off);
    size_t body;
    if (multi) {
      size_t l = ba_load_be16(p + off + 2);
      if (l < 4 || l > len - off) return;
      body = l - 4;
      off += 4;
    } else {
      off += 2;
      body = len - off;
    }
    const nf_tmpl_t *st = nf_tmpl_lookup(d, (uint8_t)h->version, h->domain, tid);
    if (st && st->live && !st->options) {
      size_t o = 0;
      uint16_t bad;
      while (body - o >= st->min_len) {
        size_t rl = walk_record(d, h, st, r, s, p + off + o, body - o, &bad, depth + 1);
        if (!rl) break;
        o += rl;
      }
    }
    off += body;
    if (!multi) break;
  }
}

/* One data record walked field by field (variable-length fields, or
 * sub-template lists); returns its length or 0 when it overruns. */
static size_t walk_record(ba_flow_decoder_t *d, const nf_hdr_t *h, const nf_tmpl_t *t, ba_record_t *r,
                          nf_rec_state_t *s, const uint8_t *rp, size_t avail, uint16_t *bad_field, int depth) {
  size_t o2 = 0, fl;
  for (uint16_t i = 0; i < t->nfields; i++) {
    if (field_len(&t->fields[i], rp, avail, &o2, &fl)) {
      *bad_field = i;
      return 0;
    }
    uint8_t op = t->fields[i].op;
    if (op == OP_SUBTMPL || op == OP_SUBTMPL_MULTI) sub_list(d, h, r, s, rp + o2, fl, op == OP_SUBTMPL_MULTI, depth);
    else if (op != OP_SKIP) nf_apply(r, s, op, rp + o2, (unsigned)fl);
    o2 += fl;
  }
  return o2;
}

void nf_data_set(ba_flow_decoder_t *d, const nf_hdr_t *h, nf_tmpl_t *t, const uint8_t *p, size_t len) {
  nf_tmpl_t *keep = d->cur_tmpl;
  d->cur_tmpl = t;
  t->sets++;
  size_t off = 0;
  uint64_t recno = 0;
  uint16_t bad = 0;
  while (len - off >= t->min_len) {
    const uint8_t *rp = p + off;
    size_t rl;
    if (t->options) {
      rl = options_record(d, h, t, rp, len - off, &bad);
      if (!rl) goto overrun;
      off += rl;
      recno++;
      t->records++;
      CNT(d, options_records)++;
      continue;
    }
    ba_record_t *r = nf_out_next(d);
    nf_rec_state_t s;
    nf_state_init(&s);
    if (!t->varlen) {
      /* bounds in locals: the plan's byte stores may alias *t */
      const nf_plan_t *pl = t->plan, *pe = pl + t->nplan;
      for (; pl < pe; pl++) nf_apply_plan(r, &s, pl, rp);
      rl = t->min_len;
    } else {
      rl = walk_record(d, h, t, r, &s, rp, len - off, &bad, 0);
      if (!rl) goto overrun;
    }
    off += rl;
    recno++;
    t->records++;
    if (nf_rec_finish(d, h, r, &s) == 0) nf_out_commit(d);
  }
  d->cur_tmpl = keep;
  return;
overrun:
  nf_set_err(d, "template %u (domain %u) record %llu at set offset %zu: field %u (element %u%s) runs past the set "
             "end (%zu bytes); rest of the set dropped",
             t->id, t->domain, (unsigned long long)recno, off, bad, t->fields[bad].type,
             t->fields[bad].len == NF_VARLEN ? ", variable length" : "", len);
  nf_drop(d, BA_DROP_MALFORMED, 1);
  d->cur_tmpl = keep;
}

/* Reads the field specifiers of one template record; returns the new offset
 * or 0 when they run past the set (error set). */
static size_t read_fields(ba_flow_decoder_t *d, const nf_hdr_t *h, const uint8_t *p, size_t len, size_t off,
                          uint16_t tid, nf_field_t *fields, size_t nf) {
  int ipfix = h->version == 10;
  for (size_t i = 0; i < nf; i++) {
    if (len - off < 4) {
      nf_set_err(d, "template %u (domain %u): field %zu of %zu runs past its set (set offset %zu)", tid, h->domain,
                 i, nf, off);
      return 0;
    }
    uint16_t ty = ba_load_be16(p + off), fl = ba_load_be16(p + off + 2);
    off += 4;
    if (ipfix && (ty & 0x8000)) {
      if (len - off < 4) {
        nf_set_err(d, "template %u (domain %u): enterprise number of field %zu runs past its set", tid, h->domain, i);
        return 0;
      }
      fields[i].pen = ba_load_be32(p + off);
      off += 4;
      ty &= 0x7fff;
    }
    fields[i].type = ty;
    fields[i].len = fl;
  }
  return off;
}

/* A template or options template set. */
static void template_set(ba_flow_decoder_t *d, const nf_hdr_t *h, const uint8_t *p, size_t len, int options) {
  size_t off = 0;
  int ipfix = h->version == 10;
  for (;;) {
    size_t hdr = options ? 6 : 4;
    if (len - off < hdr) break;                /* padding */
    uint16_t tid = ba_load_be16(p + off);
    if (tid == 0 && ba_load_be16(p + off + 2) == 0) break; /* zero padding */
    uint16_t fc = ba_load_be16(p + off + 2), nscope = 0;
    size_t nf;
    if (!ipfix && options) {
      uint16_t sl = fc, ol = ba_load_be16(p + off + 4);
      if (sl % 4 || ol % 4 || (size_t)sl + ol == 0) {
        nf_set_err(d, "options template %u (domain %u): scope length %u, option length %u", tid, h->domain, sl, ol);
        nf_drop(d, BA_DROP_MALFORMED, 1);
        return;
      }
      nf = ((size_t)sl + ol) / 4;
      nscope = sl / 4;
    } else {
      if (fc == 0) { /* withdrawal (IPFIX; v9 exporters use it the same way) */
        nf_tmpl_withdraw(d, h, tid, ipfix && (tid == 2 || tid == 3));
        off += 4;
        continue;
      }
      nf = fc;
      if (options) {
        nscope = ba_load_be16(p + off + 4);
        if (nscope == 0 || nscope > fc) {
          nf_set_err(d, "options template %u (domain %u): scope field count %u of %u", tid, h->domain, nscope, fc);
          nf_drop(d, BA_DROP_MALFORMED, 1);
          return;
        }
      }
    }
    if (tid < 256) {
      nf_set_err(d, "%stemplate id %u is reserved (set offset %zu)", options ? "options " : "", tid, off);
      nf_drop(d, BA_DROP_MALFORMED, 1);
      return;
    }
    off += hdr;
    nf_field_t *fields = ba_calloc(nf, sizeof(*fields));
    if (!fields) return;
    off = read_fields(d, h, p, len, off, tid, fields, nf);
    if (!off) {
      ba_free(fields);
      nf_drop(d, BA_DROP_MALFORMED, 1);
      return;
    }
    if (nf_tmpl_store(d, h, tid, options, nscope, fields, (uint16_t)nf) == 0)
      nf_pend_scan(d, nf_tmpl_lookup(d, (uint8_t)h->version, h->domain, tid));
  }
}

static int all_zero(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i]) return 0;
  return 1;
}

static void decode_sets(ba_flow_decoder_t *d, const nf_hdr_t *h, const uint8_t *b, size_t off, size_t len) {
  int ipfix = h->version == 10;
  while (len - off >= 4) {
    uint16_t id = ba_load_be16(b + off), sl = ba_load_be16(b + off + 2);
    if (sl < 4 && all_zero(b + off, len - off)) return; /* zero padding up to the datagram end */
    if (sl < 4 || sl > len - off) {
      nf_set_err(d, "set id %u at offset %zu has length %u (message %zu bytes)", id, off, sl, len);
      nf_drop(d, sl < 4 ? BA_DROP_MALFORMED : BA_DROP_TRUNCATED, 1);
      return;
    }
    const uint8_t *p = b + off + 4;
    size_t pl = sl - 4u;
    if (id == (ipfix ? 2 : 0)) {
      template_set(d, h, p, pl, 0);
    } else if (id == (ipfix ? 3 : 1)) {
      template_set(d, h, p, pl, 1);
    } else if (id >= 256) {
      nf_tmpl_t *t = nf_tmpl_lookup(d, (uint8_t)h->version, h->domain, id);
      if (t && t->live) {
        nf_data_set(d, h, t, p, pl);
      } else if (t) { /* RFC 7011 §8.1: no data for a withdrawn template until it is defined again */
        d->cur_tmpl = t;
        nf_set_err(d, "data set at offset %zu for template %u (domain %u), which was withdrawn", off, id, h->domain);
        nf_drop(d, BA_DROP_UNKNOWN_TEMPLATE, 1);
        d->cur_tmpl = NULL;
      } else {
        nf_pend_add(d, h, id, p, pl);
      }
    } else {
      nf_set_err(d, "reserved set id %u at offset %zu", id, off);
      nf_drop(d, BA_DROP_MALFORMED, 1);
    }
    off += sl;
  }
}

void nf_decode_v9(ba_flow_decoder_t *d, const uint8_t *b, size_t len, uint64_t received_ns) {
  if (len < 20) {
    nf_set_err(d, "NetFlow v9 datagram of %zu bytes is shorter than its header", len);
    nf_drop(d, BA_DROP_TRUNCATED, 1);
    return;
  }
  CNT(d, datagrams)++;
  CNT(d, datagrams_v9)++;
  CNT(d, messages)++;
  nf_hdr_t h;
  h.version = 9;
  h.uptime_ms = ba_load_be32(b + 4);
  h.export_ns = (uint64_t)ba_load_be32(b + 8) * NS_PER_S;
  h.received_ns = received_ns;
  h.domain = ba_load_be32(b + 16);
  nf_hdr_clock(d, &h);
  decode_sets(d, &h, b, 20, len);
}

void nf_decode_ipfix(ba_flow_decoder_t *d, const uint8_t *b, size_t len, uint64_t received_ns) {
  if (len < 16) {
    nf_set_err(d, "IPFIX message of %zu bytes is shorter than its header", len);
    nf_drop(d, BA_DROP_TRUNCATED, 1);
    return;
  }
  CNT(d, datagrams)++;
  CNT(d, datagrams_ipfix)++;
  size_t off = 0;
  unsigned nmsg = 0;
  while (off < len) {
    if (len - off < 16 || ba_load_be16(b + off) != 10) {
      nf_set_err(d, "%zu bytes at offset %zu after %u IPFIX message(s) are no IPFIX message", len - off, off, nmsg);
      nf_drop(d, BA_DROP_MALFORMED, 1);
      return;
    }
    size_t ml = ba_load_be16(b + off + 2);
    if (ml < 16) {
      nf_set_err(d, "IPFIX message at offset %zu has length %zu", off, ml);
      nf_drop(d, BA_DROP_MALFORMED, 1);
      return;
    }
    CNT(d, messages)++;
    nmsg++;
    if (ml > len - off) {
      /* Decode the complete sets we have, count the message as truncated. */
      nf_set_err(d, "IPFIX message at offset %zu says %zu bytes, datagram has %zu", off, ml, len - off);
      nf_drop(d, BA_DROP_TRUNCATED, 1);
      ml = len - off;
    }
    nf_hdr_t h;
    h.version = 10;
    h.uptime_ms = 0;
    h.export_ns = (uint64_t)ba_load_be32(b + off + 4) * NS_PER_S;
    h.received_ns = received_ns;
    h.domain = ba_load_be32(b + off + 12);
    nf_hdr_clock(d, &h);
    decode_sets(d, &h, b + off, 16, ml);
    off += ml;
  }
}

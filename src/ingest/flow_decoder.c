/* The flow decoder object: options, per-exporter state, record batching,
 * drop accounting with reason text, reports, and the entry point that hands
 * each datagram to the NetFlow v5, v9/IPFIX or sFlow decoder. */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bitarc/ingest.h"
#include "common/common.h"
#include "ingest/flow_internal.h"

void ba_flow_decoder_opts_init(ba_flow_decoder_opts_t *o) {
  memset(o, 0, sizeof(*o));
  o->pending_max_sets = 256;
  o->pending_max_bytes = 4u << 20;
  o->pending_max_age = 64;
}

const char *ba_ingest_drop_name(ba_ingest_drop_t r) {
  static const char *const n[BA_DROP_COUNT] = {"unknown-template", "malformed", "truncated", "not-netflow",
                                               "time-outside",     "not-export", "queue-full", "store",
                                               "stop-timeout"};
  return (unsigned)r < BA_DROP_COUNT ? n[r] : "?";
}
const char *ba_ingest_drop_unit(ba_ingest_drop_t r) {
  static const char *const n[BA_DROP_COUNT] = {"data sets", "sets/datagrams", "datagrams/packets", "datagrams",
                                               "records",   "packets",        "datagrams",         "records",
                                               "datagrams"};
  return (unsigned)r < BA_DROP_COUNT ? n[r] : "?";
}

void ba_ingest_counts_add(ba_ingest_counts_t *a, const ba_ingest_counts_t *b) {
  a->packets += b->packets;
  a->datagrams += b->datagrams;
  a->datagrams_v5 += b->datagrams_v5;
  a->datagrams_v9 += b->datagrams_v9;
  a->datagrams_ipfix += b->datagrams_ipfix;
  a->datagrams_sflow += b->datagrams_sflow;
  a->messages += b->messages;
  a->sflow_flow_samples += b->sflow_flow_samples;
  a->sflow_counter_samples += b->sflow_counter_samples;
  a->clock_far += b->clock_far;
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

/* Whether a v9 or IPFIX datagram's sets tile it exactly with legal ids. */
static int detect_sets(const uint8_t *buf, size_t off, size_t len, int ipfix) {
  int sets = 0;
  while (len - off >= 4) {
    uint16_t id = ba_load_be16(buf + off), sl = ba_load_be16(buf + off + 2);
    if (sl < 4 || sl > len - off) return 0;
    if (ipfix ? (id < 2 || (id > 3 && id < 256)) : (id > 1 && id < 256)) return 0;
    off += sl;
    sets++;
  }
  return off == len && (ipfix || sets > 0);
}

int ba_flow_detect(const uint8_t *buf, size_t len) {
  if (!buf || len < 4) return 0;
  uint16_t ver = ba_load_be16(buf);
  if (ver == 5) return nf_detect_v5(buf, len) ? 5 : 0;
  if (ver == 9) return len >= 24 && detect_sets(buf, 20, len, 0) ? 9 : 0;
  if (ver == 10) {
    size_t ml = len >= 20 ? ba_load_be16(buf + 2) : 0;
    /* one message, or several concatenated (each checked) */
    size_t off = 0;
    while (off < len) {
      if (len - off < 16 || ba_load_be16(buf + off) != 10) return 0;
      ml = ba_load_be16(buf + off + 2);
      if (ml < 16 || ml > len - off || !detect_sets(buf + off, 16, ml, 1)) return 0;
      off += ml;
    }
    return 10;
  }
  if (ver == 0 && nf_detect_sflow(buf, len)) return BA_FLOW_SFLOW5;
  return 0;
}

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

void ba_flow_decoder_free(ba_flow_decoder_t *d) {
  if (!d) return;
  if (d->tab) nf_tmpl_free_all(d);
  if (d->pend)
    for (size_t i = 0; i < d->pend_n; i++) ba_free(d->pend[(d->pend_head + i) % d->pend_cap].data);
  if (d->src)
    for (size_t i = 0; i < d->src_cap; i++) {
      ba_free(d->src[i].samplers);
      ba_free(d->src[i].ifnames);
    }
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
    const nf_source_t *s = &d->src[i];
    if (!s->used) continue;
    if (n < cap) {
      ba_flow_source_t *o = &out[n];
      memset(o, 0, sizeof(*o));
      memcpy(o->addr, s->addr, 16);
      o->counts = s->counts;
      o->export_skew_s = s->export_skew_s;
      o->clock_suspicious = s->clock_suspicious;
      o->samplers = (uint32_t)s->nsamplers;
      o->ifnames = (uint32_t)s->nifnames;
      memcpy(o->last_error, s->last_error, sizeof(o->last_error));
    }
    n++;
  }
  return n;
}

size_t ba_flow_decoder_samplers(const ba_flow_decoder_t *d, ba_flow_sampler_t *out, size_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < d->src_cap; i++) {
    const nf_source_t *s = &d->src[i];
    if (!s->used) continue;
    for (size_t k = 0; k < s->nsamplers; k++, n++) {
      if (n >= cap) continue;
      const nf_sampler_t *m = &s->samplers[k];
      ba_flow_sampler_t *o = &out[n];
      memset(o, 0, sizeof(*o));
      memcpy(o->exporter, s->addr, 16);
      o->domain = m->domain;
      o->id = m->id;
      o->generic = m->generic;
      o->algorithm = m->algorithm;
      o->packet_interval = m->packet_interval;
      o->space_interval = m->space_interval;
    }
  }
  return n;
}

size_t ba_flow_decoder_ifnames(const ba_flow_decoder_t *d, ba_flow_ifname_t *out, size_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < d->src_cap; i++) {
    const nf_source_t *s = &d->src[i];
    if (!s->used) continue;
    for (size_t k = 0; k < s->nifnames; k++, n++) {
      if (n >= cap) continue;
      memset(&out[n], 0, sizeof(out[n]));
      memcpy(out[n].exporter, s->addr, 16);
      out[n].domain = s->ifnames[k].domain;
      out[n].ifindex = s->ifnames[k].ifindex;
      memcpy(out[n].name, s->ifnames[k].name, sizeof(out[n].name));
      memcpy(out[n].description, s->ifnames[k].desc, sizeof(out[n].description));
    }
  }
  return n;
}

static uint64_t hash_bytes(const uint8_t *p, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

nf_source_t *nf_source_get(ba_flow_decoder_t *d, const uint8_t ex[16]) {
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
    d->cur = NULL;
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

void nf_set_err(ba_flow_decoder_t *d, const char *fmt, ...) {
  char a[64];
  ba_addr_format(d->cur ? d->cur->addr : (const uint8_t[16]){0}, a, sizeof(a));
  int n = snprintf(d->err, sizeof(d->err), "exporter %s: ", a);
  if (n < 0 || (size_t)n >= sizeof(d->err)) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->err + n, sizeof(d->err) - (size_t)n, fmt, ap);
  va_end(ap);
}

static void copy_str(char *dst, size_t cap, const char *src) {
  size_t n = strlen(src);
  if (n >= cap) n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = 0;
}

void nf_drop(ba_flow_decoder_t *d, ba_ingest_drop_t reason, uint64_t n) {
  d->cur->counts.dropped[reason] += n;
  const char *why = strchr(d->err, ':'); /* without the "exporter X: " prefix */
  why = why ? why + 2 : d->err;
  copy_str(d->cur->last_error, sizeof(d->cur->last_error), why);
  if (d->cur_tmpl) {
    d->cur_tmpl->dropped[reason] += n;
    copy_str(d->cur_tmpl->last_drop, sizeof(d->cur_tmpl->last_drop), why);
  }
}

int nf_out_flush(ba_flow_decoder_t *d) {
  if (!d->nout) return 0;
  size_t n = d->nout;
  d->nout = 0;
  int rc = d->sink_rc ? d->sink_rc : (d->fn ? d->fn(d->ctx, d->out, n) : 0);
  if (rc) {
    d->sink_rc = rc;
    d->cur->counts.dropped[BA_DROP_STORE] += n;
    for (size_t i = 0; i < n; i++)
      if (d->out_tmpl[i]) d->out_tmpl[i]->dropped[BA_DROP_STORE]++;
    nf_set_err(d, "the store refused a batch of %zu records (status %d)", n, rc);
    copy_str(d->cur->last_error, sizeof(d->cur->last_error), d->err);
    return rc;
  }
  d->cur->counts.records += n;
  for (size_t i = 0; i < n; i++)
    if (d->out_tmpl[i]) d->out_tmpl[i]->stored++;
  return 0;
}

ba_record_t *nf_out_next(ba_flow_decoder_t *d) {
  if (d->nout == NF_BATCH) nf_out_flush(d);
  ba_record_t *r = &d->out[d->nout];
  nf_rec_zero(r);
  return r;
}

void nf_out_commit(ba_flow_decoder_t *d) {
  d->out_tmpl[d->nout] = d->cur_tmpl;
  d->nout++;
}

int ba_flow_decode_at(ba_flow_decoder_t *d, const uint8_t exporter[16], uint64_t received_ns, const uint8_t *buf,
                      size_t len, ba_record_sink_fn fn, void *ctx) {
  if (!d || !exporter || (!buf && len)) return BA_ERR_INVALID;
  if (d->cur && d->nout) nf_out_flush(d); /* nothing is left from an earlier call, but be safe */
  d->cur = nf_source_get(d, exporter);
  if (!d->cur) return BA_ERR_NOMEM;
  d->cur_tmpl = NULL;
  d->fn = fn;
  d->ctx = ctx;
  d->sink_rc = 0;
  d->nout = 0;
  d->cur->datagrams_seen++;
  uint16_t ver = len >= 2 ? ba_load_be16(buf) : 0;
  if (ver == 5) nf_decode_v5(d, buf, len, received_ns);
  else if (ver == 9) nf_decode_v9(d, buf, len, received_ns);
  else if (ver == 10) nf_decode_ipfix(d, buf, len, received_ns);
  else if (len >= 4 && ba_load_be32(buf) == 5) nf_decode_sflow(d, buf, len, received_ns);
  else {
    nf_set_err(d, "datagram of %zu bytes with version %u is no NetFlow v5/v9, IPFIX or sFlow v5", len,
               len >= 4 && !ver ? ba_load_be32(buf) : ver);
    nf_drop(d, len < 2 ? BA_DROP_TRUNCATED : BA_DROP_VERSION, 1);
  }
  d->cur_tmpl = NULL;
  if (d->pend_n) nf_pend_scan(d, NULL); /* age out this exporter's held sets */
  nf_out_flush(d);
  int rc = d->sink_rc;
  d->fn = NULL;
  d->ctx = NULL;
  return rc;
}

int ba_flow_decode(ba_flow_decoder_t *d, const uint8_t exporter[16], const uint8_t *buf, size_t len,
                   ba_record_sink_fn fn, void *ctx) {
  return ba_flow_decode_at(d, exporter, 0, buf, len, fn, ctx);
}

void ba_flow_decoder_finish(ba_flow_decoder_t *d) {
  if (!d) return;
  nf_source_t *keep = d->cur;
  nf_pend_drop_all(d);
  d->cur = keep;
}

/* The v9/IPFIX template cache and the held data sets.
 *
 * Templates live in a hash keyed by (exporter, version, source id /
 * observation domain, template id). A template is compiled once into a list
 * of (offset, length, op) for the elements bitarc keeps, so a fixed-length
 * data record is decoded without walking the skipped fields. A withdrawn
 * template keeps its entry (and its report totals) with live = 0; data sets
 * for it are then held like those of a template never seen. Data sets whose
 * template is unknown are copied into a bounded FIFO and decoded when the
 * template arrives, or counted as dropped with the reason. */
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "ingest/flow_internal.h"

static uint64_t hash_bytes(const uint8_t *p, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static size_t tmpl_slot(size_t cap, const uint8_t ex[16], uint8_t ver, uint32_t dom, uint16_t id) {
  uint64_t h = hash_bytes(ex, 16, 0xcbf29ce484222325ull);
  h = (h ^ ver) * 0x100000001b3ull;
  h = (h ^ dom) * 0x100000001b3ull;
  h = (h ^ id) * 0x100000001b3ull;
  h ^= h >> 29;
  return (size_t)(h & (cap - 1));
}

static nf_tmpl_t **tmpl_find(ba_flow_decoder_t *d, const uint8_t ex[16], uint8_t ver, uint32_t dom, uint16_t id) {
  nf_tmpl_t **pp = &d->tab[tmpl_slot(d->tab_cap, ex, ver, dom, id)];
  for (; *pp; pp = &(*pp)->next) {
    nf_tmpl_t *t = *pp;
    if (t->id == id && t->domain == dom && t->version == ver && !memcmp(t->exporter, ex, 16)) return pp;
  }
  return pp;
}

nf_tmpl_t *nf_tmpl_lookup(ba_flow_decoder_t *d, uint8_t ver, uint32_t dom, uint16_t id) {
  return *tmpl_find(d, d->cur->addr, ver, dom, id);
}

static int tmpl_grow(ba_flow_decoder_t *d) {
  size_t ncap = d->tab_cap * 2;
  nf_tmpl_t **nt = ba_calloc(ncap, sizeof(*nt));
  BA_RETURN_IF(!nt, BA_ERR_NOMEM);
  for (size_t i = 0; i < d->tab_cap; i++) {
    nf_tmpl_t *t = d->tab[i];
    while (t) {
      nf_tmpl_t *n = t->next;
      size_t s = tmpl_slot(ncap, t->exporter, t->version, t->domain, t->id);
      t->next = nt[s];
      nt[s] = t;
      t = n;
    }
  }
  ba_free(d->tab);
  d->tab = nt;
  d->tab_cap = ncap;
  return BA_OK;
}

void nf_tmpl_free_all(ba_flow_decoder_t *d) {
  for (size_t i = 0; i < d->tab_cap; i++) {
    nf_tmpl_t *t = d->tab[i];
    while (t) {
      nf_tmpl_t *n = t->next;
      ba_free(t->fields);
      ba_free(t->plan);
      ba_free(t);
      t = n;
    }
    d->tab[i] = NULL;
  }
}

/* Ops per field, the record's minimum length, whether it is variable. */
static uint32_t tmpl_compile(int version, int options, uint16_t nscope, nf_field_t *f, uint16_t n, int *varlen,
                             uint32_t *nplan) {
  uint32_t min_len = 0;
  *varlen = 0;
  *nplan = 0;
  for (uint16_t i = 0; i < n; i++) {
    if (f[i].len == NF_VARLEN) {
      *varlen = 1;
      min_len += 1;
    } else {
      min_len += f[i].len;
    }
    f[i].scope = i < nscope;
    if (options) f[i].op = f[i].pen ? OP_SKIP : nf_option_op(version, f[i].scope, f[i].type, f[i].len);
    else f[i].op = nf_element_op(version, f[i].pen, f[i].type, f[i].len);
    if (f[i].op == OP_SUBTMPL || f[i].op == OP_SUBTMPL_MULTI) *varlen = 1; /* walked field by field */
    if (f[i].op != OP_SKIP) (*nplan)++;
  }
  return min_len;
}

int nf_tmpl_store(ba_flow_decoder_t *d, const nf_hdr_t *h, uint16_t id, int options, uint16_t nscope,
                  nf_field_t *fields, uint16_t nfields) {
  int varlen;
  uint32_t nplan;
  uint32_t min_len = tmpl_compile(h->version, options, nscope, fields, nfields, &varlen, &nplan);
  if (min_len == 0 || min_len > 65535) {
    nf_set_err(d, "%s template %u (domain %u): impossible record length %u", options ? "options" : "data", id,
               h->domain, min_len);
    nf_drop(d, BA_DROP_MALFORMED, 1);
    ba_free(fields);
    return -1;
  }
  nf_plan_t *plan = NULL;
  if (nplan && !varlen) {
    plan = ba_calloc(nplan, sizeof(*plan));
    if (!plan) {
      ba_free(fields);
      return BA_ERR_NOMEM;
    }
    uint32_t off = 0, k = 0;
    for (uint16_t i = 0; i < nfields; i++) {
      if (fields[i].op != OP_SKIP) {
        nf_plan_t *pl = &plan[k++];
        *pl = (nf_plan_t){.off = off, .len = fields[i].len, .op = fields[i].op};
        nf_plain_field(pl->op, pl->len, &pl->roff, &pl->rw);
        pl->kind = nf_plan_kind(pl->op, pl->len, pl->rw);
      }
      off += fields[i].len;
    }
  }
  nf_tmpl_t **pp = tmpl_find(d, d->cur->addr, (uint8_t)h->version, h->domain, id);
  nf_tmpl_t *t = *pp;
  if (!t) {
    t = ba_calloc(1, sizeof(*t));
    if (!t) {
      ba_free(fields);
      ba_free(plan);
      return BA_ERR_NOMEM;
    }
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
  t->nscope = nscope;
  t->options = (uint8_t)options;
  t->varlen = (uint8_t)varlen;
  t->min_len = min_len;
  t->plan = plan;
  t->nplan = plan ? (uint16_t)nplan : 0;
  t->live = 1;
  t->definitions++;
  if (options) CNT(d, options_templates)++;
  else CNT(d, templates)++;
  if (d->tab_n > d->tab_cap) tmpl_grow(d);
  return 0;
}

void nf_tmpl_withdraw(ba_flow_decoder_t *d, const nf_hdr_t *h, uint16_t id, int all) {
  for (size_t i = 0; i < d->tab_cap; i++) {
    for (nf_tmpl_t *t = d->tab[i]; t; t = t->next) {
      if (!t->live || t->domain != h->domain || t->version != h->version || memcmp(t->exporter, d->cur->addr, 16))
        continue;
      if (all ? t->options != (id == 3) : t->id != id) continue;
      t->live = 0;
      CNT(d, template_withdrawals)++;
    }
  }
}

/* ---------- held data sets ---------- */

static void pend_free(ba_flow_decoder_t *d, nf_pending_t *p) {
  d->pend_bytes -= p->len;
  ba_free(p->data);
  p->data = NULL;
}

/* The reason a held set is given up, on its exporter. */
static void pend_count_drop(ba_flow_decoder_t *d, const nf_pending_t *p, const char *why) {
  nf_source_t *keep = d->cur;
  nf_tmpl_t *kt = d->cur_tmpl;
  d->cur = nf_source_get(d, p->exporter);
  if (d->cur) {
    d->cur_tmpl = NULL;
    nf_set_err(d, "data set of %u bytes for template %u (domain %u) dropped: %s", p->len, p->tid, p->domain, why);
    nf_drop(d, BA_DROP_UNKNOWN_TEMPLATE, 1);
  }
  d->cur = keep;
  d->cur_tmpl = kt;
}

static void pend_drop_front(ba_flow_decoder_t *d, const char *why) {
  nf_pending_t *p = &d->pend[d->pend_head];
  pend_count_drop(d, p, why);
  pend_free(d, p);
  d->pend_head = (d->pend_head + 1) % d->pend_cap;
  d->pend_n--;
}

void nf_pend_drop_all(ba_flow_decoder_t *d) {
  while (d->pend_n) pend_drop_front(d, "its template never arrived");
}

void nf_pend_add(ba_flow_decoder_t *d, const nf_hdr_t *h, uint16_t tid, const uint8_t *p, size_t len) {
  if (len > d->o.pending_max_bytes) {
    nf_set_err(d, "data set of %zu bytes for unknown template %u (domain %u) is larger than the hold limit", len,
               tid, h->domain);
    nf_drop(d, BA_DROP_UNKNOWN_TEMPLATE, 1);
    return;
  }
  while (d->pend_n && (d->pend_n >= d->pend_cap || d->pend_bytes + len > d->o.pending_max_bytes))
    pend_drop_front(d, "the hold queue was full");
  uint8_t *copy = ba_malloc(len ? len : 1);
  if (!copy) {
    nf_set_err(d, "no memory to hold a data set for template %u", tid);
    nf_drop(d, BA_DROP_UNKNOWN_TEMPLATE, 1);
    return;
  }
  memcpy(copy, p, len);
  nf_pending_t *e = &d->pend[(d->pend_head + d->pend_n) % d->pend_cap];
  memcpy(e->exporter, d->cur->addr, 16);
  e->domain = h->domain;
  e->tid = tid;
  e->version = (uint8_t)h->version;
  e->export_ns = h->export_ns;
  e->received_ns = h->received_ns;
  e->uptime_ms = h->uptime_ms;
  e->seen_at = d->cur->datagrams_seen;
  e->data = copy;
  e->len = (uint32_t)len;
  d->pend_n++;
  d->pend_bytes += len;
}

/* Decodes (and removes) the held sets a new template answers; drops the ones
 * of this exporter that waited too long. Order of the others is kept. */
void nf_pend_scan(ba_flow_decoder_t *d, const nf_tmpl_t *t) {
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
      nf_hdr_t h = {e->version, e->export_ns, e->received_ns, e->uptime_ms, e->domain};
      nf_data_set(d, &h, (nf_tmpl_t *)t, e->data, e->len);
      CNT(d, late_decoded)++;
      pend_free(d, e);
    } else if (mine && d->cur->datagrams_seen - e->seen_at > d->o.pending_max_age) {
      char why[96];
      snprintf(why, sizeof(why), "no template within %u datagrams", d->o.pending_max_age);
      pend_count_drop(d, e, why);
      pend_free(d, e);
    } else {
      d->pend[w++] = *e;
    }
  }
  d->pend_n = w;
  ba_free(tmp);
}

size_t ba_flow_decoder_templates(const ba_flow_decoder_t *d, ba_flow_template_info_t *out, size_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < d->tab_cap; i++) {
    for (const nf_tmpl_t *t = d->tab[i]; t; t = t->next, n++) {
      if (n >= cap) continue;
      ba_flow_template_info_t *o = &out[n];
      memset(o, 0, sizeof(*o));
      memcpy(o->exporter, t->exporter, 16);
      o->domain = t->domain;
      o->id = t->id;
      o->version = t->version;
      o->options = t->options;
      o->withdrawn = !t->live;
      o->varlen = t->varlen;
      o->fields = t->nfields;
      o->scope_fields = t->nscope;
      o->definitions = t->definitions;
      o->sets = t->sets;
      o->records = t->records;
      o->stored = t->stored;
      memcpy(o->dropped, t->dropped, sizeof(o->dropped));
      memcpy(o->last_drop, t->last_drop, sizeof(o->last_drop));
    }
  }
  return n;
}

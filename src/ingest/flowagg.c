/* Flows from packets: see flowagg.h. An open-addressing table maps each
 * 5-tuple to its latest flow. */
#include "ingest/flowagg.h"

#include <string.h>

#include "common/common.h"

struct ba_flowagg {
  uint64_t idle_ns;
  ba_record_t *flows;
  size_t n, cap;
  size_t *slot; /* flow index + 1 of a tuple's latest flow, 0 = empty */
  size_t nslots; /* a power of two, at least twice the number of tuples */
  size_t ntuples;
};

static int same_tuple(const ba_record_t *a, const ba_record_t *b) {
  return a->src_port == b->src_port && a->dst_port == b->dst_port && a->proto == b->proto &&
         !memcmp(a->src, b->src, 16) && !memcmp(a->dst, b->dst, 16);
}

static uint64_t tuple_hash(const ba_record_t *r) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (int i = 0; i < 16; i++) h = (h ^ r->src[i]) * 1099511628211ull;
  for (int i = 0; i < 16; i++) h = (h ^ r->dst[i]) * 1099511628211ull;
  h = (h ^ r->src_port) * 1099511628211ull;
  h = (h ^ r->dst_port) * 1099511628211ull;
  h = (h ^ r->proto) * 1099511628211ull;
  return h ^ (h >> 29);
}

/* The slot of r's tuple: its latest flow, or the empty slot to use. */
static size_t find_slot(const ba_flowagg_t *a, const ba_record_t *r) {
  size_t j = (size_t)tuple_hash(r) & (a->nslots - 1);
  while (a->slot[j] && !same_tuple(&a->flows[a->slot[j] - 1], r)) j = (j + 1) & (a->nslots - 1);
  return j;
}

static int rehash(ba_flowagg_t *a) {
  size_t n = a->nslots ? 2 * a->nslots : 1024;
  BA_RETURN_IF(n > SIZE_MAX / sizeof(size_t), BA_ERR_NOMEM);
  size_t *old = a->slot, oldn = a->nslots;
  a->slot = (size_t *)ba_calloc(n, sizeof(size_t));
  if (!a->slot) {
    a->slot = old;
    return BA_ERR_NOMEM;
  }
  a->nslots = n;
  for (size_t i = 0; i < oldn; i++)
    if (old[i]) a->slot[find_slot(a, &a->flows[old[i] - 1])] = old[i];
  ba_free(old);
  return BA_OK;
}

int ba_flowagg_create(uint64_t idle_ns, ba_flowagg_t **out) {
  BA_RETURN_IF(!out, BA_ERR_INVALID);
  *out = NULL;
  ba_flowagg_t *a = (ba_flowagg_t *)ba_calloc(1, sizeof *a);
  BA_RETURN_IF(!a, BA_ERR_NOMEM);
  a->idle_ns = idle_ns;
  int rc = rehash(a);
  if (rc < 0) {
    ba_flowagg_free(a);
    return rc;
  }
  *out = a;
  return BA_OK;
}

void ba_flowagg_free(ba_flowagg_t *a) {
  if (!a) return;
  ba_free(a->flows);
  ba_free(a->slot);
  ba_free(a);
}

static int new_flow(ba_flowagg_t *a, const ba_record_t *p, size_t j, int fresh) {
  if (a->n == a->cap) {
    void *f = a->flows;
    BA_FORWARD(ba_grow(&f, &a->cap, a->n + 1, sizeof(ba_record_t)));
    a->flows = (ba_record_t *)f;
  }
  ba_record_t *f = &a->flows[a->n];
  *f = *p;
  f->kind = BA_REC_FLOW;
  f->frame = NULL;
  f->caplen = f->wirelen = 0;
  f->linktype = 0;
  f->last_ns = p->first_ns;
  a->slot[j] = ++a->n;
  if (fresh && ++a->ntuples * 2 > a->nslots) BA_FORWARD(rehash(a));
  return BA_OK;
}

int ba_flowagg_add(ba_flowagg_t *a, const ba_record_t *pkts, size_t n) {
  BA_RETURN_IF(!a || (n && !pkts), BA_ERR_INVALID);
  for (size_t i = 0; i < n; i++) {
    const ba_record_t *p = &pkts[i];
    BA_RETURN_IF(p->kind != BA_REC_PACKET, BA_ERR_INVALID);
    if (!p->ipver) continue;
    size_t j = find_slot(a, p);
    ba_record_t *f = a->slot[j] ? &a->flows[a->slot[j] - 1] : NULL;
    int near = f && p->first_ns <= f->last_ns + a->idle_ns && p->first_ns + a->idle_ns >= f->first_ns;
    if (!near) {
      BA_FORWARD(new_flow(a, p, j, f == NULL));
      continue;
    }
    f->packets += p->packets;
    f->bytes += p->bytes;
    f->tcp_flags |= p->tcp_flags;
    if (p->first_ns > f->last_ns) f->last_ns = p->first_ns;
  }
  return BA_OK;
}

int ba_flowagg_sink(void *a, const ba_record_t *pkts, size_t n) {
  return ba_flowagg_add((ba_flowagg_t *)a, pkts, n);
}

const ba_record_t *ba_flowagg_flows(const ba_flowagg_t *a, size_t *n) {
  if (n) *n = a ? a->n : 0;
  return a ? a->flows : NULL;
}

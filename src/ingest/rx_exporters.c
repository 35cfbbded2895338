/* Per-exporter receive counters of one receive thread, readable by any thread
 * without locks (collector_internal.h). The owner finds an exporter through a
 * private open-addressing index over the entry numbers; the entries live in
 * fixed chunks that never move, so readers can walk them while it grows. */
#include <string.h>

#include "common/common.h"
#include "ingest/collector_internal.h"

void ba_rx_exporters_init(ba_rx_exporters_t *t) {
  memset(t, 0, sizeof(*t));
  for (size_t i = 0; i < BA_RX_EXP_CHUNKS; i++) atomic_init(&t->chunk[i], NULL);
  atomic_init(&t->n, 0);
}

void ba_rx_exporters_free(ba_rx_exporters_t *t) {
  for (size_t i = 0; i < BA_RX_EXP_CHUNKS; i++) ba_free(atomic_load(&t->chunk[i]));
  ba_free(t->hidx);
  memset(t, 0, sizeof(*t));
}

static size_t addr_hash(const uint8_t a[16]) {
  uint64_t x, y;
  memcpy(&x, a, 8);
  memcpy(&y, a + 8, 8);
  uint64_t h = (x * 0x9E3779B97F4A7C15ull) ^ (y * 0xC2B2AE3D27D4EB4Full);
  return (size_t)(h ^ (h >> 29));
}

static ba_rx_exp_t *entry(const ba_rx_exporters_t *t, size_t i) {
  ba_rx_exp_t *c = atomic_load_explicit(&t->chunk[i / BA_RX_EXP_CHUNK], memory_order_acquire);
  return c + i % BA_RX_EXP_CHUNK;
}

/* Rebuilds the private index at twice the size (load stays under 1/2). */
static int rehash(ba_rx_exporters_t *t, size_t n) {
  size_t cap = t->hcap ? t->hcap * 2 : 64;
  uint32_t *h = ba_calloc(cap, sizeof(*h));
  BA_RETURN_IF(!h, BA_ERR_NOMEM);
  for (size_t i = 0; i < n; i++) {
    size_t k = addr_hash(entry(t, i)->addr) & (cap - 1);
    while (h[k]) k = (k + 1) & (cap - 1);
    h[k] = (uint32_t)i + 1;
  }
  ba_free(t->hidx);
  t->hidx = h;
  t->hcap = cap;
  return BA_OK;
}

ba_rx_exp_t *ba_rx_exporters_get(ba_rx_exporters_t *t, const uint8_t addr[16]) {
  if (t->last && memcmp(t->last->addr, addr, 16) == 0) return t->last;
  size_t n = atomic_load_explicit(&t->n, memory_order_relaxed);
  if (t->hcap) {
    for (size_t k = addr_hash(addr) & (t->hcap - 1); t->hidx[k]; k = (k + 1) & (t->hcap - 1)) {
      ba_rx_exp_t *e = entry(t, t->hidx[k] - 1);
      if (memcmp(e->addr, addr, 16) == 0) return t->last = e;
    }
  }
  /* New exporter. */
  if (n >= (size_t)BA_RX_EXP_CHUNK * BA_RX_EXP_CHUNKS) return &t->overflow;
  if ((n + 1) * 2 > t->hcap && rehash(t, n) < 0) return &t->overflow;
  size_t ci = n / BA_RX_EXP_CHUNK;
  if (!atomic_load_explicit(&t->chunk[ci], memory_order_relaxed)) {
    ba_rx_exp_t *c = ba_calloc(BA_RX_EXP_CHUNK, sizeof(*c));
    if (!c) return &t->overflow;
    atomic_store_explicit(&t->chunk[ci], c, memory_order_release);
  }
  ba_rx_exp_t *e = entry(t, n);
  memcpy(e->addr, addr, 16);
  size_t k = addr_hash(addr) & (t->hcap - 1);
  while (t->hidx[k]) k = (k + 1) & (t->hcap - 1);
  t->hidx[k] = (uint32_t)n + 1;
  atomic_store_explicit(&t->n, n + 1, memory_order_release); /* publishes addr */
  return t->last = e;
}

size_t ba_rx_exporters_count(const ba_rx_exporters_t *t) {
  return atomic_load_explicit(&t->n, memory_order_acquire);
}

const ba_rx_exp_t *ba_rx_exporters_at(const ba_rx_exporters_t *t, size_t i) { return entry(t, i); }

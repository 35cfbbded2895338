/* Online (streaming) index builder: Lemire's chunk algorithm as generalised in
 * codecs.md §8. Rows arrive in order; each value present keeps a pending
 * literal of G rows (G = codec word bits - 1) and the chunk it belongs to. A
 * row in a later chunk flushes that literal and appends the gap as one zero
 * run, so a chunk touches only the values occurring in it and absent values
 * cost nothing but a map entry. */
#include <string.h>

#include "common/common.h"
#include "index/index.h"

typedef struct slot {
  int64_t last_group; /* chunk of `pending`, -1 before the first row */
  uint64_t pending;   /* MSB-first literal: row offset o is bit G-1-o */
  ba_bitmap_t *bm;
} slot_t;

struct ba_idx_online {
  ba_codec_t codec;
  unsigned G;
  uint32_t domain;
  uint32_t *map; /* value -> slot index + 1; 0 = absent */
  slot_t *slots;
  size_t nslots, cap;
  uint64_t rows;
  uint64_t group;  /* chunk of row `rows` */
  unsigned off;    /* offset of row `rows` in its chunk */
  int err;
};

void ba_idx_attr_clear(ba_idx_attr_t *a) {
  if (!a) return;
  for (size_t i = 0; i < a->n; i++) ba_bitmap_free(a->bms[i]);
  ba_free(a->bms);
  ba_free(a->values);
  memset(a, 0, sizeof *a);
}

unsigned ba_idx_chunk_rows(ba_codec_t codec) {
  unsigned w = ba_codec_word_bits(codec);
  return w ? w - 1 : 0;
}

int ba_idx_online_create(ba_codec_t codec, uint32_t domain, ba_idx_online_t **out) {
  BA_RETURN_IF(!out || domain == 0 || domain > BA_IDX_MAX_DOMAIN, BA_ERR_INVALID);
  unsigned G = ba_idx_chunk_rows(codec);
  BA_RETURN_IF(G == 0, BA_ERR_INVALID);
  ba_idx_online_t *b = ba_calloc(1, sizeof *b);
  BA_RETURN_IF(!b, BA_ERR_NOMEM);
  b->map = ba_calloc(domain, sizeof *b->map);
  if (!b->map) {
    ba_free(b);
    return BA_ERR_NOMEM;
  }
  b->codec = codec;
  b->G = G;
  b->domain = domain;
  *out = b;
  return BA_OK;
}

void ba_idx_online_free(ba_idx_online_t *b) {
  if (!b) return;
  for (size_t i = 0; i < b->nslots; i++) ba_bitmap_free(b->slots[i].bm);
  ba_free(b->slots);
  ba_free(b->map);
  ba_free(b);
}

uint64_t ba_idx_online_rows(const ba_idx_online_t *b) { return b->rows; }
size_t ba_idx_online_values(const ba_idx_online_t *b) { return b->nslots; }

static int new_slot(ba_idx_online_t *b, uint32_t v, slot_t **out) {
  if (b->nslots == b->cap) {
    void *p = b->slots;
    BA_FORWARD(ba_grow(&p, &b->cap, b->nslots + 1, sizeof(slot_t)));
    b->slots = p;
  }
  slot_t *s = &b->slots[b->nslots];
  BA_FORWARD(ba_bitmap_create(b->codec, &s->bm));
  s->last_group = -1;
  s->pending = 0;
  b->map[v] = (uint32_t)++b->nslots;
  *out = s;
  return BA_OK;
}

/* Flushes s's pending literal and zero-fills up to the start of chunk g. */
static int advance(ba_idx_online_t *b, slot_t *s, uint64_t g) {
  uint64_t done = 0; /* chunks fully described so far */
  if (s->last_group >= 0) {
    BA_FORWARD(ba_bitmap_append_bits(s->bm, s->pending, b->G));
    done = (uint64_t)s->last_group + 1;
  }
  if (g > done) BA_FORWARD(ba_bitmap_append_run(s->bm, 0, (g - done) * b->G));
  s->pending = 0;
  s->last_group = (int64_t)g;
  return BA_OK;
}

int ba_idx_online_add(ba_idx_online_t *b, const uint32_t *vals, size_t n) {
  BA_RETURN_IF(!b || (n && !vals), BA_ERR_INVALID);
  BA_RETURN_IF(b->err, b->err);
  const unsigned G = b->G;
  uint64_t g = b->group;
  unsigned off = b->off;
  const uint32_t dom = b->domain;
  for (size_t i = 0; i < n; i++) {
    /* Large domains (ports) miss the cache on map -> slot -> bitmap, one
     * dependent load after the other: prefetch each link a few rows ahead. */
    if (i + 16 < n && vals[i + 16] < dom) __builtin_prefetch(&b->map[vals[i + 16]]);
    if (i + 8 < n && vals[i + 8] < dom) {
      uint32_t k8 = b->map[vals[i + 8]];
      if (k8) __builtin_prefetch(&b->slots[k8 - 1]);
    }
    if (i + 4 < n && vals[i + 4] < dom) {
      uint32_t k4 = b->map[vals[i + 4]];
      if (k4 && (uint64_t)b->slots[k4 - 1].last_group != g) {
        const char *bp = (const char *)b->slots[k4 - 1].bm;
        __builtin_prefetch(bp);
        __builtin_prefetch(bp + 64);
        __builtin_prefetch(bp + 128);
      }
    }
    uint32_t v = vals[i];
    if (v != BA_IDX_NONE) {
      if (BA_UNLIKELY(v >= b->domain)) {
        b->err = BA_ERR_INVALID;
        return b->err;
      }
      uint32_t k = b->map[v];
      slot_t *s;
      int rc = BA_OK;
      if (BA_UNLIKELY(k == 0)) rc = new_slot(b, v, &s);
      else s = &b->slots[k - 1];
      if (rc == BA_OK && (uint64_t)s->last_group != g) rc = advance(b, s, g);
      if (BA_UNLIKELY(rc < 0)) {
        b->err = rc;
        return rc;
      }
      s->pending |= 1ull << (G - 1 - off);
    }
    if (++off == G) {
      off = 0;
      g++;
    }
  }
  b->group = g;
  b->off = off;
  b->rows += n;
  return BA_OK;
}

int ba_idx_online_finish(ba_idx_online_t *b, ba_idx_attr_t *out) {
  BA_RETURN_IF(!b || !out, BA_ERR_INVALID);
  BA_RETURN_IF(b->err, b->err);
  memset(out, 0, sizeof *out);
  int rc = BA_OK;
  size_t n = b->nslots, k = 0;
  if (n) {
    out->values = ba_malloc(n * sizeof *out->values);
    out->bms = ba_calloc(n, sizeof *out->bms);
    if (!out->values || !out->bms) {
      rc = BA_ERR_NOMEM;
      goto fail;
    }
  }
  /* Ascending values by walking the map. */
  for (uint32_t v = 0; v < b->domain && k < n; v++) {
    if (!b->map[v]) continue;
    slot_t *s = &b->slots[b->map[v] - 1];
    uint64_t start = (uint64_t)s->last_group * b->G;
    uint64_t left = b->rows - start; /* >= 1: the chunk holds a set row */
    unsigned keep = left < b->G ? (unsigned)left : b->G;
    if ((rc = ba_bitmap_append_bits(s->bm, s->pending >> (b->G - keep), keep)) < 0) goto fail;
    if ((rc = ba_bitmap_finish(s->bm, b->rows)) < 0) goto fail;
    out->values[k] = v;
    out->bms[k] = s->bm;
    s->bm = NULL;
    k++;
  }
  out->n = k;
  b->err = BA_ERR_INVALID; /* spent */
  return BA_OK;
fail:
  out->n = k;
  ba_idx_attr_clear(out);
  b->err = rc;
  return rc;
}

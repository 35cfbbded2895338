/* Reference-counted bitmap sets of the planner: none, all rows, or a
 * compressed bitmap shared by reference; the lo/hi pairs (pres_t) every
 * filter node yields; the segment's cache of loaded index bitmaps; and the
 * explain text the planner writes as it goes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/plan_int.h"

void pb_drop(pb_t p) {
  if (p.kind == PB_BM && --p.o->refs == 0) {
    ba_bitmap_free(p.o->bm);
    ba_free(p.o);
  }
}
int pb_wrap(ba_bitmap_t *bm, pb_t *out) {
  pbobj_t *o = ba_malloc(sizeof(*o));
  if (!o) {
    ba_bitmap_free(bm);
    return BA_ERR_NOMEM;
  }
  o->bm = bm;
  o->refs = 1;
  *out = (pb_t){PB_BM, o};
  return 0;
}

void pres_drop(pres_t r) {
  pb_drop(r.lo);
  pb_drop(r.hi);
}

#include <stdarg.h>
void sb_add(sbuf_t *b, const char *fmt, ...) {
  if (b->oom) return;
  va_list ap;
  va_start(ap, fmt);
  char tmp[256];
  int l = vsnprintf(tmp, sizeof(tmp), fmt, ap);
  va_end(ap);
  if (l < 0) return;
  size_t need = b->len + (size_t)l + 1;
  if (need > b->cap && ba_grow((void **)&b->s, &b->cap, need, 1) < 0) {
    b->oom = 1;
    return;
  }
  memcpy(b->s + b->len, tmp, (size_t)l + 1);
  b->len += (size_t)l;
}

void ex_open(segctx_t *c, const char *op) { if (c->ex) sb_add(c->ex, "%s(", op); }
void ex_sep(segctx_t *c) { if (c->ex) sb_add(c->ex, " "); }
void ex_close(segctx_t *c) { if (c->ex) sb_add(c->ex, ")"); }

typedef struct bmcache {
  uint32_t attr, value;
  pb_t p;
} bmcache_t;

int pb_and(segctx_t *c, pb_t a, pb_t b, pb_t *out) {
  if (a.kind == PB_NONE || b.kind == PB_NONE) { *out = pb_none(); return 0; }
  if (a.kind == PB_ALL) { *out = pb_ref(b); return 0; }
  if (b.kind == PB_ALL || pb_same(a, b)) { *out = pb_ref(a); return 0; }
  ba_bitmap_t *r;
  BA_FORWARD(ba_bitmap_and(a.o->bm, b.o->bm, c->codec, &r));
  c->stats->bitmap_ops++;
  return pb_wrap(r, out);
}

int pb_or(segctx_t *c, pb_t a, pb_t b, pb_t *out) {
  if (a.kind == PB_ALL || b.kind == PB_ALL) { *out = pb_all(); return 0; }
  if (a.kind == PB_NONE) { *out = pb_ref(b); return 0; }
  if (b.kind == PB_NONE || pb_same(a, b)) { *out = pb_ref(a); return 0; }
  ba_bitmap_t *r;
  BA_FORWARD(ba_bitmap_or(a.o->bm, b.o->bm, c->codec, &r));
  c->stats->bitmap_ops++;
  return pb_wrap(r, out);
}

int pb_not(segctx_t *c, pb_t a, pb_t *out) {
  if (a.kind == PB_NONE) { *out = pb_all(); return 0; }
  if (a.kind == PB_ALL) { *out = pb_none(); return 0; }
  ba_bitmap_t *r;
  BA_FORWARD(ba_bitmap_not(a.o->bm, c->codec, &r));
  c->stats->bitmap_ops++;
  return pb_wrap(r, out);
}

/* The bitmap of attr == v, loaded once per segment (a filter may name the
 * same octet or port several times: `ip in [...]`, either-side terms). */
int pb_index(segctx_t *c, ba_attr_t attr, uint32_t v, pb_t *out) {
  for (size_t i = 0; i < c->ncache; i++)
    if (c->cache[i].attr == (uint32_t)attr && c->cache[i].value == v) {
      *out = pb_ref(c->cache[i].p);
      return 0;
    }
  ba_bitmap_t *bm;
  BA_FORWARD(ba_segment_index(c->seg, attr, v, &bm));
  pb_t p;
  BA_FORWARD(pb_wrap(bm, &p));
  if (c->ncache == c->cache_cap && ba_grow((void **)&c->cache, &c->cache_cap, c->ncache + 1, sizeof(bmcache_t)) < 0) {
    *out = p; /* uncached */
    return 0;
  }
  c->cache[c->ncache++] = (bmcache_t){(uint32_t)attr, v, pb_ref(p)};
  *out = p;
  return 0;
}

/* a AND the bitmap of attr == v: with the loaded one when the segment's
 * cache has it or direct is 0, else combined as it is read
 * (ba_segment_index_and: a dense literal bitmap is never built), and not
 * cached. Same bitmap and operation count as pb_index then pb_and. */
int pb_and_index(segctx_t *c, pb_t a, ba_attr_t attr, uint32_t v, int direct, pb_t *out) {
  int cached = !direct;
  for (size_t i = 0; i < c->ncache && !cached; i++) cached = c->cache[i].attr == (uint32_t)attr && c->cache[i].value == v;
  if (a.kind != PB_BM || cached) {
    pb_t b;
    BA_FORWARD(pb_index(c, attr, v, &b));
    int rc = pb_and(c, a, b, out);
    pb_drop(b);
    return rc;
  }
  ba_bitmap_t *r;
  BA_FORWARD(ba_segment_index_and(c->seg, attr, v, a.o->bm, &r, NULL));
  c->stats->bitmap_ops++;
  return pb_wrap(r, out);
}

/* The rows of a AND the bitmap of attr == v, counted without building it:
 * with the loaded bitmap when the cache has it, else where it is read. */
int pb_and_index_count(segctx_t *c, const ba_bitmap_t *a, ba_attr_t attr, uint32_t v, uint64_t *count) {
  c->stats->bitmap_ops++;
  for (size_t i = 0; i < c->ncache; i++)
    if (c->cache[i].attr == (uint32_t)attr && c->cache[i].value == v && c->cache[i].p.kind == PB_BM)
      return ba_bitmap_and_count(a, c->cache[i].p.o->bm, count);
  return ba_segment_index_and(c->seg, attr, v, a, NULL, count);
}

void cache_clear(segctx_t *c) {
  for (size_t i = 0; i < c->ncache; i++) pb_drop(c->cache[i].p);
  c->ncache = 0;
}

int pres_and(segctx_t *c, pres_t a, pres_t b, pres_t *out) {
  BA_FORWARD(pb_and(c, a.lo, b.lo, &out->lo));
  if (pb_same(a.lo, a.hi) && pb_same(b.lo, b.hi)) {
    out->hi = pb_ref(out->lo);
    return 0;
  }
  int rc = pb_and(c, a.hi, b.hi, &out->hi);
  if (rc < 0) pb_drop(out->lo);
  return rc;
}

int pres_or(segctx_t *c, pres_t a, pres_t b, pres_t *out) {
  BA_FORWARD(pb_or(c, a.lo, b.lo, &out->lo));
  if (pb_same(a.lo, a.hi) && pb_same(b.lo, b.hi)) {
    out->hi = pb_ref(out->lo);
    return 0;
  }
  int rc = pb_or(c, a.hi, b.hi, &out->hi);
  if (rc < 0) pb_drop(out->lo);
  return rc;
}

/* A v6 prefix shorter than 96 bits may cover ::ffff:0:0/96 (IPv4 rows). */
/* The hi bound is a bitmap without rows: make it (and lo) PB_NONE, so the
 * operands after it are neither loaded nor combined. */
int pres_prune(pres_t *r) {
  if (r->hi.kind != PB_BM || ba_bitmap_size_bytes(r->hi.o->bm) > 512) return 0;
  uint64_t cnt;
  BA_FORWARD(ba_bitmap_count(r->hi.o->bm, &cnt));
  if (cnt == 0) {
    pres_drop(*r);
    *r = pres_exact(pb_none());
  }
  return 0;
}

uint64_t count_pb(pb_t p, uint64_t rows) {
  if (p.kind == PB_NONE) return 0;
  if (p.kind == PB_ALL) return rows;
  uint64_t c = 0;
  ba_bitmap_count(p.o->bm, &c);
  return c;
}

void segctx_free(segctx_t *c) {
  cache_clear(c);
  ba_free(c->cache);
  ba_free(c->vals);
  ba_free(c->lens);
  addrs_free(c);
}


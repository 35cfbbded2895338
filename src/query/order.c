/* Time order for clustered segments (doc/format.md §7.9): their rows are in
 * address-cluster order, so the records a query delivers from one are first
 * gathered (frames copied), sorted by first_ns stably, and then handed to
 * run_sink (residual check, limit, totals) in that order. At most
 * g_order_max records are held: more candidates are delivered in slabs of
 * first-time ranges, one read of the candidates per slab after one read of
 * their first times. Counts, bins and aggregates of column vectors never
 * come here: they need no order. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "query/plan_int.h"

/* Records are held packed: a ba_record_t is 43 words, of which a flow
 * fills a dozen or so (IPv4 addresses in 16 bytes, MACs, MPLS, NAT and most
 * extended fields zero), so a mask of the non-zero words and those words
 * take about a third of the bytes. A broad query holds hundreds of MB of
 * records: the kernel zeroes every fresh page before it is written, then the
 * sort gathers them again, and on this memory those passes cost more than
 * packing (measured in bench/RESULTS.md). */
#define REC_WORDS (sizeof(ba_record_t) / 8)
_Static_assert(sizeof(ba_record_t) % 8 == 0 && sizeof(ba_record_t) / 8 <= 64, "a record packs as <= 64 words");
/* The most one record packs to, plus 64 bytes the vector packer may write
 * beyond its end. */
#define PACK_MAX (8 + sizeof(ba_record_t) + 64)

static size_t rec_pack_scalar(const ba_record_t *r, uint8_t *d) {
  uint64_t w[REC_WORDS], mask = 0;
  memcpy(w, r, sizeof w);
  uint8_t *p = d + 8;
  for (unsigned k = 0; k < REC_WORDS; k++) {
    memcpy(p, &w[k], 8); /* written always, kept when non-zero */
    uint64_t nz = w[k] != 0;
    mask |= nz << k;
    p += 8 * nz;
  }
  memcpy(d, &mask, 8);
  return (size_t)(p - d);
}

static void rec_unpack_scalar(const uint8_t *s, ba_record_t *r) {
  uint64_t w[REC_WORDS] = {0}, mask;
  memcpy(&mask, s, 8);
  s += 8;
  for (; mask; mask &= mask - 1, s += 8) memcpy(&w[__builtin_ctzll(mask)], s, 8); /* the non-zero words */
  memcpy(r, w, sizeof w);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* The same bytes with AVX-512: eight words at a time, their non-zero ones
 * compressed (pack) or expanded back (unpack) by the mask. */
#define REC_FULL (REC_WORDS / 8)
#define REC_TAIL ((__mmask8)((1u << (REC_WORDS % 8)) - 1))
__attribute__((target("avx512f"))) static size_t rec_pack_avx512(const ba_record_t *r, uint8_t *d) {
  const uint8_t *src = (const uint8_t *)r;
  uint8_t *p = d + 8;
  uint64_t mask = 0;
  for (unsigned c = 0; c <= REC_FULL; c++) {
    __m512i v = c < REC_FULL ? _mm512_loadu_si512(src + 64 * c) : _mm512_maskz_loadu_epi64(REC_TAIL, src + 64 * c);
    __mmask8 m = _mm512_test_epi64_mask(v, v);
    _mm512_storeu_si512(p, _mm512_maskz_compress_epi64(m, v)); /* 64 bytes; PACK_MAX leaves room */
    p += 8 * (unsigned)__builtin_popcount(m);
    mask |= (uint64_t)m << (8 * c);
  }
  memcpy(d, &mask, 8);
  return (size_t)(p - d);
}
__attribute__((target("avx512f"))) static void rec_unpack_avx512(const uint8_t *s, ba_record_t *r) {
  uint8_t *dst = (uint8_t *)r;
  uint64_t mask;
  memcpy(&mask, s, 8);
  s += 8;
  for (unsigned c = 0; c <= REC_FULL; c++) {
    __mmask8 m = (__mmask8)(mask >> (8 * c));
    __m512i v = _mm512_maskz_expandloadu_epi64(m, s);
    if (c < REC_FULL) _mm512_storeu_si512(dst + 64 * c, v);
    else _mm512_mask_storeu_epi64(dst + 64 * c, REC_TAIL, v);
    s += 8 * (unsigned)__builtin_popcount(m);
  }
}
static int g_pack_simd = -1; /* -1: not chosen yet; set once by the first tbuf_reserve */
static pthread_once_t g_pack_once = PTHREAD_ONCE_INIT;
static void pack_init(void) {
  __builtin_cpu_init();
  if (g_pack_simd < 0) g_pack_simd = __builtin_cpu_supports("avx512f") ? 1 : 0;
}
#define PACK_SIMD (g_pack_simd > 0)
#else
#define PACK_SIMD 0
#define rec_pack_avx512 rec_pack_scalar
#define rec_unpack_avx512 rec_unpack_scalar
#endif

void query_set_pack_simd(int on) {
#if defined(__x86_64__) && defined(__GNUC__)
  pthread_once(&g_pack_once, pack_init);
  __builtin_cpu_init();
  g_pack_simd = on && __builtin_cpu_supports("avx512f");
#else
  (void)on;
#endif
}

/* Backs pk[0, need) with pages ahead of use: one madvise per MB rather
 * than a page fault per 4 KB (a third of a selective csv query on 10 M
 * flows); 2 MB pages where the kernel allows them for large buffers. An
 * older kernel refuses MADV_POPULATE_WRITE and the pages fault in. */
static void pk_populate(tbuf_t *b, size_t need) {
  if (need <= b->pop) return;
  uintptr_t base = (uintptr_t)b->pk, a = (base + b->pop + 4095) & ~(uintptr_t)4095;
  size_t want = BA_MIN(b->pcap, BA_MAX(need, b->pop + ((size_t)1 << 20)));
  uintptr_t e = (base + want) & ~(uintptr_t)4095;
  if (b->pop == 0 && b->pcap >= (4u << 20)) {
    uintptr_t h = (base + 4095) & ~(uintptr_t)4095, he = (base + b->pcap) & ~(uintptr_t)4095;
    madvise((void *)h, he - h, MADV_HUGEPAGE);
  }
#ifdef MADV_POPULATE_WRITE
  if (e > a) madvise((void *)a, e - a, MADV_POPULATE_WRITE);
#endif
  b->pop = want;
}

static int pk_grow(tbuf_t *b, size_t need) {
  if (need > b->pcap) {
    uint8_t *old = b->pk;
    BA_FORWARD(ba_grow((void **)&b->pk, &b->pcap, need, 1));
    if (b->pk != old) b->pop = 0; /* moved: its pages are as the allocator left them */
  }
  pk_populate(b, need);
  return 0;
}

int tbuf_reserve(tbuf_t *b, uint64_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  pthread_once(&g_pack_once, pack_init);
#endif
  if (n > ((size_t)1 << 40) / sizeof(ba_record_t)) return 0;
  if (2 * n > b->kcap) BA_FORWARD(ba_grow((void **)&b->keys, &b->kcap, (size_t)(2 * n), sizeof *b->keys));
  /* a guess: about 15 non-zero words a flow; more grows the buffer */
  return pk_grow(b, BA_MAX((size_t)n * 128, PACK_MAX));
}

int tbuf_sink(void *ctx, const ba_record_t *recs, size_t n) {
  tbuf_t *b = ctx;
  BA_FORWARD(ba_grow((void **)&b->keys, &b->kcap, 2 * (b->n + n), sizeof *b->keys));
  for (size_t i = 0; i < n; i++) {
    const ba_record_t *r = &recs[i];
    ba_record_t fr;
    if (r->frame) {
      fr = *r;
      fr.frame = NULL;
      if (r->caplen) {
        BA_FORWARD(ba_grow((void **)&b->frames, &b->fcap, b->flen + r->caplen, 1));
        memcpy(b->frames + b->flen, r->frame, r->caplen);
        fr.frame = (const uint8_t *)(uintptr_t)(b->flen + 1); /* offset + 1 until delivery */
        b->flen += r->caplen;
      }
      r = &fr;
    }
    if (b->plen + PACK_MAX > b->pop) BA_FORWARD(pk_grow(b, b->plen + PACK_MAX));
    b->keys[2 * (b->n + i)] = r->first_ns;
    b->keys[2 * (b->n + i) + 1] = b->plen;
    b->plen += PACK_SIMD ? rec_pack_avx512(r, b->pk + b->plen) : rec_pack_scalar(r, b->pk + b->plen);
  }
  b->n += n;
  return 0;
}

/* Records handed to run_sink at once: small enough to stay in the cache and
 * on the heap's reused pages (4,096, 1.4 MB, cost a page fault per 4 KB). */
#define ORDER_BATCH 256

/* The records of b into run_sink, sorted by first time (stable) or as they
 * were gathered; frees b. */
int tbuf_sort(tbuf_t *b) {
  size_t n = b->n;
  if (b->sorted || n < 2) {
    b->sorted = 1;
    return 0;
  }
  uint64_t *tmp = ba_malloc(2 * n * sizeof *tmp);
  BA_RETURN_IF(!tmp, BA_ERR_NOMEM);
  ba_radix_sort(b->keys, tmp, n, 2, 0, 0, 64); /* by first, stable (offsets ascend) */
  ba_free(tmp);
  b->sorted = 1;
  return 0;
}

static int tbuf_out(tbuf_t *b, runctx_t *run, int sorted) {
  size_t n = b->n;
  int rc = 0;
  ba_record_t *batch = n ? ba_malloc(BA_MIN(n, (size_t)ORDER_BATCH) * sizeof *batch) : NULL;
  if (n && !batch) rc = BA_ERR_NOMEM;
  if (rc == 0 && sorted) rc = tbuf_sort(b);
  for (size_t i = 0; rc == 0 && i < n; i += ORDER_BATCH) {
    size_t m = BA_MIN(n - i, (size_t)ORDER_BATCH);
    for (size_t j = 0; j < m; j++) {
      if (i + j + 4 < n) __builtin_prefetch(b->pk + b->keys[2 * (i + j + 4) + 1]);
      ba_record_t *d = &batch[j];
      const uint8_t *src = b->pk + b->keys[2 * (i + j) + 1];
      if (PACK_SIMD) rec_unpack_avx512(src, d);
      else rec_unpack_scalar(src, d);
      if (d->frame) d->frame = b->frames + ((uintptr_t)d->frame - 1);
    }
    rc = run_sink(run, batch, m);
  }
  ba_free(batch);
  tbuf_free(b);
  return rc;
}

int tbuf_deliver(tbuf_t *b, runctx_t *run) { return tbuf_out(b, run, 1); }

int tbuf_deliver_as_read(tbuf_t *b, runctx_t *run) { return tbuf_out(b, run, 0); }

void tbuf_free(tbuf_t *b) {
  ba_free(b->keys);
  ba_free(b->pk);
  ba_free(b->frames);
  memset(b, 0, sizeof *b);
}

/* ---------- bounded: slabs of first-time ranges ---------- */

static uint64_t g_order_max = (uint64_t)1 << 21; /* records held at once: about 720 MB */

void query_set_order_max(uint64_t rows) { g_order_max = rows ? rows : 1; }

typedef struct feed {
  ba_segment_t *seg;
  const ba_bitmap_t *bm; /* NULL: every row */
  uint32_t block_rows;
  int threads;
  uint64_t blocks, damaged;
} feed_t;

static int feed_run(feed_t *f, uint32_t cols, ba_record_sink_fn sink, void *ctx, int count) {
  uint64_t nb = 0, dmg = 0;
  int rc = f->bm ? fetch_rows(f->seg, f->bm, cols, f->block_rows, sink, ctx, f->threads, &nb, &dmg)
                 : ba_segment_scan(f->seg, cols, sink, ctx, &dmg);
  f->blocks += nb;
  if (count) f->damaged += dmg; /* damage counted once, not per pass */
  return rc;
}

typedef struct firsts {
  uint64_t *v;
  size_t n, cap;
} firsts_t;

static int firsts_sink(void *ctx, const ba_record_t *recs, size_t n) {
  firsts_t *f = ctx;
  BA_FORWARD(ba_grow((void **)&f->v, &f->cap, f->n + n, sizeof *f->v));
  for (size_t i = 0; i < n; i++) f->v[f->n + i] = recs[i].first_ns;
  f->n += n;
  return 0;
}

typedef struct slab {
  tbuf_t tb;
  uint64_t lo, hi; /* first times [lo, hi), or [lo, max] when last */
  int last;
} slab_t;

static int slab_sink(void *ctx, const ba_record_t *recs, size_t n) {
  slab_t *s = ctx;
  size_t i = 0;
  while (i < n) {
    size_t j = i;
    while (j < n && recs[j].first_ns >= s->lo && (s->last || recs[j].first_ns < s->hi)) j++;
    if (j > i) BA_FORWARD(tbuf_sink(&s->tb, recs + i, j - i));
    i = j + (j < n); /* skip one outside the slab */
  }
  return 0;
}

int deliver_clustered(ba_segment_t *seg, const ba_bitmap_t *bm, uint64_t ncand, uint32_t cols, uint32_t block_rows,
                      int threads, runctx_t *run, uint64_t *blocks, uint64_t *damaged) {
  feed_t f = {seg, bm, block_rows, threads, 0, 0};
  int rc;
  if (ncand <= g_order_max) {
    tbuf_t tb = {0};
    rc = tbuf_reserve(&tb, ncand);
    if (rc == 0) rc = feed_run(&f, cols, tbuf_sink, &tb, 1);
    if (rc == 0) rc = tbuf_deliver(&tb, run);
    tbuf_free(&tb);
  } else {
    firsts_t fs = {0};
    uint64_t *tmp = NULL;
    rc = feed_run(&f, BA_COL_FIRST, firsts_sink, &fs, 1);
    if (rc == 0 && fs.n && !(tmp = ba_malloc(fs.n * sizeof *tmp))) rc = BA_ERR_NOMEM;
    if (rc == 0) ba_radix_sort(fs.v, tmp, fs.n, 1, 0, 0, 64);
    ba_free(tmp);
    for (size_t start = 0; rc == 0 && start < fs.n;) {
      size_t end = BA_MIN(start + (size_t)g_order_max, fs.n);
      while (end < fs.n && fs.v[end] == fs.v[end - 1]) end++; /* equal first times stay in one slab */
      slab_t s = {.lo = fs.v[start], .hi = end < fs.n ? fs.v[end] : 0, .last = end == fs.n};
      rc = tbuf_reserve(&s.tb, end - start);
      if (rc == 0) rc = feed_run(&f, cols, slab_sink, &s, 0);
      if (rc == 0) rc = tbuf_deliver(&s.tb, run);
      tbuf_free(&s.tb);
      start = end;
    }
    ba_free(fs.v);
  }
  *blocks += f.blocks;
  *damaged += f.damaged;
  return rc;
}

/* reorder/: the oLSH buffer against a naive model of Program 1 (arrays,
 * a real insertion sort, a linear longest-chain scan) and of the sorted purge
 * (BA_OLSH_PURGE_SORTED: qsort of the whole buffer), plus the properties the
 * store relies on: every record out exactly once with its frame, the memory
 * bounds (records, frame bytes, allocated bytes) at every push, determinism,
 * and the LSH property itself (near records collide, far ones rarely). */
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include "testsupport.h"
#include "common/common.h"
#include "reorder/olsh.h"

/* ---------- allocation accounting (size header in front of each block) ---------- */

static size_t g_live, g_peak;
#define HDR 16
static void *acc_malloc(size_t n) {
  uint8_t *p = malloc(n + HDR);
  if (!p) return NULL;
  memcpy(p, &n, sizeof n);
  g_live += n;
  if (g_live > g_peak) g_peak = g_live;
  return p + HDR;
}
static void *acc_calloc(size_t n, size_t sz) {
  void *p = acc_malloc(n * sz);
  if (p) memset(p, 0, n * sz);
  return p;
}
static void acc_free(void *q) {
  if (!q) return;
  uint8_t *p = (uint8_t *)q - HDR;
  size_t n;
  memcpy(&n, p, sizeof n);
  g_live -= n;
  free(p);
}
static void *acc_realloc(void *q, size_t n) {
  if (!q) return acc_malloc(n);
  uint8_t *p = (uint8_t *)q - HDR;
  size_t old;
  memcpy(&old, p, sizeof old);
  /* Count the moment both blocks exist, as a real realloc may. */
  g_live += n;
  if (g_live > g_peak) g_peak = g_live;
  g_live -= n;
  uint8_t *r = realloc(p, n + HDR);
  if (!r) return NULL;
  memcpy(r, &n, sizeof n);
  g_live = g_live - old + n;
  if (g_live > g_peak) g_peak = g_live;
  return r + HDR;
}
static const ba_alloc_hooks_t acc_hooks = {acc_malloc, acc_calloc, acc_realloc, acc_free};

/* ---------- streams ---------- */

typedef enum { S_ZIPF, S_DISTINCT, S_SAME, S_PACKETS, S_BIGFRAMES } stream_kind;

typedef struct {
  ba_record_t *r;
  uint8_t **frames;
  size_t n;
} stream;

static uint64_t mix(uint64_t x) {
  x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull; x ^= x >> 33;
  return x;
}

/* Record i carries its id in `bytes` (unique), so outputs map back to inputs. */
static stream make_stream(stream_kind k, size_t n, uint64_t seed) {
  stream s = {calloc(n, sizeof(ba_record_t)), calloc(n, sizeof(uint8_t *)), n};
  ba_rng_t rng;
  ba_rng_seed(&rng, seed);
  for (size_t i = 0; i < n; i++) {
    ba_record_t *r = &s.r[i];
    r->kind = BA_REC_FLOW;
    r->ipver = 4;
    r->first_ns = r->last_ns = 1700000000000000000ull + i * 1000;
    r->packets = 1 + ba_rng_below(&rng, 10);
    r->bytes = i;
    uint32_t sip, dip;
    uint16_t sp, dp;
    uint8_t proto;
    switch (k) {
      case S_DISTINCT: { /* every 5-tuple different and spread over all of the space */
        uint64_t h = mix(i * 2 + seed);
        sip = (uint32_t)h; dip = (uint32_t)(h >> 32);
        sp = (uint16_t)mix(h); dp = (uint16_t)(mix(h) >> 16); proto = (uint8_t)(mix(h) >> 40);
        break;
      }
      case S_SAME:
        sip = 0x0A000001; dip = 0x0A000002; sp = 40000; dp = 443; proto = 6;
        break;
      default: { /* skewed hosts and services, ephemeral client ports */
        static const uint16_t svc[] = {80, 443, 53, 22, 25, 123, 445, 3389};
        sip = 0x0A040000u | (uint32_t)ba_rng_zipf(&rng, 4096, 1.1);
        dip = 0xC0A80000u | (uint32_t)ba_rng_zipf(&rng, 512, 1.2);
        sp = (uint16_t)(32768 + ba_rng_below(&rng, 28000));
        dp = svc[ba_rng_zipf(&rng, 8, 1.0)];
        proto = dp == 53 || dp == 123 ? 17 : 6;
        break;
      }
    }
    ba_addr_set_v4(r->src, sip);
    ba_addr_set_v4(r->dst, dip);
    r->src_port = sp;
    r->dst_port = dp;
    r->proto = proto;
    if (k == S_PACKETS || k == S_BIGFRAMES) {
      r->kind = BA_REC_PACKET;
      r->packets = 1;
      r->linktype = 1;
      uint32_t len = k == S_BIGFRAMES && ba_rng_below(&rng, 8) == 0 ? (uint32_t)(3000 + ba_rng_below(&rng, 70000))
                                                                   : (uint32_t)(ba_rng_below(&rng, 1515));
      if (i % 97 == 5) len = 0; /* packets without a captured byte */
      r->caplen = len;
      r->wirelen = len + 4;
      s.frames[i] = malloc(len ? len : 1);
      for (uint32_t b = 0; b < len; b++) s.frames[i][b] = (uint8_t)mix(i * 131 + b);
      r->frame = s.frames[i];
    }
  }
  return s;
}

static void free_stream(stream *s) {
  for (size_t i = 0; i < s->n; i++) free(s->frames[i]);
  free(s->frames);
  free(s->r);
}

/* ---------- a sink that checks and records ---------- */

typedef struct {
  const stream *in;
  ba_olsh_t *h;
  const ba_olsh_opts_t *o;
  uint64_t *order; /* ids in emission order */
  size_t n, cap;
  uint8_t *seen;
  size_t calls;
  int fail_at;     /* return non-zero on this call (1-based), 0 = never */
} sink;

static int sink_fn(void *ctx, const ba_record_t *recs, size_t n) {
  sink *k = ctx;
  k->calls++;
  assert_true(n >= 1);
  for (size_t i = 0; i < n; i++) {
    uint64_t id = recs[i].bytes;
    assert_true(id < k->in->n);
    assert_int_equal(k->seen[id], 0); /* never twice */
    k->seen[id] = 1;
    const ba_record_t *want = &k->in->r[id];
    ba_record_t a = recs[i], b = *want;
    a.frame = b.frame = NULL;
    assert_memory_equal(&a, &b, sizeof a);
    if (want->frame && want->caplen) {
      assert_non_null(recs[i].frame);
      assert_memory_equal(recs[i].frame, want->frame, want->caplen);
    }
    if (k->n == k->cap) {
      k->cap = k->cap ? 2 * k->cap : 1024;
      k->order = realloc(k->order, k->cap * sizeof *k->order);
    }
    k->order[k->n++] = id;
  }
  if (k->fail_at && (int)k->calls == k->fail_at) return 77;
  return 0;
}

/* Pushes the stream in uneven batches, checking the bounds after every push. */
static void run(const stream *s, const ba_olsh_opts_t *o, sink *k, uint64_t batch_seed) {
  ba_olsh_t *h;
  assert_int_equal(ba_olsh_create(o, &h), BA_OK);
  memset(k, 0, sizeof *k);
  k->in = s;
  k->h = h;
  k->o = o;
  k->seen = calloc(s->n ? s->n : 1, 1);
  ba_rng_t rng;
  ba_rng_seed(&rng, batch_seed);
  size_t bound = ba_olsh_mem_bound(o);
  for (size_t i = 0; i < s->n;) {
    size_t m = 1 + ba_rng_below(&rng, 40);
    if (m > s->n - i) m = s->n - i;
    /* push one at a time sometimes, so the bound is checked at every record */
    if (ba_rng_below(&rng, 2)) m = 1;
    assert_int_equal(ba_olsh_push(h, &s->r[i], m, sink_fn, k), 0);
    i += m;
    assert_true(ba_olsh_buffered(h) <= o->mmax);
    assert_true(ba_olsh_buffered_frame_bytes(h) <= o->frame_bytes);
    assert_true(ba_olsh_mem_bytes(h) <= bound);
    assert_int_equal(ba_olsh_buffered(h) + k->n, i);
  }
  assert_int_equal(ba_olsh_flush(h, sink_fn, k), 0);
  assert_int_equal(ba_olsh_buffered(h), 0);
  assert_int_equal(ba_olsh_buffered_frame_bytes(h), 0);
  assert_int_equal(k->n, s->n); /* with `seen`: every record exactly once */
  ba_olsh_stats_t st;
  ba_olsh_get_stats(h, &st);
  assert_true(st.pushed == s->n && st.emitted == s->n && st.batches == k->calls);
  ba_olsh_free(h);
  free(k->seen);
}

/* ---------- the naive model of Program 1 ---------- */

typedef struct {
  uint64_t *id;
  uint32_t *key;
  size_t len, cap;
  uint64_t stamp;
} mchain;

typedef struct {
  mchain *c;
  uint32_t p;
  size_t count;
  uint64_t clock;
  uint64_t *out;
  size_t nout;
  const stream *s;
  uint32_t order; /* chain_order */
} model;

/* The chain-order keys on IPv4 streams, without the arrival:
 * BA_OLSH_ORDER_TUPLE (src, dst, dst port, protocol),
 * BA_OLSH_ORDER_DST (dst, src, dst port, src port). */
static const stream *g_cmp_stream;
static uint32_t g_cmp_order;
static int cmp_key(uint64_t ia, uint64_t ib) {
  const ba_record_t *a = &g_cmp_stream->r[ia], *b = &g_cmp_stream->r[ib];
  int dst = g_cmp_order == BA_OLSH_ORDER_DST;
  int c = memcmp((dst ? a->dst : a->src) + 12, (dst ? b->dst : b->src) + 12, 4);
  if (!c) c = memcmp((dst ? a->src : a->dst) + 12, (dst ? b->src : b->dst) + 12, 4);
  if (!c) c = (a->dst_port > b->dst_port) - (a->dst_port < b->dst_port);
  if (!c && dst) c = (a->src_port > b->src_port) - (a->src_port < b->src_port);
  if (!c && !dst) c = (a->proto > b->proto) - (a->proto < b->proto);
  return c;
}
/* The key, then arrival. */
static int cmp_key_arrival(const void *pa, const void *pb) {
  uint64_t ia = *(const uint64_t *)pa, ib = *(const uint64_t *)pb;
  int c = cmp_key(ia, ib);
  return c ? c : (ia > ib) - (ia < ib);
}

static void model_emit(model *m, uint32_t c) {
  g_cmp_stream = m->s;
  g_cmp_order = m->order;
  if (m->order != BA_OLSH_ORDER_H2) qsort(m->c[c].id, m->c[c].len, sizeof *m->c[c].id, cmp_key_arrival);
  for (size_t i = 0; i < m->c[c].len; i++) m->out[m->nout++] = m->c[c].id[i];
  m->count -= m->c[c].len;
  m->c[c].len = 0;
}

static uint32_t model_longest(const model *m) {
  uint32_t best = UINT32_MAX;
  for (uint32_t c = 0; c < m->p; c++) {
    if (!m->c[c].len) continue;
    if (best == UINT32_MAX || m->c[c].len > m->c[best].len ||
        (m->c[c].len == m->c[best].len && m->c[c].stamp > m->c[best].stamp))
      best = c;
  }
  return best;
}

static void model_run(const stream *s, const ba_olsh_opts_t *o, uint64_t *out) {
  ba_olsh_t *h;
  assert_int_equal(ba_olsh_create(o, &h), BA_OK);
  model m = {calloc(o->nchains, sizeof(mchain)), o->nchains, 0, 0, out, 0, s, o->chain_order};
  for (size_t i = 0; i < s->n; i++) {
    uint32_t h1, h2;
    ba_olsh_hash(h, &s->r[i], &h1, &h2);
    assert_true(h1 < o->nchains && h2 < o->q);
    mchain *c = &m.c[h1];
    if (c->len == c->cap) {
      c->cap = c->cap ? 2 * c->cap : 8;
      c->id = realloc(c->id, c->cap * sizeof *c->id);
      c->key = realloc(c->key, c->cap * sizeof *c->key);
    }
    /* InsertionSort: after every element with a key <= h2 */
    size_t j = c->len;
    while (j > 0 && c->key[j - 1] > h2) {
      c->key[j] = c->key[j - 1];
      c->id[j] = c->id[j - 1];
      j--;
    }
    c->key[j] = h2;
    c->id[j] = i;
    c->len++;
    c->stamp = ++m.clock;
    m.count++;
    if (c->len > o->max_block) model_emit(&m, h1);
    if (m.count > o->mmax) {
      do model_emit(&m, model_longest(&m));
      while (m.count > o->mmin);
    }
  }
  while (m.count) model_emit(&m, model_longest(&m));
  assert_int_equal(m.nout, s->n);
  for (uint32_t c = 0; c < o->nchains; c++) {
    free(m.c[c].id);
    free(m.c[c].key);
  }
  free(m.c);
  ba_olsh_free(h);
}

/* Runs the stream through oLSH with options o and fails at the first output
 * that differs from the naive model's order (what names the model). */
static void expect_model_order(const stream *s, const ba_olsh_opts_t *o, uint64_t seed,
                               void (*model_fn)(const stream *, const ba_olsh_opts_t *, uint64_t *), const char *what) {
  sink k;
  run(s, o, &k, seed);
  uint64_t *want = malloc((s->n ? s->n : 1) * sizeof *want);
  assert_non_null(want);
  model_fn(s, o, want);
  for (size_t i = 0; i < s->n; i++)
    if (k.order[i] != want[i])
      fail_msg("order differs from %s at output %zu (P=%u maxBlock=%u MMax=%u MMin=%u, chain order %u)", what, i,
               o->nchains, o->max_block, o->mmax, o->mmin, o->chain_order);
  free(want);
  free(k.order);
}

static void check_against_model(stream_kind kind, size_t n, uint32_t p, uint32_t maxb, uint32_t mmax, uint32_t mmin,
                                double w, uint32_t q, uint64_t seed) {
  stream s = make_stream(kind, n, seed);
  ba_olsh_opts_t o;
  ba_olsh_opts_init(&o);
  o.nchains = p;
  o.max_block = maxb;
  o.mmax = mmax;
  o.mmin = mmin;
  o.width = w;
  o.q = q;
  o.seed = seed * 7 + 1;
  o.purge = BA_OLSH_PURGE_LONGEST;
  if (seed % 2) /* odd seeds: the paper's raw vector (every weight 1) */
    for (int d = 0; d < 11; d++) o.weight[d] = 1.0;
  for (uint32_t order = BA_OLSH_ORDER_H2; order <= BA_OLSH_ORDER_DST; order++) {
    o.chain_order = order;
    expect_model_order(&s, &o, seed, model_run, "Program 1");
  }
  free_stream(&s);
}

static void test_matches_program1(void **state) {
  (void)state;
  /* kind, n, P, maxBlockSize, MMax, MMin, W, Q, seed */
  check_against_model(S_ZIPF, 20000, 64, 500, 3000, 1500, 1000.0, 1u << 30, 1);
  check_against_model(S_ZIPF, 20000, 64, 50, 3000, 2999, 200.0, 1000, 2);   /* MMin = MMax - 1 */
  check_against_model(S_ZIPF, 5000, 1, 4000, 100, 0, 1000.0, 7, 3);         /* one chain, tiny Q */
  check_against_model(S_ZIPF, 5000, 1000, 1, 10, 5, 50.0, 1u << 30, 4);     /* maxBlockSize 1 */
  check_against_model(S_DISTINCT, 20000, 97, 100, 2000, 100, 1000.0, 1u << 20, 5);
  check_against_model(S_DISTINCT, 3000, 4096, 4000, 1, 0, 1000.0, 1u << 30, 6); /* MMax 1 */
  check_against_model(S_SAME, 10000, 64, 4000, 100000, 50000, 1000.0, 1u << 30, 7); /* one hot chain */
  check_against_model(S_SAME, 3000, 8, 5000, 1000, 10, 1000.0, 1u << 30, 8);   /* maxBlock > MMax */
  check_against_model(S_PACKETS, 8000, 128, 300, 2000, 1000, 700.0, 1u << 30, 9);
  check_against_model(S_ZIPF, 0, 16, 10, 10, 5, 1000.0, 10, 10);               /* empty stream */
}

/* ---------- the naive model of the sorted purge ---------- */

/* Chains as arrays in arrival order; a chain longer than maxBlockSize leaves
 * sorted by the chain order (ties in arrival order); more than MMax records,
 * and the flush, empty the buffer: every record sorted by the chain order,
 * ties by chain number, then arrival. */
static const uint32_t *g_cmp_chain;
/* The key, then the chain number, then arrival. */
static int cmp_purge(const void *pa, const void *pb) {
  uint64_t ia = *(const uint64_t *)pa, ib = *(const uint64_t *)pb;
  int c = cmp_key(ia, ib);
  if (!c) c = (g_cmp_chain[ia] > g_cmp_chain[ib]) - (g_cmp_chain[ia] < g_cmp_chain[ib]);
  return c ? c : (ia > ib) - (ia < ib);
}

static void sorted_model_run(const stream *s, const ba_olsh_opts_t *o, uint64_t *out) {
  ba_olsh_t *h;
  assert_int_equal(ba_olsh_create(o, &h), BA_OK);
  uint32_t *chain = malloc((s->n ? s->n : 1) * sizeof *chain);
  size_t *len = calloc(o->nchains, sizeof *len);
  uint64_t *buf = malloc((s->n ? s->n : 1) * sizeof *buf); /* buffered ids, arrival order */
  size_t nbuf = 0, nout = 0;
  g_cmp_stream = s;
  g_cmp_chain = chain;
  g_cmp_order = o->chain_order;
  for (size_t i = 0; i <= s->n; i++) {
    int purge = i == s->n;
    if (i < s->n) {
      uint32_t h1, h2;
      ba_olsh_hash(h, &s->r[i], &h1, &h2);
      chain[i] = h1;
      buf[nbuf++] = i;
      if (++len[h1] > o->max_block) { /* the chain alone, in key order */
        size_t start = nout, k = 0;
        for (size_t j = 0; j < nbuf; j++)
          if (chain[buf[j]] == h1) out[nout++] = buf[j];
          else buf[k++] = buf[j];
        nbuf = k;
        len[h1] = 0;
        qsort(out + start, nout - start, sizeof *out, cmp_key_arrival);
      }
      purge = nbuf > o->mmax;
    }
    if (purge && nbuf) {
      qsort(buf, nbuf, sizeof *buf, cmp_purge);
      memcpy(out + nout, buf, nbuf * sizeof *buf);
      nout += nbuf;
      nbuf = 0;
      memset(len, 0, o->nchains * sizeof *len);
    }
  }
  assert_int_equal(nout, s->n);
  free(chain);
  free(len);
  free(buf);
  ba_olsh_free(h);
}

static void check_sorted_purge(stream_kind kind, size_t n, uint32_t p, uint32_t maxb, uint32_t mmax, uint64_t seed) {
  stream s = make_stream(kind, n, seed);
  ba_olsh_opts_t o;
  ba_olsh_opts_init(&o);
  assert_int_equal(o.purge, BA_OLSH_PURGE_SORTED); /* the default */
  o.nchains = p;
  o.max_block = maxb;
  o.mmax = mmax;
  o.mmin = mmax / 2;
  o.seed = seed * 5 + 3;
  for (uint32_t order = BA_OLSH_ORDER_TUPLE; order <= BA_OLSH_ORDER_DST; order++) {
    o.chain_order = order;
    expect_model_order(&s, &o, seed, sorted_model_run, "the sorted purge");
  }
  free_stream(&s);
}

static void test_sorted_purge(void **state) {
  (void)state;
  /* kind, n, P, maxBlockSize, MMax, seed */
  check_sorted_purge(S_ZIPF, 20000, 64, 500, 3000, 11);
  check_sorted_purge(S_ZIPF, 20000, 1024, 300000, 7000, 12);    /* the default maxBlockSize */
  check_sorted_purge(S_DISTINCT, 10000, 97, 100, 2000, 13);
  check_sorted_purge(S_SAME, 50000, 8, 20000, 40000, 14);       /* chains of 20001 leave in two batches */
  check_sorted_purge(S_PACKETS, 8000, 128, 4000, 1, 15);        /* MMax 1 */
  check_sorted_purge(S_ZIPF, 0, 16, 10, 10, 16);                /* empty stream */
}

/* Frames: every byte comes back; the arena stays within its budget, big
 * frames pass through, compaction and frame-driven eviction happen. */
static void test_frames_budget(void **state) {
  (void)state;
  for (int round = 0; round < 3; round++) {
    stream s = make_stream(round == 0 ? S_PACKETS : S_BIGFRAMES, 12000, 100 + (uint64_t)round);
    ba_olsh_opts_t o;
    ba_olsh_opts_init(&o);
    o.nchains = 256;
    o.mmax = 5000;
    o.mmin = 2500;
    o.frame_bytes = round == 2 ? 65536 : 400000;
    sink k;
    run(&s, &o, &k, 200 + (uint64_t)round);
    free(k.order);
    ba_olsh_t *h;
    assert_int_equal(ba_olsh_create(&o, &h), BA_OK);
    k = (sink){.in = &s, .seen = calloc(s.n, 1)};
    assert_int_equal(ba_olsh_push(h, s.r, s.n, sink_fn, &k), 0);
    assert_int_equal(ba_olsh_flush(h, sink_fn, &k), 0);
    ba_olsh_stats_t st;
    ba_olsh_get_stats(h, &st);
    assert_true(st.compactions > 0);
    assert_true(st.frame_chains > 0);
    if (round == 2) assert_true(st.passthrough > 0);
    assert_int_equal(k.n, s.n);
    ba_olsh_free(h);
    free(k.seen);
    free(k.order);
    free_stream(&s);
  }
}

/* Allocated bytes never exceed ba_olsh_mem_bound, whatever the stream. */
static void test_alloc_bound(void **state) {
  (void)state;
  static const stream_kind kinds[] = {S_DISTINCT, S_SAME, S_BIGFRAMES, S_ZIPF};
  for (size_t i = 0; i < BA_ARRAY_LEN(kinds); i++) {
    stream s = make_stream(kinds[i], 30000, 300 + i);
    ba_olsh_opts_t o;
    ba_olsh_opts_init(&o);
    o.mmax = 4000;
    o.mmin = 1000;
    o.frame_bytes = 1 << 20;
    /* maxBlockSize 100: the sort arrays start at 101 entries and grow to MMax + 1 */
    if (i % 2) o.max_block = 100;
    size_t bound = ba_olsh_mem_bound(&o);
    assert_true(bound > 0);
    g_live = g_peak = 0;
    ba_set_alloc_hooks(&acc_hooks);
    ba_olsh_t *h;
    assert_int_equal(ba_olsh_create(&o, &h), BA_OK);
    sink k = {.in = &s, .seen = calloc(s.n, 1)};
    for (size_t j = 0; j < s.n; j++) {
      assert_int_equal(ba_olsh_push(h, &s.r[j], 1, sink_fn, &k), 0);
      assert_true(ba_olsh_buffered(h) <= o.mmax);
      assert_true(g_live <= bound);
      assert_int_equal(ba_olsh_mem_bytes(h), g_live);
    }
    assert_int_equal(ba_olsh_flush(h, sink_fn, &k), 0);
    ba_olsh_free(h);
    ba_set_alloc_hooks(NULL);
    assert_int_equal(g_live, 0);
    assert_true(g_peak <= bound);
    assert_int_equal(k.n, s.n);
    free(k.seen);
    free(k.order);
    free_stream(&s);
  }
}

static void test_deterministic(void **state) {
  (void)state;
  stream s = make_stream(S_PACKETS, 20000, 400);
  ba_olsh_opts_t o;
  ba_olsh_opts_init(&o);
  o.mmax = 3000;
  o.mmin = 1000;
  o.nchains = 200;
  o.max_block = 200; /* chains leave early: the LSH (and its seed) decides which */
  sink k1, k2, k3;
  run(&s, &o, &k1, 1);
  run(&s, &o, &k2, 2); /* different push batching, same order */
  assert_int_equal(k1.n, k2.n);
  assert_memory_equal(k1.order, k2.order, k1.n * sizeof *k1.order);
  /* The reordering is not the identity, and a different seed gives another one. */
  size_t moved = 0;
  for (size_t i = 0; i < k1.n; i++) moved += k1.order[i] != i;
  assert_true(moved > k1.n / 2);
  o.seed ^= 0x55;
  run(&s, &o, &k3, 1);
  assert_true(memcmp(k1.order, k3.order, k1.n * sizeof *k1.order) != 0);
  free(k1.order);
  free(k2.order);
  free(k3.order);
  free_stream(&s);
}

/* The LSH property: records one port or one address byte apart share H1 far
 * more often than unrelated records (which should collide about 1/P). */
static void test_locality(void **state) {
  (void)state;
  ba_olsh_opts_t o;
  ba_olsh_opts_init(&o);
  ba_olsh_t *h;
  assert_int_equal(ba_olsh_create(&o, &h), BA_OK);
  stream s = make_stream(S_DISTINCT, 4000, 500);
  size_t near = 0, far = 0;
  for (size_t i = 0; i + 1 < s.n; i++) {
    ba_record_t a = s.r[i], b = a;
    b.dst[15] ^= 1;
    b.src_port = (uint16_t)(b.src_port + 1);
    uint32_t a1, a2, b1, b2, c1, c2;
    ba_olsh_hash(h, &a, &a1, &a2);
    ba_olsh_hash(h, &b, &b1, &b2);
    ba_olsh_hash(h, &s.r[i + 1], &c1, &c2);
    near += a1 == b1;
    far += a1 == c1;
  }
  assert_true(near > s.n / 2);
  assert_true(far < s.n / 50);
  free_stream(&s);
  ba_olsh_free(h);
}

static void test_sink_error_and_invalid(void **state) {
  (void)state;
  ba_olsh_opts_t o;
  ba_olsh_opts_init(&o);
  ba_olsh_t *h = NULL;
  ba_olsh_opts_t bad = o;
  bad.mmin = bad.mmax;
  assert_int_equal(ba_olsh_create(&bad, &h), BA_ERR_INVALID);
  assert_null(h);
  assert_int_equal(ba_olsh_mem_bound(&bad), 0);
  bad = o; bad.nchains = 0;
  assert_int_equal(ba_olsh_create(&bad, &h), BA_ERR_INVALID);
  bad = o; bad.width = 0.0;
  assert_int_equal(ba_olsh_create(&bad, &h), BA_ERR_INVALID);
  bad = o; bad.nfuncs = 0;
  assert_int_equal(ba_olsh_create(&bad, &h), BA_ERR_INVALID);
  bad = o; bad.q = 0;
  assert_int_equal(ba_olsh_create(&bad, &h), BA_ERR_INVALID);
  bad = o; bad.weight[3] = -1.0;
  assert_int_equal(ba_olsh_create(&bad, &h), BA_ERR_INVALID);
  bad = o; bad.chain_order = BA_OLSH_ORDER_H2; /* the sorted purge needs a key order */
  assert_int_equal(ba_olsh_create(&bad, &h), BA_ERR_INVALID);
  bad.purge = BA_OLSH_PURGE_LONGEST;
  assert_int_equal(ba_olsh_create(&bad, &h), BA_OK);
  ba_olsh_free(h);
  bad = o; bad.purge = 2;
  assert_int_equal(ba_olsh_create(&bad, &h), BA_ERR_INVALID);
  ba_olsh_free(NULL);

  /* A failing sink stops the push and its code comes back; the handle stays usable. */
  stream s = make_stream(S_SAME, 1000, 600);
  o.max_block = 10;
  assert_int_equal(ba_olsh_create(&o, &h), BA_OK);
  sink k = {.in = &s, .seen = calloc(s.n, 1), .fail_at = 3};
  assert_int_equal(ba_olsh_push(h, s.r, s.n, sink_fn, &k), 77);
  assert_int_equal(k.n, 33); /* three chains of maxBlockSize + 1 */
  assert_int_equal(ba_olsh_buffered(h), 0);
  k.fail_at = 0;
  assert_int_equal(ba_olsh_push(h, s.r + 33, s.n - 33, sink_fn, &k), 0);
  assert_int_equal(ba_olsh_flush(h, sink_fn, &k), 0);
  assert_int_equal(k.n, s.n);
  ba_olsh_free(h);
  free(k.seen);
  free(k.order);
  free_stream(&s);

  /* A sorted purge hands the buffer over in batches of maxBlockSize + 1: a
   * failing batch stops it, the records not handed over yet are dropped
   * (counted as emitted), and the handle goes on. */
  s = make_stream(S_DISTINCT, 5000, 601);
  ba_olsh_opts_init(&o);
  o.mmax = 2000;
  o.mmin = 1000;
  o.max_block = 100; /* batches of 101; S_DISTINCT's chains stay far shorter */
  assert_int_equal(ba_olsh_create(&o, &h), BA_OK);
  k = (sink){.in = &s, .seen = calloc(s.n, 1), .fail_at = 3};
  assert_int_equal(ba_olsh_push(h, s.r, s.n, sink_fn, &k), 77); /* at the 2001st record */
  assert_int_equal(k.n, 303);
  assert_int_equal(ba_olsh_buffered(h), 0);
  k.fail_at = 0;
  assert_int_equal(ba_olsh_push(h, s.r + 2001, s.n - 2001, sink_fn, &k), 0);
  assert_int_equal(ba_olsh_flush(h, sink_fn, &k), 0);
  assert_int_equal(k.n, s.n - (2001 - 303));
  ba_olsh_stats_t st;
  ba_olsh_get_stats(h, &st);
  assert_true(st.pushed == s.n && st.emitted == s.n && st.batches == k.calls);
  ba_olsh_free(h);
  free(k.seen);
  free(k.order);
  free_stream(&s);
}

/* Real frames: every packet of a few shared captures goes through a small
 * buffer and comes back byte for byte. */
typedef struct {
  stream s;
  size_t cap;
} collect;

static void load_pcap(const char *path, void *ctx) {
  collect *c = ctx;
  char err[PCAP_ERRBUF_SIZE];
  pcap_t *p = pcap_open_offline(path, err);
  if (!p) return;
  struct pcap_pkthdr *ph;
  const u_char *data;
  while (c->s.n < 20000 && pcap_next_ex(p, &ph, &data) == 1) {
    if (c->s.n == c->cap) {
      c->cap = c->cap ? 2 * c->cap : 1024;
      c->s.r = realloc(c->s.r, c->cap * sizeof *c->s.r);
      c->s.frames = realloc(c->s.frames, c->cap * sizeof *c->s.frames);
    }
    ba_record_t *r = &c->s.r[c->s.n];
    memset(r, 0, sizeof *r);
    r->kind = BA_REC_PACKET;
    r->caplen = ph->caplen;
    r->wirelen = ph->len;
    r->bytes = c->s.n;
    r->linktype = (uint16_t)pcap_datalink(p);
    /* A rough header parse is enough to give the hash something real. */
    if (r->linktype == 1 && ph->caplen >= 34 && data[12] == 0x08 && data[13] == 0 && (data[14] >> 4) == 4) {
      r->ipver = 4;
      ba_addr_set_v4(r->src, ba_load_be32(data + 26));
      ba_addr_set_v4(r->dst, ba_load_be32(data + 30));
      r->proto = data[23];
      size_t l4 = 14 + (size_t)(data[14] & 15) * 4;
      if (ph->caplen >= l4 + 4) {
        r->src_port = ba_load_be16(data + l4);
        r->dst_port = ba_load_be16(data + l4 + 2);
      }
    }
    c->s.frames[c->s.n] = malloc(ph->caplen ? ph->caplen : 1);
    memcpy(c->s.frames[c->s.n], data, ph->caplen);
    r->frame = c->s.frames[c->s.n];
    c->s.n++;
  }
  pcap_close(p);
}

static void test_real_frames(void **state) {
  (void)state;
  const char *dir = ba_test_shared("traces/chrissanders__packets");
  if (!dir) {
    print_message("skipped: shared captures not found\n");
    return;
  }
  collect c = {{0}, 0};
  static const char *const exts[] = {"pcap", "pcapng", NULL};
  ba_test_walk(dir, exts, load_pcap, &c);
  if (c.s.n == 0) {
    print_message("skipped: no packets read from %s\n", dir);
    return;
  }
  ba_olsh_opts_t o;
  ba_olsh_opts_init(&o);
  o.mmax = 2000;
  o.mmin = 1000;
  o.frame_bytes = 256 * 1024;
  sink k;
  run(&c.s, &o, &k, 700);
  free(k.order);
  free_stream(&c.s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matches_program1), cmocka_unit_test(test_sorted_purge),
      cmocka_unit_test(test_frames_budget),
      cmocka_unit_test(test_alloc_bound),      cmocka_unit_test(test_deterministic),
      cmocka_unit_test(test_locality),         cmocka_unit_test(test_sink_error_and_invalid),
      cmocka_unit_test(test_real_frames),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

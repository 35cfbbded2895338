/* Test helpers shared by test_compax.c and test_masc.c: a naive reference
 * representation of a bit string as a list of maximal runs (value, length), so
 * that runs of billions of bits stay cheap, plus a 31-bit group cursor over it.
 * Every codec result is compared against this representation. */
#ifndef BA_TEST_RLE_REF_H
#define BA_TEST_RLE_REF_H

#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include "testsupport.h"
#include "codec/bitmap_internal.h"
#include "common/common.h"

/* Iteration multiplier of the randomized tests: 1, or 25 with BA_TEST_LONG set
 * (e.g. BA_TEST_LONG=1 ctest -R 'compax|masc'); the seed changes with it. */
static inline int rl_scale(void) {
  const char *e = getenv("BA_TEST_LONG");
  return e && *e && *e != '0' ? 25 : 1;
}

typedef struct { uint64_t len; int v; } rl_run_t;
typedef struct { rl_run_t *r; size_t n, cap; uint64_t total; } rl_t;

static inline void rl_free(rl_t *l) { free(l->r); memset(l, 0, sizeof *l); }

/* Appends `len` bits of value `v`, merging with the last run (canonical form). */
static inline void rl_push(rl_t *l, int v, uint64_t len) {
  if (len == 0) return;
  l->total += len;
  if (l->n && l->r[l->n - 1].v == v) {
    l->r[l->n - 1].len += len;
    return;
  }
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 64;
    l->r = realloc(l->r, l->cap * sizeof *l->r);
    assert_non_null(l->r);
  }
  l->r[l->n].v = v;
  l->r[l->n].len = len;
  l->n++;
}

/* Appends the `nbits` low bits of `x`, most significant first. */
static inline void rl_push_bits(rl_t *l, uint64_t x, unsigned nbits) {
  for (unsigned i = nbits; i-- > 0;) rl_push(l, (int)((x >> i) & 1), 1);
}

static inline int rl_equal(const rl_t *a, const rl_t *b) {
  if (a->n != b->n || a->total != b->total) return 0;
  for (size_t i = 0; i < a->n; i++)
    if (a->r[i].v != b->r[i].v || a->r[i].len != b->r[i].len) return 0;
  return 1;
}

static inline void rl_copy(rl_t *dst, const rl_t *src) {
  memset(dst, 0, sizeof *dst);
  for (size_t i = 0; i < src->n; i++) rl_push(dst, src->r[i].v, src->r[i].len);
}

/* --- random bit strings as run lists --- */

/* n bits, each 1 with probability permille/1000. */
static inline void rl_gen_bits(rl_t *l, ba_rng_t *r, uint64_t n, unsigned permille) {
  for (uint64_t i = 0; i < n; i++) rl_push(l, ba_rng_below(r, 1000) < permille, 1);
}

/* `nruns` alternating runs, lengths uniform in [1, 2*mean]. */
static inline void rl_gen_geometric(rl_t *l, ba_rng_t *r, size_t nruns, uint64_t mean0, uint64_t mean1) {
  int v = (int)ba_rng_below(r, 2);
  for (size_t i = 0; i < nruns; i++, v ^= 1)
    rl_push(l, v, 1 + ba_rng_below(r, 2 * (v ? mean1 : mean0)));
}

/* `nruns` alternating runs with lengths drawn from `lens`. */
static inline void rl_gen_table(rl_t *l, ba_rng_t *r, size_t nruns, const uint64_t *lens, size_t nlens) {
  int v = (int)ba_rng_below(r, 2);
  for (size_t i = 0; i < nruns; i++, v ^= 1) rl_push(l, v, lens[ba_rng_below(r, nlens)]);
}

/* One random 31-bit literal of a chosen shape: 0 = one dirty byte, 1 = two dirty
 * bytes, 2 = all ones, 3 = uniform random, 4 = one bit. */
static inline uint32_t rl_gen_literal(ba_rng_t *r, unsigned shape) {
  uint32_t q = (uint32_t)ba_rng_below(r, 4), q2 = (q + 1 + (uint32_t)ba_rng_below(r, 3)) & 3;
  uint32_t b = 1 + (uint32_t)ba_rng_below(r, q == 3 ? 0x7F : 0xFF);
  uint32_t b2 = 1 + (uint32_t)ba_rng_below(r, q2 == 3 ? 0x7F : 0xFF);
  switch (shape) {
  case 0: return b << (8 * q);
  case 1: return (b << (8 * q)) | (b2 << (8 * q2));
  case 2: return 0x7FFFFFFFu;
  case 3: return (uint32_t)ba_rng_next(r) & 0x7FFFFFFFu;
  default: return 1u << ba_rng_below(r, 31);
  }
}

/* Cursor over a run list; positions past the end read as 0 (D-3 padding). */
typedef struct { const rl_t *l; size_t i; uint64_t off; } rl_cur_t;

static inline void rl_cur_init(rl_cur_t *c, const rl_t *l) { c->l = l; c->i = 0; c->off = 0; }
static inline int rl_cur_end(const rl_cur_t *c) { return c->i >= c->l->n; }
/* Value and remaining length of the current run (0, UINT64_MAX past the end). */
static inline int rl_cur_val(const rl_cur_t *c) { return rl_cur_end(c) ? 0 : c->l->r[c->i].v; }
static inline uint64_t rl_cur_left(const rl_cur_t *c) {
  return rl_cur_end(c) ? UINT64_MAX : c->l->r[c->i].len - c->off;
}
static inline void rl_cur_skip(rl_cur_t *c, uint64_t k) {
  while (k && !rl_cur_end(c)) {
    uint64_t left = rl_cur_left(c), t = k < left ? k : left;
    c->off += t;
    k -= t;
    if (c->off == c->l->r[c->i].len) {
      c->i++;
      c->off = 0;
    }
  }
}
/* Reads `nbits` (<= 64) bits MSB-first. */
static inline uint64_t rl_cur_read(rl_cur_t *c, unsigned nbits) {
  uint64_t x = 0;
  for (unsigned k = 0; k < nbits; k++) {
    x = (x << 1) | (uint64_t)rl_cur_val(c);
    rl_cur_skip(c, 1);
  }
  return x;
}

/* Expands decoded tokens of codec `ops` (words of 32 bits) into a run list.
 * Returns the first non-1 status of dec_next (0 at the end). */
static inline int rl_decode(const ba_codec_ops_t *ops, const uint32_t *w, size_t nw, rl_t *out) {
  ba_dec_t d;
  ba_tok_t t;
  int rc;
  memset(out, 0, sizeof *out);
  ops->dec_init(&d, w, nw);
  while ((rc = ops->dec_next(&d, &t)) == 1) {
    if (t.kind == BA_TOK_LIT) {
      assert_int_not_equal(ops->group_bits, 0);
      assert_true(t.lit >> ops->group_bits == 0);
      rl_push_bits(out, t.lit, ops->group_bits);
    } else {
      assert_true(t.kind == BA_TOK_FILL0 || t.kind == BA_TOK_FILL1);
      assert_true(t.n >= 1);
      rl_push(out, t.kind == BA_TOK_FILL1, ops->group_bits ? t.n * ops->group_bits : t.n);
    }
  }
  return rc;
}

/* Re-encodes the decoded tokens of `w` (which must decode cleanly) through the ops. */
static inline size_t rl_reencode(const ba_codec_ops_t *ops, const uint32_t *w, size_t nw, uint32_t **words) {
  ba_dec_t d;
  ba_tok_t t;
  ba_enc_state_t st;
  ba_wordvec_t out = {0};
  memset(&st, 0, sizeof st);
  ops->dec_init(&d, w, nw);
  int rc;
  while ((rc = ops->dec_next(&d, &t)) == 1) assert_int_equal(ops->put(&out, &st, &t), 0);
  assert_int_equal(rc, 0);
  assert_int_equal(ops->end(&out, &st), 0);
  *words = out.w;
  return out.n;
}

/* Canonical property: re-encoding the decoded tokens of `w` gives `w` again. */
static inline void rl_check_canonical(const ba_codec_ops_t *ops, const uint32_t *w, size_t nw) {
  uint32_t *again;
  size_t n = rl_reencode(ops, w, nw, &again);
  assert_int_equal(n, nw);
  if (nw) assert_memory_equal(again, w, nw * 4);
  ba_free(again);
}

/* Any valid (possibly non-canonical) word sequence: its re-encoding describes
 * the same bits and is canonical (not necessarily shorter: D-10 never splits fills). */
static inline void rl_check_valid_input(const ba_codec_ops_t *ops, const uint32_t *w, size_t nw) {
  rl_t a, b;
  uint32_t *again;
  assert_int_equal(rl_decode(ops, w, nw, &a), 0);
  size_t n = rl_reencode(ops, w, nw, &again);
  assert_int_equal(rl_decode(ops, again, n, &b), 0);
  assert_true(rl_equal(&a, &b));
  rl_check_canonical(ops, again, n);
  ba_free(again);
  rl_free(&a);
  rl_free(&b);
}

static inline void rl_put(const ba_codec_ops_t *ops, ba_wordvec_t *out, ba_enc_state_t *st, int kind,
                          uint64_t n, uint64_t lit) {
  ba_tok_t t;
  t.kind = (uint8_t)kind;
  t.n = n;
  t.lit = lit;
  assert_int_equal(ops->put(out, st, &t), 0);
}

static inline void rl_print_words(const char *what, const uint32_t *w, size_t n) {
  print_message("%s (%zu words):", what, n);
  for (size_t i = 0; i < n && i < 64; i++) print_message(" %08X", w[i]);
  print_message("\n");
}

/* Asserts words equal, printing both on mismatch. */
static inline void rl_assert_words(const uint32_t *got, size_t ngot, const uint32_t *want, size_t nwant) {
  if (ngot != nwant || (nwant && memcmp(got, want, nwant * 4) != 0)) {
    rl_print_words("got ", got, ngot);
    rl_print_words("want", want, nwant);
    fail();
  }
}

/* --- through the public API (bitarc/bitmap.h) --- */

/* out = a op b (ba_op_t), the shorter zero-padded. */
static inline void rl_op(int op, const rl_t *a, const rl_t *b, rl_t *out) {
  rl_cur_t x, y;
  rl_cur_init(&x, a);
  rl_cur_init(&y, b);
  uint64_t n = a->total > b->total ? a->total : b->total, at = 0;
  memset(out, 0, sizeof *out);
  while (at < n) {
    uint64_t k = rl_cur_left(&x) < rl_cur_left(&y) ? rl_cur_left(&x) : rl_cur_left(&y);
    if (k > n - at) k = n - at;
    int u = rl_cur_val(&x), v = rl_cur_val(&y);
    int z = op == 0 ? (u & v) : op == 1 ? (u | v) : op == 2 ? (u ^ v) : (u & !v);
    rl_push(out, z, k);
    rl_cur_skip(&x, k);
    rl_cur_skip(&y, k);
    at += k;
  }
}

/* Builds a finished bitmap of `l` through a random mix of append_bits (across
 * run boundaries), append_run and set. */
static inline ba_bitmap_t *rl_build_api(ba_codec_t codec, const rl_t *l, ba_rng_t *r) {
  ba_bitmap_t *bm;
  assert_int_equal(ba_bitmap_create(codec, &bm), 0);
  rl_cur_t c;
  rl_cur_init(&c, l);
  uint64_t at = 0;
  while (at < l->total) {
    uint64_t left = rl_cur_left(&c);
    unsigned mode = (unsigned)ba_rng_below(r, 3);
    if (mode == 0 || left > 200) {
      uint64_t k = left > 200 && mode ? left : 1 + ba_rng_below(r, left);
      assert_int_equal(ba_bitmap_append_run(bm, rl_cur_val(&c), k), 0);
      rl_cur_skip(&c, k);
      at += k;
    } else if (mode == 1) {
      uint64_t k = 1 + ba_rng_below(r, 64);
      if (k > l->total - at) k = l->total - at;
      assert_int_equal(ba_bitmap_append_bits(bm, rl_cur_read(&c, (unsigned)k), (unsigned)k), 0);
      at += k;
    } else if (rl_cur_val(&c)) {
      assert_int_equal(ba_bitmap_set(bm, at), 0);
      rl_cur_skip(&c, 1);
      at++;
    } else { /* set the first row of the next 1-run, zero-filling the gap */
      if (at + left >= l->total) continue;
      assert_int_equal(ba_bitmap_set(bm, at + left), 0);
      rl_cur_skip(&c, left + 1);
      at += left + 1;
    }
  }
  assert_int_equal(ba_bitmap_finish(bm, l->total), 0);
  assert_true(ba_bitmap_rows(bm) == l->total);
  return bm;
}

static int rl_collect_run(void *ctx, int value, uint64_t start, uint64_t nrows) {
  rl_t *l = (rl_t *)ctx;
  if (start != l->total) return -1000;
  rl_push(l, value, nrows);
  return 0;
}

/* The bitmap's run view equals `l`, its count the ones of `l`. */
static inline void rl_assert_bitmap(const ba_bitmap_t *bm, const rl_t *l) {
  rl_t got = {0};
  assert_int_equal(ba_bitmap_foreach_run(bm, rl_collect_run, &got), 0);
  assert_true(rl_equal(&got, l));
  uint64_t ones = 0, cnt = 0;
  for (size_t i = 0; i < l->n; i++) ones += l->r[i].v ? l->r[i].len : 0;
  assert_int_equal(ba_bitmap_count(bm, &cnt), 0);
  assert_true(cnt == ones);
  rl_free(&got);
}

/* --- real captures as index columns (one row per packet, NET-FLi style) --- */

#define RL_NATTR 11 /* proto, sport, dport, src bytes 0-3, dst bytes 0-3 */
#define RL_ABSENT 0xFFFFFFFFu

typedef struct {
  uint32_t *attr[RL_NATTR]; /* per packet; RL_ABSENT when the packet has no such field */
  size_t n, cap;
} rl_packets_t;

/* Appends the packets of one capture (Ethernet, optional VLAN, IPv4). */
static inline void rl_read_capture(const char *path, rl_packets_t *p) {
  char err[PCAP_ERRBUF_SIZE];
  pcap_t *pc = pcap_open_offline(path, err);
  if (!pc) return;
  if (pcap_datalink(pc) != DLT_EN10MB) {
    pcap_close(pc);
    return;
  }
  struct pcap_pkthdr *h;
  const u_char *d;
  while (pcap_next_ex(pc, &h, &d) == 1) {
    if (p->n == p->cap) {
      p->cap = p->cap ? 2 * p->cap : 1024;
      for (int a = 0; a < RL_NATTR; a++) {
        p->attr[a] = realloc(p->attr[a], p->cap * sizeof(uint32_t));
        assert_non_null(p->attr[a]);
      }
    }
    uint32_t v[RL_NATTR];
    for (int a = 0; a < RL_NATTR; a++) v[a] = RL_ABSENT;
    size_t len = h->caplen, off = 12;
    uint16_t et = len >= 14 ? (uint16_t)(d[12] << 8 | d[13]) : 0;
    if (et == 0x8100 && len >= 18) {
      et = (uint16_t)(d[16] << 8 | d[17]);
      off = 16;
    }
    off += 2;
    if (et == 0x0800 && len >= off + 20) {
      const u_char *ip = d + off;
      size_t ihl = (size_t)(ip[0] & 15) * 4;
      v[0] = ip[9];
      for (int k = 0; k < 4; k++) {
        v[3 + k] = ip[12 + k];
        v[7 + k] = ip[16 + k];
      }
      if ((ip[9] == 6 || ip[9] == 17) && ihl >= 20 && len >= off + ihl + 4) {
        v[1] = (uint32_t)(ip[ihl] << 8 | ip[ihl + 1]);
        v[2] = (uint32_t)(ip[ihl + 2] << 8 | ip[ihl + 3]);
      }
    }
    for (int a = 0; a < RL_NATTR; a++) p->attr[a][p->n] = v[a];
    p->n++;
  }
  pcap_close(pc);
}

static void rl_read_capture_cb(const char *path, void *ctx) { rl_read_capture(path, (rl_packets_t *)ctx); }

/* Packets of the shared captures under the given folders; 0 if the data is absent. */
static inline size_t rl_read_shared(rl_packets_t *p, const char *const *dirs) {
  static const char *const exts[] = {"pcap", "pcapng", NULL};
  memset(p, 0, sizeof *p);
  for (size_t i = 0; dirs[i]; i++) {
    const char *dir = ba_test_shared(dirs[i]);
    if (dir) ba_test_walk(dir, exts, rl_read_capture_cb, p);
  }
  return p->n;
}

static inline void rl_packets_free(rl_packets_t *p) {
  for (int a = 0; a < RL_NATTR; a++) free(p->attr[a]);
  memset(p, 0, sizeof *p);
}

static int rl_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Calls fn(ctx, rows, nrows_set, nrows) for every (attribute, value) bitmap:
 * the sorted packet indexes holding that value. */
static inline void rl_foreach_column_bitmap(const rl_packets_t *p,
                                            void (*fn)(void *ctx, const uint64_t *rows, size_t n, uint64_t nrows),
                                            void *ctx) {
  uint64_t *key = malloc((p->n ? p->n : 1) * sizeof *key);
  uint64_t *rows = malloc((p->n ? p->n : 1) * sizeof *rows);
  assert_true(key && rows);
  for (int a = 0; a < RL_NATTR; a++) {
    size_t m = 0;
    for (size_t i = 0; i < p->n; i++)
      if (p->attr[a][i] != RL_ABSENT) key[m++] = (uint64_t)p->attr[a][i] << 32 | i;
    qsort(key, m, sizeof *key, rl_cmp_u64);
    for (size_t i = 0; i < m;) {
      size_t j = i, k = 0;
      while (j < m && key[j] >> 32 == key[i] >> 32) rows[k++] = key[j++] & 0xFFFFFFFFu;
      fn(ctx, rows, k, p->n);
      i = j;
    }
  }
  free(key);
  free(rows);
}

static inline void rl_from_rows(rl_t *l, const uint64_t *rows, size_t n, uint64_t nrows) {
  uint64_t at = 0;
  memset(l, 0, sizeof *l);
  for (size_t i = 0; i < n; i++) {
    rl_push(l, 0, rows[i] - at);
    rl_push(l, 1, 1);
    at = rows[i] + 1;
  }
  rl_push(l, 0, nrows - at);
}

static const char *const rl_trace_dirs[] = {"traces/CESNET__ipfixprobe", "traces/chrissanders__packets",
                                            "traces/cisco__joy", NULL};

typedef struct { size_t nbitmaps; uint64_t words[3]; } rl_real_ctx_t;

/* Runs fn on every column bitmap of the shared captures and prints the word
 * totals of the three codecs named; skips the cmocka test when data is absent. */
static inline void rl_real_captures(void (*fn)(void *ctx, const uint64_t *rows, size_t n, uint64_t nrows),
                                    const char *const names[3]) {
  rl_packets_t p;
  if (rl_read_shared(&p, rl_trace_dirs) == 0) {
    print_message("skipping: no captures under BA_SHARED_DATA/traces\n");
    rl_packets_free(&p);
    skip();
  }
  rl_real_ctx_t ctx = {0};
  rl_foreach_column_bitmap(&p, fn, &ctx);
  print_message("%zu packets, %zu bitmaps: words %s %llu, %s %llu, %s %llu\n", p.n, ctx.nbitmaps, names[0],
                (unsigned long long)ctx.words[0], names[1], (unsigned long long)ctx.words[1], names[2],
                (unsigned long long)ctx.words[2]);
  assert_true(ctx.nbitmaps > 100);
  rl_packets_free(&p);
}

#endif

/* COMPAX codec (specs/codecs.md §4): the spec's vectors word for word, every
 * invalid-word rule, and a differential test of the streaming ops encoder
 * (fed non-canonical token streams) against a batch reference encoder written
 * from the spec text, plus decode == naive run list and re-encode == same words. */
#include "rle_ref.h"

#define OPS (&ba_compax_ops)
#define FILL_MAX ((1u << 29) - 1)

/* ---------- batch reference encoder (spec §4.3/§4.4, written independently) ---------- */

typedef struct { int is_lit; uint32_t v; } cxr_tok_t; /* literal payload, or zero-group count */
typedef struct { cxr_tok_t *t; size_t n, cap; } cxr_toks_t;

static void cxr_push(cxr_toks_t *k, int is_lit, uint32_t v) {
  if (k->n == k->cap) {
    k->cap = k->cap ? 2 * k->cap : 64;
    k->t = realloc(k->t, k->cap * sizeof *k->t);
    assert_non_null(k->t);
  }
  k->t[k->n].is_lit = is_lit;
  k->t[k->n].v = v;
  k->n++;
}

static void cxr_zero_groups(cxr_toks_t *k, uint64_t cnt) {
  while (cnt) {
    if (k->n && !k->t[k->n - 1].is_lit && k->t[k->n - 1].v < FILL_MAX) {
      uint64_t room = FILL_MAX - k->t[k->n - 1].v, take = cnt < room ? cnt : room;
      k->t[k->n - 1].v += (uint32_t)take;
      cnt -= take;
    } else {
      cxr_push(k, 0, 0);
    }
  }
}

/* Number of non-zero bytes of a payload and the last one seen (position, value). */
static int cxr_dirty(uint32_t p, uint32_t *q, uint32_t *d) {
  int n = 0;
  for (uint32_t i = 0; i < 4; i++)
    if ((p >> (8 * i)) & 0xFF) {
      n++;
      *q = i;
      *d = (p >> (8 * i)) & 0xFF;
    }
  return n;
}

static size_t cxr_encode(const rl_t *l, uint32_t **words) {
  cxr_toks_t k = {0};
  uint64_t ngroups = (l->total + 30) / 31, g = 0;
  rl_cur_t c;
  rl_cur_init(&c, l);
  while (g < ngroups) {
    if (rl_cur_val(&c) == 0 && rl_cur_left(&c) >= 31) {
      uint64_t cnt = rl_cur_left(&c) / 31;
      if (cnt > ngroups - g) cnt = ngroups - g;
      cxr_zero_groups(&k, cnt);
      rl_cur_skip(&c, cnt * 31);
      g += cnt;
      continue;
    }
    uint32_t p = (uint32_t)rl_cur_read(&c, 31);
    g++;
    if (p == 0)
      cxr_zero_groups(&k, 1);
    else
      cxr_push(&k, 1, p);
  }
  uint32_t *w = malloc((k.n + 1) * 4);
  assert_non_null(w);
  size_t nw = 0;
  for (size_t i = 0; i < k.n;) {
    if (i + 2 < k.n) {
      cxr_tok_t a = k.t[i], b = k.t[i + 1], e = k.t[i + 2];
      uint32_t q1, d1, q2, d2;
      if (a.is_lit && !b.is_lit && e.is_lit && b.v <= 255 && cxr_dirty(a.v, &q1, &d1) == 1 &&
          cxr_dirty(e.v, &q2, &d2) == 1) {
        w[nw++] = 0x20000000u | q1 << 27 | q2 << 25 | d1 << 16 | b.v << 8 | d2;
        i += 3;
        continue;
      }
      if (!a.is_lit && b.is_lit && !e.is_lit && a.v <= 255 && e.v <= 255 && cxr_dirty(b.v, &q1, &d1) == 1) {
        w[nw++] = 0x40000000u | q1 << 27 | a.v << 16 | d1 << 8 | e.v;
        i += 3;
        continue;
      }
    }
    w[nw++] = k.t[i].is_lit ? 0x80000000u | k.t[i].v : k.t[i].v;
    i++;
  }
  free(k.t);
  *words = w;
  return nw;
}

/* ---------- streaming encoder through the ops, fed a random non-canonical token stream ---------- */

static void cx_feed_run(ba_wordvec_t *out, ba_enc_state_t *st, ba_rng_t *r, int v, uint64_t cnt) {
  while (cnt) {
    uint64_t piece = 1 + ba_rng_below(r, cnt < 8 ? cnt : (ba_rng_below(r, 4) ? cnt : 8));
    if (piece <= 3 && ba_rng_below(r, 2)) {
      for (uint64_t i = 0; i < piece; i++) rl_put(OPS, out, st, BA_TOK_LIT, 1, v ? 0x7FFFFFFFu : 0);
    } else {
      rl_put(OPS, out, st, v ? BA_TOK_FILL1 : BA_TOK_FILL0, piece, 0);
    }
    cnt -= piece;
  }
}

static size_t cx_encode_ops(const rl_t *l, ba_rng_t *r, uint32_t **words) {
  ba_wordvec_t out = {0};
  ba_enc_state_t st;
  memset(&st, 0, sizeof st);
  uint64_t ngroups = (l->total + 30) / 31, g = 0;
  rl_cur_t c;
  rl_cur_init(&c, l);
  while (g < ngroups) {
    if (rl_cur_left(&c) >= 31) {
      uint64_t cnt = rl_cur_left(&c) / 31;
      if (cnt > ngroups - g) cnt = ngroups - g;
      cx_feed_run(&out, &st, r, rl_cur_val(&c), cnt);
      rl_cur_skip(&c, cnt * 31);
      g += cnt;
      continue;
    }
    rl_put(OPS, &out, &st, BA_TOK_LIT, 1, rl_cur_read(&c, 31));
    g++;
  }
  assert_int_equal(OPS->end(&out, &st), 0);
  *words = out.w;
  return out.n;
}

/* Full check of one bitmap: ops == reference words, decode == padded input, canonical. */
static void cx_check(const rl_t *l, ba_rng_t *r) {
  uint32_t *ref, *got;
  size_t nref = cxr_encode(l, &ref);
  size_t ngot = cx_encode_ops(l, r, &got);
  rl_assert_words(got, ngot, ref, nref);
  rl_t padded, dec;
  rl_copy(&padded, l);
  rl_push(&padded, 0, (31 - l->total % 31) % 31);
  assert_int_equal(rl_decode(OPS, got, ngot, &dec), 0);
  assert_true(rl_equal(&dec, &padded));
  rl_check_canonical(OPS, got, ngot);
  rl_free(&padded);
  rl_free(&dec);
  free(ref);
  ba_free(got);
}

/* ---------- spec vectors (§4.7) ---------- */

static void check_vector(const rl_t *l, const uint32_t *want, size_t nwant) {
  ba_rng_t r;
  ba_rng_seed(&r, 7 + (uint64_t)rl_scale());
  for (int rep = 0; rep < 4; rep++) { /* several token splittings, same words */
    uint32_t *got;
    size_t n = cx_encode_ops(l, &r, &got);
    rl_assert_words(got, n, want, nwant);
    ba_free(got);
  }
  rl_t dec, padded;
  rl_copy(&padded, l);
  rl_push(&padded, 0, (31 - l->total % 31) % 31);
  assert_int_equal(rl_decode(OPS, want, nwant, &dec), 0);
  assert_true(rl_equal(&dec, &padded));
  rl_free(&dec);
  rl_free(&padded);
}

static void test_vm5_fig13(void **state) {
  (void)state;
  static const uint32_t groups[7] = {0x00000000, 0x0003FFFF, 0x7FFFF000, 0, 0, 0x0003C000, 0};
  static const uint32_t want[] = {0x00000001, 0x8003FFFF, 0xFFFFF000, 0x00000002, 0x8003C000, 0x00000001};
  rl_t l = {0};
  for (int i = 0; i < 7; i++) rl_push_bits(&l, groups[i], 31);
  check_vector(&l, want, 6);
  rl_free(&l);
}

static void test_va(void **state) {
  (void)state;
  static const uint64_t rows[] = {5, 100, 3000};
  static const uint32_t want[] = {0x3C020280, 0x405C4003};
  rl_t l;
  rl_from_rows(&l, rows, 3, 3100);
  check_vector(&l, want, 2);
  rl_free(&l);
}

static void test_vc(void **state) {
  (void)state;
  static const uint64_t rows[] = {2, 5, 154};
  static const uint32_t want[] = {0x38120301};
  rl_t l;
  rl_from_rows(&l, rows, 3, 155);
  check_vector(&l, want, 1);
  rl_free(&l);
}

static void test_vd(void **state) {
  (void)state;
  static const uint32_t want[] = {0x5002A503};
  rl_t l = {0};
  rl_push(&l, 0, 2 * 31);
  rl_push_bits(&l, 0xA5u << 16, 31);
  rl_push(&l, 0, 3 * 31);
  assert_true(l.total == 186);
  check_vector(&l, want, 1);
  rl_free(&l);
}

static void test_vw1(void **state) {
  (void)state;
  static const char *head = "1001000111010000010110000010011", *tail = "000100100001111111111110";
  static const uint32_t want[] = {0xC8E82C13, 0x00000002, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0x890FFF00};
  rl_t l = {0};
  for (const char *p = head; *p; p++) rl_push(&l, *p == '1', 1);
  rl_push(&l, 0, 62);
  rl_push(&l, 1, 93);
  for (const char *p = tail; *p; p++) rl_push(&l, *p == '1', 1);
  assert_true(l.total == 210);
  check_vector(&l, want, 6);
  rl_free(&l);
}

/* Tie-break of §4.4: F L F L gives [FLF][L]; an empty stream gives no words;
 * a lone fill of 2^29-1 groups is one word, one more group starts a second [0F]. */
static void test_tiebreak_and_split(void **state) {
  (void)state;
  uint32_t *w;
  size_t n;
  ba_rng_t r;
  ba_rng_seed(&r, 1 + (uint64_t)rl_scale());
  rl_t l = {0};
  rl_push(&l, 0, 31);
  rl_push_bits(&l, 0x100, 31);
  rl_push(&l, 0, 31);
  rl_push_bits(&l, 0x2, 31);
  n = cx_encode_ops(&l, &r, &w);
  static const uint32_t want1[] = {0x48010101, 0x80000002}; /* FLF(F1=1,q=1,d=1,F2=1), L */
  rl_assert_words(w, n, want1, 2);
  ba_free(w);
  rl_free(&l);

  n = cx_encode_ops(&l, &r, &w);
  assert_int_equal(n, 0);
  ba_free(w);

  rl_push(&l, 0, (uint64_t)FILL_MAX * 31);
  n = cx_encode_ops(&l, &r, &w);
  static const uint32_t want2[] = {FILL_MAX};
  rl_assert_words(w, n, want2, 1);
  ba_free(w);
  rl_push(&l, 0, 31);
  n = cx_encode_ops(&l, &r, &w);
  static const uint32_t want3[] = {FILL_MAX, 1};
  rl_assert_words(w, n, want3, 2);
  ba_free(w);
  rl_free(&l);
}

/* ---------- decoder validity (§4.5) ---------- */

static int decode_all(const uint32_t *w, size_t n) {
  ba_dec_t d;
  ba_tok_t t;
  int rc;
  OPS->dec_init(&d, w, n);
  while ((rc = OPS->dec_next(&d, &t)) == 1) {
  }
  return rc;
}

static void test_invalid_words(void **state) {
  (void)state;
  static const uint32_t bad[] = {
    0x80000000u, /* [L] with payload 0 */
    0x00000000u, /* [0F] count 0 */
    0x21010101u, /* [LFL] bit 24 set */
    0x20010001u, /* [LFL] F = 0 */
    0x20000101u, /* [LFL] d1 = 0 */
    0x20010100u, /* [LFL] d2 = 0 */
    0x38800101u, /* [LFL] q1 = 3, d1 = 0x80 */
    0x26010180u, /* [LFL] q2 = 3, d2 = 0x80 */
    0x41010101u, /* [FLF] bit 24 set */
    0x42010101u, /* [FLF] bit 25 set */
    0x44010101u, /* [FLF] bit 26 set */
    0x40000101u, /* [FLF] F1 = 0 */
    0x40010100u, /* [FLF] F2 = 0 */
    0x40010001u, /* [FLF] d = 0 */
    0x58018001u, /* [FLF] q = 3, d = 0x80 */
    0x60000001u, /* reserved 011 */
    0x7FFFFFFFu, /* reserved 011 */
  };
  for (size_t i = 0; i < BA_ARRAY_LEN(bad); i++) {
    uint32_t w[3] = {0x80000001u, bad[i], 0x00000001u};
    if (decode_all(w, 3) != BA_ERR_CORRUPT) {
      print_message("word %08X accepted\n", bad[i]);
      fail();
    }
  }
  /* their closest valid neighbours decode */
  static const uint32_t good[] = {0x80000001u, 0x00000001u, 0x20010101u, 0x387F0101u, 0x26010170u,
                                  0x40010101u, 0x58017F01u, 0xFFFFFFFFu, 0x1FFFFFFFu};
  for (size_t i = 0; i < BA_ARRAY_LEN(good); i++) assert_int_equal(decode_all(&good[i], 1), 0);
}

/* LFL/FLF expansion order and values. */
static void test_merged_expansion(void **state) {
  (void)state;
  ba_dec_t d;
  ba_tok_t t;
  const uint32_t w[2] = {0x3C020280u, 0x405C4003u};
  OPS->dec_init(&d, w, 2);
  const struct { int kind; uint64_t v; } want[] = {
    {BA_TOK_LIT, 0x02000000}, {BA_TOK_FILL0, 2}, {BA_TOK_LIT, 0x00800000},
    {BA_TOK_FILL0, 92},       {BA_TOK_LIT, 0x40}, {BA_TOK_FILL0, 3}};
  for (size_t i = 0; i < BA_ARRAY_LEN(want); i++) {
    assert_int_equal(OPS->dec_next(&d, &t), 1);
    assert_int_equal(t.kind, want[i].kind);
    if (t.kind == BA_TOK_LIT)
      assert_true(t.lit == want[i].v && t.n == 1);
    else
      assert_true(t.n == want[i].v);
  }
  assert_int_equal(OPS->dec_next(&d, &t), 0);
  assert_int_equal(OPS->dec_next(&d, &t), 0);
}

/* Random words never crash, never yield an impossible token. */
static void test_garbage(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 99 + (uint64_t)rl_scale());
  for (int it = 0; it < rl_scale() * 3000; it++) {
    size_t n = ba_rng_below(&r, 12);
    uint32_t *w = malloc((n ? n : 1) * 4); /* exact size: ASan sees any read past nwords */
    for (size_t i = 0; i < n; i++) w[i] = (uint32_t)ba_rng_next(&r);
    rl_t l;
    int rc = rl_decode(OPS, w, n, &l);
    assert_true(rc == 0 || rc == BA_ERR_CORRUPT);
    if (rc == 0) rl_check_valid_input(OPS, w, n);
    rl_free(&l);
    free(w);
  }
}

/* ---------- differential ---------- */

static void test_diff_random_bits(void **state) {
  (void)state;
  static const unsigned dens[] = {0, 1, 5, 20, 100, 300, 500, 700, 950, 995, 1000};
  ba_rng_t r;
  ba_rng_seed(&r, 2024 + (uint64_t)rl_scale());
  for (size_t di = 0; di < BA_ARRAY_LEN(dens); di++)
    for (int rep = 0; rep < rl_scale() * 8; rep++) {
      rl_t l = {0};
      rl_gen_bits(&l, &r, ba_rng_below(&r, 4000), dens[di]);
      cx_check(&l, &r);
      rl_free(&l);
    }
}

static void test_diff_runs(void **state) {
  (void)state;
  static const uint64_t means[] = {1, 4, 16, 31, 100, 1000, 8000, 40000};
  static const uint64_t lens[] = {1, 2, 7, 8, 9, 29, 30, 31, 32, 33, 61, 62, 63, 93, 254 * 31, 255 * 31,
                                  256 * 31, 255 * 31 + 1, 256 * 31 + 30};
  ba_rng_t r;
  ba_rng_seed(&r, 77 + (uint64_t)rl_scale());
  for (size_t a = 0; a < BA_ARRAY_LEN(means); a++)
    for (size_t b = 0; b < BA_ARRAY_LEN(means); b++) {
      rl_t l = {0};
      rl_gen_geometric(&l, &r, 1 + ba_rng_below(&r, 60), means[a], means[b]);
      cx_check(&l, &r);
      rl_free(&l);
    }
  for (int rep = 0; rep < rl_scale() * 100; rep++) {
    rl_t l = {0};
    rl_gen_table(&l, &r, 1 + ba_rng_below(&r, 40), lens, BA_ARRAY_LEN(lens));
    cx_check(&l, &r);
    rl_free(&l);
  }
}

/* Group-level streams built to hit LFL/FLF windows: single-dirty literals and
 * fills of 1..3 and 254..257 groups, mixed with literals that cannot merge. */
static void test_diff_merge_windows(void **state) {
  (void)state;
  static const uint64_t fills[] = {1, 1, 2, 3, 200, 254, 255, 256, 257};
  ba_rng_t r;
  ba_rng_seed(&r, 4242 + (uint64_t)rl_scale());
  size_t nlfl = 0, nflf = 0;
  for (int rep = 0; rep < rl_scale() * 1000; rep++) {
    rl_t l = {0};
    size_t ntok = 1 + ba_rng_below(&r, 14);
    for (size_t i = 0; i < ntok; i++) {
      if (ba_rng_below(&r, 2))
        rl_push(&l, 0, 31 * fills[ba_rng_below(&r, BA_ARRAY_LEN(fills))]);
      else
        rl_push_bits(&l, rl_gen_literal(&r, ba_rng_below(&r, 8) < 5 ? 0 : (unsigned)ba_rng_below(&r, 5)), 31);
    }
    if (ba_rng_below(&r, 3) == 0) rl_push(&l, ba_rng_below(&r, 2), 1 + ba_rng_below(&r, 30)); /* ragged tail */
    uint32_t *w;
    size_t n = cxr_encode(&l, &w);
    for (size_t i = 0; i < n; i++) {
      nlfl += w[i] >> 29 == 1;
      nflf += w[i] >> 29 == 2;
    }
    free(w);
    cx_check(&l, &r);
    rl_free(&l);
  }
  print_message("merge windows: %zu LFL, %zu FLF\n", nlfl, nflf);
  assert_true(nlfl > 50 && nflf > 50); /* the windows were really exercised */
}

/* Fills around the 2^29-1 split, next to mergeable literals. */
static void test_diff_fill_split(void **state) {
  (void)state;
  static const uint64_t big[] = {FILL_MAX - 1, FILL_MAX, (uint64_t)FILL_MAX + 1, 2 * (uint64_t)FILL_MAX,
                                 2 * (uint64_t)FILL_MAX + 1, (uint64_t)FILL_MAX + 255, (uint64_t)FILL_MAX + 256};
  ba_rng_t r;
  ba_rng_seed(&r, 5 + (uint64_t)rl_scale());
  for (int rep = 0; rep < rl_scale() * 30; rep++) {
    rl_t l = {0};
    size_t ntok = 1 + ba_rng_below(&r, 6);
    for (size_t i = 0; i < ntok; i++) {
      unsigned k = (unsigned)ba_rng_below(&r, 3);
      if (k == 0)
        rl_push(&l, 0, 31 * big[ba_rng_below(&r, BA_ARRAY_LEN(big))]);
      else if (k == 1)
        rl_push(&l, 0, 31 * (1 + ba_rng_below(&r, 300)));
      else
        rl_push_bits(&l, rl_gen_literal(&r, 0), 31);
    }
    cx_check(&l, &r);
    rl_free(&l);
  }
}

/* ---------- through the public API (generic layer + these ops) ---------- */

static void gen_mixed(rl_t *l, ba_rng_t *r, int rep) {
  static const uint64_t fills[] = {1, 2, 3, 255, 256};
  switch (rep % 3) {
  case 0:
    rl_gen_bits(l, r, ba_rng_below(r, 3000), (unsigned)ba_rng_below(r, 1001));
    break;
  case 1:
    rl_gen_geometric(l, r, 1 + ba_rng_below(r, 40), 1 + ba_rng_below(r, 3000), 1 + ba_rng_below(r, 100));
    break;
  default:
    for (size_t i = 0, n = 1 + ba_rng_below(r, 10); i < n; i++) {
      if (ba_rng_below(r, 2))
        rl_push(l, 0, 31 * fills[ba_rng_below(r, BA_ARRAY_LEN(fills))]);
      else
        rl_push_bits(l, rl_gen_literal(r, (unsigned)ba_rng_below(r, 5)), 31);
    }
    rl_push(l, 0, ba_rng_below(r, 31));
  }
}

static void test_api_build_and_ops(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 60606 + (uint64_t)rl_scale());
  for (int rep = 0; rep < rl_scale() * 150; rep++) {
    rl_t l = {0}, l2 = {0};
    gen_mixed(&l, &r, rep);
    gen_mixed(&l2, &r, rep + 1);
    ba_bitmap_t *bm = rl_build_api(BA_CODEC_COMPAX, &l, &r), *bm2 = rl_build_api(BA_CODEC_COMPAX, &l2, &r);
    size_t nw;
    const uint32_t *w = ba_bitmap_words(bm, &nw);
    uint32_t *ref;
    size_t nref = cxr_encode(&l, &ref);
    rl_assert_words(w, nw, ref, nref);
    free(ref);
    rl_assert_bitmap(bm, &l);
    /* words -> bitmap: valid at its own row count, not one group more */
    ba_bitmap_t *back, *wah;
    assert_int_equal(ba_bitmap_from_words(BA_CODEC_COMPAX, w, nw, l.total, &back), 0);
    assert_int_equal(ba_bitmap_equal(back, bm), 1);
    ba_bitmap_free(back);
    assert_int_equal(ba_bitmap_from_words(BA_CODEC_COMPAX, w, nw, l.total + 31, &back), BA_ERR_CORRUPT);
    /* the same bits in WAH compare equal */
    wah = rl_build_api(BA_CODEC_WAH32, &l, &r);
    assert_int_equal(ba_bitmap_equal(wah, bm), 1);
    /* boolean ops written through the COMPAX encoder: canonical and right */
    for (int op = 0; op < 4; op++) {
      ba_bitmap_t *res;
      rl_t want;
      rl_op(op, &l, &l2, &want);
      assert_int_equal(ba_bitmap_op((ba_op_t)op, rep & 1 ? bm : wah, bm2, BA_CODEC_COMPAX, &res), 0);
      rl_assert_bitmap(res, &want);
      nref = cxr_encode(&want, &ref);
      w = ba_bitmap_words(res, &nw);
      rl_assert_words(w, nw, ref, nref);
      free(ref);
      ba_bitmap_free(res);
      rl_free(&want);
    }
    ba_bitmap_free(wah);
    ba_bitmap_free(bm);
    ba_bitmap_free(bm2);
    rl_free(&l);
    rl_free(&l2);
  }
}

/* Row count and padding checks of the generic layer on COMPAX words (D-3). */
static void test_api_rowcount(void **state) {
  (void)state;
  const uint32_t vc[] = {0x38120301u}; /* rows {2, 5, 154} */
  ba_bitmap_t *bm;
  assert_int_equal(ba_bitmap_from_words(BA_CODEC_COMPAX, vc, 1, 155, &bm), 0);
  uint64_t rows[4];
  size_t n;
  assert_int_equal(ba_bitmap_to_rows(bm, rows, 4, &n), 0);
  assert_true(n == 3 && rows[0] == 2 && rows[1] == 5 && rows[2] == 154);
  ba_bitmap_free(bm);
  assert_int_equal(ba_bitmap_from_words(BA_CODEC_COMPAX, vc, 1, 154, &bm), BA_ERR_CORRUPT); /* 1 in padding */
  assert_int_equal(ba_bitmap_from_words(BA_CODEC_COMPAX, vc, 1, 156, &bm), BA_ERR_CORRUPT); /* 6 groups */
  assert_int_equal(ba_bitmap_from_words(BA_CODEC_COMPAX, vc, 1, 124, &bm), BA_ERR_CORRUPT);
  const uint32_t bad[] = {0x38120301u, 0x60000001u};
  assert_int_equal(ba_bitmap_from_words(BA_CODEC_COMPAX, bad, 2, 186, &bm), BA_ERR_CORRUPT);
  /* from_rows gives the spec's words */
  const uint64_t va[] = {5, 100, 3000};
  assert_int_equal(ba_bitmap_from_rows(BA_CODEC_COMPAX, va, 3, 3100, &bm), 0);
  size_t nw;
  const uint32_t *w = ba_bitmap_words(bm, &nw);
  const uint32_t want[] = {0x3C020280u, 0x405C4003u};
  rl_assert_words(w, nw, want, 2);
  ba_bitmap_free(bm);
}

/* ---------- real captures: one bitmap per (attribute, value), rows = packets ---------- */

static void real_one(void *vctx, const uint64_t *rows, size_t n, uint64_t nrows) {
  static const ba_codec_t codecs[3] = {BA_CODEC_COMPAX, BA_CODEC_WAH32, BA_CODEC_PLWAH};
  rl_real_ctx_t *ctx = vctx;
  rl_t l;
  rl_from_rows(&l, rows, n, nrows);
  for (int c = 0; c < 3; c++) {
    ba_bitmap_t *bm;
    assert_int_equal(ba_bitmap_from_rows(codecs[c], rows, n, nrows, &bm), 0);
    size_t nw;
    const uint32_t *w = ba_bitmap_words(bm, &nw);
    ctx->words[c] += nw;
    if (c == 0) {
      uint32_t *ref;
      size_t nref = cxr_encode(&l, &ref);
      rl_assert_words(w, nw, ref, nref);
      free(ref);
      rl_assert_bitmap(bm, &l);
      rl_check_canonical(OPS, w, nw);
    }
    ba_bitmap_free(bm);
  }
  ctx->nbitmaps++;
  rl_free(&l);
}

static void test_real_captures(void **state) {
  (void)state;
  static const char *const names[3] = {"compax", "wah32", "plwah"};
  rl_real_captures(real_one, names);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_vm5_fig13),
    cmocka_unit_test(test_va),
    cmocka_unit_test(test_vc),
    cmocka_unit_test(test_vd),
    cmocka_unit_test(test_vw1),
    cmocka_unit_test(test_tiebreak_and_split),
    cmocka_unit_test(test_invalid_words),
    cmocka_unit_test(test_merged_expansion),
    cmocka_unit_test(test_garbage),
    cmocka_unit_test(test_diff_random_bits),
    cmocka_unit_test(test_diff_runs),
    cmocka_unit_test(test_diff_merge_windows),
    cmocka_unit_test(test_diff_fill_split),
    cmocka_unit_test(test_api_build_and_ops),
    cmocka_unit_test(test_api_rowcount),
    cmocka_unit_test(test_real_captures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

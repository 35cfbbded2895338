/* MASC and MASC-QT codecs (specs/codecs.md §5): the paper's figures and the
 * spec's vectors word for word, every invalid-word rule, a differential test of
 * the streaming ops encoder (fed split, non-canonical runs) against a batch
 * reference encoder written from the spec text, decode == naive run list,
 * re-encode == same words, and the query table against a linear scan. */
#include "rle_ref.h"
#include "codec/masc_qt_table.h"

#define MAXRUN ((((uint64_t)1 << 20) - 1) * 31 + 30)

static const ba_codec_ops_t *ops_of(int qt) { return qt ? &ba_masc_qt_ops : &ba_masc_ops; }

/* ---------- batch reference encoder (spec §5.1/§5.2, written independently) ---------- */

typedef struct { uint32_t *w; size_t n, cap; } wv_t;

static void wv_push(wv_t *v, uint32_t w) {
  if (v->n == v->cap) {
    v->cap = v->cap ? 2 * v->cap : 64;
    v->w = realloc(v->w, v->cap * 4);
    assert_non_null(v->w);
  }
  v->w[v->n++] = w;
}

static void msr_run(wv_t *v, int qt, int val, uint64_t len, uint64_t carry) {
  uint64_t k = (len + MAXRUN - 1) / MAXRUN;
  for (uint64_t j = 0; j < k; j++) {
    uint64_t l = j + 1 < k ? MAXRUN : len - (k - 1) * MAXRUN;
    uint32_t w = (uint32_t)((l / 31) << 5 | (l % 31));
    if (val) w |= qt ? 0xC0000000u : 0x80000000u;
    if (j + 1 == k && carry) w |= 0x40000000u | (uint32_t)carry << 25;
    wv_push(v, w);
  }
}

static size_t msr_encode(const rl_t *l, int qt, uint32_t **words) {
  wv_t v = {0};
  for (size_t i = 0; i < l->n;) {
    const rl_run_t *r = &l->r[i];
    if (r->v == 0 && i + 1 < l->n && l->r[i + 1].len <= 30) {
      msr_run(&v, qt, 0, r->len, l->r[i + 1].len);
      i += 2;
    } else {
      msr_run(&v, qt, r->v, r->len, 0);
      i++;
    }
  }
  *words = v.w;
  return v.n;
}

/* ---------- streaming encoder through the ops, each run split into random FILL tokens ---------- */

static size_t ms_encode_ops(const rl_t *l, int qt, ba_rng_t *r, uint32_t **words) {
  const ba_codec_ops_t *ops = ops_of(qt);
  ba_wordvec_t out = {0};
  ba_enc_state_t st;
  memset(&st, 0, sizeof st);
  for (size_t i = 0; i < l->n; i++) {
    uint64_t left = l->r[i].len;
    unsigned split = (unsigned)ba_rng_below(r, 4);
    while (left) {
      uint64_t piece = split == 0 ? left : 1 + ba_rng_below(r, split == 1 || left > 4000 ? left : BA_MIN(left, 40));
      rl_put(ops, &out, &st, l->r[i].v ? BA_TOK_FILL1 : BA_TOK_FILL0, piece, 0);
      left -= piece;
    }
  }
  assert_int_equal(ops->end(&out, &st), 0);
  *words = out.w;
  return out.n;
}

static void ms_check(const rl_t *l, ba_rng_t *r) {
  for (int qt = 0; qt < 2; qt++) {
    uint32_t *ref, *got;
    size_t nref = msr_encode(l, qt, &ref);
    size_t ngot = ms_encode_ops(l, qt, r, &got);
    rl_assert_words(got, ngot, ref, nref);
    rl_t dec;
    assert_int_equal(rl_decode(ops_of(qt), got, ngot, &dec), 0);
    assert_true(rl_equal(&dec, l));
    rl_check_canonical(ops_of(qt), got, ngot);
    /* the other variant rejects exactly the words with a 1-fill */
    int has1 = 0;
    for (size_t i = 0; i < ngot; i++) has1 |= (got[i] >> 31) != 0;
    rl_t other;
    assert_int_equal(rl_decode(ops_of(!qt), got, ngot, &other), has1 ? BA_ERR_CORRUPT : 0);
    rl_free(&other);
    rl_free(&dec);
    free(ref);
    ba_free(got);
  }
}

/* ---------- spec vectors (§5.6) ---------- */

static void check_vector(const rl_t *l, int qt, const uint32_t *want, size_t nwant) {
  ba_rng_t r;
  ba_rng_seed(&r, 11 + (uint64_t)rl_scale());
  for (int rep = 0; rep < 4; rep++) {
    uint32_t *got;
    size_t n = ms_encode_ops(l, qt, &r, &got);
    rl_assert_words(got, n, want, nwant);
    ba_free(got);
  }
  rl_t dec;
  assert_int_equal(rl_decode(ops_of(qt), want, nwant, &dec), 0);
  assert_true(rl_equal(&dec, l));
  rl_free(&dec);
}

static void test_fig2_3_4(void **state) {
  (void)state;
  rl_t l = {0};
  rl_push(&l, 0, 191);
  static const uint32_t m2[] = {0x000000C5};
  check_vector(&l, 0, m2, 1);
  check_vector(&l, 1, m2, 1);
  rl_free(&l);
  rl_push(&l, 1, 191);
  static const uint32_t m3[] = {0x800000C5}, m3qt[] = {0xC00000C5};
  check_vector(&l, 0, m3, 1);
  check_vector(&l, 1, m3qt, 1);
  rl_free(&l);
  rl_push(&l, 0, 449);
  rl_push(&l, 1, 18);
  static const uint32_t m4[] = {0x640001CF};
  check_vector(&l, 0, m4, 1);
  check_vector(&l, 1, m4, 1);
  rl_free(&l);
}

static void test_vm5_fig11_fig15(void **state) {
  (void)state;
  static const uint32_t groups[7] = {0x00000000, 0x0003FFFF, 0x7FFFF000, 0, 0, 0x0003C000, 0};
  static const uint32_t fig11[] = {0x0000002D, 0x80000026, 0x48000059, 0x0000002E};
  static const uint32_t fig15[] = {0x0000002D, 0xC0000026, 0x48000059, 0x0000002E};
  rl_t l = {0};
  for (int i = 0; i < 7; i++) rl_push_bits(&l, groups[i], 31);
  check_vector(&l, 0, fig11, 4);
  check_vector(&l, 1, fig15, 4);
  rl_free(&l);
}

static void test_va_vb_vg_ovf(void **state) {
  (void)state;
  rl_t l = {0};
  /* V-A: rows {5, 100, 3000}, n = 3100 */
  rl_push(&l, 0, 5), rl_push(&l, 1, 1), rl_push(&l, 0, 94), rl_push(&l, 1, 1);
  rl_push(&l, 0, 2899), rl_push(&l, 1, 1), rl_push(&l, 0, 99);
  static const uint32_t va[] = {0x42000005, 0x42000061, 0x42000BB0, 0x00000066};
  check_vector(&l, 0, va, 4);
  check_vector(&l, 1, va, 4);
  rl_free(&l);
  /* V-B: n = 62, ones except row 40 */
  rl_push(&l, 1, 40), rl_push(&l, 0, 1), rl_push(&l, 1, 21);
  static const uint32_t vb[] = {0x80000029, 0x6A000001}, vbqt[] = {0xC0000029, 0x6A000001};
  check_vector(&l, 0, vb, 2);
  check_vector(&l, 1, vbqt, 2);
  rl_free(&l);
  /* V-G: 40 ones, 60 zeros, 5 ones, 95 zeros */
  rl_push(&l, 1, 40), rl_push(&l, 0, 60), rl_push(&l, 1, 5), rl_push(&l, 0, 95);
  static const uint32_t vg[] = {0x80000029, 0x4A00003D, 0x00000062}, vgqt[] = {0xC0000029, 0x4A00003D, 0x00000062};
  check_vector(&l, 0, vg, 3);
  check_vector(&l, 1, vgqt, 3);
  rl_free(&l);
  /* V-OVF: MAXRUN + 5 zeros, then 3 ones */
  rl_push(&l, 0, MAXRUN + 5), rl_push(&l, 1, 3);
  static const uint32_t ovf[] = {0x01FFFFFE, 0x46000005};
  check_vector(&l, 0, ovf, 2);
  check_vector(&l, 1, ovf, 2);
  rl_free(&l);
  /* empty */
  uint32_t *w;
  ba_rng_t r;
  ba_rng_seed(&r, 3 + (uint64_t)rl_scale());
  assert_int_equal(ms_encode_ops(&l, 0, &r, &w), 0);
  ba_free(w);
}

/* A literal token has no meaning for a bit-run codec. */
static void test_lit_rejected(void **state) {
  (void)state;
  for (int qt = 0; qt < 2; qt++) {
    ba_wordvec_t out = {0};
    ba_enc_state_t st;
    memset(&st, 0, sizeof st);
    ba_tok_t t = {.n = 1, .lit = 5, .kind = BA_TOK_LIT};
    assert_int_equal(ops_of(qt)->put(&out, &st, &t), BA_ERR_INVALID);
    ba_free(out.w);
  }
}

/* ---------- decoder validity (§5.3) ---------- */

static int decode_all(int qt, const uint32_t *w, size_t n) {
  rl_t l;
  int rc = rl_decode(ops_of(qt), w, n, &l);
  rl_free(&l);
  return rc;
}

static void test_invalid_words(void **state) {
  (void)state;
  static const struct { uint32_t w; int bad_plain, bad_qt; } cases[] = {
    {0x0000001Fu, 1, 1}, /* 0-fill additional = 31 */
    {0x8000001Fu, 1, 1}, /* 1-fill additional = 31 */
    {0xC000003Fu, 1, 1}, /* QT 1-fill additional = 31 */
    {0x4200001Fu, 1, 1}, /* carried additional = 31 */
    {0x00000000u, 1, 1}, /* 0-fill L = 0 */
    {0x80000000u, 1, 1}, /* 1-fill L = 0 */
    {0xC0000000u, 1, 1}, /* QT 1-fill L = 0 */
    {0x42000000u, 1, 1}, /* carried L = 0 */
    {0x40000001u, 1, 1}, /* carried c = 0 */
    {0x7E000001u, 1, 1}, /* carried c = 31 */
    {0x02000001u, 1, 1}, /* pure 0-fill, bit 25 set */
    {0x20000001u, 1, 1}, /* pure 0-fill, bit 29 set */
    {0x82000001u, 1, 1}, /* 1-fill, bit 25 set */
    {0xA0000001u, 1, 1}, /* 1-fill, bit 29 set */
    {0xC2000001u, 1, 1}, /* QT 1-fill, bit 25 set */
    {0xC0000001u, 1, 0}, /* bit 30 in a plain MASC 1-fill */
    {0x80000001u, 0, 1}, /* MASC-QT 1-fill without its type tag (D-11) */
    {0x3C000001u, 1, 1}, /* pure 0-fill with a carrier value but no flag */
  };
  for (size_t i = 0; i < BA_ARRAY_LEN(cases); i++)
    for (int qt = 0; qt < 2; qt++) {
      int want_bad = qt ? cases[i].bad_qt : cases[i].bad_plain;
      uint32_t w[3] = {0x00000005u, cases[i].w, 0x00000007u};
      int rc = decode_all(qt, w, 3);
      if (rc != (want_bad ? BA_ERR_CORRUPT : 0)) {
        print_message("word %08X qt=%d: rc %d\n", cases[i].w, qt, rc);
        fail();
      }
    }
  /* valid extremes */
  static const uint32_t good[] = {0x01FFFFFEu, 0x7DFFFFFEu, 0x42000001u, 0x7C000001u, 0x00000001u, 0x0000001Eu};
  for (size_t i = 0; i < BA_ARRAY_LEN(good); i++) {
    assert_int_equal(decode_all(0, &good[i], 1), 0);
    assert_int_equal(decode_all(1, &good[i], 1), 0);
  }
}

/* A carried word yields FILL0 L, then FILL1 c. */
static void test_carried_tokens(void **state) {
  (void)state;
  ba_dec_t d;
  ba_tok_t t;
  const uint32_t w[2] = {0x640001CFu, 0x80000001u};
  ba_masc_ops.dec_init(&d, w, 2);
  assert_int_equal(ba_masc_ops.dec_next(&d, &t), 1);
  assert_true(t.kind == BA_TOK_FILL0 && t.n == 449);
  assert_int_equal(ba_masc_ops.dec_next(&d, &t), 1);
  assert_true(t.kind == BA_TOK_FILL1 && t.n == 18);
  assert_int_equal(ba_masc_ops.dec_next(&d, &t), 1);
  assert_true(t.kind == BA_TOK_FILL1 && t.n == 1);
  assert_int_equal(ba_masc_ops.dec_next(&d, &t), 0);
  assert_int_equal(ba_masc_ops.dec_next(&d, &t), 0);
}

static void test_garbage(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 1234 + (uint64_t)rl_scale());
  size_t nvalid = 0;
  for (int it = 0; it < rl_scale() * 3000; it++) {
    size_t n = ba_rng_below(&r, 10);
    uint32_t *w = malloc((n ? n : 1) * 4);
    for (size_t i = 0; i < n; i++) {
      w[i] = (uint32_t)ba_rng_next(&r);
      if (ba_rng_below(&r, 2)) w[i] &= 0xC1FFFFFEu | (ba_rng_below(&r, 2) ? 0x3E000000u : 0); /* often valid */
    }
    for (int qt = 0; qt < 2; qt++) {
      rl_t l;
      int rc = rl_decode(ops_of(qt), w, n, &l);
      assert_true(rc == 0 || rc == BA_ERR_CORRUPT);
      if (rc == 0) {
        nvalid++;
        rl_check_valid_input(ops_of(qt), w, n);
        ba_masc_qt_table_t *t;
        assert_int_equal(ba_masc_qt_table_build(qt ? BA_CODEC_MASC_QT : BA_CODEC_MASC, w, n, &t), 0);
        assert_true(ba_masc_qt_table_rows(t) == l.total);
        ba_masc_qt_table_free(t);
      } else {
        ba_masc_qt_table_t *t = (ba_masc_qt_table_t *)&r;
        assert_int_equal(ba_masc_qt_table_build(qt ? BA_CODEC_MASC_QT : BA_CODEC_MASC, w, n, &t),
                         BA_ERR_CORRUPT);
        assert_null(t);
      }
      rl_free(&l);
    }
    free(w);
  }
  assert_true(nvalid > 300);
}

/* ---------- differential ---------- */

static void test_diff_random_bits(void **state) {
  (void)state;
  static const unsigned dens[] = {0, 1, 5, 20, 100, 300, 500, 700, 950, 995, 1000};
  ba_rng_t r;
  ba_rng_seed(&r, 31337 + (uint64_t)rl_scale());
  for (size_t di = 0; di < BA_ARRAY_LEN(dens); di++)
    for (int rep = 0; rep < rl_scale() * 8; rep++) {
      rl_t l = {0};
      rl_gen_bits(&l, &r, ba_rng_below(&r, 5000), dens[di]);
      ms_check(&l, &r);
      rl_free(&l);
    }
}

static void test_diff_runs(void **state) {
  (void)state;
  static const uint64_t means[] = {1, 4, 15, 30, 31, 100, 1000, 100000, 40000000};
  static const uint64_t lens[] = {1,          2,          29,         30,         31,         32,
                                  61,         62,         63,         1000,       MAXRUN - 1, MAXRUN,
                                  MAXRUN + 1, MAXRUN + 30, 2 * MAXRUN, 2 * MAXRUN + 1, 3 * MAXRUN - 1,
                                  (uint64_t)1 << 40};
  ba_rng_t r;
  ba_rng_seed(&r, 8 + (uint64_t)rl_scale());
  for (size_t a = 0; a < BA_ARRAY_LEN(means); a++)
    for (size_t b = 0; b < BA_ARRAY_LEN(means); b++)
      for (int rep = 0; rep < rl_scale() * 3; rep++) {
        rl_t l = {0};
        rl_gen_geometric(&l, &r, 1 + ba_rng_below(&r, 80), means[a], means[b]);
        ms_check(&l, &r);
        rl_free(&l);
      }
  for (int rep = 0; rep < rl_scale() * 300; rep++) {
    rl_t l = {0};
    rl_gen_table(&l, &r, 1 + ba_rng_below(&r, 30), lens, BA_ARRAY_LEN(lens) - (rep % 10 != 0));
    ms_check(&l, &r);
    rl_free(&l);
  }
}

/* ---------- query table: selection with the table == linear scan of the decoded runs ---------- */

typedef struct { uint64_t *rows; size_t n, cap; int stop_after; } rowbuf_t;

static int collect(void *ctx, const uint64_t *rows, size_t n) {
  rowbuf_t *b = ctx;
  for (size_t i = 0; i < n; i++) {
    if (b->n == b->cap) {
      b->cap = b->cap ? 2 * b->cap : 256;
      b->rows = realloc(b->rows, b->cap * sizeof *b->rows);
      assert_non_null(b->rows);
    }
    b->rows[b->n++] = rows[i];
  }
  if (b->stop_after && --b->stop_after == 0) return 42;
  return 0;
}

/* Naive selection: walk the decoded run list bit run by bit run. */
static void naive_select(const rl_t *l, uint64_t a, uint64_t b, rowbuf_t *out) {
  uint64_t at = 0;
  for (size_t i = 0; i < l->n; i++) {
    if (l->r[i].v)
      for (uint64_t x = at; x < at + l->r[i].len; x++)
        if (x >= a && x < b) collect(out, &x, 1);
    at += l->r[i].len;
  }
}

static void test_query_table(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 555 + (uint64_t)rl_scale());
  for (int rep = 0; rep < rl_scale() * 200; rep++) {
    rl_t l = {0};
    if (rep % 3 == 0)
      rl_gen_bits(&l, &r, ba_rng_below(&r, 3000), (unsigned)ba_rng_below(&r, 1001));
    else
      rl_gen_geometric(&l, &r, 1 + ba_rng_below(&r, 50), 1 + ba_rng_below(&r, 200), 1 + ba_rng_below(&r, 40));
    int qt = rep & 1;
    uint32_t *w;
    size_t nw = ms_encode_ops(&l, qt, &r, &w);
    ba_masc_qt_table_t *t;
    assert_int_equal(ba_masc_qt_table_build(qt ? BA_CODEC_MASC_QT : BA_CODEC_MASC, w, nw, &t), 0);
    assert_true(ba_masc_qt_table_rows(t) == l.total);
    /* seek: the word returned contains the row */
    for (int k = 0; k < 20 && l.total; k++) {
      uint64_t row = ba_rng_below(&r, l.total);
      size_t i = ba_masc_qt_table_seek(t, row);
      assert_true(i < nw);
      rl_t pre;
      assert_int_equal(rl_decode(ops_of(qt), w, i, &pre), 0);
      rl_t upto;
      assert_int_equal(rl_decode(ops_of(qt), w, i + 1, &upto), 0);
      assert_true(pre.total <= row && row < upto.total);
      rl_free(&pre);
      rl_free(&upto);
    }
    assert_int_equal(ba_masc_qt_table_seek(t, l.total), nw);
    for (int k = 0; k < 20; k++) {
      uint64_t a = ba_rng_below(&r, l.total + 10), b = a + ba_rng_below(&r, l.total + 10);
      if (k == 0) a = 0, b = UINT64_MAX;
      rowbuf_t got = {0}, want = {0};
      assert_int_equal(ba_masc_qt_table_select(t, w, a, b, collect, &got), 0);
      naive_select(&l, a, b, &want);
      assert_int_equal(got.n, want.n);
      if (want.n) assert_memory_equal(got.rows, want.rows, want.n * sizeof(uint64_t));
      assert_true(ba_masc_qt_table_count(t, w, a, b) == want.n);
      if (want.n > 256) { /* a non-zero callback return stops the walk */
        rowbuf_t stop = {.stop_after = 1};
        assert_int_equal(ba_masc_qt_table_select(t, w, a, b, collect, &stop), 42);
        assert_int_equal(stop.n, 256);
        free(stop.rows);
      }
      free(got.rows);
      free(want.rows);
    }
    ba_masc_qt_table_free(t);
    ba_free(w);
    rl_free(&l);
  }
  /* huge runs: count without enumerating */
  rl_t l = {0};
  rl_push(&l, 0, (uint64_t)1 << 40), rl_push(&l, 1, 3 * MAXRUN + 7), rl_push(&l, 0, 5), rl_push(&l, 1, 2);
  uint32_t *w;
  size_t nw = msr_encode(&l, 1, &w);
  ba_masc_qt_table_t *t;
  assert_int_equal(ba_masc_qt_table_build(BA_CODEC_MASC_QT, w, nw, &t), 0);
  assert_true(ba_masc_qt_table_count(t, w, 0, UINT64_MAX) == 3 * MAXRUN + 9);
  assert_true(ba_masc_qt_table_count(t, w, ((uint64_t)1 << 40) + 10, ((uint64_t)1 << 40) + 20) == 10);
  rowbuf_t got = {0};
  uint64_t tail = ((uint64_t)1 << 40) + 3 * MAXRUN + 7;
  assert_int_equal(ba_masc_qt_table_select(t, w, tail - 2, UINT64_MAX, collect, &got), 0);
  assert_int_equal(got.n, 4);
  assert_true(got.rows[0] == tail - 2 && got.rows[1] == tail - 1 && got.rows[2] == tail + 5 &&
              got.rows[3] == tail + 6);
  free(got.rows);
  ba_masc_qt_table_free(t);
  free(w);
  rl_free(&l);
  ba_masc_qt_table_free(NULL);
}

/* ---------- through the public API (generic layer + these ops) ---------- */

static int collect_rows(void *ctx, const uint64_t *rows, size_t n) { return collect(ctx, rows, n); }

static void test_api_build_and_ops(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 70707 + (uint64_t)rl_scale());
  for (int rep = 0; rep < rl_scale() * 150; rep++) {
    rl_t l = {0}, l2 = {0};
    if (rep % 2)
      rl_gen_bits(&l, &r, ba_rng_below(&r, 3000), (unsigned)ba_rng_below(&r, 1001));
    else
      rl_gen_geometric(&l, &r, 1 + ba_rng_below(&r, 40), 1 + ba_rng_below(&r, 300), 1 + ba_rng_below(&r, 40));
    rl_gen_geometric(&l2, &r, 1 + ba_rng_below(&r, 40), 1 + ba_rng_below(&r, 100), 1 + ba_rng_below(&r, 60));
    int qt = rep % 4 < 2;
    ba_codec_t codec = qt ? BA_CODEC_MASC_QT : BA_CODEC_MASC;
    ba_bitmap_t *bm = rl_build_api(codec, &l, &r), *bm2 = rl_build_api(rep & 1 ? BA_CODEC_COMPAX : codec, &l2, &r);
    size_t nw;
    const uint32_t *w = ba_bitmap_words(bm, &nw);
    uint32_t *ref;
    size_t nref = msr_encode(&l, qt, &ref);
    rl_assert_words(w, nw, ref, nref);
    free(ref);
    rl_assert_bitmap(bm, &l);
    ba_bitmap_t *back;
    assert_int_equal(ba_bitmap_from_words(codec, w, nw, l.total, &back), 0);
    assert_int_equal(ba_bitmap_equal(back, bm), 1);
    ba_bitmap_free(back);
    assert_int_equal(ba_bitmap_from_words(codec, w, nw, l.total + 1, &back), BA_ERR_CORRUPT);
    if (l.total) assert_int_equal(ba_bitmap_from_words(codec, w, nw, l.total - 1, &back), BA_ERR_CORRUPT);
    /* query-table selection == the generic layer's row walk */
    ba_masc_qt_table_t *t;
    assert_int_equal(ba_masc_qt_table_build(codec, w, nw, &t), 0);
    rowbuf_t a = {0}, b = {0};
    assert_int_equal(ba_masc_qt_table_select(t, w, 0, UINT64_MAX, collect_rows, &a), 0);
    assert_int_equal(ba_bitmap_foreach(bm, collect_rows, &b), 0);
    assert_int_equal(a.n, b.n);
    if (a.n) assert_memory_equal(a.rows, b.rows, a.n * sizeof(uint64_t));
    free(a.rows);
    free(b.rows);
    ba_masc_qt_table_free(t);
    for (int op = 0; op < 4; op++) {
      ba_bitmap_t *res;
      rl_t want;
      rl_op(op, &l, &l2, &want);
      assert_int_equal(ba_bitmap_op((ba_op_t)op, bm, bm2, codec, &res), 0);
      rl_assert_bitmap(res, &want);
      nref = msr_encode(&want, qt, &ref);
      w = ba_bitmap_words(res, &nw);
      rl_assert_words(w, nw, ref, nref);
      free(ref);
      ba_bitmap_free(res);
      rl_free(&want);
    }
    ba_bitmap_free(bm);
    ba_bitmap_free(bm2);
    rl_free(&l);
    rl_free(&l2);
  }
}

static void test_api_vectors(void **state) {
  (void)state;
  const uint64_t va[] = {5, 100, 3000};
  const uint32_t want[] = {0x42000005, 0x42000061, 0x42000BB0, 0x00000066};
  for (int qt = 0; qt < 2; qt++) {
    ba_bitmap_t *bm;
    size_t nw;
    assert_int_equal(ba_bitmap_from_rows(qt ? BA_CODEC_MASC_QT : BA_CODEC_MASC, va, 3, 3100, &bm), 0);
    const uint32_t *w = ba_bitmap_words(bm, &nw);
    rl_assert_words(w, nw, want, 4);
    ba_bitmap_free(bm);
    /* Fig. 11 / Fig. 15 words from row-level appends of the Fig. 5 groups */
    static const uint32_t groups[7] = {0x00000000, 0x0003FFFF, 0x7FFFF000, 0, 0, 0x0003C000, 0};
    const uint32_t fig[] = {0x0000002D, qt ? 0xC0000026 : 0x80000026, 0x48000059, 0x0000002E};
    assert_int_equal(ba_bitmap_create(qt ? BA_CODEC_MASC_QT : BA_CODEC_MASC, &bm), 0);
    for (int i = 0; i < 7; i++) assert_int_equal(ba_bitmap_append_bits(bm, groups[i], 31), 0);
    assert_int_equal(ba_bitmap_finish(bm, 217), 0);
    w = ba_bitmap_words(bm, &nw);
    rl_assert_words(w, nw, fig, 4);
    ba_bitmap_free(bm);
    assert_int_equal(ba_bitmap_from_words(qt ? BA_CODEC_MASC_QT : BA_CODEC_MASC, fig, 4, 217, &bm), 0);
    ba_bitmap_free(bm);
  }
}

/* ---------- real captures: one bitmap per (attribute, value), rows = packets ---------- */

static void real_one(void *vctx, const uint64_t *rows, size_t n, uint64_t nrows) {
  static const ba_codec_t codecs[3] = {BA_CODEC_MASC, BA_CODEC_MASC_QT, BA_CODEC_WAH32};
  rl_real_ctx_t *ctx = vctx;
  rl_t l;
  rl_from_rows(&l, rows, n, nrows);
  for (int c = 0; c < 3; c++) {
    ba_bitmap_t *bm;
    assert_int_equal(ba_bitmap_from_rows(codecs[c], rows, n, nrows, &bm), 0);
    size_t nw;
    const uint32_t *w = ba_bitmap_words(bm, &nw);
    ctx->words[c] += nw;
    if (c < 2) {
      uint32_t *ref;
      size_t nref = msr_encode(&l, c, &ref);
      rl_assert_words(w, nw, ref, nref);
      free(ref);
      rl_assert_bitmap(bm, &l);
      rl_check_canonical(ops_of(c), w, nw);
      ba_masc_qt_table_t *t;
      assert_int_equal(ba_masc_qt_table_build(codecs[c], w, nw, &t), 0);
      rowbuf_t got = {0};
      uint64_t a = nrows / 3, b = nrows - nrows / 4;
      assert_int_equal(ba_masc_qt_table_select(t, w, a, b, collect, &got), 0);
      size_t k = 0;
      for (size_t i = 0; i < n; i++)
        if (rows[i] >= a && rows[i] < b) {
          assert_true(k < got.n && got.rows[k] == rows[i]);
          k++;
        }
      assert_int_equal(k, got.n);
      free(got.rows);
      ba_masc_qt_table_free(t);
    }
    ba_bitmap_free(bm);
  }
  ctx->nbitmaps++;
  rl_free(&l);
}

static void test_real_captures(void **state) {
  (void)state;
  static const char *const names[3] = {"masc", "masc-qt", "wah32"};
  rl_real_captures(real_one, names);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fig2_3_4),
    cmocka_unit_test(test_vm5_fig11_fig15),
    cmocka_unit_test(test_va_vb_vg_ovf),
    cmocka_unit_test(test_lit_rejected),
    cmocka_unit_test(test_invalid_words),
    cmocka_unit_test(test_carried_tokens),
    cmocka_unit_test(test_garbage),
    cmocka_unit_test(test_diff_random_bits),
    cmocka_unit_test(test_diff_runs),
    cmocka_unit_test(test_query_table),
    cmocka_unit_test(test_api_build_and_ops),
    cmocka_unit_test(test_api_vectors),
    cmocka_unit_test(test_real_captures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The clustered time order's record buffer (order.c): records gathered
 * packed (zero words left out, frames copied) and delivered sorted by first
 * time, against a naive stable sort of the same records: every field, every
 * frame byte, the order of ties; records dense and sparse (all words zero,
 * all non-zero), batches of every size, a reserve too small (the buffer
 * grows and moves). */
#include <stdlib.h>
#include <string.h>

#include "query/plan_int.h"
#include "testsupport.h"

typedef struct got {
  ba_record_t *r;
  uint8_t *fr; /* frame bytes, in delivery order */
  size_t n, cap, flen, fcap;
} got_t;

static int collect(void *ctx, const ba_record_t *recs, size_t n) {
  got_t *g = ctx;
  for (size_t i = 0; i < n; i++) {
    if (g->n == g->cap) {
      g->cap = g->cap ? 2 * g->cap : 256;
      g->r = realloc(g->r, g->cap * sizeof *g->r);
    }
    g->r[g->n] = recs[i];
    if (recs[i].frame) {
      assert_true(recs[i].caplen > 0);
      if (g->flen + recs[i].caplen > g->fcap) {
        g->fcap = 2 * (g->flen + recs[i].caplen);
        g->fr = realloc(g->fr, g->fcap);
      }
      memcpy(g->fr + g->flen, recs[i].frame, recs[i].caplen);
      g->flen += recs[i].caplen;
      g->r[g->n].frame = (const uint8_t *)1; /* compared: present or not */
    }
    g->n++;
  }
  return 0;
}

static ba_record_t rand_rec(ba_rng_t *g, unsigned density, uint8_t *frame_store, size_t *flen) {
  ba_record_t r;
  uint64_t w[sizeof r / 8];
  for (size_t k = 0; k < sizeof r / 8; k++) w[k] = ba_rng_below(g, 100) < density ? ba_rng_next(g) : 0;
  memcpy(&r, w, sizeof r);
  r.first_ns = ba_rng_below(g, 50); /* many ties */
  r.frame = NULL;
  r.caplen = 0;
  if (ba_rng_below(g, 4) == 0) {
    r.caplen = (uint32_t)ba_rng_below(g, 100);
    for (uint32_t i = 0; i < r.caplen; i++) frame_store[*flen + i] = (uint8_t)ba_rng_next(g);
    r.frame = frame_store + *flen;
    *flen += r.caplen;
  }
  return r;
}

static int by_first(const void *a, const void *b) {
  const ba_record_t *x = *(ba_record_t *const *)a, *y = *(ba_record_t *const *)b;
  if (x->first_ns != y->first_ns) return x->first_ns < y->first_ns ? -1 : 1;
  return x < y ? -1 : x > y; /* stable: input order */
}

static void tbuf_order(int simd) {
  query_set_pack_simd(simd);
  ba_rng_t g;
  ba_rng_seed(&g, 344);
  const size_t sizes[] = {0, 1, 2, 255, 256, 257, 5000, 40000};
  const unsigned dens[] = {0, 10, 50, 100};
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
    for (size_t di = 0; di < sizeof dens / sizeof *dens; di++) {
      size_t n = sizes[si];
      ba_record_t *in = calloc(n + 1, sizeof *in);
      uint8_t *frames = malloc(n * 100 + 1);
      size_t flen = 0;
      for (size_t i = 0; i < n; i++) in[i] = rand_rec(&g, dens[di], frames, &flen);
      tbuf_t tb = {0};
      /* reserve: exact, or far too small (grows and moves) */
      assert_int_equal(tbuf_reserve(&tb, si % 2 ? n : 1), 0);
      for (size_t i = 0; i < n;) {
        size_t m = (size_t)ba_rng_below(&g, 700) + 1; /* BA_MIN evaluates twice */
        if (m > n - i) m = n - i;
        assert_int_equal(tbuf_sink(&tb, in + i, m), 0);
        i += m;
      }
      got_t out = {0};
      ba_query_stats_t st;
      memset(&st, 0, sizeof st);
      runctx_t run;
      memset(&run, 0, sizeof run);
      run.fn = collect;
      run.ctx = &out;
      run.stats = &st;
      assert_int_equal(tbuf_deliver(&tb, &run), 0);
      assert_int_equal(out.n, n);
      assert_int_equal(st.rows_matched, n);
      ba_record_t **want = malloc((n + 1) * sizeof *want);
      for (size_t i = 0; i < n; i++) want[i] = &in[i];
      qsort(want, n, sizeof *want, by_first);
      size_t fo = 0;
      for (size_t i = 0; i < n; i++) {
        ba_record_t w = *want[i];
        const uint8_t *wf = w.caplen ? w.frame : NULL; /* no bytes: no frame */
        w.frame = wf ? (const uint8_t *)1 : NULL;
        if (memcmp(&w, &out.r[i], sizeof w)) fail_msg("n %zu density %u: record %zu differs", n, dens[di], i);
        if (wf) {
          assert_true(fo + w.caplen <= out.flen);
          if (memcmp(wf, out.fr + fo, w.caplen)) fail_msg("n %zu: frame of record %zu differs", n, i);
          fo += w.caplen;
        }
      }
      assert_int_equal(fo, out.flen);
      free(want);
      free(out.r);
      free(out.fr);
      free(in);
      free(frames);
    }
}

static void test_tbuf_order(void **state) {
  (void)state;
  tbuf_order(0); /* scalar */
  tbuf_order(1); /* AVX-512 where the CPU has it */
  query_set_pack_simd(1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_tbuf_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

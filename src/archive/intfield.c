/* Integer fields of column payloads (doc/format.md §3.2, §7.1): one field of
 * n values of w bytes, transformed per block (frame of reference with a
 * common scale, row-to-row deltas, a dictionary, or a dictionary of the
 * frequent values with exceptions) and bit-packed at the width its values
 * need (2.0 may also use byte planes). Shared by the 2.0 and 3.0 column
 * layouts. This file: the choice and FOR, DELTA and DICT; PDICT:
 * intfield_pdict.c; decoding: intfield_dec.c; the 3.0 reader's single
 * values (ba_if_reader_t): intfield_get.c. */
#include <pthread.h>
#include <string.h>

#include "archive/intfield_enc.h"

int ba_col_scratch_create(ba_col_scratch_t **out) {
  *out = ba_calloc(1, sizeof **out);
  return *out ? BA_OK : BA_ERR_NOMEM;
}

void ba_col_scratch_free(ba_col_scratch_t *x) {
  if (!x) return;
  ba_free(x->v);
  ba_free(x->hs);
  ba_free(x->ps);
  ba_free(x);
}


static uint64_t gcd64(uint64_t a, uint64_t b) {
  if (!a) return b;
  if (!b) return a;
  int sh = __builtin_ctzll(a | b);
  a >>= __builtin_ctzll(a);
  do {
    b >>= __builtin_ctzll(b);
    if (a > b) {
      uint64_t t = a;
      a = b;
      b = t;
    }
    b -= a;
  } while (b);
  return a << sh;
}

static inline size_t dict_hash(uint64_t v) { return (size_t)((v * 0x9E3779B97F4A7C15ull) >> 55) & (DICT_SLOTS - 1); }

/* Where the dictionary pass keeps value v: hashed (linear probing over
 * key), or, when the field's values span fewer than DICT_SLOTS multiples of
 * its scale above its minimum, at slot (v - mn) / scale, no hash and no
 * probe. Which slot holds a value matters to nothing written (the
 * dictionary is sorted, counts are per value, first sights keep their
 * order): only the look-ups below must agree with the pass. */
typedef struct dmap {
  int direct;
  uint64_t mn;
  exdiv_t esc;
} dmap_t;
static inline size_t dmap_slot(const dmap_t *m, uint64_t v) { return (size_t)exdiv_div(&m->esc, v - m->mn); }
/* The slot of v, which the pass saw (its key is there). */
static inline size_t dmap_find(const dmap_t *m, const uint64_t *key, uint64_t v) {
  if (m->direct) return dmap_slot(m, v);
  size_t h = dict_hash(v);
  while (key[h] != v) h = (h + 1) & (DICT_SLOTS - 1);
  return h;
}


/* The first pass of encode2_int: the minimum and maximum of v[0..n) and the
 * OR of the zigzag row-to-row differences from row 1 on (whose bit length is
 * that of their maximum). Without a branch on the row and with the zigzag
 * taken from the difference's sign bit (logical shifts only: zz's value), so
 * that it vectorises: one copy per width (shifts by immediates), built for
 * the baseline, AVX2 and AVX-512 and chosen once at run time (the same
 * results; 0.83 -> 0.53 / 0.21 ns per value in a micro-benchmark). */
static inline __attribute__((always_inline)) void range_body(const uint64_t *v, size_t n, unsigned w, uint64_t *mn_out,
                                                             uint64_t *mx_out, uint64_t *zor_out) {
  uint64_t m = wmask(w), mn = UINT64_MAX, mx = 0, zor = 0;
  if (n) mn = mx = v[0];
  for (size_t i = 1; i < n; i++) {
    uint64_t x = v[i], d = (x - v[i - 1]) & m;
    mn = x < mn ? x : mn;
    mx = x > mx ? x : mx;
    zor |= ((d << 1) ^ (0 - (d >> (8 * w - 1)))) & m;
  }
  *mn_out = mn;
  *mx_out = mx;
  *zor_out = zor;
}

#define RANGE_WIDTHS(v, n, w, a, b, c)       \
  switch (w) {                               \
    case 1: range_body(v, n, 1, a, b, c); break; \
    case 2: range_body(v, n, 2, a, b, c); break; \
    case 4: range_body(v, n, 4, a, b, c); break; \
    case 8: range_body(v, n, 8, a, b, c); break; \
    default: range_body(v, n, w, a, b, c); break; \
  }

/* Whether some |v[i] - v0| of v[0..n) is not a multiple of the scale e:
 * the rows between two changes of common_scale's divisor, branch-free so
 * that it vectorises (each lane's multiply and compare, the flags ORed). */
static inline __attribute__((always_inline)) uint64_t scale_bad_body(const uint64_t *v, size_t n, uint64_t v0,
                                                                     const exdiv_t *e) {
  const uint64_t low = (((uint64_t)1) << e->sh) - 1, inv = e->inv, lim = e->lim;
  const unsigned sh = e->sh;
  uint64_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t d = v[i] >= v0 ? v[i] - v0 : v0 - v[i];
    bad |= (d & low) | (uint64_t)((d >> sh) * inv > lim);
  }
  return bad;
}

/* The largest rise (*up) and fall (*down) from one row to the next of
 * v[0..n) (0 if none). */
static inline __attribute__((always_inline)) void diff_body(const uint64_t *v, size_t n, uint64_t *up,
                                                            uint64_t *down) {
  uint64_t u = 0, d = 0;
  for (size_t i = 1; i < n; i++) { /* masks, not branches: vectorised */
    uint64_t a = v[i], b = v[i - 1], m = 0 - (uint64_t)(a > b);
    uint64_t r = (a - b) & m, f = (b - a) & ~m; /* (a == b: both 0) */
    u = r > u ? r : u;
    d = f > d ? f : d;
  }
  *up = u;
  *down = d;
}

/* The passes above, one copy per instruction set (chosen once). */
typedef struct kern {
  void (*range)(const uint64_t *, size_t, unsigned, uint64_t *, uint64_t *, uint64_t *);
  uint64_t (*scale_bad)(const uint64_t *, size_t, uint64_t, const exdiv_t *);
  void (*diff)(const uint64_t *, size_t, uint64_t *, uint64_t *);
} kern_t;

#define KERN_COPY(sfx, ATTR)                                                                              \
  ATTR static void range_##sfx(const uint64_t *v, size_t n, unsigned w, uint64_t *a, uint64_t *b, uint64_t *c) { \
    RANGE_WIDTHS(v, n, w, a, b, c)                                                                          \
  }                                                                                                         \
  ATTR static uint64_t scale_bad_##sfx(const uint64_t *v, size_t n, uint64_t v0, const exdiv_t *e) {        \
    return scale_bad_body(v, n, v0, e);                                                                     \
  }                                                                                                         \
  ATTR static void diff_##sfx(const uint64_t *v, size_t n, uint64_t *up, uint64_t *down) {                  \
    diff_body(v, n, up, down);                                                                              \
  }
KERN_COPY(base, )
static const kern_t g_kern_base = {range_base, scale_bad_base, diff_base};

#if defined(__x86_64__) && defined(__GNUC__)
#if defined(__clang__)
#define VEC_OPT /* clang vectorises at -O2 */
#else
#define VEC_OPT , optimize("O3") /* GCC 12 does not vectorise these reductions at -O2 */
#endif
KERN_COPY(avx2, __attribute__((target("avx2") VEC_OPT)))
KERN_COPY(avx512, __attribute__((target("avx512f,avx512vl,avx512dq") VEC_OPT)))
#undef VEC_OPT
static const kern_t g_kern_avx2 = {range_avx2, scale_bad_avx2, diff_avx2};
static const kern_t g_kern_avx512 = {range_avx512, scale_bad_avx512, diff_avx512};
static pthread_once_t g_kern_once = PTHREAD_ONCE_INIT;
static const kern_t *g_kern = &g_kern_base;
static void kern_init(void) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    g_kern = &g_kern_avx512;
  else if (__builtin_cpu_supports("avx2"))
    g_kern = &g_kern_avx2;
}
static const kern_t *kern(void) {
  pthread_once(&g_kern_once, kern_init);
  return g_kern;
}
int ba_if_set_kernels(int level) {
  pthread_once(&g_kern_once, kern_init);
  if (level >= 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq")) {
    g_kern = &g_kern_avx512;
    return 2;
  }
  if (level >= 1 && __builtin_cpu_supports("avx2")) {
    g_kern = &g_kern_avx2;
    return 1;
  }
  g_kern = &g_kern_base;
  return 0;
}
#else
static const kern_t *kern(void) { return &g_kern_base; }
int ba_if_set_kernels(int level) {
  (void)level;
  return 0;
}
#endif
#undef KERN_COPY
#undef RANGE_WIDTHS

/* The greatest common divisor of every |v[i] - v0| (0 while all are
 * equal); once it is 1 no later row changes it. While it stays above 1
 * (times at a coarser resolution), SCALE_RUN rows at a time are checked by
 * the vectorised kernel, row by row only where one changes it. */
#define SCALE_RUN 256
static uint64_t common_scale(const uint64_t *v, size_t n, uint64_t v0) {
  uint64_t g = 0;
  exdiv_t eg = exdiv_make(1);
  size_t i = 1;
  while (i < n && g != 1) {
    size_t end = i + 1; /* row by row: the first rows (most fields reach 1 there), and while all are equal */
    if (i >= 16 && g) {
      end = BA_MIN(n, i + SCALE_RUN);
      if (!kern()->scale_bad(v + i, end - i, v0, &eg)) {
        i = end;
        continue;
      }
    }
    for (; i < end && g != 1; i++) {
      uint64_t d = v[i] >= v0 ? v[i] - v0 : v0 - v[i];
      if (g == 0 || !exdiv_divides(&eg, d)) { /* (d = 0 divides; no test for it: unpredictable) */
        g = gcd64(g, d);
        if (g) eg = exdiv_make(g);
      }
    }
  }
  return g;
}

/* dict_pass's loop; direct and with_s are constants at each call, so each
 * call is its own loop without their tests (the direct one: the slot from
 * the value, no hash, no probe, four counts per slot; the hashed one
 * without a branch on whether a row's value was seen, as pdict_plan's). */
static inline __attribute__((always_inline)) int dict_rows(const dmap_t *dm, const uint64_t *v, size_t n,
                                                           uint64_t *key, uint8_t *used, uint32_t *cnt,
                                                           uint64_t *dict, size_t *nd, uint16_t *s, size_t *stop,
                                                           int direct, int with_s) {
  if (!direct) { /* hashed: wide values (addresses, counters), seen or not as random as they are */
    size_t d = *nd;
    for (size_t i = 0; i < n; i++) {
      const uint64_t x = v[i];
      size_t h = dict_hash(x);
      uint32_t seen;
      for (;;) { /* one branch, taken only on a collision */
        seen = used[h];
        uint32_t other = key[h] != x;
        __asm__("" : "+r"(other)); /* kept a value: one test of both, no branch on either */
        if (__builtin_expect(!(seen & other), 1)) break;
        h = (h + 1) & (DICT_SLOTS - 1);
      }
      if (with_s) s[i] = (uint16_t)h;
      /* no branch on "seen" either: every row stores the slot's count, key
       * and mark and dict[d], which only a new value keeps (d += 1) */
      cnt[h] = (cnt[h] & (0u - seen)) + 1;
      key[h] = x;
      used[h] = 1;
      dict[d] = x;
      d += !seen;
      if (__builtin_expect(d > DICT_MAX, 0)) { /* (dict holds DICT_MAX + 1) */
        used[h] = 0; /* as the branchy pass leaves it: the value not taken */
        *nd = DICT_MAX;
        *stop = i;
        return 0;
      }
    }
    *nd = d;
    return 1;
  }
  /* Direct: few values (protocols, flags, masks), often the same in row
   * after row, whose count incremented in memory row after row made a
   * chain of store-to-load latencies: four counts per slot, row i's in
   * c4[i % 4], summed into cnt at the end (or where the pass gives up). A
   * slot's four are zeroed at its value's first sight. */
  uint32_t c4[4][DICT_SLOTS];
  size_t i = 0;
  int ok = 1;
#define DICT_ROW(q)                          \
  do {                                       \
    const uint64_t x_ = v[i + (q)];          \
    const size_t h_ = dmap_slot(dm, x_);     \
    if (with_s) s[i + (q)] = (uint16_t)h_;   \
    if (__builtin_expect(!used[h_], 0)) {    \
      if (*nd == DICT_MAX) {                 \
        *stop = i + (q);                     \
        ok = 0;                              \
        goto done;                           \
      }                                      \
      used[h_] = 1;                          \
      key[h_] = x_;                          \
      dict[(*nd)++] = x_;                    \
      c4[0][h_] = c4[1][h_] = c4[2][h_] = c4[3][h_] = 0; \
    }                                        \
    c4[q][h_]++;                             \
  } while (0)
  for (; i + 4 <= n; i += 4) {
    DICT_ROW(0);
    DICT_ROW(1);
    DICT_ROW(2);
    DICT_ROW(3);
  }
  for (; i < n; i++) DICT_ROW(0);
#undef DICT_ROW
done:
  for (size_t d = 0; d < *nd; d++) {
    const size_t h = dmap_slot(dm, dict[d]);
    cnt[h] = c4[0][h] + c4[1][h] + c4[2][h] + c4[3][h];
  }
  return ok;
}

/* The distinct values, up to DICT_MAX: the table (key, used, cnt: the rows
 * of each), the values in first-seen order in dict[*nd]; each row's slot in
 * *hs (x's scratch; NULL without memory: a writer probes again). 0 when
 * there are more than DICT_MAX: then rows [0, *stop) are counted (their
 * DICT_MAX values in dict, their slots in *hs) and row *stop holds the next
 * new value. */
static int dict_pass(enc_scratch_t *x, const dmap_t *dm, const uint64_t *v, size_t n, uint64_t *key, uint8_t *used,
                     uint32_t *cnt, uint64_t *dict, size_t *nd, uint16_t **hs, size_t *stop) {
  memset(used, 0, DICT_SLOTS);
  uint16_t *s = x->hs;
  if (x->hscap < n) {
    void *q = x->hs;
    s = ba_grow(&q, &x->hscap, n, sizeof *x->hs) == BA_OK ? q : NULL;
    x->hs = q;
  }
  *hs = s;
  if (dm->direct) return s ? dict_rows(dm, v, n, key, used, cnt, dict, nd, s, stop, 1, 1)
                           : dict_rows(dm, v, n, key, used, cnt, dict, nd, s, stop, 1, 0);
  return s ? dict_rows(dm, v, n, key, used, cnt, dict, nd, s, stop, 0, 1)
           : dict_rows(dm, v, n, key, used, cnt, dict, nd, s, stop, 0, 0);
}

/* A DICT field's sorted dictionary at p (w bytes per entry); each v[i]
 * becomes its entry's index. Returns the end of the dictionary. */
static uint8_t *write_dict(uint8_t *p, uint64_t *v, size_t n, unsigned w, uint64_t *dict, size_t nd,
                           const uint64_t *key, const uint16_t *hs, const dmap_t *dm) {
  uint16_t slot_of[DICT_SLOTS];
  ba_if_sort_u64(dict, nd); /* nd <= DICT_MAX */
  for (size_t d = 0; d < nd; d++) {
    for (unsigned b = 0; b < w; b++) *p++ = (uint8_t)(dict[d] >> (8 * b));
    slot_of[dmap_find(dm, key, dict[d])] = (uint16_t)d;
  }
  if (hs) {
    for (size_t i = 0; i < n; i++) v[i] = slot_of[hs[i]];
  } else {
    for (size_t i = 0; i < n; i++) v[i] = slot_of[dmap_find(dm, key, v[i])];
  }
  return p;
}

/* What encode2_int chooses from: the bit widths of FOR, DELTA and DICT and
 * the cheapest of FOR, FOR in byte planes, DELTA, DELTA in planes and DICT
 * (best 0..4) with its size in bits. */
typedef struct widths {
  unsigned b_for, b_delta, b_dict;
  int best;
  uint64_t best_cost;
} widths_t;

/* Sizes in bits: packed = n * width. Byte planes: LZO has no entropy coder,
 * so a plane costs a byte a row unless it is mostly zero, where each nonzero
 * byte costs about three (a literal between two matches): skewed values, a
 * few large among many small, favour planes. */
static void choose_method(const uint64_t *v, size_t n, unsigned w, int allow_planes, uint64_t mn, uint64_t mx,
                          uint64_t v0, uint64_t zmax, uint64_t sc, const exdiv_t *esc, size_t nd, int dict_ok,
                          widths_t *o) {
  uint64_t m = wmask(w);
  uint64_t maxk = 0, maxz = 0, prev = 0, nzk[8] = {0}, nzz[8] = {0};
  if (allow_planes) {
    for (size_t i = 0; i < n; i++) {
      uint64_t k = exdiv_div(esc, v[i] - mn);
      uint64_t z = zz((k - prev) & m, w, m);
      if (k > maxk) maxk = k;
      if (z > maxz) maxz = z;
      for (unsigned b = 0; b < w; b++) {
        nzk[b] += ((k >> (8 * b)) & 0xff) != 0;
        nzz[b] += ((z >> (8 * b)) & 0xff) != 0;
      }
      prev = k;
    }
  } else if (sc == 1) { /* 3.0 (no planes), the common scale: from the first pass */
    if (n) {
      uint64_t z0 = zz((v0 - mn) & m, w, m); /* row 0's delta is from 0 */
      maxk = mx - mn;
      maxz = z0 | zmax; /* only its bit length is used */
    }
  } else if (n) {
    /* 3.0, a common scale sc >= 2 (times at a coarser resolution): every
     * difference of scaled values (v[i] - v[j]) / sc lies inside w bytes'
     * signed range, so no zigzag wraps and DELTA's largest is that of the
     * largest rise or fall divided by sc (exactly: both multiples of it), or
     * row 0's (from 0): 2 * (v0 - mn) / sc. No division or zigzag per row
     * (test_intfield_ref checks the widths against every row's). */
    uint64_t up = 0, down = 0;
    kern()->diff(v, n, &up, &down);
    maxk = exdiv_div(esc, mx - mn);
    maxz = 2 * exdiv_div(esc, v0 - mn);
    uint64_t zu = 2 * exdiv_div(esc, up), zd = down ? 2 * exdiv_div(esc, down) - 1 : 0;
    maxz = zu > maxz ? zu : maxz;
    maxz = zd > maxz ? zd : maxz;
  }
  o->b_for = bitlen(maxk);
  o->b_delta = bitlen(maxz);
  o->b_dict = nd > 1 ? bitlen(nd - 1) : 0;
  uint64_t pl_k = 0, pl_z = 0;
  for (unsigned b = 0; b < w; b++) {
    pl_k += BA_MIN(8ull * n, 24 * nzk[b]);
    pl_z += BA_MIN(8ull * n, 24 * nzz[b]);
  }
  uint64_t cost[5] = {(uint64_t)n * o->b_for, allow_planes ? pl_k : UINT64_MAX, (uint64_t)n * o->b_delta,
                      allow_planes ? pl_z : UINT64_MAX,
                      dict_ok && nd ? (uint64_t)n * o->b_dict + 8ull * w * nd : UINT64_MAX};
  o->best = 0;
  for (int c = 1; c < 5; c++)
    if (cost[c] < cost[o->best]) o->best = c;
  o->best_cost = cost[o->best];
}

/* A FOR or DELTA field's values at p: bit-packed as transformed, or (2.0)
 * transformed into v and written in byte planes. Returns the end. */
static uint8_t *write_for_delta(uint8_t *p, uint64_t *v, size_t n, unsigned w, int method, int planes,
                                unsigned bits, uint64_t mn, uint64_t sc, const exdiv_t *esc) {
  uint64_t m = wmask(w), prev = 0;
  if (!planes) { /* packed as transformed: no pass writing v back */
    bitw_t bw = {p, 0, 0};
    if (bits && method == XF_FOR && sc == 1) {
      BITW_PUT_ROWS(&bw, n, bits, i, v[i] - mn);
    } else if (bits && method == XF_FOR) {
      BITW_PUT_ROWS(&bw, n, bits, i, exdiv_div(esc, v[i] - mn));
    } else if (bits) {
      for (size_t i = 0; i < n; i++) {
        uint64_t k = exdiv_div(esc, v[i] - mn);
        bitw_put(&bw, zz((k - prev) & m, w, m), bits);
        prev = k;
      }
    }
    return bitw_end(&bw);
  }
  for (size_t i = 0; i < n; i++) {
    uint64_t k = exdiv_div(esc, v[i] - mn);
    v[i] = method == XF_DELTA ? zz((k - prev) & m, w, m) : k;
    prev = k;
  }
  unsigned nb = (bits + 7) / 8;
  for (unsigned b = 0; b < nb; b++)
    for (size_t i = 0; i < n; i++) p[(size_t)b * n + i] = (uint8_t)(v[i] >> (8 * b));
  return p + (size_t)nb * n;
}

static size_t encode2_int(enc_scratch_t *x, uint64_t *v, size_t n, unsigned w, int allow_planes,
                          uint8_t *out) {
  uint64_t mn = UINT64_MAX, mx = 0, g, v0 = n ? v[0] : 0;
  /* zmax: the largest zigzag row-to-row difference from row 1 on, which is
   * DELTA's width at scale 1 whatever the minimum (it cancels). */
  uint64_t zmax = 0; /* here the OR of those differences: the same bit length */
  kern()->range(v, n, w, &mn, &mx, &zmax);
  x->mn = n ? mn : 0;
  x->mx = mx;
  if (n && mn == mx) {
    /* One value in every row (IPv4-mapped words, engine ids, ...): FOR at
     * width 0, the value as the base and scale 1, no bits. What the general
     * path below chooses for it (every cost 0 or more, FOR first). */
    memset(out, 0, BA_COL2_FIELD_HDR);
    out[0] = XF_FOR;
    ba_store_le64(out + 8, mn);
    ba_store_le64(out + 16, 1);
    return BA_COL2_FIELD_HDR;
  }
  /* The common scale: the gcd of every |v[i] - v0| (0 while all are equal);
   * once it is 1 no later row changes it. */
  g = common_scale(v, n, v0);
  if (!n) mn = 0;
  uint64_t sc = g ? g : 1;
  /* Every v[i] - mn is a multiple of sc (both v[i] - v0 and mn - v0 are). */
  const exdiv_t esc = exdiv_make(sc);
  /* Distinct values, up to DICT_MAX. */
  uint64_t key[DICT_SLOTS];
  uint8_t used[DICT_SLOTS];
  uint32_t cnt[DICT_SLOTS];
  uint64_t dict[DICT_MAX + 1]; /* (dict_rows stores one past the last) */
  size_t nd = 0;
  uint16_t *hs = NULL;
  dmap_t dm = {exdiv_div(&esc, mx - mn) < DICT_SLOTS, mn, esc};
  size_t stop = 0;
  int dict_ok = dict_pass(x, &dm, v, n, key, used, cnt, dict, &nd, &hs, &stop);
  widths_t wd;
  choose_method(v, n, w, allow_planes, mn, mx, v0, zmax, sc, &esc, nd, dict_ok, &wd);
  unsigned b_for = wd.b_for, b_delta = wd.b_delta, b_dict = wd.b_dict;
  int best = wd.best;
  uint64_t cost_best = wd.best_cost;
  /* Many distinct values, some frequent (ports: a few services among
   * ephemeral ports): a dictionary of the frequent ones may win. */
  /* 3.0: a few values dominate (a mostly-zero field, small packet
   * counts): the frequent ones in a dictionary of b bits, the rest as
   * exceptions, estimated from the dictionary pass's counts first. */
  if (!allow_planes && dict_ok && nd > 2 && b_for >= 2 &&
      ba_if_pdict_estimate(key, used, cnt, nd, n, w, b_for) < cost_best) {
    unsigned pb = 0;
    size_t pk = 0;
    if (hs && nd < DICT_MAX) {
      /* The dictionary pass counted every row and kept its slot: planned
       * and written from that table, no second counting pass. The same
       * plan as pdict_plan's (the same counts in the same first-seen
       * order; nd < DICT_MAX: not every one of the first 256 rows
       * distinct, where pdict_plan gives up). */
      uint16_t ins[DICT_MAX];
      for (size_t d = 0; d < nd; d++) ins[d] = (uint16_t)dmap_find(&dm, key, dict[d]);
      uint64_t pc = ba_if_pdict_choose(x, ins, nd, cnt, key, n, w, b_for, &pb, &pk);
      if (pc < cost_best) {
        uint64_t pd[256];
        uint32_t tab[DICT_SLOTS]; /* slot -> dictionary index + 1, 0: an exception (slots of ins only) */
        ba_if_pdict_dict(x, pk, pd);
        for (size_t d = 0; d < nd; d++) tab[ins[d]] = 0;
        for (size_t d = 0; d < pk; d++) tab[dmap_find(&dm, key, pd[d])] = (uint32_t)d + 1;
        return ba_if_pdict_write(v, n, w, pb, pd, pk, hs, tab, ins, nd, key, out);
      }
    } else {
      uint64_t pc = ba_if_pdict_plan(x, v, n, w, b_for, &pb, &pk);
      if (pc < cost_best) return ba_if_pdict_write_plan(x, v, n, w, pb, pk, out);
    }
  }
  if (!dict_ok && b_for >= 6) {
    unsigned pb = 0;
    size_t pk = 0;
    uint64_t pc;
    if (hs) { /* the plan goes on from the dictionary pass's count of rows [0, stop) */
      uint8_t d_of[DICT_SLOTS]; /* slot -> index in dict (first-seen order) */
      uint32_t dc[DICT_MAX];
      for (size_t d = 0; d < DICT_MAX; d++) {
        size_t h = dmap_find(&dm, key, dict[d]);
        d_of[h] = (uint8_t)d;
        dc[d] = cnt[h];
      }
      pc = ba_if_pdict_plan_from(x, v, n, stop, dict, dc, hs, d_of, w, b_for, &pb, &pk);
    } else {
      pc = ba_if_pdict_plan(x, v, n, w, b_for, &pb, &pk);
    }
    if (pc < cost_best) return ba_if_pdict_write_plan(x, v, n, w, pb, pk, out);
  }
  int method = best < 2 ? XF_FOR : best < 4 ? XF_DELTA : XF_DICT;
  int planes = best == 1 || best == 3;
  unsigned bits = method == XF_FOR ? b_for : method == XF_DELTA ? b_delta : b_dict;
  uint8_t *p = out;
  memset(p, 0, BA_COL2_FIELD_HDR);
  p[0] = (uint8_t)method;
  p[1] = (uint8_t)bits;
  p[2] = (uint8_t)planes;
  if (method == XF_DICT) {
    ba_store_le32(p + 4, (uint32_t)nd);
    ba_store_le64(p + 16, 1);
    p = write_dict(p + BA_COL2_FIELD_HDR, v, n, w, dict, nd, key, hs, &dm);
    bitw_t bw = {p, 0, 0};
    BITW_PUT_ROWS(&bw, n, bits, i, v[i]);
    return (size_t)(bitw_end(&bw) - out);
  }
  ba_store_le64(p + 8, mn);
  ba_store_le64(p + 16, sc);
  return (size_t)(write_for_delta(p + BA_COL2_FIELD_HDR, v, n, w, method, planes, bits, mn, sc, &esc) - out);
}

/* The smallest of FOR, DELTA, DICT and PDICT, bit-packed or in byte planes.
 * v: the n values (clobbered). Returns the field's bytes. */
size_t ba_if_encode(ba_col_scratch_t *x, uint64_t *v, size_t n, unsigned w, int allow_planes, uint8_t *out) {
  return encode2_int(x, v, n, w, allow_planes, out);
}


void ba_if_range(const ba_col_scratch_t *x, uint64_t *mn, uint64_t *mx) {
  *mn = x->mn;
  *mx = x->mx;
}

int ba_if_scratch_values(ba_col_scratch_t *x, size_t n, uint64_t **v) {
  if (x->vcap < n + 1) {
    void *q = x->v;
    int rc = ba_grow(&q, &x->vcap, n + 1, sizeof *x->v);
    x->v = q;
    BA_FORWARD(rc);
  }
  *v = x->v;
  return BA_OK;
}

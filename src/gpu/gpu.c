/* C front of the GPU module: device selection, argument checks, splitting of
 * large batches into device pieces and joining their columns, the CPU device
 * (the library's own online builder), and range queries. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitarc/gpu.h"
#include "common/common.h"
#include "gpu/gpu_internal.h"

struct ba_gpu {
  ba_device_t dev;
  const ba_gpu_backend_t *be; /* the loaded device module (omp, gpu); NULL for cpu */
  size_t max_batch;
  ba_gpu_times_t times;
  char err[BA_GPU_ERRMSG_LEN];
};

static const char *const device_names[] = {"cpu", "omp", "gpu"};

const char *ba_device_name(ba_device_t dev) {
  return (unsigned)dev < BA_ARRAY_LEN(device_names) ? device_names[dev] : NULL;
}

int ba_device_from_name(const char *name, ba_device_t *out) {
  if (!name || !out) return BA_ERR_INVALID;
  for (unsigned i = 0; i < BA_ARRAY_LEN(device_names); i++)
    if (strcmp(name, device_names[i]) == 0) {
      *out = (ba_device_t)i;
      return BA_OK;
    }
  return BA_ERR_INVALID;
}

static int seterr(ba_gpu_t *g, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int seterr(ba_gpu_t *g, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g->err, sizeof g->err, fmt, ap);
  va_end(ap);
  return code;
}

static void copy_why(char *why, size_t cap, const char *msg) {
  if (why && cap) snprintf(why, cap, "%s", msg);
}

int ba_gpu_open(ba_device_t dev, ba_gpu_t **out, char *why, size_t whycap) {
  const ba_gpu_backend_t *be = NULL;
  if (!out) return BA_ERR_INVALID;
  *out = NULL;
  copy_why(why, whycap, "");
  switch (dev) {
  case BA_DEVICE_CPU: break;
  case BA_DEVICE_OMP:
  case BA_DEVICE_GPU: {
    int rc = dev == BA_DEVICE_OMP ? ba_gpu_omp_backend(&be, why, whycap) : ba_gpu_cuda_backend(&be, why, whycap);
    if (rc < 0) return rc;
    if ((rc = be->probe(why, whycap)) < 0) return rc;
    break;
  }
  default: copy_why(why, whycap, "unknown device"); return BA_ERR_INVALID;
  }
  ba_gpu_t *g = ba_calloc(1, sizeof *g);
  if (!g) return BA_ERR_NOMEM;
  g->dev = dev;
  g->be = be;
  *out = g;
  return BA_OK;
}

void ba_gpu_close(ba_gpu_t *g) { ba_free(g); }
ba_device_t ba_gpu_device(const ba_gpu_t *g) { return g->dev; }
const char *ba_gpu_errmsg(const ba_gpu_t *g) { return g ? g->err : ""; }
const ba_gpu_times_t *ba_gpu_last_times(const ba_gpu_t *g) { return &g->times; }

int ba_gpu_set_max_batch(ba_gpu_t *g, size_t rows) {
  if (!g) return BA_ERR_INVALID;
  if (rows != 0 && rows < 64) return seterr(g, BA_ERR_INVALID, "max batch %zu: must be 0 or >= 64", rows);
  g->max_batch = rows;
  return BA_OK;
}

static const char *const step_names[BA_GPU_NSTEPS] = {
    "copy-in", "sort", "literals", "fills", "fuse", "meta", "copy-out", "join", "decompress", "reduce",
    "compress"};
const char *ba_gpu_step_name(unsigned step) { return step < BA_GPU_NSTEPS ? step_names[step] : NULL; }

static const char *const alg_names[] = {"auto", "coa", "roa", "hybrid", "ideal"};
const char *ba_gpu_range_alg_name(ba_gpu_range_alg_t alg) {
  return (unsigned)alg < BA_ARRAY_LEN(alg_names) ? alg_names[alg] : NULL;
}
int ba_gpu_range_alg_from_name(const char *name, ba_gpu_range_alg_t *out) {
  if (!name || !out) return BA_ERR_INVALID;
  for (unsigned i = 0; i < BA_ARRAY_LEN(alg_names); i++)
    if (strcmp(name, alg_names[i]) == 0) {
      *out = (ba_gpu_range_alg_t)i;
      return BA_OK;
    }
  return BA_ERR_INVALID;
}

/* ------------------------------------------------------------ the index --- */

void ba_gpu_index_free(ba_gpu_index_t *ix) {
  if (!ix) return;
  ba_free(ix->keys);
  ba_free(ix->offsets);
  ba_free(ix->words);
  ba_free(ix);
}

int ba_gpu_index_find(const ba_gpu_index_t *ix, uint32_t value, size_t *i) {
  if (!ix || !i) return BA_ERR_INVALID;
  size_t lo = 0, hi = ix->nkeys;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ix->keys[mid] < value)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == ix->nkeys || ix->keys[lo] != value) return BA_ERR_NOT_FOUND;
  *i = lo;
  return BA_OK;
}

int ba_gpu_index_bitmap(const ba_gpu_index_t *ix, size_t i, ba_bitmap_t **out) {
  if (!ix || !out || i >= ix->nkeys) return BA_ERR_INVALID;
  size_t wb = ba_codec_word_bits(ix->codec) / 8;
  uint64_t a = ix->offsets[i], b = ix->offsets[i + 1];
  if (a > b || b > ix->nwords) return BA_ERR_CORRUPT;
  return ba_bitmap_from_words(ix->codec, (const uint8_t *)ix->words + a * wb, (size_t)(b - a), ix->nrows, out);
}

static int codec_kind(ba_codec_t c) {
  switch (c) {
  case BA_CODEC_WAH32: return BA_GPU_K_WAH32;
  case BA_CODEC_WAH64: return BA_GPU_K_WAH64;
  case BA_CODEC_PLWAH: return BA_GPU_K_PLWAH;
  case BA_CODEC_MASC: return BA_GPU_K_MASC;
  case BA_CODEC_MASC_QT: return BA_GPU_K_MASC_QT;
  default: return -1;
  }
}

/* Rows per group of the codec's word grid (MASC has none: any piece size
 * works, 31 keeps pieces aligned like the others). */
static unsigned codec_group(ba_codec_t c) { return c == BA_CODEC_WAH64 ? 63 : 31; }

/* Growable word vector (4- or 8-byte words). */
typedef struct {
  uint8_t *w;
  size_t n, cap;
} wvec_t;

static int wvec_append(wvec_t *v, const void *src, size_t nw, size_t wb) {
  if (nw == 0) return BA_OK;
  BA_FORWARD(ba_grow((void **)&v->w, &v->cap, v->n + nw, wb));
  memcpy(v->w + v->n * wb, src, nw * wb);
  v->n += nw;
  return BA_OK;
}

static uint64_t word_at(const void *w, size_t i, size_t wb) {
  return wb == 8 ? ((const uint64_t *)w)[i] : ((const uint32_t *)w)[i];
}

/* Rows covered by one word (doc/codecs.md §2-§5). */
static uint64_t word_rows(ba_codec_t c, uint64_t x) {
  switch (c) {
  case BA_CODEC_WAH32: return (x >> 31) ? (x & 0x3FFFFFFFu) * 31 : 31;
  case BA_CODEC_WAH64: return (x >> 63) ? (x & 0x3FFFFFFFFFFFFFFFull) * 63 : 63;
  case BA_CODEC_PLWAH: return (x >> 31) ? ((x & 0x1FFFFFFu) + (((x >> 25) & 31) ? 1 : 0)) * 31 : 31;
  default: { /* masc, masc-qt */
    uint64_t len = ((x >> 5) & 0xFFFFFu) * 31 + (x & 31);
    if (!(x >> 31) && ((x >> 30) & 1)) len += (x >> 25) & 31;
    return len;
  }
  }
}

/* A fill at its largest count: the canonical encoder splits a long run into
 * such words, so a join must look past them. */
static int word_saturated(ba_codec_t c, uint64_t x) {
  switch (c) {
  case BA_CODEC_WAH32: return (x >> 31) && (x & 0x3FFFFFFFu) == 0x3FFFFFFFu;
  case BA_CODEC_WAH64: return (x >> 63) && (x & 0x3FFFFFFFFFFFFFFFull) == 0x3FFFFFFFFFFFFFFFull;
  case BA_CODEC_PLWAH: return (x >> 31) && (x & 0x1FFFFFFu) == 0x1FFFFFFu;
  default: return ((x >> 5) & 0xFFFFFu) == 0xFFFFFu && (x & 31) == 30;
  }
}

/* Canonical words of `rows` zero rows. */
static int zeros_append(wvec_t *v, ba_codec_t c, uint64_t rows) {
  size_t wb = ba_codec_word_bits(c) / 8;
  if (c == BA_CODEC_MASC || c == BA_CODEC_MASC_QT) {
    const uint64_t mx = (uint64_t)((1u << 20) - 1) * 31 + 30;
    while (rows > 0) {
      uint64_t l = rows > mx ? mx : rows;
      uint32_t w = (uint32_t)((l / 31) << 5) | (uint32_t)(l % 31);
      BA_FORWARD(wvec_append(v, &w, 1, 4));
      rows -= l;
    }
    return BA_OK;
  }
  uint64_t G = codec_group(c), groups = (rows + G - 1) / G;
  uint64_t mx = c == BA_CODEC_PLWAH ? 0x1FFFFFFu : (c == BA_CODEC_WAH32 ? 0x3FFFFFFFu : 0x3FFFFFFFFFFFFFFFull);
  while (groups > 0) {
    uint64_t k = groups > mx ? mx : groups;
    if (wb == 8) {
      uint64_t w = (1ull << 63) | k;
      BA_FORWARD(wvec_append(v, &w, 1, 8));
    } else {
      uint32_t w = 0x80000000u | (uint32_t)k;
      BA_FORWARD(wvec_append(v, &w, 1, 4));
    }
    groups -= k;
  }
  return BA_OK;
}

static int append_run_cb(void *ctx, int value, uint64_t start, uint64_t nrows) {
  (void)start;
  return ba_bitmap_append_run((ba_bitmap_t *)ctx, value, nrows);
}

/* Appends column piece B (rows_b rows, starting on a group boundary) to column
 * A (*rows_a rows, a whole number of groups). Only the words around the seam
 * can change (a fill continued across it, a PLWAH piggyback, a MASC carrier):
 * the last words of A and the first of B are decoded and re-encoded by the
 * CPU codec, the rest is copied. */
static int column_join(ba_codec_t c, wvec_t *a, uint64_t *rows_a, const void *b, size_t nb, uint64_t rows_b) {
  size_t wb = ba_codec_word_bits(c) / 8;
  if (rows_b == 0) return BA_OK;
  if (a->n == 0) {
    *rows_a += rows_b;
    return wvec_append(a, b, nb, wb);
  }
  size_t i = a->n >= 2 ? a->n - 2 : 0;
  while (i > 0 && word_saturated(c, word_at(a->w, i - 1, wb))) i--;
  size_t j = nb < 2 ? nb : 2;
  while (j < nb && word_saturated(c, word_at(b, j - 1, wb))) j++;
  uint64_t tail_rows = 0, head_rows = 0;
  for (size_t k = i; k < a->n; k++) tail_rows += word_rows(c, word_at(a->w, k, wb));
  if (j == nb)
    head_rows = rows_b;
  else
    for (size_t k = 0; k < j; k++) head_rows += word_rows(c, word_at(b, k, wb));
  ba_bitmap_t *ta = NULL, *hb = NULL, *s = NULL;
  int rc = ba_bitmap_from_words(c, a->w + i * wb, a->n - i, tail_rows, &ta);
  if (rc == BA_OK) rc = ba_bitmap_from_words(c, b, j, head_rows, &hb);
  if (rc == BA_OK) rc = ba_bitmap_create(c, &s);
  if (rc == BA_OK) rc = ba_bitmap_foreach_run(ta, append_run_cb, s);
  if (rc == BA_OK) rc = ba_bitmap_foreach_run(hb, append_run_cb, s);
  if (rc == BA_OK) rc = ba_bitmap_finish(s, tail_rows + head_rows);
  if (rc == BA_OK) {
    size_t ns = 0;
    const void *sw = ba_bitmap_words(s, &ns);
    a->n = i;
    rc = wvec_append(a, sw, ns, wb);
    if (rc == BA_OK) rc = wvec_append(a, (const uint8_t *)b + j * wb, nb - j, wb);
    *rows_a += rows_b;
  }
  ba_bitmap_free(ta);
  ba_bitmap_free(hb);
  ba_bitmap_free(s);
  return rc;
}

typedef struct {
  uint32_t key;
  wvec_t w;
  uint64_t rows; /* rows encoded in w; the rest up to joiner_t.rows are zeros to come */
} jcol_t;

/* The joined columns of a split batch, keys ascending. */
typedef struct {
  jcol_t *col;
  size_t n;
  uint64_t rows;
} joiner_t;

static void joiner_free(joiner_t *jn) {
  for (size_t i = 0; i < jn->n; i++) ba_free(jn->col[i].w.w);
  ba_free(jn->col);
}

/* Brings column o up to `rows` rows with zeros (deferred while the value is
 * absent from pieces, so absent values cost nothing per piece). */
static int jcol_pad(ba_codec_t c, jcol_t *o, uint64_t rows) {
  if (o->rows >= rows) return BA_OK;
  uint64_t add = rows - o->rows;
  wvec_t z = {0};
  int rc = zeros_append(&z, c, add);
  if (rc == BA_OK) rc = column_join(c, &o->w, &o->rows, z.w, z.n, add);
  ba_free(z.w);
  return rc;
}

/* Adds the columns of one piece (rows_p rows) after the rows joined so far. */
static int joiner_add(joiner_t *jn, ba_codec_t c, const ba_gpu_piece_t *p, uint64_t rows_p) {
  size_t wb = ba_codec_word_bits(c) / 8;
  size_t nn = 0, ia = 0, ib = 0, nnew = 0;
  for (size_t i = 0, k = 0; i < p->nkeys; i++) { /* keys new to the join */
    while (k < jn->n && jn->col[k].key < p->keys[i]) k++;
    nnew += !(k < jn->n && jn->col[k].key == p->keys[i]);
  }
  jcol_t *col = jn->col;
  if (nnew) { /* merge the new keys in, keeping the order */
    col = ba_calloc(jn->n + nnew, sizeof *col);
    if (!col) return BA_ERR_NOMEM;
    while (ia < jn->n || ib < p->nkeys) {
      if (ib == p->nkeys || (ia < jn->n && jn->col[ia].key <= p->keys[ib])) {
        if (ib < p->nkeys && jn->col[ia].key == p->keys[ib]) ib++;
        col[nn++] = jn->col[ia++];
      } else {
        col[nn].key = p->keys[ib++];
        nn++;
      }
    }
    ba_free(jn->col);
    jn->col = col;
    jn->n = nn;
  }
  int rc = BA_OK;
  for (size_t i = 0, k = 0; i < p->nkeys && rc == BA_OK; i++) {
    while (col[k].key < p->keys[i]) k++;
    rc = jcol_pad(c, &col[k], jn->rows);
    const uint8_t *pw = (const uint8_t *)p->words + p->offsets[i] * wb;
    if (rc == BA_OK) rc = column_join(c, &col[k].w, &col[k].rows, pw, (size_t)(p->offsets[i + 1] - p->offsets[i]), rows_p);
  }
  jn->rows += rows_p;
  return rc;
}

static int joiner_to_index(joiner_t *jn, ba_codec_t c, ba_gpu_index_t *ix, size_t wb) {
  size_t total = 0;
  for (size_t i = 0; i < jn->n; i++) {
    BA_FORWARD(jcol_pad(c, &jn->col[i], jn->rows));
    total += jn->col[i].w.n;
  }
  ix->keys = ba_malloc(jn->n ? jn->n * sizeof(uint32_t) : 1);
  ix->offsets = ba_malloc((jn->n + 1) * sizeof(uint64_t));
  ix->words = ba_malloc(total ? total * wb : 1);
  if (!ix->keys || !ix->offsets || !ix->words) return BA_ERR_NOMEM;
  size_t at = 0;
  for (size_t i = 0; i < jn->n; i++) {
    ix->keys[i] = jn->col[i].key;
    ix->offsets[i] = at;
    if (jn->col[i].w.n) memcpy((uint8_t *)ix->words + at * wb, jn->col[i].w.w, jn->col[i].w.n * wb);
    at += jn->col[i].w.n;
  }
  ix->offsets[jn->n] = at;
  ix->nkeys = jn->n;
  ix->nwords = total;
  return BA_OK;
}

/* Rows per device piece: the user's limit, the device memory, and the 32-bit
 * row ids of the pipeline; rounded down to whole groups. */
static size_t piece_rows(const ba_gpu_t *g, ba_codec_t c, size_t n) {
  size_t lim = (size_t)1 << 31;
  if (g->max_batch) lim = BA_MIN(lim, g->max_batch);
  if (g->be) {
    size_t bud = g->be->mem_budget();
    if (bud) lim = BA_MIN(lim, BA_MAX(bud / 48, (size_t)1 << 16));
  }
  if (n <= lim) return n;
  size_t G = codec_group(c);
  return BA_MAX(G, lim / G * G);
}

static int run_piece(ba_gpu_t *g, ba_gpu_piece_t *p) {
  if (g->be) return g->be->build(p, g->err, sizeof g->err);
  (void)p;
  return seterr(g, BA_ERR_NODEVICE, "device %s not built", ba_device_name(g->dev));
}

static void piece_free(ba_gpu_piece_t *p) {
  ba_free(p->keys);
  ba_free(p->offsets);
  ba_free(p->words);
  p->keys = NULL;
  p->offsets = NULL;
  p->words = NULL;
}

static int build_device(ba_gpu_t *g, ba_codec_t codec, const uint32_t *values, size_t n, unsigned key_bits,
                        ba_gpu_index_t *ix) {
  size_t wb = ba_codec_word_bits(codec) / 8;
  size_t per = piece_rows(g, codec, n);
  ba_gpu_piece_t p;
  memset(&p, 0, sizeof p);
  p.key_bits = key_bits;
  p.kind = codec_kind(codec);
  if (per >= n) { /* one piece: the device output is the index */
    p.values = values;
    p.n = n;
    int rc = run_piece(g, &p);
    for (unsigned s = 0; s < BA_GPU_NSTEPS; s++) g->times.ms[s] += p.ms[s];
    g->times.pieces = 1;
    if (rc < 0) {
      piece_free(&p);
      return rc;
    }
    ix->keys = p.keys;
    ix->offsets = p.offsets;
    ix->words = p.words;
    ix->nkeys = p.nkeys;
    ix->nwords = p.nwords;
    return BA_OK;
  }
  joiner_t jn;
  memset(&jn, 0, sizeof jn);
  int rc = BA_OK;
  for (size_t at = 0; at < n && rc == BA_OK; at += per) {
    size_t len = BA_MIN(per, n - at);
    memset(p.ms, 0, sizeof p.ms);
    p.values = values + at;
    p.n = len;
    rc = run_piece(g, &p);
    for (unsigned s = 0; s < BA_GPU_NSTEPS; s++) g->times.ms[s] += p.ms[s];
    g->times.pieces++;
    if (rc == BA_OK) {
      uint64_t t0 = ba_now_ns();
      rc = joiner_add(&jn, codec, &p, len);
      g->times.ms[BA_GPU_STEP_JOIN] += (double)(ba_now_ns() - t0) / 1e6;
      if (rc < 0) seterr(g, rc, "joining piece at row %zu: %s", at, ba_strerror(rc));
    }
    piece_free(&p);
  }
  if (rc == BA_OK) rc = joiner_to_index(&jn, codec, ix, wb);
  joiner_free(&jn);
  return rc;
}

/* The CPU device: the codec's online builder, one ba_bitmap_set per row
 * (Lemire's algorithm as in IMC'13's CPU baseline). */
static int build_cpu(ba_gpu_t *g, ba_codec_t codec, const uint32_t *values, size_t n, uint64_t card,
                     ba_gpu_index_t *ix) {
  size_t wb = ba_codec_word_bits(codec) / 8;
  /* values present, ascending, and a map value -> column */
  uint32_t *keys = NULL;
  size_t nkeys = 0;
  uint8_t *seen = NULL;
  uint32_t *slot = NULL;
  ba_bitmap_t **bm = NULL;
  int rc = BA_OK;
  int direct = card <= ((uint64_t)1 << 24);
  if (direct) {
    seen = ba_calloc((size_t)card, 1);
    slot = ba_malloc((size_t)card * sizeof(uint32_t));
    if (!seen || !slot) {
      rc = BA_ERR_NOMEM;
      goto out;
    }
    for (size_t i = 0; i < n; i++) seen[values[i]] = 1;
    for (uint64_t v = 0; v < card; v++) nkeys += seen[v];
    keys = ba_malloc(nkeys ? nkeys * sizeof(uint32_t) : 1);
    if (!keys) {
      rc = BA_ERR_NOMEM;
      goto out;
    }
    nkeys = 0;
    for (uint64_t v = 0; v < card; v++)
      if (seen[v]) {
        slot[v] = (uint32_t)nkeys;
        keys[nkeys++] = (uint32_t)v;
      }
  } else {
    rc = seterr(g, BA_ERR_UNSUPPORTED, "cpu device: cardinality above 2^24 not supported");
    goto out;
  }
  bm = ba_calloc(nkeys ? nkeys : 1, sizeof *bm);
  if (!bm) {
    rc = BA_ERR_NOMEM;
    goto out;
  }
  for (size_t k = 0; k < nkeys && rc == BA_OK; k++) rc = ba_bitmap_create(codec, &bm[k]);
  uint64_t t0 = ba_now_ns();
  for (size_t i = 0; i < n && rc == BA_OK; i++) rc = ba_bitmap_set(bm[slot[values[i]]], i);
  for (size_t k = 0; k < nkeys && rc == BA_OK; k++) rc = ba_bitmap_finish(bm[k], n);
  g->times.ms[BA_GPU_STEP_LITERALS] += (double)(ba_now_ns() - t0) / 1e6;
  if (rc < 0) goto out;
  size_t total = 0;
  for (size_t k = 0; k < nkeys; k++) {
    size_t nw = 0;
    ba_bitmap_words(bm[k], &nw);
    total += nw;
  }
  ix->offsets = ba_malloc((nkeys + 1) * sizeof(uint64_t));
  ix->words = ba_malloc(total ? total * wb : 1);
  if (!ix->offsets || !ix->words) {
    rc = BA_ERR_NOMEM;
    goto out;
  }
  size_t at = 0;
  for (size_t k = 0; k < nkeys; k++) {
    size_t nw = 0;
    const void *w = ba_bitmap_words(bm[k], &nw);
    ix->offsets[k] = at;
    if (nw) memcpy((uint8_t *)ix->words + at * wb, w, nw * wb);
    at += nw;
  }
  ix->offsets[nkeys] = at;
  ix->keys = keys;
  keys = NULL;
  ix->nkeys = nkeys;
  ix->nwords = total;
out:
  if (bm)
    for (size_t k = 0; k < nkeys; k++) ba_bitmap_free(bm[k]);
  ba_free(bm);
  ba_free(keys);
  ba_free(seen);
  ba_free(slot);
  return rc;
}

int ba_gpu_build_index(ba_gpu_t *g, ba_codec_t codec, const uint32_t *values, size_t n, uint64_t cardinality,
                       ba_gpu_index_t **out) {
  if (!g || !out || (n && !values)) return BA_ERR_INVALID;
  *out = NULL;
  g->err[0] = 0;
  memset(&g->times, 0, sizeof g->times);
  if (cardinality < 1 || cardinality > ((uint64_t)1 << 32))
    return seterr(g, BA_ERR_INVALID, "cardinality %llu: must be in 1..2^32", (unsigned long long)cardinality);
  if (!ba_codec_name(codec)) return seterr(g, BA_ERR_INVALID, "unknown codec %d", (int)codec);
  if (g->dev != BA_DEVICE_CPU && codec_kind(codec) < 0)
    return seterr(g, BA_ERR_UNSUPPORTED, "codec %s is not built on the %s device (see src/gpu/README.md)",
                  ba_codec_name(codec), ba_device_name(g->dev));
  for (size_t i = 0; i < n; i++)
    if (values[i] >= cardinality)
      return seterr(g, BA_ERR_INVALID, "row %zu: value %u is not below the cardinality %llu", i, values[i],
                    (unsigned long long)cardinality);
  unsigned key_bits = 1;
  while (key_bits < 32 && ((uint64_t)1 << key_bits) < cardinality) key_bits++;
  ba_gpu_index_t *ix = ba_calloc(1, sizeof *ix);
  if (!ix) return BA_ERR_NOMEM;
  ix->codec = codec;
  ix->nrows = n;
  int rc;
  if (n == 0) {
    ix->keys = ba_malloc(1);
    ix->offsets = ba_calloc(1, sizeof(uint64_t));
    ix->words = ba_malloc(1);
    rc = ix->keys && ix->offsets && ix->words ? BA_OK : BA_ERR_NOMEM;
  } else if (g->dev == BA_DEVICE_CPU) {
    rc = build_cpu(g, codec, values, n, cardinality, ix);
  } else {
    rc = build_device(g, codec, values, n, key_bits, ix);
  }
  if (rc < 0) {
    if (!g->err[0]) seterr(g, rc, "%s", ba_strerror(rc));
    ba_gpu_index_free(ix);
    return rc;
  }
  *out = ix;
  return BA_OK;
}

/* ---------------------------------------------------------- range query --- */

static int range_cpu(ba_gpu_t *g, ba_op_t op, const ba_bitmap_t *const *bms, size_t m, ba_bitmap_t **out) {
  ba_bitmap_t *acc = NULL;
  int rc = ba_bitmap_clone(bms[0], &acc);
  uint64_t t0 = ba_now_ns();
  for (size_t i = 1; i < m && rc == BA_OK; i++) {
    ba_bitmap_t *nx = NULL;
    rc = ba_bitmap_op(op, acc, bms[i], BA_CODEC_WAH64, &nx);
    ba_bitmap_free(acc);
    acc = nx;
  }
  g->times.ms[BA_GPU_STEP_REDUCE] += (double)(ba_now_ns() - t0) / 1e6;
  if (rc < 0) {
    ba_bitmap_free(acc);
    return rc;
  }
  *out = acc;
  return BA_OK;
}

int ba_gpu_range(ba_gpu_t *g, ba_op_t op, const ba_bitmap_t *const *bms, size_t m, ba_gpu_range_alg_t alg,
                 ba_bitmap_t **out) {
  if (!g || !out || !bms || m == 0) return BA_ERR_INVALID;
  *out = NULL;
  g->err[0] = 0;
  memset(&g->times, 0, sizeof g->times);
  if (op != BA_OP_OR && op != BA_OP_AND) return seterr(g, BA_ERR_UNSUPPORTED, "range: only OR and AND");
  if (!ba_gpu_range_alg_name(alg)) return seterr(g, BA_ERR_INVALID, "range: unknown strategy %d", (int)alg);
  uint64_t rows = 0, total = 0;
  for (size_t i = 0; i < m; i++) {
    size_t nw = 0;
    if (!bms[i] || ba_bitmap_codec(bms[i]) != BA_CODEC_WAH64)
      return seterr(g, BA_ERR_UNSUPPORTED, "range: operand %zu is not a wah64 bitmap", i);
    if (!ba_bitmap_words(bms[i], &nw)) return seterr(g, BA_ERR_INVALID, "range: operand %zu is not finished", i);
    rows = BA_MAX(rows, ba_bitmap_rows(bms[i]));
    total += nw + 1;
  }
  if (g->dev == BA_DEVICE_CPU) return range_cpu(g, op, bms, m, out);
  const uint64_t groups = (rows + 62) / 63;
  uint64_t *words = ba_malloc(total * sizeof(uint64_t));
  uint64_t *colstart = ba_malloc((m + 1) * sizeof(uint64_t));
  int rc = BA_OK;
  if (!words || !colstart) {
    rc = BA_ERR_NOMEM;
    goto out;
  }
  size_t at = 0;
  for (size_t i = 0; i < m; i++) {
    size_t nw = 0;
    const uint64_t *w = ba_bitmap_words(bms[i], &nw);
    colstart[i] = at;
    if (nw) memcpy(words + at, w, nw * sizeof(uint64_t));
    at += nw;
    uint64_t gi = (ba_bitmap_rows(bms[i]) + 62) / 63;
    if (gi < groups) words[at++] = (1ull << 63) | (groups - gi); /* zero-pad to the longest (D-6) */
  }
  colstart[m] = at;
  ba_gpu_rangejob_t j;
  memset(&j, 0, sizeof j);
  j.words = words;
  j.colstart = colstart;
  j.m = m;
  j.groups = groups;
  j.op = op == BA_OP_OR;
  j.alg = alg == BA_GPU_RANGE_AUTO ? BA_GPU_RANGE_IDEAL : alg;
  if (g->be) rc = g->be->range(&j, g->err, sizeof g->err);
  for (unsigned s = 0; s < BA_GPU_NSTEPS; s++) g->times.ms[s] += j.ms[s];
  if (rc == BA_OK && !j.out) rc = seterr(g, BA_ERR_NODEVICE, "device %s not built", ba_device_name(g->dev));
  if (rc == BA_OK) {
    rc = ba_bitmap_from_words(BA_CODEC_WAH64, j.out, j.nout, rows, out);
    if (rc < 0) seterr(g, rc, "range: the device result does not validate as wah64");
  }
  ba_free(j.out);
out:
  ba_free(words);
  ba_free(colstart);
  return rc;
}

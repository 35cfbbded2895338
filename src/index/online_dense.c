/* Online index builder for domains up to 65,536 values (online.c hands them
 * here): rows are buffered in large batches and applied value by value, so
 * each value's state and bitmap are visited once per batch, not once per row.
 *
 * A batch of up to 16 x domain rows (65,536 to 2^20) keeps its values and a
 * count per value; draining it is a counting sort (IMC'13 §3: stable, each
 * value's rows ascending) followed by one walk over the present values in
 * ascending order. A value's slot (48 bytes: its bitmap, the open chunk and
 * its literal, the chunks its bitmap describes, its rows so far, its row list) is read and written once per
 * visit; the chunks its rows close are collected on the stack and appended to
 * its bitmap by one ba_bitmap_append_groups call, so the bitmap (a random
 * heap address: two or three cache misses) is touched once per visit. At
 * 65,536 values a batch of 2^20 rows gives ~16 rows per visit where a row
 * group of 4000 rows gave one, and the slots are walked almost sequentially.
 *
 * A value holding under 1/1024 of the rows so far is kept as a row list
 * instead (LIST_SHIFT), its bitmap built from the list when it passes that
 * or at finish. ba_idx_dense_finish_fold folds the rare values into bins
 * (the archive's rare ports) without building their bitmaps: from the last
 * batch before its sort when every row is in it (fold_split), else from
 * the row lists in finish's walk.
 *
 * The appends are the row-at-a-time algorithm's (codecs.md §8): per chunk
 * holding a row of the value, the zero chunks before it as one run, then its
 * literal; the last chunk is cut to the rows at finish. So the words equal
 * the batch builder's and the reference's byte for byte. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "codec/bmpool.h"
#include "common/common.h"
#include "index/online_dense.h"

/* Chunks collected per append_groups call (a visit with more calls again). */
#define RUNBUF 64
#define BATCH_MIN 65536u
#define ROW_BITS 20 /* row offsets in a batch; drain packs them with a value byte in 32 bits */
#define BATCH_MAX (1u << ROW_BITS)
_Static_assert(BA_IDX_DENSE_MAX < BA_IDX_NONE, "BA_IDX_NONE is at least every dense domain");

typedef struct dslot {
  ba_bitmap_t *bm;  /* NULL: the value's `count` rows are a row list */
  uint64_t open;    /* chunk of `pending` */
  uint64_t pending; /* MSB-first literal: row offset o is bit G-1-o */
  uint64_t done;    /* chunks the bitmap describes (open >= done) */
  uint64_t count;   /* rows of the value applied (finish hands them to ba_idx_fold) */
  uint32_t head, tail; /* bm NULL: the row list's first and last block (LBLK) */
} dslot_t;

/* A value stays a row list (4 bytes a row, as its sparse bitmap would be)
 * while it holds fewer than 1 / 2^LIST_SHIFT of the rows so far; then its
 * bitmap is built from the list and the value goes on as a bitmap. The
 * archive folds the values of fewer than rows >> 10 rows into bins at
 * finish (BA_PORT_FOLD_SHIFT): those that stayed lists go to their bins
 * without a bitmap ever being built. */
#define LIST_SHIFT 10
/* Row lists are chains of blocks of LBLK_ROWS rows (ascending, < 2^32) and
 * the next block's index, in one array of the builder (block 0 unused):
 * appending is a store, a block taken every LBLK_ROWS rows; a list's
 * blocks go to a free chain when it becomes a bitmap. */
#define LBLK 16u
#define LBLK_ROWS (LBLK - 1)

struct ba_idx_dense {
  ba_codec_t codec;
  unsigned G;
  uint32_t domain;
  size_t batch;         /* rows per batch */
  dslot_t *slots;       /* domain entries, valid where `bits` says the value was seen (never
                           zeroed: a small segment touches only the slots of its values) */
  uint64_t *bits;       /* domain bits: value seen */
  uint32_t *seen;       /* values seen, in order of first sight */
  size_t nseen, seen_cap;
  uint32_t *vals;       /* the open batch's values (BA_IDX_NONE too) */
  uint32_t *rows;       /* drain scratch: row offsets sorted by value */
  size_t cap;           /* of vals and rows */
  size_t krows;         /* rows in the open batch */
  uint32_t *cnt;        /* domain entries: rows per value in the batch, then positions */
  uint32_t *distinct;   /* values present in the batch, in order of first sight */
  size_t ndistinct;
  int failed;           /* an error was returned: the arrays may be inconsistent */
  ba_bmpool_t *pool;    /* the values' bitmaps (made on first sight); goes to finish's output */
  struct dfold *fold;   /* the last drain of ba_idx_dense_finish_fold's fast path, else NULL */
  struct dfold *wfold;  /* finish's walk of ba_idx_dense_finish_fold's other path, else NULL */
  uint32_t *lb;         /* row list blocks, LBLK words each */
  size_t nlb, clb;      /* blocks used (block 0 included) and allocated */
  uint32_t lfree;       /* the free blocks' chain, 0: none */
  struct dfold *lfold;  /* list_fold's */
};

/* The last drain folding as it applies (ba_idx_dense_finish_fold): a value of
 * fewer than min_rows rows in the batch (all of its rows) has its rows ORed
 * into its bin's groups and gets no slot: before the sort into a table per
 * bin (fold_split), or where those would be too large in the walk, into
 * acc, a bin being encoded into bins when the walk (values ascending, so
 * bins non-decreasing) leaves it. */
typedef struct dfold {
  uint64_t min_rows, nrows;
  ba_idx_bin_fn bin_of;
  uint32_t *acc; /* ceil(nrows / 31) groups, zero between bins */
  uint32_t bin;  /* the bin acc holds, when open */
  int open;
  ba_idx_attr_t *bins; /* room for a bin per rare value */
} dfold_t;

/* Arrays of freed builders kept for the next builder of the same domain (a
 * store of many small segments would otherwise allocate, fault in and zero
 * them per segment and attribute). A spare's seen bits and counts are zero. */
#define SPARE_MAX 16
#define SPARE_BYTES ((size_t)64 << 20)
typedef struct spare {
  uint32_t domain;
  dslot_t *slots;
  uint64_t *bits;
  uint32_t *cnt, *distinct, *seen, *vals, *rows;
  size_t seen_cap, cap, bytes;
} spare_t;
static pthread_mutex_t g_spare_mu = PTHREAD_MUTEX_INITIALIZER;
static spare_t g_spare[SPARE_MAX];
static size_t g_nspare, g_spare_bytes;

/* A spare of this domain into d, if there is one. */
static int spare_take(ba_idx_dense_t *d) {
  spare_t e = {0};
  pthread_mutex_lock(&g_spare_mu);
  for (size_t i = g_nspare; i-- > 0;)
    if (g_spare[i].domain == d->domain) {
      e = g_spare[i];
      g_spare[i] = g_spare[--g_nspare];
      g_spare_bytes -= e.bytes;
      break;
    }
  pthread_mutex_unlock(&g_spare_mu);
  if (!e.slots) return 0;
  d->slots = e.slots;
  d->bits = e.bits;
  d->cnt = e.cnt;
  d->distinct = e.distinct;
  d->seen = e.seen;
  d->seen_cap = e.seen_cap;
  d->vals = e.vals;
  d->rows = e.rows;
  d->cap = e.cap;
  return 1;
}

/* Keeps d's arrays for a later builder (they must be clean); 0 if full. */
static int spare_put(ba_idx_dense_t *d) {
  spare_t e = {d->domain, d->slots, d->bits, d->cnt, d->distinct, d->seen, d->vals, d->rows, d->seen_cap, d->cap, 0};
  e.bytes = (size_t)d->domain * (sizeof *d->slots + 2 * sizeof *d->cnt) + (d->domain + 63) / 64 * 8 + d->seen_cap * sizeof *d->seen +
            d->cap * 2 * sizeof *d->vals;
  int kept = 0;
  pthread_mutex_lock(&g_spare_mu);
  if (g_nspare < SPARE_MAX && g_spare_bytes + e.bytes <= SPARE_BYTES) {
    g_spare[g_nspare++] = e;
    g_spare_bytes += e.bytes;
    kept = 1;
  }
  pthread_mutex_unlock(&g_spare_mu);
  return kept;
}

int ba_idx_dense_create(ba_codec_t codec, uint32_t domain, ba_idx_dense_t **out) {
  unsigned G = ba_idx_chunk_rows(codec);
  BA_RETURN_IF(!out || G == 0 || domain == 0 || domain > BA_IDX_DENSE_MAX, BA_ERR_INVALID);
  ba_idx_dense_t *d = ba_calloc(1, sizeof *d);
  BA_RETURN_IF(!d, BA_ERR_NOMEM);
  d->codec = codec;
  d->G = G;
  d->domain = domain;
  size_t batch = (size_t)domain * 16;
  d->batch = batch < BATCH_MIN ? BATCH_MIN : batch > BATCH_MAX ? BATCH_MAX : batch;
  if (spare_take(d)) {
    *out = d;
    return BA_OK;
  }
  d->slots = ba_malloc((size_t)domain * sizeof *d->slots);
  d->bits = ba_calloc((domain + 63) / 64, sizeof *d->bits);
  d->cnt = ba_calloc(domain, sizeof *d->cnt);
  d->distinct = ba_malloc((size_t)domain * sizeof *d->distinct);
  if (!d->slots || !d->bits || !d->cnt || !d->distinct) {
    ba_idx_dense_free(d);
    return BA_ERR_NOMEM;
  }
  *out = d;
  return BA_OK;
}

void ba_idx_dense_free(ba_idx_dense_t *d) {
  if (!d) return;
  if (d->slots && d->bits)
    for (size_t i = 0; i < d->nseen; i++) {
      uint32_t v = d->seen[i];
      ba_bitmap_free(d->slots[v].bm);
      d->bits[v / 64] &= ~(UINT64_C(1) << (v % 64));
    }
  ba_bmpool_free(d->pool); /* after its bitmaps */
  d->pool = NULL;
  ba_free(d->lb);
  d->lb = NULL;
  if (d->slots && d->bits && d->cnt && d->distinct && !d->failed) {
    for (size_t j = 0; j < d->ndistinct; j++) d->cnt[d->distinct[j]] = 0; /* an open batch */
    if (spare_put(d)) {
      ba_free(d);
      return;
    }
  }
  ba_free(d->slots);
  ba_free(d->bits);
  ba_free(d->seen);
  ba_free(d->vals);
  ba_free(d->rows);
  ba_free(d->cnt);
  ba_free(d->distinct);
  ba_free(d);
}

size_t ba_idx_dense_values(const ba_idx_dense_t *d) { return d->nseen; }

static int grow_batch(ba_idx_dense_t *d, size_t need) {
  if (need <= d->cap) return BA_OK;
  size_t cap = d->cap ? d->cap : 4096;
  while (cap < need) cap *= 2;
  if (cap > d->batch) cap = d->batch;
  uint32_t *v = ba_realloc(d->vals, cap * sizeof *v);
  if (!v) return BA_ERR_NOMEM;
  d->vals = v;
  uint32_t *r = ba_realloc(d->rows, cap * sizeof *r);
  if (!r) return BA_ERR_NOMEM;
  d->rows = r;
  d->cap = cap;
  return BA_OK;
}

static inline int seen(const ba_idx_dense_t *d, uint32_t v) { return (int)(d->bits[v / 64] >> (v % 64) & 1); }

/* First sight of v: an empty bitmap with chunk g open. */
static int slot_new(ba_idx_dense_t *d, uint32_t v, uint64_t g) {
  if (d->nseen == d->seen_cap) {
    void *p = d->seen;
    BA_FORWARD(ba_grow(&p, &d->seen_cap, d->nseen + 1, sizeof *d->seen));
    d->seen = p;
  }
  dslot_t *s = &d->slots[v];
  s->bm = NULL; /* a row list, empty */
  s->head = s->tail = 0;
  d->bits[v / 64] |= UINT64_C(1) << (v % 64);
  d->seen[d->nseen++] = v;
  s->open = g;
  s->pending = 0;
  s->done = 0;
  s->count = 0;
  return BA_OK;
}

static int visit(ba_idx_dense_t *d, dslot_t *s, const uint32_t *r, size_t n, uint64_t base);

/* A block for a row list, its next 0. */
static int lblock(ba_idx_dense_t *d, uint32_t *out) {
  uint32_t b = d->lfree;
  if (b) {
    d->lfree = d->lb[(size_t)b * LBLK + LBLK_ROWS];
  } else {
    if (d->nlb == 0) d->nlb = 1; /* block 0: "none" */
    if (d->nlb >= d->clb) {
      BA_RETURN_IF(d->clb >= UINT32_MAX / 2, BA_ERR_NOMEM);
      size_t cap = d->clb ? d->clb * 2 : 1024;
      uint32_t *p = ba_realloc(d->lb, cap * LBLK * sizeof *p);
      if (!p) return BA_ERR_NOMEM;
      d->lb = p;
      d->clb = cap;
    }
    b = (uint32_t)d->nlb++;
  }
  d->lb[(size_t)b * LBLK + LBLK_ROWS] = 0;
  *out = b;
  return BA_OK;
}

/* Calls fn on the nrows rows of s's list, LBLK_ROWS rows at a time at most,
 * then gives its blocks back (the list is empty after). */
typedef int (*list_fn)(ba_idx_dense_t *d, dslot_t *s, uint32_t v, const uint32_t *rows, size_t k);
static int list_drain(ba_idx_dense_t *d, dslot_t *s, uint32_t v, uint64_t nrows, list_fn fn) {
  int rc = BA_OK;
  uint32_t b = s->head;
  for (uint64_t left = nrows; left && rc == BA_OK; b = d->lb[(size_t)b * LBLK + LBLK_ROWS]) {
    size_t k = left < LBLK_ROWS ? (size_t)left : LBLK_ROWS;
    rc = fn(d, s, v, d->lb + (size_t)b * LBLK, k);
    left -= k;
  }
  if (s->head) { /* the chain to the free blocks */
    d->lb[(size_t)s->tail * LBLK + LBLK_ROWS] = d->lfree;
    d->lfree = s->head;
  }
  s->head = s->tail = 0;
  return rc;
}

static int list_visit(ba_idx_dense_t *d, dslot_t *s, uint32_t v, const uint32_t *rows, size_t k) {
  (void)v;
  return visit(d, s, rows, k, 0);
}

/* The value's bitmap from its row list (the same appends as if its rows
 * had been visited batch by batch). */
static int list_to_bitmap(ba_idx_dense_t *d, dslot_t *s) {
  if (!d->pool) BA_FORWARD(ba_bmpool_create(&d->pool));
  BA_FORWARD(ba_bmpool_bitmap(d->pool, d->codec, &s->bm));
  uint64_t n = s->count;
  s->open = d->lb[(size_t)s->head * LBLK] / d->G;
  s->pending = 0;
  s->done = 0;
  s->count = 0; /* visit counts them again */
  return list_drain(d, s, 0, n, list_visit);
}

/* Rows r[0..n) (offsets from base, ascending) of a value with a row list:
 * onto the list while it stays short, else its bitmap and the rows to it.
 * `total`: the rows so far, this batch's included. */
static int list_add(ba_idx_dense_t *d, dslot_t *s, const uint32_t *r, size_t n, uint64_t base, uint64_t total) {
  if (total <= UINT32_MAX && s->count + n < total >> LIST_SHIFT) {
    uint64_t c = s->count;
    for (size_t i = 0; i < n; i++, c++) {
      unsigned at = (unsigned)(c % LBLK_ROWS);
      if (at == 0) { /* a new block */
        uint32_t b;
        BA_FORWARD(lblock(d, &b));
        if (c == 0) s->head = b;
        else d->lb[(size_t)s->tail * LBLK + LBLK_ROWS] = b;
        s->tail = b;
      }
      d->lb[(size_t)s->tail * LBLK + at] = (uint32_t)(base + r[i]);
      s->count = c + 1;
    }
    return BA_OK;
  }
  if (s->count) BA_FORWARD(list_to_bitmap(d, s));
  else { /* the value's first rows */
    if (!d->pool) BA_FORWARD(ba_bmpool_create(&d->pool));
    BA_FORWARD(ba_bmpool_bitmap(d->pool, d->codec, &s->bm));
    s->open = (base + r[0]) / d->G;
    s->pending = 0;
    s->done = 0;
  }
  return visit(d, s, r, n, base);
}

/* Appends the collected chunks; a gap too long for uint32 went straight in. */
static int put_chunks(ba_bitmap_t *bm, const uint32_t *gaps, const uint64_t *lits, size_t k) {
  return k ? ba_bitmap_append_groups(bm, gaps, lits, k) : BA_OK;
}

/* Applies the rows r[0..n) (offsets from base, ascending) of one value to
 * its slot; G is a constant at each call. */
__attribute__((always_inline)) static inline int visit_t(ba_idx_dense_t *d, dslot_t *s, const uint32_t *r,
                                                         size_t n, uint64_t base_g, uint32_t base_r,
                                                         const unsigned G) {
  uint32_t gaps[RUNBUF];
  uint64_t lits[RUNBUF];
  size_t k = 0;
  uint64_t open = s->open, pend = s->pending, done = s->done;
  /* Row t of the batch is bit G - 1 - (t - ts) of the open chunk while
   * t - ts < G (ts: the open chunk's first row, as a batch offset; rows
   * come ascending, so t >= ts), which most rows of a frequent value are:
   * a division only where a row opens a new chunk. ts may be negative for
   * a chunk open from an earlier batch (then no row here is in it unless
   * t - ts < G, which the signed difference tests). */
  int64_t ts = (int64_t)(open - base_g) * G;
  for (size_t i = 0; i < n; i++) {
    uint32_t t = base_r + r[i];
    uint64_t off = (uint64_t)((int64_t)t - ts);
    if (BA_UNLIKELY(off >= G)) { /* a later chunk: close the open one */
      uint32_t q = t / G;
      uint64_t g = base_g + q;
      ts = (int64_t)q * G;
      off = t - (uint32_t)ts;
      uint64_t gap = open - done;
      if (BA_UNLIKELY(k == RUNBUF || gap > UINT32_MAX)) {
        BA_FORWARD(put_chunks(s->bm, gaps, lits, k));
        k = 0;
        if (gap > UINT32_MAX) {
          BA_FORWARD(ba_bitmap_append_run(s->bm, 0, gap * G));
          gap = 0;
        }
      }
      gaps[k] = (uint32_t)gap;
      lits[k++] = pend;
      done = open + 1;
      open = g;
      pend = 0;
    }
    pend |= 1ull << (G - 1 - off);
  }
  s->open = open;
  s->pending = pend;
  s->done = done;
  s->count += n;
  return put_chunks(s->bm, gaps, lits, k);
}

static int visit(ba_idx_dense_t *d, dslot_t *s, const uint32_t *r, size_t n, uint64_t base) {
  const uint64_t base_g = base / d->G;
  const uint32_t base_r = (uint32_t)(base % d->G);
  if (d->G == 31) return visit_t(d, s, r, n, base_g, base_r, 31);
  return visit_t(d, s, r, n, base_g, base_r, 63);
}

/* Sorts a[0..n) of values < 2^16 ascending (LSD, two byte passes through
 * tmp); nothing to do when they are ascending already (one batch's first
 * sights are). */
static void sort_values(uint32_t *a, uint32_t *tmp, size_t n) {
  size_t i = 1;
  while (i < n && a[i - 1] < a[i]) i++;
  if (i >= n) return;
  for (unsigned sh = 0; sh < 16; sh += 8) {
    uint32_t *src = sh ? tmp : a, *dst = sh ? a : tmp;
    uint32_t pos[256] = {0};
    for (size_t j = 0; j < n; j++) pos[(src[j] >> sh) & 255]++;
    for (uint32_t x = 0, sum = 0; x < 256; x++) {
      uint32_t c = pos[x];
      pos[x] = sum;
      sum += c;
    }
    for (size_t j = 0; j < n; j++) dst[pos[(src[j] >> sh) & 255]++] = src[j];
  }
}

/* The open bin into f->bins. */
static int fold_close(dfold_t *f) {
  if (!f->open) return BA_OK;
  f->open = 0;
  ba_idx_attr_t *b = f->bins;
  BA_FORWARD(ba_idx_fold_encode(f->acc, f->nrows, &b->bms[b->n]));
  b->values[b->n++] = f->bin;
  return BA_OK;
}

/* acc for rare value v: the bin's, the previous bin encoded if v's differs. */
static int fold_bin(dfold_t *f, uint32_t v) {
  uint32_t bin = f->bin_of(v);
  if (f->open && bin != f->bin) BA_FORWARD(fold_close(f));
  f->bin = bin;
  f->open = 1;
  return BA_OK;
}

/* The rows r[0..n) (offsets from base) of rare value v into its bin. */
static int fold_rows(dfold_t *f, uint32_t v, const uint32_t *r, size_t n, uint64_t base) {
  BA_FORWARD(fold_bin(f, v));
  uint32_t *acc = f->acc;
  for (size_t i = 0; i < n; i++) {
    uint64_t row = base + r[i];
    acc[row / 31] |= 1u << (30 - row % 31);
  }
  return BA_OK;
}

/* Groups of all bins' tables at most (16 MB): past it the walk folds. */
#define FOLD_ACC_MAX ((size_t)1 << 22)
#define FOLD_MARK 0x80000000u /* cnt[v] of a rare value: the mark | its bin's table */
_Static_assert(BATCH_MAX < FOLD_MARK, "counts stay below the mark");

/* The rare values of the last batch (ascending in distinct[0..ndistinct))
 * go straight to their bins, without the sort: each row of one is ORed
 * into its bin's table of groups (one per bin, ascending), its value
 * becomes BA_IDX_NONE in the batch, and the value leaves distinct; then
 * the bins are encoded. Leaves them to the walk (fold_rows) when the
 * tables would pass FOLD_ACC_MAX groups. */
static int fold_split(ba_idx_dense_t *d, uint64_t base) {
  dfold_t *f = d->fold;
  uint32_t *distinct = d->distinct, *cnt = d->cnt;
  const size_t nd = d->ndistinct;
  size_t nb = 0;
  uint32_t last = 0;
  for (size_t j = 0; j < nd; j++) {
    uint32_t v = distinct[j];
    if (cnt[v] >= f->min_rows) continue;
    uint32_t b = f->bin_of(v);
    nb += nb == 0 || b != last;
    last = b;
  }
  const size_t ngroups = (size_t)(f->nrows / 31 + 1);
  if (nb == 0 || nb > FOLD_ACC_MAX / ngroups) return BA_OK;
  uint32_t *acc = ba_calloc(nb * ngroups, sizeof *acc), *binv = ba_malloc(nb * sizeof *binv);
  if (!acc || !binv) {
    ba_free(acc);
    ba_free(binv);
    return BA_ERR_NOMEM;
  }
  size_t t = 0; /* tables used */
  for (size_t j = 0; j < nd; j++) {
    uint32_t v = distinct[j];
    if (cnt[v] >= f->min_rows) continue;
    uint32_t b = f->bin_of(v);
    if (t == 0 || b != binv[t - 1]) binv[t++] = b;
    cnt[v] = FOLD_MARK | (uint32_t)(t - 1);
  }
  uint32_t *vals = d->vals;
  uint32_t *a = acc + base / 31; /* the group of row base + i, in table 0 */
  for (size_t i = 0, o = (size_t)(base % 31); i < d->krows; a++, o = 0) { /* group by group */
    size_t end = d->krows - i < 31 - o ? d->krows : i + 31 - o;
    for (uint32_t bit = 1u << (30 - o); i < end; i++, bit >>= 1) {
      uint32_t v = vals[i];
      if (v == BA_IDX_NONE || !(cnt[v] & FOLD_MARK)) continue;
      a[(size_t)(cnt[v] & ~FOLD_MARK) * ngroups] |= bit;
      vals[i] = BA_IDX_NONE;
    }
  }
  size_t k = 0;
  for (size_t j = 0; j < nd; j++) {
    uint32_t v = distinct[j];
    if (cnt[v] & FOLD_MARK) cnt[v] = 0;
    else distinct[k++] = v;
  }
  d->ndistinct = k;
  int rc = BA_OK;
  ba_idx_attr_t *bins = f->bins;
  for (size_t i = 0; i < t && rc == BA_OK; i++) {
    rc = ba_idx_fold_encode(acc + i * ngroups, f->nrows, &bins->bms[bins->n]);
    if (rc == BA_OK) bins->values[bins->n++] = binv[i];
  }
  ba_free(acc);
  ba_free(binv);
  return rc;
}

/* Sorts and applies the open batch, whose first row is row `base`. */
static int drain(ba_idx_dense_t *d, uint64_t base) {
  size_t nd = d->ndistinct;
  if (nd == 0) {
    d->krows = 0;
    return BA_OK;
  }
  /* The present values ascending: from the counts when they are many, else
   * by sorting the few. */
  if (nd * 8 >= d->domain) {
    size_t k = 0;
    for (uint32_t v = 0; v < d->domain; v++)
      if (d->cnt[v]) d->distinct[k++] = v;
  } else {
    sort_values(d->distinct, d->rows, nd); /* rows: scratch of krows >= nd entries */
  }
  if (d->fold) {
    BA_FORWARD(fold_split(d, base));
    nd = d->ndistinct;
  }
  /* Row offsets sorted by value (stable), into d->rows; cnt[v] becomes the
   * end of v's rows there. */
  uint32_t sum = 0;
  if (d->domain <= 256 || d->krows < 16384) {
    /* one scatter pass; its destinations are few or the batch is small */
    for (size_t j = 0; j < nd; j++) {
      uint32_t v = d->distinct[j], c = d->cnt[v];
      d->cnt[v] = sum;
      sum += c;
    }
    const uint32_t *vals = d->vals;
    uint32_t *rows = d->rows, *cnt = d->cnt;
    for (size_t i = 0; i < d->krows; i++) {
      uint32_t v = vals[i];
      if (v != BA_IDX_NONE) rows[cnt[v]++] = (uint32_t)i;
    }
  } else {
    /* LSD over the low then the high byte of the value: 256 destinations per
     * pass stay in the cache where 65,536 would miss at every row. Pass 1
     * packs (high byte, row offset) in 8 + ROW_BITS bits, into d->rows; pass 2 writes
     * the offsets into d->vals, which then swaps with d->rows. */
    uint32_t p1[256] = {0}, p2[256] = {0};
    for (size_t j = 0; j < nd; j++) {
      uint32_t v = d->distinct[j], c = d->cnt[v];
      p1[v & 255] += c;
      p2[v >> 8] += c;
      sum += c;
      d->cnt[v] = sum;
    }
    for (uint32_t x = 0, s1 = 0, s2 = 0; x < 256; x++) {
      uint32_t c1 = p1[x], c2 = p2[x];
      p1[x] = s1;
      p2[x] = s2;
      s1 += c1;
      s2 += c2;
    }
    const uint32_t *vals = d->vals;
    uint32_t *tmp = d->rows;
    for (size_t i = 0; i < d->krows; i++) {
      uint32_t v = vals[i];
      if (v != BA_IDX_NONE) tmp[p1[v & 255]++] = (v >> 8) << ROW_BITS | (uint32_t)i;
    }
    uint32_t *out = d->vals;
    for (uint32_t j = 0; j < sum; j++) {
      uint32_t x = tmp[j];
      out[p2[x >> ROW_BITS]++] = x & (BATCH_MAX - 1);
    }
    d->vals = tmp;
    d->rows = out;
  }
  const uint32_t *rows = d->rows;
  uint32_t *cnt = d->cnt;
  /* cnt[v] is now the end of v's rows; walk the values ascending */
  int rc = BA_OK;
  uint32_t start = 0;
  for (size_t j = 0; j < nd; j++) {
    uint32_t v = d->distinct[j], end = cnt[v];
    cnt[v] = 0;
    if (j + 4 < nd) { /* the bitmap of a value a few visits ahead */
      uint32_t w = d->distinct[j + 4];
      const ba_bitmap_t *p = seen(d, w) ? d->slots[w].bm : NULL;
      if (p) {
        __builtin_prefetch(p);
        __builtin_prefetch((const char *)p + 64);
        __builtin_prefetch((const char *)p + 128);
      }
    }
    if (rc == BA_OK && d->fold && end - start < d->fold->min_rows) {
      rc = fold_rows(d->fold, v, rows + start, end - start, base);
    } else if (rc == BA_OK) {
      dslot_t *s = &d->slots[v];
      if (!seen(d, v)) rc = slot_new(d, v, (base + rows[start]) / d->G);
      if (rc == BA_OK)
        rc = s->bm ? visit(d, s, rows + start, end - start, base)
                   : list_add(d, s, rows + start, end - start, base, base + d->krows);
    }
    start = end;
  }
  if (rc == BA_OK && d->fold) rc = fold_close(d->fold);
  d->ndistinct = 0;
  d->krows = 0;
  return rc;
}

static int dense_add(ba_idx_dense_t *d, const uint32_t *vals, size_t n, uint64_t rows_before) {
  for (size_t off = 0; off < n;) {
    size_t k = d->batch - d->krows;
    if (k > n - off) k = n - off;
    BA_FORWARD(grow_batch(d, d->krows + k));
    uint32_t *dst = d->vals + d->krows, *cnt = d->cnt;
    if (!vals) { /* rows without a value: no counts */
      memset(dst, 0xff, k * sizeof *dst);
      _Static_assert(BA_IDX_NONE == UINT32_MAX, "0xff bytes are BA_IDX_NONE");
      d->krows += k;
      off += k;
      if (d->krows == d->batch) BA_FORWARD(drain(d, rows_before + off - d->krows));
      continue;
    }
    const uint32_t *src = vals + off, dom = d->domain;
    uint32_t *distinct = d->distinct;
    size_t nd = d->ndistinct;
    for (size_t i = 0; i < k; i++) {
      uint32_t v = src[i];
      dst[i] = v;
      if (BA_UNLIKELY(v >= dom)) { /* BA_IDX_NONE (>= every domain) or a bad value */
        if (v == BA_IDX_NONE) continue;
        d->ndistinct = nd;
        return BA_ERR_INVALID;
      }
      if (cnt[v]++ == 0) distinct[nd++] = v;
    }
    d->ndistinct = nd;
    d->krows += k;
    off += k;
    if (d->krows == d->batch) BA_FORWARD(drain(d, rows_before + off - d->krows));
  }
  return BA_OK;
}

int ba_idx_dense_add(ba_idx_dense_t *d, const uint32_t *vals, size_t n, uint64_t rows_before) {
  if (n && !vals) return BA_ERR_INVALID;
  int rc = dense_add(d, vals, n, rows_before);
  if (rc < 0) d->failed = 1;
  return rc;
}

int ba_idx_dense_add_absent(ba_idx_dense_t *d, size_t n, uint64_t rows_before) {
  int rc = dense_add(d, NULL, n, rows_before);
  if (rc < 0) d->failed = 1;
  return rc;
}

static int dense_finish(ba_idx_dense_t *d, uint64_t rows, ba_idx_attr_t *out);
int ba_idx_dense_finish(ba_idx_dense_t *d, uint64_t rows, ba_idx_attr_t *out) {
  int rc = dense_finish(d, rows, out);
  if (rc < 0) d->failed = 1;
  return rc;
}

int ba_idx_dense_finish_fold(ba_idx_dense_t *d, uint64_t rows, uint64_t min_rows, ba_idx_bin_fn bin_of,
                             ba_idx_attr_t *out, ba_idx_attr_t *bins) {
  BA_RETURN_IF(!bin_of, BA_ERR_INVALID);
  memset(out, 0, sizeof *out);
  memset(bins, 0, sizeof *bins);
  /* PLWAH groups and a fold to do: the rare values folded here (the others
   * as ba_idx_fold, on the finished bitmaps) */
  if (min_rows < 2 || d->codec != BA_CODEC_PLWAH || d->G != 31 || rows / 31 > UINT32_MAX ||
      rows / 31 + 1 > SIZE_MAX / sizeof(uint32_t)) {
    int rc = ba_idx_dense_finish(d, rows, out);
    if (rc == BA_OK && out->n) rc = ba_idx_fold(out, bins, min_rows, bin_of, d->codec);
    if (rc < 0) {
      ba_idx_attr_clear(out);
      ba_idx_attr_clear(bins);
    }
    return rc;
  }
  dfold_t f = {.min_rows = min_rows, .nrows = rows, .bin_of = bin_of, .bins = bins};
  size_t nd = d->nseen + d->ndistinct + 1; /* >= the rare values */
  f.acc = ba_calloc((size_t)(rows / 31 + 1), sizeof *f.acc);
  int rc = f.acc ? ba_idx_attr_alloc(bins, nd, 0) : BA_ERR_NOMEM;
  if (rc == BA_OK) {
    if (d->nseen) d->wfold = &f; /* values applied already: folded in finish's walk */
    else d->fold = &f;            /* every count known before the last batch is applied */
    rc = dense_finish(d, rows, out);
    d->fold = d->wfold = NULL;
  }
  ba_free(f.acc);
  if (rc == BA_OK && bins->n == 0) ba_idx_attr_clear(bins); /* nothing folded: as ba_idx_fold leaves it */
  if (rc < 0) {
    d->failed = 1;
    ba_idx_attr_clear(out);
    ba_idx_attr_clear(bins);
  }
  return rc;
}

static int list_fold(ba_idx_dense_t *d, dslot_t *s, uint32_t v, const uint32_t *rows, size_t k) {
  (void)s;
  return fold_rows(d->lfold, v, rows, k, 0);
}

/* Closes s's open chunk (cut to `rows`) and finishes its bitmap. */
static int close_bitmap(ba_idx_dense_t *d, dslot_t *s, uint64_t rows) {
  const unsigned G = d->G;
  uint64_t left = rows - s->open * G; /* >= 1: the chunk holds a set row */
  unsigned keep = left < G ? (unsigned)left : G;
  uint64_t gap = s->open - s->done;
  if (keep == G && gap <= UINT32_MAX) { /* a whole open chunk (most values): one call for gap and chunk */
    uint32_t g32 = (uint32_t)gap;
    BA_FORWARD(ba_bitmap_append_groups(s->bm, &g32, &s->pending, 1));
  } else {
    if (gap) BA_FORWARD(ba_bitmap_append_run(s->bm, 0, gap * G));
    BA_FORWARD(ba_bitmap_append_bits(s->bm, s->pending >> (G - keep), keep));
  }
  return ba_bitmap_finish(s->bm, rows);
}

static int dense_finish(ba_idx_dense_t *d, uint64_t rows, ba_idx_attr_t *out) {
  memset(out, 0, sizeof *out);
  BA_FORWARD(drain(d, rows - d->krows));
  size_t n = d->nseen, k = 0;
  if (n == 0) return BA_OK;
  int rc = ba_idx_attr_alloc(out, n, 1);
  if (rc < 0) goto fail;
  if ((rc = grow_batch(d, n)) < 0) goto fail; /* n <= domain <= batch */
  sort_values(d->seen, d->rows, n);
  dfold_t *wf = d->wfold;
  for (size_t i = 0; i < n; i++) {
    uint32_t v = d->seen[i];
    dslot_t *s = &d->slots[v];
    if (wf && s->count < wf->min_rows) { /* rare: its rows or its bitmap's into its bin */
      if (!s->bm) {
        d->lfold = wf;
        rc = list_drain(d, s, v, s->count, list_fold);
      } else if ((rc = close_bitmap(d, s, rows)) == BA_OK && (rc = fold_bin(wf, v)) == BA_OK) {
        rc = ba_idx_fold_or(wf->acc, rows / 31 + (rows % 31 != 0), s->bm);
        ba_bitmap_free(s->bm);
        s->bm = NULL;
      }
      if (rc < 0) goto fail;
      continue;
    }
    if (!s->bm && (rc = list_to_bitmap(d, s)) < 0) goto fail;
    if ((rc = close_bitmap(d, s, rows)) < 0) goto fail;
    out->values[k] = v;
    out->counts[k] = s->count;
    out->bms[k++] = s->bm;
    s->bm = NULL;
  }
  if (wf && (rc = fold_close(wf)) < 0) goto fail;
  out->n = k;
  out->pool = d->pool; /* every bitmap of the pool is in out (or freed) */
  d->pool = NULL;
  return BA_OK;
fail:
  out->n = k;
  ba_idx_attr_clear(out);
  return rc;
}

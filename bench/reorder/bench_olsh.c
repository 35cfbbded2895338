/* bench_olsh: what oLSH reordering buys and costs, side by side in one run,
 * measured on the library's own path: the data sets are read by the
 * library's decoders (olsh_data.c), written through the store writer
 * (ba_store_writer, reorder none / olsh) and queried with ba_query_run.
 * Printed per data set and index codec: archive, index and file bytes,
 * ingest rate and CPU per record, query time and blocks read, oLSH against
 * arrival order. First, per-column bytes of the store's column layouts in
 * arrival, oLSH and offline-sorted order (olsh_columns.c). */
#include <ftw.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bitarc/bitarc.h"
#include "bitarc/query.h"
#include "common/common.h"
#include "olsh_columns.h"
#include "olsh_data.h"
#include "reorder/olsh.h"

static ba_olsh_opts_t g_olsh;
static int g_replay = 1;
static char **g_flow_paths;
static size_t g_nflow_paths;

/* The filters' fixed random choice (the same generator the data sets use). */
static uint64_t g_frng;
static uint64_t frnd(void) {
  uint64_t z = (g_frng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void index_add(index_b *ix, const ba_record_t *r) {
  uint32_t v[NATTR];
  int n4 = ba_addr_is_v4(r->src) && r->ipver == 4;
  for (int i = 0; i < 4; i++) {
    v[i] = r->src[12 + i];
    v[4 + i] = r->dst[12 + i];
  }
  v[8] = r->src_port;
  v[9] = r->dst_port;
  v[10] = r->proto;
  v[11] = r->tcp_flags;
  v[12] = (uint32_t)((r->first_ns - ix->tbase) / TIME_BIN_NS);
  for (int a = n4 ? 0 : 8; a < NATTR; a++)
    if (ba_bitmap_set(*vmap_get(&ix->attr[a], v[a], ix->codec), ix->rows) != BA_OK) die("bitmap set failed");
  ix->rows++;
}

static size_t index_finish(index_b *ix) {
  size_t bytes = 0;
  for (int a = 0; a < NATTR; a++)
    for (size_t i = 0; i < ix->attr[a].cap; i++)
      if (ix->attr[a].bm[i]) {
        if (ba_bitmap_finish(ix->attr[a].bm[i], ix->rows) != BA_OK) die("bitmap finish failed");
        bytes += ba_bitmap_size_bytes(ix->attr[a].bm[i]);
      }
  return bytes;
}

static void index_free(index_b *ix) {
  for (int a = 0; a < NATTR; a++) {
    for (size_t i = 0; i < ix->attr[a].cap; i++) ba_bitmap_free(ix->attr[a].bm[i]);
    free(ix->attr[a].bm);
    free(ix->attr[a].keys);
  }
}

static ba_bitmap_t *index_lookup(index_b *ix, int a, uint32_t key) {
  vmap *m = &ix->attr[a];
  if (!m->cap) return NULL;
  size_t j = (key * 2654435761u) & (m->cap - 1);
  while (m->bm[j] && m->keys[j] != key) j = (j + 1) & (m->cap - 1);
  return m->bm[j];
}

/* Columns as a store lays them out (fixed-width fields, little-endian),
 * compressed per 4000-row block with LZO1X-1. */
typedef struct {
  uint8_t *col[16];
  size_t len[16], cap[16];
  uint8_t *out, *wrk;
  size_t outcap;
  size_t rows;
  uint64_t bytes;
} columns;

static void col_put(columns *c, int k, const void *p, size_t n) {
  if (c->len[k] + n > c->cap[k]) {
    while (c->len[k] + n > c->cap[k]) c->cap[k] = c->cap[k] ? 2 * c->cap[k] : 65536;
    c->col[k] = realloc(c->col[k], c->cap[k]);
  }
  memcpy(c->col[k] + c->len[k], p, n);
  c->len[k] += n;
}

static void col_flush(columns *c) {
  for (int k = 0; k < 16; k++) {
    if (!c->len[k]) continue;
    size_t need = c->len[k] + c->len[k] / 16 + 64 + 3;
    if (need > c->outcap) {
      c->outcap = need;
      c->out = realloc(c->out, need);
    }
    lzo_uint olen = 0;
    if (lzo1x_1_compress(c->col[k], c->len[k], c->out, &olen, c->wrk) != LZO_E_OK) die("lzo failed");
    c->bytes += BA_MIN(olen, c->len[k]) + 16; /* + a block header */
    c->len[k] = 0;
  }
  c->rows = 0;
}

static void col_add(columns *c, const ba_record_t *r) {
  uint8_t b[16];
  ba_store_le64(b, r->first_ns); col_put(c, 0, b, 8);
  ba_store_le32(b, (uint32_t)((r->last_ns - r->first_ns) / 1000000)); col_put(c, 1, b, 4);
  col_put(c, 2, r->src, 16);
  col_put(c, 3, r->dst, 16);
  ba_store_le16(b, r->src_port); ba_store_le16(b + 2, r->dst_port); col_put(c, 4, b, 4);
  b[0] = r->proto; b[1] = r->tcp_flags; b[2] = r->tos; b[3] = r->ipver; col_put(c, 5, b, 4);
  ba_store_le32(b, r->src_as); ba_store_le32(b + 4, r->dst_as); col_put(c, 6, b, 8);
  ba_store_le32(b, r->in_if); ba_store_le32(b + 4, r->out_if); col_put(c, 7, b, 8);
  ba_store_le64(b, r->packets); col_put(c, 8, b, 8);
  ba_store_le64(b, r->bytes); col_put(c, 9, b, 8);
  col_put(c, 10, r->exporter, 16);
  if (r->kind == BA_REC_PACKET) {
    ba_store_le32(b, r->caplen); ba_store_le32(b + 4, r->wirelen); ba_store_le16(b + 8, r->linktype);
    col_put(c, 11, b, 10);
    if (r->caplen) col_put(c, 12, r->frame, r->caplen);
  }
  if (++c->rows == BLOCK_ROWS) col_flush(c);
}

typedef struct {
  columns cols;
  index_b ix;
  ba_record_t *out; /* the records in output order (frames dropped) */
  size_t n;
} pipeline;

static int pipe_sink(void *ctx, const ba_record_t *recs, size_t n) {
  pipeline *p = ctx;
  for (size_t i = 0; i < n; i++) {
    col_add(&p->cols, &recs[i]);
    index_add(&p->ix, &recs[i]);
    p->out[p->n] = recs[i];
    p->out[p->n++].frame = NULL;
  }
  return 0;
}

typedef struct {
  double secs;
  uint64_t archive, index_timed;
  ba_record_t *out;
  size_t n;
  ba_olsh_stats_t st;
} mode_result;

static ba_olsh_opts_t g_olsh;
static ba_codec_t g_timed_codec = BA_CODEC_WAH32;

static uint64_t min_first(const ba_record_t *r, size_t n) {
  uint64_t t = UINT64_MAX;
  for (size_t i = 0; i < n; i++) t = BA_MIN(t, r[i].first_ns);
  return n ? t : 0;
}

static int cmp_rec(const void *pa, const void *pb) {
  const ba_record_t *a = pa, *b = pb;
  int c = memcmp(a->src, b->src, 16);
  if (!c) c = memcmp(a->dst, b->dst, 16);
  if (!c) c = (int)a->dst_port - (int)b->dst_port;
  if (!c) c = (int)a->proto - (int)b->proto;
  if (!c) c = (int)a->src_port - (int)b->src_port;
  if (!c) c = a->first_ns < b->first_ns ? -1 : a->first_ns > b->first_ns;
  return c;
}

/* One timed pass: [oLSH] -> columns + LZO + index in the timed codec. */
static void run_mode(const ba_record_t *rin, size_t nin, int olsh, mode_result *res) {
  const recset view = {.r = (ba_record_t *)rin, .n = nin};
  const recset *s = &view;
  pipeline p;
  memset(&p, 0, sizeof p);
  memset(res, 0, sizeof *res);
  p.ix.codec = g_timed_codec;
  p.ix.tbase = min_first(s->r, s->n);
  p.out = malloc((s->n ? s->n : 1) * sizeof *p.out);
  p.cols.wrk = malloc(LZO1X_1_MEM_COMPRESS);
  if (!p.out || !p.cols.wrk) die("out of memory");
  uint64_t t0 = ba_now_ns();
  if (olsh == 1) {
    ba_olsh_t *h;
    if (ba_olsh_create(&g_olsh, &h) != BA_OK) die("bad oLSH options");
    for (size_t i = 0; i < s->n; i += 1024)
      if (ba_olsh_push(h, s->r + i, BA_MIN(1024, s->n - i), pipe_sink, &p) != 0) die("push failed");
    if (ba_olsh_flush(h, pipe_sink, &p) != 0) die("flush failed");
    ba_olsh_get_stats(h, &res->st);
    ba_olsh_free(h);
  } else if (olsh == 2) {
    /* Offline bound: the whole set sorted by the oLSH attributes. */
    ba_record_t *tmp = malloc((s->n ? s->n : 1) * sizeof *tmp);
    memcpy(tmp, s->r, s->n * sizeof *tmp);
    qsort(tmp, s->n, sizeof *tmp, cmp_rec);
    for (size_t i = 0; i < s->n; i += 1024) pipe_sink(&p, tmp + i, BA_MIN(1024, s->n - i));
    free(tmp);
  } else {
    for (size_t i = 0; i < s->n; i += 1024) pipe_sink(&p, s->r + i, BA_MIN(1024, s->n - i));
  }
  col_flush(&p.cols);
  res->index_timed = index_finish(&p.ix);
  res->secs = (double)(ba_now_ns() - t0) / 1e9;
  res->archive = p.cols.bytes;
  res->out = p.out;
  res->n = p.n;
  index_free(&p.ix);
  for (int k = 0; k < 16; k++) free(p.cols.col[k]);
  free(p.cols.out);
  free(p.cols.wrk);
}

/* Index bytes of `out` in another codec (untimed). */
static size_t index_bytes(const ba_record_t *out, size_t n, ba_codec_t codec, index_b *keep) {
  index_b ix;
  memset(&ix, 0, sizeof ix);
  ix.codec = codec;
  ix.tbase = min_first(out, n);
  for (size_t i = 0; i < n; i++) index_add(&ix, &out[i]);
  size_t b = index_finish(&ix);
  if (keep) *keep = ix;
  else index_free(&ix);
  return b;
}

/* Exact IPv4 source lookups: AND of the four byte bitmaps. Returns mean
 * microseconds per lookup; *blocks gets the mean number of distinct
 * 4000-row blocks holding the matches (what a fetch decompresses). */
static int count_blocks(void *ctx, const uint64_t *rows, size_t n) {
  uint64_t *c = ctx; /* c[0] = blocks, c[1] = last block + 1 */
  for (size_t i = 0; i < n; i++) {
    uint64_t b = rows[i] / BLOCK_ROWS + 1;
    if (b != c[1]) {
      c[0]++;
      c[1] = b;
    }
  }
  return 0;
}

static double ip_lookups(index_b *ix, const uint32_t *ips, size_t nq, int reps, double *blocks) {
  uint64_t nblocks = 0;
  uint64_t t0 = ba_now_ns();
  for (int rep = 0; rep < reps; rep++)
    for (size_t q = 0; q < nq; q++) {
      ba_bitmap_t *b[4];
      for (int k = 0; k < 4; k++) b[k] = index_lookup(ix, k, (ips[q] >> (24 - 8 * k)) & 0xff);
      if (!b[0] || !b[1] || !b[2] || !b[3]) continue;
      ba_bitmap_t *x, *y, *z;
      if (ba_bitmap_and(b[0], b[1], ix->codec, &x) || ba_bitmap_and(x, b[2], ix->codec, &y) ||
          ba_bitmap_and(y, b[3], ix->codec, &z))
        die("and failed");
      if (rep == 0) {
        uint64_t c[2] = {0, 0};
        ba_bitmap_foreach(z, count_blocks, c);
        nblocks += c[0];
      }
      ba_bitmap_free(x);
      ba_bitmap_free(y);
      ba_bitmap_free(z);
    }
  double us = (double)(ba_now_ns() - t0) / 1e3 / ((double)nq * reps);
  *blocks = nq ? (double)nblocks / (double)nq : 0;
  return us;
}

/* ---------- the run ---------- */

static const char *g_codecs = "wah32,wah64,plwah,compax,masc";

static void row3(const char *label, double a, double b, double c, const char *fmt) {
  char x[3][32];
  double v[3] = {a, b, c};
  for (int k = 0; k < 3; k++) snprintf(x[k], sizeof x[k], fmt, v[k]);
  printf("%-24s %13s %13s %7.3f %13s %7.3f\n", label, x[0], x[1], b / a, x[2], c / a);
}

/* The store's layout: one segment per one-hour slice of first_ns, the
 * reorder buffer flushed at every slice boundary. Records keep their arrival
 * order within a slice. */
#define SLICE_NS (3600ull * 1000000000ull)
typedef struct {
  ba_record_t *r; /* records grouped by slice */
  size_t n;
  size_t *start;  /* slice k is r[start[k] .. start[k+1]) */
  size_t nslices;
} sliced;

static int cmp_slice(const void *pa, const void *pb) {
  const ba_record_t *a = *(ba_record_t *const *)pa, *b = *(ba_record_t *const *)pb;
  uint64_t x = a->first_ns / SLICE_NS, y = b->first_ns / SLICE_NS;
  if (x != y) return x < y ? -1 : 1;
  return a < b ? -1 : a > b; /* stable: arrival order */
}

static sliced make_slices(const recset *s) {
  sliced z = {malloc((s->n ? s->n : 1) * sizeof(ba_record_t)), s->n, malloc((s->n + 1) * sizeof(size_t)), 0};
  const ba_record_t **p = malloc((s->n ? s->n : 1) * sizeof *p);
  for (size_t i = 0; i < s->n; i++) p[i] = &s->r[i];
  qsort(p, s->n, sizeof *p, cmp_slice);
  for (size_t i = 0; i < s->n; i++) {
    z.r[i] = *p[i];
    if (i == 0 || p[i]->first_ns / SLICE_NS != p[i - 1]->first_ns / SLICE_NS) z.start[z.nslices++] = i;
  }
  z.start[z.nslices] = s->n;
  free(p);
  return z;
}

static void run_sliced(const sliced *z, int mode, mode_result *res) {
  memset(res, 0, sizeof *res);
  res->out = malloc((z->n ? z->n : 1) * sizeof *res->out);
  for (size_t k = 0; k < z->nslices; k++) {
    mode_result t;
    run_mode(z->r + z->start[k], z->start[k + 1] - z->start[k], mode, &t);
    res->secs += t.secs;
    res->archive += t.archive;
    res->index_timed += t.index_timed;
    memcpy(res->out + res->n, t.out, t.n * sizeof *t.out);
    res->n += t.n;
    res->st.full_chains += t.st.full_chains;
    res->st.mem_chains += t.st.mem_chains;
    res->st.frame_chains += t.st.frame_chains;
    res->st.batches += t.st.batches;
    free(t.out);
  }
}

static int null_sink(void *ctx, const ba_record_t *recs, size_t n) {
  *(uint64_t *)ctx += n + recs[0].first_ns;
  return 0;
}

/* oLSH alone (push + flush into a sink that only touches the batch). */
static double olsh_alone_rate(const recset *s) {
  double best = 0;
  for (int rep = 0; rep < 3; rep++) {
    ba_olsh_t *h;
    uint64_t sum = 0;
    if (ba_olsh_create(&g_olsh, &h) != BA_OK) die("bad oLSH options");
    uint64_t t0 = ba_now_ns();
    for (size_t i = 0; i < s->n; i += 1024)
      if (ba_olsh_push(h, s->r + i, BA_MIN(1024, s->n - i), null_sink, &sum) != 0) die("push failed");
    if (ba_olsh_flush(h, null_sink, &sum) != 0) die("flush failed");
    double r = (double)s->n / ((double)(ba_now_ns() - t0) / 1e9);
    if (r > best) best = r;
    ba_olsh_free(h);
  }
  return best;
}

static void bench_set(const recset *s) {
  if (!s->n) return;
  sliced z = make_slices(s);
  mode_result m[3];
  /* Timings are the best of three runs (shared, noisy machines). */
  /* Repetitions interleave the modes, so a change in background load hits
   * every mode alike. */
  for (int rep = 0; rep < 3; rep++) {
    for (int mode = 0; mode < 3; mode++) {
      mode_result t;
      run_sliced(&z, mode, &t);
      if (rep == 0) m[mode] = t;
      else {
        if (t.secs < m[mode].secs) m[mode].secs = t.secs;
        free(t.out);
      }
    }
  }
  printf("\n== %s: %zu records, %zu one-hour slices ==\n", s->name, s->n, z.nslices);
  printf("%-24s %13s %13s %7s %13s %7s\n", "", "arrival", "oLSH", "ratio", "sorted(bound)", "ratio");
  row3("archive bytes (LZO)", (double)m[0].archive, (double)m[1].archive, (double)m[2].archive, "%.0f");
  /* Query IPs: 100 distinct IPv4 sources drawn from the data (fixed seed). */
  uint32_t ips[100];
  size_t nq = 0;
  rng_state = 0xBEEF;
  for (int tries = 0; nq < 100 && tries < 10000; tries++) {
    const ba_record_t *r = &s->r[rnd() % s->n];
    if (r->ipver != 4) continue;
    uint32_t ip = ba_addr_get_v4(r->src);
    int dup = 0;
    for (size_t k = 0; k < nq; k++) dup |= ips[k] == ip;
    if (!dup) ips[nq++] = ip;
  }
  char list[256];
  snprintf(list, sizeof list, "%s", g_codecs);
  for (char *save = NULL, *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
    ba_codec_t c;
    ba_bitmap_t *probe = NULL;
    if (ba_codec_from_name(name, &c) != BA_OK || ba_bitmap_create(c, &probe) != BA_OK) {
      printf("%-24s %13s\n", name, "(codec not available)");
      continue;
    }
    ba_bitmap_free(probe);
    index_b ix;
    double b[3] = {0}, us[3] = {0}, blk[3] = {0};
    for (int mode = 0; mode < 3; mode++)
      for (size_t k = 0; k < z.nslices; k++) {
        double bk;
        b[mode] += (double)index_bytes(m[mode].out + z.start[k], z.start[k + 1] - z.start[k], c, &ix);
        us[mode] += ip_lookups(&ix, ips, nq, 5, &bk);
        blk[mode] += bk;
        index_free(&ix);
      }
    char label[64];
    snprintf(label, sizeof label, "index bytes %s", name);
    row3(label, b[0], b[1], b[2], "%.0f");
    snprintf(label, sizeof label, "ip lookup us %s", name);
    row3(label, us[0], us[1], us[2], "%.2f");
    if (c == BA_CODEC_WAH32) {
      row3("blocks per lookup", blk[0], blk[1], blk[2], "%.1f");
      row3("archive+index wah32", (double)m[0].archive + b[0], (double)m[1].archive + b[1],
           (double)m[2].archive + b[2], "%.0f");
    }
  }
  row3("ingest records/s", (double)s->n / m[0].secs, (double)s->n / m[1].secs, (double)s->n / m[2].secs, "%.0f");
  printf("%-24s %13s %13.0f\n", "oLSH alone records/s", "", olsh_alone_rate(s));
  printf("  (ingest = [reorder] + columns + LZO + %s index; 'sorted' is an offline full sort, not streamable)\n",
         ba_codec_name(g_timed_codec));
  printf("  oLSH: full chains %llu, memory evictions %llu, frame evictions %llu, batches %llu\n",
         (unsigned long long)m[1].st.full_chains, (unsigned long long)m[1].st.mem_chains,
         (unsigned long long)m[1].st.frame_chains, (unsigned long long)m[1].st.batches);
  for (int mode = 0; mode < 3; mode++) free(m[mode].out);
  free(z.r);
  free(z.start);
}

/* ---------- per-column bytes of the store's own column layouts ---------- */

/* The store's column blocks (ba_col_encode of segment layout 1.0 and 2.0,
 * LZO1X-1, 4000-row groups, one segment per slice), fed in arrival order,
 * oLSH order and the offline sort: which columns carry the bytes and which
 * respond to order. Bytes include the 32-byte block header. */
typedef struct {
  ba_record_t *recs;
  uint8_t *frames, *raw, *out;
  size_t n, nf, fcap, rawcap, outcap;
  void *wrk;
  uint64_t bytes[2][BA_NCOLS2];
  uint64_t enc_ns[2], dec_ns[2]; /* encode + LZO, LZO + decode, all columns */
  ba_record_t *dec;
  ba_col_scratch_t *cs;
  uint8_t *back;
  size_t backcap;
} colacc;

static void grow_buf(uint8_t **p, size_t *cap, size_t need) {
  if (need <= *cap) return;
  while (*cap < need) *cap = *cap ? 2 * *cap : 1 << 16;
  *p = realloc(*p, *cap);
  if (!*p) die("out of memory");
}

static void colacc_flush(colacc *a) {
  if (!a->n) return;
  for (int major = 1; major <= 2; major++)
    for (int c = 0; c < BA_NCOLS2; c++) {
      uint64_t t0 = ba_now_ns();
      size_t raw = ba_col_raw_max(major, c, a->n, a->nf);
      grow_buf(&a->raw, &a->rawcap, raw + 1);
      grow_buf(&a->out, &a->outcap, ba_compress_bound(BA_COMPRESS_LZO, raw) + 1);
      if (ba_col_encode(major, c, a->recs, a->n, a->frames, a->nf, a->raw, &raw, a->cs) != BA_OK) die("encode failed");
      size_t clen = 0;
      if (ba_compress_block(BA_COMPRESS_LZO, a->raw, raw, a->out, a->outcap, &clen, a->wrk) != BA_OK)
        die("compress failed");
      uint64_t t1 = ba_now_ns();
      a->bytes[major - 1][c] += BA_BLK_HDR_BYTES + clen;
      /* Read back, as a query does (and check it). */
      grow_buf(&a->back, &a->backcap, raw + 1);
      if (ba_decompress_block(BA_COMPRESS_LZO, a->out, clen, a->back, raw) != BA_OK ||
          ba_col_decode(major, c, a->back, raw, a->n, a->dec) != BA_OK)
        die("column does not decode");
      uint64_t t2 = ba_now_ns();
      a->enc_ns[major - 1] += t1 - t0;
      a->dec_ns[major - 1] += t2 - t1;
      if (c == BA_NCOLS2 - 1)
        for (size_t i = 0; i < a->n; i++)
          if (a->dec[i].first_ns != a->recs[i].first_ns || a->dec[i].last_ns != a->recs[i].last_ns ||
              a->dec[i].bytes != a->recs[i].bytes || a->dec[i].dst_port != a->recs[i].dst_port)
            die("column round trip differs");
    }
  a->n = a->nf = 0;
}

static int colacc_sink(void *ctx, const ba_record_t *r, size_t n) {
  colacc *a = ctx;
  for (size_t i = 0; i < n; i++) {
    if (r[i].caplen && r[i].frame) {
      grow_buf(&a->frames, &a->fcap, a->nf + r[i].caplen);
      memcpy(a->frames + a->nf, r[i].frame, r[i].caplen);
      a->nf += r[i].caplen;
    }
    a->recs[a->n++] = r[i];
    if (a->n == BLOCK_ROWS) colacc_flush(a);
  }
  return 0;
}

static const char *const g_col_names[BA_NCOLS2] = {
    "first", "last", "src", "dst", "ports", "proto", "flags", "tos", "as",
    "if", "packets", "bytes", "exporter", "vlan", "icmp", "frame", "meta"};

static void bench_columns(const recset *s) {
  if (!s->n) return;
  sliced z = make_slices(s);
  colacc acc[3];
  memset(acc, 0, sizeof acc);
  for (int mode = 0; mode < 3; mode++) {
    colacc *a = &acc[mode];
    a->recs = malloc(BLOCK_ROWS * sizeof *a->recs);
    a->dec = malloc(BLOCK_ROWS * sizeof *a->dec);
    a->wrk = malloc(ba_compress_wrkmem());
    if (!a->recs || !a->dec || !a->wrk || ba_col_scratch_create(&a->cs) != BA_OK) die("out of memory");
    for (size_t k = 0; k < z.nslices; k++) {
      const ba_record_t *r = z.r + z.start[k];
      size_t n = z.start[k + 1] - z.start[k];
      if (mode == 1) {
        ba_olsh_t *h;
        if (ba_olsh_create(&g_olsh, &h) != BA_OK) die("bad oLSH options");
        for (size_t i = 0; i < n; i += 1024)
          if (ba_olsh_push(h, r + i, BA_MIN(1024, n - i), colacc_sink, a) != 0) die("push failed");
        if (ba_olsh_flush(h, colacc_sink, a) != 0) die("flush failed");
        ba_olsh_free(h);
      } else if (mode == 2) {
        ba_record_t *tmp = malloc(n * sizeof *tmp);
        if (!tmp) die("out of memory");
        memcpy(tmp, r, n * sizeof *tmp);
        qsort(tmp, n, sizeof *tmp, cmp_rec);
        colacc_sink(a, tmp, n);
        free(tmp);
      } else {
        colacc_sink(a, r, n);
      }
      colacc_flush(a);
    }
  }
  printf("\n== columns: %s: %zu records, store column blocks (LZO), bytes ==\n", s->name, s->n);
  printf("%-9s %11s %11s %11s %11s %11s %11s\n", "column", "1.0 arrival", "1.0 oLSH", "1.0 sorted",
         "2.0 arrival", "2.0 oLSH", "2.0 sorted");
  uint64_t tot[2][3] = {{0}};
  for (int c = 0; c < BA_NCOLS2; c++) {
    printf("%-9s", g_col_names[c]);
    for (int v = 0; v < 2; v++)
      for (int mode = 0; mode < 3; mode++) {
        printf(" %11llu", (unsigned long long)acc[mode].bytes[v][c]);
        tot[v][mode] += acc[mode].bytes[v][c];
      }
    printf("\n");
  }
  printf("%-9s", "total");
  for (int v = 0; v < 2; v++)
    for (int mode = 0; mode < 3; mode++) printf(" %11llu", (unsigned long long)tot[v][mode]);
  printf("\n%-9s", "/1.0 arr");
  for (int v = 0; v < 2; v++)
    for (int mode = 0; mode < 3; mode++) printf(" %11.3f", (double)tot[v][mode] / (double)tot[0][0]);
  printf("\n  2.0: oLSH / arrival %.3f, sorted / arrival %.3f; 2.0 / 1.0 in arrival order %.3f\n",
         (double)tot[1][1] / (double)tot[1][0], (double)tot[1][2] / (double)tot[1][0],
         (double)tot[1][0] / (double)tot[0][0]);  printf("  ns per row, all 17 columns (arrival order): encode+LZO 1.0 %.0f, 2.0 %.0f; LZO+decode 1.0 %.0f, 2.0 %.0f\n",
         (double)acc[0].enc_ns[0] / (double)s->n, (double)acc[0].enc_ns[1] / (double)s->n,
         (double)acc[0].dec_ns[0] / (double)s->n, (double)acc[0].dec_ns[1] / (double)s->n);
  for (int mode = 0; mode < 3; mode++) {
    free(acc[mode].recs);
    free(acc[mode].dec);
    ba_col_scratch_free(acc[mode].cs);
    free(acc[mode].back);
    free(acc[mode].frames);
    free(acc[mode].raw);
    free(acc[mode].out);
    free(acc[mode].wrk);
  }
  free(z.r);
  free(z.start);
}

/* ---------- through the real store ---------- */

static const char *g_store_base;
static const char *g_store_codecs = "wah32,compax";

static int rm_fn(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)st; (void)type; (void)ftw;
  remove(path);
  return 0;
}

/* The matched records as a set: the sum of a hash of each record's fields
 * (those the queries fetch), which does not depend on the order. */
static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static int count_sink(void *ctx, const ba_record_t *recs, size_t n) {
  uint64_t *sum = ctx;
  for (size_t i = 0; i < n; i++) {
    const ba_record_t *r = &recs[i];
    uint64_t h = mix64(r->first_ns) ^ mix64(r->last_ns + 1);
    h = mix64(h ^ ba_load_le64(r->src) ^ mix64(ba_load_le64(r->src + 8)));
    h = mix64(h ^ ba_load_le64(r->dst) ^ mix64(ba_load_le64(r->dst + 8) + 2));
    h = mix64(h ^ ((uint64_t)r->src_port << 32 | (uint64_t)r->dst_port << 16 | r->proto));
    h = mix64(h ^ r->packets ^ mix64(r->bytes + 3));
    *sum += h;
  }
  return 0;
}

static double cpu_secs(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
         ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

typedef struct {
  double ingest_secs, ingest_cpu; /* wall clock; CPU time of all threads */
  uint64_t archive, index, file, segments;
  double query_ms;
  uint64_t matched, blocks, set_hash;
  uint64_t index_attr[BA_ATTR_COUNT];
} store_result;

/* Filters: exact IPv4 sources (the paper's lookups), a service, a /16 and a
 * service, a protocol. All built from the data with a fixed seed. */
static size_t make_filters(const recset *s, char (*f)[96], size_t cap) {
  size_t n = 0;
  g_frng = 0xF00D;
  for (int tries = 0; n < 20 && tries < 5000; tries++) {
    const ba_record_t *r = &s->r[frnd() % s->n];
    if (r->ipver != 4) continue;
    uint32_t ip = ba_addr_get_v4(r->src);
    snprintf(f[n++], 96, "src ip %u.%u.%u.%u", ip >> 24, ip >> 16 & 255, ip >> 8 & 255, ip & 255);
  }
  const ba_record_t *r = &s->r[frnd() % s->n];
  uint32_t ip = ba_addr_get_v4(r->dst);
  if (n + 4 <= cap) {
    snprintf(f[n++], 96, "dst port 443");
    snprintf(f[n++], 96, "dst net %u.%u.0.0/16 and dst port %u", ip >> 24, ip >> 16 & 255, r->dst_port);
    snprintf(f[n++], 96, "proto udp");
    snprintf(f[n++], 96, "src port 53 or dst port 53");
  }
  return n;
}

static void store_run(const recset *s, ba_codec_t codec, int olsh, char (*filters)[96], size_t nf,
                      store_result *res) {
  memset(res, 0, sizeof *res);
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/bench-olsh-%s-%d", g_store_base, ba_codec_name(codec), olsh);
  nftw(dir, rm_fn, 16, FTW_DEPTH | FTW_PHYS);
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.codec = codec;
  o.reorder = olsh ? BA_REORDER_OLSH : BA_REORDER_NONE;
  ba_store_writer_t *w;
  double c0 = cpu_secs();
  uint64_t t0 = ba_now_ns();
  if (ba_store_writer_open(dir, &o, &w) != BA_OK) bench_die("cannot open the store writer");
  for (size_t i = 0; i < s->n; i += 1024)
    if (ba_store_writer_append(w, s->r + i, BA_MIN(1024, s->n - i)) != BA_OK) bench_die(ba_store_writer_errmsg(w));
  if (ba_store_writer_close(w) != BA_OK) bench_die("store close failed");
  res->ingest_secs = (double)(ba_now_ns() - t0) / 1e9;
  res->ingest_cpu = cpu_secs() - c0;
  ba_store_t *st;
  if (ba_store_open(dir, &st) != BA_OK) bench_die("cannot open the store");
  res->segments = ba_store_segment_count(st);
  for (size_t k = 0; k < res->segments; k++) {
    ba_segment_t *seg;
    ba_segment_info_t info;
    if (ba_store_segment(st, k, &seg) != BA_OK || ba_segment_info(seg, &info) != BA_OK) bench_die("bad segment");
    res->archive += info.bytes_archive;
    res->index += info.bytes_index;
    res->file += info.bytes_file;
    for (int a = 0; a < BA_ATTR_COUNT; a++) res->index_attr[a] += info.bytes_index_attr[a];
  }
  /* Warm cache, best of three per filter. */
  for (size_t q = 0; q < nf; q++) {
    ba_query_t *qq;
    if (ba_query_create(&qq) != BA_OK || ba_query_compile(qq, filters[q]) != BA_OK) bench_die(filters[q]);
    ba_query_exec_opts_t eo;
    ba_query_exec_opts_init(&eo);
    eo.out_cols = BA_COL_FIRST | BA_COL_LAST | BA_COL_SRC | BA_COL_DST | BA_COL_PORTS | BA_COL_PROTO |
                  BA_COL_PACKETS | BA_COL_BYTES;
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
      ba_query_stats_t qs;
      uint64_t cnt = 0;
      uint64_t q0 = ba_now_ns();
      if (ba_query_run(qq, st, &eo, count_sink, &cnt, &qs) != BA_OK) bench_die("query failed");
      double ms = (double)(ba_now_ns() - q0) / 1e6;
      if (ms < best) best = ms;
      if (rep == 0) {
        res->set_hash += mix64(cnt + q); /* per filter, so swapped answers differ */
        res->matched += qs.rows_matched;
        res->blocks += qs.blocks_read;
      }
    }
    res->query_ms += best;
    ba_query_free(qq);
  }
  ba_store_close(st);
  nftw(dir, rm_fn, 16, FTW_DEPTH | FTW_PHYS);
}

static void bench_store(const recset *s) {
  if (!s->n || !g_store_base) return;
  char filters[32][96];
  size_t nf = make_filters(s, filters, 32);
  printf("\n== store: %s: %zu records (ba_store_writer, default options; %zu filters) ==\n", s->name, s->n, nf);
  printf("%-26s %13s %13s %7s\n", "", "arrival", "oLSH", "ratio");
  char list[256];
  snprintf(list, sizeof list, "%s", g_store_codecs);
  for (char *save = NULL, *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
    ba_codec_t c;
    if (ba_codec_from_name(name, &c) != BA_OK) bench_die("unknown codec");
    store_result r[2];
    /* Ingest timing: best of three writes per mode, arrival and oLSH
     * alternating (queries on the first). */
    double all[2][3];
    for (int rep = 0; rep < 3; rep++)
      for (int mode = 0; mode < 2; mode++) {
        if (rep == 0) {
          store_run(s, c, mode, filters, nf, &r[mode]);
        } else {
          store_result t;
          store_run(s, c, mode, filters, 0, &t);
          r[mode].ingest_secs = BA_MIN(r[mode].ingest_secs, t.ingest_secs);
          r[mode].ingest_cpu = BA_MIN(r[mode].ingest_cpu, t.ingest_cpu);
          all[mode][rep] = t.ingest_secs;
          continue;
        }
        all[mode][rep] = r[mode].ingest_secs;
      }
    printf("  [%s] ingest ratio per repetition (oLSH / arrival rate): %.2f %.2f %.2f\n", name,
           all[0][0] / all[1][0], all[0][1] / all[1][1], all[0][2] / all[1][2]);
    if (r[0].matched != r[1].matched) printf("  WARNING: %s: %llu matches without oLSH, %llu with\n", name,
                                             (unsigned long long)r[0].matched, (unsigned long long)r[1].matched);
    char label[384];
#define ROW(lbl, a, b, fmt)                                                                      \
  do {                                                                                           \
    char x_[32], y_[32];                                                                         \
    snprintf(x_, sizeof x_, fmt, (double)(a));                                                   \
    snprintf(y_, sizeof y_, fmt, (double)(b));                                                   \
    printf("%-26s %13s %13s %7.3f\n", lbl, x_, y_, (double)(b) / (double)(a));                   \
  } while (0)
    snprintf(label, sizeof label, "[%s] archive bytes", name);
    ROW(label, r[0].archive, r[1].archive, "%.0f");
    snprintf(label, sizeof label, "[%s] index bytes", name);
    ROW(label, r[0].index, r[1].index, "%.0f");
    snprintf(label, sizeof label, "[%s] file bytes", name);
    ROW(label, r[0].file, r[1].file, "%.0f");
    snprintf(label, sizeof label, "[%s] ingest records/s", name);
    ROW(label, s->n / r[0].ingest_secs, s->n / r[1].ingest_secs, "%.0f");
    snprintf(label, sizeof label, "[%s] ingest CPU us/record", name);
    ROW(label, 1e6 * r[0].ingest_cpu / (double)s->n, 1e6 * r[1].ingest_cpu / (double)s->n, "%.3f");
    snprintf(label, sizeof label, "[%s] query ms (sum)", name);
    ROW(label, r[0].query_ms, r[1].query_ms, "%.2f");
    snprintf(label, sizeof label, "[%s] blocks read", name);
    ROW(label, r[0].blocks, r[1].blocks, "%.0f");
    /* Which indexed attributes respond to the order (the first codec only). */
    if (list[0] && name == list)
      for (int a = 0; a < BA_ATTR_COUNT; a++) {
        snprintf(label, sizeof label, "[%s] index %s", name, ba_attr_name((ba_attr_t)a));
        if (r[0].index_attr[a]) ROW(label, r[0].index_attr[a], r[1].index_attr[a], "%.0f");
      }
    printf("  [%s] %llu segments, %llu matches (same records with and without oLSH: %s)\n", name,
           (unsigned long long)r[0].segments, (unsigned long long)r[0].matched,
           r[0].matched == r[1].matched && r[0].set_hash == r[1].set_hash ? "yes" : "NO");
#undef ROW
  }
}

static void usage(void) {
  fprintf(stderr,
          "usage: bench_olsh [--traces DIR] [--flows N] [--flow-csv PATH]... [--no-replay]\n"
          "                  [--mmax M] [--mmin M] [--nchains P] [--nfuncs n] [--width W] [--max-block B] [--q Q]\n"
          "                  [--weights w1,...,w11] [--chain-order h2|tuple]\n"
          "                  [--store TMPDIR [--store-codecs LIST]] [--columns-only]\n"
          "  Compares arrival order with oLSH on the shared captures (packets, read by\n"
          "  ba_capture_ingest, and flows aggregated from them by ba_flowagg), on N\n"
          "  generated flows (default 1000000) and on real flow exports (--flow-csv).\n"
          "  Per-column bytes of the store's column layouts (1.0 and 2.0) are printed\n"
          "  first for arrival order, oLSH and the offline sort; --columns-only stops there.\n"
          "  --store TMPDIR writes every set through the store writer (arrival order and\n"
          "  BA_REORDER_OLSH, default store options) and runs queries on it; the stores\n"
          "  are made and removed under TMPDIR.\n"
          "  Captures are replayed back to back with idle gaps capped at 1 s unless\n"
          "  --no-replay keeps their original timestamps.\n"
          "  --flow-csv PATH (repeatable; a file, .xz files through xz -dc, or a directory\n"
          "  read in version order) adds a set of real flows read by ba_flowcsv_read:\n"
          "  Argus/CTU-13 .binetflow or nfdump -o csv; IPv4 flows are kept.\n"
          "  --traces '' --flows 0 leaves only that set.\n"
          "  example: bench_olsh --flows 2000000 --store /tmp --store-codecs wah32,compax\n");
  exit(2);
}

/* oLSH options; 0 = not an oLSH option. */
static int olsh_option(int c, const char *arg) {
  switch (c) {
    case 'M': g_olsh.mmax = (uint32_t)strtoul(arg, NULL, 10); return 1;
    case 'm': g_olsh.mmin = (uint32_t)strtoul(arg, NULL, 10); return 1;
    case 'P': g_olsh.nchains = (uint32_t)strtoul(arg, NULL, 10); return 1;
    case 'n': g_olsh.nfuncs = (uint32_t)strtoul(arg, NULL, 10); return 1;
    case 'w': g_olsh.width = strtod(arg, NULL); return 1;
    case 'B': g_olsh.max_block = (uint32_t)strtoul(arg, NULL, 10); return 1;
    case 'Q': g_olsh.q = (uint32_t)strtoul(arg, NULL, 10); return 1;
    case 'o':
      if (!strcmp(arg, "h2")) g_olsh.chain_order = BA_OLSH_ORDER_H2;
      else if (!strcmp(arg, "tuple")) g_olsh.chain_order = BA_OLSH_ORDER_TUPLE;
      else usage();
      return 1;
    case 'W': {
      char *e = (char *)arg;
      for (int k = 0; k < 11; k++) {
        g_olsh.weight[k] = strtod(e, &e);
        if (*e == ',') e++;
        else if (k < 10) usage();
      }
      return 1;
    }
    default: return 0;
  }
}

static void print_olsh(void) {
  printf("oLSH: n=%u P=%u maxBlockSize=%u MMax=%u MMin=%u W=%g Q=%u frame budget=%llu\n", g_olsh.nfuncs,
         g_olsh.nchains, g_olsh.max_block, g_olsh.mmax, g_olsh.mmin, g_olsh.width, g_olsh.q,
         (unsigned long long)g_olsh.frame_bytes);
  printf("oLSH chain order: %s\n", g_olsh.chain_order == BA_OLSH_ORDER_TUPLE ? "tuple" : "h2 (Program 1)");
  printf("oLSH weights (src a b c d, dst a b c d, sport, dport, proto):");
  for (int k = 0; k < 11; k++) printf(" %g", g_olsh.weight[k]);
  printf("\n");
}

int main(int argc, char **argv) {
  const char *traces = BA_SHARED_DATA_DEFAULT "/traces";
  size_t nflows = 1000000;
  int columns_only = 0;
  ba_olsh_opts_init(&g_olsh);
  static const struct option opts[] = {
      {"traces", required_argument, 0, 't'}, {"flows", required_argument, 0, 'f'},
      {"mmax", required_argument, 0, 'M'},   {"mmin", required_argument, 0, 'm'},
      {"nchains", required_argument, 0, 'P'}, {"nfuncs", required_argument, 0, 'n'},
      {"width", required_argument, 0, 'w'},  {"max-block", required_argument, 0, 'B'},
      {"q", required_argument, 0, 'Q'},      {"weights", required_argument, 0, 'W'},
      {"store", required_argument, 0, 'S'},  {"no-replay", no_argument, 0, 'R'},
      {"store-codecs", required_argument, 0, 'C'}, {"columns-only", no_argument, 0, 'K'},
      {"chain-order", required_argument, 0, 'o'}, {"flow-csv", required_argument, 0, 'F'},
      {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    if (olsh_option(c, optarg)) continue;
    switch (c) {
      case 't': traces = optarg; break;
      case 'f': nflows = strtoull(optarg, NULL, 10); break;
      case 'S': g_store_base = optarg; break;
      case 'K': columns_only = 1; break;
      case 'R': g_replay = 0; break;
      case 'C': g_store_codecs = optarg; break;
      case 'F':
        g_flow_paths = realloc(g_flow_paths, (g_nflow_paths + 1) * sizeof *g_flow_paths);
        if (!g_flow_paths) bench_die("out of memory");
        g_flow_paths[g_nflow_paths++] = optarg;
        break;
      default: usage();
    }
  }
  printf("command:");
  for (int i = 0; i < argc; i++) printf(" %s", argv[i]);
  printf("\n");
  print_olsh();
  recset sets[4] = {{.name = "captures: packets"}, {.name = "captures: flows (5-tuple, 60 s gap)"},
                    {.name = "generated flows"}, {.name = "real flows (CSV)"}};
  if (traces[0]) {
    olsh_load_captures(traces, g_replay, &sets[0]);
    olsh_flows_from_packets(&sets[0], &sets[1]);
  }
  if (nflows) olsh_gen_flows(nflows, &sets[2]);
  if (g_nflow_paths) olsh_load_flow_csv(g_flow_paths, g_nflow_paths, &sets[3]);
  for (int k = 0; k < 4; k++) olsh_bench_columns(&sets[k], &g_olsh);
  if (!columns_only)
    for (int k = 0; k < 4; k++) bench_store(&sets[k]);
  for (int k = 0; k < 4; k++) recset_free(&sets[k]);
  free(g_flow_paths);
  return 0;
}

/* Per-column bytes of the store's own column code (ba_col_encode, layouts
 * 1.0 and 2.0, ba_compress_block with LZO, 4000-row blocks, one segment per
 * one-hour slice), fed in arrival order, oLSH order (ba_olsh_push) and the
 * offline sort: which columns carry the bytes and which respond to order.
 * The store itself reports archive bytes per segment only; a per-column
 * count from the reader would let this drive a real store too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive/archive.h"
#include "common/common.h"
#include "olsh_columns.h"

#define BLOCK_ROWS 4000

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
  if (!*p) bench_die("out of memory");
}

static void colacc_flush(colacc *a) {
  if (!a->n) return;
  for (int major = 1; major <= 2; major++)
    for (int c = 0; c < BA_NCOLS2; c++) {
      uint64_t t0 = ba_now_ns();
      size_t raw = ba_col_raw_max(major, c, a->n, a->nf);
      grow_buf(&a->raw, &a->rawcap, raw + 1);
      grow_buf(&a->out, &a->outcap, ba_compress_bound(BA_COMPRESS_LZO, raw) + 1);
      if (ba_col_encode(major, c, a->recs, a->n, a->frames, a->nf, a->raw, &raw, a->cs) != BA_OK) bench_die("encode failed");
      size_t clen = 0;
      if (ba_compress_block(BA_COMPRESS_LZO, a->raw, raw, a->out, a->outcap, &clen, a->wrk) != BA_OK)
        bench_die("compress failed");
      uint64_t t1 = ba_now_ns();
      a->bytes[major - 1][c] += BA_BLK_HDR_BYTES + clen;
      /* Read back, as a query does (and check it). */
      grow_buf(&a->back, &a->backcap, raw + 1);
      if (ba_decompress_block(BA_COMPRESS_LZO, a->out, clen, a->back, raw) != BA_OK ||
          ba_col_decode(major, c, a->back, raw, a->n, a->dec) != BA_OK)
        bench_die("column does not decode");
      uint64_t t2 = ba_now_ns();
      a->enc_ns[major - 1] += t1 - t0;
      a->dec_ns[major - 1] += t2 - t1;
      if (c == BA_NCOLS2 - 1)
        for (size_t i = 0; i < a->n; i++)
          if (a->dec[i].first_ns != a->recs[i].first_ns || a->dec[i].last_ns != a->recs[i].last_ns ||
              a->dec[i].bytes != a->recs[i].bytes || a->dec[i].dst_port != a->recs[i].dst_port)
            bench_die("column round trip differs");
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

void olsh_bench_columns(const recset *s, const ba_olsh_opts_t *opts) {
  if (!s->n) return;
  sliced z = make_slices(s);
  colacc acc[3];
  memset(acc, 0, sizeof acc);
  for (int mode = 0; mode < 3; mode++) {
    colacc *a = &acc[mode];
    a->recs = malloc(BLOCK_ROWS * sizeof *a->recs);
    a->dec = malloc(BLOCK_ROWS * sizeof *a->dec);
    a->wrk = malloc(ba_compress_wrkmem());
    if (!a->recs || !a->dec || !a->wrk || ba_col_scratch_create(&a->cs) != BA_OK) bench_die("out of memory");
    for (size_t k = 0; k < z.nslices; k++) {
      const ba_record_t *r = z.r + z.start[k];
      size_t n = z.start[k + 1] - z.start[k];
      if (mode == 1) {
        ba_olsh_t *h;
        if (ba_olsh_create(opts, &h) != BA_OK) bench_die("bad oLSH options");
        for (size_t i = 0; i < n; i += 1024)
          if (ba_olsh_push(h, r + i, BA_MIN(1024, n - i), colacc_sink, a) != 0) bench_die("push failed");
        if (ba_olsh_flush(h, colacc_sink, a) != 0) bench_die("flush failed");
        ba_olsh_free(h);
      } else if (mode == 2) {
        ba_record_t *tmp = malloc(n * sizeof *tmp);
        if (!tmp) bench_die("out of memory");
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

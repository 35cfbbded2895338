/* Compressed index bitmaps compared on a store (doc/format.md §7.8, 3.2):
 * every bitmap of every segment is read (any version) and its words
 * compressed with zstd: one frame per bitmap, kept only when the record
 * shrinks to at most a threshold of its size (levels 1, 3, 9; thresholds
 * 7/8, 3/4, mixed, any), the bare frame that 3.2 stores (no magic number,
 * content size or dictionary id), one dictionary per segment and attribute
 * (its bytes counted), and one frame per attribute. Prints index bytes per
 * record per attribute (bitmap records plus 24 directory bytes each), how
 * many bitmaps were compressed and the time to decompress them all once.
 * Uses zstd's static-linking-only API (magicless frames, dictionary
 * training): a bench tool, not the library.
 * Usage: bench_index_zstd STORE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define ZDICT_STATIC_LINKING_ONLY
#define ZSTD_STATIC_LINKING_ONLY
#include <zdict.h>
#include <zstd.h>

#include "bitarc/bitarc.h"

#define HDR 20u /* bitmap record header (format.md §4) */
#define NCAND 10

static const char *const g_cand[NCAND] = {"raw",      "L1 <=7/8", "L3 <=7/8", "L1 <=3/4", "L1 mixed",
                                          "L9 <=7/8", "L1 <1",    "L1 bare",  "L1 dict", "attr L3"};
static const int g_level[NCAND] = {0, 1, 3, 1, 1, 9, 1, 1, 1, 3};
static const double g_thr[NCAND] = {0, 7. / 8, 7. / 8, 3. / 4, 7. / 8, 7. / 8, 1, 7. / 8, 7. / 8, 0};
#define C_MIXED 4 /* <= 7/8 up to 4 KB of words, <= 2/3 above */
#define C_BARE 7 /* magicless frame, no content size, no dictionary id */
#define C_DICT 8 /* one dictionary per segment and attribute (its bytes counted) */

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s STORE\n", argv[0]);
    return 2;
  }
  ba_store_t *st;
  if (ba_store_open(argv[1], &st) != BA_OK) {
    fprintf(stderr, "%s: cannot open\n", argv[1]);
    return 1;
  }
  static uint64_t bytes[BA_ATTR_COUNT][NCAND], nbm[BA_ATTR_COUNT], ncomp[NCAND];
  double dtime[NCAND] = {0};
  uint64_t rows = 0;
  size_t vcap = 1 << 17, ccap = 0, acap = 0, alen = 0, rcap = 0;
  uint32_t *vals = malloc(vcap * sizeof *vals);
  uint8_t *buf = NULL, *cbuf = NULL, *abuf = NULL, *rbuf = NULL;
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  ZSTD_DCtx *dc = ZSTD_createDCtx();
  ZSTD_CCtx *bc = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(bc, ZSTD_c_compressionLevel, 1);
  ZSTD_CCtx_setParameter(bc, ZSTD_c_format, ZSTD_f_zstd1_magicless);
  ZSTD_CCtx_setParameter(bc, ZSTD_c_contentSizeFlag, 0);
  ZSTD_CCtx_setParameter(bc, ZSTD_c_dictIDFlag, 0);
  size_t *slen = NULL, scap = 0;
  for (size_t s = 0; s < ba_store_segment_count(st); s++) {
    ba_segment_t *seg;
    ba_segment_info_t inf;
    if (ba_store_segment(st, s, &seg) != BA_OK || ba_segment_info(seg, &inf) != BA_OK) continue;
    rows += inf.rows;
    for (unsigned a = 0; a < BA_ATTR_COUNT; a++) {
      size_t n = 0;
      if (ba_segment_index_values(seg, (ba_attr_t)a, vals, vcap, &n) != BA_OK || n > vcap) continue;
      alen = 0;
      for (size_t i = 0; i < n; i++) {
        ba_bitmap_t *bm;
        if (ba_segment_index(seg, (ba_attr_t)a, vals[i], &bm) != BA_OK) continue;
        size_t need = ba_bitmap_serialized_size(bm), len = 0;
        if (need > rcap) rbuf = realloc(rbuf, rcap = need * 2);
        ba_bitmap_serialize(bm, rbuf, rcap, &len);
        ba_bitmap_free(bm);
        nbm[a]++;
        if (alen + len > acap) abuf = realloc(abuf, acap = (alen + len) * 2);
        memcpy(abuf + alen, rbuf + HDR, len - HDR);
        alen += len - HDR;
        size_t bound = ZSTD_compressBound(len);
        if (bound > ccap) cbuf = realloc(cbuf, ccap = bound * 2);
        buf = realloc(buf, len + 1);
        bytes[a][0] += len + 24;
        if (n > scap) {
          scap = n * 2;
          slen = realloc(slen, scap * sizeof *slen);
        }
        slen[i] = len - HDR;
        for (int c = 1; c < NCAND - 1; c++) {
          if (c == C_DICT) continue;
          size_t z;
          if (c == C_BARE) {
            ZSTD_CCtx_reset(bc, ZSTD_reset_session_only);
            z = ZSTD_compress2(bc, cbuf, ccap, rbuf + HDR, len - HDR);
          } else {
            z = ZSTD_compressCCtx(cc, cbuf, ccap, rbuf + HDR, len - HDR, g_level[c]);
          }
          double thr = c == C_MIXED && len > 4096 + HDR ? 2. / 3 : g_thr[c];
          if (!ZSTD_isError(z) && HDR + z <= thr * len) {
            bytes[a][c] += HDR + z + 24;
            ncomp[c]++;
            double t0 = now();
            if (c != C_BARE) ZSTD_decompressDCtx(dc, buf, len, cbuf, z);
            dtime[c] += now() - t0;
          } else {
            bytes[a][c] += len + 24;
          }
        }
      }
      if (alen) { /* dictionary: trained on the attribute's bitmaps, size <= alen / 16 */
        size_t dcap = alen / 16 < 16384 ? alen / 16 : 16384, dsz = 0;
        uint8_t *dict = malloc(dcap + 1);
        if (dcap >= 256 && n >= 8) {
          ZDICT_fastCover_params_t fp;
          memset(&fp, 0, sizeof fp);
          fp.k = 50; fp.d = 8; fp.steps = 4; fp.zParams.compressionLevel = 1;
          size_t r = ZDICT_optimizeTrainFromBuffer_fastCover(dict, dcap, abuf, slen, (unsigned)n, &fp);
          if (!ZDICT_isError(r)) dsz = r;
        }
        ZSTD_CDict *cd = dsz ? ZSTD_createCDict(dict, dsz, 1) : NULL;
        ZSTD_DDict *dd = dsz ? ZSTD_createDDict(dict, dsz) : NULL;
        uint64_t b = dsz;
        size_t pos = 0;
        for (size_t i = 0; i < n; i++) {
          size_t raw = slen[i], rl = raw + HDR;
          size_t bound = ZSTD_compressBound(raw);
          if (bound > ccap) cbuf = realloc(cbuf, ccap = bound * 2);
          size_t z = cd ? ZSTD_compress_usingCDict(cc, cbuf, ccap, abuf + pos, raw, cd)
                        : ZSTD_compressCCtx(cc, cbuf, ccap, abuf + pos, raw, 1);
          if (!ZSTD_isError(z) && HDR + z <= 7. / 8 * rl) {
            b += HDR + z + 24;
            ncomp[C_DICT]++;
            buf = realloc(buf, raw + 1);
            double t0 = now();
            if (dd) ZSTD_decompress_usingDDict(dc, buf, raw, cbuf, z, dd);
            else ZSTD_decompressDCtx(dc, buf, raw, cbuf, z);
            dtime[C_DICT] += now() - t0;
          } else {
            b += rl + 24;
          }
          pos += raw;
        }
        bytes[a][C_DICT] += b;
        ZSTD_freeCDict(cd);
        ZSTD_freeDDict(dd);
        free(dict);
        size_t bound = ZSTD_compressBound(alen);
        if (bound > ccap) cbuf = realloc(cbuf, ccap = bound * 2);
        size_t z = ZSTD_compressCCtx(cc, cbuf, ccap, abuf, alen, 3);
        bytes[a][NCAND - 1] += z + (HDR + 24) * n;
        buf = realloc(buf, alen + 1);
        double t0 = now();
        ZSTD_decompressDCtx(dc, buf, alen, cbuf, z);
        dtime[NCAND - 1] += now() - t0;
      }
    }
    ba_segment_release(seg);
  }
  printf("%s: %llu records\n%-16s %8s", argv[1], (unsigned long long)rows, "attribute", "bitmaps");
  for (int c = 0; c < NCAND; c++) printf(" %10s", g_cand[c]);
  printf("\n");
  uint64_t tot[NCAND] = {0};
  for (unsigned a = 0; a < BA_ATTR_COUNT; a++) {
    if (!nbm[a]) continue;
    printf("%-16s %8llu", ba_attr_name((ba_attr_t)a), (unsigned long long)nbm[a]);
    for (int c = 0; c < NCAND; c++) {
      printf(" %10.3f", (double)bytes[a][c] / rows);
      tot[c] += bytes[a][c];
    }
    printf("\n");
  }
  printf("%-16s %8s", "total B/flow", "");
  for (int c = 0; c < NCAND; c++) printf(" %10.3f", (double)tot[c] / rows);
  printf("\n%-16s %8s", "compressed", "");
  for (int c = 0; c < NCAND; c++) printf(" %10llu", (unsigned long long)ncomp[c]);
  printf("\n%-16s %8s", "decompress ms", "");
  for (int c = 0; c < NCAND; c++) printf(" %10.1f", dtime[c] * 1e3);
  printf("\n");
  ZSTD_freeCCtx(cc);
  ZSTD_freeDCtx(dc);
  free(vals);
  free(buf);
  free(cbuf);
  free(abuf);
  free(rbuf);
  ba_store_close(st);
  return 0;
}

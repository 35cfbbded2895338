/* Store round trips against linear references: scan == input per slice,
 * every index bitmap == a linear scan of the records, online == batch builder
 * byte for byte, read_rows of random subsets, crash recovery (fork + kill -9). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "archive/writer_internal.h"
#include "index/index.h"
#include "store_gen.h"

#define SLICE_S 60u
#define BIN_S 7u

static uint64_t t0(void) { return (1795000000ull / SLICE_S) * SLICE_S * 1000000000ull; }

typedef struct collected {
  ba_record_t *r;
  uint8_t **frames;
  size_t n, cap;
} collected_t;

static int sink(void *ctx, const ba_record_t *recs, size_t n) {
  collected_t *c = ctx;
  if (c->n + n > c->cap) {
    c->cap = (c->n + n) * 2;
    c->r = realloc(c->r, c->cap * sizeof *c->r);
    c->frames = realloc(c->frames, c->cap * sizeof *c->frames);
  }
  for (size_t i = 0; i < n; i++) {
    c->r[c->n] = recs[i];
    c->frames[c->n] = NULL;
    if (recs[i].caplen) {
      c->frames[c->n] = malloc(recs[i].caplen);
      memcpy(c->frames[c->n], recs[i].frame, recs[i].caplen);
      c->r[c->n].frame = c->frames[c->n];
    }
    c->n++;
  }
  return 0;
}

static void collected_free(collected_t *c) {
  for (size_t i = 0; i < c->n; i++) free(c->frames[i]);
  free(c->r);
  free(c->frames);
  memset(c, 0, sizeof *c);
}

/* Records of input g whose slice starts at `start`, in input order. */
static size_t slice_select(const gen_t *g, uint64_t start, const ba_record_t **out) {
  size_t k = 0;
  uint64_t sn = (uint64_t)SLICE_S * 1000000000ull;
  for (size_t i = 0; i < g->n; i++)
    if (g->r[i].first_ns - g->r[i].first_ns % sn == start) out[k++] = &g->r[i];
  return k;
}

static uint64_t rec_hash(const ba_record_t *r) {
  ba_record_t t = *r;
  t.frame = NULL;
  uint64_t h = ba_crc32c(0, &t, sizeof t);
  if (r->caplen) h = h << 32 | ba_crc32c(7, r->frame, r->caplen);
  return h;
}

static int u64_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Checks one store against its input, including every index bitmap. With
 * `ordered` = 0 (oLSH) each slice must hold the same multiset of records. */
static void check_store_ex(const char *dir, const gen_t *g, ba_codec_t codec, int check_batch, int ordered) {
  ba_store_t *s;
  assert_int_equal(ba_store_open(dir, &s), BA_OK);
  const ba_record_t **want = malloc(g->n * sizeof *want);
  uint64_t sn = (uint64_t)SLICE_S * 1000000000ull, bin_ns = (uint64_t)BIN_S * 1000000000ull;
  size_t total = 0;
  size_t nseg = ba_store_segment_count(s);
  assert_true(nseg >= 1);
  /* Segments of the same slice, concatenated in listing order, give that
   * slice's records in input order. */
  for (size_t i = 0; i < nseg;) {
    ba_segment_t *seg;
    ba_segment_info_t in;
    assert_int_equal(ba_store_segment(s, i, &seg), BA_OK);
    assert_int_equal(ba_segment_info(seg, &in), BA_OK);
    assert_int_equal(in.codec, codec);
    assert_int_equal(in.end_ns - in.start_ns, sn);
    size_t nw = slice_select(g, in.start_ns, want);
    size_t pos = 0;
    uint64_t start = in.start_ns;
    for (; i < nseg; i++) {
      assert_int_equal(ba_store_segment(s, i, &seg), BA_OK);
      assert_int_equal(ba_segment_info(seg, &in), BA_OK);
      if (in.start_ns != start) break;
      collected_t c = {0};
      uint64_t dmg = 99;
      assert_int_equal(ba_segment_scan(seg, BA_COL_ALL, sink, &c, &dmg), BA_OK);
      assert_int_equal(dmg, 0);
      assert_int_equal(c.n, in.rows);
      assert_true(pos + c.n <= nw);
      if (ordered) {
        for (size_t k = 0; k < c.n; k++) assert_true(rec_equal(&c.r[k], want[pos + k], BA_COL_ALL));
      } else {
        assert_int_equal(c.n, nw); /* one segment per slice here */
        uint64_t *h1 = malloc((nw + 1) * 8), *h2 = malloc((nw + 1) * 8);
        for (size_t k = 0; k < nw; k++) {
          h1[k] = rec_hash(&c.r[k]);
          h2[k] = rec_hash(want[k]);
        }
        qsort(h1, nw, 8, u64_cmp);
        qsort(h2, nw, 8, u64_cmp);
        assert_memory_equal(h1, h2, nw * 8);
        free(h1);
        free(h2);
        assert_int_equal(in.reorder, BA_REORDER_OLSH);
      }
      /* Every index bitmap against the linear reference. */
      for (int a = 0; a < BA_ATTR_COUNT; a++) {
        if (a == BA_ATTR_TIME_BIN && !ordered) { /* oLSH: zone maps answer time windows (format.md §7.2) */
          size_t nt = 1;
          assert_int_equal(ba_segment_index_values(seg, (ba_attr_t)a, NULL, 0, &nt), BA_OK);
          assert_int_equal(nt, 0);
          continue;
        }
        uint32_t dom = a == BA_ATTR_SRC_PORT || a == BA_ATTR_DST_PORT ? 65536
                       : a >= BA_ATTR_SRC_V6NET                   ? 1u << BA_V6_HASH_BITS
                       : a == BA_ATTR_TIME_BIN                    ? (SLICE_S + BIN_S - 1) / BIN_S
                                                                  : 256;
        uint32_t *vals = malloc(dom * sizeof *vals);
        size_t nv = 0;
        assert_int_equal(ba_segment_index_values(seg, (ba_attr_t)a, vals, dom, &nv), BA_OK);
        uint8_t *present = calloc(dom, 1);
        uint64_t *cnt = calloc(dom, sizeof *cnt);
        uint32_t *refcol = malloc((c.n + 1) * sizeof *refcol);
        ref_column((ba_attr_t)a, c.r, c.n, in.start_ns, bin_ns, refcol);
        for (size_t k = 0; k < c.n; k++) {
          uint32_t v = refcol[k];
          if (v != UINT32_MAX) {
            assert_true(v < dom);
            present[v] = 1;
            cnt[v]++;
          }
        }
        size_t npresent = 0;
        for (uint32_t v = 0; v < dom; v++) npresent += present[v];
        assert_int_equal(nv, npresent);
        for (size_t k = 0; k < nv; k++) assert_true(present[vals[k]] && (k == 0 || vals[k] > vals[k - 1]));
        /* Check every present value and a few absent ones. */
        for (uint32_t v = 0; v < dom; v++) {
          if (!present[v] && v % 997 != 3) continue;
          ba_bitmap_t *bm;
          assert_int_equal(ba_segment_index(seg, (ba_attr_t)a, v, &bm), BA_OK);
          assert_int_equal(ba_bitmap_rows(bm), c.n);
          uint64_t *rows = malloc((cnt[v] + 1) * sizeof *rows);
          size_t nr = 0;
          assert_int_equal(ba_bitmap_to_rows(bm, rows, cnt[v] + 1, &nr), BA_OK);
          assert_int_equal(nr, cnt[v]);
          for (size_t k = 0; k < nr; k++) {
            assert_true(rows[k] < c.n);
            assert_int_equal(refcol[rows[k]], v);
          }
          free(rows);
          ba_bitmap_free(bm);
        }
        /* Online (stored) == batch builder, byte for byte. */
        if (check_batch) {
          uint32_t *col = malloc((c.n + 1) * sizeof *col);
          for (size_t k = 0; k < c.n; k++) col[k] = refcol[k];
          const uint32_t *cols[1] = {col};
          ba_idx_attr_t ba;
          assert_int_equal(ba_idx_batch_build_many("cpu", codec, cols, &dom, 1, c.n, 2, &ba), BA_OK);
          assert_int_equal(ba.n, nv);
          for (size_t k = 0; k < ba.n; k++) {
            ba_bitmap_t *bm;
            assert_int_equal(ba.values[k], vals[k]);
            assert_int_equal(ba_segment_index(seg, (ba_attr_t)a, vals[k], &bm), BA_OK);
            size_t l1 = ba_bitmap_serialized_size(bm), l2 = ba_bitmap_serialized_size(ba.bms[k]);
            assert_int_equal(l1, l2);
            uint8_t *b1 = malloc(l1), *b2 = malloc(l2);
            size_t x1, x2;
            assert_int_equal(ba_bitmap_serialize(bm, b1, l1, &x1), BA_OK);
            assert_int_equal(ba_bitmap_serialize(ba.bms[k], b2, l2, &x2), BA_OK);
            assert_memory_equal(b1, b2, l1);
            free(b1);
            free(b2);
            ba_bitmap_free(bm);
          }
          ba_idx_attr_clear(&ba);
          free(col);
        }
        free(present);
        free(cnt);
        free(refcol);
        free(vals);
      }
      pos += c.n;
      total += c.n;
      collected_free(&c);
    }
    assert_int_equal(pos, nw);
  }
  assert_int_equal(total, g->n);
  free(want);
  ba_store_close(s);
}

static void check_store(const char *dir, const gen_t *g, ba_codec_t codec, int check_batch) {
  check_store_ex(dir, g, codec, check_batch, 1);
}

static void write_store(const char *dir, const gen_t *g, const ba_store_opts_t *o, size_t chunk) {
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(dir, o, &w), BA_OK);
  for (size_t i = 0; i < g->n; i += chunk)
    assert_int_equal(ba_store_writer_append(w, g->r + i, BA_MIN(chunk, g->n - i)), BA_OK);
  ba_store_writer_stats_t st;
  ba_store_writer_get_stats(w, &st);
  assert_int_equal(st.records_in, g->n);
  assert_int_equal(ba_store_writer_close(w), BA_OK);
}

static void test_roundtrip_codecs(void **state) {
  (void)state;
  static const ba_compress_t cz[] = {BA_COMPRESS_LZO, BA_COMPRESS_LZ4, BA_COMPRESS_ZSTD, BA_COMPRESS_NONE};
  int iter = 0;
  for (int codec = BA_CODEC_MIN; codec <= BA_CODEC_MAX; codec++) {
    for (size_t z = 0; z < (size_t)BA_ARRAY_LEN(cz); z++, iter++) {
      gen_t g;
      /* Three slices, in time order; some combinations with shuffled times. */
      gen_records(&g, 1500 + 97 * (size_t)iter, 1000 + (uint64_t)iter, t0() + 13000000000ull,
                  (uint64_t)SLICE_S * 3 * 1000000000ull, iter % 3 != 0);
      char *dir = ba_test_mkdtemp();
      ba_store_opts_t o;
      ba_store_opts_init(&o);
      o.codec = (ba_codec_t)codec;
      o.compress = cz[z];
      o.block_rows = 100 + 37 * (uint32_t)(iter % 5);
      o.slice_seconds = SLICE_S;
      o.time_bin_seconds = BIN_S;
      o.threads = iter % 3; /* 0/1 inline, 2 workers */
      write_store(dir, &g, &o, 1 + (size_t)iter * 13);
      check_store(dir, &g, (ba_codec_t)codec, iter % 4 == 0 || codec == BA_CODEC_MASC);
      ba_test_rmtree(dir);
      free(dir);
      gen_free(&g);
    }
  }
}

/* Store dir and files are private. */
/* --segment-rows: a slice with more rows than max_segment_rows continues in
 * segments "-1", "-2", ... of the same slice, each within the bound, and the
 * store still holds every record, index included. */
static void test_segment_rows(void **state) {
  (void)state;
  gen_t g;
  gen_records(&g, 20000, 11, t0(), (uint64_t)SLICE_S * 1000000000ull / 2, 1); /* one slice */
  char *dir = ba_test_mkdtemp();
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.slice_seconds = SLICE_S;
  o.time_bin_seconds = BIN_S;
  o.max_segment_rows = 8000;
  write_store(dir, &g, &o, 777);
  ba_store_t *s;
  assert_int_equal(ba_store_open(dir, &s), BA_OK);
  size_t n = ba_store_segment_count(s);
  assert_int_equal(n, 3);
  uint64_t total = 0;
  for (size_t i = 0; i < n; i++) {
    ba_segment_t *seg;
    ba_segment_info_t in;
    assert_int_equal(ba_store_segment(s, i, &seg), BA_OK);
    assert_int_equal(ba_segment_info(seg, &in), BA_OK);
    assert_true(in.rows <= 8000);
    total += in.rows;
  }
  assert_int_equal(total, g.n);
  /* A second handle (ba_store_reopen, as a query's worker thread makes
   * one): the same segments, the same records. */
  ba_store_t *s2;
  assert_int_equal(ba_store_reopen(s, &s2), BA_OK);
  assert_int_equal(ba_store_segment_count(s2), n);
  for (size_t i = 0; i < n; i++) {
    ba_segment_t *a, *b;
    assert_string_equal(ba_store_segment_name(s2, i), ba_store_segment_name(s, i));
    assert_int_equal(ba_store_segment(s, i, &a), BA_OK);
    assert_int_equal(ba_store_segment(s2, i, &b), BA_OK);
    collected_t ca = {0}, cb = {0};
    assert_int_equal(ba_segment_scan(a, BA_COL_ALL, sink, &ca, NULL), BA_OK);
    assert_int_equal(ba_segment_scan(b, BA_COL_ALL, sink, &cb, NULL), BA_OK);
    assert_int_equal(ca.n, cb.n);
    for (size_t k = 0; k < ca.n; k++) assert_true(rec_equal(&ca.r[k], &cb.r[k], BA_COL_ALL));
    collected_free(&ca);
    collected_free(&cb);
  }
  ba_store_close(s2);
  ba_store_close(s);
  check_store(dir, &g, o.codec, 0);
  o.max_segment_rows = 100; /* below one block: refused */
  ba_store_writer_t *w = NULL;
  assert_int_equal(ba_store_writer_open(dir, &o, &w), BA_ERR_INVALID);
  ba_test_rmtree(dir);
  free(dir);
  gen_free(&g);
}

static void test_modes_and_names(void **state) {
  (void)state;
  gen_t g;
  gen_records(&g, 500, 7, t0(), 2ull * SLICE_S * 1000000000ull, 1);
  char *dir = ba_test_mkdtemp();
  char sub[4096];
  snprintf(sub, sizeof sub, "%s/st", dir);
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.slice_seconds = SLICE_S;
  o.time_bin_seconds = BIN_S;
  write_store(sub, &g, &o, 77);
  struct stat sb;
  assert_int_equal(stat(sub, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0700);
  ba_store_t *s;
  assert_int_equal(ba_store_open(sub, &s), BA_OK);
  assert_int_equal(ba_store_segment_count(s), 2);
  char want[64];
  time_t t = (time_t)(t0() / 1000000000ull);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(want, sizeof want, "seg-%Y%m%dT%H%M%SZ.bitarc", &tm);
  assert_string_equal(ba_store_segment_name(s, 0), want);
  char p[4200];
  snprintf(p, sizeof p, "%s/%s", sub, want);
  assert_int_equal(stat(p, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0600);
  ba_store_close(s);
  /* Late records of a closed slice: a second segment "-1" of that slice. */
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(sub, &o, &w), BA_OK);
  assert_int_equal(ba_store_writer_append(w, g.r, 10), BA_OK);
  assert_int_equal(ba_store_writer_close(w), BA_OK);
  assert_int_equal(ba_store_open(sub, &s), BA_OK);
  assert_int_equal(ba_store_segment_count(s), 3);
  strcpy(want + strlen(want) - 7, "-1.bitarc");
  int found = 0;
  for (size_t i = 0; i < 3; i++) found |= !strcmp(ba_store_segment_name(s, i), want);
  assert_true(found);
  ba_store_close(s);
  /* A reader sees only complete segments while a writer writes; refresh
   * picks up the ones completed since. */
  assert_int_equal(ba_store_writer_open(sub, &o, &w), BA_OK);
  ba_record_t late[2] = {g.r[0], g.r[0]};
  late[0].first_ns = late[0].last_ns = t0() + 10ull * SLICE_S * 1000000000ull;
  late[1].first_ns = late[1].last_ns = t0() + 12ull * SLICE_S * 1000000000ull; /* closes the first */
  assert_int_equal(ba_store_writer_append(w, late, 1), BA_OK);
  assert_int_equal(ba_store_open(sub, &s), BA_OK);
  assert_int_equal(ba_store_segment_count(s), 3);
  assert_int_equal(ba_store_writer_append(w, late + 1, 1), BA_OK);
  assert_int_equal(ba_store_segment_count(s), 3);
  /* The closed slice is finished in the background (threads >= 2): wait
   * until it is renamed. */
  for (int i = 0; i < 2000 && ba_writer_finish_pending(w); i++) usleep(5000);
  assert_int_equal(ba_store_refresh(s), BA_OK);
  assert_int_equal(ba_store_segment_count(s), 4);
  ba_segment_t *seg;
  ba_segment_info_t in;
  assert_int_equal(ba_store_segment(s, 3, &seg), BA_OK);
  assert_int_equal(ba_segment_info(seg, &in), BA_OK);
  assert_int_equal(in.rows, 1);
  assert_int_equal(in.min_first_ns, late[0].first_ns);
  ba_store_close(s);
  /* A second writer is refused while one is open. */
  ba_store_writer_t *w2 = NULL;
  assert_int_equal(ba_store_writer_open(sub, &o, &w2), BA_ERR_BUSY);
  assert_int_equal(ba_store_writer_close(w), BA_OK);
  ba_test_rmtree(dir);
  free(dir);
  gen_free(&g);
}

static void test_read_rows(void **state) {
  (void)state;
  gen_t g;
  gen_records(&g, 5000, 42, t0(), (uint64_t)SLICE_S * 1000000000ull / 2, 1);
  char *dir = ba_test_mkdtemp();
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.slice_seconds = SLICE_S;
  o.time_bin_seconds = BIN_S;
  o.block_rows = 333;
  write_store(dir, &g, &o, 1000);
  ba_store_t *s;
  ba_segment_t *seg;
  assert_int_equal(ba_store_open(dir, &s), BA_OK);
  assert_int_equal(ba_store_segment_count(s), 1);
  assert_int_equal(ba_store_segment(s, 0, &seg), BA_OK);
  ba_rng_t rng;
  ba_rng_seed(&rng, 5);
  uint64_t *rows = malloc(g.n * sizeof *rows);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, ba_store_segment_name(s, 0));
  int efd = open(path, O_RDONLY);
  assert_true(efd >= 0);
  off_t flen = lseek(efd, 0, SEEK_END);
  for (int it = 0; it < 60; it++) {
    size_t n = 0;
    uint64_t p = ba_rng_below(&rng, 1000) + 1;
    for (uint64_t r = 0; r < g.n; r++)
      if (ba_rng_below(&rng, 1000) < p) rows[n++] = r;
    uint32_t mask = (uint32_t)ba_rng_next(&rng) & BA_COL_ALL;
    /* Every third batch starts with the file (or its second part) out of
     * the page cache: the reads without waiting miss (reader_hint.c), the
     * rest of the batch is hinted and read waiting. */
    if (it % 3 == 1) {
      assert_int_equal(fdatasync(efd), 0);
      off_t from = it % 2 ? 0 : flen / 2 + 1234;
      assert_int_equal(posix_fadvise(efd, from, flen - from, POSIX_FADV_DONTNEED), 0);
    }
    collected_t c = {0};
    uint64_t dmg = 7;
    assert_int_equal(ba_segment_read_rows(seg, rows, n, mask, sink, &c, &dmg), BA_OK);
    assert_int_equal(dmg, 0);
    assert_int_equal(c.n, n);
    for (size_t k = 0; k < n; k++) {
      assert_true(rec_equal(&c.r[k], &g.r[rows[k]], mask));
      assert_true(rec_zero_outside(&c.r[k], mask));
    }
    collected_free(&c);
  }
  /* Unsorted or out-of-range rows are refused. */
  uint64_t bad[2] = {5, 3};
  collected_t c = {0};
  assert_int_equal(ba_segment_read_rows(seg, bad, 2, BA_COL_ALL, sink, &c, NULL), BA_ERR_INVALID);
  bad[0] = g.n;
  assert_int_equal(ba_segment_read_rows(seg, bad, 1, BA_COL_ALL, sink, &c, NULL), BA_ERR_INVALID);
  collected_free(&c);
  close(efd);
  free(rows);
  ba_store_close(s);
  ba_test_rmtree(dir);
  free(dir);
  gen_free(&g);
}

/* A writer killed with SIGKILL: reopening recovers every synced group. */
static void test_crash_recovery(void **state) {
  (void)state;
  for (int variant = 0; variant < 3; variant++) {
    gen_t g;
    gen_records(&g, 3000, 77 + (uint64_t)variant, t0(), (uint64_t)SLICE_S * 1000000000ull / 2, 1);
    char *dir = ba_test_mkdtemp();
    ba_store_opts_t o;
    ba_store_opts_init(&o);
    o.slice_seconds = SLICE_S;
    o.time_bin_seconds = BIN_S;
    o.block_rows = 250;
    o.threads = variant == 1 ? 1 : 2;
    o.codec = variant == 2 ? BA_CODEC_PLWAH : BA_CODEC_WAH32;
    size_t synced = 2000; /* 8 groups */
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      ba_store_writer_t *w;
      if (ba_store_writer_open(dir, &o, &w) != BA_OK) _exit(3);
      if (ba_store_writer_append(w, g.r, synced) != BA_OK) _exit(4);
      if (ba_store_writer_sync(w) != BA_OK) _exit(5);
      if (ba_store_writer_append(w, g.r + synced, 200) != BA_OK) _exit(6); /* open block */
      raise(SIGKILL);
      _exit(7);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    size_t expect = synced;
    if (variant == 2) {
      /* Tear the last group: cut the journal in the middle of it. */
      ba_store_t *s;
      assert_int_equal(ba_store_open(dir, &s), BA_OK);
      assert_int_equal(ba_store_segment_count(s), 0); /* journals are invisible */
      ba_store_close(s);
      char cmd[4200];
      snprintf(cmd, sizeof cmd, "f=$(ls %s/*.open) && truncate -s -100 \"$f\"", dir);
      assert_int_equal(system(cmd), 0);
      expect = synced - o.block_rows;
    }
    const char *bin = getenv("BITARC");
    if (variant == 1 && bin) {
      /* Recovery through the CLI: bitarc verify --recover. */
      char cmd[8400], want[64];
      snprintf(cmd, sizeof cmd, "'%s' verify --store '%s' --recover > '%s/recover.txt'", bin, dir, dir);
      assert_int_equal(system(cmd), 0);
      snprintf(cmd, sizeof cmd, "%s/recover.txt", dir);
      FILE *f = fopen(cmd, "r");
      assert_non_null(f);
      char line[256] = "";
      assert_non_null(fgets(line, sizeof line, f));
      fclose(f);
      unlink(cmd);
      snprintf(want, sizeof want, "recovered %zu records", expect);
      assert_non_null(strstr(line, want));
    } else {
      ba_store_writer_t *w;
      assert_int_equal(ba_store_writer_open(dir, &o, &w), BA_OK);
      assert_int_equal(ba_store_writer_recovered(w), expect);
      assert_int_equal(ba_store_writer_close(w), BA_OK);
    }
    gen_t part = g;
    part.n = expect;
    check_store(dir, &part, o.codec, 1);
    ba_test_rmtree(dir);
    free(dir);
    gen_free(&g);
  }
}

static void test_reindex(void **state) {
  (void)state;
  gen_t g;
  gen_records(&g, 2500, 9, t0(), 2ull * SLICE_S * 1000000000ull, 1);
  char *dir = ba_test_mkdtemp();
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.slice_seconds = SLICE_S;
  o.time_bin_seconds = BIN_S;
  o.block_rows = 400;
  o.codec = BA_CODEC_WAH64;
  write_store(dir, &g, &o, 500);
  char err[256];
  size_t n = 0;
  assert_int_equal(ba_store_reindex(dir, BA_CODEC_COMPAX, "gpu", 2, &n, err, sizeof err), BA_ERR_NODEVICE);
  assert_int_equal(ba_store_reindex(dir, BA_CODEC_COMPAX, "cpu", 2, &n, err, sizeof err), BA_OK);
  assert_int_equal(n, 2);
  check_store(dir, &g, BA_CODEC_COMPAX, 1);
  ba_test_rmtree(dir);
  free(dir);
  gen_free(&g);
}

/* The batch builder alone against a plain linear reference. */
static void test_batch_builder(void **state) {
  (void)state;
  ba_rng_t rng;
  ba_rng_seed(&rng, 3);
  for (int it = 0; it < 30; it++) {
    size_t n = (size_t)ba_rng_below(&rng, 3000) + 1;
    uint32_t dom = it % 3 == 0 ? 70000 : it % 3 == 1 ? 256 : 3;
    uint32_t *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
      v[i] = ba_rng_below(&rng, 10) == 0 ? BA_IDX_NONE : (uint32_t)ba_rng_zipf(&rng, dom, 1.1);
    ba_codec_t codec = (ba_codec_t)(BA_CODEC_MIN + it % 6);
    ba_idx_attr_t a, b;
    assert_int_equal(ba_idx_batch_build(codec, dom, v, n, &a), BA_OK);
    ba_idx_online_t *on;
    assert_int_equal(ba_idx_online_create(codec, dom, &on), BA_OK);
    for (size_t i = 0; i < n;) {
      size_t k = (size_t)ba_rng_below(&rng, 100) + 1;
      if (k > n - i) k = n - i;
      assert_int_equal(ba_idx_online_add(on, v + i, k), BA_OK);
      i += k;
    }
    assert_int_equal(ba_idx_online_finish(on, &b), BA_OK);
    ba_idx_online_free(on);
    assert_int_equal(a.n, b.n);
    for (size_t k = 0; k < a.n; k++) {
      assert_int_equal(a.values[k], b.values[k]);
      size_t na, nb;
      const void *wa = ba_bitmap_words(a.bms[k], &na), *wb = ba_bitmap_words(b.bms[k], &nb);
      assert_int_equal(na, nb);
      assert_memory_equal(wa, wb, na * (ba_codec_word_bits(codec) / 8));
      uint64_t cnt = 0, ref = 0;
      assert_int_equal(ba_bitmap_count(a.bms[k], &cnt), BA_OK);
      for (size_t i = 0; i < n; i++) ref += v[i] == a.values[k];
      assert_int_equal(cnt, ref);
      assert_int_equal(ba_bitmap_rows(a.bms[k]), n);
    }
    ba_idx_attr_clear(&a);
    ba_idx_attr_clear(&b);
    free(v);
  }
}

/* oLSH reordering: same records per slice, index right for the new order. */
static void test_olsh(void **state) {
  (void)state;
  gen_t g;
  gen_records(&g, 6000, 31, t0(), 2ull * SLICE_S * 1000000000ull, 1);
  char *dir = ba_test_mkdtemp();
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.slice_seconds = SLICE_S;
  o.time_bin_seconds = BIN_S;
  o.block_rows = 500;
  o.reorder = BA_REORDER_OLSH;
  o.olsh_mem_records = 1000;
  o.codec = BA_CODEC_COMPAX;
  ba_store_writer_t *w;
  int rc = ba_store_writer_open(dir, &o, &w);
  if (rc == BA_ERR_UNSUPPORTED) {
    print_message("oLSH not built yet: skipped\n");
  } else {
    assert_int_equal(rc, BA_OK);
    for (size_t i = 0; i < g.n; i += 333)
      assert_int_equal(ba_store_writer_append(w, g.r + i, BA_MIN((size_t)333, g.n - i)), BA_OK);
    assert_int_equal(ba_store_writer_close(w), BA_OK);
    check_store_ex(dir, &g, o.codec, 1, 0);
  }
  ba_test_rmtree(dir);
  free(dir);
  gen_free(&g);
}

static void test_bad_opts(void **state) {
  (void)state;
  char *dir = ba_test_mkdtemp();
  ba_store_opts_t o;
  ba_store_writer_t *w = NULL;
  ba_store_opts_init(&o);
  o.block_rows = 0;
  assert_int_equal(ba_store_writer_open(dir, &o, &w), BA_ERR_INVALID);
  ba_store_opts_init(&o);
  o.codec = (ba_codec_t)99;
  assert_int_equal(ba_store_writer_open(dir, &o, &w), BA_ERR_INVALID);
  ba_store_t *s;
  assert_int_equal(ba_store_open("/nonexistent/bitarc-store", &s), BA_ERR_NOT_FOUND);
  /* Bad records are dropped and counted. */
  ba_store_opts_init(&o);
  assert_int_equal(ba_store_writer_open(dir, &o, &w), BA_OK);
  ba_record_t r[2];
  memset(r, 0, sizeof r);
  r[0].kind = 9;
  r[1].kind = BA_REC_PACKET;
  r[1].caplen = 10; /* no frame */
  assert_int_equal(ba_store_writer_append(w, r, 2), BA_OK);
  ba_store_writer_stats_t st;
  ba_store_writer_get_stats(w, &st);
  assert_int_equal(st.records_dropped, 2);
  assert_int_equal(ba_store_writer_close(w), BA_OK);
  ba_test_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_batch_builder),   cmocka_unit_test(test_roundtrip_codecs),
      cmocka_unit_test(test_modes_and_names), cmocka_unit_test(test_read_rows), cmocka_unit_test(test_segment_rows),
      cmocka_unit_test(test_crash_recovery),  cmocka_unit_test(test_reindex),
      cmocka_unit_test(test_olsh),            cmocka_unit_test(test_bad_opts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

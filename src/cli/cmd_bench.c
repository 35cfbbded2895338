/* bitarc bench: device benchmarks of the GPU module (issue 6).
 *   bench build  IMC'13 Fig. 5 (index creation throughput vs cardinality, per
 *                codec, uniform values) and Fig. 6 (time per pipeline step);
 *   bench range  the range-query paper's query-size sweep (OR of m wah64 bins). */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bitarc/bitmap.h"
#include "bitarc/gpu.h"
#include "cli/cli.h"
#include "index/index.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

#define MAXL 16 /* longest --codecs / --cards / --sizes list */

static size_t parse_list(const char *s, uint64_t *out, size_t cap) {
  size_t n = 0;
  while (s && *s) {
    char *end;
    if (n == cap) return 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || v == 0) return 0;
    out[n++] = v;
    s = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return 0;
  }
  return n;
}

/* --codecs wah32,plwah,...: 0, or 2 after naming the unknown codec. */
static int parse_codecs(const char *arg, ba_codec_t *out, size_t *n) {
  char *s = strdup(arg);
  if (!s) return 2;
  size_t k = 0;
  int rc = 0;
  for (char *t = strtok(s, ","); t && !rc; t = strtok(NULL, ",")) {
    if (k == MAXL) {
      ba_cli_err("bench", "--codecs '%s': at most %d codecs", arg, MAXL);
      rc = 2;
    } else if (ba_codec_from_name(t, &out[k++])) {
      ba_cli_err("bench", "--codecs: unknown codec '%s'", t);
      rc = 2;
    }
  }
  free(s);
  if (!rc && k == 0) {
    ba_cli_err("bench", "--codecs '%s': expected a comma list of codecs", arg);
    rc = 2;
  }
  if (!rc) *n = k;
  return rc;
}

/* --cards / --sizes: a comma list of positive numbers; 0, or 2 after an error. */
static int parse_numbers(const char *opt, const char *arg, uint64_t *out, size_t *n) {
  size_t k = parse_list(arg, out, MAXL);
  if (!k) {
    ba_cli_err("bench", "--%s '%s': expected a comma list of at most %d positive numbers", opt, arg, MAXL);
    return 2;
  }
  *n = k;
  return 0;
}

static void print_cmdline(int argc, char **argv) {
  printf("# command: bitarc bench");
  for (int i = 0; i < argc; i++) printf(" %s", argv[i]);
  printf("\n");
}

/* Runs gnuplot on `script`; the caller checks the PNG. */
static int plot(const char *cmd, const char *script) {
  FILE *gp = popen("gnuplot 2>&1", "w");
  if (!gp) {
    ba_cli_err(cmd, "cannot run gnuplot (install gnuplot-nox, see scripts/deps.sh)");
    return 1;
  }
  fputs(script, gp);
  int st = pclose(gp);
  if (st != 0) ba_cli_err(cmd, "gnuplot failed (status %d)", st);
  return st != 0;
}

static void build_usage(void) {
  printf("usage: bitarc bench build [--device cpu|omp|gpu] [--codecs LIST] [--cards LIST]\n"
         "                          [--rows N] [--max-batch N] [--repeat N] [--png FILE]\n"
         "       bitarc bench build --online ...   (the store writer's builder; --online --help)\n"
         "Index creation throughput vs cardinality on uniform values (IMC'13 Fig. 5), and the\n"
         "time of each pipeline step at the largest cardinality (Fig. 6). The CPU online\n"
         "builder (one thread, ba_bitmap_set per row) is always measured beside the device.\n"
         "\noptions:\n"
         "  --device D     device under test: cpu, omp or gpu (default omp)\n"
         "  --codecs LIST  comma list of wah32,wah64,plwah,masc,masc-qt (default wah32,plwah,masc)\n"
         "  --cards LIST   cardinalities (default 256,1024,4096,16384,65536)\n"
         "  --rows N       rows per batch (default 4000000)\n"
         "  --max-batch N  rows per device piece (default: as device memory allows)\n"
         "  --repeat N     runs per point, the best is kept (default 1)\n"
         "  --png FILE     also plot Fig. 5 to FILE, Fig. 6 to FILE-steps.png (default: none)\n"
         "  --online       the store writer's online builder instead (default: off; --online --help)\n"
         "  -h, --help     this text\n\n"
         "examples:\n"
         "  bitarc bench build --device omp --png fig5.png\n"
         "  bitarc bench build --device gpu --rows 20000000 --png fig5-gpu.png\n");
}

/* The device under test and the CPU beside it; the error is printed. */
static int open_devices(ba_device_t dev, ba_gpu_t **g, ba_gpu_t **cpu) {
  char why[BA_GPU_ERRMSG_LEN];
  if (ba_gpu_open(dev, g, why, sizeof why) || ba_gpu_open(BA_DEVICE_CPU, cpu, NULL, 0)) {
    ba_cli_err("bench", "device %s: %s", ba_device_name(dev), why);
    ba_gpu_close(*g);
    *g = NULL;
    return 2;
  }
  return 0;
}

typedef struct build_opts {
  ba_device_t dev;
  uint64_t cards[MAXL];
  ba_codec_t codecs[MAXL];
  size_t ncards, ncodecs, rows, maxb;
  const char *png;
  unsigned repeat;
} build_opts_t;

/* 0 to run, 1 after --help, 2 on a bad argument (named). */
static int build_args(int argc, char **argv, build_opts_t *o) {
  static const struct option opts[] = {{"device", 1, 0, 'd'}, {"codecs", 1, 0, 'c'}, {"cards", 1, 0, 'k'},
                                       {"rows", 1, 0, 'n'},   {"max-batch", 1, 0, 'b'}, {"repeat", 1, 0, 'r'},
                                       {"png", 1, 0, 'p'},    {"help", 0, 0, 'h'},    {0, 0, 0, 0}};
  *o = (build_opts_t){.dev = BA_DEVICE_OMP,
                      .cards = {256, 1024, 4096, 16384, 65536},
                      .codecs = {BA_CODEC_WAH32, BA_CODEC_PLWAH, BA_CODEC_MASC},
                      .ncards = 5,
                      .ncodecs = 3,
                      .rows = 4000000,
                      .repeat = 1};
  uint64_t u;
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case 'd':
      if (ba_cli_device_name("bench", optarg, &o->dev)) return 2;
      break;
    case 'c':
      if (parse_codecs(optarg, o->codecs, &o->ncodecs)) return 2;
      break;
    case 'k':
      if (parse_numbers("cards", optarg, o->cards, &o->ncards)) return 2;
      break;
    case 'n':
      if (ba_cli_opt_u64("bench", "rows", optarg, 1, (uint64_t)1 << 32, &u)) return 2;
      o->rows = (size_t)u;
      break;
    case 'b':
      if (ba_cli_opt_u64("bench", "max-batch", optarg, 1, UINT32_MAX, &u)) return 2;
      o->maxb = (size_t)u;
      break;
    case 'r':
      if (ba_cli_opt_u64("bench", "repeat", optarg, 1, 1000, &u)) return 2;
      o->repeat = (unsigned)u;
      break;
    case 'p': o->png = optarg; break;
    case 'h': build_usage(); return 1;
    default: build_usage(); return 2;
    }
  }
  return 0;
}

/* Fig. 5: Mrows/s per cardinality, the CPU online builder beside each codec
 * on the device, printed and written to df; last gets each codec's step
 * times at the last cardinality. */
static int build_rates(const build_opts_t *o, ba_gpu_t *g, ba_gpu_t *cpu, uint32_t *v, FILE *df,
                       ba_gpu_times_t *last) {
  int rc = 0;
  for (size_t ci = 0; ci < o->ncards && rc == 0; ci++) {
    uint64_t seed = 6000 + ci;
    for (size_t i = 0; i < o->rows; i++) v[i] = (uint32_t)(rng_next(&seed) % o->cards[ci]);
    double res[MAXL + 1];
    for (size_t k = 0; k <= o->ncodecs && rc == 0; k++) {
      ba_gpu_t *d = k == 0 ? cpu : g;
      ba_codec_t co = k == 0 ? BA_CODEC_WAH32 : o->codecs[k - 1];
      double best = 1e300;
      for (unsigned r = 0; r < o->repeat && rc == 0; r++) {
        ba_gpu_index_t *ix = NULL;
        double t0 = now_ms();
        rc = ba_gpu_build_index(d, co, v, o->rows, o->cards[ci], &ix);
        double t = now_ms() - t0;
        if (rc) ba_cli_err("bench", "build %s on %s: %s", ba_codec_name(co), ba_device_name(ba_gpu_device(d)), ba_gpu_errmsg(d));
        ba_gpu_index_free(ix);
        if (t < best) best = t;
        if (k > 0) last[k - 1] = *ba_gpu_last_times(d);
      }
      res[k] = (double)o->rows / best / 1e3;
    }
    if (rc) break;
    printf("%-8llu %12.2f", (unsigned long long)o->cards[ci], res[0]);
    if (df) fprintf(df, "%llu %.3f", (unsigned long long)o->cards[ci], res[0]);
    for (size_t k = 0; k < o->ncodecs; k++) {
      printf(" %14.2f", res[k + 1]);
      if (df) fprintf(df, " %.3f", res[k + 1]);
    }
    printf("\n");
    if (df) fprintf(df, "\n");
  }
  return rc;
}

/* Fig. 6: time per step at the last cardinality, printed and written to df6. */
static void build_steps(const build_opts_t *o, const ba_gpu_times_t *last, FILE *df6) {
  printf("\n# ms per step on %s at cardinality %llu (IMC'13 Fig. 6)\n%-10s", ba_device_name(o->dev),
         (unsigned long long)o->cards[o->ncards - 1], "step");
  for (size_t k = 0; k < o->ncodecs; k++) printf(" %10s", ba_codec_name(o->codecs[k]));
  printf("\n");
  for (unsigned s = 0; s <= BA_GPU_STEP_JOIN; s++) {
    printf("%-10s", ba_gpu_step_name(s));
    if (df6) fprintf(df6, "%s", ba_gpu_step_name(s));
    for (size_t k = 0; k < o->ncodecs; k++) {
      printf(" %10.2f", last[k].ms[s]);
      if (df6) fprintf(df6, " %.3f", last[k].ms[s]);
    }
    printf("\n");
    if (df6) fprintf(df6, "\n");
  }
}

/* Both figures to o->png and o->png's "-steps.png" sibling. */
static int build_plot(const build_opts_t *o, const char *dat, const char *dat6) {
  char script[4096];
  int n = snprintf(script, sizeof script,
                   "set terminal png size 900,560\nset output '%s'\nset logscale x 2\nset key outside\n"
                   "set title 'Index creation throughput, %zu uniform rows (IMC13 Fig. 5)'\n"
                   "set xlabel 'cardinality'\nset ylabel 'million rows / s'\nset yrange [0:*]\n"
                   "plot '%s' using 1:2 with linespoints title 'cpu wah32 (online)'",
                   o->png, o->rows, dat);
  for (size_t k = 0; k < o->ncodecs && n < (int)sizeof script; k++)
    n += snprintf(script + n, sizeof script - (size_t)n, ", '' using 1:%zu with linespoints title '%s %s'", k + 3,
                  ba_device_name(o->dev), ba_codec_name(o->codecs[k]));
  char png6[1024];
  size_t pl = strlen(o->png);
  snprintf(png6, sizeof png6, "%.*s-steps.png", (int)(pl > 4 ? pl - 4 : pl), o->png);
  n += snprintf(script + n, sizeof script - (size_t)n,
                "\nset output '%s'\nunset logscale x\nset style data histograms\nset style histogram clustered\n"
                "set style fill solid 0.8\nset xtics rotate by -30\nset title 'Time per step, %s, cardinality %llu "
                "(IMC13 Fig. 6)'\nset xlabel ''\nset ylabel 'ms'\nplot '%s' using 2:xtic(1) title '%s'",
                png6, ba_device_name(o->dev), (unsigned long long)o->cards[o->ncards - 1], dat6,
                ba_codec_name(o->codecs[0]));
  for (size_t k = 1; k < o->ncodecs && n < (int)sizeof script; k++)
    n += snprintf(script + n, sizeof script - (size_t)n, ", '' using %zu title '%s'", k + 2, ba_codec_name(o->codecs[k]));
  snprintf(script + n, sizeof script - (size_t)n, "\n");
  int rc = plot("bench", script);
  if (!rc) printf("# wrote %s and %s\n", o->png, png6);
  return rc;
}

static int bench_build(int argc, char **argv) {
  build_opts_t o;
  int a = build_args(argc, argv, &o);
  if (a) return a == 1 ? 0 : 2;
  ba_gpu_t *g = NULL, *cpu = NULL;
  if (open_devices(o.dev, &g, &cpu)) return 2;
  uint32_t *v = NULL;
  int rc = 0;
  if (o.maxb && ba_gpu_set_max_batch(g, o.maxb)) {
    ba_cli_err("bench", "--max-batch %zu: %s", o.maxb, ba_gpu_errmsg(g));
    rc = 2;
  } else if (!(v = malloc(o.rows * sizeof *v))) {
    ba_cli_err("bench", "out of memory for %zu rows", o.rows);
    rc = 1;
  }
  if (rc) {
    ba_gpu_close(g);
    ba_gpu_close(cpu);
    return rc;
  }
  print_cmdline(argc, argv);
  printf("# Mrows/s, uniform values, %zu rows per batch, best of %u\n", o.rows, o.repeat);
  printf("%-8s %12s", "card", "cpu-wah32");
  for (size_t k = 0; k < o.ncodecs; k++) {
    char h[32];
    snprintf(h, sizeof h, "%s-%s", ba_device_name(o.dev), ba_codec_name(o.codecs[k]));
    printf(" %14s", h);
  }
  printf("\n");
  char dat[] = "/tmp/bitarc-bench-XXXXXX", dat6[] = "/tmp/bitarc-bench6-XXXXXX";
  int fd = mkstemp(dat), fd6 = mkstemp(dat6);
  FILE *df = fd >= 0 ? fdopen(fd, "w") : NULL, *df6 = fd6 >= 0 ? fdopen(fd6, "w") : NULL;
  ba_gpu_times_t last[MAXL];
  memset(last, 0, sizeof last);
  rc = build_rates(&o, g, cpu, v, df, last);
  build_steps(&o, last, df6);
  if (df) fclose(df);
  if (df6) fclose(df6);
  if (rc == 0 && o.png && df && df6) rc = build_plot(&o, dat, dat6);
  remove(dat);
  remove(dat6);
  free(v);
  ba_gpu_close(g);
  ba_gpu_close(cpu);
  return rc ? 1 : 0;
}

static void range_usage(void) {
  printf("usage: bitarc bench range [--device cpu|omp|gpu] [--rows N] [--bins B] [--sizes LIST]\n"
         "                          [--repeat N] [--png FILE]\n"
         "Range queries (OR of m wah64 bins of a uniform column) by query size, as in Nelson et\n"
         "al.'s Fig. 13: the CPU iterative and reduction (or_many) methods beside the device's\n"
         "COA, ROA, hybrid and ideal hybrid strategies. Results are checked equal.\n"
         "\noptions:\n"
         "  --device D    device under test: cpu, omp or gpu (default omp)\n"
         "  --rows N      rows (default 4000000)\n"
         "  --bins B      bins of the column, 1..65536 (default 128)\n"
         "  --sizes LIST  query sizes (default 4,8,16,32,64)\n"
         "  --repeat N    runs per point, the best is kept (default 3)\n"
         "  --png FILE    also write the plot (default: no plot)\n"
         "  -h, --help    this text\n\n"
         "example:\n"
         "  bitarc bench range --device omp --png range.png\n");
}

typedef struct range_opts {
  ba_device_t dev;
  size_t rows, nsizes;
  uint64_t bins, sizes[MAXL];
  unsigned repeat;
  const char *png;
} range_opts_t;

/* 0 to run, 1 after --help, 2 on a bad argument (named). */
static int range_args(int argc, char **argv, range_opts_t *o) {
  static const struct option opts[] = {{"device", 1, 0, 'd'}, {"rows", 1, 0, 'n'}, {"bins", 1, 0, 'k'},
                                       {"sizes", 1, 0, 's'},  {"repeat", 1, 0, 'r'}, {"png", 1, 0, 'p'},
                                       {"help", 0, 0, 'h'},   {0, 0, 0, 0}};
  *o = (range_opts_t){
      .dev = BA_DEVICE_OMP, .rows = 4000000, .bins = 128, .sizes = {4, 8, 16, 32, 64}, .nsizes = 5, .repeat = 3};
  uint64_t u;
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case 'd':
      if (ba_cli_device_name("bench", optarg, &o->dev)) return 2;
      break;
    case 'n':
      if (ba_cli_opt_u64("bench", "rows", optarg, 1, (uint64_t)1 << 32, &u)) return 2;
      o->rows = (size_t)u;
      break;
    case 'k':
      if (ba_cli_opt_u64("bench", "bins", optarg, 1, 65536, &o->bins)) return 2;
      break;
    case 's':
      if (parse_numbers("sizes", optarg, o->sizes, &o->nsizes)) return 2;
      break;
    case 'r':
      if (ba_cli_opt_u64("bench", "repeat", optarg, 1, 1000, &u)) return 2;
      o->repeat = (unsigned)u;
      break;
    case 'p': o->png = optarg; break;
    case 'h': range_usage(); return 1;
    default: range_usage(); return 2;
    }
  }
  for (size_t i = 0; i < o->nsizes; i++)
    if (o->sizes[i] > o->bins) {
      ba_cli_err("bench", "--sizes: %llu is more than the %llu bins", (unsigned long long)o->sizes[i],
                 (unsigned long long)o->bins);
      return 2;
    }
  return 0;
}

static const char *const g_range_cols[] = {"cpu-iter", "cpu-reduce", "coa", "roa", "hybrid", "ideal"};

/* Best time of each of the six ways to OR the first m bins into res; every
 * result is checked equal to the first. */
static int range_point(const range_opts_t *o, ba_gpu_t *g, ba_gpu_t *cpu, ba_bitmap_t **bm, size_t m,
                       double res[6]) {
  int rc = 0;
  ba_bitmap_t *ref = NULL;
  for (size_t k = 0; k < 6 && rc == 0; k++) {
    double best = 1e300;
    for (unsigned r = 0; r < o->repeat && rc == 0; r++) {
      ba_bitmap_t *out = NULL;
      double t0 = now_ms();
      if (k == 0)
        rc = ba_gpu_range(cpu, BA_OP_OR, (const ba_bitmap_t *const *)bm, m, BA_GPU_RANGE_AUTO, &out);
      else if (k == 1)
        rc = ba_bitmap_or_many((const ba_bitmap_t *const *)bm, m, BA_CODEC_WAH64, &out);
      else
        rc = ba_gpu_range(g, BA_OP_OR, (const ba_bitmap_t *const *)bm, m, (ba_gpu_range_alg_t)(k - 1), &out);
      double t = now_ms() - t0;
      if (t < best) best = t;
      if (rc == 0 && !ref) {
        ref = out;
        out = NULL;
      } else if (rc == 0 && ba_bitmap_equal(ref, out) != 1) {
        ba_cli_err("bench", "range %s, m = %zu: result differs from the CPU's", g_range_cols[k], m);
        rc = 1;
      }
      ba_bitmap_free(out);
    }
    res[k] = best;
  }
  ba_bitmap_free(ref);
  return rc;
}

static int range_plot(const range_opts_t *o, const char *dat) {
  char script[2048];
  snprintf(script, sizeof script,
           "set terminal png size 900,560\nset output '%s'\nset logscale x 2\nset key outside\n"
           "set title 'Range query (OR of m wah64 bins), %zu rows, device %s'\n"
           "set xlabel 'query size m (bins)'\nset ylabel 'ms per query'\nset yrange [0:*]\n"
           "plot '%s' u 1:2 w lp t 'cpu iterative', '' u 1:3 w lp t 'cpu reduction', '' u 1:4 w lp t 'COA',"
           " '' u 1:5 w lp t 'ROA', '' u 1:6 w lp t 'hybrid', '' u 1:7 w lp t 'ideal hybrid'\n",
           o->png, o->rows, ba_device_name(o->dev), dat);
  int rc = plot("bench", script);
  if (!rc) printf("# wrote %s\n", o->png);
  return rc;
}

static int bench_range(int argc, char **argv) {
  range_opts_t o;
  int a = range_args(argc, argv, &o);
  if (a) return a == 1 ? 0 : 2;
  ba_gpu_t *g = NULL, *cpu = NULL;
  if (open_devices(o.dev, &g, &cpu)) return 2;
  uint32_t *v = malloc(o.rows * sizeof *v);
  uint64_t seed = 6100;
  for (size_t i = 0; v && i < o.rows; i++) v[i] = (uint32_t)(rng_next(&seed) % o.bins);
  ba_gpu_index_t *ix = NULL;
  int rc = v ? ba_gpu_build_index(g, BA_CODEC_WAH64, v, o.rows, o.bins, &ix) : BA_ERR_NOMEM;
  size_t nkeys = rc == 0 ? ix->nkeys : 0;
  ba_bitmap_t **bm = rc == 0 ? calloc(nkeys ? nkeys : 1, sizeof *bm) : NULL;
  if (rc == 0 && !bm) rc = BA_ERR_NOMEM;
  for (size_t i = 0; rc == 0 && i < nkeys; i++) rc = ba_gpu_index_bitmap(ix, i, &bm[i]);
  if (rc) ba_cli_err("bench", "building the wah64 bins: %s", rc == BA_ERR_NOMEM ? ba_strerror(rc) : ba_gpu_errmsg(g));
  if (rc == 0) {
    print_cmdline(argc, argv);
    printf("# ms per query (best of %u), OR of m of %llu wah64 bins, %zu uniform rows\n", o.repeat,
           (unsigned long long)o.bins, o.rows);
    printf("%-6s", "m");
    for (size_t k = 0; k < 6; k++) printf(" %11s", g_range_cols[k]);
    printf("\n");
  }
  char dat[] = "/tmp/bitarc-range-XXXXXX";
  int fd = rc == 0 ? mkstemp(dat) : -1;
  FILE *df = fd >= 0 ? fdopen(fd, "w") : NULL;
  for (size_t si = 0; si < o.nsizes && rc == 0; si++) {
    size_t m = (size_t)o.sizes[si];
    if (m > nkeys) m = nkeys;
    double res[6];
    if ((rc = range_point(&o, g, cpu, bm, m, res))) break;
    printf("%-6zu", m);
    if (df) fprintf(df, "%zu", m);
    for (size_t k = 0; k < 6; k++) {
      printf(" %11.2f", res[k]);
      if (df) fprintf(df, " %.3f", res[k]);
    }
    printf("\n");
    if (df) fprintf(df, "\n");
  }
  if (df) fclose(df);
  if (rc == 0 && o.png) rc = range_plot(&o, dat);
  if (fd >= 0) remove(dat);
  for (size_t i = 0; bm && i < nkeys; i++) ba_bitmap_free(bm[i]);
  free(bm);
  ba_gpu_index_free(ix);
  free(v);
  ba_gpu_close(g);
  ba_gpu_close(cpu);
  return rc ? 1 : 0;
}


static void online_usage(void) {
  printf("usage: bitarc bench build --online [--codecs LIST] [--cards LIST] [--rows N]\n"
         "                                   [--group N] [--repeat N]\n"
         "The store writer's index builder on one core: uniform values of one attribute fed to\n"
         "the online builder one row group at a time (as the writer does), then finished.\n"
         "Prints million values per CPU second of the building thread (values/s/core, steady\n"
         "under load); every result is checked byte-identical to the batch builder's.\n"
         "  --codecs LIST  comma list (default wah32,wah64,plwah,compax,masc)\n"
         "  --cards LIST   cardinalities (default 256,65536)\n"
         "  --rows N       values in all (default 4000000)\n"
         "  --group N      rows per row group (default 4000, the writer's block rows)\n"
         "  --repeat N     best of N runs (default 3)\n"
         "example:\n"
         "  bitarc bench build --online --cards 256,4096,65536\n");
}

static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Builds vals in row groups of `group` rows; *ms gets the CPU time of this
 * thread (a loaded machine stretches the wall time, not this), *out the result. */
static int online_run(ba_codec_t co, uint32_t dom, const uint32_t *v, size_t rows, size_t group, double *ms,
                      ba_idx_attr_t *out) {
  ba_idx_online_t *b = NULL;
  double t0 = cpu_ms();
  int rc = ba_idx_online_create(co, dom, &b);
  for (size_t i = 0; rc == 0 && i < rows; i += group)
    rc = ba_idx_online_add(b, v + i, rows - i < group ? rows - i : group);
  if (rc == 0) rc = ba_idx_online_finish(b, out);
  *ms = cpu_ms() - t0;
  ba_idx_online_free(b);
  return rc;
}

/* 1 when both attributes hold the same values and the same serialized bitmaps. */
static int attr_same(const ba_idx_attr_t *a, const ba_idx_attr_t *b) {
  if (a->n != b->n) return 0;
  for (size_t i = 0; i < a->n; i++) {
    size_t na, nb;
    const void *wa = ba_bitmap_words(a->bms[i], &na), *wb = ba_bitmap_words(b->bms[i], &nb);
    unsigned wbytes = ba_codec_word_bits(ba_bitmap_codec(a->bms[i])) / 8;
    if (a->values[i] != b->values[i] || na != nb || ba_bitmap_rows(a->bms[i]) != ba_bitmap_rows(b->bms[i]) ||
        (na && memcmp(wa, wb, na * wbytes)))
      return 0;
  }
  return 1;
}

static int bench_online(int argc, char **argv) {
  static const struct option opts[] = {{"online", 0, 0, 'o'}, {"codecs", 1, 0, 'c'}, {"cards", 1, 0, 'k'},
                                       {"rows", 1, 0, 'n'},   {"group", 1, 0, 'g'},  {"repeat", 1, 0, 'r'},
                                       {"help", 0, 0, 'h'},   {0, 0, 0, 0}};
  uint64_t cards[MAXL] = {256, 65536};
  size_t ncards = 2, ncodecs = 5, rows = 4000000, group = 4000;
  ba_codec_t codecs[MAXL] = {BA_CODEC_WAH32, BA_CODEC_WAH64, BA_CODEC_PLWAH, BA_CODEC_COMPAX, BA_CODEC_MASC};
  unsigned repeat = 3;
  uint64_t u;
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case 'c':
      if (parse_codecs(optarg, codecs, &ncodecs)) return 2;
      break;
    case 'k':
      if (parse_numbers("cards", optarg, cards, &ncards)) return 2;
      break;
    case 'n':
      if (ba_cli_opt_u64("bench", "rows", optarg, 1, UINT32_MAX, &u)) return 2;
      rows = (size_t)u;
      break;
    case 'o': break;
    case 'g':
      if (ba_cli_opt_u64("bench", "group", optarg, 1, UINT32_MAX, &u)) return 2;
      group = (size_t)u;
      break;
    case 'r':
      if (ba_cli_opt_u64("bench", "repeat", optarg, 1, 1000, &u)) return 2;
      repeat = (unsigned)u;
      break;
    case 'h': online_usage(); return 0;
    default: online_usage(); return 2;
    }
  }
  for (size_t i = 0; i < ncards; i++)
    if (cards[i] > BA_IDX_MAX_DOMAIN) {
      ba_cli_err("bench", "--cards: %llu is above the largest domain %u", (unsigned long long)cards[i],
                 BA_IDX_MAX_DOMAIN);
      return 2;
    }
  if (rows == 0 || rows > UINT32_MAX || group == 0 || repeat == 0) {
    ba_cli_err("bench", "--rows (at most 2^32-1), --group and --repeat must be positive");
    return 2;
  }
  uint32_t *v = malloc(rows * sizeof *v);
  if (!v) {
    ba_cli_err("bench", "out of memory for %zu rows", rows);
    return 1;
  }
  print_cmdline(argc, argv);
  printf("# M values per CPU second of the building thread (best of %u after a warm-up run), uniform values,\n"
         "# %zu rows in row groups of %zu, finish included\n", repeat, rows, group);
  printf("%-8s", "card");
  for (size_t k = 0; k < ncodecs; k++) printf(" %10s", ba_codec_name(codecs[k]));
  printf("\n");
  int rc = 0;
  for (size_t ci = 0; ci < ncards && rc == 0; ci++) {
    uint64_t seed = 6000 + ci;
    for (size_t i = 0; i < rows; i++) v[i] = (uint32_t)(rng_next(&seed) % cards[ci]);
    printf("%-8llu", (unsigned long long)cards[ci]);
    for (size_t k = 0; k < ncodecs && rc == 0; k++) {
      double best = 1e300;
      ba_idx_attr_t ref;
      memset(&ref, 0, sizeof ref);
      rc = ba_idx_batch_build(codecs[k], (uint32_t)cards[ci], v, rows, &ref);
      for (unsigned r = 0; r <= repeat && rc == 0; r++) { /* run 0 warms the allocator up, untimed */
        ba_idx_attr_t out;
        double t;
        memset(&out, 0, sizeof out);
        rc = online_run(codecs[k], (uint32_t)cards[ci], v, rows, group, &t, &out);
        if (rc == 0 && !attr_same(&out, &ref)) {
          ba_cli_err("bench", "%s at cardinality %llu: online and batch builders differ", ba_codec_name(codecs[k]),
                     (unsigned long long)cards[ci]);
          rc = 1;
        }
        ba_idx_attr_clear(&out);
        if (r > 0 && t < best) best = t;
      }
      ba_idx_attr_clear(&ref);
      if (rc < 0) ba_cli_err("bench", "%s: %s", ba_codec_name(codecs[k]), ba_strerror(rc));
      printf(" %10.2f", (double)rows / best / 1e3);
      fflush(stdout);
    }
    printf("\n");
  }
  free(v);
  return rc ? 1 : 0;
}

int ba_cmd_bench(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    printf("usage: bitarc bench build|range [options]   (bitarc bench build --help)\n"
           "  build           index creation on a device vs cardinality (IMC'13 Fig. 5, 6)\n"
           "  build --online  the store writer's index builder, one attribute on one core\n"
           "  range           range queries (OR of many bins) by query size\n");
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "build") == 0) {
    for (int i = 2; i < argc; i++)
      if (strcmp(argv[i], "--online") == 0) return bench_online(argc - 1, argv + 1);
    return bench_build(argc - 1, argv + 1);
  }
  if (strcmp(argv[1], "range") == 0) return bench_range(argc - 1, argv + 1);
  ba_cli_err("bench", "unknown benchmark '%s' (build or range)", argv[1]);
  return 2;
}

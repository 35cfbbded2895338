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
          "                  [--weights w1,...,w11] [--chain-order h2|tuple|dst] [--purge longest|sorted]\n"
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
      else if (!strcmp(arg, "dst")) g_olsh.chain_order = BA_OLSH_ORDER_DST;
      else usage();
      return 1;
    case 'p':
      if (!strcmp(arg, "longest")) g_olsh.purge = BA_OLSH_PURGE_LONGEST;
      else if (!strcmp(arg, "sorted")) g_olsh.purge = BA_OLSH_PURGE_SORTED;
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
  printf("oLSH chain order: %s, purge: %s\n",
         g_olsh.chain_order == BA_OLSH_ORDER_TUPLE ? "tuple"
         : g_olsh.chain_order == BA_OLSH_ORDER_DST ? "dst (dst, src, dst port, src port)"
                                                   : "h2 (Program 1)",
         g_olsh.purge == BA_OLSH_PURGE_SORTED ? "sorted (the whole buffer)" : "longest chain (Program 1)");
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
      {"purge", required_argument, 0, 'p'},
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

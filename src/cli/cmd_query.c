/* bitarc query: nfdump's command line (filters, -t, -o, -s, -A, -O, -c, -q,
 * -N, -6, -Z) answered from the bitmap indexes. Output: cmd_query_out.c. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "bitarc/bitarc.h"
#include "bitarc/query.h"
#include "cli/cli.h"
#include "cli/query_out.h"
#include "cli/query_stores.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: bitarc query -r DIR [-r DIR ...] [options] [FILTER ...]\n"
          "\n"
          "nfdump's command line on a bitarc store: the same filter gives the same flows in the\n"
          "same output formats. The filter may be one argument or several words (joined with\n"
          "spaces), or come from -f FILE. Indexed terms (IPv4 addresses and prefixes, ports,\n"
          "protocol, TCP flags, start time) are answered with bitmap algebra; other terms are\n"
          "checked on the candidate rows.\n"
          "\n"
          "options (as nfdump):\n"
          "  -r, -R, --store DIR    a store to read (required; repeat it for several stores, e.g. one\n"
          "                         per exporter or site: their flows are merged in start-time order)\n"
          "  -M /path/dir1:dir2     several stores as nfdump's -M: /path/dir1 and /path/dir2 (nfdump's\n"
          "                         '-R .' beside it is accepted; a store has no files to pick, use -t)\n"
          "  -t WIN                 YYYY/MM/dd.hh:mm[:ss][-YYYY/MM/dd.hh:mm[:ss]]: flows lying entirely\n"
          "                         inside the window (local time); +N / -N: the first / last N seconds\n"
          "                         of the data; bitarc's 3h / 45m / 2d: the last N before now\n"
          "  -f FILE                read the filter from FILE ('#' comments, '@include FILE')\n"
          "  -o FMT                 line (default), long, extended, biline, bilong, nsel, nel, line6,\n"
          "                         long6, extended6, csv, pipe, raw, null, ndjson, 'fmt:%%ts %%sa ...'\n"
          "  -6                     IPv6 addresses in full     -N  numbers unscaled\n"
          "  -c N                   stop after N matching records\n"
          "  -s STAT[:p][/ORDER]    top-N statistic (repeatable): srcip dstip ip srcport dstport port\n"
          "                         proto tos dsttos srcas dstas as inif outif if srcvlan dstvlan vlan\n"
          "                         srcmask dstmask mask router nhip nhbip dir prevas nextas odid record,\n"
          "                         srcip4/24, dstip6/64...; ORDER flows packets bytes pps bps bpp\n"
          "                         (both directions of biflows), ipkg ibyte ipps ibps ibpp / opkg obyte\n"
          "                         opps obps obpp (in / out only), tstart tend; several with '/' or ':'\n"
          "                         (default flows); STAT:p splits the statistic by protocol\n"
          "  -n N                   top N of -s (default 10; 0 = all)\n"
          "  -A FIELDS              aggregate on srcip,dstip,srcport,dstport,proto,srcas,dstas,inif,\n"
          "                         outif,tos,srcvlan,dstvlan,next,bgpnext,router,srcip4/24,dstip4/28\n"
          "                         (each side its own prefix)...   -a  on the 5-tuple\n"
          "  -b / -B                bidirectional aggregation (-B, as nfdump: a TCP/UDP flow from a\n"
          "                         port below 1024, 32768 or 49152 to one at or above it is turned)\n"
          "  -O ORDER               print in order: tstart tend flows packets bytes pps bps bpp\n"
          "  -w FILE                write matching packets as a pcap file (packet stores)\n"
          "  -q                     no header and no summary\n"
          "  -Z                     check the filter syntax and exit\n"
          "\n"
          "bitarc's own options:\n"
          "      --count            print only the number of matching records (was -c before\n"
          "                         bitarc took nfdump's -c N)\n"
          "      --tz local|utc     read -t and print times in local time (default, as nfdump) or UTC\n"
          "      --window-start     -t keeps the flows that start in the window (nfdump: lie inside)\n"
          "      --explain          print the plan per segment and read no rows\n"
          "      --threads N        1 or 2 (default 2 when a second CPU is idle)\n"
          "                         (with 2, rows to a file or pipe are written while the next\n"
          "                         are formatted; BITARC_QUERY_WRITER=0 in the environment: not)\n"
          "      --strategy S       range OR strategy: auto, iterative, reduction or bitset\n"
          "      --device D         where range ORs run: cpu (default), omp or gpu\n"
          "      --scan             debug: linear scan + evaluator instead of the index\n"
          "      --no-live          read only complete segments (default: also the journals of\n"
          "                         the slices a collector is writing, by a linear scan, so\n"
          "                         records are seen about 1 s after they arrive)\n"
          "\n"
          "filter examples (nfdump syntax plus wildcards, port ranges, relative times):\n"
          "  bitarc query -r st 'src ip 10.4.*.* and dst port 137'\n"
          "  bitarc query -r st -t 2024/07/11.09:00-2024/07/11.10:00 'net 10.4.0.0/16 and not port 53'\n"
          "  bitarc query -r st 'proto tcp and flags 2' -o 'fmt:%%sa %%da %%dp'\n"
          "  bitarc query -r st 'port in [1024-2048, 8080] and bytes > 1M' -o ndjson\n"
          "  bitarc query -r st 'ip in [2001:db8::/32, 192.168.1.1] and after 3h ago' --count\n"
          "  bitarc query -r st -s srcip/bytes -s dstport -n 5 'dst port 443'\n"
          "  bitarc query -r st -w out.pcap 'host 10.0.0.1 and port 53'\n"
          "  bitarc query -M /data/site1:site2 -s dstport/bytes 'proto tcp'     (two stores)\n"
          "  bitarc query -r /data/rtr1 -r /data/rtr2 -o csv -c 100 'port 53'\n"
          "\n"
          "exit status: 0 ok, 1 damaged blocks were skipped, 2 bad usage or input.\n");
}

static void explain_cb(void *ctx, const char *line) {
  (void)ctx;
  printf("%s\n", line);
}

static char *join_args(int argc, char **argv) {
  size_t len = 1;
  for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 1;
  char *s = malloc(len);
  if (!s) return NULL;
  s[0] = 0;
  for (int i = 0; i < argc; i++) {
    if (i) strcat(s, " ");
    strcat(s, argv[i]);
  }
  return s;
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A query reads every segment's index directory and bitmaps into buffers of
 * up to a few MB that are freed when the next segment starts. glibc would
 * map and unmap each (or trim the heap), so every segment faulted its pages
 * in again: a quarter of the CPU time of a selective count over 25 segments.
 * Kept in the heap, the pages are reused. (Process-wide, so here and not in
 * the library.) */
static void keep_heap(void) {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

/* A filter file with nfdump's '@include FILE' lines expanded (depth 8). */
static char *read_filter(const char *path, int depth) {
  if (depth > 8) {
    ba_cli_err("query", "@include nested too deeply at '%s'", path);
    return NULL;
  }
  FILE *f = fopen(path, "rb");
  if (!f) {
    ba_cli_err("query", "cannot read filter file '%s': %s", path, strerror(errno));
    return NULL;
  }
  size_t cap = 4096, n = 0;
  char *s = malloc(cap), line[4096];
  if (s) s[0] = 0;
  while (s && fgets(line, sizeof(line), f)) {
    char *p = line, *inc = NULL;
    while (*p == ' ' || *p == '\t') p++;
    if (!strncmp(p, "@include", 8) && (p[8] == ' ' || p[8] == '\t')) {
      p += 8;
      while (*p == ' ' || *p == '\t') p++;
      p[strcspn(p, "\r\n")] = 0;
      if (!(inc = read_filter(p, depth + 1))) {
        free(s);
        s = NULL;
        break;
      }
    }
    const char *add = inc ? inc : line;
    size_t l = strlen(add);
    if (n + l + 2 > cap) {
      while (n + l + 2 > cap) cap *= 2;
      char *t = realloc(s, cap);
      if (!t) {
        free(s);
        s = NULL;
        free(inc);
        break;
      }
      s = t;
    }
    memcpy(s + n, add, l);
    n += l;
    if (inc) s[n++] = '\n';
    s[n] = 0;
    free(inc);
  }
  fclose(f);
  return s;
}

/* The filter line holding `col`, with a caret under it. */
static void show_caret(const char *text, size_t col) {
  size_t len = strlen(text);
  if (col > len) col = len;
  size_t ls = col, le = col;
  while (ls > 0 && text[ls - 1] != '\n') ls--;
  while (le < len && text[le] != '\n') le++;
  if (le - ls > 200) { /* long filters: a window around the column */
    ls = col > 100 ? col - 100 : ls;
    le = ls + 200 < le ? ls + 200 : le;
  }
  fprintf(stderr, "  %.*s\n  ", (int)(le - ls), text + ls);
  for (size_t i = ls; i < col; i++) fputc(text[i] == '\t' ? '\t' : ' ', stderr);
  fprintf(stderr, "^\n");
}

typedef struct qopts {
  qstores_t stores;
  const char *mdirs;  /* -M */
  const char *window, *ffile, *ofmt, *wfile, *aggs, *device, *order;
  const char *stat[QO_MAX_STATS];
  int nstat, local, count_only, explain, threads, scan, quiet, plain, v6, syntax_only, window_start, bidir;
  int no_live;
  ba_range_strategy_t strategy;
  uint64_t limit, topn;
} qopts_t;

static int parse_u64(const char *opt, const char *arg, uint64_t *out) {
  char *end;
  errno = 0;
  *out = strtoull(arg, &end, 10);
  if (errno || *end || !*arg || arg[0] == '-') {
    ba_cli_err("query", "%s wants a count, not '%s'", opt, arg);
    return 2;
  }
  return 0;
}

/* Options that may be given once: a second one is an error naming it. */
static int once(int *seen, int c, const char *name) {
  if (seen[c & 0xFF]++) {
    ba_cli_err("query", "%s given twice (it takes one value; only -s and -r/-R may repeat)", name);
    return 2;
  }
  return 0;
}

enum { O_COUNT = 1000, O_TZ, O_EXPLAIN, O_THREADS, O_STRATEGY, O_SCAN, O_DEVICE, O_WSTART, O_NOLIVE };

static int parse_opts(int argc, char **argv, qopts_t *o) {
  static const struct option longopts[] = {
    {"store", required_argument, NULL, 'r'}, {"window", required_argument, NULL, 't'},
    {"tz", required_argument, NULL, O_TZ}, {"filter-file", required_argument, NULL, 'f'},
    {"output", required_argument, NULL, 'o'}, {"limit", required_argument, NULL, 'c'},
    {"top", required_argument, NULL, 'n'}, {"count", no_argument, NULL, O_COUNT},
    {"write", required_argument, NULL, 'w'}, {"stat", required_argument, NULL, 's'},
    {"aggregate", required_argument, NULL, 'A'}, {"order", required_argument, NULL, 'O'},
    {"explain", no_argument, NULL, O_EXPLAIN}, {"threads", required_argument, NULL, O_THREADS},
    {"strategy", required_argument, NULL, O_STRATEGY}, {"scan", no_argument, NULL, O_SCAN},
    {"quiet", no_argument, NULL, 'q'}, {"help", no_argument, NULL, 'h'},
    {"device", required_argument, NULL, O_DEVICE}, {"window-start", no_argument, NULL, O_WSTART},
    {"syntax-check", no_argument, NULL, 'Z'}, {"no-live", no_argument, NULL, O_NOLIVE},
    {NULL, 0, NULL, 0},
  };
  static const char *const names[256] = {['t'] = "-t", ['f'] = "-f", ['o'] = "-o",
                                         ['c'] = "-c", ['n'] = "-n", ['w'] = "-w", ['A'] = "-A/-a",
                                         ['O'] = "-O", ['b'] = "-b/-B", ['M'] = "-M"};
  int seen[256] = {0}, c, rc = 0;
  optind = 1;
  while (rc == 0 && (c = getopt_long(argc, argv, "r:R:M:t:f:o:c:n:w:s:A:aO:bBqNZ6h", longopts, NULL)) != -1) {
    int k = c == 'R' ? 'r' : c == 'a' ? 'A' : c == 'B' ? 'b' : c;
    if (k < 256 && names[k] && (rc = once(seen, k, names[k])) != 0) break;
    switch (c) {
      case 'r': case 'R': rc = qs_add(&o->stores, optarg); break;
      case 'M': o->mdirs = optarg; break;
      case 't': o->window = optarg; break;
      case 'f': o->ffile = optarg; break;
      case 'o': o->ofmt = optarg; break;
      case 'c': rc = parse_u64("-c", optarg, &o->limit); break;
      case 'n': rc = parse_u64("-n", optarg, &o->topn); break;
      case 'w': o->wfile = optarg; break;
      case 's':
        if (o->nstat == QO_MAX_STATS) {
          ba_cli_err("query", "at most %d -s statistics", QO_MAX_STATS);
          rc = 2;
        } else {
          o->stat[o->nstat++] = optarg;
        }
        break;
      case 'A': o->aggs = optarg; break;
      case 'a': o->aggs = "srcip,dstip,srcport,dstport,proto"; break;
      case 'b': case 'B': o->bidir = c == 'b' ? 1 : 2; break;
      case 'O': o->order = optarg; break;
      case 'q': o->quiet = 1; break;
      case 'N': o->plain = 1; break;
      case '6': o->v6 = 1; break;
      case 'Z': o->syntax_only = 1; break;
      case O_COUNT: o->count_only = 1; break;
      case O_WSTART: o->window_start = 1; break;
      case O_EXPLAIN: o->explain = 1; break;
      case O_SCAN: o->scan = 1; break;
      case O_NOLIVE: o->no_live = 1; break;
      case O_DEVICE: o->device = optarg; break;
      case O_TZ: rc = qs_opt_tz("query", optarg, &o->local); break;
      case O_THREADS: rc = qs_opt_threads("query", optarg, &o->threads); break;
      case O_STRATEGY:
        if (!strcmp(optarg, "iterative")) o->strategy = BA_RANGE_ITERATIVE;
        else if (!strcmp(optarg, "reduction")) o->strategy = BA_RANGE_REDUCTION;
        else if (!strcmp(optarg, "bitset")) o->strategy = BA_RANGE_BITSET;
        else if (!strcmp(optarg, "auto")) o->strategy = BA_RANGE_AUTO;
        else {
          ba_cli_err("query", "--strategy wants auto, iterative, reduction or bitset, not '%s'", optarg);
          rc = 2;
        }
        break;
      case 'h': usage(stdout); return 1;
      default: usage(stderr); return 2;
    }
  }
  if (rc == 0 && o->mdirs) rc = qs_merge_m(&o->stores, "query", o->mdirs);
  return rc;
}

/* A -s order: nfdump's flows, packets, bytes, pps, bps, bpp (packets and
 * bytes of both directions), their in/out forms ipkg/opkg, ibyte/obyte,
 * ipps/opps, ibps/obps, ibpp/obpp, and bitarc's tstart, tend. */
static int stat_order(const char *tok, qstat_t *st) {
  static const struct { const char *name, *base; uint8_t dir; } io[] = {
    {"ipkg", "packets", 0}, {"opkg", "packets", 2}, {"ibyte", "bytes", 0}, {"obyte", "bytes", 2},
    {"ipps", "pps", 0},     {"opps", "pps", 2},     {"ibps", "bps", 0},    {"obps", "bps", 2},
    {"ibpp", "bpp", 0},     {"obpp", "bpp", 2}};
  st->ordname = tok;
  for (size_t i = 0; i < sizeof(io) / sizeof(io[0]); i++)
    if (!strcmp(tok, io[i].name)) {
      st->dir = io[i].dir;
      st->ordname = io[i].name;
      return ba_query_agg_order(io[i].base, &st->order);
    }
  if (ba_query_agg_order(tok, &st->order) < 0) return -1;
  st->ordname = ba_query_agg_order_name(st->order);
  st->dir = st->order == BA_ORDER_FLOWS || st->order == BA_ORDER_TSTART || st->order == BA_ORDER_TEND ? 0 : 1;
  return 0;
}

/* -s specs and -A/-a/-b/-B into the output state. */
static int setup_groups(const qopts_t *op, qout_t *o) {
  char err[160];
  for (int i = 0; i < op->nstat; i++) {
    char field[96];
    snprintf(field, sizeof(field), "%s", op->stat[i]);
    /* orders follow the first '/' that is not a prefix length (srcip4/24):
     * nfdump's srcip/bytes/packets, also srcip/bytes:packets */
    char *slash = field;
    while ((slash = strchr(slash, '/')) && slash[1] >= '0' && slash[1] <= '9') slash++;
    const char *ord = "flows";
    if (slash) {
      *slash = 0;
      ord = slash + 1;
    }
    /* nfdump's "srcip:p": split by protocol */
    int split = 0;
    char *colon = strchr(field, ':');
    if (colon) {
      if (strcmp(colon, ":p")) {
        ba_cli_err("query", "-s %s: '%s' after the statistic: only ':p' (split by protocol, as nfdump)", op->stat[i],
                   colon);
        return 2;
      }
      *colon = 0;
      split = 1;
    }
    char ords[96];
    snprintf(ords, sizeof(ords), "%s", ord);
    for (char *tok = strtok(ords, ":/"); tok; tok = strtok(NULL, ":/")) {
      if (o->nstats == QO_MAX_STATS) break;
      qstat_t *st = &o->stats[o->nstats];
      if (ba_query_agg_parse(field, 1, &st->spec, err, sizeof(err)) < 0) {
        ba_cli_err("query", "-s %s: %s", op->stat[i], err);
        return 2;
      }
      st->spec.proto_split = (uint8_t)(split && !(st->spec.fields & BA_AGG_RECORD)); /* nfdump: record ignores it */
      if (stat_order(tok, st) < 0) {
        ba_cli_err("query",
                   "-s %s: unknown order '%s' (flows packets bytes pps bps bpp tstart tend; ipkg ibyte ipps ibps "
                   "ibpp, opkg obyte opps obps obpp: in / out direction only)",
                   op->stat[i], tok);
        return 2;
      }
      st->spec.inout = (st->spec.fields & BA_AGG_RECORD) ? 0 : st->dir;
      if (ba_query_agg_create(&st->spec, &st->agg) < 0) return 2;
      /* a statistic's lines show no flags (-s record prints flows: it keeps them) */
      if (!(st->spec.fields & BA_AGG_RECORD) && ba_query_agg_drop_flags(st->agg) < 0) return 2;
      st->text = op->stat[i];
      o->nstats++;
    }
  }
  if (op->aggs || op->bidir) {
    ba_query_agg_spec_t sp;
    if (ba_query_agg_parse(op->aggs ? op->aggs : "srcip,dstip,srcport,dstport,proto", 0, &sp, err, sizeof(err)) < 0) {
      ba_cli_err("query", "-A %s: %s", op->aggs, err);
      return 2;
    }
    sp.bidir = (uint8_t)op->bidir;
    if (ba_query_agg_create(&sp, &o->agg) < 0) return 2;
  }
  if (op->order && ba_query_agg_order(op->order, &o->sort_order) < 0) {
    ba_cli_err("query", "-O %s: unknown order (tstart tend flows packets bytes pps bps bpp)", op->order);
    return 2;
  }
  o->sort = op->order != NULL;
  return 0;
}

/* -t: the window into the filter and the run's segment window. */
static int apply_window(const qopts_t *op, ba_query_t *q, uint64_t now_ns, ba_query_exec_opts_t *eo) {
  ba_query_window_t w;
  if (qs_parse_window("query", op->window, now_ns, op->local, &w)) return 2;
  if (w.rel_s) {
    uint64_t lo, hi;
    if (qs_data_range(&op->stores, &lo, &hi) < 0) lo = hi = 0;
    uint64_t d = (uint64_t)(w.rel_s < 0 ? -w.rel_s : w.rel_s) * 1000000000ull;
    w.start_ns = w.rel_s > 0 ? lo : (hi > d ? hi - d : 0);
    w.end_ns = w.rel_s > 0 ? lo + d : UINT64_MAX;
  }
  if (ba_query_restrict_time(q, w.start_ns, w.end_ns, !op->window_start) < 0) return 2;
  eo->start_ns = w.start_ns;
  eo->end_ns = w.end_ns == UINT64_MAX ? UINT64_MAX : w.end_ns + 1000000ull;
  return 0;
}

static int compile_filter(const qopts_t *op, int argc, char **argv, uint64_t now_ns, ba_query_t **q, char **filter) {
  if (op->ffile) {
    if (optind < argc) {
      ba_cli_err("query", "give the filter either with -f or as arguments, not both");
      return 2;
    }
    *filter = read_filter(op->ffile, 0);
  } else {
    *filter = join_args(argc - optind, argv + optind);
  }
  if (!*filter || ba_query_create(q) < 0) return 2;
  ba_query_set_now(*q, now_ns);
  ba_query_set_live(*q, !op->no_live);
  int rc = ba_query_compile(*q, *filter);
  if (rc == BA_ERR_SYNTAX) {
    ba_cli_err("query", "bad filter: %s (column %zu)", ba_query_errmsg(*q), ba_query_errcol(*q) + 1);
    show_caret(*filter, ba_query_errcol(*q));
    return 2;
  }
  if (rc < 0) {
    ba_cli_err("query", "cannot compile the filter: %s", ba_strerror(rc));
    return 2;
  }
  return 0;
}

static uint32_t out_columns(const qopts_t *op, const qout_t *o) {
  uint32_t base = BA_COL_FIRST | BA_COL_LAST | BA_COL_PACKETS | BA_COL_BYTES | BA_COL_OUT; /* summary */
  if (o->agg || o->nstats) { /* the aggregations' columns only (both directions, the :p protocol split) */
    uint32_t c = base | BA_COL_PROTO | (o->agg ? ba_query_agg_columns(o->agg) : 0);
    for (int s = 0; s < o->nstats; s++) c |= ba_query_agg_columns(o->stats[s].agg);
    return c;
  }
  if (o->pcap) return base | BA_COL_FRAME;
  if (op->count_only) return 0;
  return base | ba_query_format_columns(o->fmt) | (o->sort ? BA_COL_ALL & ~(uint32_t)BA_COL_FRAME : 0);
}

/* Warnings name the store: with one store at a time (`cur`), or from
 * ba_query_run_multi, whose messages begin "store N: " (N from 1). */
typedef struct warnctx {
  const qstores_t *stores;
  size_t cur; /* SIZE_MAX: ba_query_run_multi */
} warnctx_t;

static void warn_store_cb(void *ctx, const char *msg) {
  const warnctx_t *w = ctx;
  size_t k = w->cur;
  int used = 0;
  if (k == SIZE_MAX && sscanf(msg, "store %zu: %n", &k, &used) >= 1 && used > 0 && k >= 1) k--;
  else used = 0;
  if (k < w->stores->n) ba_cli_err("query", "warning: store '%s': %s", qs_name(w->stores, k), msg + used);
  else ba_cli_err("query", "warning: %s", msg);
}

/* The run over every store: one store by ba_query_run; several by
 * ba_query_run_multi (rows merged in start-time order), except --count and
 * --explain, which need no merge and run store by store. */
static int run_stores(const qopts_t *op, ba_query_t *q, qout_t *o, ba_query_exec_opts_t *eo, ba_query_stats_t *qs) {
  const qstores_t *ss = &op->stores;
  warnctx_t wc = {ss, ss->n == 1 ? 0 : SIZE_MAX};
  eo->warn = warn_store_cb;
  eo->warn_ctx = &wc;
  if (ss->n == 1) return ba_query_run(q, ss->st[0], eo, qo_sink, o, qs);
  if (!eo->explain_only && !eo->count_only) return ba_query_run_multi(q, ss->st, ss->n, eo, qo_sink, o, qs);
  memset(qs, 0, sizeof(*qs));
  for (size_t i = 0; i < ss->n; i++) {
    ba_query_stats_t one;
    wc.cur = i;
    if (op->explain) printf("store %s:\n", qs_name(ss, i));
    int rc = ba_query_run(q, ss->st[i], eo, qo_sink, o, &one);
    if (rc < 0) return rc;
    ba_query_stats_add(qs, &one);
  }
  return 0;
}

/* Detail a store keeps about its last error or damage, for each store. */
static void store_details(const qstores_t *ss, const char *what) {
  for (size_t i = 0; i < ss->n; i++)
    if (ba_store_errmsg(ss->st[i])[0])
      ba_cli_err("query", "%s store '%s': %s", what, qs_name(ss, i), ba_store_errmsg(ss->st[i]));
}

static int run_query(const qopts_t *op, ba_query_t *q, qout_t *o, ba_query_exec_opts_t *eo, void **range_ctx) {
  eo->threads = op->threads;
  eo->strategy = op->strategy;
  if (strcmp(op->device, "cpu") != 0) {
    int rc;
    if (ba_cli_device_check("query", op->device) != 0) return 2;
    if ((rc = ba_cli_device_range_open(op->device, range_ctx)) < 0) {
      ba_cli_err("query", "--device %s: %s", op->device, ba_strerror(rc));
      return 2;
    }
    eo->range_or = ba_cli_device_range_or;
    eo->range_ctx = *range_ctx;
  }
  eo->force_scan = op->scan;
  eo->limit = op->limit;
  eo->count_only = op->count_only && !o->pcap && !o->agg && !o->nstats;
  eo->out_cols = out_columns(op, o);
  if (!eo->count_only && qo_fields_init(o)) { /* aggregates from column vectors */
    eo->field_fn = qo_field_sink;
    eo->field_ctx = o;
    eo->fields = o->fields;
    eo->nfields = o->nfields;
  }
  if (op->explain) {
    eo->explain = explain_cb;
    eo->explain_only = 1;
    char tree[1024];
    size_t tl;
    ba_query_dump(q, tree, sizeof(tree), &tl);
    printf("filter: %s%s\n", tree, tl >= sizeof(tree) ? " ..." : "");
  }
  ba_query_stats_t qs;
  uint64_t t0 = mono_ns();
  int rc = run_stores(op, q, o, eo, &qs);
  /* the rows all written before anything else is; a failed write shows as
   * "write error" at the end, as a failed flush of stdout does */
  qo_sync(o);
  double secs = (double)(mono_ns() - t0) / 1e9;
  if (rc < 0) {
    ba_cli_err("query", "query failed: %s", ba_strerror(rc));
    store_details(&op->stores, "in");
    return 2;
  }
  if (op->explain) {
    printf("segments: %" PRIu64 " of %" PRIu64 ", rows %" PRIu64 ", candidates %" PRIu64 ", bitmap ops %" PRIu64 "\n",
           qs.segments_used, qs.segments_total, qs.rows_total, qs.rows_candidate, qs.bitmap_ops);
    return 0;
  }
  if (op->count_only) printf("%" PRIu64 "\n", qs.rows_matched);
  if ((rc = qo_finish(o, &qs)) < 0) {
    ba_cli_err("query", "output failed: %s", ba_strerror(rc));
    return 2;
  }
  qo_pcap_finish(o);
  if (o->pcap_skipped)
    ba_cli_err("query", "%" PRIu64 " matching records not written to %s (flow records or another link type)",
               o->pcap_skipped, o->pcap_path);
  if (!op->quiet && !op->count_only) qo_summary(o, &qs, secs);
  int ret = 0;
  if (qs.rows_damaged) {
    ba_cli_err("query", "%" PRIu64 " rows in damaged blocks were skipped", qs.rows_damaged);
    store_details(&op->stores, "damage in");
    ret = 1;
  }
  if (qs.segments_damaged && op->stores.n == 1) {
    ba_cli_err("query", "%" PRIu64 " damaged segments were scanned or skipped (run bitarc verify)",
               qs.segments_damaged);
    ret = 1;
  } else if (qs.segments_damaged) {
    /* the merge meets a segment once per time piece it spans: no count */
    ba_cli_err("query", "damaged segments were scanned or skipped (see the warnings; run bitarc verify on that store)");
    ret = 1;
  }
  return ret;
}

static int open_output(const qopts_t *op, qout_t *o) {
  char err[200];
  o->fmt_flags = (op->local ? BA_FMT_LOCAL : 0) | (op->plain ? BA_FMT_PLAIN : 0) | (op->v6 ? BA_FMT_V6LONG : 0);
  o->full_v6 = op->v6;
  const char *fmt = op->ofmt ? op->ofmt : op->bidir ? "biline" : "line";
  if (ba_query_format_create(fmt, o->fmt_flags, &o->fmt, err, sizeof(err)) < 0) {
    ba_cli_err("query", "-o %s: %s", fmt, err);
    return 2;
  }
  if (setup_groups(op, o) != 0) return 2;
  if (op->wfile) {
    if (!(o->pcap = fopen(op->wfile, "wb"))) {
      ba_cli_err("query", "cannot create '%s': %s", op->wfile, strerror(errno));
      return 2;
    }
    o->pcap_path = op->wfile;
  }
  o->count_only = op->count_only;
  o->quiet = op->quiet;
  o->topn = op->topn;
  o->line_cap = 2048;
  o->line = malloc(o->line_cap);
  return o->line ? 0 : 2;
}

int ba_cmd_query(int argc, char **argv) {
  keep_heap();
  qopts_t op = {.device = "cpu", .local = 1, .threads = qs_default_threads(), .strategy = BA_RANGE_AUTO, .topn = 10};
  int ret = parse_opts(argc, argv, &op);
  if (ret) {
    qs_free(&op.stores);
    return ret == 1 ? 0 : ret;
  }
  ret = 2;
  char *filter = NULL;
  void *range_ctx = NULL;
  ba_query_t *q = NULL;
  qout_t o = {0};
  /* Records to a file or pipe: one write per 64 KB instead of per 4 KB. */
  static char obuf[1 << 16];
  int tty = isatty(STDOUT_FILENO);
  if (!tty) setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
  o.out = stdout;
  /* The helper thread: after a cold start it reads the time zone (a path
   * lookup and a read from disk) while the stores open, for the dates of
   * rows, tables and the summary. With two threads (--threads 2, or by
   * default when a second CPU is idle) it also writes rows to a file or pipe
   * while the next are formatted: broad -o csv 10-17 % faster on an idle
   * machine, slower when both CPUs are busy, where the default takes one
   * thread (bench/RESULTS.md). BITARC_QUERY_WRITER=0: no thread. The output
   * is the same either way (tests/query/test_query_writer.sh). */
  qo_writer_t *wr = NULL;
  const char *wenv = getenv("BITARC_QUERY_WRITER");
  int rows_wr = !tty && op.threads == 2 && !(wenv && !strcmp(wenv, "0"));
  int tz = op.local && !op.count_only && !op.explain && !op.syntax_only && qo_tz_cold();
  if ((!wenv || strcmp(wenv, "0")) && (rows_wr || tz) && qo_writer_start(&wr, stdout, tz) < 0) wr = NULL;
  o.pcap_link = -1;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  uint64_t now_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
  if (compile_filter(&op, argc, argv, now_ns, &q, &filter) != 0) goto done;
  if (op.syntax_only) {
    ret = 0;
    goto done;
  }
  if (!op.stores.n) {
    ba_cli_err("query", "-r DIR (a store; -r again or -M for several) is required (see bitarc query --help)");
    goto done;
  }
  if (open_output(&op, &o) != 0) goto done;
  if (rows_wr && !o.agg && !o.nstats && !o.pcap) o.wr = wr;
  op.stores.live = !op.no_live;
  if (qs_open(&op.stores) != 0) goto done;
  ba_query_exec_opts_t eo;
  ba_query_exec_opts_init(&eo);
  if (op.window && apply_window(&op, q, now_ns, &eo) != 0) goto done;
  /* cold: every segment's index directory (and table) asked of the disk at once */
  for (size_t i = 0; !op.explain && i < op.stores.n; i++)
    ba_store_prefetch_index(op.stores.st[i], eo.start_ns, eo.end_ns ? eo.end_ns : UINT64_MAX,
                            !op.count_only || o.agg || o.nstats || o.pcap);
  if (!op.count_only && !o.agg && !o.nstats && !o.pcap && !op.explain && !op.quiet) {
    size_t hl;
    char hdr[2048];
    if (ba_query_format_header(o.fmt, hdr, sizeof(hdr), &hl) == 0 && hl) fwrite(hdr, 1, hl, stdout);
  }
  ret = run_query(&op, q, &o, &eo, &range_ctx);
  qo_sync(&o);
  qo_writer_stop(wr);
  wr = NULL;
  o.wr = NULL;
  if (o.io_error || fflush(stdout) != 0) {
    ba_cli_err("query", "write error: %s", strerror(o.io_errno ? o.io_errno : errno));
    ret = 2;
  }
done:
  qo_writer_stop(wr);
  if (o.pcap && fclose(o.pcap) != 0) {
    ba_cli_err("query", "cannot write '%s': %s", o.pcap_path, strerror(errno));
    ret = 2;
  }
  free(o.line);
  free(o.held);
  ba_cli_device_range_close(range_ctx);
  ba_query_agg_free(o.agg);
  for (int i = 0; i < o.nstats; i++) ba_query_agg_free(o.stats[i].agg);
  ba_query_format_free(o.fmt);
  qs_free(&op.stores);
  ba_query_free(q);
  free(filter);
  return ret;
}

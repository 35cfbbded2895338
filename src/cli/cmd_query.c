/* bitarc query: nfdump-style filters answered from the bitmap indexes. */
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

static void usage(FILE *f) {
  fprintf(f,
          "usage: bitarc query --store DIR [options] [FILTER ...]\n"
          "\n"
          "Finds the flow or packet records matching an nfdump filter. The filter may be\n"
          "one argument or several words (joined with spaces), or come from -f FILE.\n"
          "Indexed terms (IPv4 addresses and prefixes, ports, protocol, TCP flags, start\n"
          "time) are answered with bitmap algebra; only the blocks holding candidate rows\n"
          "are decompressed, and other terms are checked on those rows.\n"
          "\n"
          "options:\n"
          "  -r, --store DIR        the store to read (required)\n"
          "  -t, --window WIN       YYYY/MM/dd.hh:mm[:ss][-YYYY/MM/dd.hh:mm[:ss]] (start-time\n"
          "                         window, end inclusive to the second) or 3h / 45m / 2d (the last N)\n"
          "      --tz utc|local     read and print times in UTC (default) or local time\n"
          "  -f, --filter-file FILE read the filter from FILE ('#' comments allowed)\n"
          "  -o, --output FMT       line (default), long, csv, ndjson or 'fmt:%%ts %%sa %%da ...'\n"
          "                         tokens: %%ts %%te %%td %%pr %%sa %%da %%sap %%dap %%sp %%dp %%flg %%pkt\n"
          "                         %%byt %%fl %%tos %%in %%out %%sas %%das %%ra %%bps %%pps %%bpp\n"
          "  -n, --limit N          stop after N records (with -s/-A: show the top N, default 10)\n"
          "  -c, --count            print only the number of matching records\n"
          "  -w, --write FILE       write matching packets as a pcap file (packet stores)\n"
          "  -s, --stat FIELD[/ORD] top-N statistics: srcip dstip ip srcport dstport port proto;\n"
          "                         ORD = flows (default), packets or bytes\n"
          "  -A, --aggregate FIELDS aggregate over srcip,dstip,srcport,dstport,proto\n"
          "      --explain          print the plan per segment (bitmap expression, rows, blocks)\n"
          "                         and do not read any rows\n"
          "      --threads N        1 or 2 (default 2 when a second CPU is idle by the 1-minute\n"
          "                         load average, else 1): with 2, a second\n"
          "                         thread evaluates the bitmaps of later segments while the\n"
          "                         first reads rows, and range ORs are split in two; results\n"
          "                         and their order are the same\n"
          "      --strategy S       range OR strategy: auto (default: bitset from 32 bins, else\n"
          "                         reduction), iterative, reduction or bitset\n"
          "      --device D         where range ORs run: cpu (default), omp (the GPU pipeline on\n"
          "                         OpenMP threads) or gpu (CUDA); results are identical\n"
          "      --scan             debug: linear scan + evaluator instead of the index\n"
          "  -q, --quiet            no summary on stderr\n"
          "\n"
          "filter examples (nfdump syntax plus wildcards, port ranges, relative times):\n"
          "  bitarc query -r st 'src ip 10.4.*.* and dst port 137'\n"
          "  bitarc query -r st -t 2024/07/11.09:00-2024/07/11.10:00 'net 10.4.0.0/16 and not port 53'\n"
          "  bitarc query -r st 'proto tcp and flags S and not flags AFRPU' -o 'fmt:%%sa %%da %%dp'\n"
          "  bitarc query -r st 'port in [1024-2048, 8080] and bytes > 1M' -o ndjson\n"
          "  bitarc query -r st 'ip in [2001:db8::/32, 192.168.1.1] and after 3h ago' --count\n"
          "  bitarc query -r st -s srcip/bytes -n 5 'dst port 443'\n"
          "  bitarc query -r st -w out.pcap 'host 10.0.0.1 and port 53'\n"
          "\n"
          "exit status: 0 ok, 1 damaged blocks were skipped, 2 bad usage or input.\n");
}

static void warn_cb(void *ctx, const char *msg) {
  (void)ctx;
  ba_cli_err("query", "warning: %s", msg);
}

typedef struct qout {
  ba_query_format_t *fmt;
  FILE *out;
  int count_only;
  ba_query_agg_t *agg;
  FILE *pcap;
  const char *pcap_path;
  int pcap_link;          /* -1 until the first frame */
  uint64_t pcap_skipped;  /* frames of another link type, or flow records */
  char *line;
  size_t line_cap;
  int io_error;
} qout_t;

static void put_le32(FILE *f, uint32_t v) {
  uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  fwrite(b, 1, 4, f);
}
static void put_le16(FILE *f, uint16_t v) {
  uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
  fwrite(b, 1, 2, f);
}

static int sink(void *vctx, const ba_record_t *recs, size_t n) {
  qout_t *o = vctx;
  if (o->agg) return ba_query_agg_add(o->agg, recs, n);
  for (size_t i = 0; i < n; i++) {
    const ba_record_t *r = &recs[i];
    if (o->pcap) {
      if (r->kind != BA_REC_PACKET || !r->frame) {
        o->pcap_skipped++;
        continue;
      }
      if (o->pcap_link < 0) {
        /* pcap header, nanosecond timestamps (magic a1b23c4d) */
        o->pcap_link = r->linktype;
        put_le32(o->pcap, 0xa1b23c4du);
        put_le16(o->pcap, 2);
        put_le16(o->pcap, 4);
        put_le32(o->pcap, 0);
        put_le32(o->pcap, 0);
        put_le32(o->pcap, 262144);
        put_le32(o->pcap, r->linktype);
      }
      if (r->linktype != (uint16_t)o->pcap_link) {
        o->pcap_skipped++;
        continue;
      }
      put_le32(o->pcap, (uint32_t)(r->first_ns / 1000000000ull));
      put_le32(o->pcap, (uint32_t)(r->first_ns % 1000000000ull));
      put_le32(o->pcap, r->caplen);
      put_le32(o->pcap, r->wirelen ? r->wirelen : r->caplen);
      if (fwrite(r->frame, 1, r->caplen, o->pcap) != r->caplen) o->io_error = 1;
      continue;
    }
    if (o->count_only || !o->fmt) continue;
    size_t len;
    int rc = ba_query_format_record(o->fmt, r, 1, o->line, o->line_cap, &len);
    if (rc == BA_ERR_OVERFLOW) {
      char *nl = realloc(o->line, len + 1);
      if (!nl) return BA_ERR_NOMEM;
      o->line = nl;
      o->line_cap = len + 1;
      rc = ba_query_format_record(o->fmt, r, 1, o->line, o->line_cap, &len);
    }
    if (rc < 0) return rc;
    if (fwrite(o->line, 1, len, o->out) != len) {
      o->io_error = 1;
      return BA_ERR_IO;
    }
  }
  return 0;
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

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *s = malloc(cap);
  while (s) {
    size_t got = fread(s + n, 1, cap - n - 1, f);
    n += got;
    if (n + 1 < cap) break;
    cap *= 2;
    char *t = realloc(s, cap);
    if (!t) {
      free(s);
      s = NULL;
    }
    s = t;
  }
  fclose(f);
  if (s) s[n] = 0;
  return s;
}

/* The filter line holding `col`, with a caret under it. */
static void show_caret(const char *text, size_t col) {
  size_t len = strlen(text);
  if (col > len) col = len;
  size_t ls = col, le = col;
  while (ls > 0 && text[ls - 1] != '\n') ls--;
  while (le < len && text[le] != '\n') le++;
  fprintf(stderr, "  %.*s\n  ", (int)(le - ls), text + ls);
  for (size_t i = ls; i < col; i++) fputc(text[i] == '\t' ? '\t' : ' ', stderr);
  fprintf(stderr, "^\n");
}

static const char *agg_name(uint32_t f) {
  switch (f) {
    case BA_AGG_SRCIP: return "Src IP Addr";
    case BA_AGG_DSTIP: return "Dst IP Addr";
    case BA_AGG_IP: return "IP Addr";
    case BA_AGG_SRCPORT: return "Src Port";
    case BA_AGG_DSTPORT: return "Dst Port";
    case BA_AGG_PORT: return "Port";
    case BA_AGG_PROTO: return "Protocol";
    default: return "Aggregate";
  }
}

static void key_text(uint32_t f, const ba_record_t *k, char *buf, size_t cap) {
  char tmp[256];
  tmp[0] = 0;
  ba_query_format_t *fm = NULL;
  const char *spec = f == BA_AGG_SRCIP || f == BA_AGG_IP ? "fmt:%sa"
                     : f == BA_AGG_DSTIP                 ? "fmt:%da"
                     : f == BA_AGG_SRCPORT || f == BA_AGG_PORT ? "fmt:%sp"
                     : f == BA_AGG_DSTPORT               ? "fmt:%dp"
                                                         : "fmt:%pr";
  size_t len = 0;
  if (ba_query_format_create(spec, 0, &fm, NULL, 0) == 0 &&
      ba_query_format_record(fm, k, 1, tmp, sizeof(tmp), &len) == 0 && len > 0)
    tmp[len - 1] = 0;
  ba_query_format_free(fm);
  const char *p = tmp;
  while (*p == ' ') p++;
  snprintf(buf, cap, "%s", p);
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double pct(uint64_t a, uint64_t b) { return b ? 100.0 * (double)a / (double)b : 0.0; }

static void fmt_window(uint64_t ns, int local, char *buf, size_t cap) {
  time_t t = (time_t)(ns / 1000000000ull);
  struct tm tm;
  if (local) localtime_r(&t, &tm);
  else gmtime_r(&t, &tm);
  strftime(buf, cap, "%Y-%m-%d %H:%M:%S", &tm);
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

/* A second thread only pays when a CPU is free: on a busy machine the two
 * threads share one CPU and the hand-off costs about 10%. */
static int default_threads(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  double load[1];
  if (n < 2) return 1;
  if (getloadavg(load, 1) == 1 && load[0] > (double)n - 0.5) return 1;
  return 2;
}

int ba_cmd_query(int argc, char **argv) {
  keep_heap();
  static const struct option longopts[] = {
    {"store", required_argument, NULL, 'r'}, {"window", required_argument, NULL, 't'},
    {"tz", required_argument, NULL, 'Z'}, {"filter-file", required_argument, NULL, 'f'},
    {"output", required_argument, NULL, 'o'}, {"limit", required_argument, NULL, 'n'},
    {"count", no_argument, NULL, 'c'}, {"write", required_argument, NULL, 'w'},
    {"stat", required_argument, NULL, 's'}, {"aggregate", required_argument, NULL, 'A'},
    {"explain", no_argument, NULL, 'E'}, {"threads", required_argument, NULL, 'T'},
    {"strategy", required_argument, NULL, 'S'}, {"scan", no_argument, NULL, 'L'},
    {"quiet", no_argument, NULL, 'q'}, {"help", no_argument, NULL, 'h'},
    {"device", required_argument, NULL, 'D'}, {NULL, 0, NULL, 0},
  };
  const char *store_dir = NULL, *window = NULL, *ffile = NULL, *ofmt = "line", *wfile = NULL;
  const char *stat = NULL, *aggs = NULL, *device = "cpu";
  int local = 0, count_only = 0, explain = 0, threads = default_threads(), scan = 0, quiet = 0, have_limit = 0;
  ba_range_strategy_t strategy = BA_RANGE_AUTO;
  uint64_t limit = 0;
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "r:t:f:o:n:cw:s:A:qh", longopts, NULL)) != -1) {
    char *end;
    switch (c) {
      case 'r': store_dir = optarg; break;
      case 't': window = optarg; break;
      case 'Z':
        if (!strcmp(optarg, "local")) local = 1;
        else if (!strcmp(optarg, "utc") || !strcmp(optarg, "UTC")) local = 0;
        else {
          ba_cli_err("query", "--tz wants utc or local, not '%s'", optarg);
          return 2;
        }
        break;
      case 'f': ffile = optarg; break;
      case 'o': ofmt = optarg; break;
      case 'n':
        errno = 0;
        limit = strtoull(optarg, &end, 10);
        if (errno || *end || optarg[0] == '-') {
          ba_cli_err("query", "-n wants a count, not '%s'", optarg);
          return 2;
        }
        have_limit = 1;
        break;
      case 'c': count_only = 1; break;
      case 'w': wfile = optarg; break;
      case 's': stat = optarg; break;
      case 'A': aggs = optarg; break;
      case 'E': explain = 1; break;
      case 'T':
        threads = atoi(optarg);
        if (threads < 1 || threads > 2) {
          ba_cli_err("query", "--threads wants 1 or 2, not '%s'", optarg);
          return 2;
        }
        break;
      case 'S':
        if (!strcmp(optarg, "iterative")) strategy = BA_RANGE_ITERATIVE;
        else if (!strcmp(optarg, "reduction")) strategy = BA_RANGE_REDUCTION;
        else if (!strcmp(optarg, "bitset")) strategy = BA_RANGE_BITSET;
        else if (!strcmp(optarg, "auto")) strategy = BA_RANGE_AUTO;
        else {
          ba_cli_err("query", "--strategy wants auto, iterative, reduction or bitset, not '%s'", optarg);
          return 2;
        }
        break;
      case 'L': scan = 1; break;
      case 'D': device = optarg; break;
      case 'q': quiet = 1; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (!store_dir) {
    ba_cli_err("query", "--store DIR is required (see bitarc query --help)");
    return 2;
  }
  char *filter;
  if (ffile) {
    if (optind < argc) {
      ba_cli_err("query", "give the filter either with -f or as arguments, not both");
      return 2;
    }
    filter = read_file(ffile);
    if (!filter) {
      ba_cli_err("query", "cannot read filter file '%s': %s", ffile, strerror(errno));
      return 2;
    }
  } else {
    filter = join_args(argc - optind, argv + optind);
    if (!filter) return 2;
  }

  int ret = 2, rc;
  void *range_ctx = NULL; /* --device other than cpu */
  ba_query_t *q = NULL;
  ba_store_t *st = NULL;
  qout_t o = {0};
  o.out = stdout;
  o.pcap_link = -1;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  uint64_t now_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;

  if (ba_query_create(&q) < 0) goto done;
  ba_query_set_now(q, now_ns);
  rc = ba_query_compile(q, filter);
  if (rc == BA_ERR_SYNTAX) {
    ba_cli_err("query", "bad filter: %s (column %zu)", ba_query_errmsg(q), ba_query_errcol(q) + 1);
    show_caret(filter, ba_query_errcol(q));
    goto done;
  } else if (rc < 0) {
    ba_cli_err("query", "cannot compile the filter: %s", ba_strerror(rc));
    goto done;
  }
  ba_query_exec_opts_t eo;
  ba_query_exec_opts_init(&eo);
  if (window && ba_query_parse_window(window, now_ns, local, &eo.start_ns, &eo.end_ns) < 0) {
    ba_cli_err("query", "bad time window '%s' (want YYYY/MM/dd.hh:mm[:ss][-YYYY/MM/dd.hh:mm[:ss]] or 3h)",
               window);
    goto done;
  }
  char err[160];
  if (ba_query_format_create(ofmt, local, &o.fmt, err, sizeof(err)) < 0) {
    ba_cli_err("query", "-o %s: %s", ofmt, err);
    goto done;
  }
  uint32_t aggf = 0;
  ba_agg_order_t order = BA_ORDER_FLOWS;
  if (stat && aggs) {
    ba_cli_err("query", "use either -s or -A");
    goto done;
  }
  if (stat) {
    char field[64];
    snprintf(field, sizeof(field), "%s", stat);
    char *slash = strchr(field, '/');
    if (slash) {
      *slash = 0;
      const char *ord = slash + 1;
      if (!strcmp(ord, "flows")) order = BA_ORDER_FLOWS;
      else if (!strcmp(ord, "packets")) order = BA_ORDER_PACKETS;
      else if (!strcmp(ord, "bytes")) order = BA_ORDER_BYTES;
      else {
        ba_cli_err("query", "-s %s: order must be flows, packets or bytes", stat);
        goto done;
      }
    }
    if (ba_query_agg_parse(field, &aggf) < 0 || __builtin_popcount(aggf) != 1) {
      ba_cli_err("query", "-s %s: field must be one of srcip dstip ip srcport dstport port proto", stat);
      goto done;
    }
  }
  if (aggs && (ba_query_agg_parse(aggs, &aggf) < 0 || (aggf & (BA_AGG_IP | BA_AGG_PORT)))) {
    ba_cli_err("query", "-A %s: fields must be among srcip,dstip,srcport,dstport,proto", aggs);
    goto done;
  }
  if (aggf && ba_query_agg_create(aggf, &o.agg) < 0) goto done;
  if (wfile) {
    o.pcap = fopen(wfile, "wb");
    if (!o.pcap) {
      ba_cli_err("query", "cannot create '%s': %s", wfile, strerror(errno));
      goto done;
    }
    o.pcap_path = wfile;
  }
  o.count_only = count_only;
  rc = ba_store_open(store_dir, &st);
  if (rc < 0) {
    ba_cli_err("query", "cannot open store '%s': %s%s%s", store_dir, ba_strerror(rc), st ? ": " : "",
               st ? ba_store_errmsg(st) : "");
    goto done;
  }
  eo.threads = threads;
  eo.strategy = strategy;
  eo.warn = warn_cb;
  if (strcmp(device, "cpu") != 0) {
    if (ba_cli_device_check("query", device) != 0) goto done;
    if ((rc = ba_cli_device_range_open(device, &range_ctx)) < 0) {
      ba_cli_err("query", "--device %s: %s", device, ba_strerror(rc));
      goto done;
    }
    eo.range_or = ba_cli_device_range_or;
    eo.range_ctx = range_ctx;
  }
  eo.force_scan = scan;
  eo.limit = (stat || aggs) ? 0 : limit;
  eo.count_only = count_only && !o.pcap && !o.agg;
  if (o.agg) eo.out_cols = BA_COL_SRC | BA_COL_DST | BA_COL_PORTS | BA_COL_PROTO | BA_COL_PACKETS |
                           BA_COL_BYTES | BA_COL_FIRST | BA_COL_LAST;
  else if (o.pcap) eo.out_cols = BA_COL_FRAME | BA_COL_FIRST;
  else if (!count_only) eo.out_cols = ba_query_format_columns(o.fmt);
  if (explain) {
    eo.explain = explain_cb;
    eo.explain_only = 1;
    char tree[1024];
    size_t tl;
    ba_query_dump(q, tree, sizeof(tree), &tl);
    printf("filter: %s\n", tree);
  }
  if (!count_only && !o.agg && !o.pcap && !explain) {
    size_t hl;
    char hdr[1024];
    if (ba_query_format_header(o.fmt, hdr, sizeof(hdr), &hl) == 0 && hl) fwrite(hdr, 1, hl, stdout);
  }
  o.line_cap = 1024;
  o.line = malloc(o.line_cap);
  if (!o.line) goto done;
  ba_query_stats_t qs;
  uint64_t t0 = mono_ns();
  rc = ba_query_run(q, st, &eo, sink, &o, &qs);
  uint64_t t1 = mono_ns();
  if (rc < 0) {
    ba_cli_err("query", "query failed: %s%s%s", ba_strerror(rc), ba_store_errmsg(st)[0] ? ": " : "",
               ba_store_errmsg(st));
    goto done;
  }
  if (explain) {
    printf("segments: %" PRIu64 " of %" PRIu64 ", rows %" PRIu64 ", candidates %" PRIu64 ", bitmap ops %" PRIu64
           "\n",
           qs.segments_used, qs.segments_total, qs.rows_total, qs.rows_candidate, qs.bitmap_ops);
    ret = 0;
    goto done;
  }
  if (count_only) printf("%" PRIu64 "\n", qs.rows_matched);
  if (o.agg) {
    const ba_query_agg_row_t *rows;
    size_t ng;
    ba_query_agg_result(o.agg, order, &rows, &ng);
    size_t show = have_limit ? (size_t)(limit < ng ? limit : ng) : (stat ? (ng < 10 ? ng : 10) : ng);
    static const char *const ordn[] = {"flows", "packets", "bytes"};
    if (stat) {
      printf("Top %zu %s ordered by %s:\n", show, agg_name(aggf), ordn[order]);
      printf("%-40s %18s %20s %22s\n", agg_name(aggf), "Flows(%)", "Packets(%)", "Bytes(%)");
      /* -s ip/port count every flow twice; percentages are of the flow totals */
      for (size_t i = 0; i < show; i++) {
        char kt[64];
        key_text(aggf, &rows[i].key, kt, sizeof(kt));
        printf("%-40s %10" PRIu64 "(%5.1f) %12" PRIu64 "(%5.1f) %14" PRIu64 "(%5.1f)\n", kt, rows[i].flows,
               pct(rows[i].flows, qs.rows_matched), rows[i].packets, pct(rows[i].packets, qs.packets),
               rows[i].bytes, pct(rows[i].bytes, qs.bytes));
      }
    } else {
      size_t hl;
      char hdr[1024];
      if (ba_query_format_header(o.fmt, hdr, sizeof(hdr), &hl) == 0 && hl) fwrite(hdr, 1, hl, stdout);
      for (size_t i = 0; i < show; i++) {
        ba_record_t r = rows[i].key;
        r.packets = rows[i].packets;
        r.bytes = rows[i].bytes;
        size_t len;
        if (ba_query_format_record(o.fmt, &r, rows[i].flows, o.line, o.line_cap, &len) == 0)
          fwrite(o.line, 1, len, stdout);
      }
    }
  }
  if (o.pcap && o.pcap_link < 0) {
    /* no frame matched: still a valid, empty pcap (Ethernet) */
    put_le32(o.pcap, 0xa1b23c4du);
    put_le16(o.pcap, 2);
    put_le16(o.pcap, 4);
    put_le32(o.pcap, 0);
    put_le32(o.pcap, 0);
    put_le32(o.pcap, 262144);
    put_le32(o.pcap, 1);
  }
  if (o.pcap_skipped)
    ba_cli_err("query", "%" PRIu64 " matching records not written to %s (flow records or another link type)",
               o.pcap_skipped, o.pcap_path);
  if (!quiet && !count_only) {
    double secs = (double)(t1 - t0) / 1e9;
    uint64_t dur = qs.last_ns > qs.first_ns ? qs.last_ns - qs.first_ns : 0;
    double ds = (double)dur / 1e9;
    fprintf(stderr,
            "Summary: total flows: %" PRIu64 ", total bytes: %" PRIu64 ", total packets: %" PRIu64
            ", avg bps: %.0f, avg pps: %.0f, avg bpp: %" PRIu64 "\n",
            qs.rows_matched, qs.bytes, qs.packets, ds > 0 ? (double)qs.bytes * 8 / ds : 0.0,
            ds > 0 ? (double)qs.packets / ds : 0.0, qs.packets ? qs.bytes / qs.packets : 0);
    if (qs.rows_matched) {
      char a[32], b[32];
      fmt_window(qs.first_ns, local, a, sizeof(a));
      fmt_window(qs.last_ns, local, b, sizeof(b));
      fprintf(stderr, "Time window: %s - %s\n", a, b);
    }
    fprintf(stderr,
            "Total records in %" PRIu64 " of %" PRIu64 " segments: %" PRIu64 ", candidates: %" PRIu64
            ", passed: %" PRIu64 ", blocks read: %" PRIu64 ", wall: %.4fs\n",
            qs.segments_used, qs.segments_total, qs.rows_total, qs.rows_candidate, qs.rows_matched,
            qs.blocks_read, secs);
  }
  ret = 0;
  if (qs.rows_damaged) {
    ba_cli_err("query", "%" PRIu64 " rows in damaged blocks were skipped: %s", qs.rows_damaged,
               ba_store_errmsg(st));
    ret = 1;
  }
  if (qs.segments_damaged) {
    ba_cli_err("query", "%" PRIu64 " damaged segments were scanned or skipped (run bitarc verify)",
               qs.segments_damaged);
    ret = 1;
  }
  if (o.io_error || fflush(stdout) != 0) {
    ba_cli_err("query", "write error: %s", strerror(errno));
    ret = 2;
  }
done:
  if (o.pcap && fclose(o.pcap) != 0) {
    ba_cli_err("query", "cannot write '%s': %s", o.pcap_path, strerror(errno));
    ret = 2;
  }
  free(o.line);
  ba_cli_device_range_close(range_ctx);
  ba_query_agg_free(o.agg);
  ba_query_format_free(o.fmt);
  ba_store_close(st);
  ba_query_free(q);
  free(filter);
  return ret;
}

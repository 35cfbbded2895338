/* bitarc graph: flows, packets and bytes per time bin for one or several
 * filters (nfsen's profile graphs), as csv or drawn by gnuplot (SVG, PNG).
 * The series comes from ba_query_series; output: graph_out.c. */
#include <errno.h>
#include <getopt.h>
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
#include "cli/graph.h"
#include "cli/query_stores.h"

#define NS 1000000000ull
#define MAX_BINS 1000000u

static void usage(FILE *f) {
  fprintf(f,
          "usage: bitarc graph -r DIR [-r DIR ...] [options] [FILTER ...]\n"
          "\n"
          "Flows, packets and bytes per time interval over a window, for one or several filters\n"
          "(nfsen's profile graphs): one series per FILTER argument (each argument is a whole\n"
          "nfdump filter; none = every flow). A flow counts in the interval of its start time.\n"
          "Flow counts come from the bitmap index when the interval is a multiple of the store's\n"
          "start-time bin (--time-bin of ingest/collect, default 60 s) and starts on one; packets\n"
          "and bytes read only those two columns of the matching flows.\n"
          "\n"
          "options:\n"
          "  -r, --store DIR        a store to read (required; also -R; repeat it for several\n"
          "                         stores: their series add up)\n"
          "  -M /path/dir1:dir2     several stores as nfdump's -M\n"
          "  -t, --window WIN       the time window, as bitarc query -t (default: the stores' whole\n"
          "                         time range): YYYY/MM/dd.hh:mm[:ss]-YYYY/MM/dd.hh:mm[:ss] (the\n"
          "                         end is excluded), +N / -N: the first / last N seconds of the\n"
          "                         data, 3h / 45m / 2d: the last N before now. Relative windows\n"
          "                         and the default are widened to whole intervals\n"
          "      --tz local|utc     read -t and print times in local time (default) or UTC\n"
          "      --bin DUR          interval width: 300, 5m, 1h, 1d (default: the smallest of 1m\n"
          "                         5m 15m 30m 1h 2h 6h 1d giving at most 300 intervals)\n"
          "      --measure LIST     flows,packets,bytes or a part of it (default all three)\n"
          "      --rate             values per second (default: per interval)\n"
          "  -l, --label NAME       the next filter's series label (default: the filter's text;\n"
          "                         repeat it, in filter order)\n"
          "  -o, --output FMT       csv, svg or png (default: from --out's suffix, else csv)\n"
          "      --out FILE         write to FILE (default: standard output)\n"
          "      --title TEXT       graph title (default: the window and interval)\n"
          "      --size WxH         graph size in pixels (default 1000x250 per measure + 80)\n"
          "      --log              logarithmic y axes (default: linear)\n"
          "      --threads N        1 or 2 (default 2 when a second CPU is idle)\n"
          "  -s STAT[/ORDER]        top-N graph: the N largest values of STAT over the window under\n"
          "                         the one FILTER (as bitarc query -s STAT/ORDER -n N ranks them),\n"
          "                         one series each plus 'other', drawn stacked. STAT: srcip dstip\n"
          "                         (srcip4/24, dstip6/48, ...) srcport dstport proto; ORDER: flows\n"
          "                         (default), packets or bytes\n"
          "  -n N                   how many values for -s (default 10, at most 31)\n"
          "  -h, --help             this text\n"
          "\n"
          "csv: one row per interval: start (date and time), epoch (seconds), then one column per\n"
          "filter and measure named 'LABEL flows', 'LABEL packets', 'LABEL bytes' (with --rate:\n"
          "'LABEL flows/s', ...). svg and png are drawn by gnuplot (Debian: gnuplot-nox), one panel\n"
          "per measure, one line per filter.\n"
          "\n"
          "examples:\n"
          "  bitarc graph -r /srv/flows -t 2024/07/11.00:00-2024/07/12.00:00 --bin 5m -o csv\n"
          "  bitarc graph -r /srv/flows -t 24h -l web -l dns 'port in [80 443]' 'port 53' --out day.svg\n"
          "  bitarc graph -r rtr1 -r rtr2 -t 2h --bin 1m --measure flows --rate 'proto tcp' 'proto udp'\n"
          "  bitarc graph -M /data/rtr1:rtr2 -t 7d --measure bytes --out week.png --size 1600x400\n"
          "  bitarc graph -r /srv/flows -t -3600 'dst port 445 and flags S and not flags A' -o csv\n"
          "  bitarc graph -r /srv/flows -t 24h -s dstport/bytes -n 5 'proto tcp' --out top-ports.svg\n"
          "\n"
          "exit status: 0 ok, 1 damaged blocks were skipped, 2 bad usage or input (or gnuplot\n"
          "missing for svg/png).\n");
}

typedef struct gopts {
  qstores_t stores;
  const char *mdirs, *window, *bin, *measure, *ofmt, *out, *title, *size, *stat;
  size_t topn;
  const char *labels[GRAPH_MAX_FILTERS];
  int nlabels, local, rate, logscale, threads;
} gopts_t;

enum { O_TZ = 1000, O_BIN, O_MEASURE, O_RATE, O_OUT, O_TITLE, O_SIZE, O_LOG, O_THREADS };

static int parse_opts(int argc, char **argv, gopts_t *o) {
  static const struct option longopts[] = {
    {"store", required_argument, NULL, 'r'},     {"window", required_argument, NULL, 't'},
    {"tz", required_argument, NULL, O_TZ},       {"bin", required_argument, NULL, O_BIN},
    {"measure", required_argument, NULL, O_MEASURE}, {"rate", no_argument, NULL, O_RATE},
    {"label", required_argument, NULL, 'l'},     {"output", required_argument, NULL, 'o'},
    {"out", required_argument, NULL, O_OUT},     {"title", required_argument, NULL, O_TITLE},
    {"size", required_argument, NULL, O_SIZE},   {"log", no_argument, NULL, O_LOG},
    {"threads", required_argument, NULL, O_THREADS}, {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
  };
  int c, rc = 0;
  optind = 1;
  while (rc == 0 && (c = getopt_long(argc, argv, "r:R:M:t:l:o:s:n:h", longopts, NULL)) != -1) {
    switch (c) {
      case 'r': case 'R': rc = qs_add(&o->stores, optarg); break;
      case 'M': o->mdirs = optarg; break;
      case 't': o->window = optarg; break;
      case 'l':
        if (o->nlabels == GRAPH_MAX_FILTERS) {
          ba_cli_err("graph", "at most %d --label", GRAPH_MAX_FILTERS);
          rc = 2;
        } else {
          o->labels[o->nlabels++] = optarg;
        }
        break;
      case 'o': o->ofmt = optarg; break;
      case 's': o->stat = optarg; break;
      case 'n': {
        char *end;
        unsigned long v = strtoul(optarg, &end, 10);
        if (*end || end == optarg || v < 1 || v > GRAPH_MAX_FILTERS - 1) {
          ba_cli_err("graph", "-n '%s': want 1..%d values", optarg, GRAPH_MAX_FILTERS - 1);
          rc = 2;
        } else {
          o->topn = v;
        }
        break;
      }
      case O_OUT: o->out = optarg; break;
      case O_BIN: o->bin = optarg; break;
      case O_MEASURE: o->measure = optarg; break;
      case O_RATE: o->rate = 1; break;
      case O_TITLE: o->title = optarg; break;
      case O_SIZE: o->size = optarg; break;
      case O_LOG: o->logscale = 1; break;
      case O_TZ: rc = qs_opt_tz("graph", optarg, &o->local); break;
      case O_THREADS: rc = qs_opt_threads("graph", optarg, &o->threads); break;
      case 'h': usage(stdout); return 1;
      default: usage(stderr); return 2;
    }
  }
  if (rc == 0 && o->mdirs) rc = qs_merge_m(&o->stores, "graph", o->mdirs);
  return rc;
}

static int parse_measures(const char *s, unsigned *out) {
  *out = 0;
  if (!s) {
    *out = BA_SERIES_FLOWS | BA_SERIES_PACKETS | BA_SERIES_BYTES;
    return 0;
  }
  char buf[128];
  snprintf(buf, sizeof(buf), "%s", s);
  for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
    if (!strcmp(t, "flows")) *out |= BA_SERIES_FLOWS;
    else if (!strcmp(t, "packets")) *out |= BA_SERIES_PACKETS;
    else if (!strcmp(t, "bytes")) *out |= BA_SERIES_BYTES;
    else {
      ba_cli_err("graph", "--measure %s: unknown measure '%s' (flows, packets, bytes)", s, t);
      return 2;
    }
  }
  if (!*out) {
    ba_cli_err("graph", "--measure '%s' names no measure (flows, packets, bytes)", s);
    return 2;
  }
  return 0;
}

/* The default interval: the smallest of a few round widths giving at most
 * 300 intervals (nfsen: 5 min over a day). */
static uint64_t default_bin(uint64_t span_ns) {
  static const uint64_t w[] = {60, 300, 900, 1800, 3600, 7200, 21600, 86400};
  for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
    if (span_ns / (w[i] * NS) + 1 <= 300) return w[i] * NS;
  return 86400 * NS * (span_ns / (86400 * NS * 300) + 1);
}

/* bitarc's "3h", "45m", "2d" (digits and one unit). */
static int is_relative(const char *s) {
  size_t n = strspn(s, "0123456789");
  return n > 0 && s[n] && strchr("smhdwSMHDW", s[n]) && !s[n + 1];
}

/* -t (or the data range) and --bin into start, bin and count. */
static int resolve_window(const gopts_t *op, uint64_t now_ns, gdata_t *d) {
  uint64_t lo = 0, hi = 0;
  int have_data = qs_data_range(&op->stores, &lo, &hi) == 0;
  uint64_t start, end; /* [start, end) */
  int widen = 1;
  if (op->window) {
    ba_query_window_t w;
    if (qs_parse_window("graph", op->window, now_ns, op->local, &w)) return 2;
    if (w.rel_s) {
      uint64_t dl = (uint64_t)(w.rel_s < 0 ? -w.rel_s : w.rel_s) * NS;
      if (!have_data) lo = hi = 0;
      start = w.rel_s > 0 ? lo : (hi + 1 > dl ? hi + 1 - dl : 0);
      end = w.rel_s > 0 ? lo + dl : hi + 1;
    } else {
      start = w.start_ns;
      widen = is_relative(op->window); /* "3h": the last 3 hours before now */
      end = w.end_ns != UINT64_MAX ? w.end_ns : have_data && hi >= start ? hi + 1 : start + 1;
    }
  } else {
    if (!have_data) {
      ba_cli_err("graph", "the stores hold no flows (give -t to graph an empty window)");
      return 2;
    }
    start = lo;
    end = hi + 1;
  }
  if (end <= start) {
    ba_cli_err("graph", "time window '%s' is empty (its end is not after its start)", op->window);
    return 2;
  }
  uint64_t bin;
  if (op->bin) {
    long s = ba_cli_parse_seconds(op->bin);
    if (s <= 0) {
      ba_cli_err("graph", "--bin '%s' is not a duration of at least 1 s (e.g. 300, 5m, 1h, 1d)", op->bin);
      return 2;
    }
    bin = (uint64_t)s * NS;
  } else {
    bin = default_bin(end - start);
  }
  if (widen) { /* whole intervals of the epoch, as nfsen's 5-minute slots */
    start -= start % bin;
    end = end % bin ? end + (bin - end % bin) : end;
  }
  uint64_t n = (end - start) / bin + ((end - start) % bin != 0);
  if (n > MAX_BINS) {
    ba_cli_err("graph", "%llu intervals of --bin %s over the window: at most %u (give a wider --bin)",
               (unsigned long long)n, op->bin ? op->bin : "?", MAX_BINS);
    return 2;
  }
  d->start_ns = start;
  d->bin_ns = bin;
  d->nbins = (size_t)n;
  return 0;
}

static int compile(const char *text, uint64_t now_ns, ba_query_t **q) {
  if (ba_query_create(q) < 0) return 2;
  ba_query_set_now(*q, now_ns);
  int rc = ba_query_compile(*q, text);
  if (rc == BA_ERR_SYNTAX) {
    ba_cli_err("graph", "bad filter '%s': %s (column %zu)", text, ba_query_errmsg(*q), ba_query_errcol(*q) + 1);
    return 2;
  }
  if (rc < 0) {
    ba_cli_err("graph", "cannot compile the filter '%s': %s", text, ba_strerror(rc));
    return 2;
  }
  return 0;
}

/* Warnings name the store; each is printed once (ba_query_series passes
 * each once per call, and every filter meets the same damage again). */
typedef struct gwarn {
  const qstores_t *stores;
  size_t cur;
  uint64_t seen[64]; /* hashes of the messages printed */
  size_t nseen;
} gwarn_t;

static void warn_cb(void *ctx, const char *msg) {
  gwarn_t *w = ctx;
  uint64_t h = 1469598103934665603ull ^ w->cur;
  for (const char *p = msg; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  for (size_t i = 0; i < w->nseen; i++)
    if (w->seen[i] == h) return;
  if (w->nseen < sizeof(w->seen) / sizeof(w->seen[0])) w->seen[w->nseen++] = h;
  ba_cli_err("graph", "warning: store '%s': %s", qs_name(w->stores, w->cur), msg);
}

/* One series per filter, summed over the stores. Returns 0, 1 (damage
 * skipped) or 2. */
static int compute(const gopts_t *op, int nfilt, char **filters, const char *const *labels, int nlabels,
                   uint64_t now_ns, gdata_t *d) {
  int ret = 0;
  ba_query_series_opts_t so;
  ba_query_series_opts_init(&so);
  so.start_ns = d->start_ns;
  so.bin_ns = d->bin_ns;
  so.nbins = d->nbins;
  so.measures = d->measures;
  so.threads = op->threads;
  so.warn = warn_cb;
  gwarn_t wc = {.stores = &op->stores};
  so.warn_ctx = &wc;
  ba_query_series_bin_t *tmp = calloc(d->nbins ? d->nbins : 1, sizeof(*tmp));
  if (!tmp) return 2;
  for (int f = 0; f < (nfilt ? nfilt : 1) && ret < 2; f++) {
    const char *text = nfilt ? filters[f] : "any";
    gseries_t *s = &d->s[d->n];
    s->label = strdup(f < nlabels ? labels[f] : text);
    s->bins = calloc(d->nbins ? d->nbins : 1, sizeof(*s->bins));
    d->n++;
    ba_query_t *q = NULL;
    if (!s->label || !s->bins || compile(text, now_ns, &q) != 0) {
      ba_query_free(q);
      ret = 2;
      break;
    }
    for (size_t st = 0; st < op->stores.n; st++) {
      wc.cur = st;
      ba_query_stats_t qs;
      int rc = ba_query_series(q, &op->stores.st[st], 1, &so, tmp, &qs);
      if (rc < 0) {
        ba_cli_err("graph", "store '%s', filter '%s': %s", qs_name(&op->stores, st), text, ba_strerror(rc));
        if (ba_store_errmsg(op->stores.st[st])[0])
          ba_cli_err("graph", "store '%s': %s", qs_name(&op->stores, st), ba_store_errmsg(op->stores.st[st]));
        ret = 2;
        break;
      }
      if (qs.rows_damaged || qs.segments_damaged) ret = 1;
      for (size_t k = 0; k < d->nbins; k++) {
        s->bins[k].flows += tmp[k].flows;
        s->bins[k].packets += tmp[k].packets;
        s->bins[k].bytes += tmp[k].bytes;
      }
    }
    ba_query_free(q);
  }
  free(tmp);
  if (ret == 1) ba_cli_err("graph", "damaged blocks or segments were skipped (see the warnings; run bitarc verify)");
  return ret;
}

/* -o, or --out's suffix, or csv. */
static int output_kind(const gopts_t *op, const char **kind) {
  const char *k = op->ofmt;
  if (!k && op->out) {
    const char *dot = strrchr(op->out, '.');
    k = dot && (!strcasecmp(dot, ".svg") || !strcasecmp(dot, ".png")) ? dot + 1 : "csv";
  }
  if (!k) k = "csv";
  if (!strcasecmp(k, "csv")) *kind = "csv";
  else if (!strcasecmp(k, "svg")) *kind = "svg";
  else if (!strcasecmp(k, "png")) *kind = "png";
  else {
    ba_cli_err("graph", "-o '%s': unknown output (csv, svg or png)", k);
    return 2;
  }
  if (!strcmp(*kind, "png") && (!op->out || !strcmp(op->out, "-")) && isatty(STDOUT_FILENO)) {
    ba_cli_err("graph", "-o png: give --out FILE (not writing a PNG to a terminal)");
    return 2;
  }
  return 0;
}

static int parse_size(const gopts_t *op, unsigned npanels, gplot_t *p) {
  p->width = 1000;
  p->height = 250 * npanels + 80;
  if (!op->size) return 0;
  unsigned w, h;
  char tail;
  if (sscanf(op->size, "%ux%u%c", &w, &h, &tail) != 2 || w < 100 || h < 100 || w > 20000 || h > 20000) {
    ba_cli_err("graph", "--size '%s': want WIDTHxHEIGHT in pixels, each 100..20000 (e.g. 1200x800)", op->size);
    return 2;
  }
  p->width = w;
  p->height = h;
  return 0;
}

static int write_output(const gopts_t *op, const gdata_t *d, const char *kind) {
  if (strcmp(kind, "csv") != 0) {
    gplot_t p = {op->title, 0, 0, op->logscale};
    unsigned np = (unsigned)__builtin_popcount(d->measures);
    if (parse_size(op, np, &p) != 0) return 2;
    return graph_draw(d, &p, kind, op->out ? op->out : "-");
  }
  FILE *f = stdout;
  if (op->out && strcmp(op->out, "-") && !(f = fopen(op->out, "w"))) {
    ba_cli_err("graph", "cannot create '%s': %s", op->out, strerror(errno));
    return 2;
  }
  int bad = graph_write_csv(d, f) < 0;
  if (f != stdout) bad |= fclose(f) != 0;
  else bad |= fflush(f) != 0;
  if (bad) {
    ba_cli_err("graph", "cannot write '%s': %s", op->out ? op->out : "standard output", strerror(errno));
    return 2;
  }
  return 0;
}

int ba_cmd_graph(int argc, char **argv) {
#ifdef __GLIBC__
  /* Every bin run reads a segment's index into buffers freed at its end:
   * keep them in the heap instead of mapping them again (see cmd_query.c). */
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
  gopts_t op = {.local = 1, .threads = qs_default_threads()};
  gdata_t d = {0};
  int ret = parse_opts(argc, argv, &op);
  if (ret) {
    qs_free(&op.stores);
    return ret == 1 ? 0 : ret;
  }
  int nfilt = argc - optind;
  const char *kind = "csv";
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  uint64_t now_ns = (uint64_t)now.tv_sec * NS + (uint64_t)now.tv_nsec;
  ret = 2;
  if (!op.stores.n) {
    ba_cli_err("graph", "-r DIR (a store; -r again or -M for several) is required (see bitarc graph --help)");
    goto done;
  }
  if (nfilt > GRAPH_MAX_FILTERS) {
    ba_cli_err("graph", "%d filters: at most %d series in one graph", nfilt, GRAPH_MAX_FILTERS);
    goto done;
  }
  if (op.nlabels > (nfilt ? nfilt : 1)) {
    ba_cli_err("graph", "%d --label for %d filters (label '%s' has no filter)", op.nlabels, nfilt ? nfilt : 1,
               op.labels[nfilt ? nfilt : 1]);
    goto done;
  }
  if (op.stat && (nfilt > 1 || op.nlabels)) {
    ba_cli_err("graph", "-s draws the top values of one filter: %s", op.nlabels ? "--label does not apply (the values label the series)" : "give at most one FILTER");
    goto done;
  }
  if (op.topn && !op.stat) {
    ba_cli_err("graph", "-n %zu: only with -s STAT", op.topn);
    goto done;
  }
  if (parse_measures(op.measure, &d.measures) != 0 || output_kind(&op, &kind) != 0) goto done;
  if (qs_open(&op.stores) != 0 || resolve_window(&op, now_ns, &d) != 0) goto done;
  d.rate = op.rate;
  d.local = op.local;
  if (op.stat) {
    gtop_t top;
    const char *filt = nfilt ? argv[optind] : "any";
    if (graph_top_filters(&op.stores, op.stat, op.topn ? op.topn : 10, filt, now_ns, d.start_ns,
                          d.start_ns + d.nbins * d.bin_ns, &top) != 0)
      goto done;
    d.stacked = 1;
    ret = compute(&op, (int)top.n, top.filters, (const char *const *)top.labels, (int)top.n, now_ns, &d);
    graph_top_free(&top);
  } else {
    ret = compute(&op, nfilt, argv + optind, op.labels, op.nlabels, now_ns, &d);
  }
  if (ret < 2) {
    int w = write_output(&op, &d, kind);
    if (w) ret = w;
  }
done:
  for (size_t i = 0; i < d.n; i++) {
    free(d.s[i].label);
    free(d.s[i].bins);
  }
  qs_free(&op.stores);
  return ret;
}

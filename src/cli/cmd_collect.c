/* bitarc collect: NetFlow v5/v9 and IPFIX over UDP into a store. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bitarc/bitarc.h"
#include "bitarc/ingest.h"
#include "bitarc/store.h"
#include "cli/cli.h"
#include "cli/collect_cluster.h"
#include "cli/collect_report.h"
#include "cli/collect_retention.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: bitarc collect --store DIR [--listen ADDR:PORT ...] [options]\n"
          "\n"
          "Receives NetFlow v5, v9 and IPFIX datagrams from any number of exporters and\n"
          "archives and indexes the flows as they arrive. Templates are kept per exporter\n"
          "and source id / observation domain; data that arrives before its template is\n"
          "held briefly. Receive threads drain the sockets into a bounded queue so a slow\n"
          "disk does not make the kernel drop datagrams; when the queue is full, datagrams\n"
          "are dropped and counted per exporter (queue-full). Memory is bounded by that\n"
          "queue, the index of each open slice's segment and of the one segment being\n"
          "finished, each at most --segment-rows rows (with the defaults, a peak of\n"
          "2.8 GiB was measured under 5 M flows/s for 60 s).\n"
          "Signals: SIGINT/SIGTERM (Ctrl-C) stop receiving, read what is still waiting in\n"
          "the sockets (until they are empty, at most --stop-drain), store it, then flush\n"
          "and close the store cleanly; the report counts what was read at stop and what\n"
          "was dropped because the drain time ran out (stop-timeout). SIGHUP\n"
          "reopens the --log file (for log rotation), makes finished blocks durable and\n"
          "rewrites the --stats file, and collecting goes on.\n"
          "\n"
          "options (each may be given once, except --listen):\n"
          "  -w, --store DIR        the store to write (created if missing; required)\n"
          "  -l, --listen ADDR      UDP address; repeat for several (default 127.0.0.1:2055;\n"
          "                         [::]:2055 for all IPv6 and IPv4 exporters, 0.0.0.0:9995,\n"
          "                         port 0 = any free port); tcp:ADDR for IPFIX over TCP\n"
          "                         (RFC 7011; e.g. tcp:0.0.0.0:4739, softflowd -P tcp)\n"
          "      --rx-threads N     receive sockets and threads per address, sharing it with\n"
          "                         SO_REUSEPORT (default 1, at most %d sockets in all)\n"
          "      --rcvbuf BYTES     socket receive buffer to ask for (default 64M; as root the\n"
          "                         kernel's net.core.rmem_max does not apply; a warning names\n"
          "                         the size granted when the kernel gives less)\n"
          "      --rebase-time      move every flow by (receive time - export time) of its\n"
          "                         datagram, for exporters whose clock is wrong (default off:\n"
          "                         flows keep the times sent; the report names exporters whose\n"
          "                         clock looks wrong either way)\n"
          "      --queue BYTES      bound of the receive queue, all sockets together (default\n"
          "                         256M)\n"
          "      --stop-drain D     at SIGINT/SIGTERM, read the sockets until empty for at most\n"
          "                         D (default 2s; 500ms, 10s, ...)\n"
          "      --status-every D   status line on stderr (or --log) every D: flows/s, queue\n"
          "                         fill, drops (default 10s, 0 = off; --report-every is the\n"
          "                         old name)\n"
          "      --stats FILE       keep FILE a JSON document of the counters (per socket and\n"
          "                         exporter), replaced atomically (temp file + rename)\n"
          "      --stats-every D    how often --stats and the store's report are rewritten\n"
          "                         (default 5s); the store always keeps the last report,\n"
          "                         per socket, exporter and template, in DIR/collector.txt\n"
          "                         and DIR/collector.json ('bitarc stat' shows it)\n"
          "      --log FILE         status lines and reports go to FILE (appended) instead of\n"
          "                         stderr; SIGHUP reopens it (default: stderr)\n"
          "      --sync-every D     make finished blocks durable every D (default 10s, 0 = only\n"
          "                         at close)\n"
          "      --live-every D     make every record readable by `bitarc query` within D of\n"
          "                         its arrival: a row group not full after D is written to the\n"
          "                         journal early (default 1s; 500ms, 2s, ...; 0 = only full\n"
          "                         groups, as before); with --reorder olsh the reordering\n"
          "                         buffer is emptied after D too (0: it reorders more rows)\n"
          "      --duration D       stop by itself after D (e.g. 30s, 2h; default: run until a\n"
          "                         signal)\n"
          "      --report FMT       final report as text (default, stderr or --log) or json\n"
          "                         (stdout)\n"
          "  -q, --quiet            only errors and warnings\n"
          "  -h, --help             this text\n"
          "%s"
          "%s"
          "%s"
          "\n"
          "examples:\n"
          "  bitarc collect --store /var/lib/bitarc/flows --listen 0.0.0.0:2055 --listen 0.0.0.0:4739\n"
          "  bitarc collect --store st --listen [::]:4739 --rx-threads 2 --stats /run/bitarc.json\n"
          "  bitarc collect --store st --listen 0.0.0.0:4739 --listen tcp:0.0.0.0:4739\n"
          "  softflowd -r trace.pcap -n 127.0.0.1:2055 -v 10 & bitarc collect --store st --duration 30s\n"
          "  bitarc collect --store /var/lib/bitarc/flows --listen 0.0.0.0:2055 --max-age 30d --max-size 500G\n"
          "  bitarc collect --store /var/lib/bitarc/flows --listen 0.0.0.0:2055 --cluster\n"
          "\n"
          "Byte sizes accept K, M, G. Durations accept s, m, h, d.\n",
          BA_COLLECTOR_MAX_SOCKETS, BA_CLI_STORE_HELP, BA_CLI_RETENTION_HELP, BA_CLI_CLUSTER_HELP);
}

static volatile sig_atomic_t g_stop, g_hup;
static void on_signal(int sig) {
  if (sig == SIGHUP) g_hup = 1;
  else g_stop = 1;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long long parse_bytes(const char *s) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || v < 0) return -1;
  double m = 1;
  if (*end == 'K' || *end == 'k') m = 1024.0, end++;
  else if (*end == 'M' || *end == 'm') m = 1048576.0, end++;
  else if (*end == 'G' || *end == 'g') m = 1073741824.0, end++;
  if (*end == 'i' && end[1] == 'B') end += 2;
  else if (*end == 'B') end++;
  if (*end) return -1;
  v *= m;
  return v > 1099511627776.0 ? -1 : (long long)v;
}

typedef struct col {
  ba_store_writer_t *w;
  uint64_t stored;
  int store_rc;
} col_t;

static int sink(void *ctx, const ba_record_t *r, size_t n) {
  col_t *c = ctx;
  int rc = ba_store_writer_append(c->w, r, n);
  if (rc) {
    if (!c->store_rc) c->store_rc = rc;
    return rc;
  }
  c->stored += n;
  return 0;
}

/* Everything the options set. */
typedef struct copts {
  const char *store, *stats, *log;
  ba_collector_opts_t co;
  ba_store_opts_t so;
  long every, stats_every, sync_every, duration;
  uint64_t live_ns; /* --live-every */
  int quiet, json;
  ba_cli_retention_t ret; /* --max-age, --max-size, --expire-every */
  ba_cli_cluster_t cl;    /* --cluster, --cluster-memory */
} copts_t;

enum {
  O_RCVBUF = 1, O_QUEUE, O_EVERY, O_SYNC, O_DURATION, O_REPORT, O_STATS, O_STATS_EVERY, O_LOG, O_RXT, O_REBASE, O_LIVE,
  O_STOP_DRAIN
};
static const struct option g_lo[] = {{"store", required_argument, 0, 'w'},
                                     {"listen", required_argument, 0, 'l'},
                                     {"rx-threads", required_argument, 0, O_RXT},
                                     {"rcvbuf", required_argument, 0, O_RCVBUF},
                                     {"queue", required_argument, 0, O_QUEUE},
                                     {"status-every", required_argument, 0, O_EVERY},
                                     {"report-every", required_argument, 0, O_EVERY},
                                     {"stats", required_argument, 0, O_STATS},
                                     {"stats-every", required_argument, 0, O_STATS_EVERY},
                                     {"log", required_argument, 0, O_LOG},
                                     {"sync-every", required_argument, 0, O_SYNC},
                                     {"live-every", required_argument, 0, O_LIVE},
                                     {"stop-drain", required_argument, 0, O_STOP_DRAIN},
                                     {"duration", required_argument, 0, O_DURATION},
                                     {"report", required_argument, 0, O_REPORT},
                                     {"rebase-time", no_argument, 0, O_REBASE},
                                     {"quiet", no_argument, 0, 'q'},
                                     {"help", no_argument, 0, 'h'},
                                     BA_CLI_STORE_LONGOPTS,
                                     BA_CLI_RETENTION_LONGOPTS,
                                     BA_CLI_CLUSTER_LONGOPTS,
                                     {0, 0, 0, 0}};

/* Name of an option for messages ("--queue", "-q"). */
static void opt_name(int c, int idx, char *buf, size_t len) {
  if (idx >= 0) snprintf(buf, len, "--%s", g_lo[idx].name);
  else snprintf(buf, len, "-%c", c);
}

/* Refuses a second use of an option that holds one value (--listen may repeat).
 * --status-every and --report-every are one option. */
static int once(int c, int idx, int *seen, size_t *nseen) {
  if (c == 'l') return 0;
  for (size_t i = 0; i < *nseen; i++)
    if (seen[i] == c) {
      char n[40];
      opt_name(c, idx, n, sizeof(n));
      ba_cli_err("collect", "%s is given more than once (it takes one value; only --listen may repeat)", n);
      return 2;
    }
  seen[(*nseen)++] = c;
  return 0;
}

static int parse_value(int c, const char *arg, copts_t *o) {
  long v;
  long long b;
  switch (c) {
  case O_RCVBUF:
  case O_QUEUE:
    b = parse_bytes(arg);
    if (b <= 0 || (c == O_RCVBUF && b > 2147483647LL)) {
      ba_cli_err("collect", "--%s '%s' is not a byte size (e.g. 64M%s)", c == O_RCVBUF ? "rcvbuf" : "queue", arg,
                 c == O_RCVBUF ? ", at most 2G" : "");
      return 2;
    }
    if (c == O_RCVBUF) o->co.rcvbuf_bytes = (uint32_t)b;
    else o->co.queue_bytes = (uint64_t)b;
    return 0;
  case O_LIVE:
  case O_STOP_DRAIN: {
    /* milliseconds matter here: "500ms", "1s", "2" (seconds) */
    char *end = NULL;
    double d = strtod(arg, &end);
    double unit = !strcmp(end, "ms") ? 1e6 : (!strcmp(end, "s") || !*end) ? 1e9 : !strcmp(end, "m") ? 60e9
                  : !strcmp(end, "h") ? 3600e9 : 0;
    if (end == arg || unit == 0 || !(d >= 0) || d * unit > 3600e9 || (c == O_STOP_DRAIN && d * unit < 1e6)) {
      ba_cli_err("collect", "--%s '%s' is not a duration from %s to 1h (e.g. 500ms, 1s)",
                 c == O_LIVE ? "live-every" : "stop-drain", arg, c == O_LIVE ? "0" : "1ms");
      return 2;
    }
    if (c == O_LIVE) o->live_ns = (uint64_t)(d * unit);
    else o->co.stop_drain_ms = (uint32_t)(d * unit / 1e6);
    return 0;
  }
  case O_RXT:
    v = strtol(arg, NULL, 10);
    if (v < 1 || v > BA_COLLECTOR_MAX_SOCKETS || strspn(arg, "0123456789") != strlen(arg)) {
      ba_cli_err("collect", "--rx-threads '%s' is not a number from 1 to %d", arg, BA_COLLECTOR_MAX_SOCKETS);
      return 2;
    }
    o->co.sockets = (unsigned)v;
    return 0;
  default: /* durations */
    v = ba_cli_parse_seconds(arg);
    if (v < 0 || (c == O_STATS_EVERY && v == 0)) {
      ba_cli_err("collect", "'%s' is not a duration (e.g. 10s, 5m, 1h)%s", arg,
                 c == O_STATS_EVERY ? "; --stats-every must be at least 1s" : "");
      return 2;
    }
    if (c == O_EVERY) o->every = v;
    else if (c == O_SYNC) o->sync_every = v;
    else if (c == O_STATS_EVERY) o->stats_every = v;
    else o->duration = v;
    return 0;
  }
}

/* Parses argv into o; 0, 1 for --help (exit 0), or 2 after an error. */
static int parse_args(int argc, char **argv, copts_t *o) {
  int seen[64], c, idx;
  size_t nseen = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, "w:l:qh", g_lo, (idx = -1, &idx))) != -1) {
    if (c != '?' && c != 'h' && once(c, idx, seen, &nseen)) return 2;
    switch (c) {
    case 'w': o->store = optarg; break;
    case 'l':
      if (o->co.nlisten == BA_COLLECTOR_MAX_LISTEN) {
        ba_cli_err("collect", "more than %d --listen addresses", BA_COLLECTOR_MAX_LISTEN);
        return 2;
      }
      o->co.listens[o->co.nlisten++] = optarg;
      break;
    case O_RCVBUF: case O_QUEUE: case O_RXT: case O_EVERY: case O_SYNC: case O_DURATION: case O_STATS_EVERY:
    case O_LIVE: case O_STOP_DRAIN:
      if (parse_value(c, optarg, o)) return 2;
      break;
    case O_STATS: o->stats = optarg; break;
    case O_LOG: o->log = optarg; break;
    case O_REBASE: o->co.decoder.flags |= BA_FLOW_REBASE_TIME; break;
    case O_REPORT:
      if (ba_cli_parse_report("collect", optarg, &o->json)) return 2;
      break;
    case 'q': o->quiet = 1; break;
    case 'h': usage(stdout); return 1;
    case '?': usage(stderr); return 2;
    case BA_CLI_OPT_MAX_AGE: case BA_CLI_OPT_MAX_SIZE: case BA_CLI_OPT_EXPIRE_EVERY:
      if (ba_cli_retention_opt(c, optarg, &o->ret)) return 2;
      break;
    case BA_CLI_OPT_CLUSTER: case BA_CLI_OPT_CLUSTER_MEMORY:
      if (ba_cli_cluster_opt(c, optarg, &o->cl)) return 2;
      break;
    default:
      if (ba_cli_store_opt("collect", c, optarg, &o->so)) return 2;
    }
  }
  if (optind < argc) {
    ba_cli_err("collect", "unexpected argument '%s'", argv[optind]);
    return 2;
  }
  if (!o->store) {
    ba_cli_err("collect", "--store DIR is required");
    return 2;
  }
  return 0;
}

typedef struct run {
  copts_t *o;
  ba_collector_t *coll;
  col_t cs;
  FILE *log; /* stderr or the --log file */
  uint64_t t0;
  uint64_t st_prev, sf_prev; /* stored at the last status line / stats file */
  double st_secs, sf_secs;
  int report_warned; /* the store's report could not be written (said once) */
  uint64_t live_blocks, live_bytes; /* LIVE blocks written so far (kept past the writer's close) */
} run_t;

static double run_secs(const run_t *r) { return (double)(now_ns() - r->t0) / 1e9; }

/* A line for the operator: to the log, and to stderr too when the log is a file. */
static void say(run_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(run_t *r, const char *fmt, ...) {
  va_list ap;
  for (int k = 0; k < 2; k++) {
    FILE *f = k ? stderr : r->log;
    if (k && r->log == stderr) break;
    va_start(ap, fmt);
    fputs("bitarc collect: ", f);
    vfprintf(f, fmt, ap);
    fputc('\n', f);
    fflush(f);
    va_end(ap);
  }
}

static int open_log(run_t *r) {
  if (!r->o->log) {
    r->log = stderr;
    return 0;
  }
  FILE *f = fopen(r->o->log, "a");
  if (!f) {
    ba_cli_err("collect", "cannot open log '%s': %s", r->o->log, strerror(errno));
    return 2;
  }
  setvbuf(f, NULL, _IOLBF, 0);
  if (r->log && r->log != stderr) fclose(r->log);
  r->log = f;
  return 0;
}

static long long rmem_max(void) {
  FILE *f = fopen("/proc/sys/net/core/rmem_max", "r");
  long long v = -1;
  if (f) {
    if (fscanf(f, "%lld", &v) != 1) v = -1;
    fclose(f);
  }
  return v;
}

/* "listening on" per address, and a warning where the kernel capped the buffer. */
static void announce(run_t *r) {
  ba_collector_socket_t so[BA_COLLECTOR_MAX_SOCKETS];
  size_t n = ba_collector_sockets(r->coll, so, BA_COLLECTOR_MAX_SOCKETS);
  char asked[32], got[32], q[32];
  ba_coll_fmt_bytes(q, sizeof(q), r->o->co.queue_bytes ? r->o->co.queue_bytes : BA_COLLECTOR_DEFAULT_QUEUE);
  for (size_t i = 0; i < n; i++) {
    if (i && so[i].listen == so[i - 1].listen) continue; /* the address's other sockets */
    size_t k = 1;
    while (i + k < n && so[i + k].listen == so[i].listen) k++;
    ba_coll_fmt_bytes(asked, sizeof(asked), so[i].rcvbuf_asked);
    ba_coll_fmt_bytes(got, sizeof(got), so[i].rcvbuf_granted);
    if (so[i].tcp) {
      if (!r->o->quiet)
        say(r, "listening on tcp:%s (IPFIX over TCP, up to %d connections), queue bound %s, store %s",
            so[i].address, BA_RX_TCP_CONNECTIONS, q, r->o->store);
      continue;
    }
    if (!r->o->quiet)
      say(r, "listening on %s (%zu socket%s, receive buffer %s asked, %s granted), queue bound %s, store %s",
          so[i].address, k, k > 1 ? "s" : "", asked, got, q, r->o->store);
    if (so[i].rcvbuf_granted < so[i].rcvbuf_asked) {
      long long m = rmem_max();
      say(r, "warning: the kernel granted a receive buffer of only %s for %s, not the %s asked; without root "
          "(CAP_NET_ADMIN) it caps it at net.core.rmem_max = %lld (raise it: sysctl -w net.core.rmem_max=%u). "
          "Bursts beyond it are dropped by the kernel (see 'kernel drops').",
          got, so[i].address, asked, m, so[i].rcvbuf_asked);
    }
  }
}

/* The --stats file (if asked for) and the store's own copy of the report:
 * DIR/collector.json and DIR/collector.txt, what `bitarc stat` shows. */
/* The writer's LIVE block counts into r (while the writer is open). */
static void live_counts(run_t *r) {
  if (r->cs.w) ba_store_writer_live_stats(r->cs.w, &r->live_blocks, &r->live_bytes);
}

/* collect --cluster's counts into s. */
static void cluster_counts(const run_t *r, ba_coll_snap_t *s) {
  const ba_cli_cluster_t *c = &r->o->cl;
  s->cluster_on = c->on;
  s->clustered = c->clustered;
  s->cluster_skipped = c->skipped;
  s->cluster_failed = c->failed;
}

static void write_stats(run_t *r, int final) {
  ba_coll_snap_t s;
  ba_coll_snap_take(r->coll, r->cs.stored, run_secs(r), 1, &s, &r->sf_prev, &r->sf_secs);
  cluster_counts(r, &s);
  live_counts(r);
  s.live_blocks = r->live_blocks;
  s.live_bytes = r->live_bytes;
  s.final = final;
  if (final) s.rate = s.secs > 0 ? (double)s.stored / s.secs : 0; /* the whole run's */
  if (r->o->stats && ba_coll_stats_write(r->o->stats, &s) != 0)
    say(r, "warning: cannot write stats file '%s': %s", r->o->stats, strerror(errno));
  char path[4096];
  static const char *const names[2] = {BA_STORE_COLLECTOR_JSON, BA_STORE_COLLECTOR_TEXT};
  for (int k = 0; k < 2; k++) {
    int n = snprintf(path, sizeof(path), "%s/%s", r->o->store, names[k]);
    int rc = n < (int)sizeof(path) ? ba_coll_report_write(path, &s, k, 0600) : -1; /* store files are 0600 */
    if (rc != 0 && !r->report_warned) {
      say(r, "warning: cannot write the store's report '%s': %s", path, strerror(errno));
      r->report_warned = 1;
    }
  }
  ba_coll_snap_clear(&s);
}

static void status(run_t *r) {
  ba_coll_snap_t s;
  ba_coll_snap_take(r->coll, r->cs.stored, run_secs(r), 0, &s, &r->st_prev, &r->st_secs);
  cluster_counts(r, &s);
  ba_coll_status_line(r->log, &s);
}

static void on_hup(run_t *r) {
  g_hup = 0;
  int reopened = r->o->log && open_log(r) == 0;
  int rc = ba_store_writer_sync(r->cs.w);
  write_stats(r, 0);
  if (!r->o->quiet)
    say(r, "SIGHUP: %s, store %s, collecting goes on", reopened ? "log reopened" : "log flushed",
        rc ? "sync failed" : "synced");
  fflush(r->log);
}

static void on_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
}

static void retention_note(void *ctx, const char *line) { say(ctx, "%s", line); }

/* Receives until a signal, the duration or a store error; 0 or 2. */
static int collect_loop(run_t *r) {
  const copts_t *o = r->o;
  uint64_t last_rep = r->t0, last_sync = r->t0, last_stats = r->t0;
  while (!g_stop) {
    int rc = ba_collector_poll(r->coll, 200, sink, &r->cs);
    if (rc) {
      ba_cli_err("collect", "store '%s' refused records: %s: %s", o->store, ba_strerror(rc),
                 ba_store_writer_errmsg(r->cs.w));
      return 2;
    }
    if (g_hup) on_hup(r);
    if (o->live_ns && (rc = ba_store_writer_flush(r->cs.w, o->live_ns)) != 0) {
      ba_cli_err("collect", "store '%s': writing records for live queries: %s: %s", o->store, ba_strerror(rc),
                 ba_store_writer_errmsg(r->cs.w));
      return 2;
    }
    uint64_t now = now_ns();
    if (o->sync_every && now - last_sync >= (uint64_t)o->sync_every * 1000000000ull) {
      ba_store_writer_sync(r->cs.w);
      last_sync = now;
    }
    if (!o->quiet && o->every && now - last_rep >= (uint64_t)o->every * 1000000000ull) {
      status(r);
      last_rep = now;
    }
    if (now - last_stats >= (uint64_t)o->stats_every * 1000000000ull) {
      write_stats(r, 0);
      last_stats = now;
    }
    ba_cli_retention_tick(&r->o->ret, o->store, now, o->quiet, retention_note, r);
    r->o->cl.log_fd = fileno(r->log);
    ba_cli_cluster_tick(&r->o->cl, o->store, now, o->quiet, retention_note, r);
    if (o->duration && now - r->t0 >= (uint64_t)o->duration * 1000000000ull) break;
  }
  return 0;
}

int ba_cmd_collect(int argc, char **argv) {
  copts_t o;
  memset(&o, 0, sizeof(o));
  ba_collector_opts_init(&o.co);
  ba_store_opts_init(&o.so);
  o.every = 10;
  o.sync_every = 10;
  o.stats_every = 5;
  o.live_ns = 1000000000ull; /* cost: doc/format.md §5 */
  int prc = parse_args(argc, argv, &o);
  if (prc) return prc == 1 ? 0 : 2;
  run_t r;
  memset(&r, 0, sizeof(r));
  r.o = &o;
  if (open_log(&r)) return 2;
  if (ba_cli_writer_open("collect", o.store, &o.so, &r.cs.w)) {
    if (r.log != stderr) fclose(r.log);
    return 2;
  }
  if (ba_cli_cluster_begin(&o.cl, o.store)) {
    ba_cli_writer_close("collect", o.store, &r.cs.w);
    if (r.log != stderr) fclose(r.log);
    return 2;
  }
  char err[256];
  int rc = ba_collector_start(&o.co, &r.coll, err, sizeof(err));
  if (rc) {
    ba_cli_err("collect", "%s", err[0] ? err : ba_strerror(rc));
    ba_store_writer_close(r.cs.w);
    if (r.log != stderr) fclose(r.log);
    return 2;
  }
  on_signals();
  r.t0 = now_ns();
  announce(&r);
  write_stats(&r, 0);
  int status_rc = collect_loop(&r);
  rc = ba_collector_stop(r.coll, status_rc ? NULL : sink, &r.cs);
  if (rc && !status_rc) {
    ba_cli_err("collect", "store '%s' refused records: %s", o.store, ba_strerror(rc));
    status_rc = 2;
  }
  ba_cli_cluster_end(&o.cl, o.store, o.quiet, retention_note, &r);
  live_counts(&r);
  if (ba_cli_writer_close("collect", o.store, &r.cs.w)) status_rc = 2;
  ba_coll_snap_t s;
  uint64_t p0 = 0;
  double p1 = 0;
  ba_coll_snap_take(r.coll, r.cs.stored, run_secs(&r), 1, &s, &p0, &p1); /* rate: the whole run's */
  s.final = 1;
  cluster_counts(&r, &s);
  s.live_blocks = r.live_blocks;
  s.live_bytes = r.live_bytes;
  if (o.json) ba_coll_report_json(stdout, &s);
  else if (!o.quiet) ba_coll_report_text(r.log, &s);
  ba_coll_snap_clear(&s);
  write_stats(&r, 1);
  ba_collector_free(r.coll);
  if (r.log != stderr) fclose(r.log);
  return status_rc;
}

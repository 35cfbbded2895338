/* bitarc collect: NetFlow v5/v9 and IPFIX over UDP into a store. */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bitarc/bitarc.h"
#include "bitarc/ingest.h"
#include "bitarc/store.h"
#include "cli/cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: bitarc collect --store DIR [--listen ADDR:PORT] [options]\n"
          "\n"
          "Receives NetFlow v5, v9 and IPFIX datagrams from any number of exporters and\n"
          "archives and indexes the flows as they arrive. Templates are kept per exporter\n"
          "and source id / observation domain; data that arrives before its template is\n"
          "held briefly. A receive thread drains the socket into a bounded queue so a slow\n"
          "disk does not make the kernel drop datagrams. SIGINT/SIGTERM (Ctrl-C) flush and\n"
          "close the store cleanly.\n"
          "\n"
          "options:\n"
          "  -w, --store DIR       the store to write (created if missing)\n"
          "  -l, --listen ADDR     UDP address (default 127.0.0.1:2055; [::]:2055 for all\n"
          "                        IPv6 and IPv4 exporters, 0.0.0.0:9995, port 0 = any free)\n"
          "      --rcvbuf BYTES    socket receive buffer to ask for (default 64M)\n"
          "      --queue BYTES     receive queue between threads (default 64M)\n"
          "      --report-every D  progress report on stderr every D (default 10s, 0 = off)\n"
          "      --sync-every D    make finished blocks durable every D (default 10s)\n"
          "      --duration D      stop by itself after D (e.g. 30s, 2h)\n"
          "      --report FMT      final report as text (default, stderr) or json (stdout)\n"
          "  -q, --quiet           only errors\n"
          "%s"
          "\n"
          "examples:\n"
          "  bitarc collect --store /var/lib/bitarc/flows --listen 0.0.0.0:2055\n"
          "  bitarc collect --store st --listen [::]:4739 --codec compax --reorder olsh\n"
          "  softflowd -r trace.pcap -n 127.0.0.1:2055 -v 10 & bitarc collect --store st --duration 30s\n"
          "\n"
          "Byte sizes accept K, M, G. Reports show received, stored and dropped counts per\n"
          "reason, per exporter, and the kernel's drop count for the socket.\n",
          BA_CLI_STORE_HELP);
}

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long parse_bytes(const char *s) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || v < 0) return -1;
  double m = 1;
  if (*end == 'K' || *end == 'k') m = 1024.0, end++;
  else if (*end == 'M' || *end == 'm') m = 1048576.0, end++;
  else if (*end == 'G' || *end == 'g') m = 1073741824.0, end++;
  if (*end == 'B' || *end == 'i') end++;
  if (*end) return -1;
  v *= m;
  return v > 2147483647.0 ? -1 : (long)v;
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

static void report(FILE *f, ba_collector_t *coll, const col_t *c, double secs, int final) {
  ba_collector_stats_t st;
  ba_collector_get_stats(coll, &st);
  fprintf(f, "bitarc collect: %s%.0f s: received %" PRIu64 " datagrams (%" PRIu64 " bytes), stored %" PRIu64
          " flows (%.0f/s)", final ? "final, " : "", secs, st.received, st.received_bytes, c->stored,
          secs > 0 ? (double)c->stored / secs : 0.0);
  fprintf(f, ", kernel drops %s", st.kernel_drops < 0 ? "unknown" : "");
  if (st.kernel_drops >= 0) fprintf(f, "%" PRId64, st.kernel_drops);
  fprintf(f, "\n  decoder: ");
  ba_cli_print_counts(f, &st.counts);
  fputc('\n', f);
  if (final) {
    size_t n = ba_collector_sources(coll, NULL, 0);
    ba_flow_source_t *src = n ? calloc(n, sizeof(*src)) : NULL;
    if (src) {
      ba_collector_sources(coll, src, n);
      for (size_t i = 0; i < n; i++) {
        char a[64];
        ba_addr_format(src[i].addr, a, sizeof(a));
        fprintf(f, "  exporter %s: ", a);
        ba_cli_print_counts(f, &src[i].counts);
        fputc('\n', f);
      }
      free(src);
    }
  }
}

static void report_json(FILE *f, ba_collector_t *coll, const col_t *c, double secs) {
  ba_collector_stats_t st;
  ba_collector_get_stats(coll, &st);
  fprintf(f, "{\"listen\":\"%s\",\"seconds\":%.3f,\"received\":%" PRIu64 ",\"received_bytes\":%" PRIu64
          ",\"stored\":%" PRIu64 ",\"queue_dropped\":%" PRIu64 ",\"kernel_drops\":%" PRId64
          ",\"rcvbuf_granted\":%u,\"counts\":",
          ba_collector_address(coll), secs, st.received, st.received_bytes, c->stored, st.queue_dropped,
          st.kernel_drops, st.rcvbuf_granted);
  ba_cli_json_counts(f, &st.counts);
  fprintf(f, ",\"exporters\":[");
  size_t n = ba_collector_sources(coll, NULL, 0);
  ba_flow_source_t *src = n ? calloc(n, sizeof(*src)) : NULL;
  if (src) {
    ba_collector_sources(coll, src, n);
    for (size_t i = 0; i < n; i++) {
      char a[64];
      ba_addr_format(src[i].addr, a, sizeof(a));
      fprintf(f, "%s{\"exporter\":\"%s\",\"counts\":", i ? "," : "", a);
      ba_cli_json_counts(f, &src[i].counts);
      fputc('}', f);
    }
    free(src);
  }
  fprintf(f, "]}\n");
}

int ba_cmd_collect(int argc, char **argv) {
  enum { O_RCVBUF = 1, O_QUEUE, O_EVERY, O_SYNC, O_DURATION, O_REPORT };
  static const struct option lo[] = {{"store", required_argument, 0, 'w'},
                                     {"listen", required_argument, 0, 'l'},
                                     {"rcvbuf", required_argument, 0, O_RCVBUF},
                                     {"queue", required_argument, 0, O_QUEUE},
                                     {"report-every", required_argument, 0, O_EVERY},
                                     {"sync-every", required_argument, 0, O_SYNC},
                                     {"duration", required_argument, 0, O_DURATION},
                                     {"report", required_argument, 0, O_REPORT},
                                     {"quiet", no_argument, 0, 'q'},
                                     {"help", no_argument, 0, 'h'},
                                     BA_CLI_STORE_LONGOPTS,
                                     {0, 0, 0, 0}};
  const char *store = NULL;
  ba_collector_opts_t co;
  ba_collector_opts_init(&co);
  ba_store_opts_t so;
  ba_store_opts_init(&so);
  long every = 10, sync_every = 10, duration = 0, v;
  int quiet = 0, json = 0, c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "w:l:qh", lo, NULL)) != -1) {
    switch (c) {
    case 'w': store = optarg; break;
    case 'l': co.listen = optarg; break;
    case O_RCVBUF:
    case O_QUEUE:
      v = parse_bytes(optarg);
      if (v <= 0) {
        ba_cli_err("collect", "'%s' is not a byte size (e.g. 64M)", optarg);
        return 2;
      }
      if (c == O_RCVBUF) co.rcvbuf_bytes = (uint32_t)v;
      else co.queue_bytes = (uint32_t)v;
      break;
    case O_EVERY:
    case O_SYNC:
    case O_DURATION:
      v = ba_cli_parse_seconds(optarg);
      if (v < 0) {
        ba_cli_err("collect", "'%s' is not a duration (e.g. 10s, 5m, 1h)", optarg);
        return 2;
      }
      if (c == O_EVERY) every = v;
      else if (c == O_SYNC) sync_every = v;
      else duration = v;
      break;
    case O_REPORT:
      if (ba_cli_parse_report("collect", optarg, &json)) return 2;
      break;
    case 'q': quiet = 1; break;
    case 'h': usage(stdout); return 0;
    case '?': usage(stderr); return 2;
    default:
      if (ba_cli_store_opt("collect", c, optarg, &so)) return 2;
    }
  }
  if (optind < argc) {
    ba_cli_err("collect", "unexpected argument '%s'", argv[optind]);
    return 2;
  }
  if (!store) {
    ba_cli_err("collect", "--store DIR is required");
    return 2;
  }
  col_t cs;
  memset(&cs, 0, sizeof(cs));
  int rc = ba_store_writer_open(store, &so, &cs.w);
  if (rc) {
    ba_cli_err("collect", "cannot open store '%s' for writing: %s%s%s", store, ba_strerror(rc), cs.w ? ": " : "",
               cs.w ? ba_store_writer_errmsg(cs.w) : "");
    return 2;
  }
  char err[256];
  ba_collector_t *coll = NULL;
  rc = ba_collector_start(&co, &coll, err, sizeof(err));
  if (rc) {
    ba_cli_err("collect", "%s", err[0] ? err : ba_strerror(rc));
    ba_store_writer_close(cs.w);
    return 2;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  ba_collector_stats_t st0;
  ba_collector_get_stats(coll, &st0);
  if (!quiet)
    fprintf(stderr, "bitarc collect: listening on %s (receive buffer asked %u, kernel granted %u), store %s\n",
            ba_collector_address(coll), co.rcvbuf_bytes, st0.rcvbuf_granted, store);
  uint64_t t0 = now_ns(), last_rep = t0, last_sync = t0;
  int status = 0;
  while (!g_stop) {
    rc = ba_collector_poll(coll, 200, sink, &cs);
    if (rc) {
      ba_cli_err("collect", "store '%s' refused records: %s: %s", store, ba_strerror(rc),
                 ba_store_writer_errmsg(cs.w));
      status = 2;
      break;
    }
    uint64_t now = now_ns();
    if (sync_every && now - last_sync >= (uint64_t)sync_every * 1000000000ull) {
      ba_store_writer_sync(cs.w);
      last_sync = now;
    }
    if (!quiet && every && now - last_rep >= (uint64_t)every * 1000000000ull) {
      report(stderr, coll, &cs, (double)(now - t0) / 1e9, 0);
      last_rep = now;
    }
    if (duration && now - t0 >= (uint64_t)duration * 1000000000ull) break;
  }
  rc = ba_collector_stop(coll, status ? NULL : sink, &cs);
  if (rc && !status) {
    ba_cli_err("collect", "store '%s' refused records: %s", store, ba_strerror(rc));
    status = 2;
  }
  double secs = (double)(now_ns() - t0) / 1e9;
  int crc = ba_store_writer_close(cs.w);
  if (crc) {
    ba_cli_err("collect", "closing store '%s': %s", store, ba_strerror(crc));
    status = 2;
  }
  if (json) report_json(stdout, coll, &cs, secs);
  else if (!quiet) report(stderr, coll, &cs, secs, 1);
  ba_collector_free(coll);
  return status;
}

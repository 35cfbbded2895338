/* bitarc ingest: pcap/pcapng captures (packets, or NetFlow/IPFIX exports
 * inside them) into a store, with a per-file and per-exporter summary. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bitarc/bitarc.h"
#include "bitarc/ingest.h"
#include "bitarc/store.h"
#include "cli/cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: bitarc ingest --store DIR [options] FILE...\n"
          "\n"
          "Reads pcap and pcapng captures into a store. Every packet becomes a record\n"
          "(non-IP packets too), with its frame kept so queries can write pcaps again.\n"
          "A capture whose packets are mostly NetFlow v5/v9 or IPFIX export datagrams is\n"
          "read as flows instead: the exports are decoded (templates kept across files,\n"
          "per exporter and source id) with the packet's source address as exporter.\n"
          "A damaged capture keeps every packet before the damage; the error names the\n"
          "file, the packet number and its offset.\n"
          "\n"
          "options:\n"
          "  -w, --store DIR     the store to write, created if missing (required unless -n)\n"
          "      --as WHAT       auto (default), packets or flows\n"
          "  -n, --dry-run       decode and count only, write nothing (default: off)\n"
          "      --report FMT    summary as text (default, stderr) or json (stdout)\n"
          "  -q, --quiet         no summary, no progress (default: off)\n"
          "  -h, --help          this text\n"
          "%s"
          "\n"
          "examples:\n"
          "  bitarc ingest --store /tmp/st capture.pcap\n"
          "  bitarc ingest --store /tmp/st --compress zstd --codec compax day1/*.pcapng\n"
          "  bitarc ingest --store /tmp/flows --as flows netflow-exports.pcap\n"
          "  bitarc ingest --dry-run --report json traces/*.pcap | jq '.totals'\n"
          "\n"
          "exit status: 0 ok, 1 some file was damaged (its good packets are stored),\n"
          "2 bad usage or a file that is no capture.\n",
          BA_CLI_STORE_HELP);
}

/* ---------- helpers shared with collect ---------- */

int ba_cli_parse_report(const char *cmd, const char *arg, int *json) {
  if (!strcmp(arg, "json") || !strcmp(arg, "text")) {
    *json = arg[0] == 'j';
    return 0;
  }
  ba_cli_err(cmd, "--report '%s': text or json", arg);
  return 2;
}

long ba_cli_parse_seconds(const char *s) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || v < 0) return -1;
  double m = 1;
  if (!strcmp(end, "") || !strcmp(end, "s")) m = 1;
  else if (!strcmp(end, "m")) m = 60;
  else if (!strcmp(end, "h")) m = 3600;
  else if (!strcmp(end, "d")) m = 86400;
  else if (!strcmp(end, "w")) m = 604800;
  else return -1;
  double r = v * m;
  if (r > 1e9) return -1;
  return (long)r;
}

int ba_cli_writer_open(const char *cmd, const char *dir, const struct ba_store_opts *o, ba_store_writer_t **w) {
  int rc = ba_store_writer_open(dir, o, w);
  if (rc) {
    const char *why = ba_store_writer_open_error();
    ba_cli_err(cmd, "cannot open store '%s' for writing: %s%s%s", dir, ba_strerror(rc), *why ? ": " : "", why);
    return 2;
  }
  return 0;
}

int ba_cli_writer_close(const char *cmd, const char *dir, ba_store_writer_t **w) {
  if (!*w) return 0;
  int rc = ba_store_writer_close(*w);
  *w = NULL;
  if (rc) {
    ba_cli_err(cmd, "closing store '%s': %s", dir, ba_strerror(rc));
    return 2;
  }
  return 0;
}

int ba_cli_store_opt(const char *cmd, int opt, const char *arg, struct ba_store_opts *o) {
  long v;
  switch (opt) {
  case BA_CLI_OPT_CODEC:
    if (ba_codec_from_name(arg, &o->codec) != 0) {
      ba_cli_err(cmd, "unknown codec '%s' (wah32, wah64, plwah, compax, masc)", arg);
      return 2;
    }
    return 0;
  case BA_CLI_OPT_COMPRESS:
    if (ba_compress_from_name(arg, &o->compress) != 0) {
      ba_cli_err(cmd, "unknown compressor '%s' (lzo, lz4, zstd, none)", arg);
      return 2;
    }
    return 0;
  case BA_CLI_OPT_SLICE:
  case BA_CLI_OPT_TIME_BIN:
    v = ba_cli_parse_seconds(arg);
    if (v <= 0) {
      ba_cli_err(cmd, "--%s '%s' is not a duration (e.g. 3600, 1h, 15m)",
                 opt == BA_CLI_OPT_SLICE ? "slice" : "time-bin", arg);
      return 2;
    }
    if (opt == BA_CLI_OPT_SLICE) o->slice_seconds = (uint32_t)v;
    else o->time_bin_seconds = (uint32_t)v;
    return 0;
  case BA_CLI_OPT_REORDER:
    if (!strcmp(arg, "olsh")) o->reorder = BA_REORDER_OLSH;
    else if (!strcmp(arg, "none")) o->reorder = BA_REORDER_NONE;
    else {
      ba_cli_err(cmd, "--reorder '%s': none or olsh", arg);
      return 2;
    }
    return 0;
  case BA_CLI_OPT_SEGMENT_ROWS: {
    uint64_t rows;
    if (ba_cli_opt_u64(cmd, "segment-rows", arg, 4000, (uint64_t)1 << 31, &rows)) return 2;
    o->max_segment_rows = rows;
    return 0;
  }
  case BA_CLI_OPT_THREADS:
  case BA_CLI_OPT_BLOCK_ROWS:
  case BA_CLI_OPT_OLSH_MEM: {
    char *end;
    long n = strtol(arg, &end, 10);
    if (*end || n <= 0 || n > 100000000) {
      ba_cli_err(cmd, "'%s' is not a positive number", arg);
      return 2;
    }
    if (opt == BA_CLI_OPT_THREADS) o->threads = (int)n;
    else if (opt == BA_CLI_OPT_BLOCK_ROWS) o->block_rows = (uint32_t)n;
    else o->olsh_mem_records = (uint32_t)n;
    return 0;
  }
  default:
    return 2;
  }
}

void ba_cli_print_counts(FILE *f, const ba_ingest_counts_t *c) {
    fprintf(f, "%" PRIu64 " records", c->records);
  if (c->datagrams) {
    fprintf(f, " from %" PRIu64 " datagrams (v5 %" PRIu64 ", v9 %" PRIu64 ", ipfix %" PRIu64 ", sflow %" PRIu64 ")",
            c->datagrams, c->datagrams_v5, c->datagrams_v9, c->datagrams_ipfix, c->datagrams_sflow);
    if (c->messages > c->datagrams) fprintf(f, ", %" PRIu64 " messages", c->messages);
    if (c->sflow_counter_samples) fprintf(f, ", %" PRIu64 " sFlow counter samples (not stored)", c->sflow_counter_samples);
    if (c->clock_far) fprintf(f, ", %" PRIu64 " flows more than a day from their export time", c->clock_far);
    fprintf(f, ", templates %" PRIu64, c->templates);
    if (c->options_templates || c->options_records)
      fprintf(f, ", options templates %" PRIu64 " (records %" PRIu64 " skipped)", c->options_templates,
              c->options_records);
    if (c->template_withdrawals) fprintf(f, ", withdrawals %" PRIu64, c->template_withdrawals);
    if (c->late_decoded) fprintf(f, ", %" PRIu64 " sets decoded when their template came", c->late_decoded);
  }
  uint64_t dr = ba_ingest_counts_dropped(c);
  if (dr) {
    fprintf(f, "; dropped:");
    const char *sep = " ";
    for (int k = 0; k < BA_DROP_COUNT; k++) {
      if (!c->dropped[k]) continue;
      fprintf(f, "%s%s %" PRIu64 " %s", sep, ba_ingest_drop_name((ba_ingest_drop_t)k), c->dropped[k],
              ba_ingest_drop_unit((ba_ingest_drop_t)k));
      sep = ", ";
    }
  }
}

void ba_cli_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
    else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
    else fputc(ch, f);
  }
  fputc('"', f);
}

void ba_cli_json_counts(FILE *f, const ba_ingest_counts_t *c) {
  fprintf(f,
          "{\"packets\":%" PRIu64 ",\"records\":%" PRIu64 ",\"datagrams\":%" PRIu64 ",\"datagrams_v5\":%" PRIu64
          ",\"datagrams_v9\":%" PRIu64 ",\"datagrams_ipfix\":%" PRIu64 ",\"templates\":%" PRIu64
          ",\"template_withdrawals\":%" PRIu64 ",\"options_templates\":%" PRIu64 ",\"options_records\":%" PRIu64
          ",\"late_decoded\":%" PRIu64 ",\"datagrams_sflow\":%" PRIu64 ",\"messages\":%" PRIu64
          ",\"sflow_flow_samples\":%" PRIu64 ",\"sflow_counter_samples\":%" PRIu64 ",\"clock_far\":%" PRIu64
          ",\"dropped\":{",
          c->packets, c->records, c->datagrams, c->datagrams_v5, c->datagrams_v9, c->datagrams_ipfix, c->templates,
          c->template_withdrawals, c->options_templates, c->options_records, c->late_decoded, c->datagrams_sflow,
          c->messages, c->sflow_flow_samples, c->sflow_counter_samples, c->clock_far);
  for (int k = 0; k < BA_DROP_COUNT; k++)
    fprintf(f, "%s\"%s\":%" PRIu64, k ? "," : "", ba_ingest_drop_name((ba_ingest_drop_t)k), c->dropped[k]);
  fprintf(f, "}}");
}

/* Per template of every exporter: what it decoded, stored and dropped, and why. */
void ba_cli_json_templates(FILE *f, const ba_flow_template_info_t *t, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char a[64];
    ba_addr_format(t[i].exporter, a, sizeof(a));
    fprintf(f, "%s{\"exporter\":\"%s\",\"version\":%u,\"domain\":%" PRIu32 ",\"id\":%u,\"options\":%s,"
            "\"withdrawn\":%s,\"fields\":%u,\"definitions\":%" PRIu32 ",\"sets\":%" PRIu64 ",\"records\":%" PRIu64
            ",\"stored\":%" PRIu64 ",\"dropped\":{",
            i ? "," : "", a, t[i].version, t[i].domain, t[i].id, t[i].options ? "true" : "false",
            t[i].withdrawn ? "true" : "false", t[i].fields, t[i].definitions, t[i].sets, t[i].records, t[i].stored);
    for (int k = 0; k < BA_DROP_COUNT; k++)
      fprintf(f, "%s\"%s\":%" PRIu64, k ? "," : "", ba_ingest_drop_name((ba_ingest_drop_t)k), t[i].dropped[k]);
    fprintf(f, "},\"last_drop\":");
    ba_cli_json_string(f, t[i].last_drop);
    fputc('}', f);
  }
}

void ba_cli_print_templates(FILE *f, const ba_flow_template_info_t *t, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char a[64];
    ba_addr_format(t[i].exporter, a, sizeof(a));
    fprintf(f, "  template %s %s domain %" PRIu32 " id %u%s%s: %u fields, %" PRIu64 " records, %" PRIu64 " stored",
            a, t[i].version == 9 ? "v9" : "ipfix", t[i].domain, t[i].id, t[i].options ? " (options)" : "",
            t[i].withdrawn ? " (withdrawn)" : "", t[i].fields, t[i].records, t[i].stored);
    const char *sep = "; dropped: ";
    for (int k = 0; k < BA_DROP_COUNT; k++) {
      if (!t[i].dropped[k]) continue;
      fprintf(f, "%s%s %" PRIu64 " %s", sep, ba_ingest_drop_name((ba_ingest_drop_t)k), t[i].dropped[k],
              ba_ingest_drop_unit((ba_ingest_drop_t)k));
      sep = ", ";
    }
    if (t[i].last_drop[0]) fprintf(f, " (last: %s)", t[i].last_drop);
    fputc('\n', f);
  }
}

static void json_templates(FILE *f, const ba_flow_decoder_t *dec) {
  size_t n = ba_flow_decoder_templates(dec, NULL, 0);
  ba_flow_template_info_t *t = n ? calloc(n, sizeof(*t)) : NULL;
  if (!t) return;
  ba_flow_decoder_templates(dec, t, n);
  ba_cli_json_templates(f, t, n);
  free(t);
}

/* ---------- ingest ---------- */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

typedef struct ing {
  ba_store_writer_t *w;
  uint64_t stored, flows, packets;
  const char *file;
  uint64_t file_size;
  int progress;
  uint64_t last_progress_ns;
  size_t fileno, nfiles;
} ing_t;

static int sink(void *ctx, const ba_record_t *r, size_t n) {
  ing_t *g = ctx;
  if (g->w) {
    int rc = ba_store_writer_append(g->w, r, n);
    if (rc) return rc;
  }
  g->stored += n;
  for (size_t i = 0; i < n; i++) {
    if (r[i].kind == BA_REC_FLOW) g->flows++;
    else g->packets++;
  }
  return 0;
}

static void progress(void *ctx, uint64_t done) {
  ing_t *g = ctx;
  if (!g->progress) return;
  uint64_t now = now_ns();
  if (now - g->last_progress_ns < 200000000ull) return;
  g->last_progress_ns = now;
  double pct = g->file_size ? 100.0 * (double)done / (double)g->file_size : 0;
  fprintf(stderr, "\r[%zu/%zu] %s %5.1f%%  %" PRIu64 " records   ", g->fileno, g->nfiles, g->file, pct, g->stored);
}

static const char *as_name(ba_ingest_as_t a) {
  return a == BA_INGEST_FLOWS ? "flows" : a == BA_INGEST_PACKETS ? "packets" : "auto";
}

/* One run's results, for the reports. */
typedef struct ing_run {
  char **paths;
  size_t nf, nsrc;
  ba_capture_result_t *res;
  int *frc;
  ba_ingest_counts_t tot;
  ba_flow_source_t *src;
  ba_store_writer_stats_t ws;
  double secs;
  int dry;
  const char *store;
} ing_run_t;

/* Reads file i of r into the store; its error, if any, is printed and
 * raises *status. Returns 1 when no further file can be read. */
static int ingest_file(ing_t *g, ing_run_t *r, size_t i, ba_ingest_as_t as, ba_flow_decoder_t *dec, int *status) {
  const char *path = r->paths[i];
  ba_capture_result_t *res = &r->res[i];
  ba_capture_opts_t o;
  memset(&o, 0, sizeof(o));
  o.as = as;
  o.flows = dec;
  o.progress = progress;
  o.progress_ctx = g;
  g->file = path;
  g->fileno = i + 1;
  g->file_size = 0;
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    r->frc[i] = BA_ERR_IO;
    snprintf(res->errmsg, sizeof(res->errmsg), "cannot open: %s", strerror(errno));
    *status = 2;
    if (g->progress) fputc('\n', stderr);
    ba_cli_err("ingest", "%s: %s", path, res->errmsg);
    return 0;
  }
  fseek(fp, 0, SEEK_END);
  g->file_size = (uint64_t)ftell(fp);
  rewind(fp);
  int rc = r->frc[i] = ba_capture_ingest(NULL, fp, &o, sink, g, res);
  ba_ingest_counts_add(&r->tot, &res->counts);
  if (!rc) return 0;
  if (g->progress) fputc('\n', stderr);
  if (rc == BA_ERR_TRUNCATED || rc == BA_ERR_CORRUPT) {
    ba_cli_err("ingest", "%s: damaged at packet %" PRIu64 " (file offset %" PRIu64 "): %s; the %" PRIu64
               " packets before it were read", path, res->error_packet, res->error_offset, res->errmsg,
               res->counts.packets);
    if (*status < 1) *status = 1;
    return 0;
  }
  *status = 2;
  if (rc == BA_ERR_UNSUPPORTED) {
    /* libpcap could not be loaded: no capture can be read */
    ba_cli_err("ingest", "%s: %s", path, res->errmsg);
    return 1;
  }
  if (rc == BA_ERR_NOT_OURS || rc == BA_ERR_IO) {
    ba_cli_err("ingest", "%s: not a pcap/pcapng capture: %s", path, res->errmsg);
    return 0;
  }
  /* the store refused records: stop */
  ba_cli_err("ingest", "%s: store: %s%s%s", path, ba_strerror(rc), g->w ? ": " : "",
             g->w ? ba_store_writer_errmsg(g->w) : "");
  return 1;
}

static void report_text(const ing_t *g, const ing_run_t *r) {
  fprintf(stderr, "bitarc ingest: %zu file%s, %" PRIu64 " packets read, %" PRIu64 " records %s (%" PRIu64
          " packets, %" PRIu64 " flows) in %.2f s",
          r->nf, r->nf == 1 ? "" : "s", r->tot.packets, g->stored, r->dry ? "decoded" : "stored", g->packets,
          g->flows, r->secs);
  if (r->secs > 0) fprintf(stderr, ", %.0f records/s", (double)g->stored / r->secs);
  fputc('\n', stderr);
  for (size_t i = 0; i < r->nf; i++) {
    const ba_capture_result_t *res = &r->res[i];
    fprintf(stderr, "  %s: ", r->paths[i]);
    if (r->frc[i] == BA_ERR_IO || r->frc[i] == BA_ERR_NOT_OURS) {
      fprintf(stderr, "not read: %s\n", res->errmsg);
      continue;
    }
    fprintf(stderr, "%s, linktype %d, %" PRIu64 " packets -> ", as_name(res->as), res->linktype,
            res->counts.packets);
    ba_cli_print_counts(stderr, &res->counts);
    if (r->frc[i]) fprintf(stderr, "; damaged at packet %" PRIu64 ": %s", res->error_packet, res->errmsg);
    fputc('\n', stderr);
  }
  for (size_t i = 0; i < r->nsrc; i++) {
    const ba_flow_source_t *src = &r->src[i];
    char a[64];
    ba_addr_format(src->addr, a, sizeof(a));
    fprintf(stderr, "  exporter %s: ", a);
    ba_cli_print_counts(stderr, &src->counts);
    if (src->clock_suspicious)
      fprintf(stderr, "; its clock looks wrong (export - receive %" PRId64 " s)", src->export_skew_s);
    if (src->last_error[0]) fprintf(stderr, "; last drop: %s", src->last_error);
    fputc('\n', stderr);
  }
  if (r->ws.records_dropped)
    fprintf(stderr, "  store %s dropped %" PRIu64 " records (see bitarc stat)\n", r->store, r->ws.records_dropped);
  if (ba_ingest_counts_dropped(&r->tot)) {
    fprintf(stderr, "  totals: ");
    ba_cli_print_counts(stderr, &r->tot);
    fputc('\n', stderr);
  }
}

static void report_json(FILE *f, const ing_t *g, const ing_run_t *r, const ba_flow_decoder_t *dec) {
  fprintf(f, "{\"files\":[");
  for (size_t i = 0; i < r->nf; i++) {
    const ba_capture_result_t *res = &r->res[i];
    fprintf(f, "%s{\"file\":", i ? "," : "");
    ba_cli_json_string(f, r->paths[i]);
    fprintf(f, ",\"as\":\"%s\",\"linktype\":%d,\"status\":", as_name(res->as), res->linktype);
    /* BA_ERR_NOT_OURS's text speaks of bitarc files; here the file is no capture */
    ba_cli_json_string(f, r->frc[i] == BA_ERR_NOT_OURS ? "not a pcap/pcapng capture"
                          : r->frc[i]                  ? ba_strerror(r->frc[i])
                                                       : "ok");
    fprintf(f, ",\"error\":");
    ba_cli_json_string(f, res->errmsg);
    fprintf(f, ",\"error_packet\":%" PRIu64 ",\"error_offset\":%" PRIu64 ",\"counts\":", res->error_packet,
            res->error_offset);
    ba_cli_json_counts(f, &res->counts);
    fputc('}', f);
  }
  fprintf(f, "],\"exporters\":[");
  for (size_t i = 0; i < r->nsrc; i++) {
    const ba_flow_source_t *src = &r->src[i];
    char a[64];
    ba_addr_format(src->addr, a, sizeof(a));
    fprintf(f, "%s{\"exporter\":\"%s\",\"counts\":", i ? "," : "", a);
    ba_cli_json_counts(f, &src->counts);
    fprintf(f, ",\"clock_suspicious\":%s,\"export_skew_s\":%" PRId64 ",\"samplers\":%u,\"ifnames\":%u,"
            "\"last_error\":", src->clock_suspicious ? "true" : "false", src->export_skew_s, src->samplers,
            src->ifnames);
    ba_cli_json_string(f, src->last_error);
    fputc('}', f);
  }
  fprintf(f, "],\"templates\":[");
  json_templates(f, dec);
  fprintf(f, "],\"totals\":");
  ba_cli_json_counts(f, &r->tot);
  fprintf(f, ",\"stored\":%" PRIu64 ",\"stored_packets\":%" PRIu64 ",\"stored_flows\":%" PRIu64
          ",\"store_dropped\":%" PRIu64 ",\"seconds\":%.3f,\"dry_run\":%s}\n",
          g->stored, g->packets, g->flows, r->ws.records_dropped, r->secs, r->dry ? "true" : "false");
}

int ba_cmd_ingest(int argc, char **argv) {
  static const struct option lo[] = {{"store", required_argument, 0, 'w'},
                                     {"as", required_argument, 0, 'a'},
                                     {"dry-run", no_argument, 0, 'n'},
                                     {"report", required_argument, 0, 'R'},
                                     {"quiet", no_argument, 0, 'q'},
                                     {"help", no_argument, 0, 'h'},
                                     BA_CLI_STORE_LONGOPTS,
                                     {0, 0, 0, 0}};
  const char *store = NULL;
  ba_ingest_as_t as = BA_INGEST_AUTO;
  int dry = 0, json = 0, quiet = 0, c;
  ba_store_opts_t so;
  ba_store_opts_init(&so);
  optind = 1;
  while ((c = getopt_long(argc, argv, "w:nqh", lo, NULL)) != -1) {
    switch (c) {
    case 'w': store = optarg; break;
    case 'a':
      if (!strcmp(optarg, "packets")) as = BA_INGEST_PACKETS;
      else if (!strcmp(optarg, "flows")) as = BA_INGEST_FLOWS;
      else if (!strcmp(optarg, "auto")) as = BA_INGEST_AUTO;
      else {
        ba_cli_err("ingest", "--as '%s': auto, packets or flows", optarg);
        return 2;
      }
      break;
    case 'n': dry = 1; break;
    case 'R':
      if (ba_cli_parse_report("ingest", optarg, &json)) return 2;
      break;
    case 'q': quiet = 1; break;
    case 'h': usage(stdout); return 0;
    case '?': usage(stderr); return 2;
    default:
      if (ba_cli_store_opt("ingest", c, optarg, &so)) return 2;
    }
  }
  if (optind >= argc) {
    ba_cli_err("ingest", "no input files (bitarc ingest --help)");
    return 2;
  }
  if (!store && !dry) {
    ba_cli_err("ingest", "--store DIR is required (or --dry-run)");
    return 2;
  }
  ing_t g;
  memset(&g, 0, sizeof(g));
  g.progress = !quiet && isatty(2);
  g.nfiles = (size_t)(argc - optind);
  if (!dry) {
    if (ba_cli_writer_open("ingest", store, &so, &g.w)) return 2;
    if (!quiet && ba_store_writer_recovered(g.w))
      fprintf(stderr, "bitarc ingest: recovered %" PRIu64 " records left by an interrupted writer in %s\n",
              ba_store_writer_recovered(g.w), store);
  }
  ba_flow_decoder_t *dec = NULL;
  int rc = ba_flow_decoder_create(NULL, &dec);
  if (rc) {
    ba_cli_err("ingest", "%s", ba_strerror(rc));
    ba_store_writer_close(g.w);
    return 2;
  }
  ing_run_t r;
  memset(&r, 0, sizeof(r));
  r.paths = argv + optind;
  r.nf = g.nfiles;
  r.dry = dry;
  r.store = store;
  r.res = calloc(r.nf, sizeof(*r.res));
  r.frc = calloc(r.nf, sizeof(*r.frc));
  int status = 0;
  uint64_t t0 = now_ns();
  for (size_t i = 0; i < r.nf && r.res && r.frc; i++)
    if (ingest_file(&g, &r, i, as, dec, &status)) break;
  if (g.progress) fprintf(stderr, "\r%*s\r", 78, "");
  ba_flow_decoder_finish(dec);
  /* held data sets whose template never came show up only now */
  ba_ingest_counts_t fc;
  ba_flow_decoder_counts(dec, &fc);
  r.tot.dropped[BA_DROP_UNKNOWN_TEMPLATE] = fc.dropped[BA_DROP_UNKNOWN_TEMPLATE];
  if (g.w) {
    ba_store_writer_get_stats(g.w, &r.ws);
    if (ba_cli_writer_close("ingest", store, &g.w)) status = 2;
  }
  r.secs = (double)(now_ns() - t0) / 1e9;
  r.nsrc = ba_flow_decoder_sources(dec, NULL, 0);
  r.src = r.nsrc ? calloc(r.nsrc, sizeof(*r.src)) : NULL;
  if (r.src) ba_flow_decoder_sources(dec, r.src, r.nsrc);
  else r.nsrc = 0;
  if (!quiet && !json && r.res && r.frc) report_text(&g, &r);
  if (json && r.res && r.frc) report_json(stdout, &g, &r, dec);
  free(r.src);
  free(r.res);
  free(r.frc);
  ba_flow_decoder_free(dec);
  return status;
}

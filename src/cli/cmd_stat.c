/* bitarc stat: a store's segments, time range, records and bytes per record
 * for the archive and for each index attribute, and the last collector
 * report the store holds. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bitarc/bitarc.h"
#include "cli/cli.h"

static void fmt_time(uint64_t ns, char *out, size_t cap) {
  time_t t = (time_t)(ns / 1000000000ull);
  struct tm tm;
  if (!gmtime_r(&t, &tm) || !strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm)) snprintf(out, cap, "?");
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: bitarc stat --store DIR [-o text|json]\n\n"
          "Shows every segment of a store (time slice, records, codec, compressor) and\n"
          "totals: time range, records, bytes per record for the archive and for the\n"
          "index of each attribute. Segments that fail to open are listed as damaged\n"
          "(exit 1). Then the last report of 'bitarc collect' kept in the store: per\n"
          "listening socket, exporter and template, what was received, decoded, stored\n"
          "and dropped, with the reason of the last drop (json: \"collector\", null if none).\n\n"
          "options:\n"
          "  -s, --store DIR     the store (required)\n"
          "  -o, --output FMT    text or json (default: text)\n"
          "  -h, --help          this text\n\n"
          "examples:\n"
          "  bitarc stat --store /var/lib/bitarc/st\n"
          "  bitarc stat --store st -o json | jq .records\n");
}

/* The last report `bitarc collect` left in the store (per socket, exporter
 * and template): its text after a heading, or its JSON document (null when
 * there is none or it is not a JSON object). */
static void collector_report(const char *dir, int json) {
  char path[4096];
  const char *name = json ? BA_STORE_COLLECTOR_JSON : BA_STORE_COLLECTOR_TEXT;
  if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path)) path[0] = 0;
  FILE *f = path[0] ? fopen(path, "r") : NULL;
  struct stat st;
  char *buf = NULL;
  size_t n = 0;
  if (f && fstat(fileno(f), &st) == 0 && st.st_size > 0 && st.st_size < (64 << 20)) {
    buf = malloc((size_t)st.st_size + 1);
    n = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
  }
  if (f) fclose(f);
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) n--;
  if (json) {
    if (n >= 2 && buf[0] == '{' && buf[n - 1] == '}') fwrite(buf, 1, n, stdout);
    else printf("null");
  } else if (n) {
    char when[40];
    fmt_time((uint64_t)st.st_mtime * 1000000000ull, when, sizeof when);
    printf("\nlast collector report (%s, written %s):\n", name, when);
    fwrite(buf, 1, n, stdout);
    putchar('\n');
  }
  free(buf);
}

/* What the segments add up to. */
typedef struct stat_tot {
  size_t n, bad;
  uint64_t rows, archive, index, file, attr[BA_ATTR_COUNT], colb[32], tmin, tmax;
  unsigned ncols;
} stat_tot_t;

/* Segment i's line (or JSON object), added to t. */
static void stat_segment(ba_store_t *s, size_t i, int json, stat_tot_t *t) {
  ba_segment_t *seg;
  ba_segment_info_t in;
  const char *name = ba_store_segment_name(s, i);
  if (ba_store_segment(s, i, &seg) < 0 || ba_segment_info(seg, &in) < 0) {
    t->bad++;
    if (json) {
      printf("%s\n    {\"name\": ", i ? "," : "");
      ba_cli_json_string(stdout, name);
      printf(", \"damaged\": true}");
    } else {
      printf("%-34s DAMAGED: %s\n", name, ba_store_errmsg(s));
    }
    return;
  }
  char ts[40];
  fmt_time(in.start_ns, ts, sizeof ts);
  t->rows += in.rows;
  t->archive += in.bytes_archive;
  t->index += in.bytes_index;
  t->file += in.bytes_file;
  for (int a = 0; a < BA_ATTR_COUNT; a++) t->attr[a] += in.bytes_index_attr[a];
  uint64_t cb[32];
  unsigned nc = 0;
  if (ba_segment_column_bytes(seg, cb, &nc) == BA_OK) {
    for (unsigned k = 0; k < nc; k++) t->colb[k] += cb[k];
    if (nc > t->ncols) t->ncols = nc;
  }
  if (in.min_first_ns < t->tmin) t->tmin = in.min_first_ns;
  if (in.max_first_ns > t->tmax) t->tmax = in.max_first_ns;
  if (json) {
    printf("%s\n    {\"name\": ", i ? "," : "");
    ba_cli_json_string(stdout, in.name);
    printf(", \"start\": \"%s\", \"records\": %" PRIu64
           ", \"blocks\": %u, \"codec\": \"%s\", \"compress\": \"%s\", \"reorder\": %s, \"clustered\": %s, "
           "\"bytes_archive\": %" PRIu64 ", \"bytes_index\": %" PRIu64 ", \"bytes_file\": %" PRIu64 "}",
           ts, in.rows, in.nblocks, ba_codec_name(in.codec), ba_compress_name(in.compress),
           in.reorder ? "true" : "false", in.clustered ? "true" : "false", in.bytes_archive, in.bytes_index, in.bytes_file);
  } else {
    printf("%-34s %-20s %12" PRIu64 " %8s %6s %10.2f\n", in.name, ts, in.rows, ba_codec_name(in.codec),
           ba_compress_name(in.compress), in.rows ? (double)in.bytes_file / (double)in.rows : 0.0);
  }
}

/* The totals after the segments, then the collector's last report. */
static void stat_totals(const char *dir, const stat_tot_t *t, int json) {
  double r = t->rows ? (double)t->rows : 1.0;
  char t1[40] = "-", t2[40] = "-";
  if (t->rows) {
    fmt_time(t->tmin, t1, sizeof t1);
    fmt_time(t->tmax, t2, sizeof t2);
  }
  if (json) {
    printf("\n  ],\n  \"segment_count\": %zu,\n  \"damaged_segments\": %zu,\n  \"records\": %" PRIu64
           ",\n  \"first\": \"%s\",\n  \"last\": \"%s\",\n  \"bytes_archive\": %" PRIu64
           ",\n  \"bytes_index\": %" PRIu64 ",\n  \"bytes_file\": %" PRIu64
           ",\n  \"bytes_per_record\": {\"archive\": %.3f, \"index\": %.3f",
           t->n, t->bad, t->rows, t1, t2, t->archive, t->index, t->file, t->archive / r, t->index / r);
    for (int a = 0; a < BA_ATTR_COUNT; a++) printf(", \"%s\": %.3f", ba_attr_name((ba_attr_t)a), t->attr[a] / r);
    printf("},\n  \"archive_bytes_per_record\": {");
    for (unsigned k = 0; k < t->ncols; k++)
      printf("%s\"%s\": %.3f", k ? ", " : "", ba_segment_column_name(k), t->colb[k] / r);
    printf("},\n  \"collector\": ");
    collector_report(dir, 1);
    printf("\n}\n");
    return;
  }
  printf("\nsegments %zu (damaged %zu), records %" PRIu64 ", first %s, last %s\n", t->n, t->bad, t->rows, t1, t2);
  printf("bytes per record: archive %.2f, index %.2f, file %.2f\n", t->archive / r, t->index / r, t->file / r);
  printf("index bytes per record by attribute:\n");
  for (int a = 0; a < BA_ATTR_COUNT; a++) printf("  %-13s %8.3f\n", ba_attr_name((ba_attr_t)a), t->attr[a] / r);
  printf("archive bytes per record by column (columns absent everywhere omitted):\n");
  for (unsigned k = 0; k < t->ncols; k++)
    if (t->colb[k]) printf("  %-13s %8.3f\n", ba_segment_column_name(k), t->colb[k] / r);
  collector_report(dir, 0);
}

int ba_cmd_stat(int argc, char **argv) {
  const char *dir = NULL, *fmt = "text";
  static const struct option opts[] = {{"store", required_argument, 0, 's'},
                                       {"output", required_argument, 0, 'o'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "s:o:h", opts, NULL)) != -1) {
    if (c == 's') dir = optarg;
    else if (c == 'o') fmt = optarg;
    else if (c == 'h') {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (!dir) {
    ba_cli_err("stat", "--store DIR is required");
    return 2;
  }
  if (strcmp(fmt, "text") && strcmp(fmt, "json")) {
    ba_cli_err("stat", "-o '%s': expected text or json", fmt);
    return 2;
  }
  if (optind != argc) {
    ba_cli_err("stat", "unexpected argument '%s' (see --help)", argv[optind]);
    return 2;
  }
  int json = !strcmp(fmt, "json");
  ba_store_t *s;
  int rc = ba_store_open(dir, &s);
  if (rc < 0) {
    ba_cli_err("stat", "cannot open store '%s': %s", dir, ba_strerror(rc));
    return 2;
  }
  stat_tot_t t;
  memset(&t, 0, sizeof(t));
  t.tmin = UINT64_MAX;
  t.n = ba_store_segment_count(s);
  if (json) {
    printf("{\n  \"store\": ");
    ba_cli_json_string(stdout, dir);
    printf(",\n  \"segments\": [");
  } else {
    printf("%-34s %-20s %12s %8s %6s %10s\n", "segment", "slice start", "records", "codec", "comp", "B/rec");
  }
  for (size_t i = 0; i < t.n; i++) stat_segment(s, i, json, &t);
  stat_totals(dir, &t, json);
  ba_store_close(s);
  return t.bad ? 1 : 0;
}

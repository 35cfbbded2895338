/* bitarc expire: deletes a store's oldest segments beyond an age and a size
 * limit (nfexpire's job), never the slice a writer is filling. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bitarc/bitarc.h"
#include "cli/cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: bitarc expire --store DIR [--max-age DUR] [--max-size SIZE] [--dry-run] [-o text|json]\n\n"
          "Deletes the oldest complete segments of a store: first every segment whose\n"
          "time slice ended more than --max-age ago, then the oldest others until the\n"
          "store (segments and journals) is at most --max-size. The slice a collector\n"
          "is writing (*.open) is never deleted; running beside `bitarc collect` and\n"
          "queries is safe. At least one limit is required.\n\n"
          "options:\n"
          "  -s, --store DIR     the store (required)\n"
          "  --max-age DUR       e.g. 3600, 90m, 36h, 30d, 2w (default: no age limit)\n"
          "  --max-size SIZE     e.g. 500G, 20M, 1048576 (default: no size limit);\n"
          "                      K, M, G, T are powers of 1024\n"
          "  -n, --dry-run       list what would be deleted, delete nothing (default: off)\n"
          "  -o, --output FMT    text or json (default: text)\n"
          "  -q, --quiet         print only the summary line (default: off)\n"
          "  -h, --help          this text\n\n"
          "examples:\n"
          "  bitarc expire --store /var/lib/bitarc/edge --max-age 30d --max-size 500G\n"
          "  bitarc expire --store st --max-size 10G --dry-run\n");
}

static void fmt_time(uint64_t ns, char *out, size_t cap) {
  time_t t = (time_t)(ns / 1000000000ull);
  struct tm tm;
  if (!gmtime_r(&t, &tm) || !strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm)) snprintf(out, cap, "?");
}

typedef struct report {
  int json, quiet, dry, n;
} report_t;

static void on_item(void *ctx, const ba_expire_item_t *it) {
  report_t *r = ctx;
  char t1[40], t2[40];
  fmt_time(it->start_ns, t1, sizeof t1);
  fmt_time(it->end_ns, t2, sizeof t2);
  const char *why = it->reason == BA_EXPIRE_AGE ? "age" : "size";
  if (r->json)
    printf("%s\n    {\"name\": \"%s\", \"start\": \"%s\", \"end\": \"%s\", \"bytes\": %" PRIu64
           ", \"reason\": \"%s\"}", r->n ? "," : "", it->name, t1, t2, it->bytes, why);
  else if (!r->quiet)
    printf("%s %s  %s .. %s  %" PRIu64 " bytes  (%s)\n", r->dry ? "would delete" : "deleted", it->name, t1,
           t2, it->bytes, why);
  r->n++;
}

static int parse_args(int argc, char **argv, const char **dir, ba_expire_opts_t *o, report_t *r) {
  static const struct option opts[] = {
    {"store", required_argument, 0, 's'}, {"max-age", required_argument, 0, 'a'},
    {"max-size", required_argument, 0, 'm'}, {"dry-run", no_argument, 0, 'n'},
    {"output", required_argument, 0, 'o'}, {"quiet", no_argument, 0, 'q'},
    {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
  int c;
  long sec;
  optind = 1;
  while ((c = getopt_long(argc, argv, "s:no:qh", opts, NULL)) != -1) {
    switch (c) {
    case 's': *dir = optarg; break;
    case 'a':
      if ((sec = ba_cli_parse_seconds(optarg)) <= 0) {
        ba_cli_err("expire", "--max-age '%s' is not a duration (e.g. 36h, 30d, 2w)", optarg);
        return 2;
      }
      o->max_age_ns = (uint64_t)sec * 1000000000ull;
      break;
    case 'm':
      if (ba_cli_parse_bytes(optarg, &o->max_bytes) < 0 || !o->max_bytes) {
        ba_cli_err("expire", "--max-size '%s' is not a size (e.g. 500G, 20M, 1048576)", optarg);
        return 2;
      }
      break;
    case 'n': o->dry_run = r->dry = 1; break;
    case 'q': r->quiet = 1; break;
    case 'o':
      if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
        ba_cli_err("expire", "-o '%s': expected text or json", optarg);
        return 2;
      }
      r->json = !strcmp(optarg, "json");
      break;
    case 'h': usage(stdout); return 1;
    default: usage(stderr); return 2;
    }
  }
  if (!*dir) {
    ba_cli_err("expire", "--store DIR is required");
    return 2;
  }
  if (optind != argc) {
    ba_cli_err("expire", "unexpected argument '%s' (see --help)", argv[optind]);
    return 2;
  }
  if (!o->max_age_ns && !o->max_bytes) {
    ba_cli_err("expire", "give --max-age and/or --max-size");
    return 2;
  }
  return 0;
}

int ba_cmd_expire(int argc, char **argv) {
  const char *dir = NULL;
  ba_expire_opts_t o;
  ba_expire_opts_init(&o);
  report_t r = {0};
  int rc = parse_args(argc, argv, &dir, &o, &r);
  if (rc) return rc == 1 ? 0 : rc;
  o.report = on_item;
  o.report_ctx = &r;
  if (r.json) printf("{\n  \"store\": \"%s\",\n  \"dry_run\": %s,\n  \"deleted\": [", dir, r.dry ? "true" : "false");
  ba_expire_stats_t st;
  char err[512];
  rc = ba_store_expire(dir, &o, &st, err, sizeof err);
  if (r.json)
    printf("\n  ],\n  \"segments_before\": %" PRIu64 ",\n  \"bytes_before\": %" PRIu64
           ",\n  \"journals\": %" PRIu64 ",\n  \"journal_bytes\": %" PRIu64 ",\n  \"segments_deleted\": %" PRIu64
           ",\n  \"bytes_deleted\": %" PRIu64 ",\n  \"bytes_after\": %" PRIu64 ",\n  \"size_limit_met\": %s\n}\n",
           st.segments, st.bytes, st.journals, st.journal_bytes, st.segments_deleted, st.bytes_deleted,
           st.bytes_after, st.size_unmet ? "false" : "true");
  if (rc < 0) {
    ba_cli_err("expire", "%s", err[0] ? err : ba_strerror(rc));
    return 2;
  }
  if (!r.json)
    printf("%s %" PRIu64 " of %" PRIu64 " segments (%" PRIu64 " bytes); %" PRIu64
           " bytes left, %" PRIu64 " of them in %" PRIu64 " open journals\n",
           r.dry ? "would delete" : "deleted", st.segments_deleted, st.segments, st.bytes_deleted,
           st.bytes_after, st.journal_bytes, st.journals);
  if (st.size_unmet)
    ba_cli_err("expire", "'%s' is still above --max-size: the open journals alone are larger", dir);
  return 0;
}

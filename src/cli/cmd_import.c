/* bitarc import: nfdump's own files (nfcapd.*, layout 1 and 2, any
 * compression) into a store, read natively; directories are walked like
 * `nfdump -R`. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bitarc/bitarc.h"
#include "bitarc/ingest.h"
#include "bitarc/store.h"
#include "cli/cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: bitarc import --store DIR [options] FILE|DIR...\n"
          "\n"
          "Reads nfdump's binary files (nfcapd.*, nfpcapd.*, sfcapd.*; nfdump 1.6 layout 1\n"
          "and 1.7 layout 2; uncompressed, LZO, LZ4, BZ2 or ZSTD blocks) into a store, with\n"
          "every field nfdump keeps that a bitarc record has. No nfdump program is needed.\n"
          "A directory is read like nfdump -R: every nfdump file below it, in path order\n"
          "(other files are listed and skipped). A damaged file keeps every flow before\n"
          "the damage; the message names the file, the block and its offset.\n"
          "\n"
          "options:\n"
          "  -w, --store DIR     the store to write (created if missing)\n"
          "  -n, --dry-run       decode and count only, write nothing (no --store needed)\n"
          "      --report FMT    summary as text (default, stderr) or json (stdout)\n"
          "  -q, --quiet         no summary\n"
          "%s"
          "\n"
          "examples:\n"
          "  bitarc import --store /tmp/flows /var/cache/nfdump\n"
          "  bitarc import --store /tmp/flows nfcapd.202611250900 nfcapd.202611250905\n"
          "  bitarc import --dry-run --report json /var/cache/nfdump | jq .totals\n"
          "\n"
          "exit status: 0 ok, 1 some file was damaged or had records dropped (the rest is\n"
          "stored), 2 bad usage, a named file that is no nfdump file, or a store error.\n",
          BA_CLI_STORE_HELP);
}

typedef struct imp {
  ba_store_writer_t *w;
  uint64_t stored;
  char **files;
  size_t nfiles, cap;
  uint64_t skipped;  /* files in directories that are not nfdump files */
} imp_t;

static int sink(void *ctx, const ba_record_t *r, size_t n) {
  imp_t *g = ctx;
  if (g->w) {
    int rc = ba_store_writer_append(g->w, r, n);
    if (rc) return rc;
  }
  g->stored += n;
  return 0;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int add_file(imp_t *g, const char *path) {
  if (g->nfiles == g->cap) {
    size_t nc = g->cap ? 2 * g->cap : 64;
    char **nf = realloc(g->files, nc * sizeof(*nf));
    if (!nf) return -1;
    g->files = nf;
    g->cap = nc;
  }
  g->files[g->nfiles] = strdup(path);
  return g->files[g->nfiles++] ? 0 : -1;
}

static int is_nfdump_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  uint8_t b[4];
  size_t n = fread(b, 1, 4, f);
  fclose(f);
  return ba_nffile_detect(b, n);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every nfdump file below dir, sorted by path. */
static int walk(imp_t *g, const char *dir, int depth) {
  if (depth > 32) return 0;
  DIR *d = opendir(dir);
  if (!d) {
    ba_cli_err("import", "%s: cannot read directory: %s", dir, strerror(errno));
    return 2;
  }
  size_t first = g->nfiles;
  struct dirent *e;
  int rc = 0;
  while (!rc && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    size_t n = strlen(dir) + strlen(e->d_name) + 2;
    char *p = malloc(n);
    if (!p) { rc = 2; break; }
    snprintf(p, n, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) rc = walk(g, p, depth + 1);
    else if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
      if (is_nfdump_file(p)) rc = add_file(g, p) ? 2 : 0;
      else g->skipped++;
    }
    free(p);
  }
  closedir(d);
  qsort(g->files + first, g->nfiles - first, sizeof(char *), cmp_str);
  return rc;
}

static void print_drops(FILE *f, const ba_nffile_result_t *r) {
  const char *sep = "; dropped: ";
  for (int k = 0; k < BA_NFDROP_COUNT; k++) {
    if (!r->dropped[k]) continue;
    fprintf(f, "%s%s %" PRIu64 " %s", sep, ba_nffile_drop_name((ba_nffile_drop_t)k), r->dropped[k],
            ba_nffile_drop_unit((ba_nffile_drop_t)k));
    sep = ", ";
  }
}

static void json_file(FILE *f, const char *path, int rc, const ba_nffile_result_t *r) {
  fprintf(f, "{\"file\":");
  ba_cli_json_string(f, path);
  fprintf(f, ",\"status\":");
  ba_cli_json_string(f, rc ? ba_strerror(rc) : "ok");
  fprintf(f, ",\"error\":");
  ba_cli_json_string(f, r->errmsg);
  fprintf(f, ",\"detail\":");
  ba_cli_json_string(f, r->detail);
  fprintf(f, ",\"layout\":%u,\"compression\":\"%s\",\"ident\":", r->layout, ba_nffile_compression_name(r->compression));
  ba_cli_json_string(f, r->ident);
  fprintf(f, ",\"bytes\":%" PRIu64 ",\"blocks\":%" PRIu64 ",\"records\":%" PRIu64 ",\"meta_records\":%" PRIu64
          ",\"elements_skipped\":%" PRIu64 ",\"error_block\":%" PRIu64 ",\"error_offset\":%" PRIu64 ",\"dropped\":{",
          r->file_bytes, r->blocks, r->records, r->meta_records, r->elements_skipped, r->error_block, r->error_offset);
  for (int k = 0; k < BA_NFDROP_COUNT; k++)
    fprintf(f, "%s\"%s\":%" PRIu64, k ? "," : "", ba_nffile_drop_name((ba_nffile_drop_t)k), r->dropped[k]);
  fprintf(f, "}}");
}

/* Reads every listed file; returns the exit status so far. */
static int import_all(imp_t *g, ba_nffile_result_t *res, int *frc, int *stop) {
  int status = 0;
  for (size_t i = 0; i < g->nfiles && !*stop; i++) {
    frc[i] = ba_nffile_ingest(g->files[i], NULL, sink, g, &res[i]);
    if (frc[i] && res[i].dropped[BA_NFDROP_STORE]) {  /* the store refused records: stop */
      ba_cli_err("import", "%s: store: %s%s%s", g->files[i], ba_strerror(frc[i]), g->w ? ": " : "",
                 g->w ? ba_store_writer_errmsg(g->w) : "");
      status = 2;
      *stop = 1;
    } else if (frc[i] == BA_ERR_TRUNCATED || frc[i] == BA_ERR_CORRUPT) {
      ba_cli_err("import", "%s; the %" PRIu64 " flows before it were read", res[i].errmsg, res[i].records);
      if (status < 1) status = 1;
    } else if (frc[i]) {
      ba_cli_err("import", "%s", res[i].errmsg[0] ? res[i].errmsg : ba_strerror(frc[i]));
      status = 2;
    }
    if (!frc[i] && ba_nffile_dropped(&res[i])) {
      ba_cli_err("import", "%s: %" PRIu64 " units dropped (first: %s)", g->files[i], ba_nffile_dropped(&res[i]),
                 res[i].detail);
      if (status < 1) status = 1;
    }
  }
  return status;
}

static void report_text(const imp_t *g, const ba_nffile_result_t *res, const int *frc, double secs, int dry) {
  uint64_t recs = 0;
  for (size_t i = 0; i < g->nfiles; i++) recs += res[i].records;
  fprintf(stderr, "bitarc import: %zu file%s, %" PRIu64 " flows %s in %.2f s", g->nfiles, g->nfiles == 1 ? "" : "s",
          recs, dry ? "decoded" : "stored", secs);
  if (secs > 0) fprintf(stderr, ", %.0f flows/s", (double)recs / secs);
  if (g->skipped) fprintf(stderr, "; %" PRIu64 " other files skipped", g->skipped);
  fputc('\n', stderr);
  for (size_t i = 0; i < g->nfiles; i++) {
    const ba_nffile_result_t *r = &res[i];
    fprintf(stderr, "  %s: ", g->files[i]);
    if (r->layout == 0) {
      fprintf(stderr, "not read: %s\n", r->errmsg);
      continue;
    }
    fprintf(stderr, "layout %u, %s, %" PRIu64 " blocks, %" PRIu64 " flows, %" PRIu64 " meta records", r->layout,
            ba_nffile_compression_name(r->compression), r->blocks, r->records, r->meta_records);
    print_drops(stderr, r);
    if (frc[i]) fprintf(stderr, "; %s", r->errmsg[0] ? r->errmsg : ba_strerror(frc[i]));
    fputc('\n', stderr);
  }
}

int ba_cmd_import(int argc, char **argv) {
  static const struct option lo[] = {{"store", required_argument, 0, 'w'}, {"dry-run", no_argument, 0, 'n'},
                                     {"report", required_argument, 0, 'R'}, {"quiet", no_argument, 0, 'q'},
                                     {"help", no_argument, 0, 'h'},         BA_CLI_STORE_LONGOPTS,
                                     {0, 0, 0, 0}};
  const char *store = NULL;
  int dry = 0, json = 0, quiet = 0, c;
  ba_store_opts_t so;
  ba_store_opts_init(&so);
  optind = 1;
  while ((c = getopt_long(argc, argv, "w:nqh", lo, NULL)) != -1) {
    switch (c) {
    case 'w': store = optarg; break;
    case 'n': dry = 1; break;
    case 'R':
      if (ba_cli_parse_report("import", optarg, &json)) return 2;
      break;
    case 'q': quiet = 1; break;
    case 'h': usage(stdout); return 0;
    case '?': usage(stderr); return 2;
    default:
      if (ba_cli_store_opt("import", c, optarg, &so)) return 2;
    }
  }
  if (optind >= argc) {
    ba_cli_err("import", "no input files or directories (bitarc import --help)");
    return 2;
  }
  if (!store && !dry) {
    ba_cli_err("import", "--store DIR is required (or --dry-run)");
    return 2;
  }
  imp_t g;
  memset(&g, 0, sizeof(g));
  int status = 0;
  for (int i = optind; i < argc && !status; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      ba_cli_err("import", "%s: %s", argv[i], strerror(errno));
      status = 2;
    } else if (S_ISDIR(st.st_mode)) {
      status = walk(&g, argv[i], 0);
    } else if (!is_nfdump_file(argv[i])) {
      ba_cli_err("import", "%s: not an nfdump file (no 0xA50C magic with layout 1 or 2)", argv[i]);
      status = 2;
    } else if (add_file(&g, argv[i])) {
      status = 2;
    }
  }
  if (!status && !dry) {
    status = ba_cli_writer_open("import", store, &so, &g.w);
  }
  ba_nffile_result_t *res = g.nfiles ? calloc(g.nfiles, sizeof(*res)) : NULL;
  int *frc = g.nfiles ? calloc(g.nfiles, sizeof(*frc)) : NULL;
  if (g.nfiles && (!res || !frc)) status = 2;
  uint64_t t0 = now_ns();
  int stop = 0;
  if (!status) status = import_all(&g, res, frc, &stop);
  if (ba_cli_writer_close("import", store, &g.w)) status = 2;
  double secs = (double)(now_ns() - t0) / 1e9;
  if (!quiet && !json && res) report_text(&g, res, frc, secs, dry);
  if (json && (res || !g.nfiles)) {
    uint64_t recs = 0, drops = 0;
    printf("{\"files\":[");
    for (size_t i = 0; i < g.nfiles; i++) {
      if (i) putchar(',');
      json_file(stdout, g.files[i], frc[i], &res[i]);
      recs += res[i].records;
      drops += ba_nffile_dropped(&res[i]);
    }
    printf("],\"totals\":{\"files\":%zu,\"skipped_files\":%" PRIu64 ",\"records\":%" PRIu64 ",\"dropped\":%" PRIu64
           ",\"stored\":%" PRIu64 ",\"seconds\":%.3f,\"dry_run\":%s}}\n",
           g.nfiles, g.skipped, recs, drops, g.stored, secs, dry ? "true" : "false");
  }
  for (size_t i = 0; i < g.nfiles; i++) free(g.files[i]);
  free(g.files);
  free(res);
  free(frc);
  return status;
}

/* bitarc verify: checks every block of every segment of a store. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bitarc/bitarc.h"
#include "cli/cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: bitarc verify --store DIR [--recover] [-q]\n\n"
          "Checks every segment: header, footer, row-group table, every column block\n"
          "(CRC32C, lengths, decompression, layout), the index directory and every\n"
          "bitmap. Damage is reported naming segment, block and offset; exit 1 if any.\n"
          "--recover first finishes the journals (*.open) a crashed writer left, as\n"
          "opening a writer would (refused while a writer runs).\n\n"
          "options:\n"
          "  -s, --store DIR     the store (required)\n"
          "  -r, --recover       finish crashed journals first (default: off)\n"
          "  -q, --quiet         print damage only (default: off)\n"
          "  -h, --help          this text\n\n"
          "examples:\n"
          "  bitarc verify --store st\n"
          "  bitarc verify --store st --recover\n");
}

int ba_cmd_verify(int argc, char **argv) {
  const char *dir = NULL;
  int recover = 0, quiet = 0;
  static const struct option opts[] = {{"store", required_argument, 0, 's'},
                                       {"recover", no_argument, 0, 'r'},
                                       {"quiet", no_argument, 0, 'q'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "s:rqh", opts, NULL)) != -1) {
    if (c == 's') dir = optarg;
    else if (c == 'r') recover = 1;
    else if (c == 'q') quiet = 1;
    else if (c == 'h') {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (!dir || optind != argc) {
    if (!dir) ba_cli_err("verify", "--store DIR is required");
    else ba_cli_err("verify", "unexpected argument '%s' (see --help)", argv[optind]);
    return 2;
  }
  if (recover) {
    ba_store_writer_t *w;
    if (ba_cli_writer_open("verify", dir, NULL, &w)) return 2;
    uint64_t n = ba_store_writer_recovered(w);
    int rc = ba_store_writer_close(w);
    if (!quiet) printf("recovered %" PRIu64 " records from journals\n", n);
    if (rc < 0) {
      ba_cli_err("verify", "recovery of '%s' failed: %s", dir, ba_strerror(rc));
      return 1;
    }
  }
  ba_store_t *s;
  int rc = ba_store_open(dir, &s);
  if (rc < 0) {
    ba_cli_err("verify", "cannot open store '%s': %s", dir, ba_strerror(rc));
    return 2;
  }
  size_t n = ba_store_segment_count(s), badsegs = 0;
  int progress = isatty(2) && !quiet;
  uint64_t badblocks = 0, rows = 0;
  for (size_t i = 0; i < n; i++) {
    ba_segment_t *seg;
    const char *name = ba_store_segment_name(s, i);
    if (progress) fprintf(stderr, "\rverify: segment %zu/%zu %s ", i + 1, n, name);
    if (ba_store_segment(s, i, &seg) < 0) {
      badsegs++;
      badblocks++;
      if (progress) fprintf(stderr, "\r\033[K");
      fprintf(stderr, "bitarc verify: DAMAGED %s\n", ba_store_errmsg(s));
      continue;
    }
    ba_segment_info_t in;
    ba_segment_info(seg, &in);
    uint64_t nbad = 0;
    rc = ba_segment_verify(seg, &nbad);
    if (rc < 0 || nbad) {
      badsegs++;
      badblocks += nbad;
      if (progress) fprintf(stderr, "\r\033[K");
      fprintf(stderr, "bitarc verify: DAMAGED %s (%" PRIu64 " damaged blocks; first: %s)\n", name,
              nbad, ba_store_errmsg(s));
    } else {
      rows += in.rows;
      if (!quiet) printf("ok  %s  %" PRIu64 " records, %u blocks\n", name, in.rows, in.nblocks);
    }
  }
  if (progress) fprintf(stderr, "\r\033[K");
  if (!quiet)
    printf("%zu segments, %zu damaged, %" PRIu64 " damaged blocks, %" PRIu64 " records in clean segments\n",
           n, badsegs, badblocks, rows);
  ba_store_close(s);
  return badsegs ? 1 : 0;
}

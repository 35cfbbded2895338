/* bitarc reindex: rebuild every segment's bitmap index with the batch
 * (sort-based) builder, in another codec or on another device. */
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bitarc/bitarc.h"
#include "cli/cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: bitarc reindex --store DIR --codec C [--threads N] [--device cpu|omp|gpu]\n"
          "       bitarc reindex --store DIR --upgrade [--threads N]\n"
          "       bitarc reindex --store DIR --cluster [--memory MB] [--threads N] [--segment NAME]\n"
          "                      [--idle] [--quiet]\n\n"
          "Rebuilds the bitmap index of every segment with the sort-based batch builder\n"
          "(IMC'13 §3) and replaces each segment atomically (temp file, fsync, rename).\n"
          "The archived records are copied unchanged. --codec and --upgrade are refused\n"
          "while a writer runs; --cluster runs beside one (a collector).\n\n"
          "options:\n"
          "  -s, --store DIR     the store (required)\n"
          "  -c, --codec C       wah32, wah64, plwah, compax, masc, masc-qt (required unless --upgrade)\n"
          "  -t, --threads N     builder threads, 1..64 (default 2)\n"
          "  -d, --device D      cpu (default; pthreads), omp (the GPU pipeline on OpenMP\n"
          "                      threads) or gpu (CUDA module; needs an NVIDIA GPU).\n"
          "                      Every device writes the same bytes.\n"
          "      --upgrade       rewrite 1.0 to 3.1 segments in format 3.2 (default: off)\n"
          "                      (the records in the same order, extended columns, port\n"
          "                      bins, each segment replaced atomically; 3.0 segments are\n"
          "                      left alone; keeps each segment's codec)\n"
          "      --cluster       cluster rows by address (default: off): rewrite every\n"
          "                      closed segment not yet clustered so that the rows of one\n"
          "                      address sit together, on either side: rows\n"
          "                      sorted by the Morton (Z-order) key of the source's and\n"
          "                      the destination's rank among the segment's addresses\n"
          "                      (doc/format.md 7.9). A selective query on an address\n"
          "                      then reads a few row groups instead of nearly all of\n"
          "                      them. Records still come out of queries in time order;\n"
          "                      counts and aggregates are unchanged. Each segment is\n"
          "                      replaced atomically (crash-safe; queries see the old or\n"
          "                      the new file); older ones become 3.2. Safe while\n"
          "                      `bitarc collect` writes to the store: the slices it has\n"
          "                      open are never touched, a segment expired meanwhile is\n"
          "                      left alone; one clustering at a time (DIR/.cluster.lock).\n"
          "                      Memory: about 64 bytes a row of the largest segment\n"
          "                      while ordering (10 M rows: ~640 MB), then 4 bytes a row\n"
          "                      plus --memory for records; progress goes to stderr\n"
          "      --memory MB     cluster: records held at once (default 1024; a segment\n"
          "                      with more rows than MB / 344 bytes is read in several\n"
          "                      passes)\n"
          "      --segment NAME  cluster: only this segment (its file name in DIR; default:\n"
          "                      every one); exit 3 when nothing was done (already\n"
          "                      clustered, deleted or replaced meanwhile, or no such\n"
          "                      segment)\n"
          "      --idle          run at idle priority (default: off): CPU SCHED_IDLE and\n"
          "                      nice 19, I/O class idle, and first in line for the OOM\n"
          "                      killer (what collect --cluster uses)\n"
          "  -q, --quiet         cluster: no progress lines, errors only (default: off)\n"
          "  -h, --help          this text\n\n"
          "examples:\n"
          "  bitarc reindex --store st --codec plwah\n"
          "  bitarc reindex --store st --codec masc --threads 2 --device cpu\n"
          "  bitarc reindex --store st --upgrade\n"
          "  bitarc reindex --store st --cluster --memory 512\n"
          "  bitarc reindex --store /var/lib/bitarc/flows --cluster --idle    # beside collect\n");
}

/* --idle: the lowest CPU and I/O priority this process can take, and the
 * first to go when memory runs out (never the collector that started it).
 * Each step is best effort. */
static void go_idle(void) {
  struct sched_param sp = {0};
  sched_setscheduler(0, SCHED_IDLE, &sp); /* threads created later inherit it */
  if (setpriority(PRIO_PROCESS, 0, 19) != 0) { /* ignored */
  }
#ifdef SYS_ioprio_set
  syscall(SYS_ioprio_set, 1 /* IOPRIO_WHO_PROCESS */, 0, 3 << 13 /* IOPRIO_CLASS_IDLE */);
#endif
  FILE *f = fopen("/proc/self/oom_score_adj", "w");
  if (f) {
    fputs("1000", f);
    fclose(f);
  }
}

static void note_stderr(void *ctx, const char *msg) {
  (void)ctx;
  fprintf(stderr, "bitarc reindex: %s\n", msg);
}

/* reindex --cluster [--segment NAME]: exit 0, 3 (--segment: nothing done), 2
 * (busy, missing store) or 1. */
static int run_cluster(const char *dir, const char *segment, int threads, long mem_mb, int quiet) {
  size_t n = 0;
  char err[512] = "";
  void (*note)(void *, const char *) = quiet ? NULL : note_stderr;
  int rc;
  if (segment) {
    rc = ba_store_cluster_segment(dir, segment, threads, (size_t)mem_mb << 20, note, NULL, err, sizeof err);
    if (rc >= 0) {
      if (!quiet)
        fprintf(stderr, "bitarc reindex: %s %s\n", segment,
                rc == BA_OK ? "clustered" : "left as it is (already clustered, or deleted or replaced meanwhile)");
      return rc == BA_OK ? 0 : 3;
    }
    if (rc == BA_ERR_NOT_FOUND && err[0]) {
      ba_cli_err("reindex", "cluster: %s", err);
      return 3;
    }
  } else {
    rc = ba_store_cluster(dir, threads, (size_t)mem_mb << 20, note, NULL, &n, err, sizeof err);
    if (rc >= 0) {
      if (!quiet) fprintf(stderr, "bitarc reindex: %zu segments clustered\n", n);
      return 0;
    }
  }
  ba_cli_err("reindex", "cluster '%s': %s (%zu segments clustered before)", dir, err[0] ? err : ba_strerror(rc), n);
  return rc == BA_ERR_NOT_FOUND || rc == BA_ERR_BUSY ? 2 : 1;
}

int ba_cmd_reindex(int argc, char **argv) {
  const char *dir = NULL, *codec_name = NULL, *device = "cpu", *segment = NULL;
  int threads = 2, upgrade = 0, cluster = 0, idle = 0, quiet = 0;
  long mem_mb = 1024;
  static const struct option opts[] = {{"store", required_argument, 0, 's'},
                                       {"codec", required_argument, 0, 'c'},
                                       {"threads", required_argument, 0, 't'},
                                       {"device", required_argument, 0, 'd'},
                                       {"upgrade", no_argument, 0, 'u'},
                                       {"cluster", no_argument, 0, 'C'},
                                       {"memory", required_argument, 0, 'm'},
                                       {"segment", required_argument, 0, 'S'},
                                       {"idle", no_argument, 0, 'I'},
                                       {"quiet", no_argument, 0, 'q'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "s:c:t:d:qh", opts, NULL)) != -1) {
    if (c == 's') dir = optarg;
    else if (c == 'c') codec_name = optarg;
    else if (c == 't') {
      uint64_t v;
      if (ba_cli_opt_u64("reindex", "threads", optarg, 1, 64, &v)) return 2;
      threads = (int)v;
    } else if (c == 'd') device = optarg;
    else if (c == 'u') upgrade = 1;
    else if (c == 'C') cluster = 1;
    else if (c == 'S') segment = optarg;
    else if (c == 'I') idle = 1;
    else if (c == 'q') quiet = 1;
    else if (c == 'm') {
      uint64_t v;
      if (ba_cli_opt_u64("reindex", "memory", optarg, 1, 1u << 20, &v)) return 2;
      mem_mb = (long)v;
    }
    else if (c == 'h') {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  if ((segment || idle) && !cluster) {
    ba_cli_err("reindex", "%s goes with --cluster", segment ? "--segment" : "--idle");
    return 2;
  }
  if (cluster) {
    if (upgrade || codec_name || !dir || optind != argc) {
      ba_cli_err("reindex", "%s", !dir ? "--store DIR is required"
                 : optind != argc ? "unexpected argument (see --help)"
                                  : "--cluster keeps each segment's codec: drop --codec/--upgrade");
      return 2;
    }
    if (idle) go_idle();
    return run_cluster(dir, segment, threads, mem_mb, quiet);
  }
  if (upgrade && dir && !codec_name && optind == argc) {
    size_t n = 0;
    char err[512];
    int rc = ba_store_upgrade(dir, threads, &n, err, sizeof err);
    if (rc < 0) {
      ba_cli_err("reindex", "upgrade of '%s': %s (%zu segments upgraded before)", dir, err[0] ? err : ba_strerror(rc), n);
      return 1;
    }
    fprintf(stderr, "bitarc reindex: %zu segments upgraded to format 3.2\n", n);
    return 0;
  }
  if (upgrade && codec_name) {
    ba_cli_err("reindex", "--upgrade keeps each segment's codec: drop --codec (reindex afterwards to change it)");
    return 2;
  }
  if (!dir || !codec_name || optind != argc) {
    if (!dir || !codec_name) ba_cli_err("reindex", "%s", !dir ? "--store DIR is required" : "--codec C is required");
    else ba_cli_err("reindex", "unexpected argument '%s' (see --help)", argv[optind]);
    return 2;
  }
  ba_codec_t codec;
  if (ba_codec_from_name(codec_name, &codec) < 0) {
    ba_cli_err("reindex", "unknown codec '%s' (wah32, wah64, plwah, compax, masc, masc-qt)", codec_name);
    return 2;
  }
  if (ba_cli_device_check("reindex", device) != 0) return 2;
  if (codec == BA_CODEC_COMPAX && strcmp(device, "cpu") != 0) {
    ba_cli_err("reindex", "--codec compax is built on --device cpu only: its LFL/FLF merge is a "
               "sequential look-back pass (src/gpu/README.md)");
    return 2;
  }
  char err[512] = "";
  size_t n = 0;
  int rc = ba_store_reindex(dir, codec, device, threads, &n, err, sizeof err);
  if (rc == BA_ERR_NODEVICE || rc == BA_ERR_INVALID) {
    ba_cli_err("reindex", "--device '%s': %s", device, err[0] ? err : ba_strerror(rc));
    return 2;
  }
  if (rc < 0) {
    ba_cli_err("reindex", "store '%s': %s", dir, err[0] ? err : ba_strerror(rc));
    return rc == BA_ERR_NOT_FOUND || rc == BA_ERR_BUSY ? 2 : 1;
  }
  printf("reindexed %zu segments with %s on %s\n", n, codec_name, device);
  return 0;
}

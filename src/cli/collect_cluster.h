/* bitarc collect --cluster: each segment the collector closes is clustered
 * (doc/format.md §7.9) by a child process, `bitarc reindex --cluster
 * --segment NAME --idle` (idle CPU and I/O priority, first in line for the
 * OOM killer), one segment at a time, so ingest is never delayed and a crash
 * of the clustering never takes the collector along. A segment that closes
 * while another one is being clustered is skipped (counted; a later `bitarc
 * reindex --cluster` does it). collect_cluster.c. */
#ifndef BA_CLI_COLLECT_CLUSTER_H
#define BA_CLI_COLLECT_CLUSTER_H

#include <stdint.h>
#include <sys/types.h>

enum { BA_CLI_OPT_CLUSTER = 1200, BA_CLI_OPT_CLUSTER_MEMORY };
#define BA_CLI_CLUSTER_LONGOPTS                                                                         \
  {"cluster", no_argument, 0, BA_CLI_OPT_CLUSTER},                                                      \
  {"cluster-memory", required_argument, 0, BA_CLI_OPT_CLUSTER_MEMORY}
#define BA_CLI_CLUSTER_HELP                                                                             \
  "clustering (rows of one address together, doc/format.md 7.9: selective record output and\n"        \
  "-s on an address several to 100x faster, a smaller store; as bitarc reindex --cluster):\n"       \
  "      --cluster          cluster each segment after it closes (default: off), in a child\n"     \
  "                         process at idle CPU and I/O priority, one segment at a time, never\n"  \
  "                         delaying ingest; a segment closing while one is being clustered is\n" \
  "                         skipped (counted in the status and report; reindex --cluster does\n"  \
  "                         it later). Cost, for a 10 M-flow segment: ~25 s of otherwise idle\n"  \
  "                         CPU and ~1.4 GB peak memory of the child at the default\n"            \
  "                         --cluster-memory (2 M flows: ~5 s)\n"                                  \
  "      --cluster-memory MB records the child holds at once (default 1024, as reindex\n"          \
  "                         --memory; 256: peak ~0.65 GB for 10 M flows, 2-3x the time)\n"

typedef struct ba_cli_cluster {
  int on;
  long mem_mb;        /* 0 = the default (1024) */
  int log_fd;         /* the child's stderr */
  pid_t pid;          /* the child clustering `cur`; 0 = none */
  char cur[256];
  uint64_t started_ns;
  char **known;       /* complete segments of the last listing, sorted */
  size_t nknown;
  uint64_t next_ns;   /* monotonic time of the next listing */
  uint64_t clustered, skipped, failed;
} ba_cli_cluster_t;

/* Applies one of the options above; 0, or 2 after an error naming it. */
int ba_cli_cluster_opt(int opt, const char *arg, ba_cli_cluster_t *c);
/* Lists the store's segments (those present are not the collector's to
 * cluster). 0, or 2 after an error. */
int ba_cli_cluster_begin(ba_cli_cluster_t *c, const char *store);
/* Reaps a finished child, then (every second) lists the store: a segment
 * not seen before is clustered, or skipped when a child is busy. Lines for
 * the operator go to note (quiet: trouble only). Never fails the collector. */
void ba_cli_cluster_tick(ba_cli_cluster_t *c, const char *store, uint64_t now_ns, int quiet,
                         void (*note)(void *ctx, const char *line), void *ctx);
/* At stop: a running child is stopped (its segment stays as it was) and its
 * scratch removed; frees the listing. */
void ba_cli_cluster_end(ba_cli_cluster_t *c, const char *store, int quiet, void (*note)(void *ctx, const char *line),
                        void *ctx);

#endif

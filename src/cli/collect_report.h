/* bitarc collect's reports: the live status line, the final text report and
 * the JSON document used both for --report json and the --stats file. */
#ifndef BA_CLI_COLLECT_REPORT_H
#define BA_CLI_COLLECT_REPORT_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "bitarc/ingest.h"

/* A snapshot of the collector's counters (taken on the polling thread). */
typedef struct ba_coll_snap {
  double secs;             /* since the collector started */
  uint64_t stored;         /* flows the store accepted */
  double rate;             /* flows stored per second over the last interval */
  uint64_t rss_bytes;      /* resident memory of the process (0 if unknown) */
  int final;               /* the collector has stopped */
  uint64_t live_blocks, live_bytes; /* LIVE blocks written for live queries (set by the caller) */
  int cluster_on;                   /* collect --cluster (set by the caller, as the three counts) */
  uint64_t clustered, cluster_skipped, cluster_failed;
  ba_collector_stats_t st;
  ba_collector_socket_t so[BA_COLLECTOR_MAX_SOCKETS];
  size_t nso;
  ba_collector_exporter_t *ex; /* ascending address; free with ba_coll_snap_clear */
  size_t nex;
  ba_flow_template_info_t *tp; /* every template (with the exporters); freed likewise */
  size_t ntp;
} ba_coll_snap_t;

/* Fills s (exporters too when with_exporters); *prev_stored / *prev_secs
 * hold the previous snapshot's values for the rate and are updated. */
void ba_coll_snap_take(ba_collector_t *c, uint64_t stored, double secs, int with_exporters, ba_coll_snap_t *s,
                       uint64_t *prev_stored, double *prev_secs);
void ba_coll_snap_clear(ba_coll_snap_t *s);

/* "64.0 MiB" */
void ba_coll_fmt_bytes(char *buf, size_t len, uint64_t v);
/* One line: time, flows/s, stored, queue fill, drops by kind, RSS. */
void ba_coll_status_line(FILE *f, const ba_coll_snap_t *s);
/* Final report: totals, decoder counts, one line per socket and exporter. */
void ba_coll_report_text(FILE *f, const ba_coll_snap_t *s);
/* The JSON document (one line). */
void ba_coll_report_json(FILE *f, const ba_coll_snap_t *s);
/* Replaces the file at path with the JSON document atomically (written to
 * path.tmp, then renamed over path): a reader sees the old or the new
 * document, never a part. 0, or -1 with errno set. */
int ba_coll_stats_write(const char *path, const ba_coll_snap_t *s);
/* The same with the text report (text = 1, ba_coll_report_text) or the JSON
 * one, created with `mode` (0600 inside a store, as its other files). */
int ba_coll_report_write(const char *path, const ba_coll_snap_t *s, int text, mode_t mode);

#endif

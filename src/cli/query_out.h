/* bitarc query's output side (cmd_query_out.c): the record sink (print,
 * buffer for -O, aggregate, write pcap) and the tables and summary printed
 * after the run, in nfdump's formats. */
#ifndef BA_CLI_QUERY_OUT_H
#define BA_CLI_QUERY_OUT_H

#include <stdint.h>
#include <stdio.h>

#include "bitarc/query.h"

#define QO_MAX_STATS 16
#define BA_FORWARD_CLI(e)    \
  do {                      \
    int rc_ = (e);          \
    if (rc_ < 0) return rc_; \
  } while (0)

/* The helper thread of query_out_wr.c: reads the time zone at start, then
 * writes the row chunks it is handed, in order, while the query formats the
 * next ones. Anything else written to the same stream waits for
 * qo_writer_sync first. */
typedef struct qo_writer qo_writer_t;
/* 1 if reading the local time zone (/etc/localtime) would wait for the
 * disk: its path or first page is not cached (or this cannot be told). */
int qo_tz_cold(void);
/* Starts it on `out` (tz: read the local time zone first). */
int qo_writer_start(qo_writer_t **w, FILE *out, int tz);
/* Hands over (*buf)[0..n), *cap bytes allocated, once the chunk before it is
 * written; *buf and *cap become a free buffer. BA_ERR_IO (errno set) if a
 * chunk failed to be written, BA_ERR_NOMEM. */
int qo_writer_put(qo_writer_t *w, char **buf, size_t *cap, size_t n);
/* Waits until every chunk handed over is written: 0, or BA_ERR_IO with errno
 * set if one failed (nothing after it was written). */
int qo_writer_sync(qo_writer_t *w);
/* Writes what it still holds and ends the thread; NULL is a no-op. */
void qo_writer_stop(qo_writer_t *w);

typedef struct qstat {
  ba_query_agg_spec_t spec;
  ba_agg_order_t order;
  uint8_t dir;             /* counters shown: 0 in, 1 in + out, 2 out (nfdump's IN, INOUT, OUT) */
  const char *ordname;     /* as given: "bytes", "ibyte", "opkg", ... */
  ba_query_agg_t *agg;
  const char *text;
} qstat_t;

typedef struct qout {
  ba_query_format_t *fmt;
  unsigned fmt_flags;
  FILE *out;
  int count_only, quiet, full_v6;
  qstat_t stats[QO_MAX_STATS];
  int nstats;
  ba_query_agg_t *agg;     /* -A / -a / -b / -B */
  int sort;                /* -O given */
  ba_agg_order_t sort_order;
  ba_record_t *held;       /* -O: records kept for sorting */
  size_t nheld, held_cap;
  uint64_t topn;           /* -n */
  FILE *pcap;
  const char *pcap_path;
  int pcap_link;           /* -1 until the first frame */
  uint64_t pcap_skipped;   /* frames of another link type, or flow records */
  char *line;
  size_t line_cap;
  size_t line_used;        /* with wr: rows formatted in line, not yet handed over */
  qo_writer_t *wr;         /* rows written by the helper thread (NULL: by this one) */
  int io_error, io_errno;
  /* -s / -A from column vectors (qo_fields_init): the fields of every
   * aggregator, and where each one's fields are among them */
  uint16_t fields[BA_FIELDS_MAX - 8];
  size_t nfields;
  uint8_t fmap[QO_MAX_STATS + 1][BA_FIELDS_MAX];
} qout_t;

int qo_sink(void *vctx, const ba_record_t *recs, size_t n);
/* Sets o->fields for the aggregators (-s, -A); 0 if they cannot take column
 * vectors (no aggregator, too many fields), else 1. */
int qo_fields_init(qout_t *o);
/* The column-vector sink (o->fields): each aggregator gets its fields. */
int qo_field_sink(void *vctx, const uint64_t *const *vals, size_t n);
/* Prints one formatted record (grows the line buffer). */
int qo_print(qout_t *o, const ba_record_t *r, uint64_t flows);
void qo_pcap_finish(qout_t *o);
/* Before anything else is written to o->out: the rows formatted so far
 * written (o->wr). A failed write sets o->io_error and o->io_errno (and
 * fails the next chunk handed over) but not the call: 0, or BA_ERR_NOMEM. */
int qo_sync(qout_t *o);
/* After the run: -O output, -A groups, -s tables. */
int qo_finish(qout_t *o, const ba_query_stats_t *qs);
/* nfdump's summary (text or csv) unless quiet. */
void qo_summary(const qout_t *o, const ba_query_stats_t *qs, double secs);

#endif

/* bitarc graph: the computed series and its writers (cmd_graph.c computes,
 * graph_out.c writes csv and draws SVG/PNG through gnuplot). */
#ifndef BA_CLI_GRAPH_H
#define BA_CLI_GRAPH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bitarc/query.h"
#include "cli/query_stores.h"

#define GRAPH_MAX_FILTERS 32

typedef struct gseries {
  char *label;                 /* the filter's label (--label, else its text, else "any") */
  ba_query_series_bin_t *bins; /* nbins */
} gseries_t;

typedef struct gdata {
  uint64_t start_ns, bin_ns;
  size_t nbins;
  unsigned measures;  /* BA_SERIES_* */
  int rate;           /* values per second instead of per bin */
  int local;          /* times in the local time zone */
  int stacked;        /* -s: the series are parts of one whole, drawn stacked */
  gseries_t s[GRAPH_MAX_FILTERS];
  size_t n;
} gdata_t;

typedef struct gplot {
  const char *title;  /* NULL: a title from the window */
  unsigned width, height;
  int logscale;
} gplot_t;

/* -s STAT[/ORDER] -n N (graph_top.c): the N largest values of STAT (srcip,
 * dstip, their prefixes, srcport, dstport, proto; ORDER flows, packets or
 * bytes) under the filter in [start_ns, end_ns), as `bitarc query -s` ranks
 * them, each as the filter "(FILTER) and <term>" labelled by the value, then
 * "other" (the filter's flows of none of them). 0, or 2 after an error printed. */
typedef struct gtop {
  char **filters, **labels;
  size_t n;
} gtop_t;
int graph_top_filters(const qstores_t *stores, const char *stat, size_t topn, const char *filter, uint64_t now_ns,
                      uint64_t start_ns, uint64_t end_ns, gtop_t *out);
void graph_top_free(gtop_t *t);

/* The series as csv: header, then one row per bin. 0, or -1 on a write error. */
int graph_write_csv(const gdata_t *d, FILE *f);
/* Draws the series with gnuplot ("svg" or "png") into path ("-" = stdout).
 * 0, or 2 after an error (gnuplot missing or failing) printed to stderr. */
int graph_draw(const gdata_t *d, const gplot_t *p, const char *kind, const char *path);
/* A bin width as text: "5 min", "1 h", "90 s". */
void graph_bin_text(uint64_t bin_ns, char *buf, size_t cap);

#endif

/* Live query (live.c): journals of the slices being written, read by a
 * linear scan in time order with the segments of a run. */
#ifndef BA_QUERY_LIVE_H
#define BA_QUERY_LIVE_H

#include "query/plan_int.h"

typedef struct live live_t;

/* Lists the journals of s (and segments finished since s was opened) whose
 * slice may hold rows of [ws, we). *out = NULL when q has live off. */
int live_open(ba_query_t *q, ba_store_t *s, uint64_t ws, uint64_t we, live_t **out);
/* Delivers, through run_sink, the listed slices that sort before the
 * segment (start, name) (name NULL: all that are left). *stop is set when
 * the run's limit is reached or fn asked to stop. */
int live_before(live_t *lv, uint64_t start, const char *name, runctx_t *run, const ba_query_exec_opts_t *o,
                ba_query_t *q, int *stop);
void live_free(live_t *lv);

#endif

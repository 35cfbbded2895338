/* What `bitarc query` and `bitarc graph` share (query_stores.c): the stores
 * they read (repeated -r/-R DIR and nfdump's -M /path/dir1:dir2:dir3;
 * several stores are answered by ba_query_run_multi, rows merged in
 * start-time order) and the options that choose how (-t, --tz, --threads). */
#ifndef BA_CLI_QUERY_STORES_H
#define BA_CLI_QUERY_STORES_H

#include <stddef.h>
#include <stdint.h>

#include "bitarc/query.h"
#include "bitarc/store.h"

typedef struct qstores {
  char **dir;         /* as given (or as -M expands them) */
  ba_store_t **st;    /* open handles, NULL until qs_open */
  size_t n, cap;
  const char *mlist;  /* the -M argument, for messages */
  int live;           /* qs_data_range counts the live rows of open slices too */
} qstores_t;

/* -r/-R DIR: one more store. 0, or 2 after an error. */
int qs_add(qstores_t *s, const char *dir);
/* -M /any/path/dir1:dir2:dir3 -> /any/path/dir1, /any/path/dir2, ... (nfdump's
 * expansion; without a '/' the names are relative to the current directory).
 * 0, or 2 after an error naming the empty element. */
int qs_add_m(qstores_t *s, const char *list);
/* After option parsing, -M LIST: with nfdump's '-R .' (every file of each
 * directory) makes the -M directories the stores; any other -r/-R beside -M
 * is an error naming it (a store has no files to pick). 0 or 2. */
int qs_merge_m(qstores_t *s, const char *cmd, const char *list);
/* Opens every store; a store that cannot be opened, or one given twice (its
 * flows would count twice), is an error naming it. 0 or 2. */
int qs_open(qstores_t *s);
/* The first and last flow start over every store (-t +N / -N); -1 if empty. */
int qs_data_range(const qstores_t *s, uint64_t *lo, uint64_t *hi);
/* The directory of store i as the user gave it. */
const char *qs_name(const qstores_t *s, size_t i);
void qs_free(qstores_t *s);

/* Threads for a run: 2 when a second CPU is idle, else 1 (on a busy machine
 * two threads share one CPU and the hand-off costs about 10%). */
int qs_default_threads(void);
/* --threads 1|2 and --tz utc|local: 0, or 2 after an error naming cmd. */
int qs_opt_threads(const char *cmd, const char *arg, int *threads);
int qs_opt_tz(const char *cmd, const char *arg, int *local);
/* -t TEXT (ba_query_parse_window): 0, or 2 after an error naming the window
 * and the forms it may take. */
int qs_parse_window(const char *cmd, const char *text, uint64_t now_ns, int local, ba_query_window_t *w);

#endif

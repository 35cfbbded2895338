/* bitarc query's and graph's store list (repeated -r/-R and nfdump's -M)
 * and the run options they share (query_stores.h). */
#include <errno.h>
#include <stdio.h>
#include <strings.h>
#include <unistd.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bitarc/bitarc.h"
#include "cli/cli.h"
#include "cli/query_stores.h"

static int push(qstores_t *s, char *dir) {
  if (!dir) return 2;
  if (s->n == s->cap) {
    size_t nc = s->cap ? 2 * s->cap : 4;
    char **nd = realloc(s->dir, nc * sizeof(*nd));
    if (!nd) {
      free(dir);
      return 2;
    }
    s->dir = nd;
    s->cap = nc;
  }
  s->dir[s->n++] = dir;
  return 0;
}

int qs_add(qstores_t *s, const char *dir) {
  if (!*dir) {
    ba_cli_err("query", "-r/-R wants a store directory, not an empty string");
    return 2;
  }
  return push(s, strdup(dir));
}

int qs_add_m(qstores_t *s, const char *list) {
  s->mlist = list;
  const char *colon = strchr(list, ':');
  if (!colon) return qs_add(s, list);
  /* the prefix is the first element's directory: /any/path of /any/path/dir1 */
  const char *slash = NULL;
  for (const char *p = list; p < colon; p++)
    if (*p == '/') slash = p;
  size_t plen = slash ? (size_t)(slash - list) + 1 : 0;
  const char *p = list + plen;
  for (;;) {
    const char *e = strchr(p, ':');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (l == 0) {
      ba_cli_err("query", "-M %s: an empty directory name (want /any/path/dir1:dir2:dir3)", list);
      return 2;
    }
    char *d = malloc(plen + l + 1);
    if (!d) return 2;
    memcpy(d, list, plen);
    memcpy(d + plen, p, l);
    d[plen + l] = 0;
    if (push(s, d) != 0) return 2;
    if (!e) break;
    p = e + 1;
  }
  return 0;
}

int qs_open(qstores_t *s) {
  s->st = calloc(s->n ? s->n : 1, sizeof(*s->st));
  if (!s->st) return 2;
  for (size_t i = 0; i < s->n; i++) {
    struct stat a;
    if (stat(s->dir[i], &a) == 0) {
      for (size_t j = 0; j < i; j++) {
        struct stat b;
        if (stat(s->dir[j], &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
          ba_cli_err("query", "store '%s' is given twice (as '%s'): its flows would count twice", s->dir[i], s->dir[j]);
          return 2;
        }
      }
    }
    int rc = ba_store_open(s->dir[i], &s->st[i]);
    if (rc < 0) {
      ba_cli_err("query", "cannot open store '%s'%s%s%s: %s%s%s", s->dir[i], s->mlist ? " (from -M " : "",
                 s->mlist ? s->mlist : "", s->mlist ? ")" : "", ba_strerror(rc), s->st[i] ? ": " : "",
                 s->st[i] ? ba_store_errmsg(s->st[i]) : "");
      return 2;
    }
    if (s->n > 1 && ba_store_segment_count(s->st[i]) == 0)
      ba_cli_err("query", "warning: store '%s' holds no segments (not a bitarc store, or nothing archived yet)",
                 s->dir[i]);
  }
  return 0;
}

typedef struct span {
  uint64_t lo, hi;
} span_t;

static int span_sink(void *ctx, const ba_record_t *r, size_t n) {
  span_t *s = ctx;
  for (size_t i = 0; i < n; i++) {
    if (r[i].first_ns < s->lo) s->lo = r[i].first_ns;
    if (r[i].first_ns > s->hi) s->hi = r[i].first_ns;
  }
  return 0;
}

/* Widens [*lo, *hi] by the start times of the live rows (journals of the
 * slices a collector is writing) that start after every segment's rows: a
 * query of every flow from `from` on reads the journals and, from the
 * segments, only what the index finds there (nothing, or a few rows). */
static void live_span(ba_store_t *st, uint64_t from, uint64_t *lo, uint64_t *hi) {
  ba_query_t *q = NULL;
  if (ba_query_create(&q) < 0) return;
  ba_query_set_live(q, 1);
  span_t s = {*lo, *hi};
  ba_query_exec_opts_t eo;
  ba_query_exec_opts_init(&eo);
  eo.start_ns = from;
  eo.out_cols = BA_COL_FIRST;
  eo.threads = 1;
  if (ba_query_compile(q, "any") == 0 && ba_query_run(q, st, &eo, span_sink, &s, NULL) >= 0) {
    *lo = s.lo;
    *hi = s.hi;
  }
  ba_query_free(q);
}

int qs_data_range(const qstores_t *s, uint64_t *lo, uint64_t *hi) {
  *lo = UINT64_MAX;
  *hi = 0;
  for (size_t k = 0; k < s->n; k++) {
    ba_store_t *st = s->st[k];
    uint64_t shi = 0;
    int any = 0;
    for (size_t i = 0; i < ba_store_segment_count(st); i++) {
      ba_segment_t *seg;
      ba_segment_info_t in;
      if (ba_store_segment(st, i, &seg) < 0 || ba_segment_info(seg, &in) < 0 || in.rows == 0) continue;
      if (in.min_first_ns < *lo) *lo = in.min_first_ns;
      if (in.max_first_ns > *hi) *hi = in.max_first_ns;
      if (!any || in.max_first_ns > shi) shi = in.max_first_ns;
      any = 1;
    }
    if (s->live) live_span(st, any ? shi + 1 : 0, lo, hi);
  }
  return *lo <= *hi ? 0 : -1;
}

const char *qs_name(const qstores_t *s, size_t i) { return i < s->n ? s->dir[i] : "?"; }

void qs_free(qstores_t *s) {
  for (size_t i = 0; i < s->n; i++) {
    if (s->st) ba_store_close(s->st[i]);
    free(s->dir[i]);
  }
  free(s->dir);
  free(s->st);
  memset(s, 0, sizeof(*s));
}

int qs_merge_m(qstores_t *s, const char *cmd, const char *list) {
  for (size_t i = 0; i < s->n; i++) {
    const char *d = s->dir[i];
    if (strcmp(d, ".") && strcmp(d, "./")) {
      ba_cli_err(cmd,
                 "-r/-R '%s' with -M %s: nfdump reads those files inside each -M directory, but a bitarc "
                 "store has no files to pick; give -M alone (or with -R .) and choose the time with -t",
                 d, list);
      return 2;
    }
  }
  qs_free(s);
  return qs_add_m(s, list);
}

/* Tasks running or runnable now, this one included: /proc/loadavg's fourth
 * field ("4/312"); -1 where it cannot be read. */
static long running_now(void) {
  FILE *f = fopen("/proc/loadavg", "r");
  long r = -1, total;
  double a, b, c;
  if (f) {
    if (fscanf(f, "%lf %lf %lf %ld/%ld", &a, &b, &c, &r, &total) != 5) r = -1;
    fclose(f);
  }
  return r;
}

/* 2 unless the other tasks running now fill every CPU (as the load average
 * did before: above n - 0.5). The tasks running at this moment decide,
 * not the 1-minute load average, which decays with a one-minute time
 * constant: after a minute of work on both CPUs it stays above n - 0.5 for
 * a while, and a query started on the then idle machine took one thread.
 * The load average serves where /proc/loadavg cannot be read. */
int qs_default_threads(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 2) return 1;
  long r = running_now();
  if (r >= 1) return (double)(r - 1) > (double)n - 0.5 ? 1 : 2;
  double load[1];
  if (getloadavg(load, 1) == 1 && load[0] > (double)n - 0.5) return 1;
  return 2;
}

int qs_opt_threads(const char *cmd, const char *arg, int *threads) {
  if (strcmp(arg, "1") && strcmp(arg, "2")) {
    ba_cli_err(cmd, "--threads wants 1 or 2, not '%s'", arg);
    return 2;
  }
  *threads = arg[0] - '0';
  return 0;
}

int qs_opt_tz(const char *cmd, const char *arg, int *local) {
  if (!strcmp(arg, "local")) *local = 1;
  else if (!strcasecmp(arg, "utc")) *local = 0;
  else {
    ba_cli_err(cmd, "--tz wants utc or local, not '%s'", arg);
    return 2;
  }
  return 0;
}

int qs_parse_window(const char *cmd, const char *text, uint64_t now_ns, int local, ba_query_window_t *w) {
  if (ba_query_parse_window(text, now_ns, local, w) < 0) {
    ba_cli_err(cmd, "bad time window '%s' (want YYYY/MM/dd.hh:mm[:ss][-YYYY/MM/dd.hh:mm[:ss]], +N or -N seconds, or 3h)",
               text);
    return 2;
  }
  return 0;
}

/* Live query: the records of the slices being written, read from their
 * journals (doc/format.md §5) with a linear scan and the record evaluator,
 * delivered in time order with the segments (exec.c calls live_before).
 *
 * A journal can be finished (index appended, renamed to its segment name)
 * at any moment. The store handle listed its segments before the run;
 * live_open then lists the journals, then the segments again. A slice
 * renamed before the second listing is in it (read from the segment, unless
 * the handle has that segment already); one renamed after is in the journal
 * listing. Each slice is read from one file only, as a journal: the group
 * walk reads a finished segment's row groups the same way and stops at its
 * index. Opening a journal that is gone means it was just renamed: its
 * segment is read instead. So no row is read twice or missed. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "archive/archive.h"
#include "query/live.h"

typedef struct litem {
  char name[112]; /* segment name (a journal is name + ".open") */
  uint64_t start;
  int journal;    /* listed as a journal (and not as a segment) */
} litem_t;

struct live {
  int dirfd;
  litem_t *it;
  size_t n, cap, next;
  uint64_t ws, we;
  ba_record_t *pend; /* LIVE rows of the open group, held until its GROUP block or the end */
  uint8_t *pframes;
  size_t npend, pcap, nframes, fcap;
};

void ba_query_set_live(ba_query_t *q, int on) {
  if (q) q->no_live = !on;
}

void ba_query_live_stats(const ba_query_t *q, uint64_t *files, uint64_t *rows) {
  if (files) *files = q ? q->live_files : 0;
  if (rows) *rows = q ? q->live_rows : 0;
}

/* The store reader's order (header start, then name): start, then the names' order. */
static int key_cmp(uint64_t sa, const char *a, uint64_t sb, const char *b) {
  if (sa != sb) return sa < sb ? -1 : 1;
  return ba_segment_name_cmp(a, b);
}

static int item_cmp(const void *x, const void *y) {
  const litem_t *a = x, *b = y;
  return key_cmp(a->start, a->name, b->start, b->name);
}

static int str_cmp(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

static int add_item(live_t *lv, const char *name, size_t len, int journal) {
  if (len >= sizeof lv->it[0].name || strchr(name, '/')) return BA_OK;
  for (size_t i = 0; i < lv->n; i++)
    if (strlen(lv->it[i].name) == len && !strncmp(lv->it[i].name, name, len)) {
      if (!journal) lv->it[i].journal = 0; /* renamed meanwhile: read the segment */
      return BA_OK;
    }
  if (lv->n == lv->cap) {
    void *p = lv->it;
    BA_FORWARD(ba_grow(&p, &lv->cap, lv->n + 1, sizeof *lv->it));
    lv->it = p;
  }
  litem_t *t = &lv->it[lv->n++];
  memcpy(t->name, name, len);
  t->name[len] = 0;
  t->start = 0; /* 0 if the name does not parse */
  ba_segment_name_parse(t->name, &t->start, NULL);
  t->journal = journal;
  return BA_OK;
}

/* One pass over the directory: journals (pass 0) or segments the store
 * handle does not have (pass 1; known: its names, sorted). */
typedef struct lpass {
  live_t *lv;
  int pass;
  char **known;
  size_t nknown;
} lpass_t;

static int list_one(void *ctx, int dfd, const char *n) {
  const lpass_t *p = ctx;
  (void)dfd;
  if (strncmp(n, "seg-", 4) != 0) return BA_OK;
  if (p->pass == 0 && ba_name_ends_with(n, ".bitarc.open")) return add_item(p->lv, n, strlen(n) - 5, 1);
  if (p->pass == 1 && ba_segment_name_parse(n, NULL, NULL) &&
      !bsearch(&n, p->known, p->nknown, sizeof *p->known, str_cmp))
    return add_item(p->lv, n, strlen(n), 0);
  return BA_OK;
}

static int list_pass(live_t *lv, int pass, char **known, size_t nknown) {
  lpass_t p = {lv, pass, known, nknown};
  return ba_dir_each(lv->dirfd, NULL, list_one, &p);
}

void live_free(live_t *lv) {
  if (!lv) return;
  ba_free(lv->it);
  ba_free(lv->pend);
  ba_free(lv->pframes);
  ba_free(lv);
}

int live_open(ba_query_t *q, ba_store_t *s, uint64_t ws, uint64_t we, live_t **out) {
  *out = NULL;
  q->live_files = q->live_rows = 0;
  if (q->no_live) return BA_OK;
  live_t *lv = ba_calloc(1, sizeof *lv);
  BA_RETURN_IF(!lv, BA_ERR_NOMEM);
  lv->dirfd = ba_store_dirfd(s);
  lv->ws = ws;
  lv->we = we;
  size_t nseg = ba_store_segment_count(s);
  char **known = ba_malloc((nseg + 1) * sizeof *known);
  int rc = known ? BA_OK : BA_ERR_NOMEM;
  for (size_t i = 0; rc == BA_OK && i < nseg; i++) known[i] = (char *)ba_store_segment_name(s, i);
  if (rc == BA_OK) qsort(known, nseg, sizeof *known, str_cmp);
  /* Journals first, then segments: see the comment at the top. */
  if (rc == BA_OK) rc = list_pass(lv, 0, known, nseg);
  if (rc == BA_OK) rc = list_pass(lv, 1, known, nseg);
  ba_free(known);
  if (rc < 0) {
    live_free(lv);
    return rc;
  }
  /* Slices outside the window are not read. */
  size_t k = 0;
  for (size_t i = 0; i < lv->n; i++) {
    uint64_t st = lv->it[i].start;
    if (st && st >= we) continue;
    lv->it[k++] = lv->it[i];
  }
  lv->n = k;
  if (lv->n) qsort(lv->it, lv->n, sizeof *lv->it, item_cmp);
  *out = lv;
  return BA_OK;
}

static void lwarn(const ba_query_exec_opts_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void lwarn(const ba_query_exec_opts_t *o, const char *fmt, ...) {
  if (!o->warn) return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  o->warn(o->warn_ctx, buf);
}

/* Holds the rows of a LIVE block (frames copied: the reader's buffer is
 * reused by the next block). */
static int pend_add(live_t *lv, const ba_record_t *r, size_t n) {
  if (lv->npend + n > lv->pcap) {
    void *p = lv->pend;
    BA_FORWARD(ba_grow(&p, &lv->pcap, lv->npend + n, sizeof *lv->pend));
    lv->pend = p;
  }
  for (size_t i = 0; i < n; i++) {
    ba_record_t *d = &lv->pend[lv->npend++];
    *d = r[i];
    if (!r[i].caplen || !r[i].frame) continue;
    if (lv->nframes + r[i].caplen > lv->fcap) {
      void *p = lv->pframes;
      BA_FORWARD(ba_grow(&p, &lv->fcap, lv->nframes + r[i].caplen, 1));
      lv->pframes = p;
    }
    memcpy(lv->pframes + lv->nframes, r[i].frame, r[i].caplen);
    d->frame = (const uint8_t *)(uintptr_t)(lv->nframes + 1); /* offset + 1 until delivery */
    lv->nframes += r[i].caplen;
  }
  return BA_OK;
}

static int pend_deliver(live_t *lv, runctx_t *run) {
  for (size_t i = 0; i < lv->npend; i++)
    if (lv->pend[i].frame) lv->pend[i].frame = lv->pframes + ((uintptr_t)lv->pend[i].frame - 1);
  int rc = lv->npend ? run_sink(run, lv->pend, lv->npend) : 0;
  lv->npend = lv->nframes = 0;
  return rc;
}

/* Whether the walk that stopped at off reached the index of a finished
 * segment (the slice was finished during or before the read). The finish
 * writes index and footer in a burst, then renames: wait for the footer a
 * little (about 200 ms) before calling the bytes at off damage. */
static int finished_at(int fd, uint64_t off) {
  for (int tries = 0; tries < 20; tries++) {
    struct stat sb;
    if (fstat(fd, &sb) != 0) return 0;
    uint64_t fsize = (uint64_t)sb.st_size;
    uint8_t fb[BA_SEG_FOOTER_BYTES];
    ba_seg_footer_t ft;
    if (fsize >= BA_SEG_HDR_BYTES + BA_SEG_FOOTER_BYTES &&
        ba_pread_full(fd, fb, sizeof fb, fsize - BA_SEG_FOOTER_BYTES) == BA_OK &&
        ba_seg_footer_decode(fb, &ft) == BA_OK)
      return ft.index_off == off;
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return 0;
}

/* Reads one journal (or the segment it became) from fd: its row groups in
 * order, each LIVE block's rows held until the GROUP block that supersedes
 * them (then dropped) or the end (then delivered). */
static int live_walk(live_t *lv, const litem_t *t, int fd, runctx_t *run, const ba_query_exec_opts_t *o,
                     ba_query_t *q) {
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    lwarn(o, "journal %s: not a regular file; skipped", t->name);
    run->stats->segments_damaged++;
    return 0;
  }
  uint64_t fsize = (uint64_t)sb.st_size;
  ba_jreader_t jr;
  int rc = ba_jreader_open(&jr, fd, fsize);
  if (rc == BA_ERR_TRUNCATED) { /* created, header not written yet: no rows */
    ba_jreader_close(&jr);
    return 0;
  }
  if (rc < 0) {
    ba_jreader_close(&jr);
    if (rc == BA_ERR_NOMEM) return rc;
    lwarn(o, "journal %s: bad header: %s; skipped", t->name, ba_strerror(rc));
    run->stats->segments_damaged++;
    return 0;
  }
  if (jr.h.end_ns <= lv->ws || jr.h.start_ns >= lv->we) {
    ba_jreader_close(&jr);
    return 0;
  }
  ba_query_stats_t *st = run->stats;
  st->segments_total++;
  st->segments_used++;
  q->live_files++;
  lv->npend = lv->nframes = 0;
  uint64_t off = BA_SEG_HDR_BYTES;
  uint32_t gi = 0, live_rows = 0;
  run->check = 1;
  while (rc == BA_OK && off < fsize) {
    ba_jgroup_t g;
    int r = ba_jreader_group(&jr, fd, fsize, off, gi, live_rows, &g);
    if (r == BA_ERR_NOMEM) {
      rc = r;
      break;
    }
    if (r < 0) {
      /* A group being written (runs past the end we saw), or a slice
       * finished meanwhile, is silent; anything else is damage. */
      if (r != BA_ERR_TRUNCATED && !finished_at(fd, off)) {
        st->segments_damaged++;
        lwarn(o, "journal %s: row group %u at offset %" PRIu64 ": %s; the rows after it are not read", t->name, gi,
              off, ba_strerror(r));
      }
      break;
    }
    off += g.e.len;
    st->rows_total += g.rows;
    st->rows_candidate += g.rows;
    st->blocks_read++;
    q->live_rows += g.rows;
    if (g.live) {
      live_rows += g.rows;
      rc = pend_add(lv, jr.recs, g.rows);
      continue;
    }
    /* GROUP gi holds the rows its LIVE blocks held: those are dropped. */
    st->rows_total -= live_rows;
    st->rows_candidate -= live_rows;
    q->live_rows -= live_rows;
    lv->npend = lv->nframes = 0;
    rc = run_sink(run, jr.recs, g.rows);
    gi++;
    live_rows = 0;
    if (g.rows < jr.h.block_rows) break; /* the slice's last group: its index follows */
  }
  if (rc == BA_OK) rc = pend_deliver(lv, run);
  lv->npend = lv->nframes = 0;
  ba_jreader_close(&jr);
  return rc;
}

static int live_item(live_t *lv, const litem_t *t, runctx_t *run, const ba_query_exec_opts_t *o, ba_query_t *q) {
  char jname[128];
  int fd = -1;
  if (t->journal) {
    snprintf(jname, sizeof jname, "%s.open", t->name);
    fd = openat(lv->dirfd, jname, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  }
  /* Not listed as a journal, or renamed since: its segment. */
  if (fd < 0 && (!t->journal || errno == ENOENT)) fd = openat(lv->dirfd, t->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return 0; /* removed: a slice closed empty, or expired */
    run->stats->segments_damaged++;
    lwarn(o, "journal %s: open: %s; skipped", t->name, strerror(errno));
    return 0;
  }
  if (o->explain) {
    char line[256];
    snprintf(line, sizeof line, "live %s%s: linear scan of its row groups", t->name, t->journal ? ".open" : "");
    o->explain(o->explain_ctx, line);
  }
  int rc = o->explain_only ? 0 : live_walk(lv, t, fd, run, o, q);
  close(fd);
  return rc;
}

int live_before(live_t *lv, uint64_t start, const char *name, runctx_t *run, const ba_query_exec_opts_t *o,
                ba_query_t *q, int *stop) {
  if (!lv) return 0;
  while (lv->next < lv->n && !*stop) {
    const litem_t *t = &lv->it[lv->next];
    if (name && key_cmp(t->start, t->name, start, name) >= 0) break;
    lv->next++;
    int rc = live_item(lv, t, run, o, q);
    if (rc == QUERY_STOP) {
      *stop = 1;
      return 0;
    }
    if (rc) return rc;
  }
  return 0;
}

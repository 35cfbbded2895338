/* Query planner internals shared by its files: reference-counted bitmap
 * sets and their lo/hi pairs (bmset.c), the per-segment context, value
 * predicates and their index selection (values.c), estimates from the index
 * directory (estimate.c), planning (plan.c), fetching candidate rows
 * (fetch.c) and the segment loop (exec.c). */
#ifndef BA_QUERY_PLAN_INT_H
#define BA_QUERY_PLAN_INT_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "query/query_internal.h"

/* ---------- reference-counted bitmap sets (bmset.c) ---------- */

typedef enum { PB_NONE = 0, PB_ALL, PB_BM } pbkind_t;
typedef struct pbobj {
  ba_bitmap_t *bm;
  int refs;
} pbobj_t;
typedef struct pb {
  pbkind_t kind;
  pbobj_t *o;
} pb_t;

static inline pb_t pb_none(void) { return (pb_t){PB_NONE, NULL}; }
static inline pb_t pb_all(void) { return (pb_t){PB_ALL, NULL}; }
static inline pb_t pb_ref(pb_t p) {
  if (p.kind == PB_BM) p.o->refs++;
  return p;
}
static inline int pb_same(pb_t a, pb_t b) { return a.kind == b.kind && (a.kind != PB_BM || a.o == b.o); }

typedef struct pres {
  pb_t lo, hi;
} pres_t;

static inline pres_t pres_exact(pb_t p) { return (pres_t){p, pb_ref(p)}; }

/* Explain text being built. */
typedef struct sbuf {
  char *s;
  size_t len, cap;
  int oom;
} sbuf_t;

/* ---------- segment context ---------- */

typedef struct segctx {
  ba_segment_t *seg;
  ba_segment_info_t info;
  ba_codec_t codec;
  const ba_query_exec_opts_t *opts;
  ba_query_stats_t *stats;
  sbuf_t *ex;      /* explain text, or NULL */
  int has_non_v4;  /* segment holds rows that are not IPv4 */
  int has_non_v6;
  int has_tbin;    /* the segment has TIME_BIN bitmaps (not in oLSH segments with zone maps) */
  uint32_t *vals;  /* scratch: values of an attribute, */
  uint32_t *lens;  /* their bitmaps' sizes in bytes */
  size_t vals_cap, lens_cap;
  struct addrcache *addrs; /* v4 items of address nodes, merged once per run */
  size_t naddrs, addrs_cap;
  struct bmcache *cache; /* index bitmaps loaded for this segment (one reference each) */
  size_t ncache, cache_cap;
  int fetch_threads; /* threads reading one segment's candidate rows (fetch_rows) */
  /* A count-only run (plan_segment): the last operands of this AND chain
   * (or of the one v4 pattern of this address node), single values, are
   * counted with the rest rather than ANDed into a bitmap (and_terms);
   * counted: they were, the chain's rows are `count`. */
  const qnode_t *count_root;
  int counted;
  uint64_t count;
} segctx_t;

/* The values of one attribute a predicate accepts, as sorted disjoint
 * ranges (a port list, an octet set, flag bytes, time bins). total: every row
 * has a value of attr (ports, proto, flags), so the complement of the
 * rejected values' OR is the same set. */
typedef struct vpred {
  ba_attr_t attr;
  int total;
  size_t nr;
  const qrange_t *r; /* NULL: the ranges are in buf */
  qrange_t buf[128];
} vpred_t;


/* What a bitmap set is known to be before it is loaded: empty, some rows,
 * or every row; lo and hi as in pres_t. bytes estimates hi's size when it is
 * ES_SOME (the serialized sizes of the bitmaps it is built from). */
typedef enum { ES_NONE = 0, ES_SOME, ES_ALL } estate_t;
typedef struct est {
  estate_t lo, hi;
  uint64_t bytes;
} est_t;

static inline est_t est_exact(estate_t s, uint64_t bytes) { return (est_t){s, s, s == ES_SOME ? bytes : 0}; }
static inline estate_t es_and(estate_t a, estate_t b) {
  return a == ES_NONE || b == ES_NONE ? ES_NONE : a == ES_ALL && b == ES_ALL ? ES_ALL : ES_SOME;
}
static inline estate_t es_or(estate_t a, estate_t b) {
  return a == ES_ALL || b == ES_ALL ? ES_ALL : a == ES_NONE && b == ES_NONE ? ES_NONE : ES_SOME;
}
static inline estate_t es_not(estate_t a) { return a == ES_NONE ? ES_ALL : a == ES_ALL ? ES_NONE : ES_SOME; }
static inline est_t est_and(est_t a, est_t b) {
  est_t r = {es_and(a.lo, b.lo), es_and(a.hi, b.hi), 0};
  if (r.hi == ES_SOME)
    r.bytes = a.hi == ES_ALL ? b.bytes : b.hi == ES_ALL ? a.bytes : BA_MIN(a.bytes, b.bytes);
  return r;
}
static inline est_t est_or(est_t a, est_t b) {
  est_t r = {es_or(a.lo, b.lo), es_or(a.hi, b.hi), 0};
  if (r.hi == ES_SOME) r.bytes = (a.hi == ES_SOME ? a.bytes : 0) + (b.hi == ES_SOME ? b.bytes : 0);
  return r;
}
static inline est_t est_not(est_t a) { return (est_t){es_not(a.hi), es_not(a.lo), a.bytes}; }

/* Which bitmaps an OR over the accepted values loads: the accepted ones, or,
 * if more than half of the present values are accepted and the predicate is
 * total, the rejected ones (complemented afterwards). c->vals and c->lens
 * get the values to load and their sizes (from the directory; binary
 * searches, so a port range costs nothing per absent or rejected value). */
typedef struct vsel {
  size_t n, nacc, k;  /* present, accepted, to load */
  int use_compl;
  est_t est;
} vsel_t;

/* The segment's bins of p's attribute that hold ports p accepts: full[] those
 * whose every folded port p accepts (their rows match exactly), part[] the
 * others (their rows are candidates for the residual check). Bins are few
 * (16). */
typedef struct binsel {
  uint32_t full[BA_PORT_NBINS], part[BA_PORT_NBINS], full_len[BA_PORT_NBINS], part_len[BA_PORT_NBINS];
  size_t nfull, npart;
  uint64_t bytes;
} binsel_t;

typedef struct { uint64_t lo, hi; } binctx_t;

/* How a time predicate is planned: exact none/all, a residual check, or
 * time bins (candidates: bins meeting the range; exact: bins inside it). */
typedef enum { TP_NONE, TP_ALL, TP_CHECK, TP_BINS } tpkind_t;
typedef struct tplan {
  tpkind_t kind;
  const char *tag;
  binctx_t any, full;
} tplan_t;

/* order.c: records held packed until delivered (tbuf_sink, tbuf_deliver
 * below). */
typedef struct tbuf {
  uint64_t *keys; /* per record: first_ns, offset of its packed form in pk */
  size_t n, kcap;
  uint8_t *pk;    /* packed records: a mask of the non-zero words, then those words */
  size_t plen, pcap, pop; /* pop: bytes of pk known to be backed by pages */
  uint8_t *frames;
  size_t flen, fcap;
  int sorted; /* keys already in first_ns order (tbuf_sort) */
} tbuf_t;

/* A segment's plan: the candidate rows (lo <= truth <= hi) and their counts. */
typedef struct segres {
  pres_t r;
  uint64_t ncand, nsure, ops;
  int exact;
  /* Candidate records read ahead (have_rows), packed in tb: delivered from
   * there (a clustered segment's in time order), residual check and limit
   * applied at delivery. */
  int have_rows;
  tbuf_t tb;
  uint64_t blocks, damaged;
  uint64_t blocks_check; /* row groups read by residual_settle */
  int resid_declined;    /* residual_settle declined: not tried again */
} segres_t;

/* ---------- fetching rows (fetch.c) ---------- */

/* One query run's delivery: residual check, limit, totals, the sink. */
typedef struct runctx {
  const qnode_t *root;
  int check;                  /* evaluate every delivered record */
  ba_record_sink_fn fn;
  void *ctx;
  ba_query_stats_t *stats;
  uint64_t limit;
  const ba_bin_sums_t *bins;  /* query_run_bins: exact segments summed per bin (sum_rows) */
  int stopped;
  ba_record_t *batch;
  size_t batch_cap;
  /* exact rows as column vectors (opts field_fn): the caller's fields, then
   * those the stats need that it did not ask for; ist: the stats' fields
   * (first, last, packets, bytes, out_packets, out_bytes) in that list */
  ba_field_sink_fn field_fn;
  void *field_ctx;
  uint16_t fields[BA_FIELDS_MAX];
  size_t nfields;
  int ist[6];
} runctx_t;

#define QUERY_STOP 1

typedef struct blkcount {
  uint64_t block_rows, last, n;
} blkcount_t;

/* bmset.c */
void pb_drop(pb_t p);
int pb_wrap(ba_bitmap_t *bm, pb_t *out);
void pres_drop(pres_t r);
void sb_add(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ex_open(segctx_t *c, const char *op);
void ex_sep(segctx_t *c);
void ex_close(segctx_t *c);
int pb_and(segctx_t *c, pb_t a, pb_t b, pb_t *out);
int pb_or(segctx_t *c, pb_t a, pb_t b, pb_t *out);
int pb_not(segctx_t *c, pb_t a, pb_t *out);
int pb_index(segctx_t *c, ba_attr_t attr, uint32_t v, pb_t *out);
int pb_and_index(segctx_t *c, pb_t a, ba_attr_t attr, uint32_t v, int direct, pb_t *out);
int pb_and_index_count(segctx_t *c, const ba_bitmap_t *a, ba_attr_t attr, uint32_t v, uint64_t *count);
void cache_clear(segctx_t *c);
int pres_and(segctx_t *c, pres_t a, pres_t b, pres_t *out);
int pres_or(segctx_t *c, pres_t a, pres_t b, pres_t *out);
int pres_prune(pres_t *r);
uint64_t count_pb(pb_t p, uint64_t rows);
void segctx_free(segctx_t *c);

/* values.c */
const qrange_t *vp_r(const vpred_t *p);
void vp_ranges(vpred_t *p, ba_attr_t attr, const qnode_t *n, int total);
void vp_one(vpred_t *p, ba_attr_t attr, uint64_t lo, uint64_t hi);
void vp_bytes(vpred_t *p, ba_attr_t attr, const uint64_t set[4], int total);
void vp_flags(vpred_t *p, const qnode_t *n);
int select_values(segctx_t *c, const vpred_t *p, vsel_t *s);
int select_values_bins(segctx_t *c, const vpred_t *p, vsel_t *s, binsel_t *b, est_t *e);
int or_selected(segctx_t *c, const vpred_t *p, vsel_t sel, pb_t *out);
int or_values(segctx_t *c, const vpred_t *p, pb_t *out);
int values_pres_sel(segctx_t *c, const vpred_t *p, vsel_t sel, const binsel_t *b, pres_t *out);
int values_pres(segctx_t *c, const vpred_t *p, pres_t *out);
int rows_ipver(segctx_t *c, unsigned ver, pb_t *out);
int v6_covers_v4(const qaddr_t *a);
int octet_full(const qaddr_t *a, int i);
int addr_items(segctx_t *c, const qnode_t *n, const qaddr_t **items, size_t *cnt);
void addrs_free(segctx_t *c);

/* zoneplan.c: a range predicate on a zoned field (QN_NUM packets, bytes,
 * out bytes, duration; QN_TIME) from the segment's zone maps. 1 = zones do
 * not apply (no zone maps, another field): the caller plans as before. */
int zone_pres(segctx_t *c, const qnode_t *n, pres_t *out);
int zone_est(segctx_t *c, const qnode_t *n, est_t *e);

/* residual.c: an inexact plan made exact before the output's columns are
 * read: the candidates outside lo are read with the filter's columns only
 * and evaluated. residual_pays: worth it for these options (records are
 * output with columns the filter does not read; no count, bins or limit).
 * residual_settle: res becomes exact (1 = declined, e.g. a damaged block:
 * res is unchanged and read as before). */
int residual_pays(const ba_query_exec_opts_t *o, const qnode_t *root, int bins);
int residual_settle(segctx_t *c, const qnode_t *root, segres_t *res);

/* estimate.c */
void time_plan(const segctx_t *c, const qnode_t *n, tplan_t *t);
int est_node(segctx_t *c, const qnode_t *n, est_t *e);
uint64_t est_key(est_t e);

/* plan.c */
int plan_node(segctx_t *c, const qnode_t *n, pres_t *out);
int plan_segment(const qnode_t *root, segctx_t *c, sbuf_t *ex, segres_t *res);
void segres_drop(segres_t *r);

/* fetch.c */
int run_sink(void *vctx, const ba_record_t *recs, size_t n);

/* order.c: a clustered segment's records in time order (format.md §7.9).
 * tbuf_sink gathers records packed (zero words left out; frames copied);
 * tbuf_deliver sorts them by first_ns (stable) into run_sink and frees;
 * tbuf_deliver_as_read delivers them in the order gathered. */
int tbuf_reserve(tbuf_t *b, uint64_t n); /* room for n records at once (the candidates) */
int tbuf_sink(void *ctx, const ba_record_t *recs, size_t n);
int tbuf_deliver(tbuf_t *b, runctx_t *run);
int tbuf_deliver_as_read(tbuf_t *b, runctx_t *run);
/* Sorts the records gathered so far as tbuf_deliver would (the thread that
 * read them, so that the delivering one only unpacks); no more may be
 * gathered before delivery. */
int tbuf_sort(tbuf_t *b);
void tbuf_free(tbuf_t *b);
/* Tests: records packed with AVX-512 (when the CPU has it) or not. */
void query_set_pack_simd(int on);
/* The candidate rows bm (NULL: all) of a clustered segment read with cols
 * and delivered to run in time order, at most query_set_order_max records
 * held (more: in slabs of first-time ranges, a read per slab). */
int deliver_clustered(ba_segment_t *seg, const ba_bitmap_t *bm, uint64_t ncand, uint32_t cols, uint32_t block_rows,
                      int threads, runctx_t *run, uint64_t *blocks, uint64_t *damaged);

/* Counts n delivered records into the stats: rows, sums, first/last time. */
void stats_add_records(ba_query_stats_t *s, const ba_record_t *recs, size_t n);
/* The run's column-vector sink (run->field_fn set): the stats, then field_fn. */
int run_field_sink(void *vctx, const uint64_t *const *vals, size_t n);
/* Sets up run->fields from the caller's o->fields (0: not usable, the run
 * delivers records). */
int run_fields_init(runctx_t *run, const ba_query_exec_opts_t *o);
/* The rows of bm (NULL: every row) read as run->fields vectors into
 * run_field_sink (threads 2: as fetch_rows). blocks: blocks touched. */
int fetch_fields(ba_segment_t *seg, const ba_bitmap_t *bm, uint32_t block_rows, runctx_t *run, int threads,
                 uint64_t *blocks, uint64_t *damaged);
int count_blocks(void *vctx, const uint64_t *rows, size_t n);
/* threads: 2 lets fetch_rows read on two threads (fetch_par.c) when enough
 * row groups are touched and no frame bytes are asked for. */
int fetch_rows(ba_segment_t *seg, const ba_bitmap_t *bm, uint32_t cols, uint32_t block_rows, ba_record_sink_fn sink,
               void *sink_ctx, int threads, uint64_t *blocks, uint64_t *damaged);

/* The rows of bm (NULL: every row) of a segment of ngroups row groups
 * summed per bin (ba_segment_sum_bins), on two threads (sum_rows_two) when
 * threads >= 2 and enough groups are touched. *summed: rows added; *groups:
 * groups touched. */
int sum_rows(ba_segment_t *seg, const ba_bitmap_t *bm, uint32_t block_rows, uint32_t ngroups, const ba_bin_sums_t *b,
             int threads, uint64_t *summed, uint64_t *groups, uint64_t *damaged);

/* fetch_par.c: fetch_rows on two threads (fields set: fetch_fields, column
 * vectors into run_field_sink); *done = 0 when it declined (fewer than
 * FETCH_PAR_MIN_GROUPS row groups touched) and read nothing. */
#define FETCH_PAR_MIN_GROUPS 24 /* fewer: one thread (starting one costs more) */
int fetch_rows_two(ba_segment_t *seg, const ba_bitmap_t *bm, uint32_t cols, uint32_t block_rows, runctx_t *fields,
                   ba_record_sink_fn sink, void *sink_ctx, uint64_t *blocks, uint64_t *damaged, int *done);

/* A bitmap's rows collected group by group (offsets in the group, idx of
 * br entries) and each group summed (ba_segment_sum_group) when the walk
 * leaves it: sum_feed is a ba_rows_fn; sum_flush sums the last group. */
typedef struct sumfeed {
  ba_segment_t *seg;
  const ba_bin_sums_t *b;
  uint64_t br, gi, gbase, gend;
  uint32_t *idx;
  size_t k;
  uint64_t summed, damaged, groups;
} sumfeed_t;
int sum_feed(void *ctx, const uint64_t *rows, size_t n);
int sum_flush(sumfeed_t *f);

/* sum_rows on two threads over the rows of bm (NULL: every row) of a
 * segment of ngroups groups: chunks of whole groups taken in turn by the
 * caller's thread (on seg) and a worker (on a clone, its own bins, added at
 * the end); a chunk's rows are walked with ba_bitmap_foreach_range. *done =
 * 0 when it declined (too few groups, no clone) and summed nothing. */
int sum_rows_two(ba_segment_t *seg, const ba_bitmap_t *bm, uint32_t ngroups, uint32_t block_rows,
                 const ba_bin_sums_t *b, uint64_t *summed, uint64_t *groups, uint64_t *damaged, int *done);

#endif

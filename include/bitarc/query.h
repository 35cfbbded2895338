/* Queries: nfdump's filter language (plus wildcards, port ranges, relative
 * times), compiled once, evaluated on records or answered from a store's
 * bitmap indexes with selective block reads.
 *
 *   ba_query_t *q;
 *   ba_query_create(&q);
 *   if (ba_query_compile(q, "src ip 10.4.*.* and dst port 137") == BA_ERR_SYNTAX)
 *     fprintf(stderr, "%s at column %zu\n", ba_query_errmsg(q), ba_query_errcol(q));
 *   ba_query_run(q, store, &opts, sink, ctx, &stats);
 *   ba_query_free(q);
 *
 * Grammar and semantics: src/query/GRAMMAR.md. A query handle is not thread-safe;
 * ba_query_match may be called from several threads once compiled. */
#ifndef BITARC_QUERY_H
#define BITARC_QUERY_H

#include <stddef.h>
#include <stdint.h>

#include "bitarc/bitmap.h"
#include "bitarc/errors.h"
#include "bitarc/record.h"
#include "bitarc/store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ba_query ba_query_t;

int ba_query_create(ba_query_t **out);
void ba_query_free(ba_query_t *q);
/* "Now" for relative times (`after 3h ago`), in ns since the epoch; default:
 * the wall clock at compile time. Set before ba_query_compile. */
void ba_query_set_now(ba_query_t *q, uint64_t now_ns);
/* Parses `text` (an empty filter or "any" matches everything). On a syntax
 * error returns BA_ERR_SYNTAX; ba_query_errmsg names the offending token and
 * ba_query_errcol gives its 0-based byte column in `text`. */
int ba_query_compile(ba_query_t *q, const char *text);
const char *ba_query_errmsg(const ba_query_t *q);
size_t ba_query_errcol(const ba_query_t *q);
/* The compiled tree as canonical text (S-expressions); *len gets the full
 * length, the buffer gets at most cap-1 bytes and a NUL. */
int ba_query_dump(const ba_query_t *q, char *buf, size_t cap, size_t *len);
/* 1 if the record matches, 0 if not (the record evaluator, exact nfdump
 * semantics; fields the query does not use are not read). */
int ba_query_match(const ba_query_t *q, const ba_record_t *r);
/* Columns (ba_col_t mask) the evaluator reads. */
uint32_t ba_query_columns(const ba_query_t *q);

/* ---------- execution over a store ---------- */
typedef enum ba_range_strategy {
  BA_RANGE_ITERATIVE = 0, /* R <- R | A_j, the bins split among threads */
  BA_RANGE_REDUCTION = 1, /* pairwise tree, each level's pairs split among threads */
  BA_RANGE_BITSET = 2,    /* decompress: OR every bin's runs into a plain bitset (one per
                             thread), then encode once (the GPU paper's decompression
                             strategy on a CPU) */
  BA_RANGE_AUTO = 3       /* the codec's ba_bitmap_or_many: a tree of ORs or one plain bitset
                             filled by its word decoder, by operand sizes (the planner's
                             default; one thread) */
} ba_range_strategy_t;

typedef void (*ba_query_explain_fn)(void *ctx, const char *line);

typedef struct ba_query_exec_opts {
  uint64_t start_ns, end_ns;   /* time window [start, end) on first_ns; 0,0 = all */
  uint32_t out_cols;           /* columns the caller needs in delivered records */
  int threads;                 /* 1 or 2 (range ORs); 0 = 1 */
  ba_range_strategy_t strategy;
  int force_scan;              /* linear scan + evaluator (debug/oracle) */
  uint64_t limit;              /* stop after this many matches; 0 = all */
  ba_query_explain_fn explain; /* if set: receives the plan, one line per call */
  void *explain_ctx;
  int explain_only;            /* plan only: no rows are read */
  int count_only;              /* only stats->rows_matched is wanted: rows the index answers
                                  exactly are counted from the bitmap, not read; fn may be
                                  called for the others (limit is ignored) */
  /* Optional range-OR device (e.g. the GPU module through the CLI): called
   * instead of ba_query_or_many for ORs of 2 or more bins; must return the
   * same bitmap (canonical words in `codec`, `rows` rows). */
  int (*range_or)(void *ctx, const ba_bitmap_t *const *bms, size_t n, uint64_t rows,
                  ba_codec_t codec, ba_bitmap_t **out);
  void *range_ctx;
  /* Optional: told about damage the run survived (a segment that cannot be
   * opened is skipped; a segment whose index is damaged is answered by a
   * linear scan of its blocks). The library never prints. */
  void (*warn)(void *ctx, const char *msg);
  void *warn_ctx;
} ba_query_exec_opts_t;
void ba_query_exec_opts_init(ba_query_exec_opts_t *o);

typedef struct ba_query_stats {
  uint64_t segments_total, segments_used;
  uint64_t rows_total;        /* rows in the segments used */
  uint64_t rows_candidate;    /* rows the index proposed */
  uint64_t rows_matched;      /* rows delivered */
  uint64_t blocks_read;       /* blocks holding candidate rows */
  uint64_t rows_damaged;      /* rows lost in damaged blocks */
  uint64_t bitmap_ops;        /* compressed-domain operations done */
  uint64_t first_ns, last_ns; /* of matched records */
  uint64_t packets, bytes;    /* sums over matched records */
  uint64_t segments_damaged;  /* segments skipped or scanned because of damage */
} ba_query_stats_t;

/* Runs the query over every segment of the store that overlaps the window,
 * in segment order; matching records go to `fn` in row order per segment
 * (fields outside opts->out_cols | ba_query_columns are zero). A non-zero
 * return from fn stops the run and is returned. Damaged blocks are skipped
 * and counted in stats->rows_damaged. */
int ba_query_run(ba_query_t *q, ba_store_t *s, const ba_query_exec_opts_t *opts,
                 ba_record_sink_fn fn, void *ctx, ba_query_stats_t *stats);

/* The query over several stores (one per exporter or site, as nfdump -M),
 * rows merged in start-time order: by first_ns, then by store (the order of
 * `stores`), then by each store's own row order. opts as for ba_query_run
 * (limit counts merged rows; explain_only and count_only are refused with
 * BA_ERR_INVALID: run those per store). Packet frames are copied, so they
 * stay valid for the call of fn. Memory holds the matches of one time piece
 * (the axis is cut at every segment's first and last start time). In stats,
 * rows_matched, first/last, packets and bytes are exact; segments_total is
 * the sum over the stores; the other counters are summed over the pieces (a
 * segment spanning k pieces counts k times). */
int ba_query_run_multi(ba_query_t *q, ba_store_t *const *stores, size_t nstores, const ba_query_exec_opts_t *opts,
                       ba_record_sink_fn fn, void *ctx, ba_query_stats_t *stats);

/* OR of n bitmaps (range query over bins) with the given strategy and 1..2
 * threads; out_codec for every intermediate and the result. n = 0 gives an
 * empty bitmap of `rows` rows. */
int ba_query_or_many(const ba_bitmap_t *const *bms, size_t n, uint64_t rows, ba_codec_t out_codec,
                     ba_range_strategy_t strategy, int threads, ba_bitmap_t **out);

/* ---------- parsing helpers shared with the CLI ---------- */
/* nfdump's -t window "YYYY/MM/dd.hh:mm[:ss][-YYYY/MM/dd.hh:mm[:ss]]" or a
 * relative "3h" / "45m" / "2d" (the last N units before now_ns). local != 0
 * reads the times in the local time zone instead of UTC. */
int ba_query_parse_window(const char *text, uint64_t now_ns, int local, uint64_t *start_ns,
                          uint64_t *end_ns);

/* ---------- output formatting (text into a caller buffer) ---------- */
typedef struct ba_query_format ba_query_format_t;
/* "line", "long", "csv", "ndjson" or "fmt:<text with %tokens>" (tokens as
 * nfdump: %ts %te %td %pr %sa %da %sap %dap %sp %dp %flg %pkt %byt %fl %tos
 * %in %out %sas %das %ra %bps %pps %bpp). On a bad spec returns BA_ERR_SYNTAX
 * and writes the reason into err. Times print in UTC unless local != 0. */
int ba_query_format_create(const char *spec, int local, ba_query_format_t **out, char *err, size_t errcap);
void ba_query_format_free(ba_query_format_t *f);
/* Header line (len 0 if the format has none), then one line per record; every
 * output ends in '\n'. `flows` is what %fl prints (1 for a plain record, the
 * group size for aggregates). *len gets the full length; on truncation
 * BA_ERR_OVERFLOW (cap 1024 always suffices for line/long/csv/ndjson). */
int ba_query_format_header(const ba_query_format_t *f, char *buf, size_t cap, size_t *len);
int ba_query_format_record(const ba_query_format_t *f, const ba_record_t *r, uint64_t flows, char *buf,
                           size_t cap, size_t *len);
/* Columns (ba_col_t) the format prints. */
uint32_t ba_query_format_columns(const ba_query_format_t *f);

/* ---------- statistics (-s) and aggregation (-A) ---------- */
enum {
  BA_AGG_SRCIP = 1u << 0, BA_AGG_DSTIP = 1u << 1, BA_AGG_SRCPORT = 1u << 2, BA_AGG_DSTPORT = 1u << 3,
  BA_AGG_PROTO = 1u << 4,
  BA_AGG_IP = 1u << 5,    /* -s ip: each flow counts for its src and its dst address */
  BA_AGG_PORT = 1u << 6   /* -s port: likewise for ports */
};
typedef enum ba_agg_order { BA_ORDER_FLOWS = 0, BA_ORDER_PACKETS, BA_ORDER_BYTES } ba_agg_order_t;
typedef struct ba_query_agg_row {
  ba_record_t key;  /* the grouped fields set (an -s ip/port key is in src/src_port), others zero;
                       first_ns/last_ns = min first / max last of the group */
  uint64_t flows, packets, bytes;
} ba_query_agg_row_t;
typedef struct ba_query_agg ba_query_agg_t;
/* "srcip,dstip,srcport,dstport,proto" (any subset, also "ip", "port") into
 * BA_AGG_* bits; BA_ERR_SYNTAX for an unknown name. */
int ba_query_agg_parse(const char *fields, uint32_t *out);
int ba_query_agg_create(uint32_t fields, ba_query_agg_t **out);
void ba_query_agg_free(ba_query_agg_t *a);
int ba_query_agg_add(ba_query_agg_t *a, const ba_record_t *recs, size_t n);
/* Groups sorted by the order (descending; ties by key), valid until the next
 * add or free. */
int ba_query_agg_result(ba_query_agg_t *a, ba_agg_order_t order, const ba_query_agg_row_t **rows, size_t *n);

#ifdef __cplusplus
}
#endif
#endif

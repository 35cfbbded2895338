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
  /* Optional (aggregates): rows the index answers exactly are read as column
   * vectors of fields[0..nfields) (ba_segment_read_fields; nfields <=
   * BA_FIELDS_MAX - 8) and handed to field_fn instead of records to the
   * sink; the other rows (residual checks, journals, damaged segments'
   * scans) still come as records. Not used with a limit or count_only. */
  ba_field_sink_fn field_fn;
  void *field_ctx;
  const uint16_t *fields;
  size_t nfields;
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
  uint64_t out_packets, out_bytes; /* reverse-direction sums over matched records (zero unless
                                      BA_COL_OUT was fetched): nfdump's totals count both */
} ba_query_stats_t;
/* Adds one run's stats to a running total: every counter and sum, and the
 * matched-time span (first_ns/last_ns of the runs that matched rows). The one
 * way to combine runs over stores, time pieces or bins. */
void ba_query_stats_add(ba_query_stats_t *acc, const ba_query_stats_t *one);

/* Runs the query over every segment of the store that overlaps the window,
 * in segment order; matching records go to `fn` in row order per segment
 * (fields outside opts->out_cols | ba_query_columns are zero). A non-zero
 * return from fn stops the run and is returned. Damaged blocks are skipped
 * and counted in stats->rows_damaged. */
int ba_query_run(ba_query_t *q, ba_store_t *s, const ba_query_exec_opts_t *opts,
                 ba_record_sink_fn fn, void *ctx, ba_query_stats_t *stats);

/* Live query (default on): ba_query_run also reads the journals of the
 * slices being written (doc/format.md §5: their complete row groups and LIVE
 * blocks, which a collector writes every flush interval) with a linear scan
 * and the same filter, in time order with the segments. A journal that is
 * finished into a segment during the run is read once, from whichever file
 * holds it. on = 0 reads only complete segments. */
void ba_query_set_live(ba_query_t *q, int on);
/* The last ba_query_run's journals read and the rows they held (also counted
 * in the stats: segments_total/used, rows_total, rows_candidate). */
void ba_query_live_stats(const ba_query_t *q, uint64_t *files, uint64_t *rows);
/* The query over several stores (one per exporter or site, as nfdump -M),
 * rows merged in start-time order: by first_ns, then by store (the order of
 * `stores`), then by each store's own row order. opts as for ba_query_run
 * (limit counts merged rows; explain_only and count_only are refused with
 * BA_ERR_INVALID: run those per store). Packet frames are copied, so they
 * stay valid for the call of fn. Memory holds the matches of one time piece
 * (the axis is cut at every segment's first and last start time). In stats,
 * rows_matched, first/last, packets and bytes are exact; segments_total is
 * the sum over the stores; the other counters are summed over the pieces (a
 * segment spanning k pieces counts k times); first/last are the earliest
 * start and the latest end, as ba_query_run. opts->warn gets each message
 * once, prefixed "store N: " (N = 1 + the store's index in `stores`). */
int ba_query_run_multi(ba_query_t *q, ba_store_t *const *stores, size_t nstores, const ba_query_exec_opts_t *opts,
                       ba_record_sink_fn fn, void *ctx, ba_query_stats_t *stats);

/* ---------- time series (bitarc graph, nfsen's profile graphs) ---------- */
enum { BA_SERIES_FLOWS = 1u << 0, BA_SERIES_PACKETS = 1u << 1, BA_SERIES_BYTES = 1u << 2 };
typedef struct ba_query_series_opts {
  uint64_t start_ns; /* bin k is [start_ns + k * bin_ns, start_ns + (k + 1) * bin_ns) of first_ns */
  uint64_t bin_ns;   /* > 0 */
  size_t nbins;
  unsigned measures; /* BA_SERIES_* (default all three). Flows alone are counted from the index
                        where it answers exactly (TIME_BIN bitmaps of the bin ANDed with the
                        filter's candidates); with packets or bytes one run covers the window and
                        the matching rows' first, packets and bytes columns are summed per bin
                        (no record built where the index answers exactly) */
  int threads;       /* 1 or 2 (flows: bins shared among threads; packets/bytes: a segment's row
                        groups shared, and segments planned ahead); 0 = 1 */
  void (*warn)(void *ctx, const char *msg); /* damage survived, each message once */
  void *warn_ctx;
} ba_query_series_opts_t;
void ba_query_series_opts_init(ba_query_series_opts_t *o);
typedef struct ba_query_series_bin {
  uint64_t flows, packets, bytes; /* measures not asked for are 0; packets/bytes: the record's
                                     own (input direction) counters, as nfdump's ipkt/ibyt */
} ba_query_series_bin_t;
/* Flows, packets and bytes of the records matching q per start-time bin,
 * summed over the stores (bins[nbins], overwritten). A bin equals
 * ba_query_run over the window [bin start, bin end). stats (may be NULL)
 * sums the runs' counters: flows alone, one run per bin (a segment met by
 * k bins counts k times); with packets or bytes, one run per store over
 * the whole window (first_ns/last_ns then cover only rows read as records).
 * BA_ERR_INVALID for a zero bin width, no measure, or bins past 2^64 ns. */
int ba_query_series(ba_query_t *q, ba_store_t *const *stores, size_t nstores, const ba_query_series_opts_t *o,
                    ba_query_series_bin_t *bins, ba_query_stats_t *stats);

/* OR of n bitmaps (range query over bins) with the given strategy and 1..2
 * threads; out_codec for every intermediate and the result. n = 0 gives an
 * empty bitmap of `rows` rows. */
int ba_query_or_many(const ba_bitmap_t *const *bms, size_t n, uint64_t rows, ba_codec_t out_codec,
                     ba_range_strategy_t strategy, int threads, ba_bitmap_t **out);

/* ---------- parsing helpers shared with the CLI ---------- */
/* The -t window: nfdump's "YYYY/MM/dd.hh:mm[:ss][-YYYY/MM/dd.hh:mm[:ss]]"
 * (end inclusive), nfdump's "+N" / "-N" (the first N seconds from the data's
 * first flow / the last N seconds up to its last: rel_s = +N / -N, start and
 * end unset), or bitarc's relative "3h" / "45m" / "2d" (the last N units
 * before now_ns). local != 0 reads the dates in the local time zone (nfdump's
 * default) instead of UTC. */
typedef struct ba_query_window {
  uint64_t start_ns, end_ns;  /* [start, end]; end UINT64_MAX = open */
  int64_t rel_s;
} ba_query_window_t;
int ba_query_parse_window(const char *text, uint64_t now_ns, int local, ba_query_window_t *w);
/* ANDs a time window onto the compiled filter. whole != 0 keeps the flows
 * lying entirely inside [start, end] (nfdump's -t: first >= start and last
 * <= end, compared in milliseconds); whole == 0 keeps the flows that start in
 * it. Call after ba_query_compile; the run's exec window should also be set
 * (it selects segments). */
int ba_query_restrict_time(ba_query_t *q, uint64_t start_ns, uint64_t end_ns, int whole);

/* ---------- output formatting (text into a caller buffer) ---------- */
typedef struct ba_query_format ba_query_format_t;
/* Format flags. */
enum {
  BA_FMT_LOCAL = 1u << 0, /* print times in the local time zone (nfdump's default) */
  BA_FMT_PLAIN = 1u << 1, /* numbers unscaled, protocols as numbers (nfdump -N) */
  BA_FMT_V6LONG = 1u << 2 /* IPv6 addresses in full (nfdump -6, "line6", "long6") */
};
/* nfdump's output formats: "line", "long", "extended", "biline", "bilong",
 * "nsel", "nel" (each also with a trailing 6: full IPv6 addresses), "csv"
 * (nfdump 1.7.1's 48 columns), "pipe", "raw", "null", "fmt:<text with
 * %tokens>" (nfdump's tokens; an unknown token is an error naming it), and
 * bitarc's "ndjson" (also "json"). `flags` is a mask of BA_FMT_*. On a bad
 * spec returns BA_ERR_SYNTAX and writes the reason into err. */
int ba_query_format_create(const char *spec, unsigned flags, ba_query_format_t **out, char *err, size_t errcap);
void ba_query_format_free(ba_query_format_t *f);
/* Header line (len 0 if the format has none), then one line per record; every
 * output ends in '\n' (null: nothing). `flows` is what %fl prints (1 for a
 * plain record, the group size for aggregates). *len gets the full length; on
 * truncation BA_ERR_OVERFLOW (cap 2048 always suffices for the fixed formats).
 * A format handle caches dates: use one per thread. */
int ba_query_format_header(const ba_query_format_t *f, char *buf, size_t cap, size_t *len);
int ba_query_format_record(const ba_query_format_t *f, const ba_record_t *r, uint64_t flows, char *buf,
                           size_t cap, size_t *len);
/* Columns (ba_col_t) the format prints. */
uint32_t ba_query_format_columns(const ba_query_format_t *f);
/* The format's kind: 0 text (line, long, fmt, raw, ndjson), 1 csv, 2 pipe, 3 null. */
int ba_query_format_kind(const ba_query_format_t *f);
/* nfdump's protocol name (ProtoString: "TCP", "ICMP6", ...; numbers above 137). */
const char *ba_query_proto_name(unsigned proto);
/* nfdump's number scaling (format_number): "1234", "  1.2 M" (fixed width)
 * or unscaled with BA_FMT_PLAIN. Returns the length written into out[32]. */
size_t ba_query_format_number(uint64_t v, unsigned flags, int fixed_width, char out[32]);

/* ---------- statistics (-s) and aggregation (-A) ---------- */
/* Fields a group key can hold (nfdump's -s elements and -A fields). The
 * pair elements (BA_AGG_IP, _PORT, _AS, _IF, _MASK, _VLAN) count each flow
 * twice, once for its source side and once for its destination side; the key
 * holds the value in the source-side field. */
enum {
  BA_AGG_SRCIP = 1u << 0, BA_AGG_DSTIP = 1u << 1, BA_AGG_SRCPORT = 1u << 2, BA_AGG_DSTPORT = 1u << 3,
  BA_AGG_PROTO = 1u << 4, BA_AGG_IP = 1u << 5, BA_AGG_PORT = 1u << 6, BA_AGG_SRCAS = 1u << 7,
  BA_AGG_DSTAS = 1u << 8, BA_AGG_AS = 1u << 9, BA_AGG_INIF = 1u << 10, BA_AGG_OUTIF = 1u << 11,
  BA_AGG_IF = 1u << 12, BA_AGG_TOS = 1u << 13, BA_AGG_DSTTOS = 1u << 14, BA_AGG_SRCVLAN = 1u << 15,
  BA_AGG_DSTVLAN = 1u << 16, BA_AGG_VLAN = 1u << 17, BA_AGG_SRCMASK = 1u << 18, BA_AGG_DSTMASK = 1u << 19,
  BA_AGG_MASK = 1u << 20, BA_AGG_ROUTER = 1u << 21, BA_AGG_NEXTHOP = 1u << 22, BA_AGG_BGPNEXTHOP = 1u << 23,
  BA_AGG_DIR = 1u << 24, BA_AGG_PREVAS = 1u << 25, BA_AGG_NEXTAS = 1u << 26, BA_AGG_ODID = 1u << 27,
  BA_AGG_RECORD = 1u << 28 /* -s record: the 5-tuple, shown as a flow line */
};
typedef enum ba_agg_order {
  BA_ORDER_FLOWS = 0, BA_ORDER_PACKETS, BA_ORDER_BYTES, BA_ORDER_PPS, BA_ORDER_BPS, BA_ORDER_BPP,
  BA_ORDER_TSTART, BA_ORDER_TEND
} ba_agg_order_t;
typedef struct ba_query_agg_spec {
  uint32_t fields;         /* BA_AGG_* */
  uint8_t v4bits, v6bits;  /* prefix length applied to the address fields (nfdump's srcip4/24); 0 = all */
  uint8_t bidir;           /* -A only: 1 = nfdump -b (a flow and its reverse are one group; the
                              reverse's counters go to out_packets/out_bytes), 2 = -B (the side
                              with the lower port is the server) */
  uint8_t proto_split;     /* -s only: nfdump's "srcip:p", one group per value and IP protocol
                              (key.proto set); fields keeps the element alone */
  uint8_t inout;           /* -s: which direction the packets, bytes, pps, bps and bpp orders
                              count: 0 in (packets, bytes), 1 both (packets + key.out_packets,
                              ...: nfdump's -s packets), 2 out (key.out_packets: nfdump's opkg) */
  uint8_t dst_v4bits, dst_v6bits; /* with split_bits: the prefix lengths of the destination address
                              field (nfdump's -A srcip4/24,dstip4/28); v4bits/v6bits then the source's */
  uint8_t split_bits;      /* 0: v4bits/v6bits apply to every address field (the padding bytes of
                              the older layout, so callers that zero the struct keep that meaning) */
} ba_query_agg_spec_t;
typedef struct ba_query_agg_row {
  ba_record_t key;  /* the grouped fields set, others zero; first_ns/last_ns = min first / max
                       last of the group; packets/bytes/out_packets/out_bytes the sums */
  uint64_t flows, packets, bytes;
} ba_query_agg_row_t;
typedef struct ba_query_agg ba_query_agg_t;
/* -s element ("srcip", "dstport", "ip", "srcip4/24", "record", ...; element = 1: exactly one
 * element) or -A list ("srcip,dstip,srcport,dstport,proto", "srcip4/24,dstport"; element = 0);
 * BA_ERR_SYNTAX naming the unknown field in err. */
int ba_query_agg_parse(const char *fields, int element, ba_query_agg_spec_t *out, char *err, size_t errcap);
/* Order name: flows packets bytes pps bps bpp tstart tend. */
int ba_query_agg_order(const char *name, ba_agg_order_t *out);
const char *ba_query_agg_order_name(ba_agg_order_t o);
/* nfdump's header for a -s element ("Src IP Addr"). */
const char *ba_query_agg_title(uint32_t field);
/* The -s element's value of a group as nfdump prints it; returns its length. */
size_t ba_query_agg_value(uint32_t field, const ba_record_t *key, unsigned fmt_flags, int full_v6, char *buf,
                          size_t cap);
/* The -s element's value as nfdump's pipe output (-o pipe) prints it: *af is
 * 2 or 10 for address elements (nfdump's AF_INET / AF_INET6 choice: 10 when
 * the upper 64 bits are set), 0 for numbers; buf gets "a|b|c|d" (the address
 * as nfdump's four 32-bit words) or the number. Returns its length. */
size_t ba_query_agg_pipe_value(uint32_t field, const ba_record_t *key, int *af, char *buf, size_t cap);
int ba_query_agg_create(const ba_query_agg_spec_t *spec, ba_query_agg_t **out);
void ba_query_agg_free(ba_query_agg_t *a);
int ba_query_agg_add(ba_query_agg_t *a, const ba_record_t *recs, size_t n);
/* The record columns (BA_COL_*) ba_query_agg_add reads: the grouped fields', the counters and
 * times; the reader need not decode the others. */
uint32_t ba_query_agg_columns(const ba_query_agg_t *a);
/* The record fields (ba_segment_read_fields offsets) ba_query_agg_add_fields
 * reads, in the order it takes their vectors: *n of them (at most 64; more than
 * BA_FIELDS_MAX - 8 cannot go through ba_query_exec_opts_t.fields). */
const uint16_t *ba_query_agg_fields(const ba_query_agg_t *a, size_t *n);
/* Before the first add: the groups' TCP flags are not kept (key.tcp_flags
 * stays 0), so neither add reads them (-s statistics, which print no flags). */
int ba_query_agg_drop_flags(ba_query_agg_t *a);
/* Adds n rows given as column vectors: vals[i] holds field i of
 * ba_query_agg_fields for each row. ba_query_agg_add is this over the
 * records' fields. */
int ba_query_agg_add_fields(ba_query_agg_t *a, const uint64_t *const *vals, size_t n);
/* Groups sorted by the order (descending counters or rates, ascending times;
 * ties by key), valid until the next add, result, top or free. */
int ba_query_agg_result(ba_query_agg_t *a, ba_agg_order_t order, const ba_query_agg_row_t **rows, size_t *n);
/* The first k groups of ba_query_agg_result's order (-s -n k), without ordering the others;
 * k = 0: every group. The rows are valid until the next call on a. */
int ba_query_agg_top(ba_query_agg_t *a, ba_agg_order_t order, size_t k, const ba_query_agg_row_t **rows,
                     size_t *n);
/* Sorts records for -O (the same orders; flows = 1 per record, ties keep their order). */
void ba_query_sort_records(ba_record_t *recs, size_t n, ba_agg_order_t order);

#ifdef __cplusplus
}
#endif
#endif

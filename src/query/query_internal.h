/* Query module internals: the filter AST shared by parser, evaluator and planner. */
#ifndef BA_QUERY_INTERNAL_H
#define BA_QUERY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "bitarc/query.h"

typedef enum qnode_kind {
  QN_TRUE = 0, QN_FALSE, QN_AND, QN_OR, QN_NOT,
  QN_IPVER,  /* ipver == num */
  QN_ADDR,   /* address set (v4 octet patterns, v6 prefixes) */
  QN_PORT,   /* port in ranges */
  QN_PROTO,  /* proto in ranges */
  QN_FLAGS,  /* aux QF_ALLOF / QF_ANYOF / QF_CMP (qflags_match; see parse.c) */
  QN_TIME,   /* first/last ns cmp value */
  QN_NUM,    /* non-indexed numeric field: cmp value, or (ranges != NULL) in the list */
  QN_XADDR   /* non-indexed address field (next hop, BGP next hop, router, NAT) in addrs */
} qnode_kind_t;

/* QN_FLAGS modes: all of the flags in value (nfdump's `flags SA`), any of
 * them (a letter form under an odd number of `not`s), or the flag byte
 * compared with value by cmp (nfdump's `flags [cmp] number`). */
enum { QF_ALLOF = 0, QF_ANYOF = 1, QF_CMP = 2 };

/* QF_MAC: which of the four MAC fields a term tests (aux, any of them). */
enum { QM_IN_SRC = 1, QM_IN_DST = 2, QM_OUT_SRC = 4, QM_OUT_DST = 8 };

typedef enum qdir { QD_EITHER = 0, QD_SRC, QD_DST, QD_BOTH, QD_PREV, QD_NEXT } qdir_t;
typedef enum qcmp { QC_EQ = 0, QC_GT, QC_LT, QC_GE, QC_LE } qcmp_t;

typedef enum qfield {
  QF_PACKETS = 0, QF_BYTES, QF_DURATION, QF_PPS, QF_BPS, QF_BPP, QF_FLOWS,
  QF_AS, QF_IF, QF_TOS, QF_ICMP_TYPE, QF_ICMP_CODE, QF_VLAN, QF_FIRST, QF_LAST,
  /* nfdump's extended fields (record.h), evaluated on records only */
  QF_OUT_PACKETS, QF_OUT_BYTES, QF_MASK, QF_ENGINE_TYPE, QF_ENGINE_ID, QF_OBS_DOMAIN,
  QF_NAT_EVENT, QF_FW_EVENT, QF_FW_XEVENT, QF_IVRF, QF_EVRF, QF_XPORT, QF_MPLS_LABEL,
  QF_MPLS_EXP, QF_MPLS_EOS, QF_MPLS_ANY, QF_MAC, QF_DIRECTION,
  QF_NEXTHOP, QF_BGPNEXTHOP, QF_ROUTER, QF_XADDR,  /* QN_XADDR fields */
  QF_COUNT_
} qfield_t;

/* One address item: a v4 pattern (each octet a 256-bit set) or a v6 prefix. */
typedef struct qaddr {
  uint8_t v6;
  uint8_t plen;          /* v6 prefix length */
  uint8_t a6[16];
  uint64_t oct[4][4];    /* v4: allowed values of octet i, 256-bit set */
} qaddr_t;

typedef struct qrange { uint32_t lo, hi; } qrange_t;

typedef struct qnode {
  qnode_kind_t kind;
  qdir_t dir;
  qcmp_t cmp;
  qfield_t field;
  uint32_t col;          /* column in the source text (for messages) */
  uint32_t aux;          /* FLAGS mode; MPLS label number; MAC fields (QM_*) */
  struct qnode *kid[2];  /* AND/OR: two kids; NOT: kid[0] */
  uint64_t value;        /* IPVER, FLAGS mask, TIME/NUM value */
  size_t n;              /* ranges / addrs count */
  qrange_t *ranges;      /* PORT, PROTO: sorted, merged */
  qaddr_t *addrs;        /* ADDR */
} qnode_t;

struct ba_query {
  qnode_t *root;
  uint64_t now_ns;
  int now_set;
  uint32_t cols;
  size_t errcol;
  char errmsg[256];
  int no_live;                      /* ba_query_set_live(q, 0): journals are not read */
  uint64_t live_files, live_rows;   /* the last run's journals read and their rows */
};

void qnode_free(qnode_t *n);
qnode_t *qnode_new(qnode_kind_t kind);
int qnode_eval(const qnode_t *n, const ba_record_t *r);
uint32_t qnode_columns(const qnode_t *n);
int qaddr_match(const qaddr_t *a, const uint8_t addr[16]);
int qaddr_v4_in(const qaddr_t *a, int octet, unsigned v);
/* Whether a flag byte v satisfies a QN_FLAGS node (evaluator and planner). */
int qflags_match(const qnode_t *n, unsigned v);

/* exec.c: q over the window of bins b (opts' window, columns, count_only
 * and limit are replaced), each matching record's rows, packets and bytes
 * added to its start-time bin. Segments the index answers exactly are summed
 * from the first, packets and bytes columns (no record); the others, damaged
 * segments' scans and journals go through records. stats as ba_query_run's,
 * but first_ns/last_ns cover only records read as records. */
int query_run_bins(ba_query_t *q, ba_store_t *s, const ba_query_exec_opts_t *opts, const ba_bin_sums_t *b,
                   ba_query_stats_t *stats);

/* exec.c: with threads >= 2, a worker plans segments ahead only when at
 * least two segments of the window hold this many rows (default 2^20); tests
 * set 0 to run the worker on small stores. Not thread-safe: set it before
 * queries run. */
void query_set_par_min_rows(uint64_t rows);
/* Tests: the planning worker sleeps this long on each segment it takes, so
 * the caller's thread plans and reads later segments ahead itself. */
void query_set_par_worker_pause(unsigned us);
/* Tests: candidate rows held read ahead, all segments together (default
 * 2^19); a segment that would pass it is read when it is delivered. */
void query_set_prefetch_held_rows(uint64_t rows);
void query_set_order_max(uint64_t rows); /* records a clustered segment's time sort holds (order.c) */

#endif

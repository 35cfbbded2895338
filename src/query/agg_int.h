/* Internal to the aggregator (agg.c: fields, groups, results; agg_cols.c:
 * keys and counters from column vectors). */
#ifndef BA_QUERY_AGG_INT_H
#define BA_QUERY_AGG_INT_H

#include <stddef.h>
#include <stdint.h>

#include "bitarc/query.h"

typedef struct afield {
  const char *name, *title;
  uint32_t bit;
  uint16_t off, size;  /* the field in ba_record_t */
  uint16_t off2;       /* pair elements: the destination-side field */
  uint8_t kind;        /* 0 number, 1 address, 2 MAC */
  uint32_t cols;       /* BA_COL_* holding fld and fld2 */
} afield_t;

#define PAIRS (BA_AGG_IP | BA_AGG_PORT | BA_AGG_AS | BA_AGG_IF | BA_AGG_VLAN | BA_AGG_MASK)
#define FIVE (BA_AGG_SRCIP | BA_AGG_DSTIP | BA_AGG_SRCPORT | BA_AGG_DSTPORT | BA_AGG_PROTO)
#define KEY_MAX 160
#define AGG_NEED_MAX 64 /* fields a key and the counters read (ba_query_agg_fields): every -A field fits */

/* A group's counters; its key is in keys (the grouped fields' bytes in fl
 * order, then ipver). Rows (ba_query_agg_row_t, a whole record each) are
 * made only for the groups a result returns. */
typedef struct grp {
  uint64_t flows, packets, bytes, out_packets, out_bytes, first_ns, last_ns;
  uint8_t tcp_flags, kind;
} grp_t;

struct ba_query_agg {
  ba_query_agg_spec_t spec;
  const afield_t *fl[32];
  size_t nf, klen;
  grp_t *g;                  /* dense group array */
  uint8_t *keys;             /* klen bytes per group */
  size_t n, cap, kcap;
  uint64_t *slots;           /* hash slots: group index + 1 in the low 32 bits (0 = empty), the
                                key hash's high 32 bits above (compared before the key) */
  size_t nslots;
  uint64_t *ghash;           /* each group's key hash (the slots grow without reading keys) */
  size_t hcap;
  int sorted_by;             /* groups are in this order (-1: first seen) */
  ba_query_agg_row_t *rows;  /* the last result's rows */
  size_t rcap;
  uint32_t *perm;            /* scratch: group order */
  size_t pcap;
  int keyver; /* the key holds a flow address: its IP version is part of the key (elsewhere, as
                 nfdump, IPv4 and IPv6 flows of one port or protocol are one group) */
  /* Column vectors (agg_cols.c): the fields read, need[0..nneed); grouped
   * field i takes its values (an address: 4 words) from vectors
   * ix[i][side][rev][0..4) (side 1: a pair's destination side; rev: a
   * bidirectional lookup with source and destination swapped); the
   * counters' and key helpers' vectors. */
  uint16_t need[AGG_NEED_MAX];
  size_t nneed;
  uint8_t ix[32][2][2][4];
  uint8_t no_flags; /* ba_query_agg_drop_flags: tcp_flags not read, key.tcp_flags 0 */
  uint8_t i_first, i_last, i_pk, i_by, i_opk, i_oby, i_flags, i_aggr, i_kind, i_ipver, i_proto, i_sport, i_dport;
  uint8_t *kbuf;             /* scratch: a batch's keys, hashes */
  uint64_t *hbuf;
};

/* agg_cols.c: the fields the aggregator reads (a->need) and where each
 * grouped field's values are among them. */
int agg_plan_fields(ba_query_agg_t *a);
/* ba_malloc, and from 4 MiB on a hint for transparent huge pages (agg_cols.c). */
void *agg_alloc_big(size_t bytes);

#endif

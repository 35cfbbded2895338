/* Flow records from CSV exports with a header line naming the columns.
 * Two vocabularies are understood:
 *   Argus / Stratosphere .binetflow (CTU-13): StartTime, Dur, Proto, SrcAddr,
 *     Sport, DstAddr, Dport, State, sTos, TotPkts, TotBytes;
 *   nfdump -o csv (UGR'16 and others): ts or te, td, sa, da, sp, dp, pr, flg,
 *     stos, ipkt or pkt, ibyt or byt.
 * Times are "YYYY-MM-DD HH:MM:SS[.frac]" (any of - / as date separators, a
 * space or T before the time; UTC) or epoch seconds[.frac]. Records keep the
 * file order. Rows of non-IP protocols (ARP, IPX: MAC addresses) are counted
 * and skipped; a row that cannot be a flow record is counted as bad and
 * skipped, the first one described in the stats. */
#ifndef BA_INGEST_FLOWCSV_H
#define BA_INGEST_FLOWCSV_H

#include <stdio.h>

#include "bitarc/record.h"

typedef struct ba_flowcsv_stats {
  uint64_t lines;      /* data lines read (header, blank lines and nfdump's summary not counted) */
  uint64_t flows;      /* delivered (IPv4 and IPv6) */
  uint64_t nonip;      /* skipped: a protocol without IP addresses */
  uint64_t bad;        /* skipped: not a flow record */
  char first_bad[192]; /* "NAME:LINE: what 'field'" of the first bad line, else "" */
  char nonip_protos[8][16]; /* the first distinct non-IP protocol names */
  unsigned n_nonip_protos;
} ba_flowcsv_stats_t;

/* Reads one CSV export from fp (not closed; `name` labels messages) and
 * hands the records to fn in batches; stats accumulate over calls (zero them
 * before the first). BA_ERR_CORRUPT when the file has no header naming a
 * start or end time, both addresses, the protocol, packets and bytes
 * (message in err), BA_ERR_IO on a read error, a sink's non-zero status,
 * else BA_OK. */
int ba_flowcsv_read(FILE *fp, const char *name, ba_record_sink_fn fn, void *ctx, ba_flowcsv_stats_t *st,
                    char *err, size_t errlen);

#endif

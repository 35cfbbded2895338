/* Flow records from packet records: one flow per 5-tuple (source and
 * destination address and port, protocol, as they appear: no direction
 * merging), extended by every packet of the tuple that starts within
 * idle_ns of the flow's span (after its last packet or before its first);
 * a packet further away starts a new flow of that tuple. Packets without IP
 * (ipver 0) are skipped. A flow is its first packet with kind = flow, no
 * frame, and packets, bytes, TCP flags and last time accumulated. Flows are
 * kept in memory in the order of their first packet. */
#ifndef BA_INGEST_FLOWAGG_H
#define BA_INGEST_FLOWAGG_H

#include "bitarc/record.h"

typedef struct ba_flowagg ba_flowagg_t;

int ba_flowagg_create(uint64_t idle_ns, ba_flowagg_t **out);
void ba_flowagg_free(ba_flowagg_t *a);
/* Adds packets in arrival order; usable as a ba_record_sink_fn with the
 * aggregator as ctx (ba_flowagg_sink). Non-packet records are BA_ERR_INVALID. */
int ba_flowagg_add(ba_flowagg_t *a, const ba_record_t *pkts, size_t n);
int ba_flowagg_sink(void *a, const ba_record_t *pkts, size_t n);
/* The flows so far; valid until the next add or free. */
const ba_record_t *ba_flowagg_flows(const ba_flowagg_t *a, size_t *n);

#endif

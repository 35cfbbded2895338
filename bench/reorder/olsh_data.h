/* bench_olsh's data sets, all read through the library: the shared captures
 * (ba_capture_ingest as packets), flows aggregated from them (ba_flowagg),
 * real flow exports (ba_flowcsv_read) and generated flows. */
#ifndef BENCH_OLSH_DATA_H
#define BENCH_OLSH_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "bitarc/record.h"

typedef struct {
  const char *name;
  ba_record_t *r;
  size_t n, cap;
  uint8_t *frames; /* all frame bytes; r[i].frame points in here after load */
  size_t fbytes, fcap;
  size_t *foff;
} recset;

void bench_die(const char *msg) __attribute__((noreturn));
void recset_free(recset *s);
/* Every pcap/pcapng under dir in name order, as packets. replay: each file
 * follows the previous one and gaps between packets are capped at 1 s. */
void olsh_load_captures(const char *dir, int replay, recset *s);
/* Flows of the packets: one per 5-tuple, ended by a 60 s gap. */
void olsh_flows_from_packets(const recset *pk, recset *fl);
/* n synthetic flows: Zipf clients and servers, a service mix, half responses. */
void olsh_gen_flows(size_t n, recset *s);
/* Flow CSV exports (files, or directories read in version order); IPv4 kept. */
void olsh_load_flow_csv(char **paths, size_t npaths, recset *s);

#endif

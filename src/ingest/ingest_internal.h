/* Internal helpers shared by the ingest module's files. */
#ifndef BA_INGEST_INTERNAL_H
#define BA_INGEST_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "bitarc/ingest.h"

/* Offset of the UDP header's source/destination ports relative to the UDP
 * payload offset reported by ba_packet_parse (payload - 8). */
#define BA_UDP_HDR_LEN 8

#endif

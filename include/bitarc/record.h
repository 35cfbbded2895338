/* The record every source decodes into and every store archives.
 * One struct serves flows and packets; `kind` says which fields are meaningful.
 * Addresses are 16 bytes: IPv4 is stored IPv4-mapped (::ffff:a.b.c.d) with
 * ipver = 4, so byte 12..15 hold a.b.c.d. Times are nanoseconds since the Unix
 * epoch (UTC). */
#ifndef BITARC_RECORD_H
#define BITARC_RECORD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ba_record_kind { BA_REC_FLOW = 1, BA_REC_PACKET = 2 } ba_record_kind_t;

/* TCP flag bits as in the TCP header (and nfdump). */
#define BA_TCP_FIN 0x01
#define BA_TCP_SYN 0x02
#define BA_TCP_RST 0x04
#define BA_TCP_PSH 0x08
#define BA_TCP_ACK 0x10
#define BA_TCP_URG 0x20
#define BA_TCP_ECE 0x40
#define BA_TCP_CWR 0x80

typedef struct ba_record {
  uint64_t first_ns;     /* flow start, or packet timestamp */
  uint64_t last_ns;      /* flow end; = first_ns for packets */
  uint8_t src[16];       /* IPv6, or IPv4-mapped */
  uint8_t dst[16];
  uint8_t exporter[16];  /* exporter address for flows (IPv4-mapped if v4), zero for packets */
  uint64_t packets;      /* 1 for a packet record */
  uint64_t bytes;        /* flow octets; wire length for a packet */
  uint32_t src_as, dst_as;
  uint32_t in_if, out_if;
  uint32_t caplen;       /* packets: bytes of frame captured (frame points to them) */
  uint32_t wirelen;      /* packets: original length on the wire */
  uint16_t src_port, dst_port;  /* for ICMP flows: 0 and type<<8|code, as nfdump */
  uint16_t vlan;         /* 0 = none */
  uint16_t linktype;     /* packets: pcap DLT of the frame */
  uint8_t ipver;         /* 4 or 6; 0 for a non-IP packet */
  uint8_t proto;         /* IP protocol number */
  uint8_t tcp_flags;     /* OR of all flags seen */
  uint8_t tos;
  uint8_t kind;          /* ba_record_kind_t */
  uint8_t icmp_type, icmp_code;
  uint8_t pad_;
  const uint8_t *frame;  /* packets: caplen bytes, borrowed for the duration of the call */

  /* ---- Extended flow fields (stored from segment format 3.0 on). Zero means
   * "not sent"; a field no exporter of a block sends costs no bytes on disk.
   * Names follow nfdump's; the IPFIX IE numbers are the usual sources. ---- */
  uint64_t out_packets;  /* egress / reverse direction: IE 24, RFC 5103 reverse IE 2, NSEL 299 */
  uint64_t out_bytes;    /* IE 23, RFC 5103 reverse IE 1, NSEL responderOctets 232 */
  uint64_t received_ns;  /* when the collector received the export datagram; 0 = unknown */
  uint64_t in_src_mac, out_dst_mac, in_dst_mac, out_src_mac; /* 48-bit MACs (IE 56, 57, 80, 81) */
  uint8_t next_hop[16];      /* IE 15 / 62, IPv4-mapped or IPv6; all zero = none */
  uint8_t bgp_next_hop[16];  /* IE 18 / 63 */
  uint8_t xsrc[16], xdst[16];  /* post-NAT addresses (IE 225/226, 281/282; NSEL) */
  uint32_t mpls[10];     /* MPLS label stack entries as sent: label << 4 | exp << 1 | bottom-of-stack */
  uint32_t obs_domain;   /* NetFlow v9 source id / IPFIX observation domain id */
  uint32_t sampling;     /* sampling interval, 1 in N (IE 34 / 305 / options); 0 = unknown */
  uint32_t ingress_vrf, egress_vrf; /* IE 234, 235 */
  uint32_t prev_as, next_as;        /* BGP adjacent AS (IE 128, 129) */
  uint32_t aggr_flows;   /* flows this record stands for (nfdump's aggregated records); 0 = 1 */
  uint16_t xsrc_port, xdst_port;    /* post-NAT ports (IE 227, 228) */
  uint16_t dst_vlan;     /* IE 254 (vlan above is the source / ingress VLAN, IE 58) */
  uint16_t fw_xevent;    /* Cisco ASA extended event (NSEL 33002) */
  uint8_t dst_tos;       /* IE 55 (tos above is the source ToS, IE 5) */
  uint8_t src_mask, dst_mask;   /* prefix lengths (IE 9 / 29, 13 / 30) */
  uint8_t engine_type, engine_id; /* NetFlow v5 header / IE 38, 39 */
  uint8_t sampling_algo; /* IE 35 / 304 */
  uint8_t nat_event;     /* IE 230 */
  uint8_t fw_event;      /* IE 233 firewallEvent / NSEL 40005 */
  uint8_t direction;     /* IE 61 flowDirection: 0 ingress, 1 egress */
  uint8_t pad2_[7];
} ba_record_t;

/* IPv4 helpers on the 16-byte form. */
static inline void ba_addr_set_v4(uint8_t a[16], uint32_t host_order_v4) {
  for (int i = 0; i < 10; i++) a[i] = 0;
  a[10] = 0xff; a[11] = 0xff;
  a[12] = (uint8_t)(host_order_v4 >> 24); a[13] = (uint8_t)(host_order_v4 >> 16);
  a[14] = (uint8_t)(host_order_v4 >> 8);  a[15] = (uint8_t)host_order_v4;
}
static inline uint32_t ba_addr_get_v4(const uint8_t a[16]) {
  return ((uint32_t)a[12] << 24) | ((uint32_t)a[13] << 16) | ((uint32_t)a[14] << 8) | a[15];
}
static inline int ba_addr_is_v4(const uint8_t a[16]) {
  for (int i = 0; i < 10; i++) if (a[i]) return 0;
  return a[10] == 0xff && a[11] == 0xff;
}

/* A sink that receives decoded records in batches. A non-zero return stops the
 * producer and is passed back to its caller. */
typedef int (*ba_record_sink_fn)(void *ctx, const ba_record_t *recs, size_t n);

#ifdef __cplusplus
}
#endif
#endif

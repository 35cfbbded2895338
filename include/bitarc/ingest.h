/* Decoders and the UDP collector: NetFlow v5, NetFlow v9 (RFC 3954), IPFIX
 * (RFC 7011/7012, bidirectional RFC 5103), sFlow v5, pcap/pcapng packets
 * (through libpcap), NetFlow/IPFIX/sFlow datagrams inside a capture. Every source turns into ba_record_t batches
 * handed to a ba_record_sink_fn; the library never prints.
 *
 * Counting contract: every unit a decoder reads is either delivered as a
 * record or counted in exactly one dropped[] reason (templates and options
 * records are counted on their own lines, they are not flows). */
#ifndef BITARC_INGEST_H
#define BITARC_INGEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bitarc/errors.h"
#include "bitarc/record.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Why something was not stored. The unit is given per reason. */
typedef enum ba_ingest_drop {
  BA_DROP_UNKNOWN_TEMPLATE = 0, /* data sets whose template never arrived (unit: data set) */
  BA_DROP_MALFORMED,            /* impossible header/set/template lengths (unit: datagram or set) */
  BA_DROP_TRUNCATED,            /* datagram or frame ends inside a unit (unit: datagram/packet) */
  BA_DROP_VERSION,              /* not NetFlow v5/v9/IPFIX/sFlow v5 (unit: datagram) */
  BA_DROP_TIME,                 /* flow time outside the opt-in past_s/future_s window (unit: record) */
  BA_DROP_NOT_EXPORT,           /* flows mode: a packet that is no export datagram (unit: packet) */
  BA_DROP_QUEUE_FULL,           /* collector: receive queue was full (unit: datagram) */
  BA_DROP_STORE,                /* the sink refused a batch (unit: record) */
  BA_DROP_STOP_TIMEOUT,         /* collector: read from the socket at stop after the drain time ran
                                 * out (or the queue stayed full until then) (unit: datagram) */
  BA_DROP_COUNT
} ba_ingest_drop_t;
/* "unknown-template", "malformed", ...; never NULL. */
const char *ba_ingest_drop_name(ba_ingest_drop_t r);
/* "data sets", "datagrams", "records", ...; never NULL. */
const char *ba_ingest_drop_unit(ba_ingest_drop_t r);

typedef struct ba_ingest_counts {
  uint64_t packets;           /* capture packets read (pcap sources) */
  uint64_t datagrams;         /* export datagrams decoded (v5 + v9 + IPFIX + sFlow) */
  uint64_t datagrams_v5, datagrams_v9, datagrams_ipfix;
  uint64_t datagrams_sflow;
  uint64_t messages;          /* export messages: more than datagrams when one datagram
                               * concatenates several v5 or IPFIX messages */
  uint64_t sflow_flow_samples;    /* sFlow flow samples (each becomes one record) */
  uint64_t sflow_counter_samples; /* sFlow counter samples: counted, not stored */
  uint64_t clock_far;         /* records whose start is more than a day from the export time */
  uint64_t records;           /* records delivered to the sink (flows or packets) */
  uint64_t templates;         /* template records learned (incl. refreshes) */
  uint64_t template_withdrawals;
  uint64_t options_templates; /* options templates learned */
  uint64_t options_records;   /* options data records parsed and skipped */
  uint64_t late_decoded;      /* data sets held for a template and decoded when it came */
  uint64_t dropped[BA_DROP_COUNT];
} ba_ingest_counts_t;
/* a += b */
void ba_ingest_counts_add(ba_ingest_counts_t *a, const ba_ingest_counts_t *b);
uint64_t ba_ingest_counts_dropped(const ba_ingest_counts_t *c);

/* ---------- NetFlow v5 / v9 / IPFIX ---------- */

/* What ba_flow_detect returns for an sFlow v5 datagram. */
#define BA_FLOW_SFLOW5 65
/* Export protocol of a datagram if its header is valid (lengths consistent, set
 * ids legal): 5, 9 or 10 (NetFlow / IPFIX), BA_FLOW_SFLOW5; else 0. Strict
 * enough to tell exports from other UDP. */
int ba_flow_detect(const uint8_t *buf, size_t len);
/* Whether a UDP port is one commonly used for flow export (2055, 4739, 9995, ...). */
int ba_flow_port_is_export(uint16_t port);

typedef struct ba_flow_decoder ba_flow_decoder_t;
typedef struct ba_flow_decoder_opts {
  /* Data sets held while their template is unknown (0 = default 256) and
   * their total bytes (0 = default 4 MiB). The oldest is dropped when full. */
  uint32_t pending_max_sets;
  uint32_t pending_max_bytes;
  /* A held set is dropped once this many later datagrams of the same exporter
   * went by without its template (0 = default 64). */
  uint32_t pending_max_age;
  /* Flows that start more than past_s before / future_s after the export
   * time are dropped as BA_DROP_TIME (0 = no limit, the default: flows from
   * any clock are kept; exporters replaying old captures or with a 1970
   * clock send such times legitimately, and they are reported per exporter
   * in clock_far instead). */
  uint32_t past_s, future_s;
  uint32_t flags;               /* BA_FLOW_* below */
} ba_flow_decoder_opts_t;
/* Re-base flow times on the export time: every time of a datagram is moved by
 * (receive time - export time), so an exporter whose clock is off (a 1970
 * probe) gets its flows placed at the collector's clock, durations and
 * offsets from the export kept. Needs the receive time (ba_flow_decode_at);
 * without one (0) nothing moves. */
#define BA_FLOW_REBASE_TIME 1u
/* Store counters as sent. By default a flow whose exporter announced a
 * sampler (options data, NetFlow v5 header) gets packets and bytes (in and
 * out) multiplied by the sampling rate, as nfdump does; `sampling` holds the
 * rate either way. */
#define BA_FLOW_RAW_COUNTERS 2u
void ba_flow_decoder_opts_init(ba_flow_decoder_opts_t *o);

/* opts may be NULL for the defaults. */
int ba_flow_decoder_create(const ba_flow_decoder_opts_t *opts, ba_flow_decoder_t **out);
void ba_flow_decoder_free(ba_flow_decoder_t *d);
/* Decodes one export datagram sent by `exporter` (16-byte form of record.h).
 * Templates are kept per (exporter, version, source id / observation domain).
 * Records go to fn in batches (possibly also records of earlier held sets).
 * Returns 0 when the datagram was handled (even if parts were dropped and
 * counted), or the sink's non-zero status. */
int ba_flow_decode(ba_flow_decoder_t *d, const uint8_t exporter[16], const uint8_t *buf, size_t len,
                   ba_record_sink_fn fn, void *ctx);
/* The same with the time the datagram was received (ns since the epoch; the
 * collector's clock, or the capture time of a packet; 0 = unknown). It is
 * stored in every record (received_ns), is the time of sFlow samples (sFlow
 * carries no clock, as sfcapd), checks the exporter's clock and is the base of
 * BA_FLOW_REBASE_TIME. For the UDP and TCP listeners. */
int ba_flow_decode_at(ba_flow_decoder_t *d, const uint8_t exporter[16], uint64_t received_ns, const uint8_t *buf,
                      size_t len, ba_record_sink_fn fn, void *ctx);
/* End of input: held data sets whose template never came are counted as
 * BA_DROP_UNKNOWN_TEMPLATE. */
void ba_flow_decoder_finish(ba_flow_decoder_t *d);
/* Totals since creation. */
void ba_flow_decoder_counts(const ba_flow_decoder_t *d, ba_ingest_counts_t *out);
/* Detail of the last problem (e.g. "exporter 192.0.2.1 domain 0: template 260 field 3 has length 0"). */
const char *ba_flow_decoder_errmsg(const ba_flow_decoder_t *d);

/* Per-exporter totals, for reports naming each source. */
typedef struct ba_flow_source {
  uint8_t addr[16];
  ba_ingest_counts_t counts;
  /* Export time minus receive time of the last datagram with both (s); 0 when
   * the receive time is unknown. */
  int64_t export_skew_s;
  /* Non-zero when the exporter's clock looks wrong: export time before 2000,
   * more than a day from the receive time, or flows far from it (clock_far). */
  uint8_t clock_suspicious;
  uint32_t samplers, ifnames;  /* options data kept (ba_flow_decoder_samplers / _ifnames) */
  char last_error[224];        /* the last drop's reason, "" if none */
} ba_flow_source_t;
/* Copies up to cap sources, returns how many exist. */
size_t ba_flow_decoder_sources(const ba_flow_decoder_t *d, ba_flow_source_t *out, size_t cap);

/* Per template (exporter, version, domain, id): what it decoded and dropped.
 * Withdrawn templates stay listed with their totals. */
typedef struct ba_flow_template_info {
  uint8_t exporter[16];
  uint32_t domain;            /* v9 source id / IPFIX observation domain */
  uint16_t id;
  uint8_t version;            /* 9 or 10 */
  uint8_t options;            /* 1 = options template */
  uint8_t withdrawn;          /* withdrawn and not defined again */
  uint8_t varlen;             /* holds variable-length elements */
  uint16_t fields, scope_fields;
  uint32_t definitions;       /* times it was (re)defined */
  uint64_t sets;              /* data sets decoded with it */
  uint64_t records;           /* data records decoded (flows, or options records) */
  uint64_t stored;            /* flow records the sink accepted */
  uint64_t dropped[BA_DROP_COUNT]; /* same units as ba_ingest_counts_t */
  char last_drop[224];        /* reason of the last drop, "" if none */
} ba_flow_template_info_t;
/* Copies up to cap templates, returns how many exist. */
size_t ba_flow_decoder_templates(const ba_flow_decoder_t *d, ba_flow_template_info_t *out, size_t cap);

/* Samplers announced in options data (v9/IPFIX elements 34/35, 48-50,
 * 302/304-306) or NetFlow v5 headers, kept per exporter and domain. Flows
 * naming a sampler id, or any flow when a generic sampler is known, get
 * their counters multiplied by the rate as nfdump does (doc/decoders.md). */
typedef struct ba_flow_sampler {
  uint8_t exporter[16];
  uint32_t domain;
  uint64_t id;                /* sampler / selector id; 0 when none was sent */
  uint8_t generic;            /* from elements 34/35 (applies to every flow) */
  uint8_t algorithm;
  uint32_t packet_interval, space_interval; /* rate = (packet + space) / packet */
} ba_flow_sampler_t;
size_t ba_flow_decoder_samplers(const ba_flow_decoder_t *d, ba_flow_sampler_t *out, size_t cap);

/* Interface names from options data (element 82 interfaceName or 83
 * interfaceDescription, scoped by an interface index). */
typedef struct ba_flow_ifname {
  uint8_t exporter[16];
  uint32_t domain;
  uint32_t ifindex;
  char name[64];
  char description[64];
} ba_flow_ifname_t;
size_t ba_flow_decoder_ifnames(const ba_flow_decoder_t *d, ba_flow_ifname_t *out, size_t cap);

/* ---------- packets ---------- */

/* Parses one captured frame of pcap link type `dlt` (DLT_* value as returned by
 * pcap_datalink) into a packet record: ts, lengths, link type, frame pointer,
 * VLAN, IPv4/IPv6 (extension headers), TCP/UDP/SCTP ports, TCP flags, ICMP
 * type/code (dst_port = type<<8|code). Non-IP frames get ipver 0. If udp_off
 * is not NULL it receives the offset of the UDP payload in data (or SIZE_MAX
 * when the frame holds no complete UDP header). Never fails. */
void ba_packet_parse(int dlt, const uint8_t *data, uint32_t caplen, uint32_t wirelen, uint64_t ts_ns,
                     ba_record_t *rec, size_t *udp_off);

typedef enum ba_ingest_as { BA_INGEST_AUTO = 0, BA_INGEST_PACKETS = 1, BA_INGEST_FLOWS = 2 } ba_ingest_as_t;

typedef struct ba_capture_opts {
  ba_ingest_as_t as;            /* AUTO: flows when most packets are export datagrams */
  ba_flow_decoder_t *flows;     /* decoder for flow exports (needed unless as == PACKETS) */
  /* Called about every 64k packets with bytes of the file consumed. */
  void (*progress)(void *ctx, uint64_t bytes_done);
  void *progress_ctx;
} ba_capture_opts_t;

typedef struct ba_capture_result {
  ba_ingest_as_t as;            /* what the file was read as */
  int linktype;                 /* DLT of the capture */
  ba_ingest_counts_t counts;    /* this file only (flow counts included) */
  uint64_t file_bytes;          /* size of the file (0 if unknown) */
  /* On a read error: the packet number (1-based) that could not be read and
   * the file offset where it starts. */
  uint64_t error_packet, error_offset;
  char errmsg[256];             /* detail when the call failed, else "" */
} ba_capture_result_t;

/* Reads a pcap or pcapng file (path, or an open stream when fp != NULL; the
 * stream is closed). Every good packet before a damaged region is delivered;
 * then BA_ERR_TRUNCATED or BA_ERR_CORRUPT is returned with the position in
 * res. BA_ERR_NOT_OURS if the file is no capture. BA_ERR_UNSUPPORTED when
 * libpcap cannot be loaded (it is loaded on the first call; errmsg names it).
 * A non-zero sink status stops reading and is returned. */
int ba_capture_ingest(const char *path, FILE *fp, const ba_capture_opts_t *opts, ba_record_sink_fn fn,
                      void *ctx, ba_capture_result_t *res);

/* ---------- nfdump files (nfcapd.*) ---------- */

/* nfdump's own binary files, read natively: layout 1 (nfdump 1.6, records
 * with extension maps) and layout 2 (nfdump 1.7, V3 records with elements),
 * blocks uncompressed or LZO, LZ4, BZ2, ZSTD. Every unit is either
 * delivered or counted in one reason below. */
typedef enum ba_nffile_drop {
  BA_NFDROP_BLOCK_CORRUPT = 0, /* a block that does not decompress or whose records overrun it (unit: block) */
  BA_NFDROP_BLOCK_TYPE,        /* blocks nfdump skips too: 1.5 layout, unknown types (unit: block) */
  BA_NFDROP_NO_EXTMAP,         /* layout-1 flow whose extension map never came (unit: record) */
  BA_NFDROP_MALFORMED,         /* record whose length does not fit its contents (unit: record) */
  BA_NFDROP_LEGACY,            /* nfdump 1.5 / early 1.6 record types nfdump 1.7 skips too (unit: record) */
  BA_NFDROP_UNKNOWN_RECORD,    /* record type nfdump does not define (unit: record) */
  BA_NFDROP_STORE,             /* the sink refused a batch (unit: record) */
  BA_NFDROP_COUNT
} ba_nffile_drop_t;
/* "block-corrupt", "block-type", ...; never NULL. */
const char *ba_nffile_drop_name(ba_nffile_drop_t r);
/* "blocks" or "records"; never NULL. */
const char *ba_nffile_drop_unit(ba_nffile_drop_t r);
/* "none", "lzo", "bz2", "lz4", "zstd" for nfdump's compression codes 0..4; "?" else. */
const char *ba_nffile_compression_name(unsigned code);

typedef struct ba_nffile_result {
  uint16_t layout;            /* 1 or 2 */
  uint8_t compression;        /* nfdump's code: 0 none, 1 lzo, 2 bz2, 3 lz4, 4 zstd */
  uint32_t nfdump_version;    /* writer's version, layout 2 (0x01070100 = 1.7.1) */
  uint32_t blocks_declared;   /* data blocks the header announces */
  char ident[128];            /* the file's ident string ("" if none) */
  uint64_t file_bytes;
  uint64_t blocks;            /* data blocks read (incl. dropped ones) */
  uint64_t records;           /* flows delivered to the sink */
  uint64_t meta_records;      /* extension maps, exporter, sampler and statistics records */
  uint64_t elements_skipped;  /* V3 elements with no ba_record_t field (the flow is kept) */
  uint64_t dropped[BA_NFDROP_COUNT];
  /* On failure: the 1-based data block that could not be read and the file
   * offset of its header. */
  uint64_t error_block, error_offset;
  char errmsg[256];           /* why the call failed, naming the file and block; else "" */
  char detail[256];           /* the first drop, naming its block and record; else "" */
} ba_nffile_result_t;
uint64_t ba_nffile_dropped(const ba_nffile_result_t *r);

/* Reads one nfdump file (path, or an open stream when fp != NULL; the stream
 * is closed; path then only names it in messages) and hands its flows to fn.
 * Returns 0 when the file was read to its end (drops are counted in res);
 * BA_ERR_NOT_OURS (no nfdump magic), BA_ERR_VERSION (unknown layout or a
 * big-endian file), BA_ERR_UNSUPPORTED (encrypted, unknown compression),
 * BA_ERR_IO, or BA_ERR_TRUNCATED / BA_ERR_CORRUPT when a block header is cut
 * or impossible (every flow before it was delivered; position in res); or
 * the sink's non-zero status. */
int ba_nffile_ingest(const char *path, FILE *fp, ba_record_sink_fn fn, void *ctx, ba_nffile_result_t *res);
/* Whether buf (the first bytes of a file, len >= 4) starts like an nfdump file. */
int ba_nffile_detect(const uint8_t *buf, size_t len);

/* ---------- UDP collector ---------- */

/* Receive threads drain the sockets (recvmmsg) into bounded byte queues, one
 * per socket; the caller's thread decodes from them and feeds its sink. */
typedef struct ba_collector ba_collector_t;
#define BA_COLLECTOR_MAX_LISTEN 16
#define BA_COLLECTOR_MAX_SOCKETS 64
typedef struct ba_collector_opts {
  /* Addresses to listen on ("127.0.0.1:2055", "[::1]:2055", "0.0.0.0:9995";
   * port 0 = any free port): UDP datagrams (NetFlow v5/v9, IPFIX, sFlow),
   * or with "tcp:" ("tcp:0.0.0.0:4739") IPFIX over TCP (RFC 7011 10.4:
   * messages framed by their length; a stream that is not IPFIX is closed
   * and counted). "udp:" may prefix a datagram address. nlisten == 0: `listen` alone (NULL = 127.0.0.1:2055). */
  const char *listen;
  const char *listens[BA_COLLECTOR_MAX_LISTEN];
  size_t nlisten;
  /* Receive sockets, each with its own thread, per address (0 = 1). More than
   * one share the address with SO_REUSEPORT; the kernel spreads exporters
   * over them by address and port. */
  unsigned sockets;
  uint32_t rcvbuf_bytes;        /* receive buffer asked for per socket (0 = 64 MiB) */
  /* Bound of all receive queues together, in bytes: each queued datagram
   * takes its length plus a 28-byte header, rounded up to 8 (0 = 256 MiB);
   * shared equally by the sockets. A datagram
   * that finds its queue full is dropped and counted for its exporter. */
  uint64_t queue_bytes;
  /* At stop, each receive thread reads its socket until it is empty, waiting
   * for queue room when the queue is full, for at most this long (0 = 2000
   * ms); what is read after that is counted as stop-timeout drops. */
  uint32_t stop_drain_ms;
  ba_flow_decoder_opts_t decoder;
} ba_collector_opts_t;
void ba_collector_opts_init(ba_collector_opts_t *o);
#define BA_COLLECTOR_DEFAULT_RCVBUF (64u << 20)
#define BA_RX_TCP_CONNECTIONS 256 /* IPFIX-over-TCP connections per tcp: address; more are refused */
#define BA_COLLECTOR_DEFAULT_QUEUE (256ull << 20)

typedef struct ba_collector_stats {
  uint64_t received;            /* datagrams received from the sockets */
  uint64_t received_bytes;
  uint64_t queue_dropped;       /* datagrams lost because their queue was full */
  uint64_t queue_dropped_bytes;
  uint64_t queue_bytes;         /* bytes queued now, all queues */
  uint64_t queue_capacity;      /* the bound, all queues */
  uint64_t queue_peak;          /* most bytes seen queued at once (sampled at each poll) */
  int64_t kernel_drops;         /* socket drops from /proc/net/udp{,6}, all sockets; -1 if unknown */
  uint32_t rcvbuf_granted;      /* smallest receive buffer granted to a socket */
  ba_ingest_counts_t counts;    /* decoder totals, queue-full and stop-timeout drops included */
  uint64_t stop_drained;        /* datagrams read from the sockets after the stop (in `received`) */
  uint64_t stop_dropped;        /* of those, dropped: the drain time ran out (stop-timeout) */
  double stop_drain_s;          /* how long the receive threads drained at stop (the longest) */
} ba_collector_stats_t;

/* One receive socket. */
typedef struct ba_collector_socket {
  char address[64];             /* bound address, "127.0.0.1:2055" */
  const char *listen;           /* the listen text it came from */
  uint32_t rcvbuf_asked;
  uint32_t rcvbuf_granted;      /* bytes for datagrams (Linux reports twice this) */
  int rcvbuf_forced;            /* SO_RCVBUFFORCE was allowed (root / CAP_NET_ADMIN) */
  int64_t kernel_drops;         /* -1 if unknown */
  uint64_t received, received_bytes, queue_dropped;
  uint64_t queue_bytes, queue_capacity, queue_peak;
  int tcp;                      /* IPFIX over TCP: received counts messages; then: */
  uint64_t tcp_accepted, tcp_open, tcp_refused; /* connections: ever, now, refused (all slots taken) */
  uint64_t tcp_bad_framing;     /* closed because the stream was not IPFIX (version or length) */
  uint64_t tcp_truncated;       /* closed by the peer in the middle of a message */
} ba_collector_socket_t;

/* One exporter (source address of datagrams). */
typedef struct ba_collector_exporter {
  uint8_t addr[16];
  uint64_t received;            /* datagrams received from it (decoded, queued or dropped) */
  uint64_t received_bytes;
  /* Decoder counts; dropped[BA_DROP_QUEUE_FULL] holds its datagrams dropped
   * because the queue was full. */
  ba_ingest_counts_t counts;
  int64_t export_skew_s;        /* export time - receive time of its last datagram (s) */
  uint8_t clock_suspicious;     /* its clock looks wrong (ba_flow_source_t) */
  char last_error[224];         /* the reason of its last drop, "" if none */
} ba_collector_exporter_t;

/* Binds every socket and starts the receive threads (which block all
 * signals and, where allowed, run at nice -10 so that they drain the
 * sockets before the decoder and the writer get the CPU). Detail of a
 * failure in errbuf. */
int ba_collector_start(const ba_collector_opts_t *opts, ba_collector_t **out, char *errbuf, size_t errlen);
/* Waits up to min(timeout_ms, 20 ms) for a batch of datagrams (wakes early
 * once 256 KiB are queued), then decodes everything queued, delivering
 * records to fn. Call from one thread (the "polling thread"). Returns 0, or
 * the sink's status. */
int ba_collector_poll(ba_collector_t *c, int timeout_ms, ba_record_sink_fn fn, void *ctx);
/* Stops receiving: each receive thread reads its socket until it is empty
 * (for at most opts.stop_drain_ms; the queue bound still holds: it waits for
 * room while this thread decodes), then everything queued is decoded and
 * the decoder finished. Datagrams read after the drain time are counted as
 * stop-timeout drops. */
int ba_collector_stop(ba_collector_t *c, ba_record_sink_fn fn, void *ctx);
/* Totals; call from the polling thread (decoder counts). */
void ba_collector_get_stats(ba_collector_t *c, ba_collector_stats_t *st);
/* The first socket's bound address ("127.0.0.1:40123"). */
const char *ba_collector_address(const ba_collector_t *c);
/* Copies up to cap sockets, returns how many exist. Any thread. */
size_t ba_collector_sockets(ba_collector_t *c, ba_collector_socket_t *out, size_t cap);
/* Copies up to cap exporters (ascending address), returns how many exist.
 * Call from the polling thread. */
size_t ba_collector_exporters(ba_collector_t *c, ba_collector_exporter_t *out, size_t cap);
/* Copies up to cap templates (per exporter, version, domain and id: records
 * decoded, stored, dropped by reason, the last drop's text), returns how
 * many exist. Call from the polling thread. */
size_t ba_collector_templates(ba_collector_t *c, ba_flow_template_info_t *out, size_t cap);
void ba_collector_free(ba_collector_t *c);

/* Formats a 16-byte address (IPv4-mapped shown as dotted quad). */
void ba_addr_format(const uint8_t a[16], char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif

/* Internals of the collector (collector.c): receive sockets (rx_socket.c),
 * IPFIX over TCP (rx_tcp.c) and the per-exporter receive counters each
 * receive thread keeps without locks (rx_exporters.c). */
#ifndef BA_COLLECTOR_INTERNAL_H
#define BA_COLLECTOR_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "bitarc/ingest.h"

/* ---- receive sockets ---- */

/* Parses "ADDR:PORT", "[V6]:PORT" or "PORT" (loopback) into a socket address;
 * BA_ERR_SYNTAX with the offending text in err. */
int ba_rx_parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *sl, char *err, size_t errlen);

typedef struct ba_rx_sock {
  int fd;
  uint64_t inode;          /* for the kernel's drop counter in /proc/net/udp{,6} */
  char addr[64];           /* bound address, "127.0.0.1:2055" or "[::1]:2055" */
  uint32_t rcvbuf_granted; /* bytes usable for datagrams (getsockopt / 2 on Linux) */
  int rcvbuf_forced;       /* SO_RCVBUFFORCE was allowed (root or CAP_NET_ADMIN) */
} ba_rx_sock_t;

/* Opens a UDP socket bound to ss, asking for an `rcvbuf`-byte receive buffer
 * (SO_RCVBUFFORCE, which lifts net.core.rmem_max for root, else SO_RCVBUF).
 * reuseport: set SO_REUSEPORT so several sockets share the address. On
 * failure s->fd is -1 and err names the address and the reason. */
int ba_rx_sock_open(const struct sockaddr_storage *ss, socklen_t sl, int reuseport, uint32_t rcvbuf,
                    ba_rx_sock_t *s, char *err, size_t errlen);
/* Binds s->fd to ss and fills s->addr and s->inode; err names the address. */
int ba_rx_bind(ba_rx_sock_t *s, const struct sockaddr_storage *ss, socklen_t sl, char *err, size_t errlen);
/* The port a bound socket got (for sharing port 0 between sockets). */
int ba_rx_sock_port(const ba_rx_sock_t *s);
/* Kernel drop counters of the sockets with these inodes (-1 where unknown),
 * from one read of /proc/net/udp and /proc/net/udp6. */
void ba_rx_kernel_drops(const uint64_t *inodes, size_t n, int64_t *drops);
/* The 16-byte form (record.h) of a socket address. */
void ba_rx_addr16(const struct sockaddr_storage *ss, uint8_t out[16]);

/* ---- IPFIX over TCP (RFC 7011 section 10.4) ---- */

/* A listening TCP socket (non-blocking, SO_REUSEADDR) bound to ss. */
int ba_rx_tcp_open(const struct sockaddr_storage *ss, socklen_t sl, ba_rx_sock_t *s, char *err, size_t errlen);

#define BA_RX_TCP_MAX_CONN BA_RX_TCP_CONNECTIONS /* per listening socket; more are refused (counted) */
typedef struct ba_rx_tcp_conn {
  int fd; /* -1: free slot */
  struct sockaddr_storage peer;
  uint8_t *buf; /* 65,535 bytes: one message at most is ever partial */
  uint32_t have;
} ba_rx_tcp_conn_t;

/* The connections of one listening socket: owned by its receive thread; the
 * counters may be read by any thread. */
typedef struct ba_rx_tcp {
  ba_rx_tcp_conn_t conn[BA_RX_TCP_MAX_CONN];
  _Atomic uint64_t accepted, refused; /* connections */
  _Atomic uint64_t open;              /* connections open now */
  _Atomic uint64_t bad_framing;       /* closed: not an IPFIX stream (version, length) */
  _Atomic uint64_t truncated;         /* closed by the peer in the middle of a message */
  _Atomic uint64_t messages, bytes;   /* whole messages framed, bytes read */
} ba_rx_tcp_t;

/* Called for every whole message with the peer's address. */
typedef void (*ba_rx_msg_fn)(void *ctx, const struct sockaddr_storage *from, const uint8_t *msg, uint32_t len);

/* Hands the whole IPFIX messages at the front of buf (have bytes of a
 * stream) to fn and sets *used to the bytes they took (a partial message
 * stays). Returns how many, or -1 when the stream is not IPFIX (version
 * other than 10 or a length below 16): the messages before it were given. */
int ba_rx_tcp_frame(const uint8_t *buf, uint32_t have, const struct sockaddr_storage *peer, ba_rx_msg_fn fn,
                    void *ctx, uint32_t *used);
void ba_rx_tcp_init(ba_rx_tcp_t *t);
/* Waits up to timeout_ms for the listening socket lfd or a connection, then
 * accepts new connections and frames what arrived; fn gets each message.
 * Returns poll's result (0 on timeout). */
int ba_rx_tcp_poll(ba_rx_tcp_t *t, int lfd, int timeout_ms, ba_rx_msg_fn fn, void *ctx);
void ba_rx_tcp_close_all(ba_rx_tcp_t *t);

/* ---- per-exporter receive counters ----
 * One table per receive thread. Only that thread adds entries and counts; any
 * thread may read at any time: entries never move (chunks), an entry is
 * published by a release store of the entry count, and counters are atomics
 * the owner updates with plain relaxed load + store. */
typedef struct ba_rx_exp {
  uint8_t addr[16];
  _Atomic uint64_t datagrams; /* received from the socket (queued or dropped) */
  _Atomic uint64_t bytes;
  _Atomic uint64_t queue_full; /* of those, dropped because the queue was full */
  _Atomic uint64_t stop_timeout; /* of those, read at stop after the drain time: dropped */
} ba_rx_exp_t;

#define BA_RX_EXP_CHUNK 256
#define BA_RX_EXP_CHUNKS 1024 /* 262,144 exporters per receive socket */

typedef struct ba_rx_exporters {
  _Atomic(ba_rx_exp_t *) chunk[BA_RX_EXP_CHUNKS];
  _Atomic size_t n;
  /* owner only: open-addressing index (entry + 1, 0 = empty) and a one-entry cache */
  uint32_t *hidx;
  size_t hcap;
  ba_rx_exp_t *last;
  /* When the table is full, later exporters are counted here (address ::). */
  ba_rx_exp_t overflow;
} ba_rx_exporters_t;

void ba_rx_exporters_init(ba_rx_exporters_t *t);
void ba_rx_exporters_free(ba_rx_exporters_t *t);
/* Owner thread: the entry of addr (created on first sight; the overflow entry
 * when the table is full or memory runs out). Never NULL. */
ba_rx_exp_t *ba_rx_exporters_get(ba_rx_exporters_t *t, const uint8_t addr[16]);
/* Any thread: entries published so far, and entry i < that count of them.
 * The overflow entry (address ::) is read as t->overflow. */
size_t ba_rx_exporters_count(const ba_rx_exporters_t *t);
const ba_rx_exp_t *ba_rx_exporters_at(const ba_rx_exporters_t *t, size_t i);

/* Single-writer increment (the owner thread). */
static inline void ba_rx_add(_Atomic uint64_t *c, uint64_t v) {
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v, memory_order_relaxed);
}

#endif

/* UDP collector: one receive thread per socket drains it (recvmmsg batches)
 * into that socket's bounded byte queue; the caller's thread decodes from
 * every queue and feeds its sink.
 *
 * Each queue is a single-producer single-consumer ring without locks: the
 * receive thread owns `wr`, the polling thread owns `rd`, each publishes its
 * position with a release store and reads the other's with an acquire load.
 * Entries are [u32 length][16-byte exporter][datagram], 8-byte aligned; an
 * entry never wraps (a WRAP_MARK sends the reader back to offset 0). The
 * mutex and condition variable only wake a sleeping poller.
 *
 * Stop (ba_collector_stop): the receive threads read their sockets until
 * they are empty, waiting for queue room rather than dropping, for at most
 * the drain time; the stopping thread decodes meanwhile. What is read after
 * the drain time is counted as stop-timeout drops. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "ingest/collector_internal.h"

#define RX_BATCH 32
#define RX_MAX 65536
/* Receive buffers are RX_MAX apart plus 65 cache lines: at a power-of-two
 * stride the start of every buffer (where the datagrams are) maps to the
 * same cache sets, and the batch's copies evict each other. */
#define RX_STRIDE (RX_MAX + 65 * 64)
#define ENT_HDR 28 /* u32 length + 16-byte exporter + u64 receive time (ns since the epoch) */
#define WRAP_MARK 0xffffffffu
#define WAKE_BYTES (256u << 10)
#define WAKE_MS 20
#define RX_NAP_US 1000
#define RING_MIN ((uint64_t)2 * (RX_MAX + ENT_HDR + 8))
#define RING_RESET (32ull << 20)
#define STOP_DRAIN_MS 2000
#define STOP_WAIT_US 200 /* a drain waiting for queue room naps this long */

typedef struct rx {
  struct ba_collector *c;
  ba_rx_sock_t s;
  const char *listen;
  ba_rx_tcp_t *tcp; /* IPFIX over TCP: the connections; NULL for UDP */
  pthread_t th;
  int started;
  uint8_t *ring;
  uint64_t cap;
  char pad0[64];
  _Atomic uint64_t wr; /* bytes ever queued; position = wr % cap (receive thread) */
  char pad1[64];
  _Atomic uint64_t rd; /* bytes ever consumed (polling thread) */
  char pad2[64];
  /* written by the receive thread only */
  _Atomic uint64_t received, received_bytes, dropped, dropped_bytes, peak;
  _Atomic uint64_t stop_drained, stop_dropped; /* datagrams read after the stop; of those dropped */
  _Atomic uint64_t stop_ns;                    /* how long this thread drained at stop */
  _Atomic int done;                            /* the thread has drained and ends */
  _Atomic uint64_t lap_start, lap_dead;        /* the last restart at 0: where, and the tail it skipped */
  ba_rx_exporters_t exp;
  uint8_t *rxbuf;
} rx_t;

struct ba_collector {
  rx_t *rx[BA_COLLECTOR_MAX_SOCKETS];
  size_t nrx;
  char listen[BA_COLLECTOR_MAX_LISTEN][128];
  int tcp[BA_COLLECTOR_MAX_LISTEN]; /* "tcp:" addresses */
  uint32_t rcvbuf_asked;
  _Atomic int stop;
  uint64_t drain_ms;          /* the stop drain's time limit */
  uint64_t drain_deadline_ns; /* CLOCK_MONOTONIC; written before `stop` is set */
  _Atomic int sleeping;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint64_t peak; /* polling thread */
  ba_flow_decoder_t *dec;
};

void ba_collector_opts_init(ba_collector_opts_t *o) {
  memset(o, 0, sizeof(*o));
  o->listen = "127.0.0.1:2055";
  o->sockets = 1;
  o->rcvbuf_bytes = BA_COLLECTOR_DEFAULT_RCVBUF;
  o->queue_bytes = BA_COLLECTOR_DEFAULT_QUEUE;
  ba_flow_decoder_opts_init(&o->decoder);
}

/* ---------- receive side ---------- */

/* Bytes queued between rd and wr, without the tail a restart at offset 0
 * skipped while the poller has not passed it yet. */
static uint64_t ring_fill(const rx_t *r, uint64_t wr, uint64_t rd) {
  uint64_t at = atomic_load_explicit(&r->lap_start, memory_order_acquire);
  uint64_t dead = atomic_load_explicit(&r->lap_dead, memory_order_relaxed), f = wr - rd;
  return rd < at && at <= wr && f >= dead ? f - dead : f;
}

/* Appends one datagram at *wr (rd: the consumer's position as last seen).
 * Returns 0, or -1 when the queue has no room for it. */
static int ring_push(rx_t *r, uint64_t *wr, uint64_t rd, const uint8_t ex[16], uint64_t now, const uint8_t *p,
                     uint32_t len) {
  uint64_t e = (ENT_HDR + (uint64_t)len + 7) & ~7ull;
  uint64_t pos = *wr % r->cap, tail = r->cap - pos;
  uint64_t need = e <= tail ? e : tail + e;
  if (need > r->cap - (*wr - rd)) return -1;
  if (e > tail) {
    ba_store_le32(r->ring + pos, WRAP_MARK);
    *wr += tail;
    pos = 0;
  }
  ba_store_le32(r->ring + pos, len);
  memcpy(r->ring + pos + 4, ex, 16);
  ba_store_le64(r->ring + pos + 20, now);
  memcpy(r->ring + pos + ENT_HDR, p, len);
  *wr += e;
  return 0;
}

/* The receive time, in whole milliseconds (nfdump's resolution for it): a
 * stored time that changes less often costs fewer bits in the MISC column. */
static uint64_t wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec / 1000000 * 1000000;
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Stop drain: waits (napping) until the queue has room for the datagram or
 * the deadline passes. 0 when pushed, -1 at the deadline. */
static int ring_push_wait(rx_t *r, uint64_t *wr, const uint8_t ex[16], uint64_t now, const uint8_t *p, uint32_t len,
                          uint64_t deadline) {
  for (;;) {
    /* publish what is queued so far, so the stopping thread can decode it */
    atomic_store_explicit(&r->wr, *wr, memory_order_release);
    struct timespec nap = {0, STOP_WAIT_US * 1000L};
    nanosleep(&nap, NULL);
    uint64_t rd = atomic_load_explicit(&r->rd, memory_order_acquire);
    if (ring_push(r, wr, rd, ex, now, p, len) == 0) return 0;
    if (mono_ns() >= deadline) return -1;
  }
}

/* Queues a batch of received datagrams (received at `now`), counting each
 * for its exporter. stopping: the stop drain (waits for room up to the
 * deadline; drops then count as stop-timeout). */
static void rx_queue(rx_t *r, struct mmsghdr *msgs, const struct sockaddr_storage *from, int n, uint64_t now,
                     int stopping) {
  uint64_t wr = atomic_load_explicit(&r->wr, memory_order_relaxed);
  uint64_t rd = atomic_load_explicit(&r->rd, memory_order_acquire);
  /* Past RING_RESET (or the middle, if smaller) a short queue restarts at
   * offset 0, so the memory touched (the RSS) is about RING_RESET plus the
   * largest backlog, not the whole bound: touching fresh pages costs a
   * page fault and the kernel zeroing them (a sixth of the collector's CPU
   * in a 10 s burst with the restart at the middle; with the restart only
   * when the queue was empty, which a poller draining in bursts rarely
   * leaves it, the whole 256 MiB was touched in the first seconds, 0.5 s of
   * the receive thread's CPU). After a restart the room is the part before
   * the mark (at least 7/8 of RING_RESET) until the poller passes the mark,
   * which it reaches after the short backlog. The skipped tail is not
   * queued data: ring_fill leaves it out. */
  uint64_t reset = BA_MIN(r->cap / 2, (uint64_t)RING_RESET), pos = wr % r->cap;
  if (pos >= reset && wr - rd <= reset / 8) {
    ba_store_le32(r->ring + pos, WRAP_MARK);
    atomic_store_explicit(&r->lap_dead, r->cap - pos, memory_order_relaxed);
    wr += r->cap - pos;
    atomic_store_explicit(&r->lap_start, wr, memory_order_release);
  }
  uint64_t bytes = 0, drop = 0, drop_bytes = 0;
  for (int i = 0; i < n; i++) {
    uint8_t ex[16];
    ba_rx_addr16(&from[i], ex);
    ba_rx_exp_t *e = ba_rx_exporters_get(&r->exp, ex);
    uint32_t len = msgs[i].msg_len;
    const uint8_t *p = msgs[i].msg_hdr.msg_iov->iov_base;
    ba_rx_add(&e->datagrams, 1);
    ba_rx_add(&e->bytes, len);
    bytes += len;
    if (stopping) ba_rx_add(&r->stop_drained, 1);
    if (ring_push(r, &wr, rd, ex, now, p, len) != 0) {
      rd = atomic_load_explicit(&r->rd, memory_order_acquire);
      if (ring_push(r, &wr, rd, ex, now, p, len) == 0) continue;
      if (stopping) {
        if (mono_ns() < r->c->drain_deadline_ns && ring_push_wait(r, &wr, ex, now, p, len, r->c->drain_deadline_ns) == 0)
          continue;
        ba_rx_add(&e->stop_timeout, 1);
        ba_rx_add(&r->stop_dropped, 1);
        continue;
      }
      ba_rx_add(&e->queue_full, 1);
      drop++;
      drop_bytes += len;
    }
  }
  atomic_store_explicit(&r->wr, wr, memory_order_release);
  ba_rx_add(&r->received, (uint64_t)n);
  ba_rx_add(&r->received_bytes, bytes);
  if (drop) {
    ba_rx_add(&r->dropped, drop);
    ba_rx_add(&r->dropped_bytes, drop_bytes);
  }
  uint64_t fill = ring_fill(r, wr, rd);
  if (fill > atomic_load_explicit(&r->peak, memory_order_relaxed))
    atomic_store_explicit(&r->peak, fill, memory_order_relaxed);
  /* Wake a sleeping poller only for a worthwhile amount; it also wakes by
   * itself every WAKE_MS, so a trickle is decoded with at most that delay. */
  if (fill >= WAKE_BYTES && atomic_load(&r->c->sleeping)) {
    pthread_mutex_lock(&r->c->mu);
    pthread_cond_signal(&r->c->cv);
    pthread_mutex_unlock(&r->c->mu);
  }
}

/* One IPFIX message framed from a TCP stream, queued as a datagram. */
static void tcp_msg(void *ctx, const struct sockaddr_storage *from, const uint8_t *msg, uint32_t len) {
  struct mmsghdr m;
  struct iovec iov = {(void *)msg, len};
  memset(&m, 0, sizeof(m));
  m.msg_hdr.msg_iov = &iov;
  m.msg_hdr.msg_iovlen = 1;
  m.msg_len = len;
  rx_t *r = ctx;
  rx_queue(r, &m, from, 1, wall_ns(), atomic_load(&r->c->stop));
}

/* One non-blocking recvmmsg of up to RX_BATCH datagrams into the thread's
 * receive buffers: how many, 0 when the socket is empty, or -1 (errno). */
static int rx_read(rx_t *r, struct mmsghdr *msgs, struct iovec *iov, struct sockaddr_storage *from) {
  for (int i = 0; i < RX_BATCH; i++) {
    iov[i].iov_base = r->rxbuf + (size_t)i * RX_STRIDE;
    iov[i].iov_len = RX_MAX;
    memset(&msgs[i], 0, sizeof(msgs[i]));
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    msgs[i].msg_hdr.msg_name = &from[i];
    msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
  }
  return recvmmsg(r->s.fd, msgs, RX_BATCH, MSG_DONTWAIT, NULL);
}

/* The stop drain of a UDP socket: reads it until it is empty. Until the
 * deadline every datagram is queued (waiting for room when the queue is
 * full); after it, datagrams are read and counted as stop-timeout drops,
 * up to about what the socket buffer held, so a sender that never stops
 * cannot keep the collector from stopping. */
static void rx_drain_udp(rx_t *r, struct mmsghdr *msgs, struct iovec *iov, struct sockaddr_storage *from) {
  uint64_t deadline = r->c->drain_deadline_ns, late_bytes = 0;
  uint64_t late_max = 2 * (uint64_t)(r->s.rcvbuf_granted ? r->s.rcvbuf_granted : (1u << 20));
  for (;;) {
    int n = rx_read(r, msgs, iov, from);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return; /* empty (EAGAIN) or an error: nothing more to read */
    if (mono_ns() < deadline) {
      rx_queue(r, msgs, from, n, wall_ns(), 1);
      continue;
    }
    if (late_bytes >= late_max) return;
    for (int i = 0; i < n; i++) { /* too late: read, counted, not stored */
      uint8_t ex[16];
      ba_rx_addr16(&from[i], ex);
      ba_rx_exp_t *e = ba_rx_exporters_get(&r->exp, ex);
      ba_rx_add(&e->datagrams, 1);
      ba_rx_add(&e->bytes, msgs[i].msg_len);
      ba_rx_add(&e->stop_timeout, 1);
      ba_rx_add(&r->received_bytes, msgs[i].msg_len);
      late_bytes += msgs[i].msg_len;
    }
    ba_rx_add(&r->received, (uint64_t)n);
    ba_rx_add(&r->stop_drained, (uint64_t)n);
    ba_rx_add(&r->stop_dropped, (uint64_t)n);
  }
}

static void rx_finish(rx_t *r, uint64_t t0) {
  atomic_store_explicit(&r->stop_ns, mono_ns() - t0, memory_order_relaxed);
  atomic_store_explicit(&r->done, 1, memory_order_release);
}

static void *rx_main(void *arg) {
  rx_t *r = arg;
  /* This thread only moves datagrams from the socket into the queue: when the
   * CPU is short, let it run before the decoder and the writer, so a burst
   * waits in the bounded queue (counted if it overflows) instead of
   * overflowing the socket buffer. Best effort (needs CAP_SYS_NICE). */
  setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), -10);
  if (r->tcp) {
    while (!atomic_load(&r->c->stop)) ba_rx_tcp_poll(r->tcp, r->s.fd, 100, tcp_msg, r);
    /* stop drain: what the connections have sent so far, until the deadline */
    uint64_t t0 = mono_ns();
    while (mono_ns() < r->c->drain_deadline_ns && ba_rx_tcp_poll(r->tcp, r->s.fd, 0, tcp_msg, r) > 0) {
    }
    ba_rx_tcp_close_all(r->tcp);
    rx_finish(r, t0);
    return NULL;
  }
  struct mmsghdr msgs[RX_BATCH];
  struct iovec iov[RX_BATCH];
  struct sockaddr_storage from[RX_BATCH];
  int idle = 1; /* the last read found the socket empty: wait in poll before reading again */
  while (!atomic_load(&r->c->stop)) {
    if (idle) {
      struct pollfd pf = {r->s.fd, POLLIN, 0};
      if (poll(&pf, 1, 100) <= 0) continue;
    }
    int n = rx_read(r, msgs, iov, from);
    idle = n <= 0;
    if (idle) continue;
    rx_queue(r, msgs, from, n, wall_ns(), 0);
    if (n < RX_BATCH / 2) {
      /* Few datagrams waiting: let the kernel buffer collect a batch instead of
       * waking per datagram (the socket buffer holds far more than RX_NAP_US);
       * then read without a poll first (a stream keeps coming). */
      struct timespec nap = {0, RX_NAP_US * 1000L};
      nanosleep(&nap, NULL);
    }
  }
  uint64_t t0 = mono_ns();
  rx_drain_udp(r, msgs, iov, from);
  rx_finish(r, t0);
  return NULL;
}

/* ---------- set-up ---------- */

/* Marks the queue's memory for transparent huge pages (where the kernel
 * offers them on request), so filling it the first time faults once per
 * 2 MiB instead of once per 4 KiB: under a burst those faults were a third
 * of the receive thread's CPU. A hint on the whole pages inside the buffer;
 * pages are still touched only as the queue fills. */
static void ring_advise(uint8_t *p, uint64_t cap) {
#ifdef MADV_HUGEPAGE
  const uintptr_t pg = 4096;
  uintptr_t lo = ((uintptr_t)p + pg - 1) & ~(pg - 1), hi = ((uintptr_t)p + cap) & ~(pg - 1);
  if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
  (void)p, (void)cap;
#endif
}

static void rx_free(rx_t *r) {
  if (!r) return;
  if (r->s.fd >= 0) close(r->s.fd);
  if (r->tcp) ba_rx_tcp_close_all(r->tcp); /* a thread that never started */
  ba_free(r->tcp);
  ba_rx_exporters_free(&r->exp);
  ba_free(r->ring);
  ba_free(r->rxbuf);
  ba_free(r);
}

static int rx_new(ba_collector_t *c, const char *listen, uint64_t cap, rx_t **out) {
  rx_t *r = ba_calloc(1, sizeof(*r));
  BA_RETURN_IF(!r, BA_ERR_NOMEM);
  r->c = c;
  r->s.fd = -1;
  r->listen = listen;
  r->cap = cap;
  ba_rx_exporters_init(&r->exp);
  r->ring = ba_malloc(cap);
  r->rxbuf = ba_malloc((size_t)RX_BATCH * RX_STRIDE);
  if (!r->ring || !r->rxbuf) {
    rx_free(r);
    return BA_ERR_NOMEM;
  }
  ring_advise(r->ring, cap);
  *out = r;
  return BA_OK;
}

/* "tcp:ADDR:PORT" listens for IPFIX over TCP, "udp:ADDR:PORT" or a bare
 * address for datagrams: the address text without its prefix. */
static const char *listen_proto(const char *s, int *tcp) {
  *tcp = !strncmp(s, "tcp:", 4);
  return *tcp || !strncmp(s, "udp:", 4) ? s + 4 : s;
}

static int same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b) {
  if (a->ss_family != b->ss_family) return 0;
  if (a->ss_family == AF_INET) {
    const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
    return x->sin_port && x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
  }
  const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
  return x->sin6_port && x->sin6_port == y->sin6_port && !memcmp(&x->sin6_addr, &y->sin6_addr, 16);
}

static void set_port(struct sockaddr_storage *ss, int port) {
  if (ss->ss_family == AF_INET) ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
  else ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
}

/* Parses every listen address (all before binding any) into ss[]. */
static int parse_all(const ba_collector_opts_t *o, ba_collector_t *c, struct sockaddr_storage *ss, socklen_t *sl,
                     size_t *n, char *err, size_t errlen) {
  *n = o->nlisten ? o->nlisten : 1;
  if (*n > BA_COLLECTOR_MAX_LISTEN) {
    snprintf(err, errlen, "%zu listen addresses: at most %d", *n, BA_COLLECTOR_MAX_LISTEN);
    return BA_ERR_INVALID;
  }
  for (size_t i = 0; i < *n; i++) {
    const char *s = o->nlisten ? o->listens[i] : (o->listen ? o->listen : "127.0.0.1:2055");
    if (!s || strlen(s) >= sizeof(c->listen[i])) {
      snprintf(err, errlen, "listen address %zu is missing or too long", i + 1);
      return BA_ERR_INVALID;
    }
    strcpy(c->listen[i], s);
    if (ba_rx_parse_listen(listen_proto(s, &c->tcp[i]), &ss[i], &sl[i], err, errlen) != 0) {
      snprintf(err, errlen, "listen address '%s' is not ADDR:PORT, tcp:ADDR:PORT or udp:ADDR:PORT (e.g. "
               "127.0.0.1:2055, [::1]:2055, tcp:0.0.0.0:4739)", s);
      return BA_ERR_SYNTAX;
    }
    for (size_t j = 0; j < i; j++)
      if (c->tcp[i] == c->tcp[j] && same_addr(&ss[i], &ss[j])) {
        snprintf(err, errlen, "listen address '%s' is given twice ('%s')", s, c->listen[j]);
        return BA_ERR_INVALID;
      }
  }
  return BA_OK;
}

/* Opens the sockets of one address (the first fixes the port when it is 0);
 * a TCP address has one listening socket. */
static int open_listen(ba_collector_t *c, const char *listen, int tcp, struct sockaddr_storage *ss, socklen_t sl,
                       unsigned k, uint64_t cap, uint32_t rcvbuf, char *err, size_t errlen) {
  if (tcp) {
    rx_t *r;
    BA_FORWARD(rx_new(c, listen, cap, &r));
    c->rx[c->nrx++] = r;
    r->tcp = ba_malloc(sizeof(*r->tcp));
    BA_RETURN_IF(!r->tcp, BA_ERR_NOMEM);
    ba_rx_tcp_init(r->tcp);
    return ba_rx_tcp_open(ss, sl, &r->s, err, errlen);
  }
  for (unsigned j = 0; j < k; j++) {
    rx_t *r;
    BA_FORWARD(rx_new(c, listen, cap, &r));
    c->rx[c->nrx++] = r;
    BA_FORWARD(ba_rx_sock_open(ss, sl, k > 1, rcvbuf, &r->s, err, errlen));
    if (j == 0 && k > 1) set_port(ss, ba_rx_sock_port(&r->s));
  }
  return BA_OK;
}

static int start_threads(ba_collector_t *c, char *err, size_t errlen) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* signals go to the caller's threads */
  int rc = BA_OK;
  for (size_t i = 0; i < c->nrx && rc == BA_OK; i++) {
    if (pthread_create(&c->rx[i]->th, NULL, rx_main, c->rx[i]) != 0) {
      snprintf(err, errlen, "cannot start receive thread %zu", i + 1);
      rc = BA_ERR_NOMEM;
    } else {
      c->rx[i]->started = 1;
      ba_thread_name(c->rx[i]->th, "bitarc-rx%zu", i + 1);
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

int ba_collector_start(const ba_collector_opts_t *opts, ba_collector_t **out, char *err, size_t errlen) {
  char dummy[8];
  if (!err) {
    err = dummy;
    errlen = sizeof(dummy);
  }
  err[0] = 0;
  BA_RETURN_IF(!opts || !out, BA_ERR_INVALID);
  *out = NULL;
  ba_collector_t *c = ba_calloc(1, sizeof(*c));
  BA_RETURN_IF(!c, BA_ERR_NOMEM);
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  struct sockaddr_storage ss[BA_COLLECTOR_MAX_LISTEN];
  socklen_t sl[BA_COLLECTOR_MAX_LISTEN];
  size_t nl = 0;
  unsigned k = opts->sockets ? opts->sockets : 1;
  uint64_t qb = opts->queue_bytes ? opts->queue_bytes : BA_COLLECTOR_DEFAULT_QUEUE;
  c->rcvbuf_asked = opts->rcvbuf_bytes ? opts->rcvbuf_bytes : BA_COLLECTOR_DEFAULT_RCVBUF;
  c->drain_ms = opts->stop_drain_ms ? opts->stop_drain_ms : STOP_DRAIN_MS;
  int rc = parse_all(opts, c, ss, sl, &nl, err, errlen);
  if (rc) goto fail;
  rc = BA_ERR_INVALID;
  if (k > BA_COLLECTOR_MAX_SOCKETS || nl * k > BA_COLLECTOR_MAX_SOCKETS) {
    snprintf(err, errlen, "%zu addresses x %u sockets: at most %d sockets", nl, k, BA_COLLECTOR_MAX_SOCKETS);
    goto fail;
  }
  uint64_t cap = qb / (nl * k) & ~7ull;
  if (cap < RING_MIN) {
    snprintf(err, errlen, "a receive queue of %llu bytes is too small for %zu socket(s): each needs %llu",
             (unsigned long long)qb, nl * k, (unsigned long long)RING_MIN);
    goto fail;
  }
  if ((rc = ba_flow_decoder_create(&opts->decoder, &c->dec)) < 0) goto fail;
  for (size_t i = 0; i < nl; i++)
    if ((rc = open_listen(c, c->listen[i], c->tcp[i], &ss[i], sl[i], k, cap, c->rcvbuf_asked, err, errlen)) < 0) goto fail;
  if ((rc = start_threads(c, err, errlen)) < 0) goto fail;
  *out = c;
  return BA_OK;
fail:
  if (rc == BA_ERR_NOMEM && !err[0]) snprintf(err, errlen, "out of memory for the receive queues");
  ba_collector_free(c);
  return rc;
}

/* ---------- polling side ---------- */

static int drain(ba_collector_t *c, rx_t *r, ba_record_sink_fn fn, void *ctx) {
  uint64_t upto = atomic_load_explicit(&r->wr, memory_order_acquire);
  uint64_t rd = atomic_load_explicit(&r->rd, memory_order_relaxed);
  int rc = 0;
  while (rd < upto && !rc) {
    uint64_t pos = rd % r->cap;
    uint32_t len = ba_load_le32(r->ring + pos);
    if (len == WRAP_MARK) {
      rd += r->cap - pos;
      continue;
    }
    if (fn)
      rc = ba_flow_decode_at(c->dec, r->ring + pos + 4, ba_load_le64(r->ring + pos + 20), r->ring + pos + ENT_HDR, len,
                             fn, ctx);
    rd += (ENT_HDR + (uint64_t)len + 7) & ~7ull;
    atomic_store_explicit(&r->rd, rd, memory_order_release); /* room for the receiver at once */
  }
  return rc;
}

static uint64_t queued(const ba_collector_t *c) {
  uint64_t s = 0;
  for (size_t i = 0; i < c->nrx; i++)
    s += ring_fill(c->rx[i], atomic_load_explicit(&c->rx[i]->wr, memory_order_acquire),
                   atomic_load_explicit(&c->rx[i]->rd, memory_order_relaxed));
  return s;
}

static void wait_for_data(ba_collector_t *c, int timeout_ms) {
  if (timeout_ms > WAKE_MS) timeout_ms = WAKE_MS;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += (long)timeout_ms * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&c->mu);
  atomic_store(&c->sleeping, 1);
  if (queued(c) < WAKE_BYTES) pthread_cond_timedwait(&c->cv, &c->mu, &ts);
  atomic_store(&c->sleeping, 0);
  pthread_mutex_unlock(&c->mu);
}

int ba_collector_poll(ba_collector_t *c, int timeout_ms, ba_record_sink_fn fn, void *ctx) {
  BA_RETURN_IF(!c, BA_ERR_INVALID);
  uint64_t q = queued(c);
  if (q > c->peak) c->peak = q;
  if (q < WAKE_BYTES && timeout_ms > 0) wait_for_data(c, timeout_ms);
  for (size_t i = 0; i < c->nrx; i++) {
    int rc = drain(c, c->rx[i], fn, ctx);
    if (rc) return rc;
  }
  return BA_OK;
}

static void join_all(ba_collector_t *c) {
  if (!atomic_load(&c->stop)) {
    c->drain_deadline_ns = mono_ns(); /* not stopped by ba_collector_stop: no drain */
    atomic_store(&c->stop, 1);
  }
  for (size_t i = 0; i < c->nrx; i++)
    if (c->rx[i]->started) {
      pthread_join(c->rx[i]->th, NULL);
      c->rx[i]->started = 0;
    }
}

int ba_collector_stop(ba_collector_t *c, ba_record_sink_fn fn, void *ctx) {
  BA_RETURN_IF(!c, BA_ERR_INVALID);
  int rc = 0;
  if (!atomic_load(&c->stop)) {
    c->drain_deadline_ns = mono_ns() + c->drain_ms * 1000000ull;
    atomic_store(&c->stop, 1); /* the receive threads drain their sockets */
    for (;;) {
      int done = 1;
      uint64_t before = queued(c);
      for (size_t i = 0; i < c->nrx; i++) {
        done &= !c->rx[i]->started || atomic_load_explicit(&c->rx[i]->done, memory_order_acquire);
        int r = drain(c, c->rx[i], fn, ctx);
        if (r && !rc) rc = r, fn = NULL; /* the sink failed: keep emptying the queues, store nothing */
      }
      if (done) break;
      if (!before) {
        struct timespec nap = {0, STOP_WAIT_US * 1000L};
        nanosleep(&nap, NULL);
      }
    }
  }
  join_all(c);
  for (size_t i = 0; i < c->nrx; i++) {
    int r = drain(c, c->rx[i], fn, ctx);
    if (r && !rc) rc = r, fn = NULL;
  }
  ba_flow_decoder_finish(c->dec);
  return rc;
}

void ba_collector_free(ba_collector_t *c) {
  if (!c) return;
  join_all(c);
  for (size_t i = 0; i < c->nrx; i++) rx_free(c->rx[i]);
  ba_flow_decoder_free(c->dec);
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  ba_free(c);
}

size_t ba_collector_templates(ba_collector_t *c, ba_flow_template_info_t *out, size_t cap) {
  return c ? ba_flow_decoder_templates(c->dec, out, cap) : 0;
}

const char *ba_collector_address(const ba_collector_t *c) { return c && c->nrx ? c->rx[0]->s.addr : ""; }

/* ---------- counters ---------- */

static uint64_t ld(const _Atomic uint64_t *x) { return atomic_load_explicit(x, memory_order_relaxed); }

static void kernel_drops(const ba_collector_t *c, int64_t *drops) {
  uint64_t inodes[BA_COLLECTOR_MAX_SOCKETS];
  for (size_t i = 0; i < c->nrx; i++) inodes[i] = c->rx[i]->s.inode;
  ba_rx_kernel_drops(inodes, c->nrx, drops);
}

size_t ba_collector_sockets(ba_collector_t *c, ba_collector_socket_t *out, size_t cap) {
  if (!c) return 0;
  int64_t drops[BA_COLLECTOR_MAX_SOCKETS];
  if (cap) kernel_drops(c, drops);
  for (size_t i = 0; i < c->nrx && i < cap; i++) {
    const rx_t *r = c->rx[i];
    ba_collector_socket_t *o = &out[i];
    memset(o, 0, sizeof(*o));
    snprintf(o->address, sizeof(o->address), "%s", r->s.addr);
    o->listen = r->listen;
    o->rcvbuf_asked = r->tcp ? 0 : c->rcvbuf_asked; /* TCP: the kernel's flow control, no buffer asked */
    o->rcvbuf_granted = r->s.rcvbuf_granted;
    o->rcvbuf_forced = r->s.rcvbuf_forced;
    o->kernel_drops = drops[i];
    o->received = ld(&r->received);
    o->received_bytes = ld(&r->received_bytes);
    o->queue_dropped = ld(&r->dropped);
    o->queue_bytes = ring_fill(r, atomic_load(&r->wr), atomic_load(&r->rd));
    o->queue_capacity = r->cap;
    o->queue_peak = ld(&r->peak);
    if (r->tcp) {
      o->tcp = 1;
      o->tcp_accepted = ld(&r->tcp->accepted);
      o->tcp_open = ld(&r->tcp->open);
      o->tcp_refused = ld(&r->tcp->refused);
      o->tcp_bad_framing = ld(&r->tcp->bad_framing);
      o->tcp_truncated = ld(&r->tcp->truncated);
    }
  }
  return c->nrx;
}

void ba_collector_get_stats(ba_collector_t *c, ba_collector_stats_t *st) {
  memset(st, 0, sizeof(*st));
  if (!c) return;
  ba_collector_socket_t so[BA_COLLECTOR_MAX_SOCKETS];
  size_t n = ba_collector_sockets(c, so, BA_COLLECTOR_MAX_SOCKETS);
  st->kernel_drops = -1;
  for (size_t i = 0; i < n; i++) {
    st->received += so[i].received;
    st->received_bytes += so[i].received_bytes;
    st->queue_dropped += so[i].queue_dropped;
    st->queue_dropped_bytes += ld(&c->rx[i]->dropped_bytes);
    st->queue_bytes += so[i].queue_bytes;
    st->queue_capacity += so[i].queue_capacity;
    if (so[i].kernel_drops >= 0) st->kernel_drops = (st->kernel_drops < 0 ? 0 : st->kernel_drops) + so[i].kernel_drops;
    if (!so[i].tcp && (!st->rcvbuf_granted || so[i].rcvbuf_granted < st->rcvbuf_granted))
      st->rcvbuf_granted = so[i].rcvbuf_granted;
  }
  st->queue_peak = c->peak > st->queue_bytes ? c->peak : st->queue_bytes;
  ba_flow_decoder_counts(c->dec, &st->counts);
  st->counts.dropped[BA_DROP_QUEUE_FULL] += st->queue_dropped;
  for (size_t i = 0; i < c->nrx; i++) {
    st->stop_drained += ld(&c->rx[i]->stop_drained);
    st->stop_dropped += ld(&c->rx[i]->stop_dropped);
    double s = (double)ld(&c->rx[i]->stop_ns) / 1e9;
    if (s > st->stop_drain_s) st->stop_drain_s = s;
  }
  st->counts.dropped[BA_DROP_STOP_TIMEOUT] += st->stop_dropped;
}

static int exp_cmp(const void *a, const void *b) {
  return memcmp(((const ba_collector_exporter_t *)a)->addr, ((const ba_collector_exporter_t *)b)->addr, 16);
}

/* Adds one receive-side entry to the list being gathered. */
static void exp_put_rx(ba_collector_exporter_t *e, const ba_rx_exp_t *x) {
  memset(e, 0, sizeof(*e));
  memcpy(e->addr, x->addr, 16);
  e->received = ld(&x->datagrams);
  e->received_bytes = ld(&x->bytes);
  e->counts.dropped[BA_DROP_QUEUE_FULL] = ld(&x->queue_full);
  e->counts.dropped[BA_DROP_STOP_TIMEOUT] = ld(&x->stop_timeout);
}

size_t ba_collector_exporters(ba_collector_t *c, ba_collector_exporter_t *out, size_t cap) {
  if (!c) return 0;
  size_t nd = ba_flow_decoder_sources(c->dec, NULL, 0), total = nd;
  for (size_t i = 0; i < c->nrx; i++) total += ba_rx_exporters_count(&c->rx[i]->exp) + 1;
  ba_flow_source_t *src = ba_malloc((nd ? nd : 1) * sizeof(*src));
  ba_collector_exporter_t *all = ba_malloc((total ? total : 1) * sizeof(*all));
  size_t m = 0;
  if (!src || !all) goto done;
  nd = ba_flow_decoder_sources(c->dec, src, nd); /* the polling thread: no change since */
  for (size_t i = 0; i < nd; i++) {
    memset(&all[m], 0, sizeof(all[m]));
    memcpy(all[m].addr, src[i].addr, 16);
    all[m++].counts = src[i].counts;
  }
  for (size_t i = 0; i < c->nrx; i++) {
    const ba_rx_exporters_t *t = &c->rx[i]->exp;
    size_t n = ba_rx_exporters_count(t);
    for (size_t j = 0; j < n && m < total; j++) exp_put_rx(&all[m++], ba_rx_exporters_at(t, j));
    if (ld(&t->overflow.datagrams) && m < total) exp_put_rx(&all[m++], &t->overflow);
  }
  qsort(all, m, sizeof(*all), exp_cmp);
  size_t k = 0; /* merge entries of the same address */
  for (size_t i = 0; i < m; i++) {
    if (k && !memcmp(all[k - 1].addr, all[i].addr, 16)) {
      all[k - 1].received += all[i].received;
      all[k - 1].received_bytes += all[i].received_bytes;
      ba_ingest_counts_add(&all[k - 1].counts, &all[i].counts);
    } else {
      all[k++] = all[i];
    }
  }
  /* The exporter's clock and last error: only the decoder knows them. */
  for (size_t i = 0; i < nd; i++) {
    ba_collector_exporter_t key, *e;
    memcpy(key.addr, src[i].addr, 16);
    if (!(e = bsearch(&key, all, k, sizeof(*all), exp_cmp))) continue;
    e->export_skew_s = src[i].export_skew_s;
    e->clock_suspicious = src[i].clock_suspicious;
    memcpy(e->last_error, src[i].last_error, sizeof(e->last_error));
  }
  for (size_t i = 0; i < k && i < cap; i++) out[i] = all[i];
  m = k;
done:
  ba_free(src);
  ba_free(all);
  return m;
}

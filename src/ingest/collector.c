/* UDP collector: a receive thread drains the socket (recvmmsg) into a bounded
 * byte ring; the caller's thread decodes from the ring and feeds its sink.
 * The ring region between the read and write positions belongs to the
 * consumer, so decoding happens without holding the lock. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bitarc/ingest.h"
#include "common/common.h"

#define RX_BATCH 32
#define RX_MAX 65536
#define ENT_HDR 20 /* u32 length + 16-byte exporter */
#define WRAP_MARK 0xffffffffu
#define WAKE_BYTES (256u << 10)
#define WAKE_MS 20
#define RX_NAP_US 500

struct ba_collector {
  int fd;
  int family;
  char addr[96];
  ino_t inode;
  uint32_t rcvbuf;
  pthread_t th;
  int started;
  _Atomic int stop;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint8_t *ring;
  uint64_t cap, rd, wr; /* rd/wr grow forever; position = value % cap */
  uint64_t received, received_bytes, queue_dropped;
  ba_flow_decoder_t *dec;
  uint8_t *rxbuf;
};

void ba_collector_opts_init(ba_collector_opts_t *o) {
  memset(o, 0, sizeof(*o));
  o->listen = "127.0.0.1:2055";
  o->rcvbuf_bytes = 64u << 20;
  o->queue_bytes = 64u << 20;
  ba_flow_decoder_opts_init(&o->decoder);
}

static int parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *sl, char *err, size_t errlen) {
  char host[80] = "127.0.0.1";
  const char *port = NULL;
  if (s[0] == '[') {
    const char *e = strchr(s, ']');
    if (!e || (size_t)(e - s - 1) >= sizeof(host) || e[1] != ':') goto bad;
    memcpy(host, s + 1, (size_t)(e - s - 1));
    host[e - s - 1] = 0;
    port = e + 2;
  } else {
    const char *c = strrchr(s, ':');
    if (!c) {
      port = s; /* just a port: loopback */
    } else {
      if ((size_t)(c - s) >= sizeof(host)) goto bad;
      if (c != s) {
        memcpy(host, s, (size_t)(c - s));
        host[c - s] = 0;
      }
      port = c + 1;
    }
  }
  char *end;
  long pn = strtol(port, &end, 10);
  if (!*port || *end || pn < 0 || pn > 65535) goto bad;
  struct addrinfo hints, *ai = NULL;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
  if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai) goto bad;
  memcpy(ss, ai->ai_addr, ai->ai_addrlen);
  *sl = ai->ai_addrlen;
  freeaddrinfo(ai);
  return 0;
bad:
  snprintf(err, errlen, "listen address '%s' is not ADDR:PORT (e.g. 127.0.0.1:2055 or [::1]:2055)", s);
  return BA_ERR_SYNTAX;
}

static void sa_to_addr16(const struct sockaddr_storage *ss, uint8_t out[16]) {
  memset(out, 0, 16);
  if (ss->ss_family == AF_INET) {
    const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
    ba_addr_set_v4(out, ntohl(a->sin_addr.s_addr));
  } else if (ss->ss_family == AF_INET6) {
    memcpy(out, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
  }
}

/* Appends one datagram to the ring (lock held). Returns 0 or -1 when full. */
static int ring_push(ba_collector_t *c, const uint8_t ex[16], const uint8_t *p, uint32_t len) {
  uint64_t e = (ENT_HDR + (uint64_t)len + 7) & ~7ull;
  uint64_t pos = c->wr % c->cap, tail = c->cap - pos;
  uint64_t need = e <= tail ? e : tail + e;
  if (need > c->cap - (c->wr - c->rd)) return -1;
  if (e > tail) {
    ba_store_le32(c->ring + pos, WRAP_MARK);
    c->wr += tail;
    pos = 0;
  }
  ba_store_le32(c->ring + pos, len);
  memcpy(c->ring + pos + 4, ex, 16);
  memcpy(c->ring + pos + ENT_HDR, p, len);
  c->wr += e;
  return 0;
}

static void *rx_main(void *arg) {
  ba_collector_t *c = arg;
  struct mmsghdr msgs[RX_BATCH];
  struct iovec iov[RX_BATCH];
  struct sockaddr_storage from[RX_BATCH];
  while (!c->stop) {
    struct pollfd pf = {c->fd, POLLIN, 0};
    int pr = poll(&pf, 1, 100);
    if (pr <= 0) continue;
    for (int i = 0; i < RX_BATCH; i++) {
      iov[i].iov_base = c->rxbuf + (size_t)i * RX_MAX;
      iov[i].iov_len = RX_MAX;
      memset(&msgs[i], 0, sizeof(msgs[i]));
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
      msgs[i].msg_hdr.msg_name = &from[i];
      msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
    }
    int n = recvmmsg(c->fd, msgs, RX_BATCH, MSG_DONTWAIT, NULL);
    if (n <= 0) continue;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < n; i++) {
      uint8_t ex[16];
      sa_to_addr16(&from[i], ex);
      c->received++;
      c->received_bytes += msgs[i].msg_len;
      if (ring_push(c, ex, iov[i].iov_base, msgs[i].msg_len)) c->queue_dropped++;
    }
    /* Wake the decoder only for a worthwhile amount; it also wakes by itself
     * every WAKE_MS, so a trickle is decoded with at most that delay. */
    if (c->wr - c->rd >= WAKE_BYTES) pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (n < RX_BATCH / 2) {
      /* Few datagrams waiting: let the kernel buffer collect a batch instead of
       * waking per datagram (SO_RCVBUF holds far more than RX_NAP_US of traffic). */
      struct timespec nap = {0, RX_NAP_US * 1000L};
      nanosleep(&nap, NULL);
    }
  }
  return NULL;
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
  struct sockaddr_storage ss;
  socklen_t sl;
  int rc = parse_listen(opts->listen ? opts->listen : "127.0.0.1:2055", &ss, &sl, err, errlen);
  if (rc) return rc;
  ba_collector_t *c = ba_calloc(1, sizeof(*c));
  BA_RETURN_IF(!c, BA_ERR_NOMEM);
  c->fd = -1;
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  c->cap = opts->queue_bytes ? opts->queue_bytes : (64u << 20);
  c->cap = (c->cap + 7) & ~7ull;
  if (c->cap < 2 * (RX_MAX + ENT_HDR + 8)) c->cap = 2 * (RX_MAX + ENT_HDR + 8);
  c->ring = ba_malloc(c->cap);
  c->rxbuf = ba_malloc((size_t)RX_BATCH * RX_MAX);
  if (!c->ring || !c->rxbuf) {
    rc = BA_ERR_NOMEM;
    goto fail;
  }
  rc = ba_flow_decoder_create(&opts->decoder, &c->dec);
  if (rc) goto fail;
  c->family = ss.ss_family;
  c->fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (c->fd < 0) {
    snprintf(err, errlen, "socket: %s", strerror(errno));
    rc = BA_ERR_IO;
    goto fail;
  }
  if (ss.ss_family == AF_INET6) {
    int off = 0; /* "[::]:port" also receives IPv4 exporters */
    setsockopt(c->fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
  }
  int want = (int)(opts->rcvbuf_bytes ? opts->rcvbuf_bytes : (64u << 20));
  if (setsockopt(c->fd, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof(want)) != 0)
    setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof(want));
  int got = 0;
  socklen_t gl = sizeof(got);
  if (getsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &got, &gl) == 0) c->rcvbuf = (uint32_t)got;
  if (bind(c->fd, (struct sockaddr *)&ss, sl) != 0) {
    snprintf(err, errlen, "cannot bind %s: %s", opts->listen, strerror(errno));
    rc = BA_ERR_IO;
    goto fail;
  }
  struct sockaddr_storage bound;
  socklen_t bl = sizeof(bound);
  char host[INET6_ADDRSTRLEN] = "?";
  if (getsockname(c->fd, (struct sockaddr *)&bound, &bl) == 0) {
    if (bound.ss_family == AF_INET) {
      struct sockaddr_in *a = (struct sockaddr_in *)&bound;
      inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
      snprintf(c->addr, sizeof(c->addr), "%s:%u", host, ntohs(a->sin_port));
    } else {
      struct sockaddr_in6 *a = (struct sockaddr_in6 *)&bound;
      inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
      snprintf(c->addr, sizeof(c->addr), "[%s]:%u", host, ntohs(a->sin6_port));
    }
  }
  struct stat st;
  if (fstat(c->fd, &st) == 0) c->inode = st.st_ino;
  if (pthread_create(&c->th, NULL, rx_main, c) != 0) {
    snprintf(err, errlen, "cannot start the receive thread");
    rc = BA_ERR_NOMEM;
    goto fail;
  }
  c->started = 1;
  *out = c;
  return BA_OK;
fail:
  ba_collector_free(c);
  return rc;
}

static int drain(ba_collector_t *c, uint64_t upto, ba_record_sink_fn fn, void *ctx) {
  int rc = 0;
  uint64_t rd = c->rd;
  while (rd < upto) {
    uint64_t pos = rd % c->cap;
    uint32_t len = ba_load_le32(c->ring + pos);
    if (len == WRAP_MARK) {
      rd += c->cap - pos;
      continue;
    }
    int r = ba_flow_decode(c->dec, c->ring + pos + 4, c->ring + pos + ENT_HDR, len, fn, ctx);
    if (r && !rc) rc = r;
    rd += (ENT_HDR + (uint64_t)len + 7) & ~7ull;
    if (rc) break;
  }
  pthread_mutex_lock(&c->mu);
  c->rd = rd;
  pthread_mutex_unlock(&c->mu);
  return rc;
}

int ba_collector_poll(ba_collector_t *c, int timeout_ms, ba_record_sink_fn fn, void *ctx) {
  BA_RETURN_IF(!c, BA_ERR_INVALID);
  pthread_mutex_lock(&c->mu);
  if (c->wr - c->rd < WAKE_BYTES && timeout_ms > 0) {
    if (timeout_ms > WAKE_MS) timeout_ms = WAKE_MS;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&c->cv, &c->mu, &ts);
  }
  uint64_t upto = c->wr;
  pthread_mutex_unlock(&c->mu);
  return drain(c, upto, fn, ctx);
}

int ba_collector_stop(ba_collector_t *c, ba_record_sink_fn fn, void *ctx) {
  BA_RETURN_IF(!c, BA_ERR_INVALID);
  if (c->started) {
    c->stop = 1;
    pthread_join(c->th, NULL);
    c->started = 0;
  }
  pthread_mutex_lock(&c->mu);
  uint64_t upto = c->wr;
  pthread_mutex_unlock(&c->mu);
  int rc = drain(c, upto, fn, ctx);
  ba_flow_decoder_finish(c->dec);
  return rc;
}

static int64_t kernel_drops(const ba_collector_t *c) {
  const char *files[2] = {"/proc/net/udp", "/proc/net/udp6"};
  for (int f = 0; f < 2; f++) {
    FILE *fp = fopen(files[f], "r");
    if (!fp) continue;
    char line[512];
    while (fgets(line, sizeof(line), fp)) {
      unsigned long long inode = 0, drops = 0;
      char *tok[16];
      int nt = 0;
      char *save = NULL;
      for (char *t = strtok_r(line, " \t\n", &save); t && nt < 16; t = strtok_r(NULL, " \t\n", &save))
        tok[nt++] = t;
      if (nt < 13) continue;
      inode = strtoull(tok[9], NULL, 10);
      if (inode != (unsigned long long)c->inode) continue;
      drops = strtoull(tok[12], NULL, 10);
      fclose(fp);
      return (int64_t)drops;
    }
    fclose(fp);
  }
  return -1;
}

void ba_collector_get_stats(ba_collector_t *c, ba_collector_stats_t *st) {
  memset(st, 0, sizeof(*st));
  pthread_mutex_lock(&c->mu);
  st->received = c->received;
  st->received_bytes = c->received_bytes;
  st->queue_dropped = c->queue_dropped;
  pthread_mutex_unlock(&c->mu);
  st->rcvbuf_granted = c->rcvbuf;
  st->kernel_drops = c->fd >= 0 ? kernel_drops(c) : -1;
  ba_flow_decoder_counts(c->dec, &st->counts);
  st->counts.dropped[BA_DROP_QUEUE_FULL] += st->queue_dropped;
}

const char *ba_collector_address(const ba_collector_t *c) { return c ? c->addr : ""; }

size_t ba_collector_sources(ba_collector_t *c, ba_flow_source_t *out, size_t cap) {
  return c && c->dec ? ba_flow_decoder_sources(c->dec, out, cap) : 0;
}

void ba_collector_free(ba_collector_t *c) {
  if (!c) return;
  if (c->started) {
    c->stop = 1;
    pthread_join(c->th, NULL);
  }
  if (c->fd >= 0) close(c->fd);
  ba_flow_decoder_free(c->dec);
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  ba_free(c->ring);
  ba_free(c->rxbuf);
  ba_free(c);
}

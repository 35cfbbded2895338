/* IPFIX over TCP (RFC 7011 section 10.4): a listening socket, its
 * connections, and the framing of each connection's byte stream into IPFIX
 * messages by the header's length field. A connection whose stream is not
 * IPFIX (version other than 10, or a length below the 16-byte header) is
 * closed, as the RFC asks of a Collecting Process, and counted; the
 * listener and every other connection go on. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/common.h"
#include "ingest/collector_internal.h"

#define TCP_BACKLOG 64
#define MSG_MAX 65535u /* the header's 16-bit length */
#define HDR 16u

int ba_rx_tcp_open(const struct sockaddr_storage *ss, socklen_t sl, ba_rx_sock_t *s, char *err, size_t errlen) {
  memset(s, 0, sizeof(*s));
  s->fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s->fd < 0) {
    snprintf(err, errlen, "socket: %s", strerror(errno));
    return BA_ERR_IO;
  }
  int one = 1, off = 0;
  if (ss->ss_family == AF_INET6) setsockopt(s->fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
  setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)); /* restart beside TIME_WAIT connections */
  if (ba_rx_bind(s, ss, sl, err, errlen) != 0) goto fail;
  if (listen(s->fd, TCP_BACKLOG) != 0) {
    snprintf(err, errlen, "listen on tcp:%s: %s", s->addr, strerror(errno));
    goto fail;
  }
  s->inode = 0; /* no UDP drop counter for a TCP socket */
  return BA_OK;
fail:
  close(s->fd);
  s->fd = -1;
  return BA_ERR_IO;
}

void ba_rx_tcp_init(ba_rx_tcp_t *t) {
  memset(t, 0, sizeof(*t));
  for (size_t i = 0; i < BA_RX_TCP_MAX_CONN; i++) t->conn[i].fd = -1;
}

static void conn_close(ba_rx_tcp_t *t, ba_rx_tcp_conn_t *c, int bad) {
  close(c->fd);
  c->fd = -1;
  if (c->have && !bad) ba_rx_add(&t->truncated, 1); /* the peer left in the middle of a message */
  c->have = 0;
  ba_free(c->buf);
  c->buf = NULL;
  if (bad) ba_rx_add(&t->bad_framing, 1);
  atomic_fetch_sub_explicit(&t->open, 1, memory_order_relaxed);
}

void ba_rx_tcp_close_all(ba_rx_tcp_t *t) {
  for (size_t i = 0; i < BA_RX_TCP_MAX_CONN; i++)
    if (t->conn[i].fd >= 0) conn_close(t, &t->conn[i], 0);
}

static void accept_all(ba_rx_tcp_t *t, int lfd) {
  for (;;) {
    struct sockaddr_storage peer;
    socklen_t pl = sizeof(peer);
    int fd = accept4(lfd, (struct sockaddr *)&peer, &pl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return; /* EAGAIN, or an error the next poll sees again */
    ba_rx_tcp_conn_t *c = NULL;
    for (size_t i = 0; i < BA_RX_TCP_MAX_CONN && !c; i++)
      if (t->conn[i].fd < 0) c = &t->conn[i];
    uint8_t *buf = c ? ba_malloc(MSG_MAX) : NULL;
    if (!buf) { /* every slot taken, or no memory: refuse, counted */
      close(fd);
      ba_rx_add(&t->refused, 1);
      continue;
    }
    c->fd = fd;
    c->peer = peer;
    c->buf = buf;
    c->have = 0;
    ba_rx_add(&t->accepted, 1);
    atomic_fetch_add_explicit(&t->open, 1, memory_order_relaxed);
  }
}

int ba_rx_tcp_frame(const uint8_t *buf, uint32_t have, const struct sockaddr_storage *peer, ba_rx_msg_fn fn,
                    void *ctx, uint32_t *used) {
  uint32_t off = 0;
  int n = 0;
  *used = 0;
  while (have - off >= HDR) {
    const uint8_t *m = buf + off;
    uint32_t version = (uint32_t)m[0] << 8 | m[1], len = (uint32_t)m[2] << 8 | m[3];
    if (version != 10 || len < HDR) return -1;
    if (have - off < len) break;
    fn(ctx, peer, m, len);
    n++;
    off += len;
    *used = off;
  }
  return n;
}

/* Hands every whole message at the front of the connection's buffer to fn;
 * keeps a partial one. Returns -1 on a framing error. */
static int frame(ba_rx_tcp_t *t, ba_rx_tcp_conn_t *c, ba_rx_msg_fn fn, void *ctx) {
  uint32_t off;
  int n = ba_rx_tcp_frame(c->buf, c->have, &c->peer, fn, ctx, &off);
  if (n < 0) return -1;
  ba_rx_add(&t->messages, (uint64_t)n);
  if (off) {
    memmove(c->buf, c->buf + off, c->have - off);
    c->have -= off;
  }
  return 0;
}

static void conn_read(ba_rx_tcp_t *t, ba_rx_tcp_conn_t *c, ba_rx_msg_fn fn, void *ctx) {
  for (int rounds = 0; rounds < 64; rounds++) { /* bounded, so one busy peer does not starve the others */
    ssize_t n = recv(c->fd, c->buf + c->have, MSG_MAX - c->have, 0);
    if (n == 0) {
      conn_close(t, c, 0);
      return;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) conn_close(t, c, 0);
      return;
    }
    c->have += (uint32_t)n;
    ba_rx_add(&t->bytes, (uint64_t)n);
    if (frame(t, c, fn, ctx) != 0) {
      conn_close(t, c, 1);
      return;
    }
  }
}

int ba_rx_tcp_poll(ba_rx_tcp_t *t, int lfd, int timeout_ms, ba_rx_msg_fn fn, void *ctx) {
  struct pollfd pf[BA_RX_TCP_MAX_CONN + 1];
  ba_rx_tcp_conn_t *who[BA_RX_TCP_MAX_CONN + 1];
  size_t n = 0;
  pf[n].fd = lfd;
  pf[n].events = POLLIN;
  who[n++] = NULL;
  for (size_t i = 0; i < BA_RX_TCP_MAX_CONN; i++)
    if (t->conn[i].fd >= 0) {
      pf[n].fd = t->conn[i].fd;
      pf[n].events = POLLIN;
      who[n++] = &t->conn[i];
    }
  int r = poll(pf, (nfds_t)n, timeout_ms);
  if (r <= 0) return r;
  for (size_t i = 1; i < n; i++)
    if (pf[i].revents & (POLLIN | POLLHUP | POLLERR)) conn_read(t, who[i], fn, ctx);
  if (pf[0].revents & POLLIN) accept_all(t, lfd);
  return r;
}

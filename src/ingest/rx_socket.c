/* Receive sockets of the UDP collector: listen-address parsing, socket set-up
 * (receive buffer, SO_REUSEPORT), and the kernel's per-socket drop counter. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "ingest/collector_internal.h"

int ba_rx_parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *sl, char *err, size_t errlen) {
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

void ba_rx_addr16(const struct sockaddr_storage *ss, uint8_t out[16]) {
  memset(out, 0, 16);
  if (ss->ss_family == AF_INET) {
    ba_addr_set_v4(out, ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr));
  } else if (ss->ss_family == AF_INET6) {
    memcpy(out, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
  }
}

static void sock_name(int fd, char *out, size_t len) {
  struct sockaddr_storage b;
  socklen_t bl = sizeof(b);
  char host[INET6_ADDRSTRLEN] = "?";
  snprintf(out, len, "?");
  if (getsockname(fd, (struct sockaddr *)&b, &bl) != 0) return;
  if (b.ss_family == AF_INET) {
    struct sockaddr_in *a = (struct sockaddr_in *)&b;
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    snprintf(out, len, "%s:%u", host, ntohs(a->sin_port));
  } else if (b.ss_family == AF_INET6) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&b;
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    snprintf(out, len, "[%s]:%u", host, ntohs(a->sin6_port));
  }
}

int ba_rx_sock_port(const ba_rx_sock_t *s) {
  struct sockaddr_storage b;
  socklen_t bl = sizeof(b);
  if (getsockname(s->fd, (struct sockaddr *)&b, &bl) != 0) return -1;
  if (b.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&b)->sin_port);
  if (b.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&b)->sin6_port);
  return -1;
}

int ba_rx_bind(ba_rx_sock_t *s, const struct sockaddr_storage *ss, socklen_t sl, char *err, size_t errlen) {
  if (bind(s->fd, (const struct sockaddr *)ss, sl) != 0) {
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (ss->ss_family == AF_INET) {
      inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, host, sizeof(host));
      port = ntohs(((const struct sockaddr_in *)ss)->sin_port);
    } else {
      inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, host, sizeof(host));
      port = ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
    }
    snprintf(err, errlen, "cannot bind %s%s%s:%d: %s", ss->ss_family == AF_INET6 ? "[" : "", host,
             ss->ss_family == AF_INET6 ? "]" : "", port, strerror(errno));
    return BA_ERR_IO;
  }
  sock_name(s->fd, s->addr, sizeof(s->addr));
  struct stat st;
  if (fstat(s->fd, &st) == 0) s->inode = (uint64_t)st.st_ino;
  return BA_OK;
}

int ba_rx_sock_open(const struct sockaddr_storage *ss, socklen_t sl, int reuseport, uint32_t rcvbuf,
                    ba_rx_sock_t *s, char *err, size_t errlen) {
  memset(s, 0, sizeof(*s));
  s->fd = socket(ss->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s->fd < 0) {
    snprintf(err, errlen, "socket: %s", strerror(errno));
    return BA_ERR_IO;
  }
  int one = 1, off = 0;
  if (ss->ss_family == AF_INET6) /* "[::]:port" also receives IPv4 exporters */
    setsockopt(s->fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
  if (reuseport && setsockopt(s->fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
    snprintf(err, errlen, "SO_REUSEPORT: %s", strerror(errno));
    goto fail;
  }
  /* The kernel keeps twice the asked size (bookkeeping) and caps SO_RCVBUF at
   * net.core.rmem_max; SO_RCVBUFFORCE ignores the cap but needs CAP_NET_ADMIN. */
  int want = rcvbuf > INT32_MAX / 2 ? INT32_MAX / 2 : (int)rcvbuf;
  s->rcvbuf_forced = setsockopt(s->fd, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof(want)) == 0;
  if (!s->rcvbuf_forced) setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof(want));
  int got = 0;
  socklen_t gl = sizeof(got);
  if (getsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &got, &gl) == 0 && got > 0) s->rcvbuf_granted = (uint32_t)got / 2;
  if (ba_rx_bind(s, ss, sl, err, errlen) != 0) goto fail;
  return BA_OK;
fail:
  close(s->fd);
  s->fd = -1;
  return BA_ERR_IO;
}

void ba_rx_kernel_drops(const uint64_t *inodes, size_t n, int64_t *drops) {
  for (size_t i = 0; i < n; i++) drops[i] = -1;
  const char *files[2] = {"/proc/net/udp", "/proc/net/udp6"};
  for (int f = 0; f < 2; f++) {
    FILE *fp = fopen(files[f], "r");
    if (!fp) continue;
    char line[512];
    while (fgets(line, sizeof(line), fp)) {
      char *tok[16];
      int nt = 0;
      char *save = NULL;
      for (char *t = strtok_r(line, " \t\n", &save); t && nt < 16; t = strtok_r(NULL, " \t\n", &save))
        tok[nt++] = t;
      if (nt < 13) continue; /* header line or a format we do not know */
      unsigned long long inode = strtoull(tok[9], NULL, 10);
      for (size_t i = 0; i < n; i++)
        if (inodes[i] && inodes[i] == inode) drops[i] = (int64_t)strtoull(tok[12], NULL, 10);
    }
    fclose(fp);
  }
}

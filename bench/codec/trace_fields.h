/* Minimal per-packet field extraction from pcap/pcapng captures (libpcap), for
 * building real bitmap indexes in bench_codec and tests/codec/test_codec_realdata.
 * Header-only. Only IPv4 packets count: link types Ethernet (with VLAN/QinQ tags),
 * Linux SLL/SLL2, raw IP and BSD loopback; everything else is skipped. This is a
 * measuring aid, not bitarc's ingest path. */
#ifndef BA_TRACE_FIELDS_H
#define BA_TRACE_FIELDS_H

#include <dirent.h>
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  uint8_t proto;
  uint8_t src[4], dst[4];
  uint16_t sport, dport; /* 0 unless TCP/UDP first fragment */
} tf_pkt_t;

static inline uint16_t tf_be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }

/* Fills *out from one captured packet; 1 = IPv4 packet parsed, 0 = skipped. */
static inline int tf_parse(int dlt, const uint8_t *p, uint32_t len, tf_pkt_t *out) {
  uint32_t off;
  uint16_t et;
  switch (dlt) {
    case DLT_EN10MB:
      if (len < 14) return 0;
      et = tf_be16(p + 12);
      off = 14;
      while ((et == 0x8100 || et == 0x88A8 || et == 0x9100) && len >= off + 4) {
        et = tf_be16(p + off + 2);
        off += 4;
      }
      if (et != 0x0800) return 0;
      break;
    case DLT_LINUX_SLL:
      if (len < 16 || tf_be16(p + 14) != 0x0800) return 0;
      off = 16;
      break;
#ifdef DLT_LINUX_SLL2
    case DLT_LINUX_SLL2:
      if (len < 20 || tf_be16(p) != 0x0800) return 0;
      off = 20;
      break;
#endif
    case DLT_RAW:
#ifdef DLT_IPV4
    case DLT_IPV4:
#endif
      off = 0;
      break;
    case DLT_NULL:
    case DLT_LOOP:
      /* 4-byte address family in either byte order; AF_INET is 2 everywhere. */
      if (len < 4 || !((p[0] == 2 && p[3] == 0) || (p[3] == 2 && p[0] == 0))) return 0;
      off = 4;
      break;
    default:
      return 0;
  }
  if (off > len || 20 > len - off) return 0;
  const uint8_t *ip = p + off;
  unsigned ihl = (unsigned)(ip[0] & 15) * 4;
  if ((ip[0] >> 4) != 4 || ihl < 20 || ihl > len - off) return 0;
  memset(out, 0, sizeof *out);
  out->proto = ip[9];
  memcpy(out->src, ip + 12, 4);
  memcpy(out->dst, ip + 16, 4);
  int first_frag = (tf_be16(ip + 6) & 0x1FFF) == 0;
  if ((out->proto == 6 || out->proto == 17) && first_frag && len - off - ihl >= 4) {
    out->sport = tf_be16(ip + ihl);
    out->dport = tf_be16(ip + ihl + 2);
  }
  return 1;
}

typedef void (*tf_pkt_fn)(void *ctx, const tf_pkt_t *pkt);

/* Reads one capture file; returns the number of IPv4 packets, -1 if libpcap
 * cannot open it. */
static inline long tf_read_file(const char *path, tf_pkt_fn fn, void *ctx) {
  char err[PCAP_ERRBUF_SIZE];
  pcap_t *pc = pcap_open_offline(path, err);
  if (!pc) return -1;
  int dlt = pcap_datalink(pc);
  struct pcap_pkthdr *h;
  const u_char *data;
  long n = 0;
  int rc;
  while ((rc = pcap_next_ex(pc, &h, &data)) == 1) {
    tf_pkt_t pkt;
    if (tf_parse(dlt, data, h->caplen, &pkt)) {
      fn(ctx, &pkt);
      n++;
    }
  }
  pcap_close(pc);
  return n;
}

static inline int tf_is_capture(const char *name) {
  const char *dot = strrchr(name, '.');
  return dot && (!strcmp(dot, ".pcap") || !strcmp(dot, ".pcapng") || !strcmp(dot, ".cap"));
}

/* Walks `dir` recursively in sorted name order (so row order is reproducible)
 * and feeds every IPv4 packet of every capture to fn. Returns the number of
 * packets, or -1 if `dir` cannot be opened. Stops after `max_pkts` (0 = all). */
typedef struct {
  tf_pkt_fn fn;
  void *ctx;
  long n, max;
} tf_walk_t;

static inline void tf_limit_cb(void *ctx, const tf_pkt_t *pkt) {
  tf_walk_t *w = ctx;
  if (w->max && w->n >= w->max) return;
  w->n++;
  w->fn(w->ctx, pkt);
}

static inline int tf_walk_dir(const char *dir, tf_walk_t *w) {
  struct dirent **ents;
  int n = scandir(dir, &ents, NULL, alphasort);
  if (n < 0) return -1;
  for (int i = 0; i < n; i++) {
    const char *nm = ents[i]->d_name;
    if (nm[0] != '.' && !(w->max && w->n >= w->max)) {
      size_t len = strlen(dir) + strlen(nm) + 2;
      char *path = malloc(len);
      if (path) {
        memcpy(path, dir, strlen(dir));
        path[strlen(dir)] = '/';
        memcpy(path + strlen(dir) + 1, nm, strlen(nm) + 1);
        DIR *sub = opendir(path);
        if (sub) {
          closedir(sub);
          tf_walk_dir(path, w);
        } else if (tf_is_capture(nm)) {
          tf_read_file(path, tf_limit_cb, w);
        }
        free(path);
      }
    }
    free(ents[i]);
  }
  free(ents);
  return 0;
}

static inline long tf_walk(const char *dir, long max_pkts, tf_pkt_fn fn, void *ctx) {
  tf_walk_t w = {fn, ctx, 0, max_pkts};
  if (tf_walk_dir(dir, &w) < 0) return -1;
  return w.n;
}

#endif

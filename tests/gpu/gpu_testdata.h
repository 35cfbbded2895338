/* Column data for the GPU module's tests: synthetic distributions and real
 * captures (dst ports, protocols of ../shared/data traces). */
#ifndef BA_GPU_TESTDATA_H
#define BA_GPU_TESTDATA_H

#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include "testsupport.h"

typedef struct {
  uint32_t *v;
  size_t n, cap;
} gt_col_t;

static inline void gt_push(gt_col_t *c, uint32_t x) {
  if (c->n == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 4096;
    c->v = realloc(c->v, c->cap * sizeof *c->v);
    assert_non_null(c->v);
  }
  c->v[c->n++] = x;
}

/* Per packet of one capture: the IP protocol and the TCP/UDP destination port
 * (0 when the packet has none), Ethernet with optional VLAN, IPv4 or IPv6. */
static inline void gt_read_capture(const char *path, gt_col_t *proto, gt_col_t *dport) {
  char err[PCAP_ERRBUF_SIZE];
  pcap_t *pc = pcap_open_offline(path, err);
  if (!pc) return;
  if (pcap_datalink(pc) == DLT_EN10MB) {
    struct pcap_pkthdr *h;
    const u_char *d;
    while (pcap_next_ex(pc, &h, &d) == 1) {
      size_t len = h->caplen, off = 12;
      uint32_t pr = 0, dp = 0;
      uint16_t et = len >= 14 ? (uint16_t)(d[12] << 8 | d[13]) : 0;
      if (et == 0x8100 && len >= 18) {
        et = (uint16_t)(d[16] << 8 | d[17]);
        off = 16;
      }
      off += 2;
      size_t l4 = 0;
      if (et == 0x0800 && len >= off + 20) {
        pr = d[off + 9];
        l4 = off + (size_t)(d[off] & 15) * 4;
      } else if (et == 0x86DD && len >= off + 40) {
        pr = d[off + 6];
        l4 = off + 40;
      }
      if ((pr == 6 || pr == 17) && l4 && len >= l4 + 4) dp = (uint32_t)(d[l4 + 2] << 8 | d[l4 + 3]);
      gt_push(proto, pr);
      gt_push(dport, dp);
    }
  }
  pcap_close(pc);
}

typedef struct {
  gt_col_t proto, dport;
} gt_real_t;

static inline void gt_read_cb(const char *path, void *ctx) {
  gt_real_t *r = ctx;
  gt_read_capture(path, &r->proto, &r->dport);
}

/* Packets of every shared capture; returns the count (0: data absent). */
static inline size_t gt_read_real(gt_real_t *r) {
  static const char *const exts[] = {"pcap", "pcapng", NULL};
  memset(r, 0, sizeof *r);
  const char *dir = ba_test_shared("traces");
  if (dir) ba_test_walk(dir, exts, gt_read_cb, r);
  return r->proto.n;
}

static inline void gt_real_free(gt_real_t *r) {
  free(r->proto.v);
  free(r->dport.v);
}

#endif

/* Fuzz target: an IPFIX-over-TCP byte stream (RFC 7011 10.4) as the
 * collector's receive thread sees it. The first byte of each piece picks its
 * size (1..256 bytes), so messages are cut anywhere; the pieces are framed
 * by ba_rx_tcp_frame into messages exactly as a connection buffers them
 * (65,535 bytes) and every message is decoded. A framing error ends the
 * connection, as the collector closes it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "bitarc/ingest.h"
#include "ingest/collector_internal.h"

typedef struct {
  ba_flow_decoder_t *d;
  uint64_t acc;
} ctx_t;

static int sink(void *vc, const ba_record_t *r, size_t n) {
  ctx_t *c = vc;
  for (size_t i = 0; i < n; i++) c->acc += r[i].bytes + r[i].first_ns + r[i].src[15] + r[i].dst_port;
  return 0;
}

static void on_msg(void *vc, const struct sockaddr_storage *from, const uint8_t *msg, uint32_t len) {
  ctx_t *c = vc;
  uint8_t ex[16];
  ba_rx_addr16(from, ex);
  ba_flow_decode_at(c->d, ex, 1700000000000000000ull, msg, len, sink, c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ba_flow_decoder_opts_t o;
  ba_flow_decoder_opts_init(&o);
  o.pending_max_sets = 8;
  ctx_t c = {0};
  if (ba_flow_decoder_create(&o, &c.d)) return 0;
  struct sockaddr_storage peer;
  memset(&peer, 0, sizeof(peer));
  peer.ss_family = AF_INET;
  uint8_t *buf = malloc(65535);
  uint32_t have = 0;
  size_t off = 0;
  while (buf && off < size) {
    size_t k = (size_t)data[off++] + 1;
    if (k > size - off) k = size - off;
    if (k > 65535u - have) k = 65535u - have;
    memcpy(buf + have, data + off, k);
    off += k;
    have += (uint32_t)k;
    uint32_t used;
    if (ba_rx_tcp_frame(buf, have, &peer, on_msg, &c, &used) < 0) break;
    memmove(buf, buf + used, have - used);
    have -= used;
  }
  ba_flow_decoder_finish(c.d);
  ba_flow_decoder_free(c.d);
  free(buf);
  return (int)(c.acc & 0);
}

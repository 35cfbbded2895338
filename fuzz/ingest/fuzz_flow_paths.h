/* Shared body of the fuzz targets aimed at one decoder path (variable-length
 * fields, options templates, biflows/NSEL): the decoder first learns fixed
 * v9 and IPFIX templates (the prelude) for that path, then the input is read
 * as chunks [2-byte big-endian length][selector][bytes]. Selector bit 7 picks
 * NetFlow v9 over IPFIX, bit 6 sends the bytes as a whole datagram (so
 * template parsing is reached too), else the bytes become one data set of
 * template tids[selector % ntids] in a valid message. */
#ifndef BA_FUZZ_FLOW_PATHS_H
#define BA_FUZZ_FLOW_PATHS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bitarc/ingest.h"

typedef struct fz_path {
  const uint8_t *v9_prelude, *ipfix_prelude; /* template datagrams */
  size_t v9_len, ipfix_len;
  const uint16_t *tids;
  size_t ntids;
  uint32_t flags; /* decoder flags */
} fz_path_t;

/* A template datagram builder for the preludes. */
typedef struct fz_buf {
  uint8_t b[2048];
  size_t n, set;
} fz_buf_t;
static void fz_u16(fz_buf_t *b, uint16_t v) {
  b->b[b->n++] = (uint8_t)(v >> 8);
  b->b[b->n++] = (uint8_t)v;
}
static void fz_u32(fz_buf_t *b, uint32_t v) {
  fz_u16(b, (uint16_t)(v >> 16));
  fz_u16(b, (uint16_t)v);
}
/* Starts a v9 (version 9) or IPFIX (10) message. */
static void fz_msg(fz_buf_t *b, int version) {
  b->n = 0;
  fz_u16(b, (uint16_t)version);
  fz_u16(b, 0);
  if (version == 9) fz_u32(b, 10000);
  fz_u32(b, 1700000000u);
  fz_u32(b, 1);
  fz_u32(b, 0);
}
static void fz_set(fz_buf_t *b, uint16_t id) {
  b->set = b->n;
  fz_u16(b, id);
  fz_u16(b, 0);
}
static void fz_set_end(fz_buf_t *b) {
  b->b[b->set + 2] = (uint8_t)((b->n - b->set) >> 8);
  b->b[b->set + 3] = (uint8_t)(b->n - b->set);
}
static void fz_msg_end(fz_buf_t *b, int version) {
  if (version == 10) {
    b->b[2] = (uint8_t)(b->n >> 8);
    b->b[3] = (uint8_t)b->n;
  }
}
/* A field specifier: IPFIX enterprise elements as (pen, type), pen 0 = IETF. */
static void fz_field(fz_buf_t *b, int version, uint32_t pen, uint16_t type, uint16_t len) {
  if (pen && version == 10) {
    fz_u16(b, (uint16_t)(type | 0x8000));
    fz_u16(b, len);
    fz_u32(b, pen);
  } else {
    fz_u16(b, type);
    fz_u16(b, len);
  }
}

static int fz_sink(void *ctx, const ba_record_t *r, size_t n) {
  uint64_t *acc = ctx;
  for (size_t i = 0; i < n; i++)
    *acc += r[i].bytes + r[i].out_bytes + r[i].first_ns + r[i].src[15] + r[i].mpls[9] + r[i].sampling;
  return 0;
}

static int fz_run_path(const fz_path_t *p, const uint8_t *data, size_t size) {
  static const uint8_t ex[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1};
  ba_flow_decoder_opts_t o;
  ba_flow_decoder_opts_init(&o);
  o.pending_max_sets = 8;
  o.flags = p->flags;
  ba_flow_decoder_t *d;
  if (ba_flow_decoder_create(&o, &d)) return 0;
  uint64_t acc = 0;
  ba_flow_decode_at(d, ex, 1, p->v9_prelude, p->v9_len, fz_sink, &acc);
  ba_flow_decode_at(d, ex, 1, p->ipfix_prelude, p->ipfix_len, fz_sink, &acc);
  uint8_t *dg = malloc(65536 + 32);
  size_t off = 0;
  while (dg && size - off >= 3) {
    size_t len = (size_t)(data[off] << 8 | data[off + 1]);
    uint8_t sel = data[off + 2];
    off += 3;
    if (len > size - off) len = size - off;
    if (len > 65000) len = 65000;
    const uint8_t *body = data + off;
    off += len;
    size_t n = 0;
    if (sel & 0x40) {
      memcpy(dg, body, len);
      n = len;
    } else {
      int v9 = sel & 0x80;
      uint16_t tid = p->tids[sel % p->ntids];
      static const uint8_t h9[20] = {0, 9, 0, 1, 0, 0, 0x27, 0x10, 0x65, 0x53, 0xf1, 0x00, 0, 0, 0, 1, 0, 0, 0, 0};
      static const uint8_t h10[16] = {0, 10, 0, 0, 0x65, 0x53, 0xf1, 0x00, 0, 0, 0, 1, 0, 0, 0, 0};
      memcpy(dg, v9 ? h9 : h10, v9 ? 20 : 16);
      n = v9 ? 20 : 16;
      dg[n] = (uint8_t)(tid >> 8);
      dg[n + 1] = (uint8_t)tid;
      dg[n + 2] = (uint8_t)((len + 4) >> 8);
      dg[n + 3] = (uint8_t)(len + 4);
      memcpy(dg + n + 4, body, len);
      n += 4 + len;
      if (!v9) {
        dg[2] = (uint8_t)(n >> 8);
        dg[3] = (uint8_t)n;
      }
    }
    ba_flow_detect(dg, n);
    ba_flow_decode_at(d, ex, 1, dg, n, fz_sink, &acc);
  }
  ba_flow_decoder_finish(d);
  size_t nt = ba_flow_decoder_templates(d, NULL, 0), ns = ba_flow_decoder_samplers(d, NULL, 0);
  ba_flow_template_info_t *ti = calloc(nt + 1, sizeof(*ti));
  ba_flow_sampler_t *si = calloc(ns + 1, sizeof(*si));
  if (ti) ba_flow_decoder_templates(d, ti, nt);
  if (si) ba_flow_decoder_samplers(d, si, ns);
  free(ti);
  free(si);
  ba_flow_decoder_free(d);
  free(dg);
  return (int)(acc & 0);
}

#endif

/* Test-side writer of nfdump files, written from the format description
 * (nfdump's nffileV2.h, nffile.h, nfx.h, nfxV3.h) independently of the
 * reader in src/ingest: layout 1 (nfdump 1.6: extension maps, type 10
 * records) and layout 2 (nfdump 1.7: V3 records), blocks compressed with the
 * real LZO, LZ4, BZ2 and ZSTD libraries. Each record written also yields the
 * ba_record_t a correct reader must produce (the naive reference), and
 * nfw_recompress rewrites an existing file's blocks with another codec. */
#ifndef NFFILE_WRITER_H
#define NFFILE_WRITER_H

#include <bzlib.h>
#include <lz4.h>
#include <lzo/lzo1x.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "bitarc/record.h"

enum { NFW_NONE = 0, NFW_LZO = 1, NFW_BZ2 = 2, NFW_LZ4 = 3, NFW_ZSTD = 4 };

typedef struct nfw_buf {
  uint8_t *p;
  size_t n, cap;
} nfw_buf_t;

static void nfw_put(nfw_buf_t *b, const void *src, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 1024;
    b->p = realloc(b->p, b->cap);
    if (!b->p) abort();
  }
  memcpy(b->p + b->n, src, n);
  b->n += n;
}
static void nfw_u8(nfw_buf_t *b, uint8_t v) { nfw_put(b, &v, 1); }
static void nfw_u16(nfw_buf_t *b, uint16_t v) { uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)}; nfw_put(b, x, 2); }
static void nfw_u32(nfw_buf_t *b, uint32_t v) { nfw_u16(b, (uint16_t)v); nfw_u16(b, (uint16_t)(v >> 16)); }
static void nfw_u64(nfw_buf_t *b, uint64_t v) { nfw_u32(b, (uint32_t)v); nfw_u32(b, (uint32_t)(v >> 32)); }
static void nfw_set16(nfw_buf_t *b, size_t at, uint16_t v) { b->p[at] = (uint8_t)v; b->p[at + 1] = (uint8_t)(v >> 8); }
static void nfw_set32(nfw_buf_t *b, size_t at, uint32_t v) { nfw_set16(b, at, (uint16_t)v); nfw_set16(b, at + 2, (uint16_t)(v >> 16)); }
/* a network-order 16-byte address as nfdump keeps it: two host-order u64, high half first */
static void nfw_v6(nfw_buf_t *b, const uint8_t a[16]) {
  for (int h = 0; h < 2; h++) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | a[8 * h + i];
    nfw_u64(b, v);
  }
}

static uint64_t g_nfw_rng = 0x9E3779B97F4A7C15ull;
static uint64_t nfw_rand(void) {
  g_nfw_rng ^= g_nfw_rng << 13; g_nfw_rng ^= g_nfw_rng >> 7; g_nfw_rng ^= g_nfw_rng << 17;
  return g_nfw_rng;
}
static uint32_t nfw_r32(void) { return (uint32_t)(nfw_rand() >> 17); }

/* Compresses src into a fresh buffer with nfdump's codec numbering. */
static size_t nfw_compress(int comp, const uint8_t *src, size_t n, uint8_t **out) {
  size_t cap = n + n / 8 + 4096;
  uint8_t *d = malloc(cap);
  if (!d) abort();
  size_t r = 0;
  if (comp == NFW_LZO) {
    static int init;
    if (!init) { lzo_init(); init = 1; }
    static uint8_t wrk[LZO1X_1_MEM_COMPRESS];
    lzo_uint ol = cap;
    if (lzo1x_1_compress(src, n, d, &ol, wrk) != LZO_E_OK) abort();
    r = ol;
  } else if (comp == NFW_LZ4) {
    r = (size_t)LZ4_compress_default((const char *)src, (char *)d, (int)n, (int)cap);
  } else if (comp == NFW_BZ2) {
    unsigned ol = (unsigned)cap;
    if (BZ2_bzBuffToBuffCompress((char *)d, &ol, (char *)(uintptr_t)src, (unsigned)n, 9, 0, 0) != BZ_OK) abort();
    r = ol;
  } else if (comp == NFW_ZSTD) {
    r = ZSTD_compress(d, cap, src, n, 3);
    if (ZSTD_isError(r)) abort();
  } else {
    memcpy(d, src, n);
    r = n;
  }
  *out = d;
  return r;
}

/* A file being built: header, then blocks. */
typedef struct nfw_file {
  nfw_buf_t out, blk;
  int layout, comp;
  uint32_t nblocks, nrec;
} nfw_file_t;

static void nfw_begin(nfw_file_t *f, int layout, int comp) {
  memset(f, 0, sizeof *f);
  f->layout = layout;
  f->comp = comp;
  if (layout == 2) {
    nfw_u16(&f->out, 0xA50C); nfw_u16(&f->out, 2); nfw_u32(&f->out, 0x01070100);
    nfw_u64(&f->out, 1700000000); nfw_u8(&f->out, (uint8_t)comp); nfw_u8(&f->out, 0);
    nfw_u16(&f->out, 0); nfw_u32(&f->out, 0); nfw_u64(&f->out, 0); nfw_u32(&f->out, 5u << 20); nfw_u32(&f->out, 0);
  } else {
    static const uint32_t flag[] = {0, 0x01, 0x08, 0x10, 0};
    nfw_u16(&f->out, 0xA50C); nfw_u16(&f->out, 1); nfw_u32(&f->out, flag[comp]); nfw_u32(&f->out, 0);
    char ident[128] = "bitarc-test";
    nfw_put(&f->out, ident, sizeof ident);
    uint8_t stat[136] = {0};
    nfw_put(&f->out, stat, sizeof stat);
  }
}

/* Writes the pending records as one block of `type` (2 or 3 by layout when 0). */
static void nfw_block(nfw_file_t *f, uint16_t type) {
  if (!f->nrec) return;
  uint8_t *z;
  size_t zn = nfw_compress(f->comp, f->blk.p, f->blk.n, &z);
  nfw_u32(&f->out, f->nrec); nfw_u32(&f->out, (uint32_t)zn);
  nfw_u16(&f->out, type ? type : (f->layout == 2 ? 3 : 2)); nfw_u16(&f->out, 0);
  nfw_put(&f->out, z, zn);
  free(z);
  f->blk.n = 0;
  f->nrec = 0;
  f->nblocks++;
}

/* Finishes the file (patches the block count); caller frees out.p. */
static void nfw_end(nfw_file_t *f) {
  nfw_block(f, 0);
  nfw_set32(&f->out, f->layout == 2 ? 36 : 8, f->nblocks);
  free(f->blk.p);
}

/* exporter record (type 7) for sysid with an IPv4 address and id */
static void nfw_exporter(nfw_file_t *f, uint16_t sysid, uint32_t v4, uint32_t id) {
  nfw_buf_t *b = &f->blk;
  nfw_u16(b, 7); nfw_u16(b, 32); nfw_u32(b, 9);
  nfw_u32(b, 0); nfw_u32(b, 0); nfw_u32(b, v4); nfw_u32(b, 0);
  nfw_u16(b, 2); nfw_u16(b, sysid); nfw_u32(b, id);
  f->nrec++;
}

/* a v0 sampler record (1 in interval) for sysid */
static void nfw_sampler(nfw_file_t *f, uint16_t sysid, uint32_t interval, uint16_t algo) {
  nfw_buf_t *b = &f->blk;
  nfw_u16(b, 15); nfw_u16(b, 16); nfw_u32(b, (uint32_t)-1); nfw_u32(b, interval); nfw_u16(b, algo); nfw_u16(b, sysid);
  f->nrec++;
}

static void nfw_rand_addr(uint8_t a[16], int v6) {
  if (v6) {
    for (int i = 0; i < 16; i++) a[i] = (uint8_t)nfw_rand();
  } else {
    ba_addr_set_v4(a, nfw_r32() | 1);
  }
}
static uint32_t nfw_v4(const uint8_t a[16]) { return ba_addr_get_v4(a); }

/* ---------- layout 1 records ---------- */

static const uint8_t g_nfw_v1_size[50] = {
  [4] = 4, [5] = 8, [6] = 4, [7] = 8, [8] = 4, [9] = 4, [10] = 16, [11] = 4, [12] = 16, [13] = 4,
  [14] = 4, [15] = 8, [16] = 4, [17] = 8, [18] = 4, [19] = 8, [20] = 16, [21] = 16, [22] = 40, [23] = 4,
  [24] = 16, [25] = 4, [26] = 8, [27] = 8, [37] = 20, [38] = 4, [39] = 8, [40] = 32, [41] = 24, [45] = 24,
  [46] = 12, [48] = 8};

/* What the file says about an exporter (sysid): applied to expected records. */
typedef struct nfw_exp {
  uint8_t ip[16];
  uint32_t id, sampling;
  uint8_t sampling_algo, present;
} nfw_exp_t;

static void nfw_apply_exp(const nfw_exp_t *e, ba_record_t *r) {
  if (!e) return;
  if (e->present) { memcpy(r->exporter, e->ip, 16); r->obs_domain = e->id; }
  r->sampling = e->sampling;
  r->sampling_algo = e->sampling_algo;
}

static void nfw_extmap(nfw_file_t *f, uint16_t map_id, const uint16_t *ids, int n) {
  nfw_buf_t *b = &f->blk;
  size_t size = 8 + 2 * ((size_t)n + 1);
  size += (4 - size % 4) % 4;
  uint32_t ext = 0;
  for (int i = 0; i < n; i++) ext += g_nfw_v1_size[ids[i]];
  nfw_u16(b, 2); nfw_u16(b, (uint16_t)size); nfw_u16(b, map_id); nfw_u16(b, (uint16_t)ext);
  for (int i = 0; i < n; i++) nfw_u16(b, ids[i]);
  for (size_t k = 8 + 2 * (size_t)n; k < size; k += 2) nfw_u16(b, 0);
  f->nrec++;
}

static void nfw_v1_ext(nfw_buf_t *b, unsigned id, ba_record_t *r, uint64_t *agg) {
  uint8_t a[16], c[16];
  switch (id) {
    case 4: r->in_if = nfw_r32() & 0xFFFF; r->out_if = nfw_r32() & 0xFFFF; nfw_u16(b, (uint16_t)r->in_if); nfw_u16(b, (uint16_t)r->out_if); break;
    case 5: r->in_if = nfw_r32(); r->out_if = nfw_r32(); nfw_u32(b, r->in_if); nfw_u32(b, r->out_if); break;
    case 6: r->src_as = nfw_r32() & 0xFFFF; r->dst_as = nfw_r32() & 0xFFFF; nfw_u16(b, (uint16_t)r->src_as); nfw_u16(b, (uint16_t)r->dst_as); break;
    case 7: r->src_as = nfw_r32(); r->dst_as = nfw_r32(); nfw_u32(b, r->src_as); nfw_u32(b, r->dst_as); break;
    case 8:
      r->dst_tos = (uint8_t)nfw_rand(); r->direction = (uint8_t)(nfw_rand() & 1);
      r->src_mask = (uint8_t)(nfw_rand() % 33); r->dst_mask = (uint8_t)(nfw_rand() % 33);
      nfw_u8(b, r->dst_tos); nfw_u8(b, r->direction); nfw_u8(b, r->src_mask); nfw_u8(b, r->dst_mask);
      break;
    case 9: nfw_rand_addr(r->next_hop, 0); nfw_u32(b, nfw_v4(r->next_hop)); break;
    case 10: nfw_rand_addr(r->next_hop, 1); nfw_v6(b, r->next_hop); break;
    case 11: nfw_rand_addr(r->bgp_next_hop, 0); nfw_u32(b, nfw_v4(r->bgp_next_hop)); break;
    case 12: nfw_rand_addr(r->bgp_next_hop, 1); nfw_v6(b, r->bgp_next_hop); break;
    case 13: r->vlan = (uint16_t)(nfw_r32() % 4096); r->dst_vlan = (uint16_t)(nfw_r32() % 4096); nfw_u16(b, r->vlan); nfw_u16(b, r->dst_vlan); break;
    case 14: r->out_packets = nfw_r32(); nfw_u32(b, (uint32_t)r->out_packets); break;
    case 15: r->out_packets = nfw_rand() >> 8; nfw_u64(b, r->out_packets); break;
    case 16: r->out_bytes = nfw_r32(); nfw_u32(b, (uint32_t)r->out_bytes); break;
    case 17: r->out_bytes = nfw_rand() >> 8; nfw_u64(b, r->out_bytes); break;
    case 18: *agg = nfw_r32() % 1000 + 1; nfw_u32(b, (uint32_t)*agg); break;
    case 19: *agg = nfw_r32() % 100000 + 1; nfw_u64(b, *agg); break;
    case 20:
      r->in_src_mac = nfw_rand() & 0xFFFFFFFFFFFFull; r->out_dst_mac = nfw_rand() & 0xFFFFFFFFFFFFull;
      nfw_u64(b, r->in_src_mac); nfw_u64(b, r->out_dst_mac);
      break;
    case 21:
      r->in_dst_mac = nfw_rand() & 0xFFFFFFFFFFFFull; r->out_src_mac = nfw_rand() & 0xFFFFFFFFFFFFull;
      nfw_u64(b, r->in_dst_mac); nfw_u64(b, r->out_src_mac);
      break;
    case 22:
      for (int i = 0; i < 10; i++) { r->mpls[i] = nfw_r32() & 0xFFFFFF; nfw_u32(b, r->mpls[i]); }
      break;
    case 23: nfw_rand_addr(r->exporter, 0); nfw_u32(b, nfw_v4(r->exporter)); break;
    case 24: nfw_rand_addr(r->exporter, 1); nfw_v6(b, r->exporter); break;
    case 25: r->engine_type = (uint8_t)nfw_rand(); r->engine_id = (uint8_t)nfw_rand(); nfw_u16(b, 0); nfw_u8(b, r->engine_type); nfw_u8(b, r->engine_id); break;
    case 26: r->next_as = nfw_r32(); r->prev_as = nfw_r32(); nfw_u32(b, r->next_as); nfw_u32(b, r->prev_as); break;
    case 27: { uint64_t ms = 1700000000000ull + nfw_r32(); r->received_ns = ms * 1000000u; nfw_u64(b, ms); break; }
    case 37:
      r->fw_event = (uint8_t)(nfw_rand() % 5 + 1); r->fw_xevent = (uint16_t)nfw_rand();
      nfw_u64(b, 1700000000000ull); nfw_u32(b, nfw_r32()); nfw_u16(b, r->dst_port); /* nsel icmp = the flow's */
      nfw_u8(b, r->fw_event); nfw_u8(b, 0); nfw_u16(b, r->fw_xevent); nfw_u16(b, 0);
      break;
    case 38: r->xsrc_port = (uint16_t)nfw_rand(); r->xdst_port = (uint16_t)nfw_rand(); nfw_u16(b, r->xsrc_port); nfw_u16(b, r->xdst_port); break;
    case 39: nfw_rand_addr(r->xsrc, 0); nfw_rand_addr(r->xdst, 0); nfw_u32(b, nfw_v4(r->xsrc)); nfw_u32(b, nfw_v4(r->xdst)); break;
    case 40: nfw_rand_addr(r->xsrc, 1); nfw_rand_addr(r->xdst, 1); nfw_v6(b, r->xsrc); nfw_v6(b, r->xdst); break;
    case 46:
      r->nat_event = (uint8_t)(nfw_rand() % 10 + 1); r->egress_vrf = nfw_r32(); r->ingress_vrf = nfw_r32();
      nfw_u8(b, r->nat_event); nfw_u8(b, 0); nfw_u16(b, 0); nfw_u32(b, r->egress_vrf); nfw_u32(b, r->ingress_vrf);
      break;
    default: /* ACL ids, latency, port blocks: bytes without a bitarc field */
      for (unsigned i = 0; i < g_nfw_v1_size[id]; i++) nfw_u8(b, (uint8_t)nfw_rand());
  }
  (void)a; (void)c;
}

/* Random flow basics shared by both layouts. */
static void nfw_rand_basics(ba_record_t *r, int v6) {
  memset(r, 0, sizeof *r);
  r->kind = BA_REC_FLOW;
  uint64_t first_ms = 1700000000000ull + nfw_r32() % 300000u;  /* one nfcapd file: 5 minutes */
  r->first_ns = first_ms * 1000000u;
  r->last_ns = (first_ms + nfw_r32() % 600000u) * 1000000u;
  static const uint8_t protos[] = {6, 6, 17, 17, 1, 58, 47};
  r->proto = protos[nfw_rand() % sizeof protos];
  r->ipver = v6 ? 6 : 4;
  nfw_rand_addr(r->src, v6);
  nfw_rand_addr(r->dst, v6);
  if (r->proto == 1 || r->proto == 58) {
    r->icmp_type = (uint8_t)(nfw_rand() % 12);
    r->icmp_code = (uint8_t)(nfw_rand() % 4);
    r->dst_port = (uint16_t)(r->icmp_type << 8 | r->icmp_code);
  } else {
    r->src_port = (uint16_t)nfw_rand();
    r->dst_port = (uint16_t)nfw_rand();
  }
  r->tcp_flags = r->proto == 6 ? (uint8_t)nfw_rand() : 0;
  r->tos = (uint8_t)nfw_rand();
}

/* One layout-1 flow (type 10) using extension map `ids`; *exp gets what a
 * reader must return. flags: bit 0 IPv6, bit 1 64-bit packets, bit 2 64-bit bytes. */
static void nfw_v1_flow(nfw_file_t *f, uint16_t map_id, const uint16_t *ids, int n, unsigned flags, uint16_t sysid,
                        const nfw_exp_t *e, ba_record_t *r) {
  nfw_rand_basics(r, flags & 1);
  nfw_apply_exp(e, r);
  nfw_buf_t rec = {0};
  uint64_t first_ms = r->first_ns / 1000000u, last_ms = r->last_ns / 1000000u;
  nfw_u16(&rec, 10); nfw_u16(&rec, 0); nfw_u16(&rec, (uint16_t)(flags & 7)); nfw_u16(&rec, map_id);
  nfw_u16(&rec, (uint16_t)(first_ms % 1000)); nfw_u16(&rec, (uint16_t)(last_ms % 1000));
  nfw_u32(&rec, (uint32_t)(first_ms / 1000)); nfw_u32(&rec, (uint32_t)(last_ms / 1000));
  nfw_u8(&rec, 0); nfw_u8(&rec, r->tcp_flags); nfw_u8(&rec, r->proto); nfw_u8(&rec, r->tos);
  nfw_u16(&rec, r->src_port); nfw_u16(&rec, r->dst_port); nfw_u16(&rec, sysid); nfw_u8(&rec, 0); nfw_u8(&rec, 0);
  if (flags & 1) { nfw_v6(&rec, r->src); nfw_v6(&rec, r->dst); }
  else { nfw_u32(&rec, nfw_v4(r->src)); nfw_u32(&rec, nfw_v4(r->dst)); }
  r->packets = flags & 2 ? (nfw_rand() >> 20) + 1 : nfw_r32() + 1u;
  r->bytes = flags & 4 ? (nfw_rand() >> 16) + 1 : nfw_r32() + 1u;
  if (flags & 2) nfw_u64(&rec, r->packets); else nfw_u32(&rec, (uint32_t)r->packets);
  if (flags & 4) nfw_u64(&rec, r->bytes); else nfw_u32(&rec, (uint32_t)r->bytes);
  uint64_t agg = 0;
  for (int i = 0; i < n; i++) nfw_v1_ext(&rec, ids[i], r, &agg);
  r->aggr_flows = (uint32_t)agg;
  nfw_set16(&rec, 2, (uint16_t)rec.n);
  nfw_put(&f->blk, rec.p, rec.n);
  free(rec.p);
  f->nrec++;
}

/* ---------- layout 2 (V3) records ---------- */

#define NFW_EL(b, type, len) do { nfw_u16(b, type); nfw_u16(b, (uint16_t)((len) + 4)); (*nel)++; } while (0)

static void nfw_v3_el(nfw_buf_t *b, unsigned id, ba_record_t *r, int *nel) {
  switch (id) {
    case 4:
      NFW_EL(b, 4, 16);
      r->in_if = nfw_r32(); r->out_if = nfw_r32(); r->src_mask = (uint8_t)(nfw_rand() % 129);
      r->dst_mask = (uint8_t)(nfw_rand() % 129); r->direction = (uint8_t)(nfw_rand() & 1); r->dst_tos = (uint8_t)nfw_rand();
      nfw_u32(b, r->in_if); nfw_u32(b, r->out_if); nfw_u8(b, r->src_mask); nfw_u8(b, r->dst_mask);
      nfw_u8(b, r->direction); nfw_u8(b, r->dst_tos); nfw_u32(b, 0);
      break;
    case 5:
      NFW_EL(b, 5, 24);
      r->aggr_flows = nfw_r32() % 1000 + 1; r->out_packets = nfw_rand() >> 24; r->out_bytes = nfw_rand() >> 12;
      nfw_u64(b, r->aggr_flows); nfw_u64(b, r->out_packets); nfw_u64(b, r->out_bytes);
      break;
    case 6:
      NFW_EL(b, 6, 8);
      r->vlan = (uint16_t)(nfw_r32() % 4096); r->dst_vlan = (uint16_t)(nfw_r32() % 4096);
      nfw_u32(b, r->vlan); nfw_u32(b, r->dst_vlan);
      break;
    case 7: NFW_EL(b, 7, 8); r->src_as = nfw_r32(); r->dst_as = nfw_r32(); nfw_u32(b, r->src_as); nfw_u32(b, r->dst_as); break;
    case 8: NFW_EL(b, 8, 4); nfw_rand_addr(r->bgp_next_hop, 0); nfw_u32(b, nfw_v4(r->bgp_next_hop)); break;
    case 9: NFW_EL(b, 9, 16); nfw_rand_addr(r->bgp_next_hop, 1); nfw_v6(b, r->bgp_next_hop); break;
    case 10: NFW_EL(b, 10, 4); nfw_rand_addr(r->next_hop, 0); nfw_u32(b, nfw_v4(r->next_hop)); break;
    case 11: NFW_EL(b, 11, 16); nfw_rand_addr(r->next_hop, 1); nfw_v6(b, r->next_hop); break;
    case 12: NFW_EL(b, 12, 4); nfw_rand_addr(r->exporter, 0); nfw_u32(b, nfw_v4(r->exporter)); break;
    case 13: NFW_EL(b, 13, 16); nfw_rand_addr(r->exporter, 1); nfw_v6(b, r->exporter); break;
    case 14:
      NFW_EL(b, 14, 40);
      for (int i = 0; i < 10; i++) { r->mpls[i] = nfw_r32() & 0xFFFFFF; nfw_u32(b, r->mpls[i]); }
      break;
    case 15:
      NFW_EL(b, 15, 32);
      r->in_src_mac = nfw_rand() >> 16; r->out_dst_mac = nfw_rand() >> 16; r->in_dst_mac = nfw_rand() >> 16; r->out_src_mac = nfw_rand() >> 16;
      nfw_u64(b, r->in_src_mac); nfw_u64(b, r->out_dst_mac); nfw_u64(b, r->in_dst_mac); nfw_u64(b, r->out_src_mac);
      break;
    case 16: NFW_EL(b, 16, 8); r->next_as = nfw_r32(); r->prev_as = nfw_r32(); nfw_u32(b, r->next_as); nfw_u32(b, r->prev_as); break;
    case 17: NFW_EL(b, 17, 24); nfw_u64(b, nfw_rand()); nfw_u64(b, nfw_rand()); nfw_u64(b, nfw_rand()); break; /* latency: no field */
    case 18:
      NFW_EL(b, 18, 12);
      r->sampling = nfw_r32() % 1000 + 1; r->sampling_algo = (uint8_t)(nfw_rand() % 3);
      nfw_u32(b, 5); nfw_u32(b, r->sampling); nfw_u16(b, r->sampling_algo); nfw_u16(b, 1);
      break;
    case 19:
      NFW_EL(b, 19, 16);
      r->fw_xevent = (uint16_t)nfw_rand(); r->fw_event = (uint8_t)(nfw_rand() % 5 + 1);
      nfw_u64(b, 1700000000000ull); nfw_u32(b, nfw_r32()); nfw_u16(b, r->fw_xevent); nfw_u8(b, r->fw_event); nfw_u8(b, 0);
      break;
    case 20: NFW_EL(b, 20, 8); nfw_rand_addr(r->xsrc, 0); nfw_rand_addr(r->xdst, 0); nfw_u32(b, nfw_v4(r->xsrc)); nfw_u32(b, nfw_v4(r->xdst)); break;
    case 21: NFW_EL(b, 21, 32); nfw_rand_addr(r->xsrc, 1); nfw_rand_addr(r->xdst, 1); nfw_v6(b, r->xsrc); nfw_v6(b, r->xdst); break;
    case 22: NFW_EL(b, 22, 4); r->xsrc_port = (uint16_t)nfw_rand(); r->xdst_port = (uint16_t)nfw_rand(); nfw_u16(b, r->xsrc_port); nfw_u16(b, r->xdst_port); break;
    case 25:
      NFW_EL(b, 25, 16);
      r->nat_event = (uint8_t)(nfw_rand() % 10 + 1);
      nfw_u64(b, 1700000000000ull); nfw_u32(b, nfw_r32()); nfw_u8(b, r->nat_event); nfw_u8(b, 0); nfw_u16(b, 0);
      break;
    case 33: NFW_EL(b, 33, 16); r->obs_domain = nfw_r32(); nfw_u64(b, nfw_rand()); nfw_u32(b, r->obs_domain); nfw_u32(b, 0); break;
    case 36: NFW_EL(b, 36, 8); r->egress_vrf = nfw_r32(); r->ingress_vrf = nfw_r32(); nfw_u32(b, r->egress_vrf); nfw_u32(b, r->ingress_vrf); break;
  }
}

/* One V3 flow with the generic and address elements plus `ids` (in order). */
static void nfw_v3_flow(nfw_file_t *f, const uint16_t *ids, int n, int v6, uint16_t sysid, const nfw_exp_t *e,
                        ba_record_t *r) {
  nfw_rand_basics(r, v6);
  nfw_apply_exp(e, r);
  r->engine_type = (uint8_t)nfw_rand();
  r->engine_id = (uint8_t)nfw_rand();
  r->packets = (nfw_rand() >> 24) + 1;
  r->bytes = (nfw_rand() >> 12) + 1;
  r->received_ns = (r->last_ns / 1000000u + 5000) * 1000000u;
  nfw_buf_t b = {0};
  int nel = 0;
  nfw_u16(&b, 11); nfw_u16(&b, 0); nfw_u16(&b, 0); nfw_u8(&b, r->engine_type); nfw_u8(&b, r->engine_id);
  nfw_u16(&b, sysid); nfw_u8(&b, 0); nfw_u8(&b, 10);
  nfw_u16(&b, 1); nfw_u16(&b, 52); nel++;
  nfw_u64(&b, r->first_ns / 1000000u); nfw_u64(&b, r->last_ns / 1000000u); nfw_u64(&b, r->received_ns / 1000000u);
  nfw_u64(&b, r->packets); nfw_u64(&b, r->bytes); nfw_u16(&b, r->src_port); nfw_u16(&b, r->dst_port);
  nfw_u8(&b, r->proto); nfw_u8(&b, r->tcp_flags); nfw_u8(&b, 0); nfw_u8(&b, r->tos);
  if (v6) { nfw_u16(&b, 3); nfw_u16(&b, 36); nfw_v6(&b, r->src); nfw_v6(&b, r->dst); }
  else { nfw_u16(&b, 2); nfw_u16(&b, 12); nfw_u32(&b, nfw_v4(r->src)); nfw_u32(&b, nfw_v4(r->dst)); }
  nel++;
  for (int i = 0; i < n; i++) nfw_v3_el(&b, ids[i], r, &nel);
  nfw_set16(&b, 2, (uint16_t)b.n);
  nfw_set16(&b, 4, (uint16_t)nel);
  nfw_put(&f->blk, b.p, b.n);
  free(b.p);
  f->nrec++;
}

/* ---------- whole files ---------- */

/* A random extension map: at most one of each alternative group, in
 * ascending id order as nfdump writes them. */
static int nfw_rand_v1_map(uint16_t *ids) {
  static const uint16_t groups[][2] = {{4, 5}, {6, 7}, {8, 8}, {9, 10}, {11, 12}, {13, 13}, {14, 15}, {16, 17},
                                       {18, 19}, {20, 20}, {21, 21}, {22, 22}, {23, 24}, {25, 25}, {26, 26},
                                       {27, 27}, {37, 37}, {38, 38}, {39, 40}, {41, 41}, {45, 45}, {46, 46}, {48, 48}};
  int n = 0;
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
    if (nfw_rand() % 2) ids[n++] = groups[g][nfw_rand() % 2];
  return n;
}

/* A random V3 element list (one of the two event kinds at most: nfdump
 * prints both from one field). */
static int nfw_rand_v3_list(uint16_t *ids) {
  static const uint16_t pick[][2] = {{4, 4}, {5, 5}, {6, 6}, {7, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 14}, {15, 15},
                                     {16, 16}, {17, 17}, {18, 18}, {19, 25}, {20, 21}, {22, 22}, {33, 33}, {36, 36}};
  int n = 0;
  for (size_t g = 0; g < sizeof pick / sizeof pick[0]; g++)
    if (nfw_rand() % 2) ids[n++] = pick[g][nfw_rand() % 2];
  return n;
}

/* Decompresses one block payload (capacity 16 MiB); returns its length or -1. */
static long nfw_decompress(int comp, const uint8_t *in, size_t n, uint8_t *out, size_t cap) {
  if (comp == NFW_LZO) {
    lzo_uint ol = cap;
    return lzo1x_decompress_safe(in, n, out, &ol, NULL) == LZO_E_OK ? (long)ol : -1;
  }
  if (comp == NFW_LZ4) return LZ4_decompress_safe((const char *)in, (char *)out, (int)n, (int)cap);
  if (comp == NFW_BZ2) {
    unsigned ol = (unsigned)cap;
    return BZ2_bzBuffToBuffDecompress((char *)out, &ol, (char *)(uintptr_t)in, (unsigned)n, 0, 0) == BZ_OK ? (long)ol : -1;
  }
  if (comp == NFW_ZSTD) {
    size_t r = ZSTD_decompress(out, cap, in, n);
    return ZSTD_isError(r) ? -1 : (long)r;
  }
  if (n > cap) return -1;
  memcpy(out, in, n);
  return (long)n;
}

/* Rewrites an nfdump file's blocks with compression `to` (layout 1 has no
 * ZSTD code). Returns 0, or -1 if the input does not parse. */
static int nfw_recompress(const uint8_t *in, size_t n, int to, nfw_buf_t *out) {
  if (n < 4 || in[0] != 0x0C || in[1] != 0xA5) return -1;
  int layout = in[2];
  size_t hdr = layout == 2 ? 40 : 276;
  if (n < hdr || (layout == 1 && to == NFW_ZSTD)) return -1;
  int from;
  if (layout == 2) from = in[16];
  else from = in[4] & 1 ? NFW_LZO : in[4] & 8 ? NFW_BZ2 : in[4] & 0x10 ? NFW_LZ4 : NFW_NONE;
  out->n = 0;
  nfw_put(out, in, hdr);
  if (layout == 2) out->p[16] = (uint8_t)to;
  else { static const uint8_t flag[] = {0, 1, 8, 0x10}; out->p[4] = (uint8_t)((out->p[4] & ~0x19) | flag[to]); }
  uint8_t *plain = malloc(16u << 20);
  size_t off = hdr;
  uint32_t nblocks = layout == 2 ? (uint32_t)in[36] | (uint32_t)in[37] << 8 | (uint32_t)in[38] << 16 | (uint32_t)in[39] << 24 : 0;
  for (uint32_t k = 0; off + 12 <= n; k++) {
    if (layout == 2 && k == nblocks) /* the appendix moves with the blocks before it */
      for (int i = 0; i < 8; i++) out->p[24 + i] = (uint8_t)((uint64_t)out->n >> (8 * i));
    uint32_t size = (uint32_t)in[off + 4] | (uint32_t)in[off + 5] << 8 | (uint32_t)in[off + 6] << 16 | (uint32_t)in[off + 7] << 24;
    if (size > n - off - 12) { free(plain); return -1; }
    long pl = nfw_decompress(from, in + off + 12, size, plain, 16u << 20);
    if (pl < 0) { free(plain); return -1; }
    uint8_t *z;
    size_t zn = nfw_compress(to, plain, (size_t)pl, &z);
    size_t at = out->n;
    nfw_put(out, in + off, 12);
    nfw_set32(out, at + 4, (uint32_t)zn);
    nfw_put(out, z, zn);
    free(z);
    off += 12 + size;
  }
  free(plain);
  return off == n ? 0 : -1;
}

#endif

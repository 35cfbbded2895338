/* NetFlow v5's record finishing (nf_rec_finish_v5, which skips the general
 * record state) against the general one: random v5 datagrams decoded by the
 * decoder, and each record rebuilt here field by field as v5 defines it and
 * finished by nf_rec_finish with the state v5 gives (FIRST/LAST, counters,
 * addresses): the same records, byte for byte, and the same ones dropped.
 * Covers ICMP, uptime wraps (first > last; Cisco IOS's end past the uptime),
 * times at or before the epoch (an export clock of a few seconds), zero
 * times, sampling intervals, raw counters, re-based times and the
 * past/future window. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitarc/ingest.h"
#include "ingest/flow_internal.h"
#include "testsupport.h"

#include "flow_builder.h"

#define MAXR 4096 /* got_t's records (flow_builder.h) */

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng >> 16);
}

/* One v5 record's 48 bytes as the reference reads them. */
typedef struct v5in {
  uint32_t src, dst, nh, packets, bytes, first_up, last_up;
  uint16_t in_if, out_if, sport, dport, src_as, dst_as;
  uint8_t flags, proto, tos, smask, dmask;
} v5in_t;

static uint32_t pick_up(uint32_t uptime) {
  switch (rnd() % 6) {
    case 0: return 0;
    case 1: return rnd();                        /* anywhere, wraps included */
    case 2: return uptime + 100001 + rnd() % 5000; /* past the uptime: the IOS bug */
    case 3: return uptime - rnd() % 1000;
    default: return uptime > 200000 ? uptime - 200000 + rnd() % 200000 : rnd() % 1000;
  }
}

static void gen_rec(v5in_t *x, uint32_t uptime) {
  memset(x, 0, sizeof *x);
  x->src = rnd() % 4 ? rnd() : 0;
  x->dst = rnd();
  x->nh = rnd() % 2 ? rnd() : 0;
  x->packets = rnd() % 3 ? rnd() % 1000 : rnd();
  x->bytes = rnd();
  x->first_up = pick_up(uptime);
  x->last_up = rnd() % 4 ? x->first_up + rnd() % 60000 : pick_up(uptime);
  x->in_if = (uint16_t)rnd();
  x->out_if = (uint16_t)rnd();
  x->sport = (uint16_t)rnd();
  x->dport = (uint16_t)rnd();
  x->src_as = (uint16_t)rnd();
  x->dst_as = (uint16_t)rnd();
  static const uint8_t protos[] = {1, 6, 17, 58, 47, 0};
  x->proto = rnd() % 5 ? protos[rnd() % 6] : (uint8_t)rnd();
  x->flags = (uint8_t)rnd();
  x->tos = (uint8_t)rnd();
  x->smask = (uint8_t)(rnd() % 33);
  x->dmask = (uint8_t)(rnd() % 33);
}

static void put_rec(buf_t *b, const v5in_t *x) {
  u32(b, x->src); u32(b, x->dst); u32(b, x->nh); u16(b, x->in_if); u16(b, x->out_if);
  u32(b, x->packets); u32(b, x->bytes); u32(b, x->first_up); u32(b, x->last_up);
  u16(b, x->sport); u16(b, x->dport); u8(b, 0); u8(b, x->flags); u8(b, x->proto); u8(b, x->tos);
  u16(b, x->src_as); u16(b, x->dst_as); u8(b, x->smask); u8(b, x->dmask); u16(b, 0);
}

/* The record as v5 defines it, finished by the general nf_rec_finish of d
 * (d->cur: the exporter). Returns 0 to keep it. */
static int ref_rec(ba_flow_decoder_t *d, const nf_hdr_t *h, uint8_t et, uint8_t ei, uint16_t smp, uint32_t flags,
                   const v5in_t *x, ba_record_t *r) {
  memset(r, 0, sizeof *r);
  ba_addr_set_v4(r->src, x->src);
  ba_addr_set_v4(r->dst, x->dst);
  if (x->nh) ba_addr_set_v4(r->next_hop, x->nh);
  r->ipver = 4;
  r->in_if = x->in_if;
  r->out_if = x->out_if;
  r->packets = x->packets;
  r->bytes = x->bytes;
  r->src_port = x->sport;
  r->dst_port = x->dport;
  r->tcp_flags = x->flags;
  r->proto = x->proto;
  r->tos = x->tos;
  r->src_as = x->src_as;
  r->dst_as = x->dst_as;
  r->src_mask = x->smask;
  r->dst_mask = x->dmask;
  r->engine_type = et;
  r->engine_id = ei;
  uint32_t iv = smp & 0x3fff;
  if (iv) {
    r->sampling = iv;
    r->sampling_algo = (uint8_t)(smp >> 14);
    if (iv > 1 && !(flags & BA_FLOW_RAW_COUNTERS)) {
      r->packets *= iv;
      r->bytes *= iv;
    }
  }
  nf_rec_state_t s;
  nf_state_init(&s);
  s.first_up = x->first_up;
  s.last_up = x->last_up;
  s.have_bytes = s.have_pkts = s.have_addr = 1;
  return nf_rec_finish(d, h, r, &s);
}

static void run(uint32_t flags, uint32_t past_s, uint32_t future_s, int rounds) {
  ba_flow_decoder_opts_t o;
  ba_flow_decoder_opts_init(&o);
  o.flags = flags;
  o.past_s = past_s;
  o.future_s = future_s;
  ba_flow_decoder_t *d, *rd;
  assert_int_equal(ba_flow_decoder_create(&o, &d), 0);
  assert_int_equal(ba_flow_decoder_create(&o, &rd), 0);
  uint8_t ex[16];
  ba_addr_set_v4(ex, 0x0a0000fe);
  got_t *g = calloc(1, sizeof *g);
  ba_record_t *want = calloc(MAXR, sizeof *want);
  buf_t *b = calloc(1, sizeof *b);
  assert_non_null(g);
  assert_non_null(want);
  assert_non_null(b);
  /* the reference decoder's current exporter: ex (a datagram it drops) */
  assert_int_equal(ba_flow_decode(rd, ex, (const uint8_t[2]){0, 1}, 2, collect, g), 0);
  g->n = 0;
  size_t kept = 0, dropped = 0;
  for (int round = 0; round < rounds; round++) {
    b->n = 0;
    g->n = 0;
    size_t nw = 0;
    int nmsg = 1 + (int)(rnd() % 3);
    uint64_t received = (uint64_t)(1600000000u + rnd() % 100000) * NS_PER_S + rnd() % 1000000000u;
    for (int m = 0; m < nmsg; m++) {
      int cnt = 1 + (int)(rnd() % 30);
      uint32_t uptime = rnd() % 4 ? rnd() : rnd() % 300000;
      uint32_t secs = rnd() % 8 ? 1600000000u + rnd() % 100000 : rnd() % 8000, /* also before the uptime: times <= 0 */ nsecs = rnd() % 8 ? rnd() % 1000000000u : rnd();
      static const uint16_t smps[] = {0, 0, 1, 0x4000 | 10, 0x8000 | 100, 0x3fff};
      uint16_t smp = smps[rnd() % 6];
      uint8_t et = (uint8_t)rnd(), ei = (uint8_t)rnd();
      u16(b, 5); u16(b, (uint16_t)cnt); u32(b, uptime); u32(b, secs); u32(b, nsecs); u32(b, rnd());
      u8(b, et); u8(b, ei); u16(b, smp);
      nf_hdr_t h = {.version = 5, .uptime_ms = uptime, .received_ns = received, .domain = 0,
                    .export_ns = (uint64_t)secs * NS_PER_S + BA_MIN(nsecs, 999999999u)};
      for (int i = 0; i < cnt; i++) {
        v5in_t x;
        gen_rec(&x, uptime);
        put_rec(b, &x);
        if (ref_rec(rd, &h, et, ei, smp, flags, &x, &want[nw]) == 0) nw++;
        else dropped++;
      }
    }
    assert_int_equal(ba_flow_decode_at(d, ex, received, b->b, b->n, collect, g), 0);
    assert_int_equal(g->n, nw);
    for (size_t i = 0; i < nw; i++) {
      if (memcmp(&g->r[i], &want[i], sizeof want[i]) != 0) {
        fprintf(stderr, "round %d record %zu differs (flags %u)\n", round, i, flags);
        for (size_t k = 0; k < sizeof want[i]; k++)
          if (((const uint8_t *)&g->r[i])[k] != ((const uint8_t *)&want[i])[k])
            fprintf(stderr, "  byte %zu: %u, want %u\n", k, ((const uint8_t *)&g->r[i])[k],
                    ((const uint8_t *)&want[i])[k]);
        fail();
      }
    }
    kept += nw;
  }
  assert_true(kept > 0);
  if (past_s || future_s) assert_true(dropped > 0); /* the window dropped some: both ways alike */
  ba_flow_decoder_free(d);
  ba_flow_decoder_free(rd);
  free(g);
  free(want);
  free(b);
}

static void test_v5_default(void **st) {
  (void)st;
  run(0, 0, 0, 400);
}
static void test_v5_raw_rebase(void **st) {
  (void)st;
  run(BA_FLOW_RAW_COUNTERS | BA_FLOW_REBASE_TIME, 0, 0, 200);
}
static void test_v5_window(void **st) {
  (void)st;
  run(BA_FLOW_REBASE_TIME, 3600, 60, 200);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_v5_default),
      cmocka_unit_test(test_v5_raw_rebase),
      cmocka_unit_test(test_v5_window),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

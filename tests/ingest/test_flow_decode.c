/* NetFlow v5/v9 and IPFIX decoder on crafted datagrams whose expected fields
 * are known by construction: every time form, reduced-size counters,
 * variable-length and enterprise fields, IPv6, ICMP, options templates,
 * template withdrawal, held data sets, bad input (impossible lengths,
 * unknown templates, truncation, garbage, far-off times). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitarc/ingest.h"
#include "testsupport.h"

#include "flow_builder.h"

static ba_flow_decoder_t *mk(void) {
  ba_flow_decoder_t *d;
  assert_int_equal(ba_flow_decoder_create(NULL, &d), 0);
  return d;
}
static ba_ingest_counts_t counts(ba_flow_decoder_t *d) {
  ba_ingest_counts_t c;
  ba_flow_decoder_counts(d, &c);
  return c;
}

/* ---------- v5 ---------- */
static void test_v5(void **st) {
  (void)st;
  buf_t b = {{0}, 0};
  u16(&b, 5); u16(&b, 2); u32(&b, 100000); u32(&b, T0); u32(&b, 500000000); u32(&b, 7);
  u8(&b, 0); u8(&b, 0); u16(&b, 0);
  for (int i = 0; i < 2; i++) {
    u32(&b, 0x0a000001 + (uint32_t)i); u32(&b, 0x0a000101); u32(&b, 0); u16(&b, 3); u16(&b, 4);
    u32(&b, 10); u32(&b, 1000); u32(&b, 90000); u32(&b, 99000); /* first/last uptime ms */
    u16(&b, 1234); u16(&b, (uint16_t)(i ? 0x0303 : 80)); u8(&b, 0); u8(&b, 0x12); u8(&b, (uint8_t)(i ? 1 : 6)); u8(&b, 0x20);
    u16(&b, 65000); u16(&b, 65001); u8(&b, 24); u8(&b, 24); u16(&b, 0);
  }
  assert_int_equal(ba_flow_detect(b.b, b.n), 5);
  ba_flow_decoder_t *d = mk();
  got_t *g = calloc(1, sizeof(*g));
  assert_int_equal(ba_flow_decode(d, EXP_A, b.b, b.n, collect, g), 0);
  assert_int_equal(g->n, 2);
  ba_record_t *r = &g->r[0];
  assert_int_equal(ba_addr_get_v4(r->src), 0x0a000001);
  assert_int_equal(r->dst_port, 80);
  assert_int_equal(r->proto, 6);
  assert_int_equal(r->tcp_flags, 0x12);
  assert_int_equal(r->tos, 0x20);
  assert_int_equal(r->packets, 10);
  assert_int_equal(r->bytes, 1000);
  assert_int_equal(r->in_if, 3);
  assert_int_equal(r->out_if, 4);
  assert_int_equal(r->src_as, 65000);
  /* export time T0.5 s, uptime 100 s: FIRST at uptime 90 s = 10 s before export */
  assert_int_equal(r->first_ns, (uint64_t)T0 * SEC + 500000000ull - 10 * SEC);
  assert_int_equal(r->last_ns, (uint64_t)T0 * SEC + 500000000ull - 1 * SEC);
  assert_memory_equal(r->exporter, EXP_A, 16);
  /* ICMP: v5 carries type<<8|code in the destination port */
  assert_int_equal(g->r[1].proto, 1);
  assert_int_equal(g->r[1].icmp_type, 3);
  assert_int_equal(g->r[1].icmp_code, 3);
  assert_int_equal(g->r[1].dst_port, 0x0303);
  assert_int_equal(g->r[1].src_port, 0);
  /* A truncated copy: the one complete record survives, the datagram is counted. */
  g->n = 0;
  assert_int_equal(ba_flow_decode(d, EXP_A, b.b, 24 + 48 + 20, collect, g), 0);
  assert_int_equal(g->n, 1);
  ba_ingest_counts_t c = counts(d);
  assert_int_equal(c.dropped[BA_DROP_TRUNCATED], 1);
  assert_int_equal(c.records, 3);
  ba_flow_decoder_free(d);
  free(g);
}

/* ---------- v9: template, sysUpTime times, ICMP, IPv6, options, refresh ---------- */
static void test_v9(void **st) {
  (void)st;
  buf_t b = {{0}, 0};
  ba_flow_decoder_t *d = mk();
  got_t *g = calloc(1, sizeof(*g));
  /* datagram 1: data set for template 300 before its template exists (held) */
  v9_hdr(&b, 50000, T0, 7);
  size_t s = set_begin(&b, 300);
  u32(&b, 0x01020304); u32(&b, 0x05060708); u16(&b, 1000); u16(&b, 2000); u8(&b, 17);
  uN(&b, 123456, 3); /* IN_BYTES on 3 bytes (reduced size) */
  uN(&b, 9, 1);      /* IN_PKTS on 1 byte */
  u32(&b, 40000); u32(&b, 45000); u16(&b, 0); /* FIRST/LAST_SWITCHED, ICMP_TYPE unused */
  u8(&b, 0); u8(&b, 0); u8(&b, 0); /* padding */
  set_end(&b, s);
  assert_int_equal(ba_flow_detect(b.b, b.n), 9);
  assert_int_equal(ba_flow_decode(d, EXP_A, b.b, b.n, collect, g), 0);
  assert_int_equal(g->n, 0);
  /* datagram 2: the template, then an ICMP record and an options template + data */
  v9_hdr(&b, 60000, T0 + 10, 7);
  s = set_begin(&b, 0);
  u16(&b, 300); u16(&b, 10);
  u16(&b, 8); u16(&b, 4); u16(&b, 12); u16(&b, 4); u16(&b, 7); u16(&b, 2); u16(&b, 11); u16(&b, 2);
  u16(&b, 4); u16(&b, 1); u16(&b, 1); u16(&b, 3); u16(&b, 2); u16(&b, 1); u16(&b, 22); u16(&b, 4);
  u16(&b, 21); u16(&b, 4); u16(&b, 32); u16(&b, 2);
  set_end(&b, s);
  s = set_begin(&b, 300);
  u32(&b, 0x0a0a0a0a); u32(&b, 0x0b0b0b0b); u16(&b, 0); u16(&b, 0); u8(&b, 1);
  uN(&b, 84, 3); uN(&b, 1, 1); u32(&b, 59000); u32(&b, 59000); u16(&b, 0x0800);
  set_end(&b, s);
  s = set_begin(&b, 1); /* options template 301: scope system(1) len 4, sampling interval(34) len 4 */
  u16(&b, 301); u16(&b, 4); u16(&b, 4); u16(&b, 1); u16(&b, 4); u16(&b, 34); u16(&b, 4); u16(&b, 0);
  set_end(&b, s);
  s = set_begin(&b, 301);
  u32(&b, 1); u32(&b, 1000); u32(&b, 2); u32(&b, 100);
  set_end(&b, s);
  assert_int_equal(ba_flow_detect(b.b, b.n), 9);
  assert_int_equal(ba_flow_decode(d, EXP_A, b.b, b.n, collect, g), 0);
  assert_int_equal(g->n, 2);
  ba_record_t *r = &g->r[0]; /* the held record, decoded with its own header's times */
  assert_int_equal(ba_addr_get_v4(r->src), 0x01020304);
  assert_int_equal(r->src_port, 1000);
  assert_int_equal(r->dst_port, 2000);
  assert_int_equal(r->bytes, 123456);
  assert_int_equal(r->packets, 9);
  assert_int_equal(r->first_ns, (uint64_t)T0 * SEC - 10 * SEC);
  assert_int_equal(r->last_ns, (uint64_t)T0 * SEC - 5 * SEC);
  r = &g->r[1];
  assert_int_equal(r->proto, 1);
  assert_int_equal(r->icmp_type, 8);
  assert_int_equal(r->dst_port, 0x0800);
  assert_int_equal(r->first_ns, (uint64_t)(T0 + 10) * SEC - 1 * SEC);
  ba_ingest_counts_t c = counts(d);
  assert_int_equal(c.late_decoded, 1);
  assert_int_equal(c.options_templates, 1);
  assert_int_equal(c.options_records, 2);
  assert_int_equal(c.records, 2);
  /* Same template id from another source id is a different template: held. */
  v9_hdr(&b, 60000, T0 + 10, 8);
  s = set_begin(&b, 300);
  for (int i = 0; i < 30; i++) u8(&b, 0);
  set_end(&b, s);
  g->n = 0;
  assert_int_equal(ba_flow_decode(d, EXP_A, b.b, b.n, collect, g), 0);
  assert_int_equal(g->n, 0);
  /* ...and from another exporter too. */
  v9_hdr(&b, 60000, T0 + 10, 7);
  s = set_begin(&b, 300);
  for (int i = 0; i < 30; i++) u8(&b, 0);
  set_end(&b, s);
  assert_int_equal(ba_flow_decode(d, EXP_B, b.b, b.n, collect, g), 0);
  assert_int_equal(g->n, 0);
  /* Template refresh with another layout (IPv6) replaces the old one. */
  v9_hdr(&b, 60000, T0 + 20, 7);
  s = set_begin(&b, 0);
  u16(&b, 300); u16(&b, 5);
  u16(&b, 27); u16(&b, 16); u16(&b, 28); u16(&b, 16); u16(&b, 4); u16(&b, 1); u16(&b, 1); u16(&b, 8);
  u16(&b, 2); u16(&b, 8);
  set_end(&b, s);
  s = set_begin(&b, 300);
  uint8_t a6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  bytes(&b, a6, 16); a6[15] = 2; bytes(&b, a6, 16); u8(&b, 58); u64(&b, 5000000000ull); u64(&b, 3);
  set_end(&b, s);
  assert_int_equal(ba_flow_decode(d, EXP_A, b.b, b.n, collect, g), 0);
  assert_int_equal(g->n, 1);
  r = &g->r[0];
  assert_int_equal(r->ipver, 6);
  assert_int_equal(r->src[15], 1);
  assert_int_equal(r->dst[15], 2);
  /* The options records announced a generic sampler (element 34) of 1 in
   * 1000, then 1 in 100, for source id 7: counters are multiplied by the
   * rate in force, as nfdump does. */
  assert_int_equal(r->bytes, 5000000000ull * 100);
  assert_int_equal(r->packets, 3 * 100);
  assert_int_equal(r->sampling, 100);
  assert_int_equal(r->obs_domain, 7);
  assert_int_equal(r->first_ns, (uint64_t)(T0 + 20) * SEC); /* no time fields: export time */
  ba_flow_decoder_finish(d);
  c = counts(d);
  assert_int_equal(c.dropped[BA_DROP_UNKNOWN_TEMPLATE], 2); /* the other source id and exporter */
  ba_flow_decoder_free(d);
  free(g);
}

/* ---------- IPFIX: every time form, varlen, enterprise, withdrawal ---------- */
static void test_ipfix(void **st) {
  (void)st;
  buf_t b = {{0}, 0};
  ba_flow_decoder_t *d = mk();
  got_t *g = calloc(1, sizeof(*g));
  ipfix_hdr(&b, T0, 5);
  size_t s = set_begin(&b, 2);
  /* 400: src4, enterprise(4 bytes), dst4, interfaceName (varlen), octets(2), packets(4), start ms, end ms */
  u16(&b, 400); u16(&b, 8);
  u16(&b, 8); u16(&b, 4);
  u16(&b, 0x8000 | 100); u16(&b, 4); u32(&b, 29305);
  u16(&b, 12); u16(&b, 4);
  u16(&b, 82); u16(&b, 65535);
  u16(&b, 1); u16(&b, 2);
  u16(&b, 2); u16(&b, 4);
  u16(&b, 152); u16(&b, 8);
  u16(&b, 153); u16(&b, 8);
  /* 401: start/end seconds, microseconds (NTP), nanoseconds (NTP), delta microseconds */
  u16(&b, 401); u16(&b, 4); u16(&b, 150); u16(&b, 4); u16(&b, 151); u16(&b, 4); u16(&b, 7); u16(&b, 2); u16(&b, 11); u16(&b, 2);
  u16(&b, 402); u16(&b, 2); u16(&b, 154); u16(&b, 8); u16(&b, 157); u16(&b, 8);
  u16(&b, 403); u16(&b, 3); u16(&b, 158); u16(&b, 4); u16(&b, 159); u16(&b, 4); u16(&b, 4); u16(&b, 1);
  set_end(&b, s);
  s = set_begin(&b, 400);
  for (int i = 0; i < 3; i++) {
    u32(&b, 0xc0a80001u + (uint32_t)i); u32(&b, 0xdeadbeef); u32(&b, 0xc0a80101u);
    if (i == 0) { u8(&b, 3); bytes(&b, "et0", 3); }
    else if (i == 1) { u8(&b, 255); u16(&b, 300); for (int k = 0; k < 300; k++) u8(&b, 'x'); }
    else { u8(&b, 0); }
    u16(&b, (uint16_t)(100 + i)); u32(&b, (uint32_t)(1 + i));
    u64(&b, (uint64_t)T0 * 1000 - 2000); u64(&b, (uint64_t)T0 * 1000 - 1000 + (uint64_t)i);
  }
  set_end(&b, s);
  s = set_begin(&b, 401);
  u32(&b, T0 - 60); u32(&b, T0 - 30); u16(&b, 53); u16(&b, 5353);
  set_end(&b, s);
  s = set_begin(&b, 402);
  uint64_t ntp_s = (uint64_t)(T0 - 5) + 2208988800ull;
  u32(&b, (uint32_t)ntp_s); u32(&b, 0x80000000u); /* .5 s */
  u32(&b, (uint32_t)ntp_s + 1); u32(&b, 0x40000000u); /* .25 s */
  set_end(&b, s);
  s = set_begin(&b, 403);
  u32(&b, 3000000); u32(&b, 1000000); u8(&b, 6);
  u8(&b, 0); u8(&b, 0); u8(&b, 0); /* padding shorter than a record */
  set_end(&b, s);
  ipfix_end(&b);
  assert_int_equal(ba_flow_detect(b.b, b.n), 10);
  assert_int_equal(ba_flow_decode(d, EXP_A, b.b, b.n, collect, g), 0);
  assert_int_equal(g->n, 6);
  for (int i = 0; i < 3; i++) {
    ba_record_t *r = &g->r[i];
    assert_int_equal(ba_addr_get_v4(r->src), 0xc0a80001u + (uint32_t)i);
    assert_int_equal(ba_addr_get_v4(r->dst), 0xc0a80101u); /* not the enterprise value */
    assert_int_equal(r->bytes, 100 + (uint64_t)i);
    assert_int_equal(r->packets, 1 + (uint64_t)i);
    assert_int_equal(r->first_ns, (uint64_t)T0 * SEC - 2 * SEC);
    assert_int_equal(r->last_ns, (uint64_t)T0 * SEC - 1 * SEC + (uint64_t)i * 1000000ull);
  }
  assert_int_equal(g->r[3].first_ns, (uint64_t)(T0 - 60) * SEC);
  assert_int_equal(g->r[3].last_ns, (uint64_t)(T0 - 30) * SEC);
  assert_int_equal(g->r[3].dst_port, 5353);
  assert_int_equal(g->r[4].first_ns, (uint64_t)(T0 - 5) * SEC + 500000000ull);
  assert_int_equal(g->r[4].last_ns, (uint64_t)(T0 - 4) * SEC + 250000000ull);
  assert_int_equal(g->r[5].first_ns, (uint64_t)T0 * SEC - 3 * SEC);
  assert_int_equal(g->r[5].last_ns, (uint64_t)T0 * SEC - 1 * SEC);
  assert_int_equal(g->r[5].proto, 6);
  /* Withdraw 401 (field count 0); its next data set is held, then dropped. */
  ipfix_hdr(&b, T0 + 1, 5);
  s = set_begin(&b, 2); u16(&b, 401); u16(&b, 0); set_end(&b, s);
  s = set_begin(&b, 401); u32(&b, T0); u32(&b, T0); u16(&b, 1); u16(&b, 2); set_end(&b, s);
  ipfix_end(&b);
  g->n = 0;
  assert_int_equal(ba_flow_decode(d, EXP_A, b.b, b.n, collect, g), 0);
  assert_int_equal(g->n, 0);
  /* Withdraw all templates (id 2), then 400's data is held too. */
  ipfix_hdr(&b, T0 + 2, 5);
  s = set_begin(&b, 2); u16(&b, 2); u16(&b, 0); set_end(&b, s);
  s = set_begin(&b, 403); u32(&b, 1); u32(&b, 1); u8(&b, 17); set_end(&b, s);
  ipfix_end(&b);
  assert_int_equal(ba_flow_decode(d, EXP_A, b.b, b.n, collect, g), 0);
  assert_int_equal(g->n, 0);
  ba_flow_decoder_finish(d);
  ba_ingest_counts_t c = counts(d);
  assert_int_equal(c.template_withdrawals, 1 + 3);
  assert_int_equal(c.dropped[BA_DROP_UNKNOWN_TEMPLATE], 2);
  assert_int_equal(c.records, 6);
  ba_flow_decoder_free(d);
  free(g);
}

/* ---------- bad input ---------- */
static void test_bad_templates_and_times(void **st) {
  (void)st;
  buf_t b = {{0}, 0};
  ba_flow_decoder_opts_t o;
  ba_flow_decoder_opts_init(&o);
  o.future_s = 86400; /* at most one day after the export time */
  ba_flow_decoder_t *d;
  assert_int_equal(ba_flow_decoder_create(&o, &d), 0);
  got_t *g = calloc(1, sizeof(*g));
  /* Template whose records would be 17 * 4000 bytes: impossible. A good
   * template follows in the same set and must still be learned. */
  v9_hdr(&b, 1000, T0, 1);
  size_t s = set_begin(&b, 0);
  u16(&b, 500); u16(&b, 17);
  for (int i = 0; i < 17; i++) { u16(&b, 1); u16(&b, 4000); }
  u16(&b, 501); u16(&b, 3); u16(&b, 8); u16(&b, 4); u16(&b, 22); u16(&b, 4); u16(&b, 21); u16(&b, 4);
  set_end(&b, s);
  /* data for 501: one good flow, one 5 days after the export time */
  s = set_begin(&b, 501);
  u32(&b, 0x01010101); u32(&b, 500); u32(&b, 900);           /* good: 0.5 s .. 0.1 s before */
  u32(&b, 0x02020202); u32(&b, 1000 + 5 * 86400000u); u32(&b, 1000 + 5 * 86400000u); /* 5 days ahead */
  set_end(&b, s);
  assert_int_equal(ba_flow_decode(d, EXP_A, b.b, b.n, collect, g), 0);
  assert_int_equal(g->n, 1);
  assert_int_equal(ba_addr_get_v4(g->r[0].src), 0x01010101);
  ba_ingest_counts_t c = counts(d);
  assert_int_equal(c.dropped[BA_DROP_MALFORMED], 1);
  assert_int_equal(c.dropped[BA_DROP_TIME], 1);
  assert_true(strstr(ba_flow_decoder_errmsg(d), "outside the window") != NULL);
  /* IPFIX: flowStartSeconds in 1975 is kept as sent; the exporter's clock is
   * reported as suspicious. */
  ipfix_hdr(&b, T0, 0);
  s = set_begin(&b, 2); u16(&b, 600); u16(&b, 1); u16(&b, 150); u16(&b, 4); set_end(&b, s);
  s = set_begin(&b, 600); u32(&b, 157766400); u32(&b, T0 - 1); set_end(&b, s);
  ipfix_end(&b);
  g->n = 0;
  assert_int_equal(ba_flow_decode(d, EXP_B, b.b, b.n, collect, g), 0);
  assert_int_equal(g->n, 2);
  assert_int_equal(g->r[0].first_ns, 157766400ull * SEC);
  c = counts(d);
  assert_int_equal(c.dropped[BA_DROP_TIME], 1);
  assert_int_equal(c.clock_far, 2); /* the v9 flow 5 days ahead (dropped) and this one */
  /* Set length past the datagram; set length < 4; reserved set id; options
   * scope count 0; IPFIX length field larger than the datagram; garbage. */
  ipfix_hdr(&b, T0, 0);
  s = set_begin(&b, 600); u32(&b, T0); set_end(&b, s); put16(&b, s + 2, 400);
  ipfix_end(&b);
  assert_int_equal(ba_flow_detect(b.b, b.n), 0);
  assert_int_equal(ba_flow_decode(d, EXP_B, b.b, b.n, collect, g), 0);
  ipfix_hdr(&b, T0, 0); u16(&b, 600); u16(&b, 2); ipfix_end(&b);
  assert_int_equal(ba_flow_decode(d, EXP_B, b.b, b.n, collect, g), 0);
  ipfix_hdr(&b, T0, 0); s = set_begin(&b, 77); u32(&b, 0); set_end(&b, s); ipfix_end(&b);
  assert_int_equal(ba_flow_decode(d, EXP_B, b.b, b.n, collect, g), 0);
  ipfix_hdr(&b, T0, 0); s = set_begin(&b, 3); u16(&b, 700); u16(&b, 2); u16(&b, 0); u16(&b, 1); u16(&b, 4);
  u16(&b, 2); u16(&b, 4); set_end(&b, s); ipfix_end(&b);
  assert_int_equal(ba_flow_decode(d, EXP_B, b.b, b.n, collect, g), 0);
  ipfix_hdr(&b, T0, 0); s = set_begin(&b, 600); u32(&b, T0); set_end(&b, s); ipfix_end(&b);
  put16(&b, 2, (uint16_t)(b.n + 10));
  assert_int_equal(ba_flow_decode(d, EXP_B, b.b, b.n, collect, g), 0); /* record kept, message counted truncated */
  assert_int_equal(g->n, 3);
  c = counts(d);
  assert_int_equal(c.dropped[BA_DROP_TRUNCATED], 2);
  assert_int_equal(c.dropped[BA_DROP_MALFORMED], 1 + 3);
  const uint8_t junk[] = {0x00, 0x07, 0xff, 0xff, 1, 2, 3};
  assert_int_equal(ba_flow_decode(d, EXP_B, junk, sizeof(junk), collect, g), 0);
  assert_int_equal(ba_flow_decode(d, EXP_B, junk, 1, collect, g), 0);
  assert_int_equal(ba_flow_decode(d, EXP_B, junk, 0, collect, g), 0);
  c = counts(d);
  assert_int_equal(c.dropped[BA_DROP_VERSION], 1);
  assert_int_equal(c.dropped[BA_DROP_TRUNCATED], 4);
  /* Per-source accounting names both exporters. */
  ba_flow_source_t src[4];
  assert_int_equal(ba_flow_decoder_sources(d, src, 4), 2);
  ba_flow_decoder_free(d);
  free(g);
}

/* Held sets are bounded: beyond the limit the oldest is dropped and counted. */
static void test_pending_bound(void **st) {
  (void)st;
  ba_flow_decoder_opts_t o;
  ba_flow_decoder_opts_init(&o);
  o.pending_max_sets = 4;
  ba_flow_decoder_t *d;
  assert_int_equal(ba_flow_decoder_create(&o, &d), 0);
  buf_t b = {{0}, 0};
  for (int i = 0; i < 10; i++) {
    v9_hdr(&b, 1000, T0, 1);
    size_t s = set_begin(&b, (uint16_t)(900 + i)); u32(&b, 1); set_end(&b, s);
    assert_int_equal(ba_flow_decode(d, EXP_A, b.b, b.n, NULL, NULL), 0);
  }
  ba_ingest_counts_t c = counts(d);
  assert_int_equal(c.dropped[BA_DROP_UNKNOWN_TEMPLATE], 6);
  ba_flow_decoder_finish(d);
  c = counts(d);
  assert_int_equal(c.dropped[BA_DROP_UNKNOWN_TEMPLATE], 10);
  ba_flow_decoder_free(d);
}

/* Random mutations of a valid IPFIX message sent by another exporter never
 * crash and never change what the good exporter's datagrams decode to. */
static void test_garbage_between_good(void **st) {
  (void)st;
  buf_t good = {{0}, 0};
  ipfix_hdr(&good, T0, 1);
  size_t s = set_begin(&good, 2);
  u16(&good, 256); u16(&good, 4); u16(&good, 8); u16(&good, 4); u16(&good, 12); u16(&good, 4);
  u16(&good, 82); u16(&good, 65535); u16(&good, 1); u16(&good, 4);
  set_end(&good, s);
  s = set_begin(&good, 256);
  for (int i = 0; i < 20; i++) { u32(&good, (uint32_t)i); u32(&good, 7); u8(&good, 1); u8(&good, 'a'); u32(&good, (uint32_t)i * 10); }
  set_end(&good, s);
  ipfix_end(&good);
  got_t *ref = calloc(1, sizeof(*ref)), *g = calloc(1, sizeof(*g));
  ba_flow_decoder_t *d = mk();
  assert_int_equal(ba_flow_decode(d, EXP_A, good.b, good.n, collect, ref), 0);
  ba_flow_decoder_free(d);
  assert_int_equal(ref->n, 20);
  d = mk();
  ba_rng_t rng;
  ba_rng_seed(&rng, 42);
  buf_t bad;
  for (int it = 0; it < 3000; it++) {
    memcpy(bad.b, good.b, good.n);
    bad.n = good.n;
    int nm = 1 + (int)ba_rng_below(&rng, 8);
    for (int k = 0; k < nm; k++) bad.b[ba_rng_below(&rng, bad.n)] = (uint8_t)ba_rng_next(&rng);
    size_t len = ba_rng_below(&rng, 4) ? bad.n : ba_rng_below(&rng, bad.n + 1);
    ba_flow_decode(d, EXP_B, bad.b, len, NULL, NULL);
    if (it % 100 == 0) {
      g->n = 0;
      assert_int_equal(ba_flow_decode(d, EXP_A, good.b, good.n, collect, g), 0);
      assert_int_equal(g->n, ref->n);
      for (size_t i = 0; i < g->n; i++) {
        assert_memory_equal(g->r[i].src, ref->r[i].src, 16);
        assert_int_equal(g->r[i].bytes, ref->r[i].bytes);
      }
    }
  }
  ba_flow_decoder_free(d);
  free(ref);
  free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_v5),
    cmocka_unit_test(test_v9),
    cmocka_unit_test(test_ipfix),
    cmocka_unit_test(test_bad_templates_and_times),
    cmocka_unit_test(test_pending_bound),
    cmocka_unit_test(test_garbage_between_good),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The decoder edges of issue 15 on generated datagrams whose every field is
 * known by construction: concatenated NetFlow v5 and IPFIX messages,
 * variable-length elements (1- and 3-byte prefixes) in v9 and IPFIX,
 * RFC 5103 biflows, Cisco ASA NSEL counters and events, every extended
 * record field, options templates (samplers, interface names), template
 * withdrawal and reuse, far-off clocks and re-basing, sFlow v5 samples, and
 * the drop reasons of the reports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitarc/ingest.h"
#include "testsupport.h"

#include "flow_builder.h"

static ba_flow_decoder_t *mk_flags(uint32_t flags) {
  ba_flow_decoder_opts_t o;
  ba_flow_decoder_opts_init(&o);
  o.flags = flags;
  ba_flow_decoder_t *d;
  assert_int_equal(ba_flow_decoder_create(&o, &d), 0);
  return d;
}
static ba_ingest_counts_t counts(ba_flow_decoder_t *d) {
  ba_ingest_counts_t c;
  ba_flow_decoder_counts(d, &c);
  return c;
}
static int addr_is(const uint8_t a[16], uint32_t x) { return ba_addr_is_v4(a) && ba_addr_get_v4(a) == x; }
/* The template report entry of (exporter, id), or NULL. */
static const ba_flow_template_info_t *tmpl_info(ba_flow_decoder_t *d, const uint8_t ex[16], uint16_t id) {
  static ba_flow_template_info_t t[256];
  size_t n = ba_flow_decoder_templates(d, t, 256);
  for (size_t i = 0; i < n && i < 256; i++)
    if (t[i].id == id && !memcmp(t[i].exporter, ex, 16)) return &t[i];
  return NULL;
}

/* ---------- NetFlow v5: 12 messages, 30 records in one datagram ---------- */
static void v5_msg(buf_t *b, int nrec, uint16_t smp, uint32_t base) {
  u16(b, 5); u16(b, (uint16_t)nrec); u32(b, 100000); u32(b, T0); u32(b, 0); u32(b, base);
  u8(b, 3); u8(b, 9); u16(b, smp);
  for (int i = 0; i < nrec; i++) {
    u32(b, base + (uint32_t)i); u32(b, 0x0a000101); u32(b, 0x0a0000fe); u16(b, 1); u16(b, 2);
    u32(b, 10); u32(b, 1000); u32(b, 90000); u32(b, 99000);
    u16(b, 1234); u16(b, 80); u8(b, 0); u8(b, 0x1b); u8(b, 6); u8(b, 0x28);
    u16(b, 65001); u16(b, 65002); u8(b, 24); u8(b, 16); u16(b, 0);
  }
}

static void test_v5_concatenated(void **st) {
  (void)st;
  static const int per[12] = {3, 3, 3, 3, 2, 2, 2, 2, 3, 3, 2, 2};
  buf_t *b = calloc(1, sizeof(*b));
  uint32_t base = 0x0b000000;
  for (int m = 0; m < 12; m++) {
    v5_msg(b, per[m], m == 4 ? (uint16_t)(0x4000 | 10) : 0, base);
    base += (uint32_t)per[m];
  }
  assert_int_equal(ba_flow_detect(b->b, b->n), 5);
  for (int raw = 0; raw < 2; raw++) {
    ba_flow_decoder_t *d = mk_flags(raw ? BA_FLOW_RAW_COUNTERS : 0);
    got_t *g = calloc(1, sizeof(*g));
    assert_int_equal(ba_flow_decode(d, EXP_A, b->b, b->n, collect, g), 0);
    assert_int_equal(g->n, 30);
    for (size_t i = 0; i < 30; i++) {
      const ba_record_t *r = &g->r[i];
      assert_true(addr_is(r->src, 0x0b000000 + (uint32_t)i));
      assert_true(addr_is(r->next_hop, 0x0a0000fe));
      assert_int_equal(r->src_mask, 24);
      assert_int_equal(r->dst_mask, 16);
      assert_int_equal(r->engine_type, 3);
      assert_int_equal(r->engine_id, 9);
      assert_int_equal(r->first_ns, (uint64_t)(T0 - 10) * SEC);
      assert_int_equal(r->last_ns, (uint64_t)(T0 - 1) * SEC);
      int sampled = i >= 12 && i < 14; /* message 5 holds records 12 and 13 */
      assert_int_equal(r->sampling, sampled ? 10 : 0);
      assert_int_equal(r->sampling_algo, sampled ? 1 : 0);
      assert_int_equal(r->packets, sampled && !raw ? 100 : 10);
      assert_int_equal(r->bytes, sampled && !raw ? 10000 : 1000);
    }
    ba_ingest_counts_t c = counts(d);
    assert_int_equal(c.datagrams, 1);
    assert_int_equal(c.messages, 12);
    assert_int_equal(ba_ingest_counts_dropped(&c), 0);
    ba_flow_decoder_free(d);
    free(g);
  }
  /* Trailing bytes that are no v5 message: the 30 records are kept, the
   * rest is counted malformed with its offset. */
  size_t good = b->n;
  for (int i = 0; i < 10; i++) u8(b, 0xee);
  assert_int_equal(ba_flow_detect(b->b, b->n), 0);
  ba_flow_decoder_t *d = mk_flags(0);
  got_t *g = calloc(1, sizeof(*g));
  assert_int_equal(ba_flow_decode(d, EXP_A, b->b, b->n, collect, g), 0);
  assert_int_equal(g->n, 30);
  ba_ingest_counts_t c = counts(d);
  assert_int_equal(c.dropped[BA_DROP_MALFORMED], 1);
  char want[64];
  snprintf(want, sizeof(want), "at offset %zu", good);
  assert_non_null(strstr(ba_flow_decoder_errmsg(d), want));
  ba_flow_source_t src[2];
  assert_int_equal(ba_flow_decoder_sources(d, src, 2), 1);
  assert_non_null(strstr(src[0].last_error, want));
  ba_flow_decoder_free(d);
  free(g);
  free(b);
}

/* ---------- variable-length elements in v9 and IPFIX ---------- */
static void varlen_template(buf_t *b, uint16_t set_id, uint16_t tid) {
  size_t s = set_begin(b, set_id);
  u16(b, tid); u16(b, 5);
  u16(b, 8); u16(b, 4); u16(b, 82); u16(b, 65535); u16(b, 12); u16(b, 4); u16(b, 1); u16(b, 4); u16(b, 2); u16(b, 4);
  set_end(b, s);
}

static void test_varlen(void **st) {
  (void)st;
  buf_t *b = calloc(1, sizeof(*b));
  for (int ipfix = 0; ipfix < 2; ipfix++) {
    ba_flow_decoder_t *d = mk_flags(0);
    got_t *g = calloc(1, sizeof(*g));
    if (ipfix) ipfix_hdr(b, T0, 1);
    else v9_hdr(b, 1000, T0, 1);
    varlen_template(b, ipfix ? 2 : 0, 400);
    size_t s = set_begin(b, 400);
    u32(b, 0x01010101); u8(b, 5); bytes(b, "eth0x", 5); u32(b, 0x02020202); u32(b, 500); u32(b, 5);
    u32(b, 0x03030303); u8(b, 255); u16(b, 300);
    for (int i = 0; i < 300; i++) u8(b, 'a');
    u32(b, 0x04040404); u32(b, 700); u32(b, 7);
    u32(b, 0x05050505); u8(b, 0); u32(b, 0x06060606); u32(b, 1); u32(b, 1); /* empty value */
    set_end(b, s);
    if (ipfix) ipfix_end(b);
    assert_int_equal(ba_flow_detect(b->b, b->n), ipfix ? 10 : 9);
    assert_int_equal(ba_flow_decode(d, EXP_A, b->b, b->n, collect, g), 0);
    assert_int_equal(g->n, 3);
    assert_true(addr_is(g->r[0].src, 0x01010101) && addr_is(g->r[0].dst, 0x02020202));
    assert_int_equal(g->r[0].bytes, 500);
    assert_int_equal(g->r[0].packets, 5);
    assert_true(addr_is(g->r[1].src, 0x03030303) && addr_is(g->r[1].dst, 0x04040404));
    assert_int_equal(g->r[1].bytes, 700);
    assert_true(addr_is(g->r[2].dst, 0x06060606));
    const ba_flow_template_info_t *t = tmpl_info(d, EXP_A, 400);
    assert_non_null(t);
    assert_int_equal(t->varlen, 1);
    assert_int_equal(t->records, 3);
    assert_int_equal(t->stored, 3);
    /* A 3-byte prefix announcing more than the set holds: the record is
     * dropped, the reason names the template, record, field and offset. */
    if (ipfix) ipfix_hdr(b, T0, 1);
    else v9_hdr(b, 1000, T0, 1);
    s = set_begin(b, 400);
    u32(b, 0x01010101); u8(b, 5); bytes(b, "eth0x", 5); u32(b, 0x02020202); u32(b, 500); u32(b, 5);
    u32(b, 0x03030303); u8(b, 255); u16(b, 2000); bytes(b, "shortshortshortshort", 20);
    set_end(b, s);
    if (ipfix) ipfix_end(b);
    g->n = 0;
    assert_int_equal(ba_flow_decode(d, EXP_A, b->b, b->n, collect, g), 0);
    assert_int_equal(g->n, 1);
    t = tmpl_info(d, EXP_A, 400);
    assert_int_equal(t->dropped[BA_DROP_MALFORMED], 1);
    assert_non_null(strstr(t->last_drop, "template 400"));
    assert_non_null(strstr(t->last_drop, "record 1 at set offset 22"));
    assert_non_null(strstr(t->last_drop, "field 1 (element 82, variable length)"));
    ba_flow_decoder_free(d);
    free(g);
  }
  free(b);
}

/* ---------- RFC 5103 biflows, out counters, Cisco ASA NSEL ---------- */
static void test_biflow_and_nsel(void **st) {
  (void)st;
  buf_t b = {{0}, 0};
  ba_flow_decoder_t *d = mk_flags(0);
  got_t *g = calloc(1, sizeof(*g));
  ipfix_hdr(&b, T0, 0);
  size_t s = set_begin(&b, 2);
  u16(&b, 500); u16(&b, 11);
  u16(&b, 8); u16(&b, 4); u16(&b, 12); u16(&b, 4); u16(&b, 4); u16(&b, 1);
  u16(&b, 1); u16(&b, 8); u16(&b, 2); u16(&b, 8); u16(&b, 6); u16(&b, 2);
  u16(&b, 0x8001); u16(&b, 8); u32(&b, 29305); u16(&b, 0x8002); u16(&b, 4); u32(&b, 29305);
  u16(&b, 0x8006); u16(&b, 2); u32(&b, 29305);
  u16(&b, 0x8005); u16(&b, 1); u32(&b, 29305); /* reverse ToS: not the forward ToS */
  u16(&b, 5); u16(&b, 1);
  u16(&b, 501); u16(&b, 5);
  u16(&b, 8); u16(&b, 4); u16(&b, 1); u16(&b, 4); u16(&b, 2); u16(&b, 4); u16(&b, 23); u16(&b, 4); u16(&b, 24); u16(&b, 4);
  set_end(&b, s);
  s = set_begin(&b, 500);
  u32(&b, 0x0a000001); u32(&b, 0x0a000002); u8(&b, 6); u64(&b, 1000); u64(&b, 10); u16(&b, 0x02);
  u64(&b, 5000); u32(&b, 20); u16(&b, 0x12); u8(&b, 0x40); u8(&b, 0x20);
  set_end(&b, s);
  s = set_begin(&b, 501);
  u32(&b, 0x0a000003); u32(&b, 300); u32(&b, 3); u32(&b, 900); u32(&b, 9);
  set_end(&b, s);
  ipfix_end(&b);
  assert_int_equal(ba_flow_decode(d, EXP_A, b.b, b.n, collect, g), 0);
  assert_int_equal(g->n, 2);
  ba_record_t *r = &g->r[0];
  assert_int_equal(r->bytes, 1000);
  assert_int_equal(r->packets, 10);
  assert_int_equal(r->out_bytes, 5000);
  assert_int_equal(r->out_packets, 20);
  assert_int_equal(r->tcp_flags, 0x12);
  assert_int_equal(r->tos, 0x20);
  r = &g->r[1];
  assert_int_equal(r->out_bytes, 900);
  assert_int_equal(r->out_packets, 9);
  /* NetFlow v9 from a Cisco ASA: counters only in the initiator/responder
   * elements, events, NAT, and the NSEL 40000-range variants. */
  v9_hdr(&b, 1000, T0, 0);
  s = set_begin(&b, 0);
  u16(&b, 600); u16(&b, 14);
  u16(&b, 8); u16(&b, 4); u16(&b, 12); u16(&b, 4); u16(&b, 4); u16(&b, 1);
  u16(&b, 231); u16(&b, 4); u16(&b, 232); u16(&b, 4); u16(&b, 298); u16(&b, 4); u16(&b, 299); u16(&b, 4);
  u16(&b, 233); u16(&b, 1); u16(&b, 33002); u16(&b, 2); u16(&b, 40001); u16(&b, 4); u16(&b, 226); u16(&b, 4);
  u16(&b, 40003); u16(&b, 2); u16(&b, 228); u16(&b, 2); u16(&b, 152); u16(&b, 8);
  set_end(&b, s);
  s = set_begin(&b, 600);
  u32(&b, 0xc0a80001); u32(&b, 0x08080808); u8(&b, 17); u32(&b, 4444); u32(&b, 8888); u32(&b, 4); u32(&b, 8);
  u8(&b, 2); u16(&b, 2030); u32(&b, 0x01020304); u32(&b, 0x05060708); u16(&b, 40000); u16(&b, 53);
  u64(&b, (uint64_t)(T0 - 3) * 1000);
  set_end(&b, s);
  g->n = 0;
  assert_int_equal(ba_flow_decode(d, EXP_B, b.b, b.n, collect, g), 0);
  assert_int_equal(g->n, 1);
  r = &g->r[0];
  assert_int_equal(r->bytes, 4444);
  assert_int_equal(r->out_bytes, 8888);
  assert_int_equal(r->packets, 4);
  assert_int_equal(r->out_packets, 8);
  assert_int_equal(r->fw_event, 2);
  assert_int_equal(r->fw_xevent, 2030);
  assert_true(addr_is(r->xsrc, 0x01020304) && addr_is(r->xdst, 0x05060708));
  assert_int_equal(r->xsrc_port, 40000);
  assert_int_equal(r->xdst_port, 53);
  assert_int_equal(r->first_ns, (uint64_t)(T0 - 3) * SEC);
  assert_int_equal(r->last_ns, r->first_ns); /* no end element: the start */
  ba_flow_decoder_free(d);
  free(g);
}

/* ---------- every extended field from its element ---------- */
static void test_extended_fields(void **st) {
  (void)st;
  buf_t b = {{0}, 0};
  ba_flow_decoder_t *d = mk_flags(0);
  got_t *g = calloc(1, sizeof(*g));
  static const uint16_t t700[][2] = {{8, 4}, {12, 4}, {9, 1}, {13, 1}, {15, 4}, {18, 4}, {16, 4}, {17, 4},
                                     {55, 1}, {56, 6}, {57, 6}, {80, 6}, {81, 6}, {58, 2}, {59, 2}, {61, 1},
                                     {70, 3}, {71, 3}, {128, 4}, {129, 4}, {234, 4}, {235, 4}, {230, 1},
                                     {38, 1}, {39, 1}, {3, 4}, {10, 4}, {14, 4}, {1, 4}, {2, 4}, {34, 4}, {35, 1}};
  size_t nf = sizeof(t700) / sizeof(t700[0]);
  v9_hdr(&b, 1000, T0, 0x0102);
  size_t s = set_begin(&b, 0);
  u16(&b, 700); u16(&b, (uint16_t)nf);
  for (size_t i = 0; i < nf; i++) { u16(&b, t700[i][0]); u16(&b, t700[i][1]); }
  u16(&b, 701); u16(&b, 9);
  u16(&b, 27); u16(&b, 16); u16(&b, 28); u16(&b, 16); u16(&b, 62); u16(&b, 16); u16(&b, 63); u16(&b, 16);
  u16(&b, 29); u16(&b, 1); u16(&b, 30); u16(&b, 1); u16(&b, 281); u16(&b, 16); u16(&b, 282); u16(&b, 16);
  u16(&b, 149); u16(&b, 4);
  set_end(&b, s);
  s = set_begin(&b, 700);
  u32(&b, 0x0a000001); u32(&b, 0x0a000002); u8(&b, 23); u8(&b, 17); u32(&b, 0x0a0000fe); u32(&b, 0xc6336401);
  u32(&b, 64500); u32(&b, 4200000000u); u8(&b, 0xb8);
  uN(&b, 0x001122334455ull, 6); uN(&b, 0x66778899aabbull, 6); uN(&b, 0x0c0d0e0f1011ull, 6); uN(&b, 0x121314151617ull, 6);
  u16(&b, 100); u16(&b, 200); u8(&b, 1);
  uN(&b, (16000u << 4) | (5 << 1), 3); uN(&b, (17000u << 4) | 1, 3);
  u32(&b, 64501); u32(&b, 64502); u32(&b, 11); u32(&b, 12); u8(&b, 7); u8(&b, 0); u8(&b, 0); u32(&b, 4);
  u32(&b, 33); u32(&b, 44); u32(&b, 1500); u32(&b, 3); u32(&b, 64); u8(&b, 2);
  set_end(&b, s);
  s = set_begin(&b, 701);
  uint8_t a6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  for (int k = 1; k <= 6; k++) {
    a6[15] = (uint8_t)k;
    bytes(&b, a6, 16);
    if (k == 4) { u8(&b, 48); u8(&b, 56); }
  }
  u32(&b, 77);
  set_end(&b, s);
  assert_int_equal(ba_flow_decode(d, EXP_A, b.b, b.n, collect, g), 0);
  assert_int_equal(g->n, 2);
  const ba_record_t *r = &g->r[0];
  assert_int_equal(r->src_mask, 23);
  assert_int_equal(r->dst_mask, 17);
  assert_true(addr_is(r->next_hop, 0x0a0000fe));
  assert_true(addr_is(r->bgp_next_hop, 0xc6336401));
  assert_int_equal(r->src_as, 64500);
  assert_int_equal(r->dst_as, 4200000000u);
  assert_int_equal(r->dst_tos, 0xb8);
  assert_int_equal(r->in_src_mac, 0x001122334455ull);
  assert_int_equal(r->out_dst_mac, 0x66778899aabbull);
  assert_int_equal(r->in_dst_mac, 0x0c0d0e0f1011ull);
  assert_int_equal(r->out_src_mac, 0x121314151617ull);
  assert_int_equal(r->vlan, 100);
  assert_int_equal(r->dst_vlan, 200);
  assert_int_equal(r->direction, 1);
  assert_int_equal(r->mpls[0], (16000u << 4) | (5 << 1));
  assert_int_equal(r->mpls[1], (17000u << 4) | 1);
  assert_int_equal(r->mpls[2], 0);
  assert_int_equal(r->next_as, 64501);
  assert_int_equal(r->prev_as, 64502);
  assert_int_equal(r->ingress_vrf, 11);
  assert_int_equal(r->egress_vrf, 12);
  assert_int_equal(r->nat_event, 7);
  /* engine elements 0: taken from the v9 source id 0x0102, as nfdump */
  assert_int_equal(r->engine_type, 1);
  assert_int_equal(r->engine_id, 2);
  assert_int_equal(r->aggr_flows, 4);
  assert_int_equal(r->in_if, 33);
  assert_int_equal(r->out_if, 44);
  assert_int_equal(r->bytes, 1500); /* a data-record interval is kept, not applied (as nfdump) */
  assert_int_equal(r->sampling, 64);
  assert_int_equal(r->sampling_algo, 2);
  assert_int_equal(r->obs_domain, 0x0102);
  r = &g->r[1];
  assert_int_equal(r->ipver, 6);
  assert_int_equal(r->next_hop[15], 3);
  assert_int_equal(r->bgp_next_hop[15], 4);
  assert_int_equal(r->src_mask, 48);
  assert_int_equal(r->dst_mask, 56);
  assert_int_equal(r->xsrc[15], 5);
  assert_int_equal(r->xdst[15], 6);
  assert_int_equal(r->obs_domain, 77); /* element 149 */
  ba_flow_decoder_free(d);
  free(g);
}

/* ---------- options: samplers, interface names; withdrawal and reuse ---------- */
static void test_options_and_withdrawal(void **st) {
  (void)st;
  buf_t b = {{0}, 0};
  ba_flow_decoder_t *d = mk_flags(0);
  got_t *g = calloc(1, sizeof(*g));
  ipfix_hdr(&b, T0, 5);
  size_t s = set_begin(&b, 3);
  u16(&b, 800); u16(&b, 4); u16(&b, 1);
  u16(&b, 302); u16(&b, 4); u16(&b, 305); u16(&b, 4); u16(&b, 306); u16(&b, 4); u16(&b, 304); u16(&b, 1);
  u16(&b, 801); u16(&b, 3); u16(&b, 1);
  u16(&b, 10); u16(&b, 4); u16(&b, 82); u16(&b, 65535); u16(&b, 83); u16(&b, 65535);
  set_end(&b, s);
  s = set_begin(&b, 2);
  u16(&b, 802); u16(&b, 5);
  u16(&b, 8); u16(&b, 4); u16(&b, 12); u16(&b, 4); u16(&b, 302); u16(&b, 4); u16(&b, 1); u16(&b, 4); u16(&b, 2); u16(&b, 4);
  set_end(&b, s);
  s = set_begin(&b, 800);
  u32(&b, 7); u32(&b, 1); u32(&b, 99); u8(&b, 2);
  set_end(&b, s);
  s = set_begin(&b, 801);
  u32(&b, 3); u8(&b, 8); bytes(&b, "ge-0/0/1", 8); u8(&b, 6); bytes(&b, "uplink", 6);
  set_end(&b, s);
  s = set_begin(&b, 802);
  u32(&b, 0x0a000001); u32(&b, 0x0a000002); u32(&b, 7); u32(&b, 10); u32(&b, 1);
  u32(&b, 0x0a000001); u32(&b, 0x0a000002); u32(&b, 9); u32(&b, 10); u32(&b, 1);
  set_end(&b, s);
  ipfix_end(&b);
  assert_int_equal(ba_flow_decode(d, EXP_A, b.b, b.n, collect, g), 0);
  assert_int_equal(g->n, 2);
  assert_int_equal(g->r[0].bytes, 1000); /* sampler 7: 1 packet in 100 */
  assert_int_equal(g->r[0].packets, 100);
  assert_int_equal(g->r[0].sampling, 100);
  assert_int_equal(g->r[0].sampling_algo, 2);
  assert_int_equal(g->r[1].bytes, 10); /* sampler 9 was never announced */
  assert_int_equal(g->r[1].sampling, 0);
  ba_flow_sampler_t sm[4];
  assert_int_equal(ba_flow_decoder_samplers(d, sm, 4), 1);
  assert_int_equal(sm[0].id, 7);
  assert_int_equal(sm[0].domain, 5);
  assert_int_equal(sm[0].packet_interval, 1);
  assert_int_equal(sm[0].space_interval, 99);
  ba_flow_ifname_t fn[4];
  assert_int_equal(ba_flow_decoder_ifnames(d, fn, 4), 1);
  assert_int_equal(fn[0].ifindex, 3);
  assert_string_equal(fn[0].name, "ge-0/0/1");
  assert_string_equal(fn[0].description, "uplink");
  ba_ingest_counts_t c = counts(d);
  assert_int_equal(c.options_records, 2);
  /* Withdrawal of 802: its data sets are dropped with the reason until it
   * is defined again (with another layout). */
  ipfix_hdr(&b, T0 + 1, 5);
  s = set_begin(&b, 2); u16(&b, 802); u16(&b, 0); set_end(&b, s);
  s = set_begin(&b, 802); u32(&b, 1); u32(&b, 2); u32(&b, 7); u32(&b, 10); u32(&b, 1); set_end(&b, s);
  ipfix_end(&b);
  g->n = 0;
  assert_int_equal(ba_flow_decode(d, EXP_A, b.b, b.n, collect, g), 0);
  assert_int_equal(g->n, 0);
  const ba_flow_template_info_t *t = tmpl_info(d, EXP_A, 802);
  assert_int_equal(t->withdrawn, 1);
  c = counts(d);
  assert_int_equal(c.template_withdrawals, 1);
  assert_int_equal(c.dropped[BA_DROP_UNKNOWN_TEMPLATE], 1);
  assert_non_null(strstr(ba_flow_decoder_errmsg(d), "withdrawn"));
  ipfix_hdr(&b, T0 + 2, 5);
  s = set_begin(&b, 2); u16(&b, 802); u16(&b, 2); u16(&b, 8); u16(&b, 4); u16(&b, 1); u16(&b, 8); set_end(&b, s);
  s = set_begin(&b, 802); u32(&b, 0x0a000009); u64(&b, 123); set_end(&b, s);
  ipfix_end(&b);
  assert_int_equal(ba_flow_decode(d, EXP_A, b.b, b.n, collect, g), 0);
  assert_int_equal(g->n, 1);
  assert_true(addr_is(g->r[0].src, 0x0a000009));
  assert_int_equal(g->r[0].bytes, 123);
  t = tmpl_info(d, EXP_A, 802);
  assert_int_equal(t->withdrawn, 0);
  assert_int_equal(t->definitions, 2);
  assert_int_equal(t->records, 3);
  /* Withdraw all data templates (id 2): the options templates stay. */
  ipfix_hdr(&b, T0 + 3, 5);
  s = set_begin(&b, 2); u16(&b, 2); u16(&b, 0); set_end(&b, s);
  ipfix_end(&b);
  assert_int_equal(ba_flow_decode(d, EXP_A, b.b, b.n, collect, g), 0);
  assert_int_equal(tmpl_info(d, EXP_A, 802)->withdrawn, 1);
  assert_int_equal(tmpl_info(d, EXP_A, 800)->withdrawn, 0);
  ba_flow_decoder_free(d);
  free(g);
}

/* ---------- clocks: a 1970 exporter, re-basing, end before start ---------- */
static void test_clocks(void **st) {
  (void)st;
  buf_t b = {{0}, 0};
  for (int rebase = 0; rebase < 2; rebase++) {
    ba_flow_decoder_t *d = mk_flags(rebase ? BA_FLOW_REBASE_TIME : 0);
    got_t *g = calloc(1, sizeof(*g));
    v9_hdr(&b, 50000, 100, 0); /* export time 100 s after the epoch */
    size_t s = set_begin(&b, 0);
    u16(&b, 300); u16(&b, 3); u16(&b, 8); u16(&b, 4); u16(&b, 22); u16(&b, 4); u16(&b, 21); u16(&b, 4);
    set_end(&b, s);
    s = set_begin(&b, 300); u32(&b, 1); u32(&b, 40000); u32(&b, 45000); set_end(&b, s);
    uint64_t recv = (uint64_t)T0 * SEC;
    assert_int_equal(ba_flow_decode_at(d, EXP_A, recv, b.b, b.n, collect, g), 0);
    assert_int_equal(g->n, 1);
    uint64_t shift = rebase ? recv - 100 * SEC : 0;
    assert_int_equal(g->r[0].first_ns, 90 * SEC + shift);
    assert_int_equal(g->r[0].last_ns, 95 * SEC + shift);
    assert_int_equal(g->r[0].received_ns, recv);
    ba_flow_source_t src[1];
    assert_int_equal(ba_flow_decoder_sources(d, src, 1), 1);
    assert_int_equal(src[0].clock_suspicious, 1);
    assert_int_equal(src[0].export_skew_s, 100 - (int64_t)T0);
    /* IPFIX, end before start: kept as sent */
    ipfix_hdr(&b, T0, 0);
    s = set_begin(&b, 2); u16(&b, 310); u16(&b, 2); u16(&b, 152); u16(&b, 8); u16(&b, 153); u16(&b, 8); set_end(&b, s);
    s = set_begin(&b, 310); u64(&b, (uint64_t)T0 * 1000 - 1000); u64(&b, (uint64_t)T0 * 1000 - 5000); set_end(&b, s);
    ipfix_end(&b);
    g->n = 0;
    assert_int_equal(ba_flow_decode_at(d, EXP_B, recv, b.b, b.n, collect, g), 0);
    assert_int_equal(g->n, 1);
    assert_int_equal(g->r[0].first_ns, (uint64_t)(T0 - 1) * SEC);
    assert_int_equal(g->r[0].last_ns, (uint64_t)(T0 - 5) * SEC);
    ba_ingest_counts_t c = counts(d);
    assert_int_equal(ba_ingest_counts_dropped(&c), 0);
    ba_flow_decoder_free(d);
    free(g);
  }
}

/* ---------- IPFIX: several messages in one datagram ---------- */
static void test_ipfix_concatenated(void **st) {
  (void)st;
  buf_t b = {{0}, 0}, all = {{0}, 0};
  for (int m = 0; m < 3; m++) {
    ipfix_hdr(&b, T0, 0);
    size_t s;
    if (m == 0) { s = set_begin(&b, 2); u16(&b, 256); u16(&b, 1); u16(&b, 8); u16(&b, 4); set_end(&b, s); }
    s = set_begin(&b, 256); u32(&b, 0x0a000000u + (uint32_t)m); u32(&b, 0x0a000010u + (uint32_t)m); set_end(&b, s);
    ipfix_end(&b);
    bytes(&all, b.b, b.n);
  }
  assert_int_equal(ba_flow_detect(all.b, all.n), 10);
  ba_flow_decoder_t *d = mk_flags(0);
  got_t *g = calloc(1, sizeof(*g));
  assert_int_equal(ba_flow_decode(d, EXP_A, all.b, all.n, collect, g), 0);
  assert_int_equal(g->n, 6);
  assert_true(addr_is(g->r[5].src, 0x0a000012));
  ba_ingest_counts_t c = counts(d);
  assert_int_equal(c.datagrams, 1);
  assert_int_equal(c.messages, 3);
  ba_flow_decoder_free(d);
  free(g);
}

/* ---------- sFlow v5 ---------- */
static void sflow_datagram(buf_t *b) {
  b->n = 0;
  u32(b, 5); u32(b, 1); u32(b, 0x0a000001); u32(b, 3); u32(b, 1); u32(b, 1000); u32(b, 3);
  /* flow sample: raw Ethernet/IPv4/TCP header, switch, router, gateway */
  size_t s = b->n;
  u32(b, 1); u32(b, 0);
  u32(b, 1); u32(b, 5); u32(b, 512); u32(b, 10000); u32(b, 0); u32(b, 7); u32(b, 8); u32(b, 4);
  u32(b, 1); size_t r = b->n; u32(b, 0);
  u32(b, 1); u32(b, 1000); u32(b, 4); u32(b, 54);
  uN(b, 0x020000000001ull, 6); uN(b, 0x020000000002ull, 6); u16(b, 0x0800);
  u8(b, 0x45); u8(b, 0x10); u16(b, 982); u16(b, 0); u16(b, 0); u8(b, 64); u8(b, 6); u16(b, 0);
  u32(b, 0x0a010101); u32(b, 0x0a020202);
  u16(b, 1234); u16(b, 80); u32(b, 0); u32(b, 0); u8(b, 0x50); u8(b, 0x18); u16(b, 1000); u16(b, 0); u16(b, 0);
  u16(b, 0); /* pad 54 -> 56 */
  put16(b, r + 2, (uint16_t)(b->n - r - 4));
  u32(b, 1001); u32(b, 16); u32(b, 10); u32(b, 0); u32(b, 20); u32(b, 0);
  u32(b, 1002); u32(b, 16); u32(b, 1); u32(b, 0x0a090909); u32(b, 24); u32(b, 16);
  u32(b, 1003); r = b->n; u32(b, 0);
  u32(b, 1); u32(b, 0x0a080808); u32(b, 65000); u32(b, 65001); u32(b, 65002);
  u32(b, 1); u32(b, 2); u32(b, 2); u32(b, 65010); u32(b, 65020); u32(b, 0); u32(b, 100);
  put16(b, r + 2, (uint16_t)(b->n - r - 4));
  put16(b, s + 6, (uint16_t)(b->n - s - 8));
  /* counter sample */
  u32(b, 2); u32(b, 8); u32(b, 1); u32(b, 5);
  /* expanded flow sample with an IPv6 data record */
  s = b->n;
  u32(b, 3); u32(b, 0);
  u32(b, 2); u32(b, 0); u32(b, 5); u32(b, 100); u32(b, 5000); u32(b, 0);
  u32(b, 0); u32(b, 1000000); u32(b, 0); u32(b, 2000000); u32(b, 1);
  u32(b, 4); u32(b, 56); u32(b, 500); u32(b, 17);
  uint8_t a6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  bytes(b, a6, 16); a6[15] = 2; bytes(b, a6, 16);
  u32(b, 53); u32(b, 5353); u32(b, 0); u32(b, 0);
  put16(b, s + 6, (uint16_t)(b->n - s - 8));
}

static void test_sflow(void **st) {
  (void)st;
  buf_t *b = calloc(1, sizeof(*b));
  sflow_datagram(b);
  assert_int_equal(ba_flow_detect(b->b, b->n), BA_FLOW_SFLOW5);
  ba_flow_decoder_t *d = mk_flags(0);
  got_t *g = calloc(1, sizeof(*g));
  uint64_t recv = (uint64_t)T0 * SEC + 123;
  assert_int_equal(ba_flow_decode_at(d, EXP_A, recv, b->b, b->n, collect, g), 0);
  assert_int_equal(g->n, 2);
  const ba_record_t *r = &g->r[0];
  assert_true(addr_is(r->src, 0x0a010101) && addr_is(r->dst, 0x0a020202));
  assert_int_equal(r->proto, 6);
  assert_int_equal(r->src_port, 1234);
  assert_int_equal(r->dst_port, 80);
  assert_int_equal(r->tcp_flags, 0x18);
  assert_int_equal(r->tos, 0x10);
  assert_int_equal(r->packets, 512);
  assert_int_equal(r->bytes, 512 * 1000);
  assert_int_equal(r->sampling, 512);
  assert_int_equal(r->in_if, 7);
  assert_int_equal(r->out_if, 8);
  assert_int_equal(r->vlan, 10);
  assert_int_equal(r->dst_vlan, 20);
  assert_true(addr_is(r->next_hop, 0x0a090909));
  assert_int_equal(r->src_mask, 24);
  assert_int_equal(r->dst_mask, 16);
  assert_true(addr_is(r->bgp_next_hop, 0x0a080808));
  assert_int_equal(r->src_as, 65001);
  assert_int_equal(r->prev_as, 65002);
  assert_int_equal(r->next_as, 65010);
  assert_int_equal(r->dst_as, 65020);
  assert_int_equal(r->out_dst_mac, 0x020000000001ull);
  assert_int_equal(r->in_src_mac, 0x020000000002ull);
  assert_int_equal(r->first_ns, recv);
  assert_int_equal(r->last_ns, recv);
  assert_int_equal(r->obs_domain, 3);
  r = &g->r[1];
  assert_int_equal(r->ipver, 6);
  assert_int_equal(r->src[15], 1);
  assert_int_equal(r->proto, 17);
  assert_int_equal(r->dst_port, 5353);
  assert_int_equal(r->packets, 100);
  assert_int_equal(r->bytes, 100 * 500);
  assert_int_equal(r->in_if, 1000000);
  assert_int_equal(r->out_if, 2000000);
  ba_ingest_counts_t c = counts(d);
  assert_int_equal(c.datagrams_sflow, 1);
  assert_int_equal(c.sflow_flow_samples, 2);
  assert_int_equal(c.sflow_counter_samples, 1);
  assert_int_equal(ba_ingest_counts_dropped(&c), 0);
  /* Every truncation is counted, never decoded past the end, and the
   * decoder goes on with the whole datagram afterwards. */
  for (size_t len = 0; len < b->n; len++) {
    uint64_t before = c.records + ba_ingest_counts_dropped(&c);
    assert_int_equal(ba_flow_decode_at(d, EXP_B, recv, b->b, len, collect, g), 0);
    c = counts(d);
    assert_true(c.records + ba_ingest_counts_dropped(&c) > before || len < 4);
  }
  size_t before = g->n;
  assert_int_equal(ba_flow_decode_at(d, EXP_A, recv, b->b, b->n, collect, g), 0);
  assert_int_equal(g->n, before + 2);
  ba_flow_decoder_free(d);
  free(g);
  free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_v5_concatenated), cmocka_unit_test(test_varlen),
      cmocka_unit_test(test_biflow_and_nsel), cmocka_unit_test(test_extended_fields),
      cmocka_unit_test(test_options_and_withdrawal), cmocka_unit_test(test_clocks),
      cmocka_unit_test(test_ipfix_concatenated), cmocka_unit_test(test_sflow),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

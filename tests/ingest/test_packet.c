/* Packet parsing on crafted frames (expected fields known by construction)
 * and capture reading on truncated copies of real captures: every packet
 * before the cut is delivered, the error names the packet and its offset,
 * checked against a naive walk of the pcap record headers. */
#include <pcap/dlt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitarc/ingest.h"
#include "testsupport.h"

typedef struct { uint8_t b[2048]; size_t n; } fr_t;
static void u8(fr_t *f, uint8_t v) { f->b[f->n++] = v; }
static void u16(fr_t *f, uint16_t v) { u8(f, (uint8_t)(v >> 8)); u8(f, (uint8_t)v); }
static void u32(fr_t *f, uint32_t v) { u16(f, (uint16_t)(v >> 16)); u16(f, (uint16_t)v); }
static void zeros(fr_t *f, size_t n) { memset(f->b + f->n, 0, n); f->n += n; }
static void eth(fr_t *f, uint16_t et) { f->n = 0; zeros(f, 12); u16(f, et); }
static void ipv4(fr_t *f, uint8_t proto, uint16_t frag, uint8_t tos, uint16_t payload) {
  u8(f, 0x45); u8(f, tos); u16(f, (uint16_t)(20 + payload)); u16(f, 1); u16(f, frag); u8(f, 64); u8(f, proto);
  u16(f, 0); u32(f, 0x0a000001); u32(f, 0x0a000002);
}
static void ipv6(fr_t *f, uint8_t nh, uint16_t payload) {
  u32(f, 0x60000000u | (0x2eu << 20)); u16(f, payload); u8(f, nh); u8(f, 64);
  u16(f, 0x2001); u16(f, 0xdb8); zeros(f, 11); u8(f, 1);
  u16(f, 0x2001); u16(f, 0xdb8); zeros(f, 11); u8(f, 2);
}
static void tcp(fr_t *f, uint16_t sp, uint16_t dp, uint8_t flags) {
  u16(f, sp); u16(f, dp); u32(f, 1); u32(f, 0); u8(f, 0x50); u8(f, flags); u16(f, 1000); u32(f, 0);
}
static void udp(fr_t *f, uint16_t sp, uint16_t dp, uint16_t plen) { u16(f, sp); u16(f, dp); u16(f, (uint16_t)(8 + plen)); u16(f, 0); }

static void parse(int dlt, fr_t *f, ba_record_t *r, size_t *uo) {
  ba_packet_parse(dlt, f->b, (uint32_t)f->n, (uint32_t)f->n + 4, 77, r, uo);
  assert_int_equal(r->caplen, f->n);
  assert_int_equal(r->wirelen, f->n + 4);
  assert_int_equal(r->bytes, f->n + 4);
  assert_int_equal(r->packets, 1);
  assert_int_equal(r->first_ns, 77);
  assert_int_equal(r->linktype, dlt);
  assert_ptr_equal(r->frame, f->b);
  assert_int_equal(r->kind, BA_REC_PACKET);
}

static void test_ethernet_vlan_tcp(void **st) {
  (void)st;
  fr_t f;
  ba_record_t r;
  size_t uo;
  eth(&f, 0x88a8); u16(&f, 200); u16(&f, 0x8100); u16(&f, 100); u16(&f, 0x0800);
  ipv4(&f, 6, 0x4000, 0xb8, 20); tcp(&f, 443, 50000, 0x18);
  parse(DLT_EN10MB, &f, &r, &uo);
  assert_int_equal(r.ipver, 4);
  assert_int_equal(r.vlan, 200);
  assert_int_equal(ba_addr_get_v4(r.src), 0x0a000001);
  assert_int_equal(ba_addr_get_v4(r.dst), 0x0a000002);
  assert_true(ba_addr_is_v4(r.src));
  assert_int_equal(r.proto, 6);
  assert_int_equal(r.tos, 0xb8);
  assert_int_equal(r.src_port, 443);
  assert_int_equal(r.dst_port, 50000);
  assert_int_equal(r.tcp_flags, 0x18);
  assert_int_equal(uo, SIZE_MAX);
  /* The same frame cut inside the TCP header: addresses and ports, no flags. */
  f.n = 14 + 8 + 20 + 6;
  parse(DLT_EN10MB, &f, &r, &uo);
  assert_int_equal(r.src_port, 443);
  assert_int_equal(r.tcp_flags, 0);
  /* ...cut inside the IPv4 header: not IP as far as we can tell. */
  f.n = 14 + 8 + 12;
  parse(DLT_EN10MB, &f, &r, &uo);
  assert_int_equal(r.ipver, 0);
}

static void test_ipv6_extension_headers(void **st) {
  (void)st;
  fr_t f;
  ba_record_t r;
  size_t uo;
  eth(&f, 0x86dd);
  ipv6(&f, 0, 8 + 8 + 8 + 8 + 16 + 8 + 4);
  u8(&f, 60); u8(&f, 0); zeros(&f, 6);         /* hop-by-hop -> dest opts */
  u8(&f, 43); u8(&f, 0); zeros(&f, 6);         /* dest opts -> routing */
  u8(&f, 44); u8(&f, 0); zeros(&f, 6);         /* routing -> fragment */
  u8(&f, 51); u8(&f, 0); u16(&f, 0x0001); u32(&f, 9); /* fragment offset 0, M=1 -> AH */
  u8(&f, 17); u8(&f, 2); zeros(&f, 14);        /* AH: (2+2)*4 = 16 bytes -> UDP */
  size_t udp_at = f.n;
  udp(&f, 5353, 2055, 4); u32(&f, 0xdeadbeef);
  parse(DLT_EN10MB, &f, &r, &uo);
  assert_int_equal(r.ipver, 6);
  assert_int_equal(r.tos, 0x2e);
  assert_int_equal(r.src[15], 1);
  assert_int_equal(r.dst[15], 2);
  assert_int_equal(r.proto, 17);
  assert_int_equal(r.src_port, 5353);
  assert_int_equal(r.dst_port, 2055);
  assert_int_equal(uo, udp_at + 8);
  /* A non-first fragment: protocol known, no ports. */
  eth(&f, 0x86dd);
  ipv6(&f, 44, 8 + 8);
  u8(&f, 17); u8(&f, 0); u16(&f, 0x0100); u32(&f, 9);
  udp(&f, 1, 2, 0);
  parse(DLT_EN10MB, &f, &r, &uo);
  assert_int_equal(r.proto, 17);
  assert_int_equal(r.src_port, 0);
  assert_int_equal(r.dst_port, 0);
  /* IPv4 non-first fragment */
  eth(&f, 0x0800);
  ipv4(&f, 17, 185, 0, 8);
  udp(&f, 1, 2, 0);
  parse(DLT_EN10MB, &f, &r, &uo);
  assert_int_equal(r.proto, 17);
  assert_int_equal(r.src_port, 0);
}

static void test_other_link_types(void **st) {
  (void)st;
  fr_t f;
  ba_record_t r;
  size_t uo;
  /* SLL2: protocol first; ICMP echo request */
  f.n = 0; u16(&f, 0x0800); zeros(&f, 18);
  ipv4(&f, 1, 0, 0, 8); u8(&f, 8); u8(&f, 0); zeros(&f, 6);
  parse(DLT_LINUX_SLL2, &f, &r, &uo);
  assert_int_equal(r.proto, 1);
  assert_int_equal(r.icmp_type, 8);
  assert_int_equal(r.dst_port, 0x0800);
  assert_int_equal(r.src_port, 0);
  /* SLL (v1): protocol at offset 14, VLAN-tagged */
  f.n = 0; zeros(&f, 14); u16(&f, 0x8100); u16(&f, 7); u16(&f, 0x0800);
  ipv4(&f, 17, 0, 0, 8); udp(&f, 53, 53, 0);
  parse(DLT_LINUX_SLL, &f, &r, &uo);
  assert_int_equal(r.vlan, 7);
  assert_int_equal(r.src_port, 53);
  /* DLT_NULL: family in host order (2 = IPv4, little-endian writer) */
  f.n = 0; u8(&f, 2); u8(&f, 0); u8(&f, 0); u8(&f, 0);
  ipv4(&f, 17, 0, 0, 8); udp(&f, 1000, 2000, 0);
  parse(DLT_NULL, &f, &r, &uo);
  assert_int_equal(r.ipver, 4);
  assert_int_equal(r.dst_port, 2000);
  /* DLT_LOOP: network order; 30 = AF_INET6 on some BSDs; ICMPv6 echo */
  f.n = 0; u32(&f, 30);
  ipv6(&f, 58, 8); u8(&f, 128); u8(&f, 0); zeros(&f, 6);
  parse(DLT_LOOP, &f, &r, &uo);
  assert_int_equal(r.ipver, 6);
  assert_int_equal(r.proto, 58);
  assert_int_equal(r.dst_port, 128 << 8);
  /* DLT_PPP: address/control ff 03, protocol 0x0021 (IPv4); and without them, 0x0057 (IPv6) */
  f.n = 0; u8(&f, 0xff); u8(&f, 0x03); u16(&f, 0x0021);
  ipv4(&f, 17, 0, 0, 8); udp(&f, 4500, 500, 0);
  parse(DLT_PPP, &f, &r, &uo);
  assert_int_equal(r.ipver, 4);
  assert_int_equal(r.dst_port, 500);
  f.n = 0; u16(&f, 0x0057); ipv6(&f, 58, 8); u8(&f, 135); u8(&f, 0); zeros(&f, 6);
  parse(DLT_PPP, &f, &r, &uo);
  assert_int_equal(r.ipver, 6);
  assert_int_equal(r.icmp_type, 135);
  /* DLT_RAW */
  f.n = 0; ipv4(&f, 6, 0, 0, 20); tcp(&f, 22, 2222, 0x02);
  parse(DLT_RAW, &f, &r, &uo);
  assert_int_equal(r.tcp_flags, 0x02);
  /* ARP over Ethernet: a record, not IP */
  eth(&f, 0x0806); zeros(&f, 28);
  parse(DLT_EN10MB, &f, &r, &uo);
  assert_int_equal(r.ipver, 0);
  assert_int_equal(r.proto, 0);
  /* An unknown link type: still a record with lengths */
  parse(147, &f, &r, &uo);
  assert_int_equal(r.ipver, 0);
}

/* ---------- truncated real captures ---------- */
typedef struct { uint64_t n, bytes; } cnt_t;
static int count_recs(void *ctx, const ba_record_t *r, size_t n) {
  cnt_t *c = ctx;
  for (size_t i = 0; i < n; i++) c->bytes += r[i].caplen;
  c->n += n;
  return 0;
}

static void test_truncated_pcap(void **st) {
  (void)st;
  const char *p = ba_test_shared("traces/CESNET__ipfixprobe/tests/functional/inputs/http.pcap");
  size_t len;
  uint8_t *buf = p ? ba_test_read_file(p, &len) : NULL;
  if (!buf) {
    print_message("SKIP: shared capture http.pcap not present\n");
    return;
  }
  /* Reference: walk the classic pcap record headers (little-endian file). */
  assert_int_equal(buf[0], 0xd4);
  size_t starts[4096], ends[4096], nrec = 0, off = 24;
  while (off + 16 <= len) {
    uint32_t incl = (uint32_t)buf[off + 8] | (uint32_t)buf[off + 9] << 8 | (uint32_t)buf[off + 10] << 16 |
                    (uint32_t)buf[off + 11] << 24;
    starts[nrec] = off;
    ends[nrec] = off + 16 + incl;
    off = ends[nrec++];
  }
  assert_int_equal(ends[nrec - 1], len);
  ba_rng_t rng;
  ba_rng_seed(&rng, 7);
  for (int it = 0; it < 60; it++) {
    size_t cut = 24 + ba_rng_below(&rng, len - 24);
    size_t complete = 0;
    while (complete < nrec && ends[complete] <= cut) complete++;
    FILE *fp = fmemopen(buf, cut, "rb");
    assert_non_null(fp);
    ba_capture_opts_t o;
    memset(&o, 0, sizeof(o));
    o.as = BA_INGEST_PACKETS;
    ba_capture_result_t res;
    cnt_t c = {0, 0};
    int rc = ba_capture_ingest(NULL, fp, &o, count_recs, &c, &res);
    assert_int_equal(c.n, complete);
    assert_int_equal(res.counts.packets, complete);
    if (cut == (complete ? ends[complete - 1] : 24)) {
      assert_int_equal(rc, 0);
    } else {
      assert_int_equal(rc, BA_ERR_TRUNCATED);
      assert_int_equal(res.error_packet, complete + 1);
      assert_int_equal(res.error_offset, starts[complete]);
      assert_true(strstr(res.errmsg, "truncated") != NULL);
    }
  }
  /* Garbage after a valid file header, and a non-capture. */
  uint8_t junk[200];
  memcpy(junk, buf, 24);
  for (int i = 24; i < 200; i++) junk[i] = (uint8_t)(i * 37);
  FILE *fp = fmemopen(junk, sizeof(junk), "rb");
  ba_capture_opts_t o;
  memset(&o, 0, sizeof(o));
  o.as = BA_INGEST_PACKETS;
  ba_capture_result_t res;
  cnt_t c = {0, 0};
  int rc = ba_capture_ingest(NULL, fp, &o, count_recs, &c, &res);
  assert_true(rc == 0 || rc == BA_ERR_TRUNCATED || rc == BA_ERR_CORRUPT);
  memset(junk, 'x', sizeof(junk));
  fp = fmemopen(junk, sizeof(junk), "rb");
  rc = ba_capture_ingest(NULL, fp, &o, count_recs, &c, &res);
  assert_int_equal(rc, BA_ERR_NOT_OURS);
  assert_true(res.errmsg[0] != 0);
  free(buf);
}

/* Auto-detection: the akvorado export captures are flows, a web capture is packets. */
static void test_auto_detect(void **st) {
  (void)st;
  const char *v5 = ba_test_shared("traces/akvorado__akvorado/outlet/flow/decoder/netflow/testdata/nfv5.pcap");
  const char *web = ba_test_shared("traces/CESNET__ipfixprobe/tests/functional/inputs/http.pcap");
  FILE *t1 = v5 ? fopen(v5, "rb") : NULL;
  if (!t1) {
    print_message("SKIP: shared captures not present\n");
    return;
  }
  fclose(t1);
  char v5p[4096], webp[4096];
  snprintf(v5p, sizeof(v5p), "%s", v5);
  snprintf(webp, sizeof(webp), "%s", web);
  ba_flow_decoder_t *d;
  assert_int_equal(ba_flow_decoder_create(NULL, &d), 0);
  ba_capture_opts_t o;
  memset(&o, 0, sizeof(o));
  o.flows = d;
  ba_capture_result_t res;
  cnt_t c = {0, 0};
  assert_int_equal(ba_capture_ingest(v5p, NULL, &o, count_recs, &c, &res), 0);
  assert_int_equal(res.as, BA_INGEST_FLOWS);
  assert_int_equal(res.counts.datagrams_v5, 1);
  assert_true(res.counts.records > 0);
  assert_int_equal(c.n, res.counts.records);
  c.n = 0;
  assert_int_equal(ba_capture_ingest(webp, NULL, &o, count_recs, &c, &res), 0);
  assert_int_equal(res.as, BA_INGEST_PACKETS);
  assert_int_equal(c.n, res.counts.packets);
  /* Forced flows on a web capture: every packet counted as not-export. */
  o.as = BA_INGEST_FLOWS;
  c.n = 0;
  assert_int_equal(ba_capture_ingest(webp, NULL, &o, count_recs, &c, &res), 0);
  assert_int_equal(c.n, 0);
  assert_int_equal(res.counts.dropped[BA_DROP_NOT_EXPORT], res.counts.packets);
  ba_flow_decoder_free(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_ethernet_vlan_tcp),
    cmocka_unit_test(test_ipv6_extension_headers),
    cmocka_unit_test(test_other_link_types),
    cmocka_unit_test(test_truncated_pcap),
    cmocka_unit_test(test_auto_detect),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

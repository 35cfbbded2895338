/* Range ORs (both strategies, 1 and 2 threads) against a plain bitset, output
 * formats against hand-written lines, aggregation against naive counting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitarc/query.h"
#include "testsupport.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static void test_or_many(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 7);
  static const size_t counts[] = {0, 1, 2, 3, 4, 7, 64, 129};
  static const ba_codec_t codecs[] = {BA_CODEC_WAH64, BA_CODEC_WAH32, BA_CODEC_PLWAH, BA_CODEC_COMPAX};
  for (size_t ci = 0; ci < NELEM(codecs); ci++)
    for (size_t k = 0; k < NELEM(counts); k++) {
      size_t n = counts[k];
      uint64_t rows = 5000 + ba_rng_below(&r, 3000);
      uint8_t *ref = calloc(rows, 1);
      ba_bitmap_t **bms = calloc(n ? n : 1, sizeof(*bms));
      uint64_t *ids = malloc(rows * sizeof(uint64_t));
      for (size_t i = 0; i < n; i++) {
        size_t m = 0;
        /* clustered runs and sparse bits */
        uint64_t dens = 1 + ba_rng_below(&r, 200);
        for (uint64_t x = 0; x < rows; x++)
          if (ba_rng_below(&r, 1000) < dens || (x / 512) % 9 == i % 9) ids[m++] = x;
        assert_int_equal(ba_bitmap_from_rows(codecs[ci], ids, m, rows, &bms[i]), 0);
        for (size_t j = 0; j < m; j++) ref[ids[j]] = 1;
      }
      for (int st = 0; st < 4; st++)
        for (int th = 1; th <= 2; th++) {
          ba_bitmap_t *out;
          assert_int_equal(ba_query_or_many((const ba_bitmap_t *const *)bms, n, rows, codecs[ci],
                                            (ba_range_strategy_t)st, th, &out),
                           0);
          size_t cnt;
          assert_int_equal(ba_bitmap_to_rows(out, ids, rows, &cnt), 0);
          size_t want = 0;
          for (uint64_t x = 0; x < rows; x++) want += ref[x];
          assert_int_equal(cnt, want);
          for (size_t j = 0; j < cnt; j++) assert_true(ref[ids[j]]);
          ba_bitmap_free(out);
        }
      for (size_t i = 0; i < n; i++) ba_bitmap_free(bms[i]);
      free(bms);
      free(ref);
      free(ids);
    }
}

static ba_record_t sample(void) {
  ba_record_t r;
  memset(&r, 0, sizeof(r));
  r.kind = BA_REC_FLOW;
  r.ipver = 4;
  ba_addr_set_v4(r.src, 0xAC101080);  /* 172.16.16.128 */
  ba_addr_set_v4(r.dst, 0xAC101096);  /* 172.16.16.150 */
  ba_addr_set_v4(r.exporter, 0x7F000001);
  r.src_port = 53936;
  r.dst_port = 135;
  r.proto = 6;
  r.tcp_flags = 0x12;
  r.first_ns = 1278798210035000000ull;  /* 2010-07-10 21:43:30.035 UTC */
  r.last_ns = r.first_ns + 3723004000000ull;  /* +1h 2m 3.004s */
  r.packets = 3;
  r.bytes = 180;
  r.tos = 2;
  r.in_if = 4;
  r.out_if = 5;
  r.src_as = 64500;
  r.dst_as = 15169;
  return r;
}

static void fmt_eq(const char *spec, const ba_record_t *r, const char *want) {
  ba_query_format_t *f;
  char err[128], buf[1024];
  if (ba_query_format_create(spec, 0, &f, err, sizeof(err)) != 0) fail_msg("%s: %s", spec, err);
  size_t len;
  assert_int_equal(ba_query_format_record(f, r, 1, buf, sizeof(buf), &len), 0);
  if (strcmp(buf, want)) fail_msg("%s:\n got '%s'\nwant '%s'", spec, buf, want);
  ba_query_format_free(f);
}

static void test_format(void **state) {
  (void)state;
  ba_record_t r = sample();
  fmt_eq("fmt:%ts|%te", &r, "2010-07-10 21:43:30.035|2010-07-10 22:45:33.039\n");
  fmt_eq("fmt:%td", &r, "    01:02:03.004\n");
  fmt_eq("fmt:%pr|%sa|%da|%sp|%dp", &r, "TCP  |   172.16.16.128|   172.16.16.150| 53936|   135\n");
  fmt_eq("fmt:%sap -> %dap", &r, "   172.16.16.128:53936 ->    172.16.16.150:135  \n");
  fmt_eq("fmt:%flg|%pkt|%byt|%fl|%tos", &r, "...A..S.|       3|     180|    1|  2\n");
  fmt_eq("fmt:%in %out %sas %das %ra", &r, "     4      5  64500  15169        127.0.0.1\n");
  fmt_eq("fmt:%bpp %pps %bps", &r, "    60        0        0\n");
  /* nfdump's tokens: raw epoch times, in/out counters, networks, engine, empty MPLS */
  fmt_eq("fmt:%tsr|%ter|%tds", &r, "1278798210.035|1278801933.039|        3723.004\n");
  fmt_eq("fmt:%ipkt|%opkt|%ibyt|%obyt|%stos|%dtos", &r, "       3|       0|     180|       0|   2|   0\n");
  fmt_eq("fmt:%sn|%dn|%smk|%dmk|%svln|%dvln", &r,
         "   172.16.16.128/0 |   172.16.16.150/0 |    0|    0|    0|    0\n");
  fmt_eq("fmt:%pkt1", &r, "       31\n"); /* nfdump: a token ends at a non-letter */
  fmt_eq("fmt:%eng|%nh|%dir|%mpls10", &r, "  0/0  |         0.0.0.0|  I|       0-0-0\n");
  fmt_eq("line", &r,
         "2010-07-10 21:43:30.035     01:02:03.004 TCP      172.16.16.128:53936 ->    172.16.16.150:135          3  "
         "    180     1\n");
  fmt_eq("csv", &r,
         "2010-07-10 21:43:30,2010-07-10 22:45:33,3723.004,172.16.16.128,172.16.16.150,53936,135,TCP,"
         "...A..S.,0,2,3,180,0,0,4,5,64500,15169,0,0,0,0,0.0.0.0,0.0.0.0,0,0,00:00:00:00:00:00,00:00:00:00:00:00,"
         "00:00:00:00:00:00,00:00:00:00:00:00,0-0-0,0-0-0,0-0-0,0-0-0,0-0-0,0-0-0,0-0-0,0-0-0,0-0-0,0-0-0,"
         "    0.000,    0.000,    0.000,127.0.0.1,0/0,0,1970-01-01 00:00:00.000\n");
  fmt_eq("pipe", &r, "2|1278798210035|1278801933039|6|0|0|0|2886733952|53936|0|0|0|2886733974|135|64500|15169|4|5|18|2|3|180\n");
  r.bytes = 123456789;
  fmt_eq("fmt:%byt|%bps", &r, " 123.5 M|  265284\n");
  r.bytes = 180;
  r.ipver = 6;
  static const uint8_t a6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  memcpy(r.src, a6, 16);
  fmt_eq("fmt:%sa", &r, "     2001:db8::1\n");
  static const uint8_t l6[16] = {0x20, 0x01, 0x06, 0x20, 0x10, 0, 0xca, 0xfe, 0x02, 0x0e, 0x35, 0xff, 0xfe, 0xc0, 0xfe, 0xd5};
  memcpy(r.src, l6, 16);
  fmt_eq("fmt:%sap", &r, "2001:62..c0:fed5.53936\n"); /* condensed, '.' before an IPv6 port, as nfdump */
  fmt_eq("fmt:%sa", &r, "2001:62..c0:fed5\n");
  memcpy(r.src, a6, 16);
  fmt_eq("ndjson", &r,
         "{\"type\":\"FLOW\",\"first\":\"2010-07-10T21:43:30.035\",\"last\":\"2010-07-10T22:45:33.039\","
         "\"first_ns\":1278798210035000000,\"last_ns\":1278801933039000000,\"ipver\":6,\"src_addr\":\"2001:db8::1\","
         "\"dst_addr\":\"::ffff:172.16.16.150\",\"src_port\":53936,\"dst_port\":135,\"proto\":6,\"tcp_flags\":\"...A..S.\","
         "\"tos\":2,\"packets\":3,\"bytes\":180,\"flows\":1,\"src_as\":64500,\"dst_as\":15169,\"in_if\":4,"
         "\"out_if\":5,\"vlan\":0,\"exporter\":\"127.0.0.1\"}\n");
  ba_query_format_t *f;
  char err[128];
  assert_int_equal(ba_query_format_create("fmt:%sa %zz", 0, &f, err, sizeof(err)), BA_ERR_SYNTAX);
  assert_non_null(strstr(err, "%zz"));
  assert_int_equal(ba_query_format_create("xml", 0, &f, err, sizeof(err)), BA_ERR_SYNTAX);
  assert_int_equal(ba_query_format_create("fmt:", 0, &f, err, sizeof(err)), BA_ERR_SYNTAX);
  assert_int_equal(ba_query_format_create("fmt:%tsx", 0, &f, err, sizeof(err)), BA_ERR_SYNTAX);
  assert_non_null(strstr(err, "%tsx"));
  assert_int_equal(ba_query_format_create("fmt:%ja3", 0, &f, err, sizeof(err)), BA_ERR_SYNTAX);
  assert_non_null(strstr(err, "no data"));
  /* the header is built from nfdump's token headers */
  assert_int_equal(ba_query_format_create("line", 0, &f, err, sizeof(err)), 0);
  char hb[512];
  size_t hl;
  assert_int_equal(ba_query_format_header(f, hb, sizeof(hb), &hl), 0);
  assert_string_equal(hb, "Date first seen             Duration     Proto      Src IP Addr:Port          Dst IP "
                          "Addr:Port   Packets    Bytes Flows\n");
  ba_query_format_free(f);
  /* truncation is reported with the needed length */
  assert_int_equal(ba_query_format_create("line", 0, &f, err, sizeof(err)), 0);
  char small[10];
  size_t len;
  assert_int_equal(ba_query_format_record(f, &r, 1, small, sizeof(small), &len), BA_ERR_OVERFLOW);
  assert_true(len > sizeof(small));
  assert_int_equal(ba_query_format_header(f, NULL, 0, &len), BA_ERR_OVERFLOW);
  ba_query_format_free(f);
}

static void test_agg(void **state) {
  (void)state;
  ba_rng_t rng;
  ba_rng_seed(&rng, 99);
  enum { N = 5000 };
  ba_record_t *recs = calloc(N, sizeof(*recs));
  for (size_t i = 0; i < N; i++) {
    recs[i] = sample();
    ba_addr_set_v4(recs[i].src, 0x0A000000u | (uint32_t)ba_rng_zipf(&rng, 50, 1.0));
    ba_addr_set_v4(recs[i].dst, 0x0B000000u | (uint32_t)ba_rng_zipf(&rng, 50, 1.0));
    recs[i].dst_port = (uint16_t)ba_rng_zipf(&rng, 30, 1.0);
    recs[i].packets = 1 + ba_rng_below(&rng, 10);
    recs[i].bytes = 100 * recs[i].packets;
  }
  ba_query_agg_spec_t f;
  char err[128];
  assert_int_equal(ba_query_agg_parse("srcip,dstport", 0, &f, err, sizeof(err)), 0);
  assert_int_equal(f.fields, BA_AGG_SRCIP | BA_AGG_DSTPORT);
  assert_int_equal(ba_query_agg_parse("srcip,bogus", 0, &f, err, sizeof(err)), BA_ERR_SYNTAX);
  assert_non_null(strstr(err, "bogus"));
  assert_int_equal(ba_query_agg_parse("ip,srcport", 0, &f, err, sizeof(err)), BA_ERR_SYNTAX);
  assert_int_equal(ba_query_agg_parse("srcip,dstip", 1, &f, err, sizeof(err)), BA_ERR_SYNTAX);
  assert_int_equal(ba_query_agg_parse("srcip4/24", 1, &f, err, sizeof(err)), 0);
  assert_int_equal(f.v4bits, 24);
  /* each side its own prefix length (nfdump -A srcip4/24,dstip4/28; srcip4/24,dstip) */
  assert_int_equal(ba_query_agg_parse("srcip4/24,dstip4/28", 0, &f, err, sizeof(err)), 0);
  assert_true(f.split_bits && f.v4bits == 24 && f.dst_v4bits == 28);
  assert_int_equal(ba_query_agg_parse("srcip4/24,dstip", 0, &f, err, sizeof(err)), 0);
  assert_true(f.split_bits && f.v4bits == 24 && f.dst_v4bits == 0);
  ba_query_agg_t *a;
  assert_int_equal(ba_query_agg_parse("srcip,dstport", 0, &f, err, sizeof(err)), 0);
  assert_int_equal(ba_query_agg_create(&f, &a), 0);
  assert_int_equal(ba_query_agg_add(a, recs, N / 2), 0);
  assert_int_equal(ba_query_agg_add(a, recs + N / 2, N - N / 2), 0);
  const ba_query_agg_row_t *rows;
  size_t ng;
  assert_int_equal(ba_query_agg_result(a, BA_ORDER_BYTES, &rows, &ng), 0);
  uint64_t tf = 0;
  for (size_t g = 0; g < ng; g++) {
    /* naive recount of this group */
    uint64_t fl = 0, pk = 0, by = 0;
    for (size_t i = 0; i < N; i++)
      if (!memcmp(recs[i].src, rows[g].key.src, 16) && recs[i].dst_port == rows[g].key.dst_port) {
        fl++;
        pk += recs[i].packets;
        by += recs[i].bytes;
      }
    assert_int_equal(fl, rows[g].flows);
    assert_int_equal(pk, rows[g].packets);
    assert_int_equal(by, rows[g].bytes);
    if (g) assert_true(rows[g - 1].bytes >= rows[g].bytes);
    tf += fl;
  }
  assert_int_equal(tf, N);
  ba_query_agg_free(a);
  /* -s ip: every flow counted for both addresses */
  assert_int_equal(ba_query_agg_parse("ip", 1, &f, err, sizeof(err)), 0);
  assert_int_equal(ba_query_agg_create(&f, &a), 0);
  assert_int_equal(ba_query_agg_add(a, recs, N), 0);
  assert_int_equal(ba_query_agg_result(a, BA_ORDER_FLOWS, &rows, &ng), 0);
  tf = 0;
  for (size_t g = 0; g < ng; g++) tf += rows[g].flows;
  assert_int_equal(tf, 2 * N);
  ba_query_agg_free(a);
  free(recs);

  /* ties in numeric order (port 256 after port 1); -s proto holds IPv4 and
   * IPv6 flows in one group; :p splits by protocol; inout orders add the
   * reverse direction; nfdump's pipe value of an address */
  ba_record_t t[4];
  for (int i = 0; i < 4; i++) {
    t[i] = sample();
    t[i].packets = 1;
    t[i].bytes = 100;
    t[i].out_packets = 0;
    t[i].out_bytes = 0;
  }
  t[0].dst_port = 256;
  t[1].dst_port = 1;
  t[2].dst_port = 1;
  t[2].proto = 17;
  t[3].dst_port = 2;
  t[3].ipver = 6;
  memset(t[3].src, 0, 16);
  t[3].src[0] = 0x20;
  t[3].src[1] = 0x01;
  t[3].src[15] = 1;
  t[3].out_bytes = 1000;
  assert_int_equal(ba_query_agg_parse("dstport", 1, &f, err, sizeof(err)), 0);
  assert_int_equal(ba_query_agg_create(&f, &a), 0);
  assert_int_equal(ba_query_agg_add(a, t, 4), 0);
  assert_int_equal(ba_query_agg_result(a, BA_ORDER_BYTES, &rows, &ng), 0);
  assert_int_equal(ng, 3);
  assert_int_equal(rows[0].key.dst_port, 1); /* 200 bytes */
  assert_int_equal(rows[1].key.dst_port, 2); /* tie at 100: 2 before 256 */
  assert_int_equal(rows[2].key.dst_port, 256);
  ba_query_agg_free(a);
  f.inout = 1; /* 2 has 100 + 1000 bytes */
  assert_int_equal(ba_query_agg_create(&f, &a), 0);
  assert_int_equal(ba_query_agg_add(a, t, 4), 0);
  assert_int_equal(ba_query_agg_result(a, BA_ORDER_BYTES, &rows, &ng), 0);
  assert_int_equal(rows[0].key.dst_port, 2);
  ba_query_agg_free(a);
  f.inout = 0;
  f.proto_split = 1;
  assert_int_equal(ba_query_agg_create(&f, &a), 0);
  assert_int_equal(ba_query_agg_add(a, t, 4), 0);
  assert_int_equal(ba_query_agg_result(a, BA_ORDER_FLOWS, &rows, &ng), 0);
  assert_int_equal(ng, 4); /* port 1 over two protocols */
  ba_query_agg_free(a);
  assert_int_equal(ba_query_agg_parse("proto", 1, &f, err, sizeof(err)), 0);
  assert_int_equal(ba_query_agg_create(&f, &a), 0);
  t[2].proto = t[3].proto;
  assert_int_equal(ba_query_agg_add(a, t, 4), 0);
  assert_int_equal(ba_query_agg_result(a, BA_ORDER_FLOWS, &rows, &ng), 0);
  assert_int_equal(ng, 1);
  assert_int_equal(rows[0].flows, 4);
  ba_query_agg_free(a);
  char pv[96];
  int af;
  ba_query_agg_pipe_value(BA_AGG_SRCIP, &t[3], &af, pv, sizeof(pv));
  assert_int_equal(af, 10);
  assert_string_equal(pv, "0|288|16777216|0"); /* 2001::1 as nfdump's htonll'd words */
  t[1].ipver = 4;
  ba_addr_set_v4(t[1].src, 0x0A040000u);
  ba_query_agg_pipe_value(BA_AGG_SRCIP, &t[1], &af, pv, sizeof(pv));
  assert_int_equal(af, 2);
  assert_string_equal(pv, "0|0|0|168034304");
  ba_query_agg_pipe_value(BA_AGG_DSTPORT, &t[0], &af, pv, sizeof(pv));
  assert_int_equal(af, 0);
  assert_string_equal(pv, "256");
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_or_many),
    cmocka_unit_test(test_format),
    cmocka_unit_test(test_agg),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Parser: every production and extension parses to the expected tree (dumps
 * written by hand from the grammar, compared as text); bad filters fail with
 * BA_ERR_SYNTAX at the right column. Plus the evaluator on hand-built records. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bitarc/query.h"
#include "testsupport.h"

/* 2024-07-11T12:00:00Z */
#define NOW_S 1720699200ull
#define NOW_NS (NOW_S * 1000000000ull)

static const struct {
  const char *filter, *dump;
} good[] = {
  {"", "(true)"},
  {"any", "(true)"},
  {"  # only a comment", "(true)"},
  {"ANY", "(true)"},
  {"ipv4", "(ipver 4)"},
  {"inet6", "(ipver 6)"},
  {"ip 10.4.1.2", "(ip any 10.4.1.2)"},
  {"host 10.4.1.2", "(ip any 10.4.1.2)"},
  {"src ip 10.4.1.2", "(ip src 10.4.1.2)"},
  {"dst host 192.168.0.1", "(ip dst 192.168.0.1)"},
  {"src and dst ip 10.0.0.1", "(ip both 10.0.0.1)"},
  {"src or dst ip 10.0.0.1", "(ip any 10.0.0.1)"},
  {"src ip 10.4.*.*", "(ip src 10.4.*.*)"},
  {"src ip 10.4.x.x", "(ip src 10.4.*.*)"},
  {"ip *.*.*.5", "(ip any *.*.*.5)"},
  {"ip 10.4.0-15,200.*", "(ip any 10.4.0-15,200.*)"},
  {"ip 10.4.1.1,3,5-7", "(ip any 10.4.1.1,3,5-7)"},
  {"ip 10.4.0.0/16", "(ip any 10.4.*.*)"},
  {"src ip 10.4.0.0/20", "(ip src 10.4.0-15.*)"},
  {"net 10.0.0.0/8", "(ip any 10.*.*.*)"},
  {"src net 10.4.0.0/16", "(ip src 10.4.*.*)"},
  {"net 192.168/16", "(ip any 192.168.*.*)"},
  {"net 172.16.0.0 255.240.0.0", "(ip any 172.16-31.*.*)"},
  {"net 10.1.2.3/24", "(ip any 10.1.2.*)"},
  {"net 0.0.0.0/0", "(ip any *.*.*.*)"},
  {"ip in [10.0.0.1, 10.0.0.2]", "(ip any 10.0.0.1 10.0.0.2)"},
  {"ip in [10.0.0.1 10.0.0.2 192.168.0.0/24]", "(ip any 10.0.0.1 10.0.0.2 192.168.0.*)"},
  {"dst ip in [10.0.0.1,10.0.0.2]", "(ip dst 10.0.0.1 10.0.0.2)"},
  {"ip in [2001:db8::/32, 10.1.*.*]", "(ip any 2001:db8::/32 10.1.*.*)"},
  {"ip 2001:db8::1", "(ip any 2001:db8::1/128)"},
  {"src net 2001:db8:ffff::/33", "(ip src 2001:db8:8000::/33)"},
  {"ip ::ffff:10.1.2.3", "(ip any 10.1.2.3)"},
  {"ip ::ffff:10.1.0.0/112", "(ip any 10.1.*.*)"},
  {"port 80", "(port any [80])"},
  {"src port 53", "(port src [53])"},
  {"dst port = 445", "(port dst [445])"},
  {"port == 80", "(port any [80])"},
  {"port > 1023", "(port any [1024-65535])"},
  {"dst port < 1024", "(port dst [0-1023])"},
  {"port >= 65535", "(port any [65535])"},
  {"port <= 10", "(port any [0-10])"},
  {"port gt 1023", "(port any [1024-65535])"},
  {"port lt 3", "(port any [0-2])"},
  {"port ge 5 and port le 6", "(and (port any [5-65535]) (port any [0-6]))"},
  {"port eq 80", "(port any [80])"},
  {"port in [1024-2048, 8080]", "(port any [1024-2048,8080])"},
  {"port in [80 443 8080]", "(port any [80,443,8080])"},
  {"port in [443, 80, 81, 82]", "(port any [80-82,443])"},
  {"portrange 1024-2048", "(port any [1024-2048])"},
  {"dst portrange 6000-6063", "(port dst [6000-6063])"},
  {"port 0x50", "(port any [80])"},
  {"proto tcp", "(proto [6])"},
  {"proto UDP", "(proto [17])"},
  {"proto icmp6", "(proto [58])"},
  {"proto 47", "(proto [47])"},
  {"tcp", "(proto [6])"},
  {"udp or icmp", "(or (proto [17]) (proto [1]))"},
  {"flags S", "(and (proto [6]) (flags 0x02))"},
  {"flags AS", "(and (proto [6]) (flags 0x12))"},
  {"flags SA", "(and (proto [6]) (flags 0x12))"},
  {"flags X", "(and (proto [6]) (flags 0x3f))"},
  {"flags afrpsu", "(and (proto [6]) (flags 0x3f))"},
  {"flags S and not flags AFRPU", "(and (and (proto [6]) (flags 0x02)) (not (and (proto [6]) (flags-any 0x3d))))"},
  {"not (proto tcp and flags SA)", "(not (and (proto [6]) (and (proto [6]) (flags-any 0x12))))"},
  {"not not flags SA", "(not (not (and (proto [6]) (flags 0x12))))"},
  {"flags 2", "(and (proto [6]) (flags == 0x02))"},
  {"flags 0x12", "(and (proto [6]) (flags == 0x12))"},
  {"flags > 16", "(and (proto [6]) (flags > 0x10))"},
  {"not flags 2", "(not (and (proto [6]) (flags == 0x02)))"},
  {"icmp-type 8", "(icmp-type == 8)"},
  {"icmp-code 0", "(icmp-code == 0)"},
  {"bytes > 1k", "(bytes > 1000)"},
  {"bytes > 2M", "(bytes > 2000000)"},
  {"packets >= 3g", "(packets >= 3000000000)"},
  {"in packets > 10", "(packets > 10)"},
  {"out bytes < 5", "(out-bytes < 5)"},
  {"out packets 0", "(out-packets == 0)"},
  {"in bytes 7", "(bytes == 7)"},
  {"duration > 1000", "(duration > 1000)"},
  {"pps > 10", "(pps > 10)"},
  {"bps > 1m", "(bps > 1000000)"},
  {"bpp < 100", "(bpp < 100)"},
  {"flows 1", "(flows == 1)"},
  {"as 3303", "(as any == 3303)"},
  {"src as > 100", "(as src > 100)"},
  {"dst as 15169", "(as dst == 15169)"},
  {"if 3", "(if any == 3)"},
  {"in if 3", "(if src == 3)"},
  {"out if 4", "(if dst == 4)"},
  {"tos 0", "(tos src == 0)"},
  {"dst tos 3", "(tos dst == 3)"},
  {"src or dst tos 3", "(tos any == 3)"},
  {"dst vlan 7", "(vlan dst == 7)"},
  {"src tos > 4", "(tos src > 4)"},
  {"vlan 100", "(vlan any == 100)"},
  {"first seen > 2024-07-11T09:15:00.000", "(first > 1720689300000000000)"},
  {"first seen >= 2024-07-11T09:15", "(first >= 1720689300000000000)"},
  {"first seen < 2024-07-11", "(first < 1720656000000000000)"},
  {"last seen <= 2024-07-11T09", "(last <= 1720688400000000000)"},
  {"last seen > 2024-07-11T09:15:00.5", "(last > 1720689300500000000)"},
  {"after 3h ago", "(first >= 1720688400000000000)"},
  {"before 45m ago", "(first < 1720696500000000000)"},
  {"after 2024-07-11T09:15:00Z", "(first >= 1720689300000000000)"},
  {"not port 80", "(not (port any [80]))"},
  {"! port 80", "(not (port any [80]))"},
  {"not not any", "(not (not (true)))"},
  {"a" "ny and any or any", "(or (and (true) (true)) (true))"},
  {"any or any and any", "(or (true) (and (true) (true)))"},
  {"not any and any", "(and (not (true)) (true))"},
  {"(any or any) and any", "(and (or (true) (true)) (true))"},
  {"any && any || any", "(or (and (true) (true)) (true))"},
  {"proto tcp and (port 80 or port 443)", "(and (proto [6]) (or (port any [80]) (port any [443])))"},
  {"src ip 10.4.*.* AND dst port 137 # worm", "(and (ip src 10.4.*.*) (port dst [137]))"},
  {"SRC IP 10.4.1.1 Or DST PORT 1", "(or (ip src 10.4.1.1) (port dst [1]))"},
  {"proto tcp\nand port 80", "(and (proto [6]) (port any [80]))"},
  {"port 1 or port 2 or port 3", "(or (or (port any [1]) (port any [2])) (port any [3]))"},
  {"port 1 or port 2 or port 3 or port 4", "(or (or (port any [1]) (port any [2])) (or (port any [3]) (port any [4])))"},
  {"as in [3 1 2 10]", "(as any in [1-3,10])"},
  {"src as in [7]", "(as src in [7])"},
  {"prev as 5", "(as prev == 5)"},
  {"next as > 5", "(as next > 5)"},
  {"next ip 10.0.0.1", "(next-ip 10.0.0.1)"},
  {"next ip in [10.0.0.1 2001:db8::1]", "(next-ip 10.0.0.1 2001:db8::1/128)"},
  {"bgpnext ip 192.168.0.1", "(bgpnext-ip 192.168.0.1)"},
  {"router ip 127.0.0.1", "(router-ip 127.0.0.1)"},
  {"src mask 24", "(mask src == 24)"},
  {"mask 0", "(mask any == 0)"},
  {"engine-type 1", "(engine-type == 1)"},
  {"engine-id > 2", "(engine-id > 2)"},
  {"observation domain id 7", "(obs-domain == 7)"},
  {"nat event add", "(nat-event == 1)"},
  {"nat event 2", "(nat-event == 2)"},
  {"asa event deny", "(asa-event == 3)"},
  {"asa event denied egress", "(and (asa-event == 3) (asa-xevent == 1002))"},
  {"asa xevent 1004", "(asa-xevent == 1004)"},
  {"xip 10.1.1.1", "(xip any 10.1.1.1)"},
  {"src nip 10.1.1.1", "(xip src 10.1.1.1)"},
  {"dst xnet 10.0.0.0/8", "(xip dst 10.*.*.*)"},
  {"dst xport 80", "(xport dst == 80)"},
  {"nport > 1023", "(xport any > 1023)"},
  {"ingress vrf 3", "(ingress-vrf == 3)"},
  {"egress vrf 4", "(egress-vrf == 4)"},
  {"mpls label2 100", "(mpls-label 2 == 100)"},
  {"mpls exp1 > 3", "(mpls-exp 1 > 3)"},
  {"mpls eos 16", "(mpls-eos == 16)"},
  {"mpls any 17", "(mpls-any == 17)"},
  {"mac 00:11:22:33:44:55", "(mac 0xf == 73588229205)"},
  {"in src mac 0:1:2:3:4:5", "(mac 0x1 == 4328719365)"},
  {"out mac aa-bb-cc-dd-ee-ff", "(mac 0xc == 187723572702975)"},
  {"dst mac 00:00:00:00:00:01", "(mac 0xa == 1)"},
  {"flowdir egress", "(flowdir == 1)"},
  {"dir 0", "(flowdir == 0)"},
};

static void test_good(void **state) {
  (void)state;
  char buf[512];
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
    ba_query_t *q;
    assert_int_equal(ba_query_create(&q), 0);
    ba_query_set_now(q, NOW_NS);
    int rc = ba_query_compile(q, good[i].filter);
    if (rc != 0) fail_msg("'%s' failed: %s (col %zu)", good[i].filter, ba_query_errmsg(q), ba_query_errcol(q));
    size_t len;
    assert_int_equal(ba_query_dump(q, buf, sizeof(buf), &len), 0);
    if (strcmp(buf, good[i].dump)) fail_msg("'%s': got %s want %s", good[i].filter, buf, good[i].dump);
    ba_query_free(q);
  }
}

static const struct {
  const char *filter;
  size_t col;
} bad[] = {
  {"port", 4},
  {"port 65536", 5},
  {"port abc", 5},
  {"ip 10.4.1", 3},
  {"ip 10.4.1.256", 10},
  {"ip 10.4.*.*/16", 11},
  {"net 10.4.0.0", 12},
  {"net 10.0.0.0 255.0.255.0", 13},
  {"ip 1.2.3.4/33", 10},
  {"ip 2001:db8::zz", 3},
  {"ip 2001:db8::/129", 13},
  {"src port 80 and", 15},
  {"src port 80 or or port 1", 15},
  {"(port 80", 8},
  {"port 80)", 7},
  {"flags SQ", 7},
  {"proto 256", 6},
  {"proto foo", 6},
  {"bytes > 1q", 8},
  {"bytes > 99999999999999999999", 8},
  {"first seen > 2024-13-01", 13},
  {"first seen > yesterday", 13},
  {"after 3h", 8},
  {"src bytes 5", 4},
  {"port in []", 9},
  {"port in [1-2 x]", 13},
  {"port in [5-3]", 9},
  {"portrange 9-", 10},
  {"ip in [10.0.0.1", 15},
  {"foo", 0},
  {"port 80 port 81", 8},
  {"port != 80", 5},
  {"ip 10.4.0-300.*", 8},
  {"tos 256", 4},
  {"any & any", 4},
  {"in if", 5},
  {"icmp-type 256", 10},
  {"net 10.0.0.0/8 bogus", 15},
  {"ip 10.0.0.1x", 11},
  {"@", 0},
  {"flags > S", 8},
  {"flags 256", 6},
  {"sysid 1", 0},
  {"count 3", 0},
  {"ident foo", 0},
  {"mpls label11 1", 5},
  {"mac 00:11", 4},
  {"next foo", 5},
  {"src mask", 8},
  {"asa event bogus", 10},
  {"in src port 80", 7},
  {"src next ip 1.2.3.4", 4},
};

static void test_bad(void **state) {
  (void)state;
  int nfail = 0;
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    ba_query_t *q;
    assert_int_equal(ba_query_create(&q), 0);
    ba_query_set_now(q, NOW_NS);
    int rc = ba_query_compile(q, bad[i].filter);
    if (rc != BA_ERR_SYNTAX) fail_msg("'%s' gave %d, want BA_ERR_SYNTAX", bad[i].filter, rc);
    if (ba_query_errcol(q) != bad[i].col) {
      char msg[512];
      snprintf(msg, sizeof(msg), "'%s': column %zu (%s), want %zu", bad[i].filter, ba_query_errcol(q),
               ba_query_errmsg(q), bad[i].col);
      print_error("%s\n", msg);
      nfail++;
    }
    assert_true(strlen(ba_query_errmsg(q)) > 0);
    ba_query_free(q);
  }
  assert_int_equal(nfail, 0);
}

static void test_deep_nesting(void **state) {
  (void)state;
  char buf[4096];
  size_t k = 0;
  for (int i = 0; i < 1000; i++) buf[k++] = '(';
  buf[k] = 0;
  ba_query_t *q;
  assert_int_equal(ba_query_create(&q), 0);
  assert_int_equal(ba_query_compile(q, buf), BA_ERR_SYNTAX);
  k = 0;
  for (int i = 0; i < 1000; i++) {
    memcpy(buf + k, "not ", 4);
    k += 4;
  }
  strcpy(buf + k, "any");
  assert_int_equal(ba_query_compile(q, buf), BA_ERR_SYNTAX);
  ba_query_free(q);
}

/* ---------- evaluator on hand-built records (nfdump semantics) ---------- */

static ba_record_t v4rec(uint32_t src, uint32_t dst, uint16_t sp, uint16_t dp, uint8_t proto, uint8_t flags) {
  ba_record_t r;
  memset(&r, 0, sizeof(r));
  r.kind = BA_REC_FLOW;
  r.ipver = 4;
  ba_addr_set_v4(r.src, src);
  ba_addr_set_v4(r.dst, dst);
  r.src_port = sp;
  r.dst_port = dp;
  r.proto = proto;
  r.tcp_flags = flags;
  r.first_ns = NOW_NS - 3600ull * 1000000000ull;
  r.last_ns = r.first_ns + 2500ull * 1000000ull; /* 2.5 s */
  r.packets = 10;
  r.bytes = 5000;
  r.src_as = 100;
  r.dst_as = 200;
  r.in_if = 3;
  r.out_if = 4;
  r.tos = 8;
  return r;
}

static int m(const char *filter, const ba_record_t *r) {
  ba_query_t *q;
  assert_int_equal(ba_query_create(&q), 0);
  ba_query_set_now(q, NOW_NS);
  if (ba_query_compile(q, filter) != 0) fail_msg("'%s': %s", filter, ba_query_errmsg(q));
  int v = ba_query_match(q, r);
  ba_query_free(q);
  return v;
}

static void test_eval(void **state) {
  (void)state;
  /* 10.4.1.2:1234 -> 192.168.7.9:445 tcp SA */
  ba_record_t r = v4rec(0x0A040102, 0xC0A80709, 1234, 445, 6, BA_TCP_SYN | BA_TCP_ACK);
  static const struct { const char *f; int want; } t[] = {
    {"any", 1}, {"ipv4", 1}, {"ipv6", 0},
    {"ip 10.4.1.2", 1}, {"ip 192.168.7.9", 1}, {"src ip 192.168.7.9", 0}, {"dst ip 192.168.7.9", 1},
    {"src and dst ip 10.4.1.2", 0}, {"src ip 10.4.*.*", 1}, {"src ip 10.5.*.*", 0}, {"ip *.*.*.9", 1},
    {"ip *.*.*.3", 0}, {"ip 10.4.0-1,9.2", 1}, {"ip 10.4.2-9.2", 0}, {"net 10.4.0.0/15", 1},
    {"net 10.6.0.0/15", 0}, {"src net 192.168.0.0 255.255.0.0", 0}, {"net 192.168.0.0 255.255.0.0", 1},
    {"ip in [1.1.1.1, 192.168.7.0/24]", 1}, {"ip in [1.1.1.1 2.2.2.2]", 0}, {"ip 2001:db8::1", 0},
    {"ip ::/0", 1}, {"ip ::ffff:10.4.1.2", 1},
    {"port 445", 1}, {"port 1234", 1}, {"src port 445", 0}, {"port > 2000", 0}, {"port > 1000", 1},
    {"dst port < 445", 0}, {"dst port <= 445", 1}, {"port in [1-100, 440-450]", 1}, {"portrange 1-100", 0},
    {"proto tcp", 1}, {"proto udp", 0}, {"tcp", 1},
    {"flags S", 1}, {"flags A", 1}, {"flags SA", 1}, {"flags SF", 0}, {"flags F", 0},
    {"flags S and not flags AFRPU", 0}, {"not flags F", 1}, {"not flags SF", 0}, {"not flags UF", 1},
    {"not not flags SF", 0}, {"not not flags SA", 1}, {"not (proto tcp and flags SA)", 0},
    {"not (proto udp and flags UF)", 1},
    {"bytes 5000", 1}, {"bytes > 4k", 1}, {"bytes > 5k", 0}, {"packets < 11", 1},
    {"duration 2500", 1}, {"duration > 2500", 0}, {"pps 4", 1}, {"bps 16000", 1}, {"bpp 500", 1},
    {"as 200", 1}, {"src as 200", 0}, {"dst as 200", 1}, {"as > 150", 1}, {"as > 250", 0},
    {"if 4", 1}, {"in if 4", 0}, {"out if 4", 1}, {"tos 8", 1}, {"tos > 8", 0}, {"vlan 0", 1},
    {"icmp-type 0", 0}, {"flows 1", 1},
    {"after 2h ago", 1}, {"after 30m ago", 0}, {"before 30m ago", 1}, {"before 2h ago", 0},
    {"first seen > 2024-07-11T10:59", 1}, {"first seen > 2024-07-11T11:00", 0},
    {"first seen = 2024-07-11T11:00", 1}, {"last seen < 2024-07-11T11:00:03", 1},
    {"last seen < 2024-07-11T11:00:02", 0},
    {"src ip 10.4.*.* and dst port 445", 1}, {"src ip 10.4.*.* and dst port 446", 0},
    {"port 1 or port 445", 1}, {"not (port 1 or port 445)", 0}, {"not port 1 and port 445", 1},
  };
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
    if (m(t[i].f, &r) != t[i].want) fail_msg("'%s' on the v4 record: want %d", t[i].f, t[i].want);

  ba_record_t six = r;
  six.ipver = 6;
  static const uint8_t a6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  memcpy(six.src, a6, 16);
  six.src[15] = 2;
  memcpy(six.dst, a6, 16);
  static const struct { const char *f; int want; } t6[] = {
    {"ipv6", 1}, {"ipv4", 0}, {"ip 2001:db8::1", 1}, {"src ip 2001:db8::1", 0}, {"src ip 2001:db8::2", 1},
    {"net 2001:db8::/32", 1}, {"src net 2001:db9::/32", 0}, {"ip *.*.*.*", 0}, {"net 0.0.0.0/0", 0},
    {"ip in [2001:db8::2/128]", 1}, {"ip in [2001:db8::3, 10.0.0.0/8]", 0},
  };
  for (size_t i = 0; i < sizeof(t6) / sizeof(t6[0]); i++)
    if (m(t6[i].f, &six) != t6[i].want) fail_msg("'%s' on the v6 record: want %d", t6[i].f, t6[i].want);

  ba_record_t ic = v4rec(0x01020304, 0x05060708, 0, 8 << 8, 1, 0);
  assert_int_equal(m("icmp-type 8", &ic), 1);
  assert_int_equal(m("icmp-code 0", &ic), 1);
  assert_int_equal(m("icmp-type 0", &ic), 0);
}

/* nfdump's primitives on the extended flow fields. */
static void test_eval_ext(void **state) {
  (void)state;
  ba_record_t r = v4rec(0x0A040102, 0xC0A80709, 1234, 445, 17, 0);
  r.out_packets = 3;
  r.out_bytes = 700;
  ba_addr_set_v4(r.next_hop, 0x0A000001);
  static const uint8_t nh6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9};
  memcpy(r.bgp_next_hop, nh6, 16);
  ba_addr_set_v4(r.exporter, 0x7F000001);
  ba_addr_set_v4(r.xsrc, 0x01020304);
  r.xsrc_port = 4000;
  r.xdst_port = 80;
  r.src_mask = 24;
  r.dst_mask = 16;
  r.dst_tos = 32;
  r.vlan = 10;
  r.dst_vlan = 20;
  r.engine_type = 1;
  r.engine_id = 2;
  r.obs_domain = 77;
  r.nat_event = 1;
  r.fw_event = 3;
  r.fw_xevent = 1002;
  r.ingress_vrf = 5;
  r.egress_vrf = 6;
  r.mpls[0] = 100u << 4 | 3u << 1;
  r.mpls[1] = 200u << 4 | 1;
  r.in_src_mac = 0x001122334455ull;
  r.out_dst_mac = 0xAABBCCDDEEFFull;
  r.prev_as = 65001;
  r.next_as = 65002;
  r.direction = 1;
  r.aggr_flows = 4;
  static const struct { const char *f; int want; } t[] = {
    {"out packets 3", 1}, {"out bytes > 699", 1}, {"out bytes > 700", 0}, {"in bytes 5000", 1},
    {"bytes 700", 0}, {"next ip 10.0.0.1", 1}, {"next ip 10.0.0.2", 0}, {"next ip in [1.1.1.1 10.0.0.1]", 1},
    {"bgpnext ip 2001:db8::9", 1}, {"bgpnext ip 0.0.0.0", 0}, {"router ip 127.0.0.1", 1},
    {"router ip 127.0.0.2", 0}, {"xip 1.2.3.4", 1}, {"src xip 1.2.3.4", 1}, {"dst xip 1.2.3.4", 0},
    {"dst xip 0.0.0.0", 1}, {"xnet 1.2.0.0/16", 1}, {"src xport 4000", 1}, {"dst nport 80", 1},
    {"xport 81", 0}, {"src mask 24", 1}, {"dst mask 24", 0}, {"mask 16", 1}, {"tos 8", 1}, {"tos 32", 0},
    {"dst tos 32", 1}, {"src and dst tos > 4", 1}, {"vlan 20", 1}, {"src vlan 20", 0}, {"dst vlan 20", 1},
    {"engine-type 1", 1}, {"engine-id 1", 0}, {"engine-id > 1", 1}, {"observation domain id 77", 1},
    {"nat event add", 1}, {"nat event delete", 0}, {"asa event deny", 1}, {"asa event denied egress", 1},
    {"asa event denied ingress", 0}, {"asa xevent 1002", 1}, {"ingress vrf 5", 1}, {"egress vrf 5", 0},
    {"mpls label1 100", 1}, {"mpls label2 100", 0}, {"mpls exp1 3", 1}, {"mpls eos 200", 1},
    {"mpls eos 100", 0}, {"mpls any 200", 1}, {"mpls any 300", 0}, {"mac 00:11:22:33:44:55", 1},
    {"in src mac 00:11:22:33:44:55", 1}, {"out mac 00:11:22:33:44:55", 0},
    {"dst mac aa:bb:cc:dd:ee:ff", 1}, {"in dst mac aa:bb:cc:dd:ee:ff", 0}, {"prev as 65001", 1},
    {"next as 65001", 0}, {"as in [100 7]", 1}, {"dst as in [100 7]", 0}, {"src and dst as in [100 200]", 1},
    {"flowdir egress", 1}, {"flowdir 0", 0}, {"flows 4", 1}, {"flags 0", 0}, {"not flags S", 1},
  };
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
    if (m(t[i].f, &r) != t[i].want) fail_msg("'%s' on the extended record: want %d", t[i].f, t[i].want);
  /* numeric flags: exact equality on TCP flows, as nfdump */
  ba_record_t syn = v4rec(1, 2, 3, 4, 6, BA_TCP_SYN);
  ba_record_t synack = v4rec(1, 2, 3, 4, 6, BA_TCP_SYN | BA_TCP_ACK);
  assert_int_equal(m("flags 2", &syn), 1);
  assert_int_equal(m("flags 2", &synack), 0);
  assert_int_equal(m("flags 0x12", &synack), 1);
  assert_int_equal(m("flags S", &synack), 1);
  assert_int_equal(m("not flags 2", &synack), 1);
  assert_int_equal(m("flags > 2", &synack), 1);
}

/* Flat chains of 100,000 terms and lists of 100,000 items compile into trees
 * every recursive walk survives, and evaluate like a loop over the terms. */
static void test_huge_filters(void **state) {
  (void)state;
  enum { N = 100000 };
  size_t cap = (size_t)N * 32;
  char *f = malloc(cap);
  assert_non_null(f);
  ba_record_t r = v4rec(0x0A000001, 0x0A000002, 5555, 7777, 6, 0);
  for (int variant = 0; variant < 4; variant++) {
    size_t k = 0;
    if (variant == 2) k += (size_t)snprintf(f + k, cap - k, "port in [");
    if (variant == 3) k += (size_t)snprintf(f + k, cap - k, "ip in [");
    for (int i = 0; i < N; i++) {
      unsigned v = (unsigned)(i * 7919u) % 65536u;
      if (variant == 0) k += (size_t)snprintf(f + k, cap - k, "%sport %u", i ? " or " : "", v);
      if (variant == 1) k += (size_t)snprintf(f + k, cap - k, "%snot port %u", i ? " and " : "", v);
      if (variant == 2) k += (size_t)snprintf(f + k, cap - k, "%u ", v);
      if (variant == 3) k += (size_t)snprintf(f + k, cap - k, "10.%u.%u.%u ", i >> 16, (i >> 8) & 255, i & 255);
    }
    if (variant >= 2) k += (size_t)snprintf(f + k, cap - k, "]");
    int present = 0; /* does any term name the record's ports? */
    for (int i = 0; i < N; i++) {
      unsigned v = (unsigned)(i * 7919u) % 65536u;
      if (v == 5555 || v == 7777) present = 1;
    }
    int want = variant == 0 || variant == 2 ? present : variant == 1 ? !present : 1;
    ba_query_t *q;
    assert_int_equal(ba_query_create(&q), 0);
    if (ba_query_compile(q, f) != 0) fail_msg("variant %d: %s", variant, ba_query_errmsg(q));
    assert_int_equal(ba_query_match(q, &r), want);
    char dump[256];
    size_t len;
    assert_int_equal(ba_query_dump(q, dump, sizeof(dump), &len), 0);
    assert_true(variant >= 2 || len > sizeof(dump));
    ba_query_free(q);
  }
  free(f);
}

static void test_window(void **state) {
  (void)state;
  ba_query_window_t w;
  assert_int_equal(ba_query_parse_window("2024/07/11.09:15-2024/07/11.10:00:30", 0, 0, &w), 0);
  assert_true(w.start_ns == 1720689300ull * 1000000000ull);
  assert_true(w.end_ns == 1720692030ull * 1000000000ull);
  assert_int_equal(ba_query_parse_window("2024/07/11.09:15:07", 0, 0, &w), 0);
  assert_true(w.start_ns == 1720689307ull * 1000000000ull);
  assert_true(w.end_ns == UINT64_MAX);
  assert_int_equal(ba_query_parse_window("3h", NOW_NS, 0, &w), 0);
  assert_true(w.start_ns == NOW_NS - 3ull * 3600 * 1000000000ull);
  assert_true(w.end_ns == NOW_NS);
  assert_int_equal(ba_query_parse_window("+600", NOW_NS, 0, &w), 0);
  assert_true(w.rel_s == 600);
  assert_int_equal(ba_query_parse_window("-3600", NOW_NS, 0, &w), 0);
  assert_true(w.rel_s == -3600);
  assert_int_equal(ba_query_parse_window("+0", 0, 0, &w), BA_ERR_SYNTAX);
  assert_int_equal(ba_query_parse_window("+6x", 0, 0, &w), BA_ERR_SYNTAX);
  assert_int_equal(ba_query_parse_window("2024/07/11", 0, 0, &w), 0);
  assert_int_equal(ba_query_parse_window("yesterday", 0, 0, &w), BA_ERR_SYNTAX);
  assert_int_equal(ba_query_parse_window("2024/07/11.10:00-2024/07/11.09:00", 0, 0, &w), BA_ERR_SYNTAX);
  /* local time: Europe/Prague is UTC+2 in July */
  setenv("TZ", "Europe/Prague", 1);
  tzset();
  assert_int_equal(ba_query_parse_window("2024/07/11.09:15-2024/07/11.10:00", 0, 1, &w), 0);
  assert_true(w.start_ns == (1720689300ull - 7200) * 1000000000ull);
  assert_true(w.end_ns == (1720692000ull - 7200) * 1000000000ull);
  unsetenv("TZ");
  tzset();
  /* whole-flow window vs started-in-window */
  ba_record_t r = v4rec(1, 2, 3, 4, 17, 0); /* starts 11:00:00, lasts 2.5 s */
  uint64_t s0 = NOW_NS - 3600ull * 1000000000ull;
  for (int whole = 0; whole < 2; whole++) {
    ba_query_t *q;
    assert_int_equal(ba_query_create(&q), 0);
    assert_int_equal(ba_query_compile(q, "any"), 0);
    assert_int_equal(ba_query_restrict_time(q, s0, s0 + 2000000000ull, whole), 0);
    assert_int_equal(ba_query_match(q, &r), !whole);
    ba_query_free(q);
    assert_int_equal(ba_query_create(&q), 0);
    assert_int_equal(ba_query_compile(q, "proto udp"), 0);
    assert_int_equal(ba_query_restrict_time(q, s0, s0 + 2500000000ull, whole), 0);
    assert_int_equal(ba_query_match(q, &r), 1);
    ba_query_free(q);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_good),
    cmocka_unit_test(test_bad),
    cmocka_unit_test(test_deep_nesting),
    cmocka_unit_test(test_eval),
    cmocka_unit_test(test_eval_ext),
    cmocka_unit_test(test_huge_filters),
    cmocka_unit_test(test_window),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* IPFIX over TCP (RFC 7011 section 10.4) through the collector, against what
 * the test's connections sent: messages cut at random byte boundaries by
 * the stream are framed whole, every record arrives once with its values;
 * a connection that is not IPFIX is closed and counted while the others go
 * on; a peer leaving mid-message is counted; bad "tcp:" addresses are
 * named in the error. Also the receive time every collected record carries,
 * and an exporter with a 1970 clock: reported, and moved by --rebase-time. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "flow_builder.h"
#include "testsupport.h"

#define MSGS 200
#define RECS 25 /* records per data message */
#define TOTAL (MSGS * RECS)

static const uint16_t TPL[][2] = {{8, 4},  {12, 4}, {7, 2},  {11, 2},  {4, 1},
                                  {2, 8},  {1, 8},  {152, 8}, {153, 8}};
#define NF (sizeof(TPL) / sizeof(TPL[0]))

static void template_msg(buf_t *b, uint32_t secs) {
  ipfix_hdr(b, secs, 7);
  size_t s = set_begin(b, 2);
  u16(b, 256);
  u16(b, (uint16_t)NF);
  for (size_t i = 0; i < NF; i++) u16(b, TPL[i][0]), u16(b, TPL[i][1]);
  set_end(b, s);
  ipfix_end(b);
}

/* The values of record k (0 <= k < TOTAL): its number in the source address
 * 10.1.hi.lo and the counters, so any lost, doubled or altered record shows. */
static void data_msg(buf_t *b, unsigned m, uint32_t secs) {
  ipfix_hdr(b, secs, 7);
  size_t s = set_begin(b, 256);
  for (unsigned i = 0; i < RECS; i++) {
    unsigned k = m * RECS + i;
    u32(b, 0x0a010000u | k);
    u32(b, 0xc0000201u);
    u16(b, (uint16_t)(1024 + k % 50000));
    u16(b, 443);
    u8(b, 6);
    u64(b, 1 + k % 7);
    u64(b, 100 + k);
    u64(b, (uint64_t)secs * 1000 + k);
    u64(b, (uint64_t)secs * 1000 + k + 500);
  }
  set_end(b, s);
  ipfix_end(b);
}

static int connect_to(const char *addr) {
  const char *colon = strrchr(addr, ':');
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)atoi(colon + 1));
  sa.sin_addr.s_addr = htonl(0x7f000001);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
  return fd;
}

/* Writes n bytes in pieces of 1..300 bytes, so messages are cut anywhere. */
static void send_cut(int fd, const uint8_t *p, size_t n, unsigned *seed) {
  while (n) {
    size_t k = 1 + (size_t)(rand_r(seed) % 300);
    if (k > n) k = n;
    ssize_t w = send(fd, p, k, MSG_NOSIGNAL);
    assert_true(w > 0);
    p += w;
    n -= (size_t)w;
  }
}

typedef struct {
  uint8_t seen[TOTAL];
  size_t n, bad;
} tally_t;

static int tally(void *ctx, const ba_record_t *recs, size_t n) {
  tally_t *t = ctx;
  for (size_t i = 0; i < n; i++) {
    const ba_record_t *r = &recs[i];
    uint32_t src = ba_addr_get_v4(r->src);
    unsigned k = src & 0xffff;
    t->n++;
    if ((src >> 16) != 0x0a01 || k >= TOTAL) {
      t->bad++;
      continue;
    }
    t->seen[k]++;
    uint64_t start = ((uint64_t)T0 * 1000 + k) * 1000000ull;
    if (ba_addr_get_v4(r->dst) != 0xc0000201u || r->src_port != 1024 + k % 50000 || r->dst_port != 443 ||
        r->proto != 6 || r->packets != 1 + k % 7 || r->bytes != 100 + k || r->first_ns != start ||
        r->last_ns != start + 500 * 1000000ull)
      t->bad++;
  }
  return 0;
}

static void test_ipfix_over_tcp(void **state) {
  (void)state;
  ba_collector_opts_t o;
  ba_collector_opts_init(&o);
  o.listens[0] = "tcp:127.0.0.1:0";
  o.listens[1] = "127.0.0.1:0"; /* a UDP socket beside it keeps working */
  o.nlisten = 2;
  ba_collector_t *c;
  char err[256];
  assert_int_equal(ba_collector_start(&o, &c, err, sizeof(err)), 0);
  ba_collector_socket_t so[4];
  assert_int_equal(ba_collector_sockets(c, so, 4), 2);
  assert_true(so[0].tcp);
  assert_false(so[1].tcp);

  /* the whole export as one byte stream */
  static buf_t b;
  uint8_t *stream = malloc((size_t)(MSGS + 1) * 2048);
  size_t len = 0;
  template_msg(&b, T0);
  memcpy(stream, b.b, b.n), len += b.n;
  for (unsigned m = 0; m < MSGS; m++) {
    data_msg(&b, m, T0);
    memcpy(stream + len, b.b, b.n), len += b.n;
  }
  unsigned seed = 42;
  int a = connect_to(so[0].address);
  send_cut(a, stream, len / 2, &seed);
  /* a connection that speaks HTTP, not IPFIX */
  int g = connect_to(so[0].address);
  const char http[] = "GET / HTTP/1.0\r\n\r\n";
  assert_int_equal(send(g, http, sizeof(http) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(http) - 1);
  /* a peer leaving in the middle of its template message */
  int h = connect_to(so[0].address);
  template_msg(&b, T0);
  assert_int_equal(send(h, b.b, 20, MSG_NOSIGNAL), 20);
  close(h);
  send_cut(a, stream + len / 2, len - len / 2, &seed);

  tally_t *t = calloc(1, sizeof(*t));
  for (int i = 0; i < 500 && t->n < TOTAL; i++) assert_int_equal(ba_collector_poll(c, 20, tally, t), 0);
  for (int i = 0; i < 200; i++) { /* the closed connections' counters */
    ba_collector_sockets(c, so, 4);
    if (so[0].tcp_bad_framing && so[0].tcp_truncated) break;
    struct timespec nap = {0, 10 * 1000000L};
    nanosleep(&nap, NULL);
  }
  close(a);
  close(g);
  assert_int_equal(ba_collector_stop(c, tally, t), 0);
  assert_int_equal(t->n, TOTAL);
  assert_int_equal(t->bad, 0);
  for (unsigned k = 0; k < TOTAL; k++) assert_int_equal(t->seen[k], 1);
  ba_collector_sockets(c, so, 4);
  assert_int_equal(so[0].tcp_accepted, 3);
  assert_int_equal(so[0].tcp_bad_framing, 1);
  assert_int_equal(so[0].tcp_truncated, 1);
  assert_int_equal(so[0].received, MSGS + 1);
  ba_collector_stats_t st;
  ba_collector_get_stats(c, &st);
  assert_int_equal(st.counts.records, TOTAL);
  ba_collector_free(c);
  free(t);
  free(stream);
}

static uint64_t wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

typedef struct {
  ba_record_t r[RECS];
  size_t n;
} few_t;

static int keep(void *ctx, const ba_record_t *recs, size_t n) {
  few_t *f = ctx;
  for (size_t i = 0; i < n && f->n < RECS; i++) f->r[f->n++] = recs[i];
  return 0;
}

/* One message of an exporter whose clock says 1970-01-02: every record
 * carries its receive time; the exporter is reported as having a wrong
 * clock; with BA_FLOW_REBASE_TIME (collect --rebase-time) its flows move by
 * (receive - export) time, durations and offsets kept. */
static void test_receive_time_and_rebase(void **state) {
  (void)state;
  const uint32_t secs = 86400;
  for (int rebase = 0; rebase < 2; rebase++) {
    ba_collector_opts_t o;
    ba_collector_opts_init(&o);
    o.listens[0] = "tcp:127.0.0.1:0";
    o.nlisten = 1;
    if (rebase) o.decoder.flags |= BA_FLOW_REBASE_TIME;
    ba_collector_t *c;
    char err[256];
    assert_int_equal(ba_collector_start(&o, &c, err, sizeof(err)), 0);
    ba_collector_socket_t so[1];
    ba_collector_sockets(c, so, 1);
    static buf_t b;
    uint64_t t0 = wall_ns() / 1000000 * 1000000; /* the collector keeps whole ms */
    int fd = connect_to(so[0].address);
    template_msg(&b, secs);
    assert_int_equal(send(fd, b.b, b.n, MSG_NOSIGNAL), (ssize_t)b.n);
    data_msg(&b, 0, secs);
    assert_int_equal(send(fd, b.b, b.n, MSG_NOSIGNAL), (ssize_t)b.n);
    few_t f = {.n = 0};
    for (int i = 0; i < 500 && f.n < RECS; i++) assert_int_equal(ba_collector_poll(c, 20, keep, &f), 0);
    uint64_t t1 = wall_ns();
    assert_int_equal(f.n, RECS);
    for (size_t i = 0; i < f.n; i++) {
      const ba_record_t *r = &f.r[i];
      unsigned k = ba_addr_get_v4(r->src) & 0xffff;
      assert_true(r->received_ns >= t0 && r->received_ns <= t1);
      uint64_t sent = ((uint64_t)secs * 1000 + k) * 1000000ull;
      if (!rebase) {
        assert_int_equal(r->first_ns, sent);
      } else { /* moved by receive - export: to the receive time's neighbourhood */
        assert_int_equal(r->first_ns - sent, r->received_ns - (uint64_t)secs * 1000000000ull);
      }
      assert_int_equal(r->last_ns - r->first_ns, 500 * 1000000ull);
    }
    ba_collector_exporter_t ex[2];
    assert_int_equal(ba_collector_exporters(c, ex, 2), 1);
    assert_true(ex[0].clock_suspicious);
    assert_true(ex[0].export_skew_s < -86400);
    close(fd);
    assert_int_equal(ba_collector_stop(c, keep, &f), 0);
    ba_collector_free(c);
  }
}

static void test_bad_tcp_addresses(void **state) {
  (void)state;
  const char *bad[] = {"tcp:", "tcp:nonsense", "tcp:127.0.0.1:99999", "sctp:127.0.0.1:4739"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    ba_collector_opts_t o;
    ba_collector_opts_init(&o);
    o.listens[0] = bad[i];
    o.nlisten = 1;
    ba_collector_t *c = NULL;
    char err[256] = "";
    assert_true(ba_collector_start(&o, &c, err, sizeof(err)) < 0);
    assert_null(c);
    assert_non_null(strstr(err, bad[i]));
  }
  /* the same port for UDP and TCP is two sockets, not a duplicate */
  ba_collector_opts_t o;
  ba_collector_opts_init(&o);
  o.listens[0] = "127.0.0.1:0";
  o.listens[1] = "tcp:127.0.0.1:0";
  o.nlisten = 2;
  ba_collector_t *c;
  char err[256];
  assert_int_equal(ba_collector_start(&o, &c, err, sizeof(err)), 0);
  ba_collector_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_ipfix_over_tcp),
    cmocka_unit_test(test_receive_time_and_rebase),
    cmocka_unit_test(test_bad_tcp_addresses),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

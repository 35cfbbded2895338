/* The UDP collector (library level) against what a test sender sent over
 * loopback: several listen addresses with several sockets each, the bounded
 * receive queue (drops counted per exporter, the decoded datagrams being
 * exactly the ones that found room), and bad options named in the error. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bitarc/ingest.h"
#include "testsupport.h"

#define RECS 30 /* flows per v5 datagram */
#define DGRAM_LEN (24 + RECS * 48)

/* A v5 datagram whose flows carry (exporter tag, sequence, record) in their
 * source address: 10.tag.seq_hi.seq_lo, source port = record index. */
static size_t v5_datagram(unsigned tag, unsigned seq, uint8_t *b) {
  memset(b, 0, DGRAM_LEN);
  b[1] = 5;
  b[3] = RECS;
  uint32_t secs = 1700000000u;
  b[8] = (uint8_t)(secs >> 24), b[9] = (uint8_t)(secs >> 16), b[10] = (uint8_t)(secs >> 8), b[11] = (uint8_t)secs;
  for (int i = 0; i < RECS; i++) {
    uint8_t *r = b + 24 + 48 * i;
    r[0] = 10, r[1] = (uint8_t)tag, r[2] = (uint8_t)(seq >> 8), r[3] = (uint8_t)seq; /* src */
    r[4] = 192, r[5] = 0, r[6] = 2, r[7] = 1;                                         /* dst */
    r[19] = 1;                                                                        /* packets */
    r[23] = 100;                                                                      /* bytes */
    r[32] = 0, r[33] = (uint8_t)i;                                                    /* src port */
    r[35] = 80;                                                                       /* dst port */
    r[38] = 6;                                                                        /* tcp */
  }
  return DGRAM_LEN;
}

/* A UDP socket bound to src (127.0.0.x, any port). */
static int sender(const char *src) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  assert_true(fd >= 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  assert_int_equal(inet_pton(AF_INET, src, &a.sin_addr), 1);
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  return fd;
}

static void send_to(int fd, const char *addr_port, const uint8_t *b, size_t n) {
  char host[64];
  const char *c = strrchr(addr_port, ':');
  assert_non_null(c);
  memcpy(host, addr_port, (size_t)(c - addr_port));
  host[c - addr_port] = 0;
  struct sockaddr_in a;
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)atoi(c + 1));
  assert_int_equal(inet_pton(AF_INET, host, &a.sin_addr), 1);
  assert_int_equal(sendto(fd, b, n, 0, (struct sockaddr *)&a, sizeof(a)), (ssize_t)n);
}

typedef struct {
  uint64_t n;
  uint8_t seen[3][2048]; /* [tag][seq]: records seen of that datagram */
} sink_t;

static int count_sink(void *ctx, const ba_record_t *r, size_t n) {
  sink_t *s = ctx;
  for (size_t i = 0; i < n; i++) {
    unsigned tag = r[i].src[13], seq = (unsigned)r[i].src[14] << 8 | r[i].src[15];
    assert_true(tag < 3 && seq < 2048);
    s->seen[tag][seq]++;
  }
  s->n += n;
  return 0;
}

static void wait_received(ba_collector_t *c, uint64_t want) {
  ba_collector_stats_t st;
  for (int i = 0; i < 1000; i++) {
    ba_collector_get_stats(c, &st);
    if (st.received >= want) break;
    usleep(10000);
  }
  assert_int_equal(st.received, want);
}

static const ba_collector_exporter_t *find_exporter(const ba_collector_exporter_t *e, size_t n, const char *ip) {
  for (size_t i = 0; i < n; i++) {
    char a[64];
    ba_addr_format(e[i].addr, a, sizeof(a));
    if (!strcmp(a, ip)) return &e[i];
  }
  return NULL;
}

/* The queue holds only ~90 datagrams and nobody polls while 300 arrive from
 * two exporters: the rest is dropped, counted for the exporter that sent it,
 * and exactly the datagrams that found room are decoded. */
static void test_queue_full_per_exporter(void **state) {
  (void)state;
  ba_collector_opts_t o;
  ba_collector_opts_init(&o);
  o.listen = "127.0.0.1:0";
  o.queue_bytes = 140000;
  ba_collector_t *c = NULL;
  char err[256];
  assert_int_equal(ba_collector_start(&o, &c, err, sizeof(err)), 0);
  const char *addr = ba_collector_address(c);
  int fa = sender("127.0.0.1"), fb = sender("127.0.0.2");
  uint8_t d[DGRAM_LEN];
  unsigned sent_a = 0, sent_b = 0;
  for (unsigned i = 0; i < 300; i++) { /* A, A, B, A, A, B, ... */
    if (i % 3 == 2) send_to(fb, addr, d, v5_datagram(2, sent_b++, d));
    else send_to(fa, addr, d, v5_datagram(1, sent_a++, d));
  }
  wait_received(c, 300);
  ba_collector_stats_t st;
  ba_collector_get_stats(c, &st);
  assert_true(st.queue_dropped > 100 && st.queue_dropped < 300);
  assert_true(st.queue_peak <= st.queue_capacity && st.queue_capacity <= 140000);
  sink_t *s = calloc(1, sizeof(*s));
  assert_int_equal(ba_collector_poll(c, 0, count_sink, s), 0);
  assert_int_equal(ba_collector_stop(c, count_sink, s), 0);
  ba_collector_get_stats(c, &st);
  assert_int_equal(st.kernel_drops, 0);
  assert_int_equal(st.counts.datagrams + st.queue_dropped, 300);
  assert_int_equal(st.counts.dropped[BA_DROP_QUEUE_FULL], st.queue_dropped);
  assert_int_equal(s->n, st.counts.datagrams * RECS);
  assert_int_equal(st.counts.records, s->n);
  /* Per exporter: received = sent, decoded + queue-full = received. */
  ba_collector_exporter_t ex[4];
  assert_int_equal(ba_collector_exporters(c, ex, 4), 2);
  const ba_collector_exporter_t *ea = find_exporter(ex, 2, "127.0.0.1"), *eb = find_exporter(ex, 2, "127.0.0.2");
  assert_non_null(ea);
  assert_non_null(eb);
  assert_int_equal(ea->received, sent_a);
  assert_int_equal(eb->received, sent_b);
  assert_int_equal(ea->received_bytes, (uint64_t)sent_a * DGRAM_LEN);
  assert_int_equal(ea->counts.datagrams + ea->counts.dropped[BA_DROP_QUEUE_FULL], sent_a);
  assert_int_equal(eb->counts.datagrams + eb->counts.dropped[BA_DROP_QUEUE_FULL], sent_b);
  assert_int_equal(ea->counts.dropped[BA_DROP_QUEUE_FULL] + eb->counts.dropped[BA_DROP_QUEUE_FULL], st.queue_dropped);
  assert_true(ea->counts.dropped[BA_DROP_QUEUE_FULL] > 0 && eb->counts.dropped[BA_DROP_QUEUE_FULL] > 0);
  /* The decoded datagrams are the first ones sent (the queue only filled),
   * each complete; the dropped ones left nothing. */
  unsigned kept = (unsigned)st.counts.datagrams, ia = 0, ib = 0;
  for (unsigned i = 0; i < 300; i++) {
    unsigned tag = i % 3 == 2 ? 2 : 1, seq = tag == 2 ? ib++ : ia++;
    assert_int_equal(s->seen[tag][seq], i < kept ? RECS : 0);
  }
  free(s);
  close(fa);
  close(fb);
  ba_collector_free(c);
}

/* A small queue wraps many times while the poller keeps a backlog: past its
 * middle the receiver restarts at offset 0 with datagrams still queued
 * (skipping the tail) or with none. Every datagram is decoded once, whole,
 * nothing is dropped, and the queue fill reported never counts the skipped
 * tail (it stays within the largest backlog: two batches). */
static void test_queue_restarts_with_backlog(void **state) {
  (void)state;
  enum { BATCH_MAX = 10, TOTAL = 2048 }; /* batches of 4..10 datagrams: restarts at varying offsets */
  ba_collector_opts_t o;
  ba_collector_opts_init(&o);
  o.listen = "127.0.0.1:0";
  o.queue_bytes = 256u << 10;
  ba_collector_t *c = NULL;
  char err[256];
  assert_int_equal(ba_collector_start(&o, &c, err, sizeof(err)), 0);
  const char *addr = ba_collector_address(c);
  int fd = sender("127.0.0.1");
  uint8_t d[DGRAM_LEN];
  sink_t *s = calloc(1, sizeof(*s));
  assert_non_null(s);
  unsigned seq = 0;
  uint64_t peak_seen = 0;
  for (unsigned round = 0; seq < TOTAL; round++) {
    unsigned batches = 1 + round % 2; /* polled with one or two batches queued */
    for (unsigned b = 0; b < batches && seq < TOTAL; b++) {
      unsigned batch = 4 + (round * 3 + b) % (BATCH_MAX - 3);
      for (unsigned k = 0; k < batch && seq < TOTAL; k++) send_to(fd, addr, d, v5_datagram(1, seq++, d));
      wait_received(c, seq);
    }
    ba_collector_stats_t st;
    ba_collector_get_stats(c, &st);
    if (st.queue_bytes > peak_seen) peak_seen = st.queue_bytes;
    assert_int_equal(ba_collector_poll(c, 0, count_sink, s), 0);
  }
  assert_int_equal(ba_collector_stop(c, count_sink, s), 0);
  ba_collector_stats_t st;
  ba_collector_get_stats(c, &st);
  assert_int_equal(st.kernel_drops, 0);
  assert_int_equal(st.queue_dropped, 0);
  assert_int_equal(st.counts.datagrams, TOTAL);
  assert_int_equal(s->n, (uint64_t)TOTAL * RECS);
  for (unsigned i = 0; i < TOTAL; i++) assert_int_equal(s->seen[1][i], RECS);
  uint64_t two_batches = 2 * BATCH_MAX * (uint64_t)(DGRAM_LEN + 64);
  if (st.queue_peak > two_batches || peak_seen > two_batches)
    fail_msg("queue fill %llu / peak %llu: more than two batches (%llu)", (unsigned long long)peak_seen,
             (unsigned long long)st.queue_peak, (unsigned long long)two_batches);
  free(s);
  close(fd);
  ba_collector_free(c);
}

/* Two addresses with two SO_REUSEPORT sockets each: every socket is bound,
 * the sockets of one address share its port, and every datagram sent to
 * either address is decoded once. */
static void test_several_listens(void **state) {
  (void)state;
  ba_collector_opts_t o;
  ba_collector_opts_init(&o);
  o.listens[0] = "127.0.0.1:0";
  o.listens[1] = "127.0.0.1:0";
  o.nlisten = 2;
  o.sockets = 2;
  o.queue_bytes = 16u << 20;
  ba_collector_t *c = NULL;
  char err[256];
  assert_int_equal(ba_collector_start(&o, &c, err, sizeof(err)), 0);
  ba_collector_socket_t so[8];
  assert_int_equal(ba_collector_sockets(c, so, 8), 4);
  assert_string_equal(so[0].address, so[1].address);
  assert_string_equal(so[2].address, so[3].address);
  assert_string_not_equal(so[0].address, so[2].address);
  assert_int_equal(so[0].queue_capacity + so[1].queue_capacity + so[2].queue_capacity + so[3].queue_capacity,
                   16u << 20);
  for (int i = 0; i < 4; i++) {
    assert_true(so[i].rcvbuf_granted > 0);
    if (so[i].rcvbuf_forced) assert_int_equal(so[i].rcvbuf_granted, so[i].rcvbuf_asked);
  }
  /* 8 sender sockets (different source ports, so the kernel spreads them),
   * each sending to both addresses. */
  int fds[8];
  uint8_t d[DGRAM_LEN];
  unsigned seq = 0;
  for (int k = 0; k < 8; k++) fds[k] = sender("127.0.0.1");
  for (int round = 0; round < 10; round++)
    for (int k = 0; k < 8; k++)
      for (int a = 0; a < 2; a++) send_to(fds[k], so[2 * a].address, d, v5_datagram(a, seq++, d));
  wait_received(c, seq);
  sink_t *s = calloc(1, sizeof(*s));
  assert_int_equal(ba_collector_stop(c, count_sink, s), 0);
  assert_int_equal(s->n, (uint64_t)seq * RECS);
  for (unsigned i = 0; i < seq; i++) assert_int_equal(s->seen[(i % 2)][i], RECS);
  assert_int_equal(ba_collector_sockets(c, so, 8), 4);
  for (int a = 0; a < 2; a++) assert_int_equal(so[2 * a].received + so[2 * a + 1].received, seq / 2);
  ba_collector_exporter_t ex[2];
  assert_int_equal(ba_collector_exporters(c, ex, 2), 1); /* one address, merged over the sockets */
  assert_int_equal(ex[0].received, seq);
  assert_int_equal(ex[0].counts.records, (uint64_t)seq * RECS);
  free(s);
  for (int k = 0; k < 8; k++) close(fds[k]);
  ba_collector_free(c);
}

static void expect_error(ba_collector_opts_t *o, int code, const char *needle) {
  ba_collector_t *c = (ba_collector_t *)1;
  char err[256] = "";
  assert_int_equal(ba_collector_start(o, &c, err, sizeof(err)), code);
  assert_null(c);
  if (!strstr(err, needle)) fail_msg("error '%s' does not name '%s'", err, needle);
}

static void test_bad_options(void **state) {
  (void)state;
  ba_collector_opts_t o;
  ba_collector_opts_init(&o);
  o.listens[0] = "127.0.0.1:39871";
  o.listens[1] = "127.0.0.1:39871";
  o.nlisten = 2;
  expect_error(&o, BA_ERR_INVALID, "'127.0.0.1:39871' is given twice");
  o.listens[1] = "127.0.0.1:99999";
  expect_error(&o, BA_ERR_SYNTAX, "'127.0.0.1:99999'");
  o.listens[1] = "no-such-host:2055";
  expect_error(&o, BA_ERR_SYNTAX, "'no-such-host:2055'");
  o.nlisten = 1;
  o.queue_bytes = 1000;
  expect_error(&o, BA_ERR_INVALID, "too small");
  o.queue_bytes = 0;
  o.sockets = BA_COLLECTOR_MAX_SOCKETS + 1;
  expect_error(&o, BA_ERR_INVALID, "sockets");
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_queue_full_per_exporter),
    cmocka_unit_test(test_queue_restarts_with_backlog),
    cmocka_unit_test(test_several_listens),
    cmocka_unit_test(test_bad_options),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Flows from packets (src/ingest/flowagg.c) against a naive reference that
 * scans every earlier flow of the same 5-tuple: random packets over a few
 * tuples with gaps around the idle timeout, and the packets of real shared
 * captures. Totals (packets, bytes) are checked too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitarc/ingest.h"
#include "ingest/flowagg.h"
#include "testsupport.h"

static int same5(const ba_record_t *a, const ba_record_t *b) {
  return a->src_port == b->src_port && a->dst_port == b->dst_port && a->proto == b->proto &&
         !memcmp(a->src, b->src, 16) && !memcmp(a->dst, b->dst, 16);
}

/* The reference: the latest flow of the packet's tuple, found by a backward
 * scan; extended when the packet is within idle of its span. */
static size_t naive(const ba_record_t *p, size_t n, uint64_t idle, ba_record_t *out) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (!p[i].ipver) continue;
    long j = (long)m - 1;
    while (j >= 0 && !same5(&out[j], &p[i])) j--;
    if (j >= 0 && p[i].first_ns <= out[j].last_ns + idle && p[i].first_ns + idle >= out[j].first_ns) {
      out[j].packets += p[i].packets;
      out[j].bytes += p[i].bytes;
      out[j].tcp_flags |= p[i].tcp_flags;
      if (p[i].first_ns > out[j].last_ns) out[j].last_ns = p[i].first_ns;
      continue;
    }
    out[m] = p[i];
    out[m].kind = BA_REC_FLOW;
    out[m].frame = NULL;
    out[m].caplen = out[m].wirelen = 0;
    out[m].linktype = 0;
    m++;
  }
  return m;
}

static void check(const ba_record_t *p, size_t n, uint64_t idle, size_t batch) {
  ba_flowagg_t *a;
  assert_int_equal(ba_flowagg_create(idle, &a), BA_OK);
  for (size_t i = 0; i < n; i += batch)
    assert_int_equal(ba_flowagg_add(a, p + i, n - i < batch ? n - i : batch), BA_OK);
  size_t m;
  const ba_record_t *got = ba_flowagg_flows(a, &m);
  ba_record_t *want = calloc(n + 1, sizeof *want);
  assert_non_null(want);
  size_t wm = naive(p, n, idle, want);
  assert_int_equal(m, wm);
  uint64_t pk = 0, by = 0, ipk = 0, iby = 0;
  for (size_t i = 0; i < m; i++) {
    assert_int_equal(got[i].kind, BA_REC_FLOW);
    assert_null(got[i].frame);
    assert_int_equal(got[i].caplen, 0);
    assert_true(same5(&got[i], &want[i]));
    assert_int_equal(got[i].first_ns, want[i].first_ns);
    assert_int_equal(got[i].last_ns, want[i].last_ns);
    assert_int_equal(got[i].packets, want[i].packets);
    assert_int_equal(got[i].bytes, want[i].bytes);
    assert_int_equal(got[i].tcp_flags, want[i].tcp_flags);
    pk += got[i].packets;
    by += got[i].bytes;
  }
  for (size_t i = 0; i < n; i++)
    if (p[i].ipver) {
      ipk += p[i].packets;
      iby += p[i].bytes;
    }
  assert_int_equal(pk, ipk);
  assert_int_equal(by, iby);
  free(want);
  ba_flowagg_free(a);
}

static void test_random(void **state) {
  (void)state;
  ba_rng_t g;
  ba_rng_seed(&g, 7);
  for (int round = 0; round < 20; round++) {
    size_t n = 1 + ba_rng_below(&g, 4000), ntup = 1 + ba_rng_below(&g, 3000);
    uint64_t idle = 1000 + ba_rng_below(&g, 100000);
    ba_record_t *p = calloc(n, sizeof *p);
    assert_non_null(p);
    uint64_t t = 1000000;
    for (size_t i = 0; i < n; i++) {
      uint64_t k = ba_rng_zipf(&g, ntup, 1.1);
      p[i].kind = BA_REC_PACKET;
      p[i].ipver = ba_rng_below(&g, 20) ? 4 : 0;
      ba_addr_set_v4(p[i].src, 0x0a000000u + (uint32_t)(k % 37));
      ba_addr_set_v4(p[i].dst, 0x0b000000u + (uint32_t)(k / 37 % 11));
      p[i].src_port = (uint16_t)(k % 5);
      p[i].dst_port = (uint16_t)(k / 5 % 3);
      p[i].proto = (uint8_t)(k & 1 ? 6 : 17);
      /* mostly forward in time, sometimes back (reordered captures) */
      t = ba_rng_below(&g, 10) ? t + ba_rng_below(&g, 2 * idle) : t - ba_rng_below(&g, t / 2 + 1);
      p[i].first_ns = p[i].last_ns = t;
      p[i].packets = 1;
      p[i].bytes = 40 + ba_rng_below(&g, 1500);
      p[i].tcp_flags = (uint8_t)ba_rng_next(&g);
    }
    check(p, n, idle, 1 + ba_rng_below(&g, 300));
    free(p);
  }
}

static void test_rejects(void **state) {
  (void)state;
  ba_flowagg_t *a;
  assert_int_equal(ba_flowagg_create(10, &a), BA_OK);
  ba_record_t f;
  memset(&f, 0, sizeof f);
  f.kind = BA_REC_FLOW;
  assert_int_equal(ba_flowagg_add(a, &f, 1), BA_ERR_INVALID);
  assert_int_equal(ba_flowagg_add(a, NULL, 1), BA_ERR_INVALID);
  assert_int_equal(ba_flowagg_add(a, NULL, 0), BA_OK);
  ba_flowagg_free(a);
  ba_flowagg_free(NULL);
  assert_int_equal(ba_flowagg_create(10, NULL), BA_ERR_INVALID);
}

/* Real packets: every shared capture read as packets by the library. */
typedef struct {
  ba_record_t *r;
  size_t n, cap;
} pk_t;

static int keep(void *ctx, const ba_record_t *r, size_t n) {
  pk_t *k = ctx;
  if (k->n + n > k->cap) {
    k->cap = (k->n + n) * 2;
    k->r = realloc(k->r, k->cap * sizeof *k->r);
    assert_non_null(k->r);
  }
  memcpy(k->r + k->n, r, n * sizeof *r);
  for (size_t i = 0; i < n; i++) k->r[k->n + i].frame = NULL; /* borrowed: not kept */
  k->n += n;
  return 0;
}

static void read_one(const char *path, void *ctx) {
  ba_capture_opts_t o;
  memset(&o, 0, sizeof o);
  o.as = BA_INGEST_PACKETS;
  (void)ba_capture_ingest(path, NULL, &o, keep, ctx, NULL); /* damaged files: the packets before the damage */
}

static void test_real_captures(void **state) {
  (void)state;
  const char *dir = ba_test_shared("traces/chrissanders__packets");
  static const char *const exts[] = {"pcap", "pcapng", NULL};
  pk_t k = {0};
  if (!dir || ba_test_walk(dir, exts, read_one, &k) == 0 || k.n == 0) {
    printf("no shared captures, skipped\n");
    skip();
  }
  printf("%zu packets\n", k.n);
  check(k.r, k.n, 60000000000ull, 4096);
  free(k.r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random),
      cmocka_unit_test(test_rejects),
      cmocka_unit_test(test_real_captures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

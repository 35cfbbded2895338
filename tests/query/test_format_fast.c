/* The csv writer's two paths and its date cache against naive references:
 * the unchecked line (room for a whole line) against the checked one (a
 * buffer just large enough), on random records (IPv4, IPv6, mapped, zero
 * addresses, large numbers, MACs, MPLS labels); and the dates of every
 * format against strftime of localtime_r/gmtime_r second by second across
 * minute, DST and zone boundaries, in zones with half-hour, 45-minute and
 * odd-second offsets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bitarc/query.h"
#include "testsupport.h"

static void rand_addr(ba_rng_t *g, uint8_t a[16]) {
  memset(a, 0, 16);
  switch (ba_rng_below(g, 6)) {
    case 0: break; /* all zero */
    case 5: /* near the IPv4 forms: ::1, ::ff00:0:x, ::ffff:..., ::1:ffff:x */
      a[15] = (uint8_t)ba_rng_below(g, 3);
      a[10] = ba_rng_below(g, 2) ? 0xff : 0;
      a[11] = ba_rng_below(g, 2) ? 0xff : 0;
      if (ba_rng_below(g, 4) == 0) a[ba_rng_below(g, 10)] = 1;
      break;
    case 1:        /* IPv4-mapped */
    case 2: ba_addr_set_v4(a, (uint32_t)ba_rng_next(g)); break;
    case 3: a[0] = 0x20, a[1] = 0x01, a[15] = (uint8_t)ba_rng_next(g); break; /* short IPv6 */
    default:
      for (int i = 0; i < 16; i++) a[i] = (uint8_t)ba_rng_next(g);
  }
}

/* A value of 0 to 20 decimal digits. */
static uint64_t rand_num(ba_rng_t *g) {
  unsigned bits = (unsigned)ba_rng_below(g, 65);
  return bits == 64 ? ba_rng_next(g) : ba_rng_next(g) & ((1ull << bits) - 1);
}

static ba_record_t rand_rec(ba_rng_t *g) {
  ba_record_t r;
  memset(&r, 0, sizeof r);
  r.ipver = (uint8_t)(ba_rng_below(g, 3) == 0 ? 0 : ba_rng_below(g, 2) ? 4 : 6);
  rand_addr(g, r.src);
  rand_addr(g, r.dst);
  rand_addr(g, r.next_hop);
  rand_addr(g, r.bgp_next_hop);
  rand_addr(g, r.exporter);
  /* 1970 to 2500, and within one second and minute of each other often */
  r.first_ns = ba_rng_below(g, 16725225600ull) * 1000000000ull + ba_rng_below(g, 1000000000ull);
  r.last_ns = ba_rng_below(g, 4) ? r.first_ns + ba_rng_below(g, 200000000000ull) : ba_rng_below(g, 16725225600ull) * 1000000000ull;
  r.received_ns = r.first_ns + ba_rng_below(g, 5000000000ull);
  r.src_port = (uint16_t)ba_rng_next(g);
  r.dst_port = (uint16_t)ba_rng_next(g);
  r.proto = (uint8_t)ba_rng_next(g);
  r.tcp_flags = (uint8_t)ba_rng_next(g);
  r.tos = (uint8_t)ba_rng_next(g);
  r.dst_tos = (uint8_t)ba_rng_next(g);
  r.packets = rand_num(g);
  r.bytes = rand_num(g);
  r.out_packets = rand_num(g);
  r.out_bytes = rand_num(g);
  r.in_if = (uint32_t)rand_num(g);
  r.out_if = (uint32_t)rand_num(g);
  r.src_as = (uint32_t)rand_num(g);
  r.dst_as = (uint32_t)rand_num(g);
  r.src_mask = (uint8_t)ba_rng_below(g, 129);
  r.dst_mask = (uint8_t)ba_rng_below(g, 129);
  r.direction = (uint8_t)ba_rng_below(g, 3);
  r.vlan = (uint16_t)ba_rng_next(g);
  r.dst_vlan = (uint16_t)ba_rng_next(g);
  if (ba_rng_below(g, 2)) {
    r.in_src_mac = ba_rng_next(g) & 0xFFFFFFFFFFFFull;
    r.out_dst_mac = ba_rng_next(g) & 0xFFFFFFFFFFFFull;
    r.in_dst_mac = ba_rng_below(g, 2) ? 0 : ba_rng_next(g) & 0xFFFFFFFFFFFFull;
    r.out_src_mac = 0x0000000000ffull;
  }
  if (ba_rng_below(g, 2))
    for (int i = 0; i < 10; i++) r.mpls[i] = (uint32_t)ba_rng_next(g);
  r.engine_type = (uint8_t)ba_rng_next(g);
  r.engine_id = (uint8_t)ba_rng_next(g);
  return r;
}

/* The line of r with a large buffer (unchecked path) equals the one with a
 * buffer of exactly its size (checked path); returns its length. */
static size_t both_paths(ba_query_format_t *f, const ba_record_t *r, char *big, size_t bigcap) {
  size_t len = 0, len2 = 0;
  assert_int_equal(ba_query_format_record(f, r, 1, big, bigcap, &len), 0);
  assert_true(len < 1500);
  char *exact = malloc(len + 1);
  assert_non_null(exact);
  assert_int_equal(ba_query_format_record(f, r, 1, exact, len + 1, &len2), 0);
  assert_int_equal(len, len2);
  if (memcmp(big, exact, len + 1)) fail_msg("fast:  %s\nslow:  %s", big, exact);
  /* one byte short: overflow with the needed length, as before */
  assert_int_equal(ba_query_format_record(f, r, 1, exact, len, &len2), BA_ERR_OVERFLOW);
  assert_int_equal(len2, len);
  free(exact);
  return len;
}

static void test_csv_paths(void **state) {
  (void)state;
  ba_rng_t g;
  ba_rng_seed(&g, 13);
  static char big[1 << 16];
  const char *zones[] = {"UTC", "CET-1CEST,M3.5.0,M10.5.0/3", "XST-5:45", "LMT0:44:30"};
  for (size_t z = 0; z < sizeof zones / sizeof *zones; z++) {
    setenv("TZ", zones[z], 1);
    tzset();
    for (unsigned flags = 0; flags <= BA_FMT_LOCAL; flags += BA_FMT_LOCAL) {
      ba_query_format_t *f;
      assert_int_equal(ba_query_format_create("csv", flags, &f, NULL, 0), 0);
      for (int i = 0; i < 20000; i++) {
        ba_record_t r = rand_rec(&g);
        both_paths(f, &r, big, sizeof big);
        /* at the end of a buffer: the line goes where the room is */
        size_t len;
        assert_int_equal(ba_query_format_record(f, &r, 1, big + sizeof big - 3000, 3000, &len), 0);
      }
      ba_query_format_free(f);
    }
  }
  unsetenv("TZ");
  tzset();
}

/* Naive "YYYY-MM-DD hh:mm:ss" of second s. */
static void naive_date(time_t s, int local, char out[32]) {
  struct tm tm;
  if (local) localtime_r(&s, &tm);
  else gmtime_r(&s, &tm);
  if (strftime(out, 32, "%Y-%m-%d %H:%M:%S", &tm) != 19) strcpy(out, "0000-00-00 00:00:00");
}

/* Seconds [from, from + n) in steps, each date of a csv line and of %ts
 * checked; the records come in the given order (the cache sees them so). */
static void check_span(ba_query_format_t *csv, ba_query_format_t *ts, int local, int64_t from, int64_t n,
                       int64_t step, ba_rng_t *g) {
  char line[4096], want[32];
  for (int64_t k = 0; k < n; k++) {
    int64_t s = from + k * step;
    ba_record_t r;
    memset(&r, 0, sizeof r);
    r.first_ns = (uint64_t)s * 1000000000ull + ba_rng_below(g, 1000000000ull);
    /* last and received jump around: other cache entries, other minutes */
    r.last_ns = (uint64_t)(s + (int64_t)ba_rng_below(g, 7200)) * 1000000000ull;
    r.received_ns = (uint64_t)(s - (s > 4000 ? (int64_t)ba_rng_below(g, 4000) : 0)) * 1000000000ull;
    size_t len;
    assert_int_equal(ba_query_format_record(csv, &r, 1, line, sizeof line, &len), 0);
    const uint64_t t[3] = {r.first_ns, r.last_ns, r.received_ns};
    const char *at[3] = {line, line + 20, NULL};
    at[2] = strrchr(line, ',') + 1;
    for (int i = 0; i < 3; i++) {
      naive_date((time_t)(t[i] / 1000000000ull), local, want);
      if (memcmp(at[i], want, 19)) fail_msg("second %lld (date %d): got %.19s want %s", (long long)s, i, at[i], want);
    }
    assert_int_equal(ba_query_format_record(ts, &r, 1, line, sizeof line, &len), 0);
    naive_date((time_t)(r.first_ns / 1000000000ull), local, want);
    if (memcmp(line, want, 19)) fail_msg("%%ts second %lld: got %.19s want %s", (long long)s, line, want);
  }
}

static void test_date_cache(void **state) {
  (void)state;
  ba_rng_t g;
  ba_rng_seed(&g, 7);
  const char *zones[] = {
    "UTC", "CET-1CEST,M3.5.0,M10.5.0/3", "NST3:30NDT,M3.2.0,M11.1.0", "XST-5:45", "LMT0:44:30",
    "ODD-0:00:17DDD-1:00:17,M3.5.0,M10.5.0/3", /* DST with odd seconds */
    "Europe/Berlin", "Africa/Monrovia", "Australia/Lord_Howe", "America/St_Johns", "right/UTC"};
  /* 2024-03-31 and 2024-10-27 (EU changes), 1972-01-01 (Monrovia to whole
   * minutes), 2016-12-31 (a leap second), 2024-04-07 (Lord Howe), 2038. */
  const int64_t at[] = {1711846800, 1729990800, 63072000, 1483228800, 1712412000, 2147483000, 0};
  for (size_t z = 0; z < sizeof zones / sizeof *zones; z++) {
    setenv("TZ", zones[z], 1);
    tzset();
    for (unsigned flags = 0; flags <= BA_FMT_LOCAL; flags += BA_FMT_LOCAL) {
      ba_query_format_t *csv, *ts;
      assert_int_equal(ba_query_format_create("csv", flags, &csv, NULL, 0), 0);
      assert_int_equal(ba_query_format_create("fmt:%ts", flags, &ts, NULL, 0), 0);
      for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
        int64_t from = at[i] > 7300 ? at[i] - 7300 : 0;
        check_span(csv, ts, flags != 0, from, 14600, 1, &g);    /* every second around it */
        check_span(csv, ts, flags != 0, from + 14599, 14600, -1, &g); /* backwards */
        check_span(csv, ts, flags != 0, from, 2000, 61, &g);    /* a new minute each time */
      }
      check_span(csv, ts, flags != 0, 0, 20000, 836163, &g); /* 1970 to 2500 */
      ba_query_format_free(csv);
      ba_query_format_free(ts);
    }
  }
  unsetenv("TZ");
  tzset();
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_csv_paths),
    cmocka_unit_test(test_date_cache),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

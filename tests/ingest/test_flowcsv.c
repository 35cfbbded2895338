/* CSV flow exports (src/ingest/flowcsv.c): random records written by an
 * independent writer in both vocabularies (Argus .binetflow, nfdump -o csv)
 * read back field for field; bad lines counted and named; a file without a
 * header refused; and the real CTU-13 scenario 6 export counted against a
 * naive split of its Proto and address columns. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ingest/flowcsv.h"
#include "testsupport.h"

typedef struct {
  ba_record_t *r;
  size_t n, cap;
} recs_t;

static int collect(void *ctx, const ba_record_t *r, size_t n) {
  recs_t *c = ctx;
  if (c->n + n > c->cap) {
    c->cap = (c->n + n) * 2;
    c->r = realloc(c->r, c->cap * sizeof *c->r);
    assert_non_null(c->r);
  }
  memcpy(c->r + c->n, r, n * sizeof *r);
  c->n += n;
  return 0;
}

static void fmt_addr(const ba_record_t *r, const uint8_t a[16], char *buf) {
  if (r->ipver == 4)
    snprintf(buf, 64, "%u.%u.%u.%u", a[12], a[13], a[14], a[15]);
  else
    inet_ntop(AF_INET6, a, buf, 64);
}

/* "YYYY/MM/DD HH:MM:SS.uuuuuu" through gmtime_r (not the reader's calendar code). */
static void fmt_time(uint64_t ns, char sep, char *buf) {
  time_t s = (time_t)(ns / 1000000000u);
  struct tm tm;
  gmtime_r(&s, &tm);
  snprintf(buf, 64, "%04d%c%02d%c%02d %02d:%02d:%02d.%06u", tm.tm_year + 1900, sep, tm.tm_mon + 1, sep,
           tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(ns % 1000000000u / 1000u));
}

static const char *flag_text(uint8_t f, char *buf) {
  static const char names[] = "FSRPAUEC";
  size_t k = 0;
  for (int i = 0; i < 8; i++)
    if (f & (1u << i)) buf[k++] = names[i];
  buf[k] = 0;
  return k ? buf : "_";
}

/* Random records at microsecond precision, as the writers below can say them. */
static void random_records(ba_rng_t *g, ba_record_t *r, size_t n) {
  static const uint8_t protos[] = {6, 17, 1, 47, 50};
  for (size_t i = 0; i < n; i++) {
    memset(&r[i], 0, sizeof r[i]);
    r[i].kind = BA_REC_FLOW;
    r[i].ipver = ba_rng_below(g, 5) ? 4 : 6;
    for (int k = 0; k < 16; k++) {
      r[i].src[k] = (uint8_t)ba_rng_next(g);
      r[i].dst[k] = (uint8_t)ba_rng_next(g);
    }
    if (r[i].ipver == 4) {
      ba_addr_set_v4(r[i].src, (uint32_t)ba_rng_next(g));
      ba_addr_set_v4(r[i].dst, (uint32_t)ba_rng_next(g));
    }
    r[i].proto = protos[ba_rng_below(g, sizeof protos)];
    r[i].first_ns = (1300000000ull + ba_rng_below(g, 400000000)) * 1000000000ull + ba_rng_below(g, 1000000) * 1000;
    r[i].last_ns = r[i].first_ns + ba_rng_below(g, 4000000000ull) * 1000;
    if (r[i].proto == 6 || r[i].proto == 17) {
      r[i].src_port = (uint16_t)ba_rng_next(g);
      r[i].dst_port = (uint16_t)ba_rng_next(g);
    } else if (r[i].proto == 1) {
      r[i].icmp_type = (uint8_t)ba_rng_below(g, 20);
      r[i].icmp_code = (uint8_t)ba_rng_below(g, 4);
      r[i].dst_port = (uint16_t)(r[i].icmp_type << 8 | r[i].icmp_code);
    }
    if (r[i].proto == 6) r[i].tcp_flags = (uint8_t)ba_rng_next(g);
    r[i].tos = (uint8_t)ba_rng_next(g);
    r[i].packets = ba_rng_below(g, 1u << 20);
    r[i].bytes = ba_rng_next(g) >> ba_rng_below(g, 64);
  }
}

static const char *proto_name(uint8_t p) {
  return p == 6 ? "tcp" : p == 17 ? "udp" : p == 1 ? "icmp" : p == 47 ? "gre" : "50";
}

/* Argus: ports of other protocols are the SPI and the like (here: junk the
 * reader must drop), ICMP type/code in Sport as hex, State holds the flags. */
static void write_argus(FILE *f, const ba_record_t *r, size_t n) {
  fprintf(f, "StartTime,Dur,Proto,SrcAddr,Sport,Dir,DstAddr,Dport,State,sTos,dTos,TotPkts,TotBytes,SrcBytes,Label\n");
  for (size_t i = 0; i < n; i++) {
    char ts[64], sa[64], da[64], fl[16], sp[32], dp[32];
    fmt_time(r[i].first_ns, '/', ts);
    fmt_addr(&r[i], r[i].src, sa);
    fmt_addr(&r[i], r[i].dst, da);
    uint64_t d = r[i].last_ns - r[i].first_ns;
    if (r[i].proto == 1) {
      snprintf(sp, sizeof sp, "0x%04x", r[i].dst_port);
      snprintf(dp, sizeof dp, "%u", (unsigned)(i % 65536));
    } else if (r[i].proto == 6 || r[i].proto == 17) {
      snprintf(sp, sizeof sp, "%u", r[i].src_port);
      snprintf(dp, sizeof dp, "%u", r[i].dst_port);
    } else {
      snprintf(sp, sizeof sp, "%u", 70000u + (unsigned)i);
      snprintf(dp, sizeof dp, "%s", "");
    }
    fprintf(f, "%s,%llu.%06llu,%s,%s,%s,   ->,%s,%s,%s_%s,%u,0,%llu,%llu,0,flow=test\n", ts,
            (unsigned long long)(d / 1000000000u), (unsigned long long)(d % 1000000000u / 1000u),
            proto_name(r[i].proto), sa, sp, da, dp, flag_text(r[i].tcp_flags, fl), "", r[i].tos,
            (unsigned long long)r[i].packets, (unsigned long long)r[i].bytes);
  }
}

/* nfdump -o csv: end time and duration (the reader derives the start), a
 * flag column, the summary trailer. */
static void write_nfdump(FILE *f, const ba_record_t *r, size_t n) {
  fprintf(f, "te,td,sa,da,sp,dp,pr,flg,fwd,stos,ipkt,ibyt,opkt,obyt\n");
  for (size_t i = 0; i < n; i++) {
    char te[64], sa[64], da[64], fl[16];
    fmt_time(r[i].last_ns, '-', te);
    fmt_addr(&r[i], r[i].src, sa);
    fmt_addr(&r[i], r[i].dst, da);
    uint64_t d = r[i].last_ns - r[i].first_ns;
    unsigned sp = r[i].proto == 1 ? 0 : r[i].src_port, dp = r[i].dst_port;
    fprintf(f, "%s,%llu.%06llu,%s,%s,%u,%u,%u,%s,0,%u,%llu,%llu,0,0\n", te,
            (unsigned long long)(d / 1000000000u), (unsigned long long)(d % 1000000000u / 1000u), sa, da,
            r[i].proto == 6 || r[i].proto == 17 || r[i].proto == 1 ? sp : 0,
            r[i].proto == 6 || r[i].proto == 17 || r[i].proto == 1 ? dp : 0, r[i].proto,
            flag_text(r[i].tcp_flags, fl), r[i].tos, (unsigned long long)r[i].packets,
            (unsigned long long)r[i].bytes);
  }
  fprintf(f, "Summary\nflows,bytes,packets\n1,2,3\n");
}

static void expect_same(const ba_record_t *want, const ba_record_t *got, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const ba_record_t *a = &want[i], *b = &got[i];
    assert_int_equal(b->kind, BA_REC_FLOW);
    assert_int_equal(b->ipver, a->ipver);
    assert_memory_equal(b->src, a->src, 16);
    assert_memory_equal(b->dst, a->dst, 16);
    assert_int_equal(b->proto, a->proto);
    assert_int_equal(b->first_ns, a->first_ns);
    assert_int_equal(b->last_ns, a->last_ns);
    int ports = a->proto == 6 || a->proto == 17;
    assert_int_equal(b->src_port, ports ? a->src_port : 0);
    assert_int_equal(b->dst_port, ports || a->proto == 1 ? a->dst_port : 0);
    assert_int_equal(b->icmp_type, a->icmp_type);
    assert_int_equal(b->icmp_code, a->icmp_code);
    assert_int_equal(b->tcp_flags, a->tcp_flags);
    assert_int_equal(b->tos, a->tos);
    assert_int_equal(b->packets, a->packets);
    assert_int_equal(b->bytes, a->bytes);
  }
}

static void round_trip(void (*writer)(FILE *, const ba_record_t *, size_t), uint64_t seed) {
  ba_rng_t g;
  ba_rng_seed(&g, seed);
  size_t n = 3000;
  ba_record_t *want = calloc(n, sizeof *want);
  assert_non_null(want);
  random_records(&g, want, n);
  FILE *f = tmpfile();
  assert_non_null(f);
  writer(f, want, n);
  rewind(f);
  recs_t got = {0};
  ba_flowcsv_stats_t st;
  memset(&st, 0, sizeof st);
  char err[256];
  assert_int_equal(ba_flowcsv_read(f, "random.csv", collect, &got, &st, err, sizeof err), BA_OK);
  assert_string_equal(st.first_bad, "");
  assert_int_equal(st.bad, 0);
  assert_int_equal(st.lines, n);
  assert_int_equal(st.flows, n);
  assert_int_equal(got.n, n);
  expect_same(want, got.r, n);
  fclose(f);
  free(got.r);
  free(want);
}

static void test_argus_round_trip(void **state) {
  (void)state;
  round_trip(write_argus, 1);
}

static void test_nfdump_round_trip(void **state) {
  (void)state;
  round_trip(write_nfdump, 2);
}

static int read_text(const char *text, recs_t *got, ba_flowcsv_stats_t *st, char *err, size_t errlen) {
  FILE *f = fmemopen((void *)text, strlen(text), "r");
  assert_non_null(f);
  memset(st, 0, sizeof *st);
  int rc = ba_flowcsv_read(f, "t.csv", collect, got, st, err, errlen);
  fclose(f);
  return rc;
}

static void test_bad_input(void **state) {
  (void)state;
  recs_t got = {0};
  ba_flowcsv_stats_t st;
  char err[256];
  const char *hdr = "StartTime,Dur,Proto,SrcAddr,Sport,Dir,DstAddr,Dport,State,sTos,dTos,TotPkts,TotBytes\n";
  char text[2048];
  snprintf(text, sizeof text,
           "%s2011/08/16 10:01:46.5,1.5,tcp,10.0.0.1,80,->,10.0.0.2,443,S_SA,0,0,3,180\n"
           "2011/08/16 10:01:47,1,tcp,10.0.0.999,80,->,10.0.0.2,443,S,0,0,3,180\n"
           "2011/08/16 10:01:48,1,arp,00:11:22:33:44:55,,->,ff:ff:ff:ff:ff:ff,,CON,0,0,1,60\n"
           "2011/13/16 10:01:49,1,udp,10.0.0.1,53,->,10.0.0.2,53,CON,0,0,1,60\n"
           "2011/08/16 10:01:50,1,udp,10.0.0.1,70000,->,10.0.0.2,53,CON,0,0,1,60\n"
           "2011/08/16 10:01:51,1,udp,10.0.0.1,53,->,::1,53,CON,0,0,1,60\n"
           "2011/08/16 10:01:52,1,udp,10.0.0.1\n"
           "2011/08/16 10:01:53,-1,udp,10.0.0.1,53,->,10.0.0.2,53,CON,0,0,1,60\n"
           "2011/08/16 10:01:54,1,udp,fe80::1,53,->,fe80::2,53,CON,0,0,x,60\n",
           hdr);
  assert_int_equal(read_text(text, &got, &st, err, sizeof err), BA_OK);
  assert_int_equal(st.lines, 9);
  assert_int_equal(st.flows, 1);
  assert_int_equal(st.nonip, 1);
  assert_string_equal(st.nonip_protos[0], "arp");
  assert_int_equal(st.bad, 7);
  assert_string_equal(st.first_bad, "t.csv:3: bad source address '10.0.0.999'");
  assert_int_equal(got.n, 1);
  assert_int_equal(got.r[0].first_ns, 1313488906500000000ull);
  assert_int_equal(got.r[0].last_ns, 1313488908000000000ull);
  assert_int_equal(got.r[0].tcp_flags, BA_TCP_SYN | BA_TCP_ACK);
  /* No usable header: refused, naming the file and line. */
  got.n = 0;
  assert_int_equal(read_text("a,b,c\n1,2,3\n", &got, &st, err, sizeof err), BA_ERR_CORRUPT);
  assert_non_null(strstr(err, "t.csv:1: no header"));
  assert_int_equal(got.n, 0);
  assert_int_equal(read_text("", &got, &st, err, sizeof err), BA_ERR_CORRUPT);
  assert_non_null(strstr(err, "empty file"));
  free(got.r);
}

/* The real export: per protocol, the records the reader delivers equal a
 * naive count of the rows with that Proto text and IP addresses. */
typedef struct {
  uint64_t per_proto[256], v6;
  recs_t all;
} real_t;

static int real_sink(void *ctx, const ba_record_t *r, size_t n) {
  real_t *x = ctx;
  for (size_t i = 0; i < n; i++) {
    x->per_proto[r[i].proto]++;
    x->v6 += r[i].ipver == 6;
  }
  return 0;
}

static void test_real_ctu13(void **state) {
  (void)state;
  const char *path = ba_test_shared("flows/ctu13-s6/ctu13-s6.binetflow.xz");
  FILE *probe = path ? fopen(path, "r") : NULL;
  if (!probe) {
    printf("no ../shared/data/flows/ctu13-s6, skipped\n");
    skip();
  }
  fclose(probe);
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "xz -dc '%s'", path);
  /* Naive pass: split each row at commas, look at fields 2 (Proto), 3 and 6 (addresses). */
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  char line[4096];
  uint64_t rows = 0, tcp = 0, udp_like = 0, icmp = 0, mac_rows = 0, v6_rows = 0;
  assert_non_null(fgets(line, sizeof line, f)); /* header */
  while (fgets(line, sizeof line, f)) {
    char *fld[16] = {0}, *p = line;
    int k = 0;
    for (char *t; k < 16 && (t = strsep(&p, ",")); k++) fld[k] = t;
    assert_true(k >= 13);
    rows++;
    if (!strcmp(fld[2], "arp") || !strcmp(fld[2], "ipx/spx")) mac_rows++;
    else if (strchr(fld[3], ':')) v6_rows++;
    if (!strcmp(fld[2], "tcp")) tcp++;
    if (!strcmp(fld[2], "udp") || !strcmp(fld[2], "rtp") || !strcmp(fld[2], "rtcp") || !strcmp(fld[2], "udt"))
      udp_like++; /* UDP-based protocols Argus names (UDT: UDP-based Data Transfer) */
    if (!strcmp(fld[2], "icmp")) icmp++;
  }
  assert_int_equal(pclose(f), 0);
  f = popen(cmd, "r");
  assert_non_null(f);
  real_t x;
  memset(&x, 0, sizeof x);
  ba_flowcsv_stats_t st;
  memset(&st, 0, sizeof st);
  char err[256];
  assert_int_equal(ba_flowcsv_read(f, "ctu13-s6", real_sink, &x, &st, err, sizeof err), BA_OK);
  assert_int_equal(pclose(f), 0);
  printf("ctu13-s6: %llu rows, %llu flows (%llu IPv6), %llu non-IP, %llu bad%s%s\n", (unsigned long long)st.lines,
         (unsigned long long)st.flows, (unsigned long long)x.v6, (unsigned long long)st.nonip,
         (unsigned long long)st.bad, st.bad ? ", first: " : "", st.first_bad);
  assert_int_equal(st.lines, rows);
  assert_int_equal(st.bad, 0);
  assert_int_equal(st.nonip, mac_rows);
  assert_int_equal(st.flows, rows - mac_rows);
  assert_int_equal(x.v6, v6_rows);
  assert_int_equal(x.per_proto[6], tcp);
  assert_int_equal(x.per_proto[17], udp_like);
  assert_int_equal(x.per_proto[1], icmp);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_argus_round_trip),
      cmocka_unit_test(test_nfdump_round_trip),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_real_ctu13),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

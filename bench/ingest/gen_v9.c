/* Writes synthetic NetFlow v9 export datagrams (one exporter, template 256
 * refreshed every 64 datagrams, 30 flows per datagram, 39-byte records), or
 * NetFlow v5 datagrams (30 flows of 48 bytes each) with the same flows, as a
 * file of 2-byte-length-prefixed datagrams, for the ingest benchmarks.
 * Traffic shape: Zipf-distributed hosts and service ports, ephemeral source
 * ports, 80% TCP / 17% UDP / 3% ICMP, one hour of export time.
 *   gen_v9 FLOWS OUT [seed] [v5|v9] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t s[2] = {0x9E3779B97F4A7C15ull, 0xD1B54A32D192ED03ull};
static uint64_t rnd(void) {
  uint64_t a = s[0], b = s[1];
  s[0] = b;
  a ^= a << 23;
  s[1] = a ^ b ^ (a >> 17) ^ (b >> 26);
  return s[1] + b;
}
static double unif(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }
/* Zipf over [0, n) with exponent 1 by inverse CDF on a precomputed table. */
typedef struct { double *cdf; size_t n; } zipf_t;
static void zipf_init(zipf_t *z, size_t n, double e) {
  z->n = n;
  z->cdf = malloc(n * sizeof(double));
  double sum = 0;
  for (size_t i = 0; i < n; i++) z->cdf[i] = (sum += 1.0 / pow((double)(i + 1), e));
  for (size_t i = 0; i < n; i++) z->cdf[i] /= sum;
}
static size_t zipf(const zipf_t *z) {
  double u = unif();
  size_t lo = 0, hi = z->n - 1;
  while (lo < hi) {
    size_t m = (lo + hi) / 2;
    if (z->cdf[m] < u) lo = m + 1;
    else hi = m;
  }
  return lo;
}
static uint8_t *p;
static void u8(uint8_t v) { *p++ = v; }
static void u16(uint16_t v) { u8((uint8_t)(v >> 8)); u8((uint8_t)v); }
static void u32(uint32_t v) { u16((uint16_t)(v >> 16)); u16((uint16_t)v); }

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: gen_v9 FLOWS OUT [seed] [v5|v9]\n");
    return 2;
  }
  uint64_t flows = strtoull(argv[1], NULL, 10);
  if (argc > 3) s[0] ^= strtoull(argv[3], NULL, 10);
  int v5 = argc > 4 && !strcmp(argv[4], "v5");
  FILE *f = fopen(argv[2], "wb");
  if (!f) return 1;
  zipf_t hosts, servers, ports;
  zipf_init(&hosts, 20000, 1.0);
  zipf_init(&servers, 100000, 1.1);
  zipf_init(&ports, 64, 1.2);
  static const uint16_t svc[64] = {443, 80, 53, 123, 22, 25, 993, 8080, 3389, 445, 137, 161, 1935, 5222, 8443,
                                   110, 143, 465, 587, 636, 853, 1194, 1723, 3306, 5060, 5432, 6379, 8000, 8888,
                                   9000, 9200, 27017, 21, 23, 69, 88, 135, 139, 389, 500, 514, 520, 546, 547, 1812,
                                   1813, 2049, 2181, 3128, 4500, 5353, 5355, 5683, 6443, 7000, 8081, 8200, 8530,
                                   9090, 9092, 9443, 10000, 11211, 50000};
  uint8_t buf[2048];
  const uint32_t t0 = 1700000000u;
  uint64_t done = 0, dg = 0;
  uint32_t uptime0 = 86400000u; /* exporter booted a day before */
  while (done < flows) {
    p = buf + 2;
    uint32_t secs = t0 + (uint32_t)(3600.0 * (double)done / (double)flows);
    uint32_t up = uptime0 + (secs - t0) * 1000u;
    int n = (int)(flows - done < 30 ? flows - done : 30);
    if (v5) {
      u16(5); u16((uint16_t)n); u32(up); u32(secs); u32(0); u32((uint32_t)done); u8(0); u8(0); u16(0);
    } else {
      u16(9); u16(0); u32(up); u32(secs); u32((uint32_t)dg); u32(1);
      if (dg % 64 == 0) {
        u16(0); u16(4 + 4 + 15 * 4); u16(256); u16(15);
        static const uint16_t tf[15][2] = {{8, 4}, {12, 4}, {7, 2}, {11, 2}, {4, 1}, {5, 1}, {6, 1}, {10, 2},
                                           {14, 2}, {2, 4}, {1, 4}, {22, 4}, {21, 4}, {16, 2}, {17, 2}};
        for (int i = 0; i < 15; i++) { u16(tf[i][0]); u16(tf[i][1]); }
      }
    }
    uint8_t *set = p;
    if (!v5) {
      u16(256);
      u16(0);
    }
    for (int i = 0; i < n; i++) {
      double r = unif();
      uint8_t proto = r < 0.80 ? 6 : r < 0.97 ? 17 : 1;
      uint32_t cli = 0x0a000000u | (uint32_t)zipf(&hosts) * 7u % 0xffffffu;
      uint32_t srv = 0xc0000000u + (uint32_t)zipf(&servers) * 2654435761u % 0x3fffffffu;
      int out = rnd() & 1;
      uint16_t sp = (uint16_t)(32768 + rnd() % 28000), dp = svc[zipf(&ports)];
      if (proto == 1) { sp = 0; dp = (uint16_t)((rnd() & 1) ? 0x0800 : 0x0303); }
      uint32_t pk = 1 + (uint32_t)(-log(1.0 - unif()) * 20.0);
      uint32_t by = pk * (uint32_t)(40 + rnd() % 1400);
      uint32_t dur = (uint32_t)(rnd() % 60000);
      uint8_t tos = (uint8_t)((rnd() % 8) == 0 ? 0xb8 : 0);
      uint8_t flags = proto == 6 ? (uint8_t)(0x10 | (rnd() & 0x1b)) : 0;
      uint16_t in = (uint16_t)(1 + rnd() % 24), outif = (uint16_t)(1 + rnd() % 24);
      uint16_t sas = (uint16_t)(rnd() % 65000), das = (uint16_t)(rnd() % 65000);
      if (v5) {
        u32(out ? cli : srv); u32(out ? srv : cli); u32(0); u16(in); u16(outif); u32(pk); u32(by);
        u32(up - dur - 1000); u32(up - 1000); u16(out ? sp : dp); u16(out ? dp : sp); u8(0); u8(flags); u8(proto);
        u8(tos); u16(sas); u16(das); u8(24); u8(24); u16(0);
        continue;
      }
      u32(out ? cli : srv); u32(out ? srv : cli); u16(out ? sp : dp); u16(out ? dp : sp);
      u8(proto); u8(tos); u8(flags);
      u16(in); u16(outif); u32(pk); u32(by);
      u32(up - dur - 1000); u32(up - 1000); u16(sas); u16(das);
    }
    if (!v5) {
      set[2] = (uint8_t)((p - set) >> 8);
      set[3] = (uint8_t)(p - set);
      buf[2 + 2] = 0;
      buf[2 + 3] = (uint8_t)(n + (dg % 64 == 0));
    }
    size_t len = (size_t)(p - buf - 2);
    buf[0] = (uint8_t)(len >> 8);
    buf[1] = (uint8_t)len;
    fwrite(buf, 1, len + 2, f);
    done += (uint64_t)n;
    dg++;
  }
  fclose(f);
  free(hosts.cdf);
  free(servers.cdf);
  free(ports.cdf);
  fprintf(stderr, "gen_v9: %llu flows in %llu NetFlow %s datagrams\n", (unsigned long long)done,
          (unsigned long long)dg, v5 ? "v5" : "v9");
  return 0;
}

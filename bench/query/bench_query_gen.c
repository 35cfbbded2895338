/* Generates the benchmark flows once and gives the same flows to bitarc and to
 * nfdump: bitarc gets them through the store writer API, nfcapd gets them as
 * NetFlow v5 datagrams over loopback UDP (paced). Flows are IPv4 (v5), with
 * millisecond times, 16-bit AS/interfaces and 32-bit counters, so both sides
 * hold identical field values.
 *
 *   bench_query_gen --flows N [--store DIR] [--hours H] [--nf-port P]... [--pps R] [--seed S] [--tsv FILE]
 *
 * --nf-port may be given up to four times: every datagram goes to each port
 * (bitarc collect and nfcapd receive the same datagrams). --tsv FILE (or -
 * for stdout) writes each flow as one tab-separated line with the values a
 * NetFlow v5 record carries, for loading into another database:
 *   first_ms last_ms src dst src_port dst_port proto tcp_flags tos packets
 *   bytes in_if out_if src_as dst_as   (addresses as 32-bit integers)
 * The same --seed gives the same flows on every run.
 *
 * Skew: 60% of sources in 10.4.0.0/16 (Zipf), 20% in 192.168.0.0/20, the rest
 * random; destinations Zipf; service ports Zipf over a short list, else
 * random; 70% TCP with realistic flag sets; Zipf packets. */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bitarc/bitarc.h"

static uint64_t s_rng = 1;
static uint64_t rnd(void) {
  uint64_t z = (s_rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static double unif(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }
/* continuous Zipf approximation over [0, n) */
static uint64_t zipf(uint64_t n, double s) {
  double u = unif();
  double v = s == 1.0 ? exp(u * log((double)n + 1.0)) - 1.0
                      : pow(u * (pow((double)n + 1.0, 1.0 - s) - 1.0) + 1.0, 1.0 / (1.0 - s)) - 1.0;
  uint64_t k = (uint64_t)v;
  return k >= n ? n - 1 : k;
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void gen(ba_record_t *x, uint64_t i, uint64_t n, uint64_t base_ms, uint64_t span_ms) {
  static const uint16_t svc[] = {80, 443, 53, 137, 445, 22, 8080, 25, 123, 3389, 993, 1194, 5060};
  memset(x, 0, sizeof(*x));
  x->kind = BA_REC_FLOW;
  x->ipver = 4;
  uint64_t first_ms = base_ms + (uint64_t)((double)i * (double)span_ms / (double)n) + rnd() % 1000;
  uint64_t dur = zipf(600000, 1.3);
  x->first_ns = first_ms * 1000000ull;
  x->last_ns = (first_ms + dur) * 1000000ull;
  uint32_t s, d;
  unsigned k = (unsigned)(rnd() % 10);
  if (k < 6) s = 0x0A040000u | (uint32_t)zipf(65536, 1.1);
  else if (k < 8) s = 0xC0A80000u | (uint32_t)zipf(4096, 1.0);
  else s = (uint32_t)rnd();
  d = (rnd() % 3) ? 0x0A050000u | (uint32_t)zipf(65536, 1.2) : (uint32_t)rnd();
  ba_addr_set_v4(x->src, s);
  ba_addr_set_v4(x->dst, d);
  ba_addr_set_v4(x->exporter, 0x7F000001);
  unsigned pk = (unsigned)(rnd() % 20);
  x->proto = pk < 14 ? 6 : pk < 19 ? 17 : 1;
  if (x->proto == 1) {
    x->dst_port = (uint16_t)((rnd() % 2 ? 8 : 0) << 8);
  } else {
    x->dst_port = (rnd() % 4) ? svc[zipf(sizeof(svc) / sizeof(svc[0]), 1.0)] : (uint16_t)(rnd() % 65536);
    x->src_port = (uint16_t)(1024 + rnd() % 64512);
  }
  if (x->proto == 6) {
    static const uint8_t fl[] = {0x1b, 0x1f, 0x02, 0x12, 0x18, 0x10, 0x11, 0x04, 0x14, 0x19, 0x06};
    x->tcp_flags = fl[zipf(sizeof(fl), 1.0)];
  }
  x->packets = 1 + zipf(100000, 1.4);
  x->bytes = x->packets * (40 + rnd() % 1460);
  if (x->bytes > 0xFFFFFFFFull) x->bytes = 0xFFFFFFFFull;
  x->tos = (uint8_t)((rnd() % 8) ? 0 : 0x20);
  x->src_as = (uint32_t)zipf(65535, 1.0);
  x->dst_as = (uint32_t)zipf(65535, 1.0);
  x->in_if = (uint32_t)(rnd() % 16);
  x->out_if = (uint32_t)(rnd() % 16);
}

/* One line per flow, the values a v5 record carries (see the header). */
static void write_tsv(FILE *f, const ba_record_t *r, size_t m) {
  for (size_t j = 0; j < m; j++, r++)
    fprintf(f, "%llu\t%llu\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%u\n",
            (unsigned long long)(r->first_ns / 1000000ull), (unsigned long long)(r->last_ns / 1000000ull),
            (unsigned)ba_addr_get_v4(r->src), (unsigned)ba_addr_get_v4(r->dst), r->src_port, r->dst_port, r->proto,
            r->tcp_flags, r->tos, (unsigned)r->packets, (unsigned)r->bytes, (unsigned)(uint16_t)r->in_if,
            (unsigned)(uint16_t)r->out_if, (unsigned)(uint16_t)r->src_as, (unsigned)(uint16_t)r->dst_as);
}

static void be16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void be32(uint8_t *p, uint32_t v) { be16(p, (uint16_t)(v >> 16)); be16(p + 2, (uint16_t)v); }

int main(int argc, char **argv) {
  uint64_t n = 10000000, hours = 24, pps = 20000;
  const char *dir = NULL, *tsv = NULL;
  enum { MAXPORTS = 4 };
  int ports[MAXPORTS], nports = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--flows") && i + 1 < argc) n = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--store") && i + 1 < argc) dir = argv[++i];
    else if (!strcmp(argv[i], "--hours") && i + 1 < argc) hours = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--nf-port") && i + 1 < argc && nports < MAXPORTS) {
      ports[nports] = atoi(argv[++i]);
      if (ports[nports] <= 0 || ports[nports] > 65535) {
        fprintf(stderr, "--nf-port %s: expected a UDP port 1..65535\n", argv[i]);
        return 2;
      }
      nports++;
    } else if (!strcmp(argv[i], "--tsv") && i + 1 < argc) tsv = argv[++i];
    else if (!strcmp(argv[i], "--pps") && i + 1 < argc) pps = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc) s_rng = strtoull(argv[++i], NULL, 10);
    else {
      fprintf(stderr,
              "usage: %s --flows N [--store DIR] [--hours H] [--nf-port P]... [--pps R] [--seed S] [--tsv FILE]\n",
              argv[0]);
      return 2;
    }
  }
  if (!dir && !nports && !tsv) {
    fprintf(stderr, "need --store, --nf-port and/or --tsv\n");
    return 2;
  }
  FILE *tf = NULL;
  if (tsv) {
    tf = strcmp(tsv, "-") ? fopen(tsv, "w") : stdout;
    if (!tf) {
      fprintf(stderr, "--tsv %s: cannot create the file\n", tsv);
      return 1;
    }
  }
  FILE *info = tf == stdout ? stderr : stdout;
  fprintf(info, "command:");
  for (int i = 0; i < argc; i++) fprintf(info, " %s", argv[i]);
  fprintf(info, "\n");
  const uint64_t base_ms = 1720656000000ull; /* 2024-07-11T00:00:00Z */
  const uint64_t boot_ms = base_ms - 1000;
  ba_store_writer_t *w = NULL;
  if (dir) {
    ba_store_opts_t o;
    ba_store_opts_init(&o);
    int rc = ba_store_writer_open(dir, &o, &w);
    if (rc < 0) {
      fprintf(stderr, "writer open %s: %s\n", dir, ba_strerror(rc));
      return 1;
    }
  }
  int sock = -1;
  struct sockaddr_in to[MAXPORTS];
  if (nports) {
    sock = socket(AF_INET, SOCK_DGRAM, 0);
    if (sock < 0) {
      perror("socket");
      return 1;
    }
    for (int k = 0; k < nports; k++) {
      memset(&to[k], 0, sizeof(to[k]));
      to[k].sin_family = AF_INET;
      to[k].sin_port = htons((uint16_t)ports[k]);
      to[k].sin_addr.s_addr = htonl(0x7F000001);
    }
  }
  enum { BATCH = 30 };
  ba_record_t recs[BATCH];
  uint8_t pkt[24 + 48 * BATCH];
  uint32_t seq = 0;
  uint64_t t0 = mono_ns(), sent = 0, t_write = 0;
  for (uint64_t i = 0; i < n; i += BATCH) {
    size_t m = n - i < BATCH ? (size_t)(n - i) : BATCH;
    uint64_t maxlast = 0;
    for (size_t j = 0; j < m; j++) {
      gen(&recs[j], i + j, n, base_ms, hours * 3600000ull);
      if (recs[j].last_ns / 1000000ull > maxlast) maxlast = recs[j].last_ns / 1000000ull;
    }
    if (w) {
      uint64_t a = mono_ns();
      int rc = ba_store_writer_append(w, recs, m);
      t_write += mono_ns() - a;
      if (rc < 0) {
        fprintf(stderr, "append: %s\n", ba_strerror(rc));
        return 1;
      }
    }
    if (sock >= 0) {
      uint32_t up = (uint32_t)(maxlast - boot_ms);
      uint64_t now = boot_ms + up;
      be16(pkt, 5);
      be16(pkt + 2, (uint16_t)m);
      be32(pkt + 4, up);
      be32(pkt + 8, (uint32_t)(now / 1000));
      be32(pkt + 12, (uint32_t)(now % 1000) * 1000000u);
      be32(pkt + 16, seq);
      pkt[20] = 0;
      pkt[21] = 0;
      be16(pkt + 22, 0);
      seq += (uint32_t)m;
      for (size_t j = 0; j < m; j++) {
        uint8_t *r = pkt + 24 + 48 * j;
        const ba_record_t *x = &recs[j];
        memset(r, 0, 48);
        be32(r, ba_addr_get_v4(x->src));
        be32(r + 4, ba_addr_get_v4(x->dst));
        be16(r + 12, (uint16_t)x->in_if);
        be16(r + 14, (uint16_t)x->out_if);
        be32(r + 16, (uint32_t)x->packets);
        be32(r + 20, (uint32_t)x->bytes);
        be32(r + 24, (uint32_t)(x->first_ns / 1000000ull - boot_ms));
        be32(r + 28, (uint32_t)(x->last_ns / 1000000ull - boot_ms));
        be16(r + 32, x->src_port);
        be16(r + 34, x->dst_port);
        r[37] = x->tcp_flags;
        r[38] = x->proto;
        r[39] = x->tos;
        be16(r + 40, (uint16_t)x->src_as);
        be16(r + 42, (uint16_t)x->dst_as);
      }
      for (int k = 0; k < nports; k++) sendto(sock, pkt, 24 + 48 * m, 0, (struct sockaddr *)&to[k], sizeof(to[k]));
      sent++;
      /* pace: at most pps datagrams per second */
      uint64_t due = t0 + sent * 1000000000ull / pps;
      uint64_t nw = mono_ns();
      if (due > nw + 1000000) {
        struct timespec ts = {0, (long)(due - nw)};
        nanosleep(&ts, NULL);
      }
    }
    if (tf) write_tsv(tf, recs, m);
    if (i % 10000020 == 0 && i) fprintf(stderr, "\r%llu flows", (unsigned long long)i);
  }
  if (w) {
    uint64_t a = mono_ns();
    int rc = ba_store_writer_close(w);
    t_write += mono_ns() - a;
    if (rc < 0) {
      fprintf(stderr, "close: %s\n", ba_strerror(rc));
      return 1;
    }
  }
  if (tf && (fflush(tf) != 0 || ferror(tf) || (tf != stdout && fclose(tf) != 0))) {
    fprintf(stderr, "--tsv %s: write error\n", tsv);
    return 1;
  }
  double secs = (double)(mono_ns() - t0) / 1e9;
  fprintf(info, "flows %llu, datagrams %llu, total %.1f s, bitarc writer %.1f s (%.2f M flows/s)\n", (unsigned long long)n,
         (unsigned long long)sent, secs, t_write / 1e9, t_write ? n / (t_write / 1e9) / 1e6 : 0.0);
  if (sock >= 0) close(sock);
  return 0;
}

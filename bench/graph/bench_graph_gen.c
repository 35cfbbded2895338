/* Generates the flows of the graph benchmark once and gives the same flows
 * to bitarc and to nfdump: a bitarc store (store writer API, default
 * options) and the nfdump files nfcapd would have rotated every 5 minutes
 * (nfsen's layout: nfcapd.YYYYMMDDhhmm, layout 2, LZO, written by the test
 * writer tests/ingest/nffile_writer.h), one file per 5 minutes of flow
 * start times. Flow starts follow a day-shaped rate (low at night, high in
 * the afternoon) over 24 h from 2024-07-11 00:00 UTC, in time order.
 *
 *   bench_graph_gen --flows N --store DIR --nfdump DIR [--seed S]
 *
 * Fields (IPv4, ms times, 32-bit counters) are those both sides keep alike. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bitarc/bitarc.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "nffile_writer.h"
#pragma GCC diagnostic pop

#define DAY_MS 86400000ull
#define FILE_MS 300000ull
#define BASE_MS 1720656000000ull /* 2024-07-11T00:00:00Z */

static uint64_t s_rng = 1;
static uint64_t rnd(void) {
  uint64_t z = (s_rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
/* A Zipf-like pick in [0, n): most picks are small. */
static uint64_t skewed(uint64_t n) {
  double u = (double)(rnd() >> 11) / 9007199254740992.0;
  uint64_t k = (uint64_t)(exp(u * log((double)n + 1.0)) - 1.0);
  return k >= n ? n - 1 : k;
}

/* Day-shaped rate: relative weight of minute m of the day. */
static double weight(unsigned m) { return 1.0 + 0.7 * sin(2.0 * M_PI * ((double)m / 1440.0 - 0.375)); }

static void flow(ba_record_t *x, uint64_t first_ms) {
  static const uint16_t svc[] = {443, 80, 53, 445, 137, 22, 8080, 25, 123, 3389};
  memset(x, 0, sizeof(*x));
  x->kind = BA_REC_FLOW;
  x->ipver = 4;
  x->first_ns = first_ms * 1000000ull;
  x->last_ns = (first_ms + skewed(120000)) * 1000000ull;
  ba_addr_set_v4(x->src, (rnd() % 10 < 6) ? 0x0A040000u | (uint32_t)skewed(65536) : (uint32_t)rnd());
  ba_addr_set_v4(x->dst, (rnd() % 3) ? 0x0A050000u | (uint32_t)skewed(65536) : (uint32_t)rnd());
  unsigned pk = (unsigned)(rnd() % 20);
  x->proto = pk < 14 ? 6 : pk < 19 ? 17 : 1;
  if (x->proto != 1) {
    x->dst_port = (rnd() % 4) ? svc[skewed(sizeof(svc) / sizeof(svc[0]))] : (uint16_t)(rnd() % 65536);
    x->src_port = (uint16_t)(1024 + rnd() % 64512);
  }
  if (x->proto == 6) {
    static const uint8_t fl[] = {0x1b, 0x1f, 0x02, 0x12, 0x18, 0x10, 0x11, 0x04};
    x->tcp_flags = fl[skewed(sizeof(fl))];
  }
  x->packets = 1 + skewed(20000);
  x->bytes = x->packets * (40 + rnd() % 1460);
}

/* One nfdump V3 record: generic flow (element 1) and IPv4 addresses (2). */
static void nf_record(nfw_file_t *f, const ba_record_t *r) {
  nfw_buf_t *b = &f->blk;
  nfw_u16(b, 11); nfw_u16(b, 12 + 52 + 12); nfw_u16(b, 2);
  nfw_u8(b, 0); nfw_u8(b, 0); nfw_u16(b, 1); nfw_u8(b, 0); nfw_u8(b, 10);
  nfw_u16(b, 1); nfw_u16(b, 52);
  nfw_u64(b, r->first_ns / 1000000u); nfw_u64(b, r->last_ns / 1000000u); nfw_u64(b, r->last_ns / 1000000u);
  nfw_u64(b, r->packets); nfw_u64(b, r->bytes); nfw_u16(b, r->src_port); nfw_u16(b, r->dst_port);
  nfw_u8(b, r->proto); nfw_u8(b, r->tcp_flags); nfw_u8(b, 0); nfw_u8(b, r->tos);
  nfw_u16(b, 2); nfw_u16(b, 12); nfw_u32(b, ba_addr_get_v4(r->src)); nfw_u32(b, ba_addr_get_v4(r->dst));
  f->nrec++;
}

static int nf_close(nfw_file_t *f, const char *dir, uint64_t file_ms) {
  nfw_end(f);
  time_t t = (time_t)(file_ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  char name[64], path[4096];
  strftime(name, sizeof(name), "nfcapd.%Y%m%d%H%M", &tm);
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *o = fopen(path, "wb");
  int bad = !o || fwrite(f->out.p, 1, f->out.n, o) != f->out.n;
  if (o) bad |= fclose(o) != 0;
  free(f->out.p);
  if (bad) fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
  return bad;
}

int main(int argc, char **argv) {
  uint64_t n = 0;
  const char *dir = NULL, *nfdir = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--flows") && i + 1 < argc) n = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--store") && i + 1 < argc) dir = argv[++i];
    else if (!strcmp(argv[i], "--nfdump") && i + 1 < argc) nfdir = argv[++i];
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc) s_rng = strtoull(argv[++i], NULL, 10);
    else {
      fprintf(stderr, "usage: %s --flows N --store DIR --nfdump DIR [--seed S]\n", argv[0]);
      return 2;
    }
  }
  if (!n || !dir || !nfdir || (mkdir(nfdir, 0755) != 0 && errno != EEXIST)) {
    fprintf(stderr, "need --flows N > 0, --store DIR and --nfdump DIR (a directory it can create)\n");
    return 2;
  }
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  ba_store_writer_t *w = NULL;
  int rc = ba_store_writer_open(dir, &o, &w);
  if (rc < 0) {
    fprintf(stderr, "writer open %s: %s\n", dir, ba_strerror(rc));
    return 1;
  }
  double total = 0, cum = 0;
  for (unsigned m = 0; m < 1440; m++) total += weight(m);
  enum { BATCH = 4096 };
  static ba_record_t recs[BATCH];
  size_t nb = 0;
  nfw_file_t nf;
  uint64_t cur_file = UINT64_MAX, done = 0;
  int bad = 0;
  for (unsigned m = 0; m < 1440 && !bad; m++) {
    uint64_t upto = m == 1439 ? n : (uint64_t)((double)n * (cum + weight(m)) / total);
    cum += weight(m);
    uint64_t k = upto - done, t0 = BASE_MS + (uint64_t)m * 60000u;
    for (uint64_t j = 0; j < k && !bad; j++) {
      uint64_t ms = t0 + j * 60000u / k;
      uint64_t file = (ms - BASE_MS) / FILE_MS;
      if (file != cur_file) {
        if (cur_file != UINT64_MAX) bad |= nf_close(&nf, nfdir, BASE_MS + cur_file * FILE_MS);
        nfw_begin(&nf, 2, NFW_LZO);
        nfw_exporter(&nf, 1, 0x7F000001, 1);
        cur_file = file;
      }
      flow(&recs[nb], ms);
      nf_record(&nf, &recs[nb]);
      if (nf.nrec >= 4000) nfw_block(&nf, 0);
      if (++nb == BATCH) {
        if ((rc = ba_store_writer_append(w, recs, nb)) < 0) bad = 1;
        nb = 0;
      }
    }
    done = upto;
  }
  if (!bad && nb && (rc = ba_store_writer_append(w, recs, nb)) < 0) bad = 1;
  if (cur_file != UINT64_MAX) bad |= nf_close(&nf, nfdir, BASE_MS + cur_file * FILE_MS);
  int crc = ba_store_writer_close(w);
  if (bad || crc < 0) {
    fprintf(stderr, "failed: %s\n", ba_strerror(rc < 0 ? rc : crc));
    return 1;
  }
  printf("flows %llu over 24 h: store %s, nfdump files in %s\n", (unsigned long long)n, dir, nfdir);
  return 0;
}

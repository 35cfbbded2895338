/* bench_store: ingest rate and bytes per record of the store writer.
 *
 *   bench_store [--flows N] [--traces DIR] [--skip-real] [--dir TMPDIR]
 *
 * Part 1: N generated flow records (Zipf addresses and ports, one hour,
 * in time order) -> store, for every index codec with LZO, 1 and 2 worker
 * threads, and for the other compressors with the default codec.
 * Part 2: the packets of every pcap/pcapng under the shared traces folder
 * (minimal Ethernet/IPv4/IPv6/TCP/UDP parse done here; timestamps replaced by
 * 1 ms steps so all packets share one slice) -> store per codec: index bytes
 * per record per attribute and the build rate.
 * Prints markdown tables and the command line. */
#include <dirent.h>
#include <math.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bitarc/store.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}
static uint32_t zipf(uint32_t n, double s) {
  double u = (double)(rnd() >> 11) / 9007199254740992.0;
  double v = pow(u * (pow((double)n + 1.0, 1.0 - s) - 1.0) + 1.0, 1.0 / (1.0 - s)) - 1.0;
  uint32_t k = (uint32_t)v;
  return k >= n ? n - 1 : k;
}

static void gen_flows(ba_record_t *r, size_t n, uint64_t t0) {
  static const uint16_t ports[] = {443, 80, 53, 123, 22, 445, 25, 993, 8080, 3389};
  for (size_t i = 0; i < n; i++) {
    memset(&r[i], 0, sizeof r[i]);
    r[i].kind = BA_REC_FLOW;
    r[i].ipver = 4;
    r[i].first_ns = t0 + (uint64_t)(3599.0e9 * (double)i / (double)n);
    r[i].last_ns = r[i].first_ns + (rnd() % 30000) * 1000000ull;
    ba_addr_set_v4(r[i].src, 0x0A000000u + zipf(65536, 1.2));
    ba_addr_set_v4(r[i].dst, 0xC0A80000u + zipf(65536, 1.05));
    int in = rnd() & 1;
    uint16_t svc = ports[zipf(10, 1.5)], eph = (uint16_t)(32768 + rnd() % 28000);
    r[i].src_port = in ? svc : eph;
    r[i].dst_port = in ? eph : svc;
    r[i].proto = svc == 53 || svc == 123 ? 17 : 6;
    r[i].tcp_flags = r[i].proto == 6 ? (uint8_t)(0x10 | (rnd() % 4 ? 0x08 : 0) | (rnd() % 3 ? 0x02 : 0) | (rnd() % 3 ? 0x01 : 0)) : 0;
    r[i].packets = 1 + zipf(10000, 1.5);
    r[i].bytes = r[i].packets * (40 + rnd() % 1400);
    r[i].src_as = zipf(1000, 1.1);
    r[i].dst_as = zipf(1000, 1.1);
    r[i].in_if = (uint32_t)(rnd() % 4);
    r[i].out_if = (uint32_t)(rnd() % 4);
    ba_addr_set_v4(r[i].exporter, 0xAC100001u);
  }
}

static void rmtree(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char p[4096];
  while ((e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    unlink(p);
  }
  closedir(d);
  rmdir(dir);
}

typedef struct run_result {
  double secs, cpu;
  uint64_t rows, archive, index, attr[BA_ATTR_COUNT];
} run_result_t;

static int run_store(const char *dir, const ba_record_t *r, size_t n, const ba_store_opts_t *o,
                     run_result_t *out) {
  rmtree(dir);
  memset(out, 0, sizeof *out);
  ba_store_writer_t *w;
  double t = now_s(), c0 = cpu_s();
  int rc = ba_store_writer_open(dir, o, &w);
  if (rc < 0) return rc;
  for (size_t i = 0; i < n && rc == 0; i += 1024)
    rc = ba_store_writer_append(w, r + i, n - i < 1024 ? n - i : 1024);
  int rc2 = ba_store_writer_close(w);
  out->secs = now_s() - t;
  out->cpu = cpu_s() - c0;
  if (rc < 0 || rc2 < 0) return rc < 0 ? rc : rc2;
  ba_store_t *s;
  if ((rc = ba_store_open(dir, &s)) < 0) return rc;
  for (size_t i = 0; i < ba_store_segment_count(s); i++) {
    ba_segment_t *seg;
    ba_segment_info_t in;
    if (ba_store_segment(s, i, &seg) < 0 || ba_segment_info(seg, &in) < 0) continue;
    out->rows += in.rows;
    out->archive += in.bytes_archive;
    out->index += in.bytes_index;
    for (int a = 0; a < BA_ATTR_COUNT; a++) out->attr[a] += in.bytes_index_attr[a];
  }
  ba_store_close(s);
  return 0;
}

/* ---- real captures ---- */
typedef struct pk {
  ba_record_t *r;
  size_t n, cap;
  uint8_t **frames;
} pk_t;

static void add_packet(pk_t *p, const struct pcap_pkthdr *h, const uint8_t *d, int dlt) {
  if (p->n == p->cap) {
    p->cap = p->cap ? p->cap * 2 : 4096;
    p->r = realloc(p->r, p->cap * sizeof *p->r);
    p->frames = realloc(p->frames, p->cap * sizeof *p->frames);
  }
  ba_record_t *r = &p->r[p->n];
  memset(r, 0, sizeof *r);
  r->kind = BA_REC_PACKET;
  r->packets = 1;
  r->bytes = h->len;
  r->wirelen = h->len;
  r->caplen = h->caplen > 262144 ? 262144 : h->caplen;
  r->linktype = (uint16_t)dlt;
  p->frames[p->n] = malloc(r->caplen ? r->caplen : 1);
  memcpy(p->frames[p->n], d, r->caplen);
  r->frame = p->frames[p->n];
  size_t off = 0, len = r->caplen;
  uint16_t et = 0;
  if (dlt == DLT_EN10MB && len >= 14) {
    et = (uint16_t)(d[12] << 8 | d[13]);
    off = 14;
    if (et == 0x8100 && len >= 18) {
      r->vlan = (uint16_t)((d[14] << 8 | d[15]) & 0xFFF);
      et = (uint16_t)(d[16] << 8 | d[17]);
      off = 18;
    }
  } else if (dlt == DLT_RAW || dlt == 101) {
    et = len && (d[0] >> 4) == 6 ? 0x86DD : 0x0800;
  }
  const uint8_t *l4 = NULL;
  size_t l4len = 0;
  if (et == 0x0800 && len >= off + 20 && (d[off] >> 4) == 4) {
    size_t ihl = (size_t)(d[off] & 15) * 4;
    r->ipver = 4;
    r->tos = d[off + 1];
    r->proto = d[off + 9];
    ba_addr_set_v4(r->src, (uint32_t)d[off + 12] << 24 | (uint32_t)d[off + 13] << 16 | (uint32_t)d[off + 14] << 8 | d[off + 15]);
    ba_addr_set_v4(r->dst, (uint32_t)d[off + 16] << 24 | (uint32_t)d[off + 17] << 16 | (uint32_t)d[off + 18] << 8 | d[off + 19]);
    if (ihl >= 20 && len >= off + ihl) {
      l4 = d + off + ihl;
      l4len = len - off - ihl;
    }
  } else if (et == 0x86DD && len >= off + 40) {
    r->ipver = 6;
    r->proto = d[off + 6];
    memcpy(r->src, d + off + 8, 16);
    memcpy(r->dst, d + off + 24, 16);
    l4 = d + off + 40;
    l4len = len - off - 40;
  }
  if (l4 && (r->proto == 6 || r->proto == 17) && l4len >= 4) {
    r->src_port = (uint16_t)(l4[0] << 8 | l4[1]);
    r->dst_port = (uint16_t)(l4[2] << 8 | l4[3]);
    if (r->proto == 6 && l4len >= 14) r->tcp_flags = l4[13];
  }
  p->n++;
}

static void walk(const char *dir, pk_t *p) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char path[4096];
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      walk(path, p);
      continue;
    }
    size_t l = strlen(e->d_name);
    if (!(l > 5 && !strcmp(e->d_name + l - 5, ".pcap")) && !(l > 7 && !strcmp(e->d_name + l - 7, ".pcapng")))
      continue;
    char err[PCAP_ERRBUF_SIZE];
    pcap_t *pc = pcap_open_offline(path, err);
    if (!pc) continue;
    int dlt = pcap_datalink(pc);
    struct pcap_pkthdr *h;
    const u_char *data;
    while (pcap_next_ex(pc, &h, &data) == 1) add_packet(p, h, data, dlt);
    pcap_close(pc);
  }
  closedir(d);
}

int main(int argc, char **argv) {
  size_t nflows = 1000000;
  const char *traces = BENCH_TRACES, *tmp = "/tmp";
  int skip_real = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--flows") && i + 1 < argc) nflows = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--traces") && i + 1 < argc) traces = argv[++i];
    else if (!strcmp(argv[i], "--dir") && i + 1 < argc) tmp = argv[++i];
    else if (!strcmp(argv[i], "--skip-real")) skip_real = 1;
    else {
      fprintf(stderr, "usage: bench_store [--flows N] [--traces DIR] [--dir TMPDIR] [--skip-real]\n");
      return 2;
    }
  }
  printf("command:");
  for (int i = 0; i < argc; i++) printf(" %s", argv[i]);
  printf("\n");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/bench_store.%d", tmp, (int)getpid());
  ba_record_t *r = malloc(nflows * sizeof *r);
  uint64_t t0 = 1795000000ull / 3600 * 3600 * 1000000000ull;
  gen_flows(r, nflows, t0);
  printf("\n### Generated flows: %zu records, one hour, LZO unless noted\n\n", nflows);
  printf("| codec | compress | threads | Mrec/s wall | CPU ns/rec | archive B/rec | index B/rec |\n|---|---|---|---|---|---|---|\n");
  for (int c = 1; c <= 6; c++) {
    for (int t = 1; t <= 2; t++) {
      ba_store_opts_t o;
      ba_store_opts_init(&o);
      o.codec = (ba_codec_t)c;
      o.threads = t;
      run_result_t res;
      int rc = run_store(dir, r, nflows, &o, &res);
      if (rc < 0) {
        printf("| %s | lzo | %d | error %s |\n", ba_codec_name(o.codec), t, ba_strerror(rc));
        continue;
      }
      printf("| %s | lzo | %d | %.2f | %.0f | %.2f | %.2f |\n", ba_codec_name(o.codec), t,
             res.rows / res.secs / 1e6, res.cpu * 1e9 / res.rows, (double)res.archive / res.rows,
             (double)res.index / res.rows);
      fflush(stdout);
    }
  }
  for (int z = BA_COMPRESS_LZ4; z <= BA_COMPRESS_NONE; z++) {
    ba_store_opts_t o;
    ba_store_opts_init(&o);
    o.compress = (ba_compress_t)z;
    run_result_t res;
    if (run_store(dir, r, nflows, &o, &res) < 0) continue;
    printf("| %s | %s | %d | %.2f | %.0f | %.2f | %.2f |\n", ba_codec_name(o.codec), ba_compress_name(o.compress),
           o.threads, res.rows / res.secs / 1e6, res.cpu * 1e9 / res.rows, (double)res.archive / res.rows,
           (double)res.index / res.rows);
    fflush(stdout);
  }
  free(r);
  if (!skip_real) {
    pk_t p = {0};
    walk(traces, &p);
    for (size_t i = 0; i < p.n; i++) p.r[i].first_ns = p.r[i].last_ns = t0 + (uint64_t)i * 1000000ull;
    printf("\n### Real captures: %zu packets from %s (timestamps: 1 ms steps)\n\n", p.n, traces);
    printf("| codec | Mrec/s wall (2 thr) | CPU ns/rec | index B/rec |");
    for (int a = 0; a < BA_ATTR_COUNT; a++) printf(" %s |", ba_attr_name((ba_attr_t)a));
    printf("\n|---|---|---|---|");
    for (int a = 0; a < BA_ATTR_COUNT; a++) printf("---|");
    printf("\n");
    for (int c = 1; c <= 6 && p.n; c++) {
      ba_store_opts_t o;
      ba_store_opts_init(&o);
      o.codec = (ba_codec_t)c;
      run_result_t res;
      if (run_store(dir, p.r, p.n, &o, &res) < 0) continue;
      printf("| %s | %.2f | %.0f | %.3f |", ba_codec_name(o.codec), res.rows / res.secs / 1e6,
             res.cpu * 1e9 / res.rows, (double)res.index / res.rows);
      for (int a = 0; a < BA_ATTR_COUNT; a++) printf(" %.3f |", (double)res.attr[a] / res.rows);
      printf("\n");
      fflush(stdout);
    }
    for (size_t i = 0; i < p.n; i++) free(p.frames[i]);
    free(p.frames);
    free(p.r);
  }
  rmtree(dir);
  return 0;
}

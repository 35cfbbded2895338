/* bench_olsh's data sets: see olsh_data.h. */
#include "olsh_data.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bitarc/ingest.h"
#include "common/common.h"
#include "ingest/flowagg.h"
#include "ingest/flowcsv.h"

void bench_die(const char *msg) {
  fprintf(stderr, "bench_olsh: %s\n", msg);
  exit(1);
}

static ba_record_t *recset_add(recset *s) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 4096;
    s->r = realloc(s->r, s->cap * sizeof *s->r);
    s->foff = realloc(s->foff, s->cap * sizeof *s->foff);
    if (!s->r || !s->foff) bench_die("out of memory");
  }
  memset(&s->r[s->n], 0, sizeof s->r[s->n]);
  s->foff[s->n] = s->fbytes;
  return &s->r[s->n++];
}

static void recset_frame(recset *s, const uint8_t *p, size_t len) {
  if (s->fbytes + len > s->fcap) {
    while (s->fbytes + len > s->fcap) s->fcap = s->fcap ? 2 * s->fcap : 1 << 20;
    s->frames = realloc(s->frames, s->fcap);
    if (!s->frames) bench_die("out of memory");
  }
  memcpy(s->frames + s->fbytes, p, len);
  s->fbytes += len;
}

void recset_free(recset *s) {
  free(s->r);
  free(s->foff);
  free(s->frames);
}

/* ---------- captures, through ba_capture_ingest ---------- */

/* Replay: the captures were taken years apart and many hold long idle
 * stretches; a collector would see them back to back. */
typedef struct {
  recset *s;
  int replay, first;
  uint64_t clock, prev;
} capctx;

static int cap_sink(void *ctx, const ba_record_t *recs, size_t n) {
  capctx *c = ctx;
  for (size_t i = 0; i < n; i++) {
    ba_record_t *r = recset_add(c->s);
    *r = recs[i];
    if (c->replay) {
      uint64_t ts = r->first_ns;
      uint64_t gap = c->first || ts < c->prev ? 1000000 : BA_MIN(ts - c->prev, 1000000000ull);
      c->clock += gap;
      c->prev = ts;
      c->first = 0;
      r->first_ns = r->last_ns = c->clock;
    }
    if (r->caplen && recs[i].frame) recset_frame(c->s, recs[i].frame, r->caplen);
    r->frame = NULL; /* set once every frame is in (the buffer moves) */
  }
  return 0;
}

static int is_capture(const char *name) {
  size_t l = strlen(name);
  return (l > 5 && !strcmp(name + l - 5, ".pcap")) || (l > 7 && !strcmp(name + l - 7, ".pcapng"));
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Paths of the captures under dir, recursively. */
static void list_captures(const char *dir, char ***paths, size_t *n) {
  DIR *d = opendir(dir);
  if (!d) return;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char *full = malloc(strlen(dir) + strlen(e->d_name) + 2);
    if (!full) bench_die("out of memory");
    sprintf(full, "%s/%s", dir, e->d_name);
    struct stat st;
    if (lstat(full, &st) == 0 && S_ISDIR(st.st_mode)) {
      list_captures(full, paths, n);
      free(full);
    } else if (S_ISREG(st.st_mode) && is_capture(e->d_name)) {
      *paths = realloc(*paths, (*n + 1) * sizeof **paths);
      if (!*paths) bench_die("out of memory");
      (*paths)[(*n)++] = full;
    } else {
      free(full);
    }
  }
  closedir(d);
}

void olsh_load_captures(const char *dir, int replay, recset *s) {
  char **paths = NULL;
  size_t np = 0, bad = 0;
  list_captures(dir, &paths, &np);
  if (!np) {
    fprintf(stderr, "bench_olsh: no captures under %s, skipping the real data sets\n", dir);
    return;
  }
  qsort(paths, np, sizeof *paths, cmp_str);
  capctx c = {s, replay, 1, 1763769600ull * 1000000000ull, 0};
  ba_capture_opts_t o;
  memset(&o, 0, sizeof o);
  o.as = BA_INGEST_PACKETS;
  for (size_t i = 0; i < np; i++) {
    c.first = 1;
    ba_capture_result_t res;
    /* A damaged file gives the packets before the damage, as `bitarc ingest`. */
    if (ba_capture_ingest(paths[i], NULL, &o, cap_sink, &c, &res) < 0) bad++;
    free(paths[i]);
  }
  free(paths);
  for (size_t i = 0; i < s->n; i++)
    if (s->r[i].caplen) s->r[i].frame = s->frames + s->foff[i];
  printf("captures: %zu files (%zu with a read error, packets before it kept), %zu packets\n", np, bad, s->n);
}

/* ---------- flows from packets, through ba_flowagg ---------- */

void olsh_flows_from_packets(const recset *pk, recset *fl) {
  ba_flowagg_t *a;
  if (!pk->n) return;
  if (ba_flowagg_create(60000000000ull, &a) != BA_OK || ba_flowagg_add(a, pk->r, pk->n) != BA_OK)
    bench_die("flow aggregation failed");
  size_t n;
  const ba_record_t *f = ba_flowagg_flows(a, &n);
  for (size_t i = 0; i < n; i++) {
    ba_record_t *r = recset_add(fl);
    *r = f[i];
    ba_addr_set_v4(r->exporter, 0x7f000001); /* one collector */
  }
  ba_flowagg_free(a);
}

/* ---------- generated flows ---------- */

/* Skewed client and server populations, a service mix, ephemeral client
 * ports, responses as reversed flows, time-ordered. */
static uint64_t rng_state = 0x12345678;
static uint64_t rnd(void) {
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static double unif(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }
static uint64_t zipf(uint64_t n, double s) {
  double u = unif();
  double v = pow(u * (pow((double)n + 1.0, 1.0 - s) - 1.0) + 1.0, 1.0 / (1.0 - s)) - 1.0;
  uint64_t k = (uint64_t)v;
  return k >= n ? n - 1 : k;
}

void olsh_gen_flows(size_t n, recset *s) {
  static const uint16_t svc[] = {443, 80, 53, 123, 22, 25, 445, 3389, 993, 8080, 5060, 1194};
  uint64_t t = 1763769600ull * 1000000000ull; /* 2025-11-22 00:00 UTC */
  for (size_t i = 0; i < n; i++) {
    ba_record_t *r = recset_add(s);
    r->kind = BA_REC_FLOW;
    r->ipver = 4;
    t += rnd() % 4000000; /* ~500 flows/s: two hours for a million */
    r->first_ns = t;
    r->last_ns = t + (rnd() % 30000) * 1000000ull;
    uint32_t client = 0x0A000000u | (uint32_t)(zipf(1u << 16, 1.05) * 2654435761u & 0xffffu) << 0;
    uint32_t server = (uint32_t)(0xC0A80000u + zipf(2000, 1.3)) ^ (uint32_t)((zipf(40, 1.0)) << 20);
    uint16_t dport = svc[zipf(BA_ARRAY_LEN(svc), 1.4)];
    uint16_t sport = (uint16_t)(49152 + rnd() % 16384);
    r->proto = dport == 53 || dport == 123 || dport == 5060 || dport == 1194 ? 17 : 6;
    r->tcp_flags = r->proto == 6 ? (uint8_t)(0x1b | (rnd() % 8 == 0 ? 0x04 : 0)) : 0;
    r->packets = 1 + zipf(10000, 1.6);
    r->bytes = r->packets * (40 + rnd() % 1460);
    r->src_as = 64512;
    r->dst_as = 64512 + (uint32_t)(server >> 20 & 0xff);
    r->in_if = 1 + (uint32_t)(rnd() % 4);
    r->out_if = 10 + (uint32_t)(rnd() % 2);
    ba_addr_set_v4(r->exporter, 0xAC100001u + (uint32_t)(rnd() % 3));
    int resp = rnd() % 2; /* the response direction */
    ba_addr_set_v4(r->src, resp ? server : client);
    ba_addr_set_v4(r->dst, resp ? client : server);
    r->src_port = resp ? dport : sport;
    r->dst_port = resp ? sport : dport;
  }
}

/* ---------- real flow exports, through ba_flowcsv_read ---------- */

typedef struct {
  recset *s;
  size_t v6, inversions;
} csvctx;

static int csv_sink(void *ctx, const ba_record_t *recs, size_t n) {
  csvctx *c = ctx;
  for (size_t i = 0; i < n; i++) {
    if (recs[i].ipver != 4) { /* the sets compare IPv4 byte indexes */
      c->v6++;
      continue;
    }
    uint64_t prev = c->s->n ? c->s->r[c->s->n - 1].first_ns : 0;
    ba_record_t *r = recset_add(c->s);
    *r = recs[i];
    ba_addr_set_v4(r->exporter, 0x7f000001); /* one collector */
    c->inversions += r->first_ns < prev;
  }
  return 0;
}

/* One file; .xz files are read through `xz -dc`. */
static void read_flow_file(const char *path, csvctx *c, ba_flowcsv_stats_t *st) {
  size_t l = strlen(path);
  int xz = l > 3 && !strcmp(path + l - 3, ".xz");
  FILE *f;
  if (xz) {
    char cmd[4200];
    if (strchr(path, '\'')) bench_die("--flow-csv: a path with a quote");
    snprintf(cmd, sizeof cmd, "xz -dc '%s'", path);
    f = popen(cmd, "r");
  } else {
    f = fopen(path, "r");
  }
  if (!f) {
    fprintf(stderr, "bench_olsh: cannot open %s\n", path);
    exit(2);
  }
  char err[256];
  int rc = ba_flowcsv_read(f, path, csv_sink, c, st, err, sizeof err);
  int closed = xz ? pclose(f) : fclose(f);
  if (rc != BA_OK || closed != 0) {
    fprintf(stderr, "bench_olsh: %s\n", rc != BA_OK ? err : "xz -dc failed");
    exit(2);
  }
}

static int cmp_ver(const void *a, const void *b) { return strverscmp(*(char *const *)a, *(char *const *)b); }

/* The regular files of a directory (SOURCES.md and dot files left out). */
static size_t dir_files(const char *dir, char ***names) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "bench_olsh: --flow-csv %s: cannot read the directory\n", dir);
    exit(2);
  }
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.' || !strcmp(e->d_name, "SOURCES.md")) continue;
    char *full = malloc(strlen(dir) + strlen(e->d_name) + 2);
    *names = realloc(*names, (n + 1) * sizeof **names);
    if (!full || !*names) bench_die("out of memory");
    sprintf(full, "%s/%s", dir, e->d_name);
    struct stat sb;
    if (stat(full, &sb) != 0 || !S_ISREG(sb.st_mode)) {
      free(full);
      continue;
    }
    (*names)[n++] = full;
  }
  closedir(d);
  qsort(*names, n, sizeof **names, cmp_ver);
  return n;
}

void olsh_load_flow_csv(char **paths, size_t npaths, recset *s) {
  ba_flowcsv_stats_t st;
  memset(&st, 0, sizeof st);
  csvctx c = {s, 0, 0};
  size_t files = 0;
  for (size_t i = 0; i < npaths; i++) {
    struct stat sb;
    if (stat(paths[i], &sb) != 0) {
      fprintf(stderr, "bench_olsh: --flow-csv %s: no such file or directory\n", paths[i]);
      exit(2);
    }
    if (!S_ISDIR(sb.st_mode)) {
      read_flow_file(paths[i], &c, &st);
      files++;
      continue;
    }
    char **names = NULL;
    size_t n = dir_files(paths[i], &names);
    if (!n) {
      fprintf(stderr, "bench_olsh: --flow-csv %s: no files in the directory\n", paths[i]);
      exit(2);
    }
    for (size_t k = 0; k < n; k++) {
      read_flow_file(names[k], &c, &st);
      free(names[k]);
    }
    files += n;
    free(names);
  }
  printf("flow CSV: %zu files, %llu flow lines, %zu IPv4 flows kept; skipped: %zu IPv6, %llu non-IP, %llu "
         "unparsable%s%s; %zu starts earlier than the previous row's\n",
         files, (unsigned long long)st.lines, s->n, c.v6, (unsigned long long)st.nonip,
         (unsigned long long)st.bad, st.bad ? ", first: " : "", st.first_bad, c.inversions);
  if (st.n_nonip_protos) {
    printf("  non-IP protocols skipped:");
    for (unsigned k = 0; k < st.n_nonip_protos; k++) printf(" %s", st.nonip_protos[k]);
    printf("\n");
  }
}

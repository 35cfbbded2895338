/* bench_olsh: what oLSH reordering buys and costs, side by side in one run.
 *
 * For each data set (packets of the shared captures, flows aggregated from
 * them, generated flows, real flows from CSV exports with --flow-csv) and
 * each mode (arrival order, oLSH), the records go through a NET-FLi-style
 * pipeline: 4000-row column blocks compressed with
 * LZO1X-1, and one compressed bitmap per (attribute, value) for the store's
 * indexed attributes. Printed: archive bytes, index bytes per codec, ingest
 * rate (oLSH + columns + LZO + index in the timed codec) and the latency of
 * exact IPv4 source lookups (AND of four byte bitmaps, the paper's Fig. 10)
 * with the number of 4000-row blocks a fetch of the matches would touch.
 *
 * With --store DIR it also writes the same records through the real store
 * writer (ba_store_opts.reorder = none / olsh) and reports its byte counts. */
#include <dirent.h>
#include <ftw.h>
#include <getopt.h>
#include <lzo/lzo1x.h>
#include <math.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "bitarc/bitarc.h"
#include "bitarc/query.h"
#include "archive/archive.h"
#include "common/common.h"
#include "reorder/olsh.h"

#define BLOCK_ROWS 4000
#define NATTR 13 /* src ip 0-3, dst ip 0-3, src port, dst port, proto, flags, time bin */
#define TIME_BIN_NS (60ull * 1000000000ull)

static void die(const char *msg) {
  fprintf(stderr, "bench_olsh: %s\n", msg);
  exit(2);
}

/* ---------- record sets ---------- */

typedef struct {
  const char *name;
  ba_record_t *r;
  size_t n, cap;
  uint8_t *frames; /* all frame bytes; r[i].frame points in here after load */
  size_t fbytes, fcap;
  size_t *foff;
} recset;

static ba_record_t *recset_add(recset *s) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 4096;
    s->r = realloc(s->r, s->cap * sizeof *s->r);
    s->foff = realloc(s->foff, s->cap * sizeof *s->foff);
    if (!s->r || !s->foff) die("out of memory");
  }
  memset(&s->r[s->n], 0, sizeof s->r[s->n]);
  s->foff[s->n] = s->fbytes;
  return &s->r[s->n++];
}

static void recset_frame(recset *s, const uint8_t *p, size_t len) {
  if (s->fbytes + len > s->fcap) {
    while (s->fbytes + len > s->fcap) s->fcap = s->fcap ? 2 * s->fcap : 1 << 20;
    s->frames = realloc(s->frames, s->fcap);
    if (!s->frames) die("out of memory");
  }
  memcpy(s->frames + s->fbytes, p, len);
  s->fbytes += len;
}

static void recset_free(recset *s) {
  free(s->r);
  free(s->foff);
  free(s->frames);
}

static void recset_fix_frames(recset *s) {
  for (size_t i = 0; i < s->n; i++)
    if (s->r[i].kind == BA_REC_PACKET) s->r[i].frame = s->frames + s->foff[i];
}

/* A rough packet parse (Ethernet, VLAN, Linux SLL, raw IP, BSD loopback;
 * IPv4/IPv6; TCP/UDP ports, ICMP type/code). Enough for a benchmark. */
static void parse_packet(ba_record_t *r, int dlt, const uint8_t *p, size_t len) {
  size_t off;
  unsigned et;
  if (dlt == DLT_EN10MB) {
    if (len < 14) return;
    et = ba_load_be16(p + 12);
    off = 14;
    while ((et == 0x8100 || et == 0x88a8) && len >= off + 4) {
      r->vlan = ba_load_be16(p + off) & 0xfff;
      et = ba_load_be16(p + off + 2);
      off += 4;
    }
  } else if (dlt == DLT_LINUX_SLL) {
    if (len < 16) return;
    et = ba_load_be16(p + 14);
    off = 16;
  } else if (dlt == DLT_RAW || dlt == 101 || dlt == 12) {
    if (len < 1) return;
    et = (p[0] >> 4) == 6 ? 0x86dd : 0x0800;
    off = 0;
  } else if (dlt == DLT_NULL || dlt == DLT_LOOP) {
    if (len < 5) return;
    et = (p[4] >> 4) == 6 ? 0x86dd : 0x0800;
    off = 4;
  } else {
    return;
  }
  size_t l4;
  if (et == 0x0800 && len >= off + 20 && (p[off] >> 4) == 4) {
    r->ipver = 4;
    r->tos = p[off + 1];
    r->proto = p[off + 9];
    ba_addr_set_v4(r->src, ba_load_be32(p + off + 12));
    ba_addr_set_v4(r->dst, ba_load_be32(p + off + 16));
    l4 = off + (size_t)(p[off] & 15) * 4;
    if (ba_load_be16(p + off + 6) & 0x1fff) return; /* later fragment */
  } else if (et == 0x86dd && len >= off + 40) {
    r->ipver = 6;
    r->proto = p[off + 6];
    memcpy(r->src, p + off + 8, 16);
    memcpy(r->dst, p + off + 24, 16);
    l4 = off + 40;
  } else {
    return;
  }
  if ((r->proto == 6 || r->proto == 17) && len >= l4 + 4) {
    r->src_port = ba_load_be16(p + l4);
    r->dst_port = ba_load_be16(p + l4 + 2);
    if (r->proto == 6 && len >= l4 + 14) r->tcp_flags = p[l4 + 13];
  } else if ((r->proto == 1 || r->proto == 58) && len >= l4 + 2) {
    r->icmp_type = p[l4];
    r->icmp_code = p[l4 + 1];
    r->dst_port = (uint16_t)(p[l4] << 8 | p[l4 + 1]);
  }
}

static char **g_paths;
static size_t g_npaths, g_cpaths;
static int walk_fn(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)st; (void)ftw;
  size_t l = strlen(path);
  if (type == FTW_F && ((l > 5 && !strcmp(path + l - 5, ".pcap")) || (l > 7 && !strcmp(path + l - 7, ".pcapng")))) {
    if (g_npaths == g_cpaths) {
      g_cpaths = g_cpaths ? 2 * g_cpaths : 256;
      g_paths = realloc(g_paths, g_cpaths * sizeof *g_paths);
    }
    g_paths[g_npaths++] = strdup(path);
  }
  return 0;
}
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Replay: the captures were taken years apart and many hold long idle
 * stretches; a collector would see them back to back. With --replay (the
 * default) each file follows the previous one and gaps between consecutive
 * packets are capped at one second, so one-hour slices hold real traffic
 * mixes instead of one file each. */
static int g_replay = 1;
static uint64_t g_clock = 1763769600ull * 1000000000ull;

static void load_captures(const char *dir, recset *s) {
  if (nftw(dir, walk_fn, 16, FTW_PHYS) != 0 || g_npaths == 0) {
    fprintf(stderr, "bench_olsh: no captures under %s, skipping the real data sets\n", dir);
    return;
  }
  qsort(g_paths, g_npaths, sizeof *g_paths, cmp_str);
  for (size_t i = 0; i < g_npaths; i++) {
    char err[PCAP_ERRBUF_SIZE];
    pcap_t *p = pcap_open_offline_with_tstamp_precision(g_paths[i], PCAP_TSTAMP_PRECISION_NANO, err);
    if (!p) continue;
    int dlt = pcap_datalink(p);
    struct pcap_pkthdr *ph;
    const u_char *data;
    uint64_t prev = 0;
    int first = 1;
    while (pcap_next_ex(p, &ph, &data) == 1) {
      ba_record_t *r = recset_add(s);
      r->kind = BA_REC_PACKET;
      uint64_t ts = (uint64_t)ph->ts.tv_sec * 1000000000ull + (uint64_t)ph->ts.tv_usec;
      if (g_replay) {
        uint64_t gap = first || ts < prev ? 1000000 : BA_MIN(ts - prev, 1000000000ull);
        g_clock += gap;
        prev = ts;
        first = 0;
        ts = g_clock;
      }
      r->first_ns = r->last_ns = ts;
      r->packets = 1;
      r->bytes = ph->len;
      r->caplen = ph->caplen;
      r->wirelen = ph->len;
      r->linktype = (uint16_t)dlt;
      parse_packet(r, dlt, data, ph->caplen);
      recset_frame(s, data, ph->caplen);
    }
    pcap_close(p);
  }
  recset_fix_frames(s);
}

/* Flows from packets: one flow per (5-tuple, capture order), ended by a 60 s gap. */
typedef struct { uint64_t key; size_t flow; } fslot;
static uint64_t tuple_hash(const ba_record_t *r) {
  uint64_t h = 1469598103934665603ull;
  const uint8_t *parts[2] = {r->src, r->dst};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 16; i++) h = (h ^ parts[k][i]) * 1099511628211ull;
  h = (h ^ r->src_port) * 1099511628211ull;
  h = (h ^ r->dst_port) * 1099511628211ull;
  h = (h ^ r->proto) * 1099511628211ull;
  return h | 1;
}
static void packets_to_flows(const recset *pk, recset *fl) {
  size_t cap = 1;
  while (cap < 2 * pk->n + 2) cap *= 2;
  fslot *t = calloc(cap, sizeof *t);
  for (size_t i = 0; i < pk->n; i++) {
    const ba_record_t *p = &pk->r[i];
    if (!p->ipver) continue;
    uint64_t key = tuple_hash(p);
    size_t j = key & (cap - 1);
    while (t[j].key && t[j].key != key) j = (j + 1) & (cap - 1);
    ba_record_t *f = t[j].key ? &fl->r[t[j].flow] : NULL;
    if (f && (p->first_ns > f->last_ns + 60000000000ull || p->first_ns + 60000000000ull < f->first_ns)) f = NULL;
    if (!f) {
      t[j].key = key;
      f = recset_add(fl);
      t[j].flow = fl->n - 1;
      *f = *p;
      f->kind = BA_REC_FLOW;
      f->frame = NULL;
      f->caplen = f->wirelen = 0;
      f->linktype = 0;
      ba_addr_set_v4(f->exporter, 0x7f000001);
      continue;
    }
    f->packets++;
    f->bytes += p->bytes;
    f->tcp_flags |= p->tcp_flags;
    if (p->first_ns > f->last_ns) f->last_ns = p->first_ns;
  }
  free(t);
}

/* Generated flows: skewed client and server populations, a service mix,
 * ephemeral client ports, responses as reversed flows, time-ordered. */
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
static void gen_flows(size_t n, recset *s) {
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
    if (rnd() % 2) { /* the response direction */
      ba_addr_set_v4(r->src, server);
      ba_addr_set_v4(r->dst, client);
      r->src_port = dport;
      r->dst_port = sport;
    } else {
      ba_addr_set_v4(r->src, client);
      ba_addr_set_v4(r->dst, server);
      r->src_port = sport;
      r->dst_port = dport;
    }
  }
}

/* ---------- real flow records from CSV exports ---------- */

/* --flow-csv PATH (files, or directories whose regular files are read in
 * version order: slice_2 before slice_10) reads flow exports with a header
 * line naming the columns. Two vocabularies are understood:
 *   Argus / Stratosphere .binetflow (CTU-13): StartTime, Dur, Proto, SrcAddr,
 *     Sport, DstAddr, Dport, State, sTos, TotPkts, TotBytes;
 *   nfdump -o csv (UGR'16 and others): ts or te, td, sa, da, sp, dp, pr, flg,
 *     stos, ipkt or pkt, ibyt or byt.
 * Times are "YYYY-MM-DD HH:MM:SS[.frac]" (any separators; UTC) or epoch
 * seconds. Records keep the file order (that is the arrival order). IPv6,
 * non-IP (ARP, IPX: MAC addresses) and unparsable rows are counted and
 * skipped (the first few unparsable ones named on stderr with file and
 * line); a file without a usable header line stops the bench. */
enum { FC_START, FC_END, FC_DUR, FC_PROTO, FC_SA, FC_SP, FC_DA, FC_DP, FC_STATE, FC_FLAGS, FC_TOS, FC_PKT,
       FC_BYT, FC_N };
static const char *const g_fc_names[FC_N][3] = {
    {"StartTime", "ts", NULL}, {"te", NULL, NULL},     {"Dur", "td", NULL},     {"Proto", "pr", NULL},
    {"SrcAddr", "sa", NULL},   {"Sport", "sp", NULL},  {"DstAddr", "da", NULL}, {"Dport", "dp", NULL},
    {"State", NULL, NULL},     {"flg", NULL, NULL},    {"sTos", "stos", NULL},  {"TotPkts", "ipkt", "pkt"},
    {"TotBytes", "ibyt", "byt"}};

typedef struct {
  size_t files, lines, kept, v6, nonip, bad, inversions;
  char skipped_protos[8][16];
  size_t nskipped_protos;
} flowcsv_stats;

/* A line that cannot be a flow record: counted and skipped, the first few
 * named on stderr. */
static void fc_bad(flowcsv_stats *st, const char *path, size_t line, const char *what, const char *field) {
  if (st->bad++ < 5)
    fprintf(stderr, "bench_olsh: %s:%zu: %s%s%s%s, line skipped\n", path, line, what, field ? " '" : "",
            field ? field : "", field ? "'" : "");
}

static void fc_fail(const char *path, size_t line, const char *what, const char *field) {
  fprintf(stderr, "bench_olsh: %s:%zu: %s%s%s%s\n", path, line, what, field ? " '" : "", field ? field : "",
          field ? "'" : "");
  exit(2);
}

static char *fc_trim(char *s) {
  while (*s == ' ' || *s == '\t') s++;
  size_t l = strlen(s);
  while (l && (s[l - 1] == ' ' || s[l - 1] == '\t' || s[l - 1] == '\r' || s[l - 1] == '\n')) s[--l] = 0;
  return s;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm). */
static int64_t fc_days(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  unsigned yoe = (unsigned)(y - era * 400);
  unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + (int64_t)doe - 719468;
}

/* Fraction digits after a '.' to nanoseconds; returns the end. */
static const char *fc_frac(const char *p, uint64_t *ns) {
  uint64_t v = 0, scale = 1000000000ull;
  if (*p == '.')
    for (p++; *p >= '0' && *p <= '9'; p++)
      if (scale > 1) v += (uint64_t)(*p - '0') * (scale /= 10);
  *ns = v;
  return p;
}

static int fc_time(const char *s, uint64_t *ns) {
  unsigned y, mo, d, h, mi, sec;
  int n = 0;
  if (sscanf(s, "%4u%*1[-/]%2u%*1[-/]%2u%*1[ T]%2u:%2u:%2u%n", &y, &mo, &d, &h, &mi, &sec, &n) == 6 && n > 0) {
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return -1;
    uint64_t frac;
    const char *e = fc_frac(s + n, &frac);
    if (*e) return -1;
    *ns = ((uint64_t)fc_days(y, mo, d) * 86400u + h * 3600u + mi * 60u + sec) * 1000000000ull + frac;
    return 0;
  }
  char *e;
  unsigned long long secs = strtoull(s, &e, 10);
  if (e == s || (*e && *e != '.')) return -1;
  uint64_t frac;
  if (*fc_frac(e, &frac)) return -1;
  *ns = secs * 1000000000ull + frac;
  return 0;
}

static int fc_dur(const char *s, uint64_t *ns) {
  char *e;
  unsigned long long secs = strtoull(s, &e, 10);
  if (e == s || (*e && *e != '.') || s[0] == '-') return -1;
  uint64_t frac;
  if (*fc_frac(e, &frac)) return -1;
  *ns = secs * 1000000000ull + frac;
  return 0;
}

static int fc_uint(const char *s, uint64_t max, uint64_t *v) {
  char *e;
  if (!*s) { *v = 0; return 0; }
  if (s[0] == '-') return -1;
  unsigned long long x = strtoull(s, &e, 0); /* Argus writes ICMP "ports" in hex */
  if (e == s || *e || x > max) return -1;
  *v = x;
  return 0;
}

/* 1 = IPv4, 0 = IPv6 or a MAC address (skipped), -1 = garbage. */
static int fc_addr(const char *s, uint8_t out[16]) {
  unsigned a, b, c, d;
  int n = 0;
  if (sscanf(s, "%3u.%3u.%3u.%3u%n", &a, &b, &c, &d, &n) == 4 && !s[n] && a < 256 && b < 256 && c < 256 && d < 256) {
    ba_addr_set_v4(out, a << 24 | b << 16 | c << 8 | d);
    return 1;
  }
  return strchr(s, ':') ? 0 : -1;
}

/* Protocol by Argus/nfdump name or number; -1 for a non-IP protocol. */
static int fc_proto(const char *s) {
  static const struct { const char *name; int num; } tab[] = {
      {"tcp", 6}, {"udp", 17}, {"icmp", 1}, {"igmp", 2}, {"ipv6", 41}, {"gre", 47}, {"esp", 50}, {"ah", 51},
      {"ipv6-icmp", 58}, {"icmp6", 58}, {"ipnip", 4}, {"pim", 103}, {"sctp", 132}, {"udt", 17}, {"rtp", 17},
      {"rtcp", 17}};
  char *e;
  unsigned long v = strtoul(s, &e, 10);
  if (e != s && !*e && v < 256) return (int)v;
  for (size_t i = 0; i < BA_ARRAY_LEN(tab); i++)
    if (!strcasecmp(s, tab[i].name)) return tab[i].num;
  return -1;
}

/* TCP flags from an Argus State ("FSPA_FSPA": both directions) or an nfdump
 * flag string (".AP.SF"). */
static uint8_t fc_flags(const char *s) {
  uint8_t f = 0;
  for (; *s; s++) switch (*s) {
      case 'F': f |= BA_TCP_FIN; break;
      case 'S': f |= BA_TCP_SYN; break;
      case 'R': f |= BA_TCP_RST; break;
      case 'P': f |= BA_TCP_PSH; break;
      case 'A': f |= BA_TCP_ACK; break;
      case 'U': f |= BA_TCP_URG; break;
      case 'E': f |= BA_TCP_ECE; break;
      case 'C': f |= BA_TCP_CWR; break;
      default: break;
    }
  return f;
}

static void load_flow_file(const char *path, recset *s, flowcsv_stats *st) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "bench_olsh: cannot open %s\n", path);
    exit(2);
  }
  int col[FC_N];
  char *line = NULL, *field[64];
  size_t cap = 0, lineno = 0;
  int have_header = 0;
  uint64_t prev_start = s->n ? s->r[s->n - 1].first_ns : 0;
  st->files++;
  while (getline(&line, &cap, f) > 0) {
    lineno++;
    char *p = line;
    size_t nf = 0;
    for (char *tok; nf < 64 && (tok = strsep(&p, ","));) field[nf++] = fc_trim(tok);
    if (nf == 1 && !field[0][0]) continue; /* blank line */
    if (!have_header) {
      for (int k = 0; k < FC_N; k++) {
        col[k] = -1;
        for (size_t i = 0; i < nf && col[k] < 0; i++)
          for (int a = 0; a < 3 && g_fc_names[k][a]; a++)
            if (!strcmp(field[i], g_fc_names[k][a])) col[k] = (int)i;
      }
      if ((col[FC_START] < 0 && col[FC_END] < 0) || col[FC_SA] < 0 || col[FC_DA] < 0 || col[FC_PROTO] < 0 ||
          col[FC_PKT] < 0 || col[FC_BYT] < 0)
        fc_fail(path, lineno, "no header naming the start time (StartTime/ts/te), SrcAddr/sa, DstAddr/da, "
                "Proto/pr, TotPkts/pkt and TotBytes/byt", NULL);
      have_header = 1;
      continue;
    }
    if (!strcmp(field[0], "Summary")) break; /* nfdump's trailer */
    st->lines++;
    int short_line = 0;
    for (int k = 0; k < FC_N; k++) short_line |= col[k] >= (int)nf;
    if (short_line) {
      fc_bad(st, path, lineno, "too few fields", NULL);
      continue;
    }
    ba_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = BA_REC_FLOW;
    int sa = fc_addr(field[col[FC_SA]], r.src), da = fc_addr(field[col[FC_DA]], r.dst);
    if (sa < 0) { fc_bad(st, path, lineno, "bad source address", field[col[FC_SA]]); continue; }
    if (da < 0) { fc_bad(st, path, lineno, "bad destination address", field[col[FC_DA]]); continue; }
    int proto = fc_proto(field[col[FC_PROTO]]);
    if (proto < 0) { /* ARP, IPX, LLC...: MAC addresses, no IP header */
      st->nonip++;
      int seen = 0;
      for (size_t k = 0; k < st->nskipped_protos; k++) seen |= !strcmp(st->skipped_protos[k], field[col[FC_PROTO]]);
      if (!seen && st->nskipped_protos < BA_ARRAY_LEN(st->skipped_protos))
        snprintf(st->skipped_protos[st->nskipped_protos++], sizeof st->skipped_protos[0], "%s", field[col[FC_PROTO]]);
      continue;
    }
    if (!sa || !da) {
      st->v6++;
      continue;
    }
    r.ipver = 4;
    r.proto = (uint8_t)proto;
    uint64_t dur = 0, v;
    if (col[FC_DUR] >= 0 && fc_dur(field[col[FC_DUR]], &dur) != 0) {
      fc_bad(st, path, lineno, "bad duration", field[col[FC_DUR]]);
      continue;
    }
    if (col[FC_START] >= 0) {
      if (fc_time(field[col[FC_START]], &r.first_ns) != 0) {
        fc_bad(st, path, lineno, "bad start time", field[col[FC_START]]);
        continue;
      }
      r.last_ns = r.first_ns + dur;
    } else {
      if (fc_time(field[col[FC_END]], &r.last_ns) != 0) {
        fc_bad(st, path, lineno, "bad end time", field[col[FC_END]]);
        continue;
      }
      if (dur > r.last_ns) {
        fc_bad(st, path, lineno, "duration before the epoch", field[col[FC_DUR]]);
        continue;
      }
      r.first_ns = r.last_ns - dur;
    }
    uint64_t sp = 0, dp = 0;
    /* Ports are 16 bits for TCP, UDP and SCTP; Argus fills them with other
     * things for other protocols (the ESP SPI), which the record drops. */
    uint64_t pmax = proto == 6 || proto == 17 || proto == 132 || proto == 1 ? 65535 : UINT32_MAX;
    if (col[FC_SP] >= 0 && fc_uint(field[col[FC_SP]], pmax, &sp) != 0) {
      fc_bad(st, path, lineno, "bad source port", field[col[FC_SP]]);
      continue;
    }
    if (col[FC_DP] >= 0 && fc_uint(field[col[FC_DP]], pmax, &dp) != 0) {
      fc_bad(st, path, lineno, "bad destination port", field[col[FC_DP]]);
      continue;
    }
    if (pmax > 65535) {
      sp = dp = 0;
    } else if (proto == 1 && col[FC_STATE] >= 0) {
      /* Argus: Sport holds type<<8|code, Dport the ICMP id; the record
       * keeps type<<8|code in dst_port as nfdump does. */
      r.icmp_type = (uint8_t)(sp >> 8);
      r.icmp_code = (uint8_t)sp;
      r.dst_port = (uint16_t)sp;
    } else if (proto == 1) {
      r.icmp_type = (uint8_t)(dp >> 8);
      r.icmp_code = (uint8_t)dp;
      r.dst_port = (uint16_t)dp;
    }
    if (proto != 1) {
      r.src_port = (uint16_t)sp;
      r.dst_port = (uint16_t)dp;
    }
    if (fc_uint(field[col[FC_PKT]], UINT64_MAX, &r.packets) != 0) {
      fc_bad(st, path, lineno, "bad packet count", field[col[FC_PKT]]);
      continue;
    }
    if (fc_uint(field[col[FC_BYT]], UINT64_MAX, &r.bytes) != 0) {
      fc_bad(st, path, lineno, "bad byte count", field[col[FC_BYT]]);
      continue;
    }
    if (col[FC_TOS] >= 0 && fc_uint(field[col[FC_TOS]], 255, &v) == 0) r.tos = (uint8_t)v;
    if (proto == 6) {
      if (col[FC_FLAGS] >= 0) r.tcp_flags = fc_flags(field[col[FC_FLAGS]]);
      else if (col[FC_STATE] >= 0) r.tcp_flags = fc_flags(field[col[FC_STATE]]);
    }
    ba_addr_set_v4(r.exporter, 0x7f000001); /* one collector */
    if (r.first_ns < prev_start) st->inversions++;
    prev_start = r.first_ns;
    *recset_add(s) = r;
    st->kept++;
  }
  if (ferror(f)) fc_fail(path, lineno, "read error", NULL);
  if (!have_header) fc_fail(path, lineno, "empty file (no header line)", NULL);
  free(line);
  fclose(f);
}

static char **g_flow_paths;
static size_t g_nflow_paths;
static int cmp_ver(const void *a, const void *b) { return strverscmp(*(char *const *)a, *(char *const *)b); }

static void load_flow_csv(char **paths, size_t npaths, recset *s) {
  flowcsv_stats st = {0};
  for (size_t i = 0; i < npaths; i++) {
    struct stat sb;
    if (stat(paths[i], &sb) != 0) {
      fprintf(stderr, "bench_olsh: --flow-csv %s: no such file or directory\n", paths[i]);
      exit(2);
    }
    if (!S_ISDIR(sb.st_mode)) {
      load_flow_file(paths[i], s, &st);
      continue;
    }
    DIR *d = opendir(paths[i]);
    if (!d) {
      fprintf(stderr, "bench_olsh: --flow-csv %s: cannot read the directory\n", paths[i]);
      exit(2);
    }
    char **names = NULL;
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
      if (e->d_name[0] == '.' || !strcmp(e->d_name, "SOURCES.md")) continue;
      char *full = malloc(strlen(paths[i]) + strlen(e->d_name) + 2);
      names = realloc(names, (n + 1) * sizeof *names);
      if (!full || !names) die("out of memory");
      sprintf(full, "%s/%s", paths[i], e->d_name);
      if (stat(full, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        free(full);
        continue;
      }
      names[n++] = full;
    }
    closedir(d);
    if (!n) {
      fprintf(stderr, "bench_olsh: --flow-csv %s: no files in the directory\n", paths[i]);
      exit(2);
    }
    qsort(names, n, sizeof *names, cmp_ver);
    for (size_t k = 0; k < n; k++) {
      load_flow_file(names[k], s, &st);
      free(names[k]);
    }
    free(names);
  }
  printf("flow CSV: %zu files, %zu flow lines, %zu IPv4 flows kept; skipped: %zu IPv6, %zu non-IP, %zu unparsable; "
         "%zu starts earlier than the previous row's\n",
         st.files, st.lines, st.kept, st.v6, st.nonip, st.bad, st.inversions);
  if (st.nskipped_protos) {
    printf("  non-IP protocols skipped:");
    for (size_t k = 0; k < st.nskipped_protos; k++) printf(" %s", st.skipped_protos[k]);
    printf("\n");
  }
}

/* ---------- the pipeline: columns + LZO + bitmap index ---------- */

typedef struct { uint32_t *keys; ba_bitmap_t **bm; size_t cap, n; } vmap;

static ba_bitmap_t **vmap_get(vmap *m, uint32_t key, ba_codec_t codec) {
  if (2 * (m->n + 1) > m->cap) {
    size_t ncap = m->cap ? 2 * m->cap : 64;
    uint32_t *nk = malloc(ncap * sizeof *nk);
    ba_bitmap_t **nb = calloc(ncap, sizeof *nb);
    for (size_t i = 0; i < m->cap; i++) {
      if (!m->bm[i]) continue;
      size_t j = (m->keys[i] * 2654435761u) & (ncap - 1);
      while (nb[j]) j = (j + 1) & (ncap - 1);
      nk[j] = m->keys[i];
      nb[j] = m->bm[i];
    }
    free(m->keys);
    free(m->bm);
    m->keys = nk;
    m->bm = nb;
    m->cap = ncap;
  }
  size_t j = (key * 2654435761u) & (m->cap - 1);
  while (m->bm[j] && m->keys[j] != key) j = (j + 1) & (m->cap - 1);
  if (!m->bm[j]) {
    if (ba_bitmap_create(codec, &m->bm[j]) != BA_OK) die("bitmap create failed");
    m->keys[j] = key;
    m->n++;
  }
  return &m->bm[j];
}

typedef struct {
  ba_codec_t codec;
  vmap attr[NATTR];
  uint64_t tbase;
  uint64_t rows;
} index_b;

static void index_add(index_b *ix, const ba_record_t *r) {
  uint32_t v[NATTR];
  int n4 = ba_addr_is_v4(r->src) && r->ipver == 4;
  for (int i = 0; i < 4; i++) {
    v[i] = r->src[12 + i];
    v[4 + i] = r->dst[12 + i];
  }
  v[8] = r->src_port;
  v[9] = r->dst_port;
  v[10] = r->proto;
  v[11] = r->tcp_flags;
  v[12] = (uint32_t)((r->first_ns - ix->tbase) / TIME_BIN_NS);
  for (int a = n4 ? 0 : 8; a < NATTR; a++)
    if (ba_bitmap_set(*vmap_get(&ix->attr[a], v[a], ix->codec), ix->rows) != BA_OK) die("bitmap set failed");
  ix->rows++;
}

static size_t index_finish(index_b *ix) {
  size_t bytes = 0;
  for (int a = 0; a < NATTR; a++)
    for (size_t i = 0; i < ix->attr[a].cap; i++)
      if (ix->attr[a].bm[i]) {
        if (ba_bitmap_finish(ix->attr[a].bm[i], ix->rows) != BA_OK) die("bitmap finish failed");
        bytes += ba_bitmap_size_bytes(ix->attr[a].bm[i]);
      }
  return bytes;
}

static void index_free(index_b *ix) {
  for (int a = 0; a < NATTR; a++) {
    for (size_t i = 0; i < ix->attr[a].cap; i++) ba_bitmap_free(ix->attr[a].bm[i]);
    free(ix->attr[a].bm);
    free(ix->attr[a].keys);
  }
}

static ba_bitmap_t *index_lookup(index_b *ix, int a, uint32_t key) {
  vmap *m = &ix->attr[a];
  if (!m->cap) return NULL;
  size_t j = (key * 2654435761u) & (m->cap - 1);
  while (m->bm[j] && m->keys[j] != key) j = (j + 1) & (m->cap - 1);
  return m->bm[j];
}

/* Columns as a store lays them out (fixed-width fields, little-endian),
 * compressed per 4000-row block with LZO1X-1. */
typedef struct {
  uint8_t *col[16];
  size_t len[16], cap[16];
  uint8_t *out, *wrk;
  size_t outcap;
  size_t rows;
  uint64_t bytes;
} columns;

static void col_put(columns *c, int k, const void *p, size_t n) {
  if (c->len[k] + n > c->cap[k]) {
    while (c->len[k] + n > c->cap[k]) c->cap[k] = c->cap[k] ? 2 * c->cap[k] : 65536;
    c->col[k] = realloc(c->col[k], c->cap[k]);
  }
  memcpy(c->col[k] + c->len[k], p, n);
  c->len[k] += n;
}

static void col_flush(columns *c) {
  for (int k = 0; k < 16; k++) {
    if (!c->len[k]) continue;
    size_t need = c->len[k] + c->len[k] / 16 + 64 + 3;
    if (need > c->outcap) {
      c->outcap = need;
      c->out = realloc(c->out, need);
    }
    lzo_uint olen = 0;
    if (lzo1x_1_compress(c->col[k], c->len[k], c->out, &olen, c->wrk) != LZO_E_OK) die("lzo failed");
    c->bytes += BA_MIN(olen, c->len[k]) + 16; /* + a block header */
    c->len[k] = 0;
  }
  c->rows = 0;
}

static void col_add(columns *c, const ba_record_t *r) {
  uint8_t b[16];
  ba_store_le64(b, r->first_ns); col_put(c, 0, b, 8);
  ba_store_le32(b, (uint32_t)((r->last_ns - r->first_ns) / 1000000)); col_put(c, 1, b, 4);
  col_put(c, 2, r->src, 16);
  col_put(c, 3, r->dst, 16);
  ba_store_le16(b, r->src_port); ba_store_le16(b + 2, r->dst_port); col_put(c, 4, b, 4);
  b[0] = r->proto; b[1] = r->tcp_flags; b[2] = r->tos; b[3] = r->ipver; col_put(c, 5, b, 4);
  ba_store_le32(b, r->src_as); ba_store_le32(b + 4, r->dst_as); col_put(c, 6, b, 8);
  ba_store_le32(b, r->in_if); ba_store_le32(b + 4, r->out_if); col_put(c, 7, b, 8);
  ba_store_le64(b, r->packets); col_put(c, 8, b, 8);
  ba_store_le64(b, r->bytes); col_put(c, 9, b, 8);
  col_put(c, 10, r->exporter, 16);
  if (r->kind == BA_REC_PACKET) {
    ba_store_le32(b, r->caplen); ba_store_le32(b + 4, r->wirelen); ba_store_le16(b + 8, r->linktype);
    col_put(c, 11, b, 10);
    if (r->caplen) col_put(c, 12, r->frame, r->caplen);
  }
  if (++c->rows == BLOCK_ROWS) col_flush(c);
}

typedef struct {
  columns cols;
  index_b ix;
  ba_record_t *out; /* the records in output order (frames dropped) */
  size_t n;
} pipeline;

static int pipe_sink(void *ctx, const ba_record_t *recs, size_t n) {
  pipeline *p = ctx;
  for (size_t i = 0; i < n; i++) {
    col_add(&p->cols, &recs[i]);
    index_add(&p->ix, &recs[i]);
    p->out[p->n] = recs[i];
    p->out[p->n++].frame = NULL;
  }
  return 0;
}

typedef struct {
  double secs;
  uint64_t archive, index_timed;
  ba_record_t *out;
  size_t n;
  ba_olsh_stats_t st;
} mode_result;

static ba_olsh_opts_t g_olsh;
static ba_codec_t g_timed_codec = BA_CODEC_WAH32;

static uint64_t min_first(const ba_record_t *r, size_t n) {
  uint64_t t = UINT64_MAX;
  for (size_t i = 0; i < n; i++) t = BA_MIN(t, r[i].first_ns);
  return n ? t : 0;
}

static int cmp_rec(const void *pa, const void *pb) {
  const ba_record_t *a = pa, *b = pb;
  int c = memcmp(a->src, b->src, 16);
  if (!c) c = memcmp(a->dst, b->dst, 16);
  if (!c) c = (int)a->dst_port - (int)b->dst_port;
  if (!c) c = (int)a->proto - (int)b->proto;
  if (!c) c = (int)a->src_port - (int)b->src_port;
  if (!c) c = a->first_ns < b->first_ns ? -1 : a->first_ns > b->first_ns;
  return c;
}

/* One timed pass: [oLSH] -> columns + LZO + index in the timed codec. */
static void run_mode(const ba_record_t *rin, size_t nin, int olsh, mode_result *res) {
  const recset view = {.r = (ba_record_t *)rin, .n = nin};
  const recset *s = &view;
  pipeline p;
  memset(&p, 0, sizeof p);
  memset(res, 0, sizeof *res);
  p.ix.codec = g_timed_codec;
  p.ix.tbase = min_first(s->r, s->n);
  p.out = malloc((s->n ? s->n : 1) * sizeof *p.out);
  p.cols.wrk = malloc(LZO1X_1_MEM_COMPRESS);
  if (!p.out || !p.cols.wrk) die("out of memory");
  uint64_t t0 = ba_now_ns();
  if (olsh == 1) {
    ba_olsh_t *h;
    if (ba_olsh_create(&g_olsh, &h) != BA_OK) die("bad oLSH options");
    for (size_t i = 0; i < s->n; i += 1024)
      if (ba_olsh_push(h, s->r + i, BA_MIN(1024, s->n - i), pipe_sink, &p) != 0) die("push failed");
    if (ba_olsh_flush(h, pipe_sink, &p) != 0) die("flush failed");
    ba_olsh_get_stats(h, &res->st);
    ba_olsh_free(h);
  } else if (olsh == 2) {
    /* Offline bound: the whole set sorted by the oLSH attributes. */
    ba_record_t *tmp = malloc((s->n ? s->n : 1) * sizeof *tmp);
    memcpy(tmp, s->r, s->n * sizeof *tmp);
    qsort(tmp, s->n, sizeof *tmp, cmp_rec);
    for (size_t i = 0; i < s->n; i += 1024) pipe_sink(&p, tmp + i, BA_MIN(1024, s->n - i));
    free(tmp);
  } else {
    for (size_t i = 0; i < s->n; i += 1024) pipe_sink(&p, s->r + i, BA_MIN(1024, s->n - i));
  }
  col_flush(&p.cols);
  res->index_timed = index_finish(&p.ix);
  res->secs = (double)(ba_now_ns() - t0) / 1e9;
  res->archive = p.cols.bytes;
  res->out = p.out;
  res->n = p.n;
  index_free(&p.ix);
  for (int k = 0; k < 16; k++) free(p.cols.col[k]);
  free(p.cols.out);
  free(p.cols.wrk);
}

/* Index bytes of `out` in another codec (untimed). */
static size_t index_bytes(const ba_record_t *out, size_t n, ba_codec_t codec, index_b *keep) {
  index_b ix;
  memset(&ix, 0, sizeof ix);
  ix.codec = codec;
  ix.tbase = min_first(out, n);
  for (size_t i = 0; i < n; i++) index_add(&ix, &out[i]);
  size_t b = index_finish(&ix);
  if (keep) *keep = ix;
  else index_free(&ix);
  return b;
}

/* Exact IPv4 source lookups: AND of the four byte bitmaps. Returns mean
 * microseconds per lookup; *blocks gets the mean number of distinct
 * 4000-row blocks holding the matches (what a fetch decompresses). */
static int count_blocks(void *ctx, const uint64_t *rows, size_t n) {
  uint64_t *c = ctx; /* c[0] = blocks, c[1] = last block + 1 */
  for (size_t i = 0; i < n; i++) {
    uint64_t b = rows[i] / BLOCK_ROWS + 1;
    if (b != c[1]) {
      c[0]++;
      c[1] = b;
    }
  }
  return 0;
}

static double ip_lookups(index_b *ix, const uint32_t *ips, size_t nq, int reps, double *blocks) {
  uint64_t nblocks = 0;
  uint64_t t0 = ba_now_ns();
  for (int rep = 0; rep < reps; rep++)
    for (size_t q = 0; q < nq; q++) {
      ba_bitmap_t *b[4];
      for (int k = 0; k < 4; k++) b[k] = index_lookup(ix, k, (ips[q] >> (24 - 8 * k)) & 0xff);
      if (!b[0] || !b[1] || !b[2] || !b[3]) continue;
      ba_bitmap_t *x, *y, *z;
      if (ba_bitmap_and(b[0], b[1], ix->codec, &x) || ba_bitmap_and(x, b[2], ix->codec, &y) ||
          ba_bitmap_and(y, b[3], ix->codec, &z))
        die("and failed");
      if (rep == 0) {
        uint64_t c[2] = {0, 0};
        ba_bitmap_foreach(z, count_blocks, c);
        nblocks += c[0];
      }
      ba_bitmap_free(x);
      ba_bitmap_free(y);
      ba_bitmap_free(z);
    }
  double us = (double)(ba_now_ns() - t0) / 1e3 / ((double)nq * reps);
  *blocks = nq ? (double)nblocks / (double)nq : 0;
  return us;
}

/* ---------- the run ---------- */

static const char *g_codecs = "wah32,wah64,plwah,compax,masc";

static void row3(const char *label, double a, double b, double c, const char *fmt) {
  char x[3][32];
  double v[3] = {a, b, c};
  for (int k = 0; k < 3; k++) snprintf(x[k], sizeof x[k], fmt, v[k]);
  printf("%-24s %13s %13s %7.3f %13s %7.3f\n", label, x[0], x[1], b / a, x[2], c / a);
}

/* The store's layout: one segment per one-hour slice of first_ns, the
 * reorder buffer flushed at every slice boundary. Records keep their arrival
 * order within a slice. */
#define SLICE_NS (3600ull * 1000000000ull)
typedef struct {
  ba_record_t *r; /* records grouped by slice */
  size_t n;
  size_t *start;  /* slice k is r[start[k] .. start[k+1]) */
  size_t nslices;
} sliced;

static int cmp_slice(const void *pa, const void *pb) {
  const ba_record_t *a = *(ba_record_t *const *)pa, *b = *(ba_record_t *const *)pb;
  uint64_t x = a->first_ns / SLICE_NS, y = b->first_ns / SLICE_NS;
  if (x != y) return x < y ? -1 : 1;
  return a < b ? -1 : a > b; /* stable: arrival order */
}

static sliced make_slices(const recset *s) {
  sliced z = {malloc((s->n ? s->n : 1) * sizeof(ba_record_t)), s->n, malloc((s->n + 1) * sizeof(size_t)), 0};
  const ba_record_t **p = malloc((s->n ? s->n : 1) * sizeof *p);
  for (size_t i = 0; i < s->n; i++) p[i] = &s->r[i];
  qsort(p, s->n, sizeof *p, cmp_slice);
  for (size_t i = 0; i < s->n; i++) {
    z.r[i] = *p[i];
    if (i == 0 || p[i]->first_ns / SLICE_NS != p[i - 1]->first_ns / SLICE_NS) z.start[z.nslices++] = i;
  }
  z.start[z.nslices] = s->n;
  free(p);
  return z;
}

static void run_sliced(const sliced *z, int mode, mode_result *res) {
  memset(res, 0, sizeof *res);
  res->out = malloc((z->n ? z->n : 1) * sizeof *res->out);
  for (size_t k = 0; k < z->nslices; k++) {
    mode_result t;
    run_mode(z->r + z->start[k], z->start[k + 1] - z->start[k], mode, &t);
    res->secs += t.secs;
    res->archive += t.archive;
    res->index_timed += t.index_timed;
    memcpy(res->out + res->n, t.out, t.n * sizeof *t.out);
    res->n += t.n;
    res->st.full_chains += t.st.full_chains;
    res->st.mem_chains += t.st.mem_chains;
    res->st.frame_chains += t.st.frame_chains;
    res->st.batches += t.st.batches;
    free(t.out);
  }
}

static int null_sink(void *ctx, const ba_record_t *recs, size_t n) {
  *(uint64_t *)ctx += n + recs[0].first_ns;
  return 0;
}

/* oLSH alone (push + flush into a sink that only touches the batch). */
static double olsh_alone_rate(const recset *s) {
  double best = 0;
  for (int rep = 0; rep < 3; rep++) {
    ba_olsh_t *h;
    uint64_t sum = 0;
    if (ba_olsh_create(&g_olsh, &h) != BA_OK) die("bad oLSH options");
    uint64_t t0 = ba_now_ns();
    for (size_t i = 0; i < s->n; i += 1024)
      if (ba_olsh_push(h, s->r + i, BA_MIN(1024, s->n - i), null_sink, &sum) != 0) die("push failed");
    if (ba_olsh_flush(h, null_sink, &sum) != 0) die("flush failed");
    double r = (double)s->n / ((double)(ba_now_ns() - t0) / 1e9);
    if (r > best) best = r;
    ba_olsh_free(h);
  }
  return best;
}

static void bench_set(const recset *s) {
  if (!s->n) return;
  sliced z = make_slices(s);
  mode_result m[3];
  /* Timings are the best of three runs (shared, noisy machines). */
  /* Repetitions interleave the modes, so a change in background load hits
   * every mode alike. */
  for (int rep = 0; rep < 3; rep++) {
    for (int mode = 0; mode < 3; mode++) {
      mode_result t;
      run_sliced(&z, mode, &t);
      if (rep == 0) m[mode] = t;
      else {
        if (t.secs < m[mode].secs) m[mode].secs = t.secs;
        free(t.out);
      }
    }
  }
  printf("\n== %s: %zu records, %zu one-hour slices ==\n", s->name, s->n, z.nslices);
  printf("%-24s %13s %13s %7s %13s %7s\n", "", "arrival", "oLSH", "ratio", "sorted(bound)", "ratio");
  row3("archive bytes (LZO)", (double)m[0].archive, (double)m[1].archive, (double)m[2].archive, "%.0f");
  /* Query IPs: 100 distinct IPv4 sources drawn from the data (fixed seed). */
  uint32_t ips[100];
  size_t nq = 0;
  rng_state = 0xBEEF;
  for (int tries = 0; nq < 100 && tries < 10000; tries++) {
    const ba_record_t *r = &s->r[rnd() % s->n];
    if (r->ipver != 4) continue;
    uint32_t ip = ba_addr_get_v4(r->src);
    int dup = 0;
    for (size_t k = 0; k < nq; k++) dup |= ips[k] == ip;
    if (!dup) ips[nq++] = ip;
  }
  char list[256];
  snprintf(list, sizeof list, "%s", g_codecs);
  for (char *save = NULL, *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
    ba_codec_t c;
    ba_bitmap_t *probe = NULL;
    if (ba_codec_from_name(name, &c) != BA_OK || ba_bitmap_create(c, &probe) != BA_OK) {
      printf("%-24s %13s\n", name, "(codec not available)");
      continue;
    }
    ba_bitmap_free(probe);
    index_b ix;
    double b[3] = {0}, us[3] = {0}, blk[3] = {0};
    for (int mode = 0; mode < 3; mode++)
      for (size_t k = 0; k < z.nslices; k++) {
        double bk;
        b[mode] += (double)index_bytes(m[mode].out + z.start[k], z.start[k + 1] - z.start[k], c, &ix);
        us[mode] += ip_lookups(&ix, ips, nq, 5, &bk);
        blk[mode] += bk;
        index_free(&ix);
      }
    char label[64];
    snprintf(label, sizeof label, "index bytes %s", name);
    row3(label, b[0], b[1], b[2], "%.0f");
    snprintf(label, sizeof label, "ip lookup us %s", name);
    row3(label, us[0], us[1], us[2], "%.2f");
    if (c == BA_CODEC_WAH32) {
      row3("blocks per lookup", blk[0], blk[1], blk[2], "%.1f");
      row3("archive+index wah32", (double)m[0].archive + b[0], (double)m[1].archive + b[1],
           (double)m[2].archive + b[2], "%.0f");
    }
  }
  row3("ingest records/s", (double)s->n / m[0].secs, (double)s->n / m[1].secs, (double)s->n / m[2].secs, "%.0f");
  printf("%-24s %13s %13.0f\n", "oLSH alone records/s", "", olsh_alone_rate(s));
  printf("  (ingest = [reorder] + columns + LZO + %s index; 'sorted' is an offline full sort, not streamable)\n",
         ba_codec_name(g_timed_codec));
  printf("  oLSH: full chains %llu, memory evictions %llu, frame evictions %llu, batches %llu\n",
         (unsigned long long)m[1].st.full_chains, (unsigned long long)m[1].st.mem_chains,
         (unsigned long long)m[1].st.frame_chains, (unsigned long long)m[1].st.batches);
  for (int mode = 0; mode < 3; mode++) free(m[mode].out);
  free(z.r);
  free(z.start);
}

/* ---------- per-column bytes of the store's own column layouts ---------- */

/* The store's column blocks (ba_col_encode of segment layout 1.0 and 2.0,
 * LZO1X-1, 4000-row groups, one segment per slice), fed in arrival order,
 * oLSH order and the offline sort: which columns carry the bytes and which
 * respond to order. Bytes include the 32-byte block header. */
typedef struct {
  ba_record_t *recs;
  uint8_t *frames, *raw, *out;
  size_t n, nf, fcap, rawcap, outcap;
  void *wrk;
  uint64_t bytes[2][BA_NCOLS2];
  uint64_t enc_ns[2], dec_ns[2]; /* encode + LZO, LZO + decode, all columns */
  ba_record_t *dec;
  ba_col_scratch_t *cs;
  uint8_t *back;
  size_t backcap;
} colacc;

static void grow_buf(uint8_t **p, size_t *cap, size_t need) {
  if (need <= *cap) return;
  while (*cap < need) *cap = *cap ? 2 * *cap : 1 << 16;
  *p = realloc(*p, *cap);
  if (!*p) die("out of memory");
}

static void colacc_flush(colacc *a) {
  if (!a->n) return;
  for (int major = 1; major <= 2; major++)
    for (int c = 0; c < BA_NCOLS2; c++) {
      uint64_t t0 = ba_now_ns();
      size_t raw = ba_col_raw_max(major, c, a->n, a->nf);
      grow_buf(&a->raw, &a->rawcap, raw + 1);
      grow_buf(&a->out, &a->outcap, ba_compress_bound(BA_COMPRESS_LZO, raw) + 1);
      if (ba_col_encode(major, c, a->recs, a->n, a->frames, a->nf, a->raw, &raw, a->cs) != BA_OK) die("encode failed");
      size_t clen = 0;
      if (ba_compress_block(BA_COMPRESS_LZO, a->raw, raw, a->out, a->outcap, &clen, a->wrk) != BA_OK)
        die("compress failed");
      uint64_t t1 = ba_now_ns();
      a->bytes[major - 1][c] += BA_BLK_HDR_BYTES + clen;
      /* Read back, as a query does (and check it). */
      grow_buf(&a->back, &a->backcap, raw + 1);
      if (ba_decompress_block(BA_COMPRESS_LZO, a->out, clen, a->back, raw) != BA_OK ||
          ba_col_decode(major, c, a->back, raw, a->n, a->dec) != BA_OK)
        die("column does not decode");
      uint64_t t2 = ba_now_ns();
      a->enc_ns[major - 1] += t1 - t0;
      a->dec_ns[major - 1] += t2 - t1;
      if (c == BA_NCOLS2 - 1)
        for (size_t i = 0; i < a->n; i++)
          if (a->dec[i].first_ns != a->recs[i].first_ns || a->dec[i].last_ns != a->recs[i].last_ns ||
              a->dec[i].bytes != a->recs[i].bytes || a->dec[i].dst_port != a->recs[i].dst_port)
            die("column round trip differs");
    }
  a->n = a->nf = 0;
}

static int colacc_sink(void *ctx, const ba_record_t *r, size_t n) {
  colacc *a = ctx;
  for (size_t i = 0; i < n; i++) {
    if (r[i].caplen && r[i].frame) {
      grow_buf(&a->frames, &a->fcap, a->nf + r[i].caplen);
      memcpy(a->frames + a->nf, r[i].frame, r[i].caplen);
      a->nf += r[i].caplen;
    }
    a->recs[a->n++] = r[i];
    if (a->n == BLOCK_ROWS) colacc_flush(a);
  }
  return 0;
}

static const char *const g_col_names[BA_NCOLS2] = {
    "first", "last", "src", "dst", "ports", "proto", "flags", "tos", "as",
    "if", "packets", "bytes", "exporter", "vlan", "icmp", "frame", "meta"};

static void bench_columns(const recset *s) {
  if (!s->n) return;
  sliced z = make_slices(s);
  colacc acc[3];
  memset(acc, 0, sizeof acc);
  for (int mode = 0; mode < 3; mode++) {
    colacc *a = &acc[mode];
    a->recs = malloc(BLOCK_ROWS * sizeof *a->recs);
    a->dec = malloc(BLOCK_ROWS * sizeof *a->dec);
    a->wrk = malloc(ba_compress_wrkmem());
    if (!a->recs || !a->dec || !a->wrk || ba_col_scratch_create(&a->cs) != BA_OK) die("out of memory");
    for (size_t k = 0; k < z.nslices; k++) {
      const ba_record_t *r = z.r + z.start[k];
      size_t n = z.start[k + 1] - z.start[k];
      if (mode == 1) {
        ba_olsh_t *h;
        if (ba_olsh_create(&g_olsh, &h) != BA_OK) die("bad oLSH options");
        for (size_t i = 0; i < n; i += 1024)
          if (ba_olsh_push(h, r + i, BA_MIN(1024, n - i), colacc_sink, a) != 0) die("push failed");
        if (ba_olsh_flush(h, colacc_sink, a) != 0) die("flush failed");
        ba_olsh_free(h);
      } else if (mode == 2) {
        ba_record_t *tmp = malloc(n * sizeof *tmp);
        if (!tmp) die("out of memory");
        memcpy(tmp, r, n * sizeof *tmp);
        qsort(tmp, n, sizeof *tmp, cmp_rec);
        colacc_sink(a, tmp, n);
        free(tmp);
      } else {
        colacc_sink(a, r, n);
      }
      colacc_flush(a);
    }
  }
  printf("\n== columns: %s: %zu records, store column blocks (LZO), bytes ==\n", s->name, s->n);
  printf("%-9s %11s %11s %11s %11s %11s %11s\n", "column", "1.0 arrival", "1.0 oLSH", "1.0 sorted",
         "2.0 arrival", "2.0 oLSH", "2.0 sorted");
  uint64_t tot[2][3] = {{0}};
  for (int c = 0; c < BA_NCOLS2; c++) {
    printf("%-9s", g_col_names[c]);
    for (int v = 0; v < 2; v++)
      for (int mode = 0; mode < 3; mode++) {
        printf(" %11llu", (unsigned long long)acc[mode].bytes[v][c]);
        tot[v][mode] += acc[mode].bytes[v][c];
      }
    printf("\n");
  }
  printf("%-9s", "total");
  for (int v = 0; v < 2; v++)
    for (int mode = 0; mode < 3; mode++) printf(" %11llu", (unsigned long long)tot[v][mode]);
  printf("\n%-9s", "/1.0 arr");
  for (int v = 0; v < 2; v++)
    for (int mode = 0; mode < 3; mode++) printf(" %11.3f", (double)tot[v][mode] / (double)tot[0][0]);
  printf("\n  2.0: oLSH / arrival %.3f, sorted / arrival %.3f; 2.0 / 1.0 in arrival order %.3f\n",
         (double)tot[1][1] / (double)tot[1][0], (double)tot[1][2] / (double)tot[1][0],
         (double)tot[1][0] / (double)tot[0][0]);  printf("  ns per row, all 17 columns (arrival order): encode+LZO 1.0 %.0f, 2.0 %.0f; LZO+decode 1.0 %.0f, 2.0 %.0f\n",
         (double)acc[0].enc_ns[0] / (double)s->n, (double)acc[0].enc_ns[1] / (double)s->n,
         (double)acc[0].dec_ns[0] / (double)s->n, (double)acc[0].dec_ns[1] / (double)s->n);
  for (int mode = 0; mode < 3; mode++) {
    free(acc[mode].recs);
    free(acc[mode].dec);
    ba_col_scratch_free(acc[mode].cs);
    free(acc[mode].back);
    free(acc[mode].frames);
    free(acc[mode].raw);
    free(acc[mode].out);
    free(acc[mode].wrk);
  }
  free(z.r);
  free(z.start);
}

/* ---------- through the real store ---------- */

static const char *g_store_base;
static const char *g_store_codecs = "wah32,compax";

static int rm_fn(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)st; (void)type; (void)ftw;
  remove(path);
  return 0;
}

/* The matched records as a set: the sum of a hash of each record's fields
 * (those the queries fetch), which does not depend on the order. */
static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static int count_sink(void *ctx, const ba_record_t *recs, size_t n) {
  uint64_t *sum = ctx;
  for (size_t i = 0; i < n; i++) {
    const ba_record_t *r = &recs[i];
    uint64_t h = mix64(r->first_ns) ^ mix64(r->last_ns + 1);
    h = mix64(h ^ ba_load_le64(r->src) ^ mix64(ba_load_le64(r->src + 8)));
    h = mix64(h ^ ba_load_le64(r->dst) ^ mix64(ba_load_le64(r->dst + 8) + 2));
    h = mix64(h ^ ((uint64_t)r->src_port << 32 | (uint64_t)r->dst_port << 16 | r->proto));
    h = mix64(h ^ r->packets ^ mix64(r->bytes + 3));
    *sum += h;
  }
  return 0;
}

static double cpu_secs(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
         ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

typedef struct {
  double ingest_secs, ingest_cpu; /* wall clock; CPU time of all threads */
  uint64_t archive, index, file, segments;
  double query_ms;
  uint64_t matched, blocks, set_hash;
  uint64_t index_attr[BA_ATTR_COUNT];
} store_result;

/* Filters: exact IPv4 sources (the paper's lookups), a service, a /16 and a
 * service, a protocol. All built from the data with a fixed seed. */
static size_t make_filters(const recset *s, char (*f)[96], size_t cap) {
  size_t n = 0;
  rng_state = 0xF00D;
  for (int tries = 0; n < 20 && tries < 5000; tries++) {
    const ba_record_t *r = &s->r[rnd() % s->n];
    if (r->ipver != 4) continue;
    uint32_t ip = ba_addr_get_v4(r->src);
    snprintf(f[n++], 96, "src ip %u.%u.%u.%u", ip >> 24, ip >> 16 & 255, ip >> 8 & 255, ip & 255);
  }
  const ba_record_t *r = &s->r[rnd() % s->n];
  uint32_t ip = ba_addr_get_v4(r->dst);
  if (n + 4 <= cap) {
    snprintf(f[n++], 96, "dst port 443");
    snprintf(f[n++], 96, "dst net %u.%u.0.0/16 and dst port %u", ip >> 24, ip >> 16 & 255, r->dst_port);
    snprintf(f[n++], 96, "proto udp");
    snprintf(f[n++], 96, "src port 53 or dst port 53");
  }
  return n;
}

static void store_run(const recset *s, ba_codec_t codec, int olsh, char (*filters)[96], size_t nf,
                      store_result *res) {
  memset(res, 0, sizeof *res);
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/bench-olsh-%s-%d", g_store_base, ba_codec_name(codec), olsh);
  nftw(dir, rm_fn, 16, FTW_DEPTH | FTW_PHYS);
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.codec = codec;
  o.reorder = olsh ? BA_REORDER_OLSH : BA_REORDER_NONE;
  ba_store_writer_t *w;
  double c0 = cpu_secs();
  uint64_t t0 = ba_now_ns();
  if (ba_store_writer_open(dir, &o, &w) != BA_OK) die("cannot open the store writer");
  for (size_t i = 0; i < s->n; i += 1024)
    if (ba_store_writer_append(w, s->r + i, BA_MIN(1024, s->n - i)) != BA_OK) die(ba_store_writer_errmsg(w));
  if (ba_store_writer_close(w) != BA_OK) die("store close failed");
  res->ingest_secs = (double)(ba_now_ns() - t0) / 1e9;
  res->ingest_cpu = cpu_secs() - c0;
  ba_store_t *st;
  if (ba_store_open(dir, &st) != BA_OK) die("cannot open the store");
  res->segments = ba_store_segment_count(st);
  for (size_t k = 0; k < res->segments; k++) {
    ba_segment_t *seg;
    ba_segment_info_t info;
    if (ba_store_segment(st, k, &seg) != BA_OK || ba_segment_info(seg, &info) != BA_OK) die("bad segment");
    res->archive += info.bytes_archive;
    res->index += info.bytes_index;
    res->file += info.bytes_file;
    for (int a = 0; a < BA_ATTR_COUNT; a++) res->index_attr[a] += info.bytes_index_attr[a];
  }
  /* Warm cache, best of three per filter. */
  for (size_t q = 0; q < nf; q++) {
    ba_query_t *qq;
    if (ba_query_create(&qq) != BA_OK || ba_query_compile(qq, filters[q]) != BA_OK) die(filters[q]);
    ba_query_exec_opts_t eo;
    ba_query_exec_opts_init(&eo);
    eo.out_cols = BA_COL_FIRST | BA_COL_LAST | BA_COL_SRC | BA_COL_DST | BA_COL_PORTS | BA_COL_PROTO |
                  BA_COL_PACKETS | BA_COL_BYTES;
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
      ba_query_stats_t qs;
      uint64_t cnt = 0;
      uint64_t q0 = ba_now_ns();
      if (ba_query_run(qq, st, &eo, count_sink, &cnt, &qs) != BA_OK) die("query failed");
      double ms = (double)(ba_now_ns() - q0) / 1e6;
      if (ms < best) best = ms;
      if (rep == 0) {
        res->set_hash += mix64(cnt + q); /* per filter, so swapped answers differ */
        res->matched += qs.rows_matched;
        res->blocks += qs.blocks_read;
      }
    }
    res->query_ms += best;
    ba_query_free(qq);
  }
  ba_store_close(st);
  nftw(dir, rm_fn, 16, FTW_DEPTH | FTW_PHYS);
}

static void bench_store(const recset *s) {
  if (!s->n || !g_store_base) return;
  char filters[32][96];
  size_t nf = make_filters(s, filters, 32);
  printf("\n== store: %s: %zu records (ba_store_writer, default options; %zu filters) ==\n", s->name, s->n, nf);
  printf("%-26s %13s %13s %7s\n", "", "arrival", "oLSH", "ratio");
  char list[256];
  snprintf(list, sizeof list, "%s", g_store_codecs);
  for (char *save = NULL, *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
    ba_codec_t c;
    if (ba_codec_from_name(name, &c) != BA_OK) die("unknown codec");
    store_result r[2];
    /* Ingest timing: best of three writes per mode, arrival and oLSH
     * alternating (queries on the first). */
    double all[2][3];
    for (int rep = 0; rep < 3; rep++)
      for (int mode = 0; mode < 2; mode++) {
        if (rep == 0) {
          store_run(s, c, mode, filters, nf, &r[mode]);
        } else {
          store_result t;
          store_run(s, c, mode, filters, 0, &t);
          r[mode].ingest_secs = BA_MIN(r[mode].ingest_secs, t.ingest_secs);
          r[mode].ingest_cpu = BA_MIN(r[mode].ingest_cpu, t.ingest_cpu);
          all[mode][rep] = t.ingest_secs;
          continue;
        }
        all[mode][rep] = r[mode].ingest_secs;
      }
    printf("  [%s] ingest ratio per repetition (oLSH / arrival rate): %.2f %.2f %.2f\n", name,
           all[0][0] / all[1][0], all[0][1] / all[1][1], all[0][2] / all[1][2]);
    if (r[0].matched != r[1].matched) printf("  WARNING: %s: %llu matches without oLSH, %llu with\n", name,
                                             (unsigned long long)r[0].matched, (unsigned long long)r[1].matched);
    char label[384];
#define ROW(lbl, a, b, fmt)                                                                      \
  do {                                                                                           \
    char x_[32], y_[32];                                                                         \
    snprintf(x_, sizeof x_, fmt, (double)(a));                                                   \
    snprintf(y_, sizeof y_, fmt, (double)(b));                                                   \
    printf("%-26s %13s %13s %7.3f\n", lbl, x_, y_, (double)(b) / (double)(a));                   \
  } while (0)
    snprintf(label, sizeof label, "[%s] archive bytes", name);
    ROW(label, r[0].archive, r[1].archive, "%.0f");
    snprintf(label, sizeof label, "[%s] index bytes", name);
    ROW(label, r[0].index, r[1].index, "%.0f");
    snprintf(label, sizeof label, "[%s] file bytes", name);
    ROW(label, r[0].file, r[1].file, "%.0f");
    snprintf(label, sizeof label, "[%s] ingest records/s", name);
    ROW(label, s->n / r[0].ingest_secs, s->n / r[1].ingest_secs, "%.0f");
    snprintf(label, sizeof label, "[%s] ingest CPU us/record", name);
    ROW(label, 1e6 * r[0].ingest_cpu / (double)s->n, 1e6 * r[1].ingest_cpu / (double)s->n, "%.3f");
    snprintf(label, sizeof label, "[%s] query ms (sum)", name);
    ROW(label, r[0].query_ms, r[1].query_ms, "%.2f");
    snprintf(label, sizeof label, "[%s] blocks read", name);
    ROW(label, r[0].blocks, r[1].blocks, "%.0f");
    /* Which indexed attributes respond to the order (the first codec only). */
    if (list[0] && name == list)
      for (int a = 0; a < BA_ATTR_COUNT; a++) {
        snprintf(label, sizeof label, "[%s] index %s", name, ba_attr_name((ba_attr_t)a));
        if (r[0].index_attr[a]) ROW(label, r[0].index_attr[a], r[1].index_attr[a], "%.0f");
      }
    printf("  [%s] %llu segments, %llu matches (same records with and without oLSH: %s)\n", name,
           (unsigned long long)r[0].segments, (unsigned long long)r[0].matched,
           r[0].matched == r[1].matched && r[0].set_hash == r[1].set_hash ? "yes" : "NO");
#undef ROW
  }
}

static void usage(void) {
  fprintf(stderr,
          "usage: bench_olsh [--traces DIR] [--flows N] [--codecs LIST] [--timed-codec C]\n"
          "                  [--mmax M] [--mmin M] [--nchains P] [--nfuncs n] [--width W] [--max-block B] [--q Q]\n"
          "                  [--weights w1,...,w11] [--store TMPDIR [--store-codecs LIST] [--store-only]]\n"
          "                  [--no-replay] [--columns-only] [--chain-order h2|tuple] [--flow-csv PATH]...\n"
          "  Compares arrival order with oLSH on the shared captures (packets, and flows\n"
          "  aggregated from them) and on N generated flows (default 1000000).\n"
          "  --store TMPDIR also writes every set through the real store writer (arrival\n"
          "  order and BA_REORDER_OLSH, default store options) and runs queries on it;\n"
          "  the stores are made and removed under TMPDIR.\n"
          "  Captures are replayed back to back with idle gaps capped at 1 s unless\n"
          "  --no-replay keeps their original timestamps.\n"
          "  --flow-csv PATH (repeatable; a file, or a directory read in version order)\n"
          "  adds a set of real flows from CSV exports with a header line: Argus/CTU-13\n"
          "  .binetflow (StartTime,Dur,Proto,SrcAddr,Sport,...,TotPkts,TotBytes) or nfdump\n"
          "  -o csv (ts,te,td,sa,da,sp,dp,pr,flg,...). File order is the arrival order;\n"
          "  IPv6 and non-IP rows are skipped and counted. --traces '' --flows 0 leaves\n"
          "  only that set.\n"
          "  Per-column bytes of the store's column layouts (1.0 and 2.0) are printed\n"
          "  first for arrival order, oLSH and the offline sort; --columns-only stops there.\n"
          "  example: bench_olsh --flows 2000000 --codecs wah32,compax --store /tmp\n");
  exit(2);
}

int main(int argc, char **argv) {
  const char *traces = BA_SHARED_DATA_DEFAULT "/traces";
  size_t nflows = 1000000;
  int store_only = 0, columns_only = 0;
  ba_olsh_opts_init(&g_olsh);
  static const struct option opts[] = {
      {"traces", required_argument, 0, 't'}, {"flows", required_argument, 0, 'f'},
      {"codecs", required_argument, 0, 'c'}, {"timed-codec", required_argument, 0, 'T'},
      {"mmax", required_argument, 0, 'M'},   {"mmin", required_argument, 0, 'm'},
      {"nchains", required_argument, 0, 'P'}, {"nfuncs", required_argument, 0, 'n'},
      {"width", required_argument, 0, 'w'},  {"max-block", required_argument, 0, 'B'},
      {"q", required_argument, 0, 'Q'},      {"weights", required_argument, 0, 'W'},
      {"store", required_argument, 0, 'S'},  {"store-only", no_argument, 0, 'O'},
      {"no-replay", no_argument, 0, 'R'},  {"store-codecs", required_argument, 0, 'C'},
      {"columns-only", no_argument, 0, 'K'},  {"chain-order", required_argument, 0, 'o'},
      {"flow-csv", required_argument, 0, 'F'}, {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
      case 't': traces = optarg; break;
      case 'f': nflows = strtoull(optarg, NULL, 10); break;
      case 'c': g_codecs = optarg; break;
      case 'T': if (ba_codec_from_name(optarg, &g_timed_codec) != BA_OK) usage(); break;
      case 'M': g_olsh.mmax = (uint32_t)strtoul(optarg, NULL, 10); break;
      case 'm': g_olsh.mmin = (uint32_t)strtoul(optarg, NULL, 10); break;
      case 'P': g_olsh.nchains = (uint32_t)strtoul(optarg, NULL, 10); break;
      case 'n': g_olsh.nfuncs = (uint32_t)strtoul(optarg, NULL, 10); break;
      case 'w': g_olsh.width = strtod(optarg, NULL); break;
      case 'B': g_olsh.max_block = (uint32_t)strtoul(optarg, NULL, 10); break;
      case 'S': g_store_base = optarg; break;
      case 'O': store_only = 1; break;
      case 'K': columns_only = 1; break;
      case 'o':
        if (!strcmp(optarg, "h2")) g_olsh.chain_order = BA_OLSH_ORDER_H2;
        else if (!strcmp(optarg, "tuple")) g_olsh.chain_order = BA_OLSH_ORDER_TUPLE;
        else usage();
        break;
      case 'R': g_replay = 0; break;
      case 'F':
        g_flow_paths = realloc(g_flow_paths, (g_nflow_paths + 1) * sizeof *g_flow_paths);
        if (!g_flow_paths) die("out of memory");
        g_flow_paths[g_nflow_paths++] = optarg;
        break;
      case 'C': g_store_codecs = optarg; break;
      case 'Q': g_olsh.q = (uint32_t)strtoul(optarg, NULL, 10); break;
      case 'W': {
        char *e = optarg;
        for (int k = 0; k < 11; k++) {
          g_olsh.weight[k] = strtod(e, &e);
          if (*e == ',') e++;
          else if (k < 10) usage();
        }
        break;
      }
      default: usage();
    }
  }
  if (lzo_init() != LZO_E_OK) die("lzo_init failed");
  printf("command:");
  for (int i = 0; i < argc; i++) printf(" %s", argv[i]);
  printf("\noLSH: n=%u P=%u maxBlockSize=%u MMax=%u MMin=%u W=%g Q=%u frame budget=%llu\n", g_olsh.nfuncs,
         g_olsh.nchains, g_olsh.max_block, g_olsh.mmax, g_olsh.mmin, g_olsh.width, g_olsh.q,
         (unsigned long long)g_olsh.frame_bytes);
  printf("oLSH chain order: %s\n", g_olsh.chain_order == BA_OLSH_ORDER_TUPLE ? "tuple" : "h2 (Program 1)");
  printf("oLSH weights (src a b c d, dst a b c d, sport, dport, proto):");
  for (int k = 0; k < 11; k++) printf(" %g", g_olsh.weight[k]);
  printf("\n");
  recset pk = {.name = "captures: packets"}, fl = {.name = "captures: flows (5-tuple, 60 s gap)"},
         gen = {.name = "generated flows"}, real = {.name = "real flows (CSV)"};
  if (traces[0]) {
    load_captures(traces, &pk);
    packets_to_flows(&pk, &fl);
  }
  if (nflows) gen_flows(nflows, &gen);
  if (g_nflow_paths) load_flow_csv(g_flow_paths, g_nflow_paths, &real);
  bench_columns(&pk);
  bench_columns(&fl);
  bench_columns(&gen);
  bench_columns(&real);
  if (!columns_only && !store_only) {
    bench_set(&pk);
    bench_set(&fl);
    bench_set(&gen);
    bench_set(&real);
  }
  if (!columns_only) {
    bench_store(&pk);
    bench_store(&fl);
    bench_store(&gen);
    bench_store(&real);
  }
  recset_free(&pk);
  recset_free(&fl);
  recset_free(&gen);
  recset_free(&real);
  free(g_flow_paths);
  for (size_t i = 0; i < g_npaths; i++) free(g_paths[i]);
  free(g_paths);
  return 0;
}

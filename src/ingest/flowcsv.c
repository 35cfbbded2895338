/* Flow records from CSV exports: see flowcsv.h. */
#include "ingest/flowcsv.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/common.h"

enum { FC_START, FC_END, FC_DUR, FC_PROTO, FC_SA, FC_SP, FC_DA, FC_DP, FC_STATE, FC_FLAGS, FC_TOS, FC_PKT,
       FC_BYT, FC_N };
static const char *const fc_names[FC_N][3] = {
    {"StartTime", "ts", NULL}, {"te", NULL, NULL},     {"Dur", "td", NULL},     {"Proto", "pr", NULL},
    {"SrcAddr", "sa", NULL},   {"Sport", "sp", NULL},  {"DstAddr", "da", NULL}, {"Dport", "dp", NULL},
    {"State", NULL, NULL},     {"flg", NULL, NULL},    {"sTos", "stos", NULL},  {"TotPkts", "ipkt", "pkt"},
    {"TotBytes", "ibyt", "byt"}};

#define FC_MAX_FIELDS 64
#define FC_BATCH 256

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

/* Seconds[.frac] (no sign) to nanoseconds. */
static int fc_secs(const char *s, uint64_t *ns) {
  char *e;
  if (s[0] == '-' || s[0] == '+') return -1;
  unsigned long long secs = strtoull(s, &e, 10);
  if (e == s || (*e && *e != '.') || secs > UINT64_MAX / 1000000000ull - 1) return -1;
  uint64_t frac;
  if (*fc_frac(e, &frac)) return -1;
  *ns = secs * 1000000000ull + frac;
  return 0;
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
  return fc_secs(s, ns);
}

static int fc_uint(const char *s, uint64_t max, uint64_t *v) {
  char *e;
  if (!*s) {
    *v = 0;
    return 0;
  }
  if (s[0] == '-' || s[0] == '+') return -1;
  unsigned long long x = strtoull(s, &e, 0); /* Argus writes ICMP "ports" in hex */
  if (e == s || *e || x > max) return -1;
  *v = x;
  return 0;
}

/* 4 = IPv4, 6 = IPv6, 0 = a MAC address or other non-IP name, -1 = garbage. */
static int fc_addr(const char *s, uint8_t out[16]) {
  unsigned a, b, c, d;
  int n = 0;
  if (sscanf(s, "%3u.%3u.%3u.%3u%n", &a, &b, &c, &d, &n) == 4 && !s[n] && a < 256 && b < 256 && c < 256 &&
      d < 256) {
    ba_addr_set_v4(out, a << 24 | b << 16 | c << 8 | d);
    return 4;
  }
  if (!strchr(s, ':')) return -1;
  return inet_pton(AF_INET6, s, out) == 1 ? 6 : 0;
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

typedef struct {
  int col[FC_N];
  char *f[FC_MAX_FIELDS];
  size_t nf;
  const char *why, *field; /* a bad line: what and which text */
} fc_line_t;

static int fc_bad(fc_line_t *l, const char *why, int k) {
  l->why = why;
  l->field = k >= 0 ? l->f[l->col[k]] : NULL;
  return -1;
}

/* Times: start and duration, or end and duration. */
static int fc_times(fc_line_t *l, ba_record_t *r) {
  uint64_t dur = 0;
  if (l->col[FC_DUR] >= 0 && fc_secs(l->f[l->col[FC_DUR]], &dur) != 0) return fc_bad(l, "bad duration", FC_DUR);
  if (l->col[FC_START] >= 0) {
    if (fc_time(l->f[l->col[FC_START]], &r->first_ns) != 0) return fc_bad(l, "bad start time", FC_START);
    if (dur > UINT64_MAX - r->first_ns) return fc_bad(l, "duration too long", FC_DUR);
    r->last_ns = r->first_ns + dur;
    return 0;
  }
  if (fc_time(l->f[l->col[FC_END]], &r->last_ns) != 0) return fc_bad(l, "bad end time", FC_END);
  if (dur > r->last_ns) return fc_bad(l, "duration before the epoch", FC_DUR);
  r->first_ns = r->last_ns - dur;
  return 0;
}

/* Ports are 16 bits for TCP, UDP, SCTP and ICMP; Argus fills them with
 * other things for other protocols (the ESP SPI), which the record drops.
 * ICMP keeps type << 8 | code in dst_port as nfdump does (Argus: in Sport,
 * with the ICMP id in Dport; nfdump: in dp). */
static int fc_ports(fc_line_t *l, ba_record_t *r) {
  int proto = r->proto;
  uint64_t sp = 0, dp = 0, pmax = proto == 6 || proto == 17 || proto == 132 || proto == 1 ? 65535 : UINT32_MAX;
  if (l->col[FC_SP] >= 0 && fc_uint(l->f[l->col[FC_SP]], pmax, &sp) != 0)
    return fc_bad(l, "bad source port", FC_SP);
  if (l->col[FC_DP] >= 0 && fc_uint(l->f[l->col[FC_DP]], pmax, &dp) != 0)
    return fc_bad(l, "bad destination port", FC_DP);
  if (pmax > 65535) return 0;
  if (proto == 1) {
    uint64_t tc = l->col[FC_STATE] >= 0 ? sp : dp;
    r->icmp_type = (uint8_t)(tc >> 8);
    r->icmp_code = (uint8_t)tc;
    r->dst_port = (uint16_t)tc;
    return 0;
  }
  r->src_port = (uint16_t)sp;
  r->dst_port = (uint16_t)dp;
  return 0;
}

/* One data line: 1 = a record, 0 = a non-IP row, -1 = bad (l->why). */
static int fc_row(fc_line_t *l, ba_record_t *r) {
  for (int k = 0; k < FC_N; k++)
    if (l->col[k] >= (int)l->nf) return fc_bad(l, "too few fields", -1);
  memset(r, 0, sizeof *r);
  r->kind = BA_REC_FLOW;
  int sa = fc_addr(l->f[l->col[FC_SA]], r->src), da = fc_addr(l->f[l->col[FC_DA]], r->dst);
  if (sa < 0) return fc_bad(l, "bad source address", FC_SA);
  if (da < 0) return fc_bad(l, "bad destination address", FC_DA);
  int proto = fc_proto(l->f[l->col[FC_PROTO]]);
  if (proto < 0) return 0; /* ARP, IPX, LLC...: MAC addresses, no IP header */
  if (!sa || !da) return fc_bad(l, "not an IP address", sa ? FC_DA : FC_SA);
  if (sa != da) return fc_bad(l, "IPv4 and IPv6 addresses in one flow", FC_DA);
  r->ipver = (uint8_t)sa;
  r->proto = (uint8_t)proto;
  if (fc_times(l, r) < 0 || fc_ports(l, r) < 0) return -1;
  if (fc_uint(l->f[l->col[FC_PKT]], UINT64_MAX, &r->packets) != 0) return fc_bad(l, "bad packet count", FC_PKT);
  if (fc_uint(l->f[l->col[FC_BYT]], UINT64_MAX, &r->bytes) != 0) return fc_bad(l, "bad byte count", FC_BYT);
  uint64_t v;
  if (l->col[FC_TOS] >= 0 && fc_uint(l->f[l->col[FC_TOS]], 255, &v) == 0) r->tos = (uint8_t)v;
  if (proto == 6) {
    if (l->col[FC_FLAGS] >= 0) r->tcp_flags = fc_flags(l->f[l->col[FC_FLAGS]]);
    else if (l->col[FC_STATE] >= 0) r->tcp_flags = fc_flags(l->f[l->col[FC_STATE]]);
  }
  return 1;
}

/* The header line: which field holds what; 0 if the required ones are there. */
static int fc_header(fc_line_t *l) {
  for (int k = 0; k < FC_N; k++) {
    l->col[k] = -1;
    for (size_t i = 0; i < l->nf && l->col[k] < 0; i++)
      for (int a = 0; a < 3 && fc_names[k][a]; a++)
        if (!strcmp(l->f[i], fc_names[k][a])) l->col[k] = (int)i;
  }
  int ok = (l->col[FC_START] >= 0 || l->col[FC_END] >= 0) && l->col[FC_SA] >= 0 && l->col[FC_DA] >= 0 &&
           l->col[FC_PROTO] >= 0 && l->col[FC_PKT] >= 0 && l->col[FC_BYT] >= 0;
  return ok ? 0 : -1;
}

static void fc_note_nonip(ba_flowcsv_stats_t *st, const char *proto) {
  st->nonip++;
  for (unsigned k = 0; k < st->n_nonip_protos; k++)
    if (!strcmp(st->nonip_protos[k], proto)) return;
  if (st->n_nonip_protos < BA_ARRAY_LEN(st->nonip_protos))
    snprintf(st->nonip_protos[st->n_nonip_protos++], sizeof st->nonip_protos[0], "%s", proto);
}

static void fc_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fc_err(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || !errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

int ba_flowcsv_read(FILE *fp, const char *name, ba_record_sink_fn fn, void *ctx, ba_flowcsv_stats_t *st,
                    char *err, size_t errlen) {
  BA_RETURN_IF(!fp || !fn || !st, BA_ERR_INVALID);
  if (!name) name = "(csv)";
  fc_err(err, errlen, "%s", "");
  fc_line_t l;
  ba_record_t batch[FC_BATCH];
  size_t nb = 0, cap = 0, lineno = 0;
  char *line = NULL;
  int have_header = 0, rc = BA_OK;
  while (rc == BA_OK && getline(&line, &cap, fp) > 0) {
    lineno++;
    char *p = line;
    l.nf = 0;
    for (char *tok; l.nf < FC_MAX_FIELDS && (tok = strsep(&p, ","));) l.f[l.nf++] = fc_trim(tok);
    if (l.nf == 1 && !l.f[0][0]) continue; /* blank line */
    if (!have_header) {
      if (fc_header(&l) < 0) {
        fc_err(err, errlen, "%s:%zu: no header naming the start time (StartTime/ts/te), SrcAddr/sa, "
               "DstAddr/da, Proto/pr, TotPkts/pkt and TotBytes/byt", name, lineno);
        rc = BA_ERR_CORRUPT;
      }
      have_header = 1;
      continue;
    }
    if (!strcmp(l.f[0], "Summary")) break; /* nfdump's trailer */
    st->lines++;
    int r = fc_row(&l, &batch[nb]);
    if (r < 0) {
      if (st->bad++ == 0)
        snprintf(st->first_bad, sizeof st->first_bad, "%s:%zu: %s%s%.64s%s", name, lineno, l.why,
                 l.field ? " '" : "", l.field ? l.field : "", l.field ? "'" : "");
    } else if (r == 0) {
      fc_note_nonip(st, l.f[l.col[FC_PROTO]]);
    } else if (++nb == FC_BATCH) {
      st->flows += nb;
      rc = fn(ctx, batch, nb);
      nb = 0;
    }
  }
  if (rc == BA_OK && ferror(fp)) {
    fc_err(err, errlen, "%s:%zu: read error", name, lineno);
    rc = BA_ERR_IO;
  }
  if (rc == BA_OK && !have_header) {
    fc_err(err, errlen, "%s: empty file (no header line)", name);
    rc = BA_ERR_CORRUPT;
  }
  if (rc == BA_OK && nb) {
    st->flows += nb;
    rc = fn(ctx, batch, nb);
  }
  free(line); /* getline's buffer comes from malloc */
  return rc;
}

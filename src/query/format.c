/* nfdump's output formats: the fmt engine (-o 'fmt:%ts %sa ...') and the
 * predefined line, long, extended, biline, bilong, nsel and nel formats,
 * which nfdump also defines as fmt strings. Tokens, widths and headers are
 * nfdump 1.7.1's (output_fmt.c); differences are listed in GRAMMAR.md. The
 * fixed formats (csv, pipe, raw, ndjson) are in format_csv.c. */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "query/format_int.h"

enum {
  TK_LIT = 0, TK_TS, TK_TSR, TK_TE, TK_TER, TK_TR, TK_TRR, TK_TD, TK_TDS, TK_PR, TK_SA, TK_DA, TK_SN, TK_DN,
  TK_NH, TK_NHB, TK_RA, TK_SAP, TK_DAP, TK_SP, TK_DP, TK_IT, TK_IC, TK_SAS, TK_DAS, TK_NAS, TK_PAS, TK_IN,
  TK_OUT, TK_IPKT, TK_OPKT, TK_IBYT, TK_OBYT, TK_FL, TK_FLG, TK_TOS, TK_STOS, TK_DTOS, TK_DIR, TK_SMK,
  TK_DMK, TK_SVLN, TK_DVLN, TK_ISMC, TK_ODMC, TK_IDMC, TK_OSMC, TK_MPLS1, TK_MPLS, TK_BPS, TK_PPS, TK_BPP,
  TK_ENG, TK_NL, TK_ODID, TK_IVRF, TK_EVRF, TK_EVT, TK_XEVT, TK_MSEC, TK_XSA, TK_XDA, TK_XSP, TK_XDP,
  TK_XSAP, TK_XDAP, TK_TEVT
};

#define C_T BA_COL_FIRST | BA_COL_LAST
static const struct tok {
  const char *name;
  uint16_t tk;
  uint8_t is_addr; /* header gets 23 more columns with -6 */
  const char *head;
  uint32_t cols;
} g_tok[] = {
  {"tfs", TK_TS, 0, "Date first seen        ", BA_COL_FIRST},
  {"ts", TK_TS, 0, "Date first seen        ", BA_COL_FIRST},
  {"tsr", TK_TSR, 0, "Date first seen (raw)    ", BA_COL_FIRST},
  {"te", TK_TE, 0, "Date last seen         ", BA_COL_LAST},
  {"ter", TK_TER, 0, "Date last seen (raw)     ", BA_COL_LAST},
  {"tr", TK_TR, 0, "Date flow received     ", BA_COL_MISC},
  {"trr", TK_TRR, 0, "Date flow received (raw)  ", BA_COL_MISC},
  {"td", TK_TD, 0, "    Duration    ", C_T},
  {"tds", TK_TDS, 0, "    Duration    ", C_T},
  {"pr", TK_PR, 0, "Proto", BA_COL_PROTO},
  {"sa", TK_SA, 1, "     Src IP Addr", BA_COL_SRC},
  {"da", TK_DA, 1, "     Dst IP Addr", BA_COL_DST},
  {"sn", TK_SN, 1, "        Src Network", BA_COL_SRC | BA_COL_MASK},
  {"dn", TK_DN, 1, "        Dst Network", BA_COL_DST | BA_COL_MASK},
  {"nh", TK_NH, 1, "     Next-hop IP", BA_COL_NEXTHOP},
  {"nhb", TK_NHB, 1, " BGP next-hop IP", BA_COL_NEXTHOP},
  {"ra", TK_RA, 1, "       Router IP", BA_COL_EXPORTER},
  {"sap", TK_SAP, 1, "     Src IP Addr:Port ", BA_COL_SRC | BA_COL_PORTS},
  {"dap", TK_DAP, 1, "     Dst IP Addr:Port ", BA_COL_DST | BA_COL_PORTS | BA_COL_PROTO | BA_COL_ICMP},
  {"sp", TK_SP, 0, "Src Pt", BA_COL_PORTS},
  {"dp", TK_DP, 0, "Dst Pt", BA_COL_PORTS | BA_COL_PROTO | BA_COL_ICMP},
  {"it", TK_IT, 0, "ICMP-T", BA_COL_PORTS | BA_COL_PROTO | BA_COL_ICMP},
  {"ic", TK_IC, 0, "ICMP-C", BA_COL_PORTS | BA_COL_PROTO | BA_COL_ICMP},
  {"sas", TK_SAS, 0, "Src AS", BA_COL_AS},
  {"das", TK_DAS, 0, "Dst AS", BA_COL_AS},
  {"nas", TK_NAS, 0, "Next AS", BA_COL_BGPAS},
  {"pas", TK_PAS, 0, "Prev AS", BA_COL_BGPAS},
  {"in", TK_IN, 0, " Input", BA_COL_IF},
  {"out", TK_OUT, 0, "Output", BA_COL_IF},
  {"pkt", TK_IPKT, 0, " Packets", BA_COL_PACKETS},
  {"ipkt", TK_IPKT, 0, "  In Pkt", BA_COL_PACKETS},
  {"opkt", TK_OPKT, 0, " Out Pkt", BA_COL_OUT},
  {"byt", TK_IBYT, 0, "   Bytes", BA_COL_BYTES},
  {"ibyt", TK_IBYT, 0, " In Byte", BA_COL_BYTES},
  {"obyt", TK_OBYT, 0, "Out Byte", BA_COL_OUT},
  {"fl", TK_FL, 0, "Flows", BA_COL_MISC},
  {"flg", TK_FLG, 0, "   Flags", BA_COL_FLAGS | BA_COL_PROTO},
  {"tos", TK_TOS, 0, "Tos", BA_COL_TOS},
  {"stos", TK_STOS, 0, "STos", BA_COL_TOS},
  {"dtos", TK_DTOS, 0, "DTos", BA_COL_DSTTOS},
  {"dir", TK_DIR, 0, "Dir", BA_COL_ENGINE},
  {"smk", TK_SMK, 0, "SMask", BA_COL_MASK},
  {"dmk", TK_DMK, 0, "DMask", BA_COL_MASK},
  {"svln", TK_SVLN, 0, "SVlan", BA_COL_VLAN},
  {"dvln", TK_DVLN, 0, "DVlan", BA_COL_DSTTOS},
  {"ismc", TK_ISMC, 0, "  In src MAC Addr", BA_COL_MAC},
  {"odmc", TK_ODMC, 0, " Out dst MAC Addr", BA_COL_MAC},
  {"idmc", TK_IDMC, 0, "  In dst MAC Addr", BA_COL_MAC},
  {"osmc", TK_OSMC, 0, " Out src MAC Addr", BA_COL_MAC},
  {"mpls1", TK_MPLS1 + 0, 0, " MPLS lbl 1 ", BA_COL_MPLS},
  {"mpls2", TK_MPLS1 + 100, 0, " MPLS lbl 2 ", BA_COL_MPLS},
  {"mpls3", TK_MPLS1 + 200, 0, " MPLS lbl 3 ", BA_COL_MPLS},
  {"mpls4", TK_MPLS1 + 300, 0, " MPLS lbl 4 ", BA_COL_MPLS},
  {"mpls5", TK_MPLS1 + 400, 0, " MPLS lbl 5 ", BA_COL_MPLS},
  {"mpls6", TK_MPLS1 + 500, 0, " MPLS lbl 6 ", BA_COL_MPLS},
  {"mpls7", TK_MPLS1 + 600, 0, " MPLS lbl 7 ", BA_COL_MPLS},
  {"mpls8", TK_MPLS1 + 700, 0, " MPLS lbl 8 ", BA_COL_MPLS},
  {"mpls9", TK_MPLS1 + 800, 0, " MPLS lbl 9 ", BA_COL_MPLS},
  {"mpls10", TK_MPLS1 + 900, 0, " MPLS lbl 10", BA_COL_MPLS},
  {"mpls", TK_MPLS, 0,
   " MPLS lbl 1   MPLS lbl 2   MPLS lbl 3   MPLS lbl 4   MPLS lbl 5   MPLS lbl 6   MPLS lbl 7   MPLS lbl 8  "
   " MPLS lbl 9   MPLS lbl 10 ", BA_COL_MPLS},
  {"bps", TK_BPS, 0, "     bps", BA_COL_BYTES | C_T},
  {"pps", TK_PPS, 0, "     pps", BA_COL_PACKETS | C_T},
  {"bpp", TK_BPP, 0, "   Bpp", BA_COL_BYTES | BA_COL_PACKETS},
  {"eng", TK_ENG, 0, " engine", BA_COL_ENGINE},
  {"n", TK_NL, 0, "", 0},
  {"odid", TK_ODID, 0, "obsDomainID", BA_COL_ENGINE},
  {"vrf", TK_IVRF, 0, "  I-VRF-ID", BA_COL_FW},
  {"ivrf", TK_IVRF, 0, "  I-VRF-ID", BA_COL_FW},
  {"evrf", TK_EVRF, 0, "  E-VRF-ID", BA_COL_FW},
  {"tevt", TK_TEVT, 0, "Event time             ", BA_COL_FIRST | BA_COL_FW | BA_COL_NAT},
  {"evt", TK_EVT, 0, " Event", BA_COL_FW | BA_COL_NAT},
  {"xevt", TK_XEVT, 0, " XEvent", BA_COL_FW},
  {"msec", TK_MSEC, 0, "   Event Time", BA_COL_FIRST | BA_COL_FW | BA_COL_NAT},
  {"xsa", TK_XSA, 0, "   X-late Src IP", BA_COL_NAT},
  {"xda", TK_XDA, 0, "   X-late Dst IP", BA_COL_NAT},
  {"xsp", TK_XSP, 0, "XsPort", BA_COL_NAT},
  {"xdp", TK_XDP, 0, "XdPort", BA_COL_NAT},
  {"xsap", TK_XSAP, 1, "   X-Src IP Addr:Port ", BA_COL_NAT},
  {"xdap", TK_XDAP, 1, "   X-Dst IP Addr:Port ", BA_COL_NAT},
  {"nevt", TK_EVT, 0, " Event", BA_COL_FW | BA_COL_NAT},
  {"nsa", TK_XSA, 0, "   X-late Src IP", BA_COL_NAT},
  {"nda", TK_XDA, 0, "   X-late Dst IP", BA_COL_NAT},
  {"nsp", TK_XSP, 0, "XsPort", BA_COL_NAT},
  {"ndp", TK_XDP, 0, "XdPort", BA_COL_NAT},
  {"nsap", TK_XSAP, 1, "   X-Src IP Addr:Port ", BA_COL_NAT},
  {"ndap", TK_XDAP, 1, "   X-Dst IP Addr:Port ", BA_COL_NAT},
};

/* nfdump tokens bitarc has no data for: named in the error. */
static const char *const g_nodata[] = {"nfv", "cnt", "exp", "gsa", "gda", "gsap", "gdap", "inam", "onam",
                                       "fwd", "bfd", "end", "lbl", "sc", "dc", "sloc", "dloc", "ipl", "opl",
                                       "nbid", "ja3", "sni", "nbnam", "opid", "ivrfnam", "evrfnam", "nfc",
                                       "sgt", "iacl", "eacl", "uname", "pbstart", "pbend", "pbstep", "pbsize",
                                       "cl", "sl", "al"};

static const struct { const char *name, *fmt; } g_predef[] = {
  {"line", "%ts %td %pr %sap -> %dap %pkt %byt %fl"},
  {"long", "%ts %td %pr %sap -> %dap %flg %tos %pkt %byt %fl"},
  {"extended", "%ts %td %pr %sap -> %dap %flg %tos %pkt %byt %pps %bps %bpp %fl"},
  {"biline", "%ts %td %pr %sap <-> %dap %opkt %ipkt %obyt %ibyt %fl"},
  {"bilong", "%ts %td %pr %sap <-> %dap %flg %tos %opkt %ipkt %obyt %ibyt %fl"},
  {"nsel", "%tevt %evt %xevt %pr %sap -> %dap %xsap -> %xdap %ibyt %obyt"},
  {"nel", "%tevt %nevt %pr %sap -> %dap %nsap -> %ndap"},
};

/* The token at fmt (after '%'): nfdump's rule (the name is followed by a
 * non-letter), the longest such name (nfdump takes the first in its table,
 * so its %mpls10 prints label 1 and a literal 0). -1 if none. */
static int find_token(const char *s) {
  int best = -1;
  size_t bl = 0;
  for (size_t k = 0; k < BA_ARRAY_LEN(g_tok); k++) {
    size_t l = strlen(g_tok[k].name);
    if (l > bl && !strncmp(s, g_tok[k].name, l) && !isalpha((unsigned char)s[l])) {
      best = (int)k;
      bl = l;
    }
  }
  return best;
}

static int bad_token(const char *fmt, size_t i, char *err, size_t errcap) {
  size_t l = 1;
  while (isalnum((unsigned char)fmt[i + l])) l++;
  for (size_t k = 0; k < BA_ARRAY_LEN(g_nodata); k++)
    if (strlen(g_nodata[k]) == l - 1 && !strncmp(fmt + i + 1, g_nodata[k], l - 1)) {
      snprintf(err, errcap, "format token '%.*s' (column %zu) is nfdump's, but bitarc stores no data for it", (int)l,
               fmt + i, i + 1);
      return BA_ERR_SYNTAX;
    }
  snprintf(err, errcap, "unknown format token '%.*s' at column %zu", (int)(l > 24 ? 24 : l), fmt + i, i + 1);
  return BA_ERR_SYNTAX;
}

static void head_add(char *h, size_t *hl, size_t cap, const char *s, size_t l, size_t pad) {
  for (size_t i = 0; i < pad && *hl + 1 < cap; i++) h[(*hl)++] = ' ';
  for (size_t i = 0; i < l && *hl + 1 < cap; i++) h[(*hl)++] = s ? s[i] : ' ';
  h[*hl] = 0;
}

static int parse_fmt(ba_query_format_t *f, const char *fmt, char *err, size_t errcap) {
  size_t len = strlen(fmt), hcap = len * 4 + 512, hl = 0;
  if (len == 0) {
    snprintf(err, errcap, "empty format: give fmt:%%ts %%sa ... with at least one token or text");
    return BA_ERR_SYNTAX;
  }
  f->text = ba_malloc(len + 1);
  f->items = ba_calloc(len + 1, sizeof(fitem_t));
  f->header = ba_malloc(hcap);
  if (!f->text || !f->items || !f->header) return BA_ERR_NOMEM;
  f->header[0] = 0;
  memcpy(f->text, fmt, len + 1);
  int v6 = (f->flags & BA_FMT_V6LONG) != 0;
  size_t i = 0;
  while (i < len) {
    if (fmt[i] == '%') {
      int k = find_token(fmt + i + 1);
      if (k < 0) return bad_token(fmt, i, err, errcap);
      f->items[f->n++] = (fitem_t){g_tok[k].tk, 0, 0};
      f->cols |= g_tok[k].cols;
      const char *h = g_tok[k].head;
      head_add(f->header, &hl, hcap, h, strlen(h), v6 && g_tok[k].is_addr ? 23 : 0);
      i += 1 + strlen(g_tok[k].name);
    } else {
      size_t st = i;
      while (i < len && fmt[i] != '%') i++;
      f->items[f->n++] = (fitem_t){TK_LIT, (uint32_t)st, (uint32_t)(i - st)};
      head_add(f->header, &hl, hcap, NULL, i - st, 0);
    }
  }
  head_add(f->header, &hl, hcap, "\n", 1, 0);
  return 0;
}

static int fixed_mode(const char *spec, fmode_t *m) {
  static const struct { const char *name; fmode_t m; } fx[] = {
    {"csv", FM_CSV}, {"pipe", FM_PIPE}, {"raw", FM_RAW}, {"null", FM_NULL}, {"ndjson", FM_NDJSON}, {"json", FM_NDJSON},
  };
  for (size_t i = 0; i < BA_ARRAY_LEN(fx); i++)
    if (!strcasecmp(spec, fx[i].name)) {
      *m = fx[i].m;
      return 1;
    }
  return 0;
}

int ba_query_format_create(const char *spec, unsigned flags, ba_query_format_t **out, char *err, size_t errcap) {
  BA_RETURN_IF(!spec || !out, BA_ERR_INVALID);
  char dummy[8];
  if (!err || !errcap) {
    err = dummy;
    errcap = sizeof(dummy);
  }
  err[0] = 0;
  ba_query_format_t *f = ba_calloc(1, sizeof(*f));
  BA_RETURN_IF(!f, BA_ERR_NOMEM);
  f->flags = flags;
  f->tc = ba_calloc(1, sizeof(*f->tc));
  int rc = f->tc ? 0 : BA_ERR_NOMEM;
  for (int i = 0; f->tc && i < TCACHE_N; i++) f->tc->min[i] = -1;
  char name[32];
  size_t sl = strlen(spec);
  if (rc == 0 && !strncasecmp(spec, "fmt:", 4)) {
    rc = parse_fmt(f, spec + 4, err, errcap);
  } else if (rc == 0 && fixed_mode(spec, &f->mode)) {
    f->cols = BA_COL_ALL & ~(uint32_t)BA_COL_FRAME;
  } else if (rc == 0) {
    /* nfdump: a trailing 6 (line6, long6, ...) prints IPv6 addresses in full */
    snprintf(name, sizeof(name), "%s", spec);
    if (sl > 2 && sl < sizeof(name) && name[sl - 1] == '6') {
      name[sl - 1] = 0;
      f->flags |= BA_FMT_V6LONG;
    }
    size_t k;
    for (k = 0; k < BA_ARRAY_LEN(g_predef); k++)
      if (!strcasecmp(name, g_predef[k].name)) break;
    if (k < BA_ARRAY_LEN(g_predef)) {
      rc = parse_fmt(f, g_predef[k].fmt, err, errcap);
    } else {
      snprintf(err, errcap,
               "unknown output format '%s' (line, long, extended, biline, bilong, nsel, nel, their ...6 forms, "
               "csv, pipe, raw, null, ndjson, fmt:...)",
               spec);
      rc = BA_ERR_SYNTAX;
    }
  }
  if (rc < 0) {
    ba_query_format_free(f);
    return rc;
  }
  *out = f;
  return 0;
}

void ba_query_format_free(ba_query_format_t *f) {
  if (!f) return;
  ba_free(f->text);
  ba_free(f->items);
  ba_free(f->header);
  ba_free(f->tc);
  ba_free(f);
}

uint32_t ba_query_format_columns(const ba_query_format_t *f) { return f ? f->cols : 0; }

int ba_query_format_kind(const ba_query_format_t *f) {
  if (!f) return 0;
  return f->mode == FM_CSV ? 1 : f->mode == FM_PIPE ? 2 : f->mode == FM_NULL ? 3 : 0;
}

/* ---------- field writers ---------- */

static void put_addr(ob_t *o, const ba_query_format_t *f, const uint8_t a[16], int ipver) {
  char t[48];
  int v6l = (f->flags & BA_FMT_V6LONG) != 0;
  size_t l = fmt_addr(a, ipver, v6l, t);
  ob_putw(o, t, l, v6l ? 39 : 16, 0);
}

/* "%16s%c%-5s": address, ':' (IPv4) or '.' (IPv6, as nfdump), port text. */
static void put_addr_port(ob_t *o, const ba_query_format_t *f, const uint8_t a[16], int ipver, const char *port,
                          size_t pl) {
  put_addr(o, f, a, ipver);
  ob_putc(o, fmt_addr_is_v4(a, ipver) ? ':' : '.');
  ob_putw(o, port, pl, 5, 1);
}

static int is_icmp(const ba_record_t *r) { return r->proto == 1 || r->proto == 58; }
static unsigned icmp_type(const ba_record_t *r) {
  return (r->icmp_type || r->icmp_code) ? r->icmp_type : (unsigned)(r->dst_port >> 8);
}
static unsigned icmp_code(const ba_record_t *r) {
  return (r->icmp_type || r->icmp_code) ? r->icmp_code : (unsigned)(r->dst_port & 0xFF);
}

/* nfdump's ICMP_Port_decode: "type.code" for ICMP, else the port. */
static size_t dport_text(const ba_record_t *r, char out[16]) {
  char tmp[24];
  size_t k = 0;
  if (is_icmp(r)) {
    char *p = fmt_u64(icmp_type(r), tmp);
    while (p < tmp + 24) out[k++] = *p++;
    out[k++] = '.';
    p = fmt_u64(icmp_code(r), tmp);
    while (p < tmp + 24) out[k++] = *p++;
  } else {
    char *p = fmt_u64(r->dst_port, tmp);
    while (p < tmp + 24) out[k++] = *p++;
  }
  out[k] = 0;
  return k;
}

static void put_num(ob_t *o, const ba_query_format_t *f, uint64_t v) {
  char t[32];
  size_t l = ba_query_format_number(v, f->flags, 1, t);
  ob_putw(o, t, l, 8, 0);
}

/* nfdump's DurationString / "%16.3f" with -N, from milliseconds. */
static void put_duration(ob_t *o, uint64_t ms, int plain) {
  if (plain) {
    char t[40];
    int l = snprintf(t, sizeof(t), "%llu.%03u", (unsigned long long)(ms / 1000), (unsigned)(ms % 1000));
    ob_putw(o, t, (size_t)l, 16, 0);
    return;
  }
  uint64_t days = ms / 86400000ull, rem = ms % 86400000ull;
  if (days == 0) ob_pad(o, 4);
  else {
    ob_u64w(o, days, 2, 0);
    ob_put(o, "d ", 2);
  }
  ob_u64z(o, rem / 3600000, 2);
  ob_putc(o, ':');
  ob_u64z(o, rem / 60000 % 60, 2);
  ob_putc(o, ':');
  ob_u64z(o, rem / 1000 % 60, 2);
  ob_putc(o, '.');
  ob_u64z(o, rem % 1000, 3);
}

static void put_time_ms(ob_t *o, const ba_query_format_t *f, uint64_t ns) {
  char d[20];
  fmt_date(f, ns, d);
  ob_put(o, d, 19);
  ob_putc(o, '.');
  ob_u64z(o, ns / 1000000ull % 1000, 3);
}

static void put_raw_ms(ob_t *o, uint64_t ns) {
  uint64_t ms = fmt_ms(ns);
  ob_u64(o, ms / 1000);
  ob_putc(o, '.');
  ob_u64z(o, ms % 1000, 3);
}

/* An address with its prefix length applied (nfdump's ApplyNetMaskBits,
 * including its x86 result for length 0: the address unchanged, IPv6: the
 * upper half kept). */
static void put_net(ob_t *o, const ba_query_format_t *f, const uint8_t a[16], int ipver, unsigned bits) {
  uint8_t m[16];
  memcpy(m, a, 16);
  if (fmt_addr_is_v4(a, ipver)) {
    uint32_t mask = bits == 0 || bits >= 32 ? 0xFFFFFFFFu : (uint32_t)(0xFFFFFFFFu << (32 - bits));
    ba_addr_set_v4(m, ba_addr_get_v4(a) & mask);
  } else {
    int low = bits > 64;
    unsigned sh = (low ? 128 - bits : 64 - bits) & 63;
    uint64_t mask = ~0ull << sh, h = 0;
    uint8_t *p = m + (low ? 8 : 0);
    for (int i = 0; i < 8; i++) h = h << 8 | p[i];
    h &= mask;
    for (int i = 7; i >= 0; i--, h >>= 8) p[i] = (uint8_t)h;
    if (!low) memset(m + 8, 0, 8);
  }
  put_addr(o, f, m, ipver);
  ob_putc(o, '/');
  ob_u64w(o, bits, 2, 1);
}

static void put_mpls(ob_t *o, uint32_t e) {
  ob_u64w(o, e >> 4, 8, 0);
  ob_putc(o, '-');
  ob_u64(o, (e & 0xF) >> 1);
  ob_putc(o, '-');
  ob_u64(o, e & 1);
}

static const char *event_text(const ba_record_t *r) {
  static const char *const fw[] = {"IGNORE", "CREATE", "DELETE", "DENIED", "ALERT", "UPDATE"};
  static const char *const nat[] = {"INVALID", "ADD", "DELETE"};
  unsigned ev = r->fw_event ? r->fw_event : r->nat_event;
  if (r->fw_xevent) return ev < 6 ? fw[ev] : "UNKNOW";
  return ev < 3 ? nat[ev] : "UNKNOW";
}

static void put_xevent(ob_t *o, unsigned x) {
  static const char *const n[] = {"I-ACL", "E-ACL", "Adap", "No Syn"};
  if (x == 0) ob_putw(o, "Ignore", 6, 7, 0);
  else if (x >= 1001 && x <= 1004) ob_putw(o, n[x - 1001], strlen(n[x - 1001]), 7, 0);
  else ob_u64w(o, x, 7, 0);
}

/* nfdump's NSEL/NEL event time (%tevt, %msec): 0 for a flow without a
 * firewall or NAT event, as nfdump prints it (1970-01-01 / 0). bitarc
 * stores no separate event time, so an event record gets its flow start,
 * which is what exporters send as the event time of a flow create. */
static uint64_t event_ns(const ba_record_t *r) {
  return r->fw_event || r->nat_event || r->fw_xevent ? r->first_ns : 0;
}

/* bps and pps as nfdump computes them: counters over the duration in
 * seconds as a double, truncated. */
static uint64_t rate(uint64_t v, uint64_t dur_ms) {
  if (!dur_ms) return 0;
  double d = (double)dur_ms / 1000.0;
  return (uint64_t)((double)v / d);
}

static void put_token(ob_t *o, const ba_query_format_t *f, const fitem_t *it, const ba_record_t *r,
                      uint64_t flows) {
  char t[48];
  size_t l;
  int tk = it->tk >= TK_MPLS1 + 100 ? TK_MPLS1 : it->tk;
  switch (tk) {
    case TK_LIT: ob_put(o, f->text + it->lit_off, it->lit_len); break;
    case TK_TS: put_time_ms(o, f, r->first_ns); break;
    case TK_TE: put_time_ms(o, f, r->last_ns); break;
    case TK_TR: put_time_ms(o, f, r->received_ns); break;
    case TK_TSR: put_raw_ms(o, r->first_ns); break;
    case TK_TER: put_raw_ms(o, r->last_ns); break;
    case TK_TRR: put_raw_ms(o, r->received_ns); break;
    case TK_TD: put_duration(o, fmt_dur_ms(r), (f->flags & BA_FMT_PLAIN) != 0); break;
    case TK_TDS: put_duration(o, fmt_dur_ms(r), 1); break;
    case TK_PR:
      if (f->flags & BA_FMT_PLAIN) ob_u64w(o, r->proto, 5, 1);
      else ob_putw(o, fmt_proto_name(r->proto), strlen(fmt_proto_name(r->proto)), 5, 1);
      break;
    case TK_SA: put_addr(o, f, r->src, r->ipver); break;
    case TK_DA: put_addr(o, f, r->dst, r->ipver); break;
    case TK_SN: put_net(o, f, r->src, r->ipver, r->src_mask); break;
    case TK_DN: put_net(o, f, r->dst, r->ipver, r->dst_mask); break;
    case TK_NH: put_addr(o, f, r->next_hop, 0); break;
    case TK_NHB: put_addr(o, f, r->bgp_next_hop, 0); break;
    case TK_RA: put_addr(o, f, r->exporter, 0); break;
    case TK_SAP:
      l = (size_t)(t + 24 - fmt_u64(r->src_port, t));
      put_addr_port(o, f, r->src, r->ipver, t + 24 - l, l);
      break;
    case TK_DAP: l = dport_text(r, t); put_addr_port(o, f, r->dst, r->ipver, t, l); break;
    case TK_XSAP:
      l = (size_t)(t + 24 - fmt_u64(r->xsrc_port, t));
      put_addr_port(o, f, r->xsrc, 0, t + 24 - l, l);
      break;
    case TK_XDAP:
      l = (size_t)(t + 24 - fmt_u64(r->xdst_port, t));
      put_addr_port(o, f, r->xdst, 0, t + 24 - l, l);
      break;
    case TK_SP: ob_u64w(o, r->src_port, 6, 0); break;
    case TK_DP: l = dport_text(r, t); ob_putw(o, t, l, 6, 0); break;
    case TK_IT: ob_u64w(o, is_icmp(r) ? icmp_type(r) : 0, 6, 0); break;
    case TK_IC: ob_u64w(o, is_icmp(r) ? icmp_code(r) : 0, 6, 0); break;
    case TK_SAS: ob_u64w(o, r->src_as, 6, 0); break;
    case TK_DAS: ob_u64w(o, r->dst_as, 6, 0); break;
    case TK_NAS: ob_putc(o, ' '); ob_u64w(o, r->next_as, 6, 0); break;
    case TK_PAS: ob_putc(o, ' '); ob_u64w(o, r->prev_as, 6, 0); break;
    case TK_IN: ob_u64w(o, r->in_if, 6, 0); break;
    case TK_OUT: ob_u64w(o, r->out_if, 6, 0); break;
    case TK_IPKT: put_num(o, f, r->packets); break;
    case TK_OPKT: put_num(o, f, r->out_packets); break;
    case TK_IBYT: put_num(o, f, r->bytes); break;
    case TK_OBYT: put_num(o, f, r->out_bytes); break;
    case TK_FL: ob_u64w(o, flows, 5, 0); break;
    case TK_FLG: fmt_flags(r->proto == 6 ? r->tcp_flags : 0, t); ob_put(o, t, 8); break;
    case TK_TOS: ob_u64w(o, r->tos, 3, 0); break;
    case TK_STOS: ob_u64w(o, r->tos, 4, 0); break;
    case TK_DTOS: ob_u64w(o, r->dst_tos, 4, 0); break;
    case TK_DIR: ob_put(o, r->direction ? "  E" : "  I", 3); break;
    case TK_SMK: ob_u64w(o, r->src_mask, 5, 0); break;
    case TK_DMK: ob_u64w(o, r->dst_mask, 5, 0); break;
    case TK_SVLN: ob_u64w(o, r->vlan, 5, 0); break;
    case TK_DVLN: ob_u64w(o, r->dst_vlan, 5, 0); break;
    case TK_ISMC: fmt_mac(r->in_src_mac, o); break;
    case TK_ODMC: fmt_mac(r->out_dst_mac, o); break;
    case TK_IDMC: fmt_mac(r->in_dst_mac, o); break;
    case TK_OSMC: fmt_mac(r->out_src_mac, o); break;
    case TK_MPLS1: put_mpls(o, r->mpls[(it->tk - TK_MPLS1) / 100]); break;
    case TK_MPLS:
      for (int i = 0; i < 10; i++) {
        put_mpls(o, r->mpls[i]);
        ob_putc(o, ' ');
      }
      break;
    case TK_BPS: put_num(o, f, rate(r->bytes << 3, fmt_dur_ms(r))); break;
    case TK_PPS: put_num(o, f, rate(r->packets, fmt_dur_ms(r))); break;
    case TK_BPP: ob_u64w(o, r->packets ? (uint32_t)(r->bytes / r->packets) : 0, 6, 0); break;
    case TK_ENG:
      ob_u64w(o, r->engine_type, 3, 0);
      ob_putc(o, '/');
      ob_u64w(o, r->engine_id, 3, 1);
      break;
    case TK_NL: ob_putc(o, '\n'); break;
    case TK_ODID:
      snprintf(t, sizeof(t), "0x%09x", r->obs_domain);
      ob_puts(o, t);
      break;
    case TK_IVRF: ob_u64w(o, r->ingress_vrf, 10, 0); break;
    case TK_EVRF: ob_u64w(o, r->egress_vrf, 10, 0); break;
    case TK_EVT: ob_putw(o, event_text(r), strlen(event_text(r)), 7, 0); break;
    case TK_XEVT: put_xevent(o, r->fw_xevent); break;
    case TK_MSEC: ob_u64w(o, fmt_ms(event_ns(r)), 13, 0); break;
    case TK_TEVT: put_time_ms(o, f, event_ns(r)); break;
    case TK_XSA: put_addr(o, f, r->xsrc, 0); break;
    case TK_XDA: put_addr(o, f, r->xdst, 0); break;
    case TK_XSP: ob_u64w(o, r->xsrc_port, 6, 0); break;
    case TK_XDP: ob_u64w(o, r->xdst_port, 6, 0); break;
    default: break;
  }
}

int ba_query_format_header(const ba_query_format_t *f, char *buf, size_t cap, size_t *len) {
  BA_RETURN_IF(!f || !len, BA_ERR_INVALID);
  ob_t o = {buf, cap, 0};
  if (f->mode == FM_FMT) ob_puts(&o, f->header);
  else BA_FORWARD(fmt_fixed_header(f, &o));
  *len = o.len;
  if (cap) buf[o.len < cap ? o.len : cap - 1] = 0;
  return o.len < cap ? 0 : BA_ERR_OVERFLOW;
}

int ba_query_format_record(const ba_query_format_t *f, const ba_record_t *r, uint64_t flows, char *buf,
                           size_t cap, size_t *len) {
  BA_RETURN_IF(!f || !r || !len, BA_ERR_INVALID);
  ob_t o = {buf, cap, 0};
  if (f->mode == FM_FMT) {
    for (size_t i = 0; i < f->n; i++) put_token(&o, f, &f->items[i], r, flows);
    ob_putc(&o, '\n');
  } else {
    BA_FORWARD(fmt_fixed_record(f, r, flows, &o));
  }
  *len = o.len;
  if (cap) buf[o.len < cap ? o.len : cap - 1] = 0;
  return o.len < cap ? 0 : BA_ERR_OVERFLOW;
}

/* Output formats modelled on nfdump's -o line/long/csv/json and fmt:%tokens.
 * Differences (src/query/GRAMMAR.md): numbers are printed unscaled (nfdump -N), times
 * in UTC unless asked for local time, JSON as one object per line. */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "query/query_internal.h"

typedef enum {
  TK_LIT = 0, TK_TS, TK_TE, TK_TD, TK_PR, TK_SA, TK_DA, TK_SAP, TK_DAP, TK_SP, TK_DP, TK_FLG, TK_PKT,
  TK_BYT, TK_FL, TK_TOS, TK_IN, TK_OUT, TK_SAS, TK_DAS, TK_RA, TK_BPS, TK_PPS, TK_BPP
} tk_t;

static const struct {
  const char *name;
  tk_t tk;
  const char *head;
  int width; /* header width (negative: left aligned) */
  uint32_t cols;
} g_tokens[] = {
  /* longest names first so %sap wins over %sa */
  {"sap", TK_SAP, "Src IP Addr:Port", 22, BA_COL_SRC | BA_COL_PORTS},
  {"dap", TK_DAP, "Dst IP Addr:Port", -22, BA_COL_DST | BA_COL_PORTS | BA_COL_PROTO | BA_COL_ICMP},
  {"sas", TK_SAS, "Src AS", 6, BA_COL_AS},
  {"das", TK_DAS, "Dst AS", 6, BA_COL_AS},
  {"ts", TK_TS, "Date first seen", -23, BA_COL_FIRST},
  {"te", TK_TE, "Date last seen", -23, BA_COL_LAST},
  {"td", TK_TD, "Duration", 16, BA_COL_FIRST | BA_COL_LAST},
  {"pr", TK_PR, "Proto", -5, BA_COL_PROTO},
  {"sa", TK_SA, "Src IP Addr", 16, BA_COL_SRC},
  {"da", TK_DA, "Dst IP Addr", 16, BA_COL_DST},
  {"sp", TK_SP, "Src Pt", 6, BA_COL_PORTS},
  {"dp", TK_DP, "Dst Pt", 6, BA_COL_PORTS | BA_COL_PROTO | BA_COL_ICMP},
  {"flg", TK_FLG, "Flags", 8, BA_COL_FLAGS},
  {"pkt", TK_PKT, "Packets", 8, BA_COL_PACKETS},
  {"byt", TK_BYT, "Bytes", 8, BA_COL_BYTES},
  {"fl", TK_FL, "Flows", 5, 0},
  {"tos", TK_TOS, "Tos", 3, BA_COL_TOS},
  {"in", TK_IN, "Input", 6, BA_COL_IF},
  {"out", TK_OUT, "Output", 6, BA_COL_IF},
  {"ra", TK_RA, "Router IP", 16, BA_COL_EXPORTER},
  {"bps", TK_BPS, "bps", 8, BA_COL_BYTES | BA_COL_FIRST | BA_COL_LAST},
  {"pps", TK_PPS, "pps", 8, BA_COL_PACKETS | BA_COL_FIRST | BA_COL_LAST},
  {"bpp", TK_BPP, "Bpp", 5, BA_COL_BYTES | BA_COL_PACKETS},
};

typedef struct fitem {
  tk_t tk;
  size_t ti;          /* index in g_tokens */
  size_t lit_off, lit_len;
} fitem_t;

typedef enum { FM_FMT = 0, FM_CSV, FM_NDJSON } fmode_t;

struct ba_query_format {
  fmode_t mode;
  int local;
  char *text;         /* the fmt string (literals point into it) */
  fitem_t *items;
  size_t n;
  uint32_t cols;
  const char *header; /* fixed header (nfdump's) for line/long */
};

typedef struct ob {
  char *buf;
  size_t cap, len;
} ob_t;

static void ob_put(ob_t *o, const char *s, size_t l) {
  if (o->len < o->cap) {
    size_t room = o->cap - o->len;
    memcpy(o->buf + o->len, s, l < room ? l : room);
  }
  o->len += l;
}
static void ob_printf(ob_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ob_printf(ob_t *o, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int l = vsnprintf(tmp, sizeof(tmp), fmt, ap);
  va_end(ap);
  if (l > 0) ob_put(o, tmp, (size_t)l < sizeof(tmp) ? (size_t)l : sizeof(tmp) - 1);
}
static int ob_end(ob_t *o, size_t *len) {
  *len = o->len;
  if (o->cap) o->buf[o->len < o->cap ? o->len : o->cap - 1] = 0;
  return o->len < o->cap ? 0 : BA_ERR_OVERFLOW;
}

static int parse_fmt(ba_query_format_t *f, const char *fmt, char *err, size_t errcap) {
  size_t len = strlen(fmt);
  f->text = ba_malloc(len + 1);
  f->items = ba_calloc(len + 1, sizeof(fitem_t));
  if (!f->text || !f->items) return BA_ERR_NOMEM;
  memcpy(f->text, fmt, len + 1);
  size_t i = 0;
  while (i < len) {
    if (fmt[i] == '%') {
      size_t k;
      for (k = 0; k < BA_ARRAY_LEN(g_tokens); k++) {
        size_t tl = strlen(g_tokens[k].name);
        if (!strncmp(fmt + i + 1, g_tokens[k].name, tl)) break;
      }
      if (k == BA_ARRAY_LEN(g_tokens)) {
        snprintf(err, errcap, "unknown format token '%.8s' at column %zu", fmt + i, i);
        return BA_ERR_SYNTAX;
      }
      f->items[f->n++] = (fitem_t){g_tokens[k].tk, k, 0, 0};
      f->cols |= g_tokens[k].cols;
      i += 1 + strlen(g_tokens[k].name);
    } else {
      size_t st = i;
      while (i < len && fmt[i] != '%') i++;
      f->items[f->n++] = (fitem_t){TK_LIT, 0, st, i - st};
    }
  }
  return 0;
}

int ba_query_format_create(const char *spec, int local, ba_query_format_t **out, char *err, size_t errcap) {
  BA_RETURN_IF(!spec || !out, BA_ERR_INVALID);
  char dummy[8];
  if (!err || !errcap) {
    err = dummy;
    errcap = sizeof(dummy);
  }
  err[0] = 0;
  ba_query_format_t *f = ba_calloc(1, sizeof(*f));
  BA_RETURN_IF(!f, BA_ERR_NOMEM);
  f->local = local;
  int rc = 0;
  if (!strcmp(spec, "line")) {
    rc = parse_fmt(f, "%ts %td %pr %sap -> %dap %pkt %byt %fl", err, errcap);
    f->header = "Date first seen             Duration     Proto      Src IP Addr:Port          Dst IP Addr:Port"
                "   Packets    Bytes Flows\n";
  } else if (!strcmp(spec, "long")) {
    rc = parse_fmt(f, "%ts %td %pr %sap -> %dap %flg %tos %pkt %byt %fl", err, errcap);
    f->header = "Date first seen             Duration     Proto      Src IP Addr:Port          Dst IP Addr:Port"
                "     Flags Tos  Packets    Bytes Flows\n";
  }
  else if (!strcmp(spec, "csv")) {
    f->mode = FM_CSV;
    f->cols = BA_COL_ALL & ~(uint32_t)BA_COL_FRAME;
  } else if (!strcmp(spec, "ndjson") || !strcmp(spec, "json")) {
    f->mode = FM_NDJSON;
    f->cols = BA_COL_ALL & ~(uint32_t)BA_COL_FRAME;
  } else if (!strncmp(spec, "fmt:", 4)) rc = parse_fmt(f, spec + 4, err, errcap);
  else {
    snprintf(err, errcap, "unknown output format '%s' (line, long, csv, ndjson, fmt:...)", spec);
    rc = BA_ERR_SYNTAX;
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
  ba_free(f);
}

uint32_t ba_query_format_columns(const ba_query_format_t *f) { return f ? f->cols : 0; }

static void put_time(ob_t *o, uint64_t ns, int local, int ms, char sep) {
  time_t t = (time_t)(ns / 1000000000ull);
  struct tm tm;
  if (local) localtime_r(&t, &tm);
  else gmtime_r(&t, &tm);
  ob_printf(o, "%04d-%02d-%02d%c%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, sep, tm.tm_hour,
            tm.tm_min, tm.tm_sec);
  if (ms) ob_printf(o, ".%03u", (unsigned)(ns / 1000000ull % 1000));
}

static void addr_text(const uint8_t a[16], int ipver, char *out, size_t cap) {
  if (ipver == 4 || (ipver != 6 && ba_addr_is_v4(a))) inet_ntop(AF_INET, a + 12, out, (socklen_t)cap);
  else inet_ntop(AF_INET6, a, out, (socklen_t)cap);
}

static const char *proto_name(unsigned p, char tmp[8]) {
  switch (p) {
    case 1: return "ICMP";
    case 2: return "IGMP";
    case 6: return "TCP";
    case 17: return "UDP";
    case 47: return "GRE";
    case 50: return "ESP";
    case 51: return "AH";
    case 58: return "ICMP6";
    case 132: return "SCTP";
    default: snprintf(tmp, 8, "%u", p); return tmp;
  }
}

static void flags_text(unsigned f, char out[9]) {
  static const char letters[] = "CEUAPRSF";
  for (int i = 0; i < 8; i++) out[i] = (f >> (7 - i)) & 1 ? letters[i] : '.';
  out[8] = 0;
}

static uint64_t dur_ms(const ba_record_t *r) {
  return r->last_ns > r->first_ns ? (r->last_ns - r->first_ns) / 1000000ull : 0;
}

/* nfdump prints an ICMP destination "port" as type.code. */
static void dport_text(const ba_record_t *r, char *buf, size_t cap) {
  if (r->proto == 1 || r->proto == 58) {
    unsigned t = (r->icmp_type || r->icmp_code) ? r->icmp_type : (unsigned)(r->dst_port >> 8);
    unsigned c = (r->icmp_type || r->icmp_code) ? r->icmp_code : (unsigned)(r->dst_port & 0xFF);
    snprintf(buf, cap, "%u.%u", t, c);
  } else {
    snprintf(buf, cap, "%u", r->dst_port);
  }
}

static void put_token(ob_t *o, const ba_query_format_t *f, const fitem_t *it, const ba_record_t *r,
                      uint64_t flows) {
  char a[INET6_ADDRSTRLEN + 8], t8[16], fl[9];
  uint64_t d;
  switch (it->tk) {
    case TK_LIT: ob_put(o, f->text + it->lit_off, it->lit_len); break;
    case TK_TS: put_time(o, r->first_ns, f->local, 1, ' '); break;
    case TK_TE: put_time(o, r->last_ns, f->local, 1, ' '); break;
    case TK_TD:
      d = dur_ms(r);
      ob_printf(o, "    %02" PRIu64 ":%02u:%02u.%03u", (uint64_t)(d / 3600000u), (unsigned)(d / 60000 % 60),
                (unsigned)(d / 1000 % 60), (unsigned)(d % 1000));
      break;
    case TK_PR: ob_printf(o, "%-5s", proto_name(r->proto, t8)); break;
    case TK_SA: addr_text(r->src, r->ipver, a, sizeof(a)); ob_printf(o, "%16s", a); break;
    case TK_DA: addr_text(r->dst, r->ipver, a, sizeof(a)); ob_printf(o, "%16s", a); break;
    case TK_SAP: addr_text(r->src, r->ipver, a, sizeof(a)); ob_printf(o, "%16s:%-5u", a, r->src_port); break;
    case TK_DAP:
      addr_text(r->dst, r->ipver, a, sizeof(a));
      dport_text(r, t8, sizeof(t8));
      ob_printf(o, "%16s:%-5s", a, t8);
      break;
    case TK_SP: ob_printf(o, "%6u", r->src_port); break;
    case TK_DP: dport_text(r, t8, sizeof(t8)); ob_printf(o, "%6s", t8); break;
    case TK_FLG: flags_text(r->tcp_flags, fl); ob_printf(o, "%8s", fl); break;
    case TK_PKT: ob_printf(o, "%8" PRIu64, r->packets); break;
    case TK_BYT: ob_printf(o, "%8" PRIu64, r->bytes); break;
    case TK_FL: ob_printf(o, "%5" PRIu64, flows); break;
    case TK_TOS: ob_printf(o, "%3u", r->tos); break;
    case TK_IN: ob_printf(o, "%6u", r->in_if); break;
    case TK_OUT: ob_printf(o, "%6u", r->out_if); break;
    case TK_SAS: ob_printf(o, "%6u", r->src_as); break;
    case TK_DAS: ob_printf(o, "%6u", r->dst_as); break;
    case TK_RA: addr_text(r->exporter, 0, a, sizeof(a)); ob_printf(o, "%16s", a); break;
    case TK_BPS: d = dur_ms(r); ob_printf(o, "%8" PRIu64, (uint64_t)(d ? r->bytes * 8000u / d : 0)); break;
    case TK_PPS: d = dur_ms(r); ob_printf(o, "%8" PRIu64, (uint64_t)(d ? r->packets * 1000u / d : 0)); break;
    case TK_BPP: ob_printf(o, "%5" PRIu64, r->packets ? r->bytes / r->packets : 0); break;
  }
}

int ba_query_format_header(const ba_query_format_t *f, char *buf, size_t cap, size_t *len) {
  BA_RETURN_IF(!f || !len, BA_ERR_INVALID);
  ob_t o = {buf, cap, 0};
  if (f->mode == FM_CSV) {
    ob_printf(&o, "ts,te,td,sa,da,sp,dp,pr,flg,stos,ipkt,ibyt,fl,in,out,sas,das,ra\n");
  } else if (f->header) {
    ob_printf(&o, "%s", f->header);
  } else if (f->mode == FM_FMT) {
    for (size_t i = 0; i < f->n; i++) {
      const fitem_t *it = &f->items[i];
      if (it->tk == TK_LIT) {
        /* "->" between addresses prints as spaces in the header, as nfdump */
        for (size_t k = 0; k < it->lit_len; k++) ob_put(&o, " ", 1);
        continue;
      }
      int w = g_tokens[it->ti].width;
      ob_printf(&o, "%*s", w, g_tokens[it->ti].head);
    }
    ob_put(&o, "\n", 1);
  }
  return ob_end(&o, len);
}

int ba_query_format_record(const ba_query_format_t *f, const ba_record_t *r, uint64_t flows, char *buf,
                           size_t cap, size_t *len) {
  BA_RETURN_IF(!f || !r || !len, BA_ERR_INVALID);
  ob_t o = {buf, cap, 0};
  char a[INET6_ADDRSTRLEN + 8], b[INET6_ADDRSTRLEN + 8], x[INET6_ADDRSTRLEN + 8], t8[8], fl[9];
  uint64_t d = dur_ms(r);
  switch (f->mode) {
    case FM_FMT:
      for (size_t i = 0; i < f->n; i++) put_token(&o, f, &f->items[i], r, flows);
      ob_put(&o, "\n", 1);
      break;
    case FM_CSV:
      put_time(&o, r->first_ns, f->local, 1, ' ');
      ob_put(&o, ",", 1);
      put_time(&o, r->last_ns, f->local, 1, ' ');
      addr_text(r->src, r->ipver, a, sizeof(a));
      addr_text(r->dst, r->ipver, b, sizeof(b));
      addr_text(r->exporter, 0, x, sizeof(x));
      flags_text(r->tcp_flags, fl);
      ob_printf(&o, ",%" PRIu64 ".%03u,%s,%s,%u,%u,%s,%s,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%u,%u,%u,%u,%s\n",
                d / 1000, (unsigned)(d % 1000), a, b, r->src_port, r->dst_port, proto_name(r->proto, t8), fl,
                r->tos, r->packets, r->bytes, flows, r->in_if, r->out_if, r->src_as, r->dst_as, x);
      break;
    case FM_NDJSON:
      addr_text(r->src, r->ipver, a, sizeof(a));
      addr_text(r->dst, r->ipver, b, sizeof(b));
      flags_text(r->tcp_flags, fl);
      ob_printf(&o, "{\"type\":\"%s\",\"first\":\"", r->kind == BA_REC_PACKET ? "PACKET" : "FLOW");
      put_time(&o, r->first_ns, 0, 1, 'T');
      ob_printf(&o, "\",\"last\":\"");
      put_time(&o, r->last_ns, 0, 1, 'T');
      ob_printf(&o, "\",\"first_ns\":%" PRIu64 ",\"last_ns\":%" PRIu64 ",\"ipver\":%u,", r->first_ns, r->last_ns,
                r->ipver);
      ob_printf(&o, "\"src_addr\":\"%s\",\"dst_addr\":\"%s\",\"src_port\":%u,\"dst_port\":%u,", a, b, r->src_port,
                r->dst_port);
      ob_printf(&o, "\"proto\":%u,\"tcp_flags\":\"%s\",\"tos\":%u,\"packets\":%" PRIu64 ",\"bytes\":%" PRIu64
                ",\"flows\":%" PRIu64 ",",
                r->proto, fl, r->tos, r->packets, r->bytes, flows);
      addr_text(r->exporter, 0, x, sizeof(x));
      ob_printf(&o, "\"src_as\":%u,\"dst_as\":%u,\"in_if\":%u,\"out_if\":%u,\"vlan\":%u,\"exporter\":\"%s\"",
                r->src_as, r->dst_as, r->in_if, r->out_if, r->vlan, x);
      if (r->kind == BA_REC_PACKET)
        ob_printf(&o, ",\"caplen\":%u,\"wirelen\":%u,\"linktype\":%u", r->caplen, r->wirelen, r->linktype);
      ob_put(&o, "}\n", 2);
      break;
  }
  return ob_end(&o, len);
}

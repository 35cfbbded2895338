/* bitarc query's output: formatted records, -O ordering, -A groups, -s
 * tables and the summary, as nfdump 1.7.1 prints them (nfdump.c, nfstat.c);
 * and the pcap writer of -w. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bitarc/bitarc.h"
#include "cli/cli.h"
#include "cli/query_out.h"

static void put_le32(FILE *f, uint32_t v) {
  uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  fwrite(b, 1, 4, f);
}
static void put_le16(FILE *f, uint16_t v) {
  uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
  fwrite(b, 1, 2, f);
}

/* pcap header, nanosecond timestamps (magic a1b23c4d) */
static void pcap_header(FILE *f, uint32_t link) {
  put_le32(f, 0xa1b23c4du);
  put_le16(f, 2);
  put_le16(f, 4);
  put_le32(f, 0);
  put_le32(f, 0);
  put_le32(f, 262144);
  put_le32(f, link);
}

static void pcap_write(qout_t *o, const ba_record_t *r) {
  if (r->kind != BA_REC_PACKET || !r->frame) {
    o->pcap_skipped++;
    return;
  }
  if (o->pcap_link < 0) {
    o->pcap_link = r->linktype;
    pcap_header(o->pcap, r->linktype);
  }
  if (r->linktype != (uint16_t)o->pcap_link) {
    o->pcap_skipped++;
    return;
  }
  put_le32(o->pcap, (uint32_t)(r->first_ns / 1000000000ull));
  put_le32(o->pcap, (uint32_t)(r->first_ns % 1000000000ull));
  put_le32(o->pcap, r->caplen);
  put_le32(o->pcap, r->wirelen ? r->wirelen : r->caplen);
  if (fwrite(r->frame, 1, r->caplen, o->pcap) != r->caplen) o->io_error = 1;
}

void qo_pcap_finish(qout_t *o) {
  /* no frame matched: still a valid, empty pcap (Ethernet) */
  if (o->pcap && o->pcap_link < 0) pcap_header(o->pcap, 1);
}

/* Writes the first *used bytes of the line buffer. */
static int qo_flush_lines(qout_t *o, size_t *used) {
  size_t n = *used;
  *used = 0;
  if (n && fwrite(o->line, 1, n, o->out) != n) {
    o->io_error = 1;
    o->io_errno = errno;
    return BA_ERR_IO;
  }
  return 0;
}

/* The rows' flush: handed to the helper thread (o->wr) while rows stream,
 * else written here. */
static int qo_emit(qout_t *o, size_t *used, int stream) {
  if (!stream || !o->wr) return qo_flush_lines(o, used);
  size_t n = *used;
  *used = 0;
  int rc = qo_writer_put(o->wr, &o->line, &o->line_cap, n);
  if (rc == BA_ERR_IO) {
    o->io_error = 1;
    o->io_errno = errno;
  }
  return rc;
}

int qo_sync(qout_t *o) {
  if (!o->wr) return 0;
  size_t used = o->line_used;
  o->line_used = 0;
  /* a failed write is not an error of the call that notices it here: it
   * shows as "write error" at the end, as a failed flush of stdout does */
  int rc = used ? qo_writer_put(o->wr, &o->line, &o->line_cap, used) : 0;
  if (rc != BA_ERR_NOMEM && qo_writer_sync(o->wr) == BA_ERR_IO) {
    o->io_error = 1;
    o->io_errno = errno;
  }
  return rc == BA_ERR_NOMEM ? rc : 0;
}

/* Appends one formatted record at line[*used] (grows the buffer, or writes
 * what it holds first); written once QO_LINES_CHUNK bytes are held. */
#define QO_LINES_CHUNK (256u << 10)
static int qo_put(qout_t *o, const ba_record_t *r, uint64_t flows, size_t *used, int stream) {
  size_t len;
  int rc = ba_query_format_record(o->fmt, r, flows, o->line + *used, o->line_cap - *used, &len);
  if (rc == BA_ERR_OVERFLOW) {
    BA_FORWARD_CLI(qo_emit(o, used, stream));
    if (len + 1 > o->line_cap) {
      char *nl = realloc(o->line, len + 1);
      if (!nl) return BA_ERR_NOMEM;
      o->line = nl;
      o->line_cap = len + 1;
    }
    rc = ba_query_format_record(o->fmt, r, flows, o->line, o->line_cap, &len);
  }
  if (rc < 0) return rc;
  *used += len;
  return *used >= QO_LINES_CHUNK ? qo_emit(o, used, stream) : 0;
}

/* Prints records recs[0..n) (their aggr_flows, or 1) with few writes. With
 * the helper thread, the last partial chunk stays in o->line (o->line_used)
 * for the next call or qo_sync. */
static int qo_print_recs(qout_t *o, const ba_record_t *recs, size_t n) {
  if (o->line_cap < QO_LINES_CHUNK + 4096) { /* a chunk and room for a fast line behind it */
    char *nl = realloc(o->line, QO_LINES_CHUNK + 4096);
    if (!nl) return BA_ERR_NOMEM;
    o->line = nl;
    o->line_cap = QO_LINES_CHUNK + 4096;
  }
  size_t used = o->line_used;
  o->line_used = 0;
  for (size_t i = 0; i < n; i++) {
    int rc = qo_put(o, &recs[i], recs[i].aggr_flows ? recs[i].aggr_flows : 1, &used, 1);
    if (rc < 0) return rc;
  }
  if (o->wr) {
    o->line_used = used;
    return 0;
  }
  return qo_flush_lines(o, &used);
}

int qo_print(qout_t *o, const ba_record_t *r, uint64_t flows) {
  size_t used = 0;
  BA_FORWARD_CLI(qo_put(o, r, flows, &used, 0));
  return qo_flush_lines(o, &used);
}

int qo_sink(void *vctx, const ba_record_t *recs, size_t n) {
  qout_t *o = vctx;
  for (int s = 0; s < o->nstats; s++) BA_FORWARD_CLI(ba_query_agg_add(o->stats[s].agg, recs, n));
  if (o->agg) return ba_query_agg_add(o->agg, recs, n);
  if (o->nstats) return 0;
  if (o->sort) {
    if (o->nheld + n > o->held_cap) {
      size_t cap = o->held_cap ? o->held_cap : 4096;
      while (cap < o->nheld + n) cap *= 2;
      ba_record_t *h = realloc(o->held, cap * sizeof(*h));
      if (!h) return BA_ERR_NOMEM;
      o->held = h;
      o->held_cap = cap;
    }
    memcpy(o->held + o->nheld, recs, n * sizeof(*recs));
    for (size_t i = 0; i < n; i++) o->held[o->nheld + i].frame = NULL;
    o->nheld += n;
    return 0;
  }
  if (o->pcap) {
    for (size_t i = 0; i < n; i++) pcap_write(o, &recs[i]);
    return 0;
  }
  if (o->count_only || !o->fmt) return 0;
  BA_FORWARD_CLI(qo_print_recs(o, recs, n));
  return 0;
}

/* Aggregator k: stats[k] for k < nstats, else the -A one. */
static ba_query_agg_t *qo_agg(const qout_t *o, int k) { return k < o->nstats ? o->stats[k].agg : o->agg; }

int qo_fields_init(qout_t *o) {
  o->nfields = 0;
  int nagg = o->nstats + (o->agg ? 1 : 0);
  if (!nagg || o->sort || o->pcap) return 0;
  for (int k = 0; k < nagg; k++) {
    size_t n = 0;
    const uint16_t *f = ba_query_agg_fields(qo_agg(o, k), &n);
    if (!f || n > BA_FIELDS_MAX) return o->nfields = 0;
    for (size_t i = 0; i < n; i++) {
      size_t j = 0;
      while (j < o->nfields && o->fields[j] != f[i]) j++;
      if (j == o->nfields) {
        if (o->nfields == sizeof(o->fields) / sizeof(o->fields[0])) return o->nfields = 0;
        o->fields[o->nfields++] = f[i];
      }
      o->fmap[k][i] = (uint8_t)j;
    }
  }
  return 1;
}

int qo_field_sink(void *vctx, const uint64_t *const *vals, size_t n) {
  qout_t *o = vctx;
  int nagg = o->nstats + (o->agg ? 1 : 0);
  for (int k = 0; k < nagg; k++) {
    size_t nf = 0;
    ba_query_agg_fields(qo_agg(o, k), &nf);
    const uint64_t *v[BA_FIELDS_MAX];
    for (size_t i = 0; i < nf; i++) v[i] = vals[o->fmap[k][i]];
    BA_FORWARD_CLI(ba_query_agg_add_fields(qo_agg(o, k), v, n));
  }
  return 0;
}

static double pct(uint64_t a, uint64_t b) { return b ? (double)(a * 100) / (double)b : 0.0; }

/* nfdump's rates over a duration in seconds as a double, truncated. */
static uint64_t rate(uint64_t v, uint64_t first_ns, uint64_t last_ns) {
  uint64_t a = first_ns / 1000000ull, b = last_ns / 1000000ull;
  if (b <= a) return 0;
  return (uint64_t)((double)v / ((double)(b - a) / 1000.0));
}

static void date_text(uint64_t ns, unsigned flags, char out[24]) {
  time_t t = (time_t)(ns / 1000000000ull);
  struct tm tm;
  if (flags & BA_FMT_LOCAL) localtime_r(&t, &tm);
  else gmtime_r(&t, &tm);
  strftime(out, 24, "%Y-%m-%d %H:%M:%S", &tm);
}

/* nfdump's -s counters for an order (qstat dir): the in-direction for
 * flows and ipkg/ibyte/..., both for packets, bytes, pps, bps, bpp, the
 * out-direction for opkg/obyte/... */
static void dir_counters(const qstat_t *st, const ba_query_agg_row_t *gin, ba_query_agg_row_t *gv) {
  *gv = *gin;
  if (st->dir == 1) {
    gv->packets += gin->key.out_packets;
    gv->bytes += gin->key.out_bytes;
  } else if (st->dir == 2) {
    gv->packets = gin->key.out_packets;
    gv->bytes = gin->key.out_bytes;
  }
}

static void stat_line(qout_t *o, const qstat_t *st, const ba_query_agg_row_t *gin, const ba_query_stats_t *qs,
                      int csv) {
  char val[64], d1[24], d2[24], fl[32], pk[32], by[32], pps[32], bps[32];
  ba_query_agg_row_t gv;
  dir_counters(st, gin, &gv);
  const ba_query_agg_row_t *g = &gv;
  uint64_t tot_pk = qs->packets + qs->out_packets, tot_by = qs->bytes + qs->out_bytes;
  uint32_t f = st->spec.fields;
  int is_proto = f == BA_AGG_PROTO || st->spec.proto_split;
  ba_query_agg_value(f, &g->key, o->fmt_flags, csv || o->full_v6, val, sizeof(val));
  uint64_t ms = g->key.last_ns / 1000000ull > g->key.first_ns / 1000000ull
                  ? g->key.last_ns / 1000000ull - g->key.first_ns / 1000000ull : 0;
  uint64_t vpps = rate(g->packets, g->key.first_ns, g->key.last_ns);
  uint64_t vbps = rate(g->bytes * 8, g->key.first_ns, g->key.last_ns);
  unsigned bpp = g->packets ? (unsigned)(g->bytes / g->packets) : 0;
  const char *proto = "any";
  char pn[16];
  if (is_proto) {
    /* nfdump's -s proto: the name (or with -N the number) in the Proto column */
    if (o->fmt_flags & BA_FMT_PLAIN) snprintf(pn, sizeof(pn), "%-5u", g->key.proto); /* csv too: "17   " */
    else snprintf(pn, sizeof(pn), "%.5s", ba_query_proto_name(g->key.proto));
    proto = pn;
  }
  date_text(g->key.first_ns, o->fmt_flags, d1);
  if (csv) {
    date_text(g->key.last_ns, o->fmt_flags, d2);
    fprintf(o->out, "%s,%s,%" PRIu64 ".%03u,%s,%s,%" PRIu64 ",%.1f,%" PRIu64 ",%.1f,%" PRIu64 ",%.1f,%" PRIu64
            ",%" PRIu64 ",%u\n",
            d1, d2, ms / 1000, (unsigned)(ms % 1000), proto, val, g->flows, pct(g->flows, qs->rows_matched),
            g->packets, pct(g->packets, tot_pk), g->bytes, pct(g->bytes, tot_by), vpps, vbps, bpp);
    return;
  }
  ba_query_format_number(g->flows, o->fmt_flags, 1, fl);
  ba_query_format_number(g->packets, o->fmt_flags, 1, pk);
  ba_query_format_number(g->bytes, o->fmt_flags, 1, by);
  ba_query_format_number(vpps, o->fmt_flags, 1, pps);
  ba_query_format_number(vbps, o->fmt_flags, 1, bps);
  char dur[40];
  if (o->fmt_flags & BA_FMT_PLAIN) snprintf(dur, sizeof(dur), "%16.3f", (double)ms / 1000.0);
  else if (ms < 86400000ull)
    snprintf(dur, sizeof(dur), "    %02u:%02u:%02u.%03u", (unsigned)(ms / 3600000), (unsigned)(ms / 60000 % 60),
             (unsigned)(ms / 1000 % 60), (unsigned)(ms % 1000));
  else
    snprintf(dur, sizeof(dur), "%2ud %02u:%02u:%02u.%03u", (unsigned)(ms / 86400000), (unsigned)(ms / 3600000 % 24),
             (unsigned)(ms / 60000 % 60), (unsigned)(ms / 1000 % 60), (unsigned)(ms % 1000));
  int w = o->full_v6 && (f & (BA_AGG_SRCIP | BA_AGG_DSTIP | BA_AGG_IP | BA_AGG_NEXTHOP | BA_AGG_BGPNEXTHOP |
                             BA_AGG_ROUTER)) ? 39 : 17;
  fprintf(o->out, "%s.%03u %9s %-5s %*s %8s(%4.1f) %8s(%4.1f) %8s(%4.1f) %8s %8s %5u\n", d1,
          (unsigned)(g->key.first_ns / 1000000ull % 1000), dur, proto, w, val, fl, pct(g->flows, qs->rows_matched), pk,
          pct(g->packets, tot_pk), by, pct(g->bytes, tot_by), pps, bps, bpp);
}

/* nfdump's -s line with -o pipe (nfstat.c PrintPipeStatLine): af|first ms|
 * last ms|proto|value|flows|packets|bytes|pps|bps|bpp; rates as 32-bit
 * numbers; proto 0 unless the statistic is split by protocol. */
static void pipe_stat_line(qout_t *o, const qstat_t *st, const ba_query_agg_row_t *gin) {
  char val[96];
  ba_query_agg_row_t gv;
  dir_counters(st, gin, &gv);
  const ba_query_agg_row_t *g = &gv;
  int af;
  ba_query_agg_pipe_value(st->spec.fields, &g->key, &af, val, sizeof(val));
  uint64_t a = g->key.first_ns / 1000000ull, b = g->key.last_ns / 1000000ull;
  double d = (double)(b - a) / 1000.0;
  uint32_t pps = 0, bps = 0;
  if (b > a) {
    pps = (uint32_t)(uint64_t)((double)g->packets / d);
    bps = (uint32_t)(uint64_t)((double)(8 * g->bytes) / d);
  }
  uint32_t bpp = g->packets ? (uint32_t)(g->bytes / g->packets) : 0;
  unsigned proto = st->spec.fields == BA_AGG_PROTO || st->spec.proto_split ? g->key.proto : 0;
  fprintf(o->out, "%d|%" PRIu64 "|%" PRIu64 "|%u|%s|%" PRIu64 "|%" PRIu64 "|%" PRIu64 "|%u|%u|%u\n", af, a, b, proto,
          val, g->flows, g->packets, g->bytes, pps, bps, bpp);
}

static int print_stat(qout_t *o, const qstat_t *st, const ba_query_stats_t *qs) {
  const ba_query_agg_row_t *rows;
  size_t ng;
  BA_FORWARD_CLI(ba_query_agg_top(st->agg, st->order, o->topn < SIZE_MAX ? (size_t)o->topn : 0, &rows, &ng));
  size_t show = ng;
  int kind = ba_query_format_kind(o->fmt);
  const char *ord = st->ordname ? st->ordname : ba_query_agg_order_name(st->order);
  if (st->spec.fields & BA_AGG_RECORD) {
    /* -s record: the top flows as flow lines */
    if (!o->quiet && kind == 0) printf("Top %" PRIu64 " flows ordered by %s:\n", o->topn, ord);
    if (!o->quiet || kind == 1) {
      char hdr[2048];
      size_t hl;
      if (ba_query_format_header(o->fmt, hdr, sizeof(hdr), &hl) == 0 && hl) fwrite(hdr, 1, hl, o->out);
    }
    for (size_t i = 0; i < show; i++) {
      ba_record_t r = rows[i].key;
      r.packets = rows[i].packets;
      r.bytes = rows[i].bytes;
      BA_FORWARD_CLI(qo_print(o, &r, rows[i].flows));
    }
    if (!o->quiet && kind == 0) fputc('\n', o->out);
    return 0;
  }
  const char *title = ba_query_agg_title(st->spec.fields);
  if (kind == 2) { /* pipe: no header, a blank line after each table (as nfdump) */
    for (size_t i = 0; i < show; i++) pipe_stat_line(o, st, &rows[i]);
    fputc('\n', o->out);
    return 0;
  }
  if (kind == 1) {
    if (st->dir == 1) fprintf(o->out, "ts,te,td,pr,val,fl,flP,pkt,pktP,byt,bytP,pps,bps,bpp\n");
    else if (st->dir == 2) fprintf(o->out, "ts,te,td,pr,val,fl,flP,opkt,opktP,obyt,obytP,opps,obps,obpp\n");
    else fprintf(o->out, "ts,te,td,pr,val,fl,flP,ipkt,ipktP,ibyt,ibytP,ipps,ibps,ibpp\n");
  } else if (!o->quiet) {
    fprintf(o->out, "Top %" PRIu64 " %s ordered by %s:\n", o->topn, title, ord);
    int w = o->full_v6 ? 39 : 17;
    fprintf(o->out,
            "Date first seen                 Duration Proto %*s    Flows(%%)     Packets(%%)       Bytes(%%)         pps"
            "      bps   bpp\n",
            w, title);
  }
  for (size_t i = 0; i < show; i++) stat_line(o, st, &rows[i], qs, kind == 1);
  fputc('\n', o->out); /* after each table, csv too (nfdump) */
  return 0;
}

int qo_finish(qout_t *o, const ba_query_stats_t *qs) {
  char hdr[2048];
  size_t hl;
  if (o->sort && !o->agg && !o->nstats) {
    ba_query_sort_records(o->held, o->nheld, o->sort_order);
    if (!o->pcap) BA_FORWARD_CLI(qo_print_recs(o, o->held, o->nheld));
  }
  BA_FORWARD_CLI(qo_sync(o)); /* the tables below are written here (0 unless out of memory) */
  if (o->agg) {
    const ba_query_agg_row_t *rows;
    size_t ng;
    BA_FORWARD_CLI(ba_query_agg_result(o->agg, o->sort ? o->sort_order : BA_ORDER_FLOWS, &rows, &ng));
    if ((!o->quiet || ba_query_format_kind(o->fmt) == 1) && ba_query_format_header(o->fmt, hdr, sizeof(hdr), &hl) == 0 &&
        hl)
      fwrite(hdr, 1, hl, o->out);
    if (!o->sort) {
      /* unsorted -A lists groups in the order they were first seen, by start time as nfdump */
      BA_FORWARD_CLI(ba_query_agg_result(o->agg, BA_ORDER_TSTART, &rows, &ng));
    }
    for (size_t i = 0; i < ng; i++) {
      ba_record_t r = rows[i].key;
      r.packets = rows[i].packets;
      r.bytes = rows[i].bytes;
      BA_FORWARD_CLI(qo_print(o, &r, rows[i].flows));
    }
  }
  for (int s = 0; s < o->nstats; s++) BA_FORWARD_CLI(print_stat(o, &o->stats[s], qs));
  return 0;
}

void qo_summary(const qout_t *o, const ba_query_stats_t *qsin, double secs) {
  /* nfdump's totals count both directions (UpdateStat: in + out) */
  ba_query_stats_t qv = *qsin;
  const ba_query_stats_t *qs = &qv;
  qv.packets += qs->out_packets;
  qv.bytes += qs->out_bytes;
  uint64_t a = qs->first_ns / 1000000ull, b = qs->last_ns / 1000000ull;
  double d = qs->rows_matched && b > a ? (double)(b - a) / 1000.0 : 0;
  uint64_t bps = d > 0 ? (uint64_t)((double)(qs->bytes << 3) / d) : 0;
  uint64_t pps = d > 0 ? (uint64_t)((double)qs->packets / d) : 0;
  uint64_t bpp = d > 0 && qs->packets ? qs->bytes / qs->packets : 0;
  if (ba_query_format_kind(o->fmt) == 1) {
    fprintf(o->out, "Summary\nflows,bytes,packets,avg_bps,avg_pps,avg_bpp\n%" PRIu64 ",%" PRIu64 ",%" PRIu64
            ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
            qs->rows_matched, qs->bytes, qs->packets, bps, pps, bpp);
    return;
  }
  /* pipe: no summary; null (kind 3): the summary only, as nfdump */
  if (ba_query_format_kind(o->fmt) != 0 && ba_query_format_kind(o->fmt) != 3) return;
  char by[32], pk[32], bs[32], ps[32], bp[32];
  ba_query_format_number(qs->bytes, o->fmt_flags, 0, by);
  ba_query_format_number(qs->packets, o->fmt_flags, 0, pk);
  ba_query_format_number(bps, o->fmt_flags, 0, bs);
  ba_query_format_number(pps, o->fmt_flags, 0, ps);
  ba_query_format_number(bpp, o->fmt_flags, 0, bp);
  fprintf(o->out,
          "Summary: total flows: %" PRIu64 ", total bytes: %s, total packets: %s, avg bps: %s, avg pps: %s, avg bpp: "
          "%s\n",
          qs->rows_matched, by, pk, bs, ps, bp);
  if (qs->rows_matched) {
    char t1[24], t2[24];
    date_text(qs->first_ns, o->fmt_flags, t1);
    date_text(qs->last_ns, o->fmt_flags, t2);
    fprintf(o->out, "Time window: %s - %s\n", t1, t2);
  } else {
    fprintf(o->out, "Time window: <unknown>\n");
  }
  fprintf(o->out,
          "Total records in %" PRIu64 " of %" PRIu64 " segments: %" PRIu64 ", candidates: %" PRIu64 ", passed: %" PRIu64
          ", blocks read: %" PRIu64 ", wall: %.4fs\n",
          qs->segments_used, qs->segments_total, qs->rows_total, qs->rows_candidate, qs->rows_matched, qs->blocks_read,
          secs);
}

/* Test tool: decodes captures with the ingest library (no store) and prints
 * one CSV line per record on stdout, and per-file counts on stderr:
 *   ingest_dump [--as auto|packets|flows] FILE...
 * Columns: kind,first_ns,last_ns,src,dst,sport,dport,proto,flags,tos,packets,
 *          bytes,in_if,out_if,src_as,dst_as,vlan,exporter,ipver,caplen,wirelen,
 *          linktype,icmp_type,icmp_code */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "bitarc/ingest.h"

static int print_recs(void *ctx, const ba_record_t *r, size_t n) {
  (void)ctx;
  for (size_t i = 0; i < n; i++) {
    char s[64], d[64], e[64];
    ba_addr_format(r[i].src, s, sizeof(s));
    ba_addr_format(r[i].dst, d, sizeof(d));
    ba_addr_format(r[i].exporter, e, sizeof(e));
    if (!r[i].ipver) s[0] = d[0] = 0;
    printf("%s,%" PRIu64 ",%" PRIu64 ",%s,%s,%u,%u,%u,%u,%u,%" PRIu64 ",%" PRIu64 ",%u,%u,%u,%u,%u,%s,%u,%u,%u,%u,%u,%u\n",
           r[i].kind == BA_REC_FLOW ? "flow" : "packet", r[i].first_ns, r[i].last_ns, s, d, r[i].src_port,
           r[i].dst_port, r[i].proto, r[i].tcp_flags, r[i].tos, r[i].packets, r[i].bytes, r[i].in_if,
           r[i].out_if, r[i].src_as, r[i].dst_as, r[i].vlan, r[i].kind == BA_REC_FLOW ? e : "", r[i].ipver,
           r[i].caplen, r[i].wirelen, r[i].linktype, r[i].icmp_type, r[i].icmp_code);
  }
  return 0;
}

int main(int argc, char **argv) {
  ba_ingest_as_t as = BA_INGEST_AUTO;
  int i = 1, bad = 0;
  if (i + 1 < argc && !strcmp(argv[i], "--as")) {
    as = !strcmp(argv[i + 1], "packets") ? BA_INGEST_PACKETS
         : !strcmp(argv[i + 1], "flows") ? BA_INGEST_FLOWS : BA_INGEST_AUTO;
    i += 2;
  }
  ba_flow_decoder_t *dec;
  if (ba_flow_decoder_create(NULL, &dec)) return 2;
  for (; i < argc; i++) {
    ba_capture_opts_t o;
    memset(&o, 0, sizeof(o));
    o.as = as;
    o.flows = dec;
    ba_capture_result_t res;
    int rc = ba_capture_ingest(argv[i], NULL, &o, print_recs, NULL, &res);
    fprintf(stderr, "%s\t%s\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%d\t%s\n", argv[i],
            res.as == BA_INGEST_FLOWS ? "flows" : "packets", res.counts.packets, res.counts.records,
            ba_ingest_counts_dropped(&res.counts), rc, res.errmsg);
    if (rc) bad = 1;
  }
  ba_flow_decoder_finish(dec);
  ba_ingest_counts_t c;
  ba_flow_decoder_counts(dec, &c);
  fprintf(stderr, "TOTAL flows: datagrams %" PRIu64 " records %" PRIu64 " templates %" PRIu64
          " options-templates %" PRIu64 " options-records %" PRIu64 " late %" PRIu64,
          c.datagrams, c.records, c.templates, c.options_templates, c.options_records, c.late_decoded);
  for (int k = 0; k < BA_DROP_COUNT; k++)
    if (c.dropped[k]) fprintf(stderr, " %s=%" PRIu64, ba_ingest_drop_name((ba_ingest_drop_t)k), c.dropped[k]);
  fprintf(stderr, " errmsg=%s\n", ba_flow_decoder_errmsg(dec));
  ba_flow_decoder_free(dec);
  return bad;
}

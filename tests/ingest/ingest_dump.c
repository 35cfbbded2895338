/* Test tool: decodes captures with the ingest library (no store) and prints
 * one CSV line per record on stdout, and per-file counts on stderr:
 *   ingest_dump [--as auto|packets|flows] [--raw] [--rebase] [--report] FILE...
 * --raw: counters as sent (no sampling scale); --rebase: BA_FLOW_REBASE_TIME;
 * --report: per exporter, template, sampler and interface name lines on
 * stderr. Columns: kind,first_ns,last_ns,src,dst,sport,dport,proto,flags,tos,
 * packets,bytes,in_if,out_if,src_as,dst_as,vlan,exporter,ipver,caplen,wirelen,
 * linktype,icmp_type,icmp_code, then the extended flow fields:
 * out_packets,out_bytes,received_ns,next_hop,bgp_next_hop,src_mask,dst_mask,
 * dst_tos,dst_vlan,obs_domain,engine_type,engine_id,sampling,sampling_algo,
 * xsrc,xdst,xsrc_port,xdst_port,nat_event,fw_event,fw_xevent,ingress_vrf,
 * egress_vrf,mpls(/-separated),in_src_mac,out_dst_mac,in_dst_mac,out_src_mac,
 * prev_as,next_as,direction,aggr_flows */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "bitarc/ingest.h"

static int zero16(const uint8_t a[16]) {
  for (int i = 0; i < 16; i++)
    if (a[i]) return 0;
  return 1;
}

static void addr(const uint8_t a[16], char *buf, size_t n) {
  if (zero16(a)) buf[0] = 0;
  else ba_addr_format(a, buf, n);
}

static void print_ext(const ba_record_t *r) {
  char nh[64], bnh[64], xs[64], xd[64], mpls[128] = "";
  addr(r->next_hop, nh, sizeof(nh));
  addr(r->bgp_next_hop, bnh, sizeof(bnh));
  addr(r->xsrc, xs, sizeof(xs));
  addr(r->xdst, xd, sizeof(xd));
  size_t m = 0;
  for (int i = 0; i < 10 && r->mpls[i]; i++)
    m += (size_t)snprintf(mpls + m, sizeof(mpls) - m, "%s%" PRIu32, i ? "/" : "", r->mpls[i]);
  printf(",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%s,%s,%u,%u,%u,%u,%" PRIu32 ",%u,%u,%" PRIu32 ",%u,%s,%s,%u,%u,%u,%u,%u,%"
         PRIu32 ",%" PRIu32 ",%s,%012" PRIx64 ",%012" PRIx64 ",%012" PRIx64 ",%012" PRIx64 ",%" PRIu32 ",%" PRIu32
         ",%u,%" PRIu32,
         r->out_packets, r->out_bytes, r->received_ns, nh, bnh, r->src_mask, r->dst_mask, r->dst_tos, r->dst_vlan,
         r->obs_domain, r->engine_type, r->engine_id, r->sampling, r->sampling_algo, xs, xd, r->xsrc_port,
         r->xdst_port, r->nat_event, r->fw_event, r->fw_xevent, r->ingress_vrf, r->egress_vrf, mpls, r->in_src_mac,
         r->out_dst_mac, r->in_dst_mac, r->out_src_mac, r->prev_as, r->next_as, r->direction, r->aggr_flows);
}

static int print_recs(void *ctx, const ba_record_t *r, size_t n) {
  (void)ctx;
  for (size_t i = 0; i < n; i++) {
    char s[64], d[64], e[64];
    ba_addr_format(r[i].src, s, sizeof(s));
    ba_addr_format(r[i].dst, d, sizeof(d));
    ba_addr_format(r[i].exporter, e, sizeof(e));
    if (!r[i].ipver) s[0] = d[0] = 0;
    printf("%s,%" PRIu64 ",%" PRIu64 ",%s,%s,%u,%u,%u,%u,%u,%" PRIu64 ",%" PRIu64 ",%u,%u,%u,%u,%u,%s,%u,%u,%u,%u,%u,%u",
           r[i].kind == BA_REC_FLOW ? "flow" : "packet", r[i].first_ns, r[i].last_ns, s, d, r[i].src_port,
           r[i].dst_port, r[i].proto, r[i].tcp_flags, r[i].tos, r[i].packets, r[i].bytes, r[i].in_if,
           r[i].out_if, r[i].src_as, r[i].dst_as, r[i].vlan, r[i].kind == BA_REC_FLOW ? e : "", r[i].ipver,
           r[i].caplen, r[i].wirelen, r[i].linktype, r[i].icmp_type, r[i].icmp_code);
    if (r[i].kind == BA_REC_FLOW) print_ext(&r[i]);
    putchar('\n');
  }
  return 0;
}

static void print_counts(const char *what, const ba_ingest_counts_t *c) {
  fprintf(stderr, "%s datagrams %" PRIu64 " (v5 %" PRIu64 " v9 %" PRIu64 " ipfix %" PRIu64 " sflow %" PRIu64
          ") messages %" PRIu64 " records %" PRIu64 " templates %" PRIu64 " options-templates %" PRIu64
          " options-records %" PRIu64 " late %" PRIu64 " withdrawals %" PRIu64 " sflow-flow-samples %" PRIu64
          " sflow-counter-samples %" PRIu64 " clock-far %" PRIu64,
          what, c->datagrams, c->datagrams_v5, c->datagrams_v9, c->datagrams_ipfix, c->datagrams_sflow, c->messages,
          c->records, c->templates, c->options_templates, c->options_records, c->late_decoded,
          c->template_withdrawals, c->sflow_flow_samples, c->sflow_counter_samples, c->clock_far);
  for (int k = 0; k < BA_DROP_COUNT; k++)
    if (c->dropped[k]) fprintf(stderr, " %s=%" PRIu64, ba_ingest_drop_name((ba_ingest_drop_t)k), c->dropped[k]);
}

static void report(const ba_flow_decoder_t *dec) {
  ba_flow_source_t src[64];
  size_t ns = ba_flow_decoder_sources(dec, src, 64);
  for (size_t i = 0; i < ns && i < 64; i++) {
    char a[64];
    ba_addr_format(src[i].addr, a, sizeof(a));
    print_counts(a, &src[i].counts);
    fprintf(stderr, " clock-suspicious %u last-error=%s\n", src[i].clock_suspicious, src[i].last_error);
  }
  static ba_flow_template_info_t t[1024];
  size_t nt = ba_flow_decoder_templates(dec, t, 1024);
  for (size_t i = 0; i < nt && i < 1024; i++) {
    char a[64];
    ba_addr_format(t[i].exporter, a, sizeof(a));
    fprintf(stderr, "template %s v%u domain %" PRIu32 " id %u%s%s fields %u sets %" PRIu64 " records %" PRIu64
            " stored %" PRIu64, a, t[i].version, t[i].domain, t[i].id, t[i].options ? " options" : "",
            t[i].withdrawn ? " withdrawn" : "", t[i].fields, t[i].sets, t[i].records, t[i].stored);
    for (int k = 0; k < BA_DROP_COUNT; k++)
      if (t[i].dropped[k]) fprintf(stderr, " %s=%" PRIu64, ba_ingest_drop_name((ba_ingest_drop_t)k), t[i].dropped[k]);
    fprintf(stderr, " last-drop=%s\n", t[i].last_drop);
  }
  ba_flow_sampler_t sm[256];
  size_t nm = ba_flow_decoder_samplers(dec, sm, 256);
  for (size_t i = 0; i < nm && i < 256; i++)
    fprintf(stderr, "sampler domain %" PRIu32 " id %" PRIu64 "%s algorithm %u packet %" PRIu32 " space %" PRIu32 "\n",
            sm[i].domain, sm[i].id, sm[i].generic ? " generic" : "", sm[i].algorithm, sm[i].packet_interval,
            sm[i].space_interval);
  ba_flow_ifname_t fn[256];
  size_t nf = ba_flow_decoder_ifnames(dec, fn, 256);
  for (size_t i = 0; i < nf && i < 256; i++)
    fprintf(stderr, "ifname domain %" PRIu32 " index %" PRIu32 " name=%s description=%s\n", fn[i].domain,
            fn[i].ifindex, fn[i].name, fn[i].description);
}

int main(int argc, char **argv) {
  ba_ingest_as_t as = BA_INGEST_AUTO;
  ba_flow_decoder_opts_t o;
  ba_flow_decoder_opts_init(&o);
  int i = 1, bad = 0, rep = 0;
  for (; i < argc; i++) {
    if (i + 1 < argc && !strcmp(argv[i], "--as")) {
      as = !strcmp(argv[i + 1], "packets") ? BA_INGEST_PACKETS
           : !strcmp(argv[i + 1], "flows") ? BA_INGEST_FLOWS : BA_INGEST_AUTO;
      i++;
    } else if (!strcmp(argv[i], "--raw")) {
      o.flags |= BA_FLOW_RAW_COUNTERS;
    } else if (!strcmp(argv[i], "--rebase")) {
      o.flags |= BA_FLOW_REBASE_TIME;
    } else if (!strcmp(argv[i], "--report")) {
      rep = 1;
    } else {
      break;
    }
  }
  ba_flow_decoder_t *dec;
  if (ba_flow_decoder_create(&o, &dec)) return 2;
  for (; i < argc; i++) {
    ba_capture_opts_t co;
    memset(&co, 0, sizeof(co));
    co.as = as;
    co.flows = dec;
    ba_capture_result_t res;
    int rc = ba_capture_ingest(argv[i], NULL, &co, print_recs, NULL, &res);
    fprintf(stderr, "%s\t%s\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%d\t%s\n", argv[i],
            res.as == BA_INGEST_FLOWS ? "flows" : "packets", res.counts.packets, res.counts.records,
            ba_ingest_counts_dropped(&res.counts), rc, res.errmsg);
    if (rc) bad = 1;
  }
  ba_flow_decoder_finish(dec);
  ba_ingest_counts_t c;
  ba_flow_decoder_counts(dec, &c);
  print_counts("TOTAL flows:", &c);
  fprintf(stderr, " errmsg=%s\n", ba_flow_decoder_errmsg(dec));
  if (rep) report(dec);
  ba_flow_decoder_free(dec);
  return bad;
}

/* bitarc graph -s: the top N values of a statistic over the window (as
 * `bitarc query -s STAT/ORDER -n N` ranks them), each turned into a filter
 * "(FILTER) and <value term>", plus "other" (the filter's flows of no top
 * value): the stacked series of nfsen's top-N graphs. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitarc/bitarc.h"
#include "bitarc/query.h"
#include "cli/cli.h"
#include "cli/graph.h"

/* The statistics whose values partition the flows (one value per flow). */
static const struct {
  const char *name;
  uint32_t field;
} g_stats[] = {{"srcip", BA_AGG_SRCIP},     {"dstip", BA_AGG_DSTIP}, {"srcport", BA_AGG_SRCPORT},
               {"dstport", BA_AGG_DSTPORT}, {"proto", BA_AGG_PROTO}};

static int agg_sink(void *ctx, const ba_record_t *recs, size_t n) { return ba_query_agg_add(ctx, recs, n); }

static void addr_text(const uint8_t a[16], char *buf, size_t cap) {
  if (ba_addr_is_v4(a)) {
    struct in_addr v4;
    v4.s_addr = htonl(ba_addr_get_v4(a));
    inet_ntop(AF_INET, &v4, buf, (socklen_t)cap);
  } else {
    inet_ntop(AF_INET6, a, buf, (socklen_t)cap);
  }
}

/* The filter term selecting exactly the group's flows, and its label. */
static void group_term(const ba_query_agg_spec_t *sp, const ba_record_t *k, char *term, size_t tcap, char *label,
                       size_t lcap) {
  char a[64];
  switch (sp->fields) {
    case BA_AGG_SRCIP:
    case BA_AGG_DSTIP: {
      const char *side = sp->fields == BA_AGG_SRCIP ? "src" : "dst";
      const uint8_t *ad = sp->fields == BA_AGG_SRCIP ? k->src : k->dst;
      addr_text(ad, a, sizeof(a));
      /* split_bits: the destination keeps its own prefix lengths */
      int dst_own = sp->split_bits && sp->fields == BA_AGG_DSTIP;
      unsigned bits = ba_addr_is_v4(ad) ? (dst_own ? sp->dst_v4bits : sp->v4bits)
                                        : (dst_own ? sp->dst_v6bits : sp->v6bits);
      if (bits) {
        snprintf(term, tcap, "%s net %s/%u", side, a, bits);
        snprintf(label, lcap, "%s/%u", a, bits);
      } else {
        snprintf(term, tcap, "%s ip %s", side, a);
        snprintf(label, lcap, "%s", a);
      }
      break;
    }
    case BA_AGG_SRCPORT:
      snprintf(term, tcap, "src port %u", k->src_port);
      snprintf(label, lcap, "port %u", k->src_port);
      break;
    case BA_AGG_DSTPORT:
      snprintf(term, tcap, "dst port %u", k->dst_port);
      snprintf(label, lcap, "port %u", k->dst_port);
      break;
    default:
      snprintf(term, tcap, "proto %u", k->proto);
      snprintf(label, lcap, "%s", ba_query_proto_name(k->proto));
      break;
  }
}

/* STAT[/ORDER]: the spec and the order; 2 after an error printed. */
static int parse_stat(const char *text, ba_query_agg_spec_t *sp, ba_agg_order_t *order) {
  char buf[64], err[128];
  snprintf(buf, sizeof(buf), "%s", text);
  char *slash = strchr(buf, '/');
  /* "srcip4/24/bytes": the order follows the prefix length */
  if (slash && slash[1] >= '0' && slash[1] <= '9') slash = strchr(slash + 1, '/');
  *order = BA_ORDER_FLOWS;
  if (slash) {
    *slash = 0;
    if (ba_query_agg_order(slash + 1, order) < 0 || *order > BA_ORDER_BYTES) {
      ba_cli_err("graph", "-s '%s': order '%s': flows, packets or bytes", text, slash + 1);
      return 2;
    }
  }
  if (ba_query_agg_parse(buf, 1, sp, err, sizeof(err)) < 0) {
    ba_cli_err("graph", "-s '%s': %s", text, err);
    return 2;
  }
  int ok = 0;
  for (size_t i = 0; i < sizeof(g_stats) / sizeof(g_stats[0]); i++) ok |= sp->fields == g_stats[i].field;
  if (!ok || sp->proto_split) {
    ba_cli_err("graph", "-s '%s': a stacked graph needs a statistic with one value per flow: srcip, dstip "
                        "(also srcip4/24, dstip6/48), srcport, dstport or proto", text);
    return 2;
  }
  return 0;
}

/* Appends a series: "(filter) and term" (term NULL: filter alone). */
static int push(gtop_t *t, const char *filter, const char *term, const char *label) {
  size_t len = strlen(filter) + (term ? strlen(term) : 0) + 16;
  char *f = malloc(len), *l = strdup(label);
  if (!f || !l) {
    free(f);
    free(l);
    return 2;
  }
  if (term) snprintf(f, len, "(%s) and %s", filter, term);
  else snprintf(f, len, "%s", filter);
  t->filters[t->n] = f;
  t->labels[t->n++] = l;
  return 0;
}

int graph_top_filters(const qstores_t *stores, const char *stat, size_t topn, const char *filter, uint64_t now_ns,
                      uint64_t start_ns, uint64_t end_ns, gtop_t *out) {
  memset(out, 0, sizeof(*out));
  ba_query_agg_spec_t sp;
  ba_agg_order_t order;
  if (parse_stat(stat, &sp, &order) != 0) return 2;
  ba_query_t *q = NULL;
  ba_query_agg_t *agg = NULL;
  int ret = 2;
  if (ba_query_create(&q) < 0 || ba_query_agg_create(&sp, &agg) < 0) goto done;
  ba_query_set_now(q, now_ns);
  if (ba_query_compile(q, filter) < 0) {
    ba_cli_err("graph", "bad filter '%s': %s", filter, ba_query_errmsg(q));
    goto done;
  }
  ba_query_exec_opts_t eo;
  ba_query_exec_opts_init(&eo);
  eo.start_ns = start_ns;
  eo.end_ns = end_ns;
  eo.out_cols = ba_query_agg_columns(agg);
  for (size_t s = 0; s < stores->n; s++) {
    int rc = ba_query_run(q, stores->st[s], &eo, agg_sink, agg, NULL);
    if (rc < 0) {
      ba_cli_err("graph", "store '%s', -s %s: %s", qs_name(stores, s), stat, ba_strerror(rc));
      goto done;
    }
  }
  const ba_query_agg_row_t *rows;
  size_t n;
  if (ba_query_agg_top(agg, order, topn, &rows, &n) < 0) goto done;
  if (n > GRAPH_MAX_FILTERS - 1) n = GRAPH_MAX_FILTERS - 1;
  out->filters = calloc(n + 1, sizeof(char *));
  out->labels = calloc(n + 1, sizeof(char *));
  size_t ocap = 64 + strlen(filter);
  char *other = malloc(ocap);
  if (!out->filters || !out->labels || !other) {
    free(other);
    goto done;
  }
  int bad = 0;
  size_t olen = (size_t)snprintf(other, ocap, "(%s) and not (", filter);
  for (size_t i = 0; i < n && !bad; i++) {
    char term[128], label[96];
    group_term(&sp, &rows[i].key, term, sizeof(term), label, sizeof(label));
    bad = push(out, filter, term, label) != 0;
    size_t need = olen + strlen(term) + 8;
    if (!bad && need > ocap) {
      char *g = realloc(other, ocap = 2 * need);
      if (!g) bad = 1;
      else other = g;
    }
    if (!bad) olen += (size_t)snprintf(other + olen, ocap - olen, "%s%s", i ? " or " : "", term);
  }
  if (!bad && n) {
    snprintf(other + olen, ocap - olen, ")");
    bad = push(out, other, NULL, "other") != 0;
  } else if (!bad) { /* no flow in the window: the filter's (empty) series */
    bad = push(out, filter, NULL, filter) != 0;
  }
  free(other);
  if (bad) {
    ba_cli_err("graph", "-s %s: out of memory", stat);
    goto done;
  }
  ret = 0;
done:
  if (ret) graph_top_free(out);
  ba_query_agg_free(agg);
  ba_query_free(q);
  return ret;
}

void graph_top_free(gtop_t *t) {
  for (size_t i = 0; i < t->n; i++) {
    free(t->filters[i]);
    free(t->labels[i]);
  }
  free(t->filters);
  free(t->labels);
  memset(t, 0, sizeof(*t));
}

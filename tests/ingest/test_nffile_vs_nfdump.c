/* Every flow ba_nffile_ingest decodes from an nfdump file, field by field,
 * against what Debian's nfdump prints for it (`nfdump -r REF -q -o raw`,
 * exporters and samplers from `nfdump -E REF`). The files are made by
 * import_vs_nfdump.sh (nfcapd fed by softflowd and nf_richgen.py, nffile_gen
 * for layout 1 and ZSTD) and listed in $BA_NFFILE_PAIRS, one "FILE REF" per
 * line: REF is the file nfdump reads (the same file, or the one FILE was
 * recompressed from when nfdump cannot read FILE's codec). Fields the store
 * does not keep yet (segment format 3.0) are checked here, on the decoded
 * records; import_vs_nfdump.sh checks the stored ones through a store. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "bitarc/ingest.h"

typedef struct vec {
  ba_record_t *r;
  size_t n, cap;
} vec_t;

static int collect(void *ctx, const ba_record_t *recs, size_t n) {
  vec_t *v = ctx;
  if (v->n + n > v->cap) {
    v->cap = (v->n + n) * 2;
    v->r = realloc(v->r, v->cap * sizeof(*v->r));
    if (!v->r) return -1;
  }
  memcpy(v->r + v->n, recs, n * sizeof(*recs));
  v->n += n;
  return 0;
}

/* one "key = value" line of nfdump's raw output */
typedef struct kv {
  char key[32];
  char val[96];
} kv_t;
typedef struct nrec {
  kv_t kv[96];
  int n;
} nrec_t;

static const char *get(const nrec_t *r, const char *key) {
  for (int i = 0; i < r->n; i++)
    if (!strcmp(r->kv[i].key, key)) return r->kv[i].val;
  return NULL;
}

typedef struct nexp {
  char ip[64];
  unsigned long id, sampling, algo;
  int present;
} nexp_t;

static int g_fail;
static const char *g_file;
static size_t g_idx;
static void mismatch(const char *field, const char *fmt, ...) {
  if (++g_fail > 100000) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "MISMATCH %s flow %zu %s: ", g_file, g_idx + 1, field);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static void check_num(const nrec_t *n, const char *key, uint64_t got) {
  const char *v = get(n, key);
  if (!v) return;
  uint64_t want = strtoull(v, NULL, 0);
  if (want != got) mismatch(key, "nfdump %s, bitarc %llu", v, (unsigned long long)got);
}

static void check_addr(const nrec_t *n, const char *key, const uint8_t a[16]) {
  const char *v = get(n, key);
  if (!v) return;
  uint8_t want[16] = {0};
  if (strchr(v, ':')) {
    if (inet_pton(AF_INET6, v, want) != 1) { mismatch(key, "cannot parse '%s'", v); return; }
  } else {
    struct in_addr in;
    if (inet_pton(AF_INET, v, &in) != 1) { mismatch(key, "cannot parse '%s'", v); return; }
    ba_addr_set_v4(want, ntohl(in.s_addr));
  }
  int zero_v4 = !strcmp(v, "0.0.0.0");
  int a_zero = 1;
  for (int i = 0; i < 16; i++) a_zero &= a[i] == 0;
  if (zero_v4 ? !(a_zero || (ba_addr_is_v4(a) && ba_addr_get_v4(a) == 0)) : memcmp(want, a, 16) != 0) {
    char got[64];
    ba_addr_format(a, got, sizeof got);
    mismatch(key, "nfdump %s, bitarc %s", v, got);
  }
}

static void check_mac(const nrec_t *n, const char *key, uint64_t got) {
  const char *v = get(n, key);
  if (!v) return;
  unsigned b[6];
  if (sscanf(v, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6) { mismatch(key, "'%s'", v); return; }
  uint64_t want = 0;
  for (int i = 0; i < 6; i++) want = want << 8 | b[i];
  if (want != got) mismatch(key, "nfdump %s, bitarc %012llx", v, (unsigned long long)got);
}

static void compare(const nrec_t *n, const ba_record_t *r, const nexp_t *exps) {
  check_num(n, "engine type", r->engine_type);
  check_num(n, "engine ID", r->engine_id);
  check_num(n, "first", r->first_ns / 1000000u);
  check_num(n, "last", r->last_ns / 1000000u);
  check_num(n, "received at", r->received_ns / 1000000u);
  check_num(n, "proto", r->proto);
  check_num(n, "tcp flags", r->tcp_flags);
  check_num(n, "src port", r->src_port);
  check_num(n, "dst port", r->dst_port);
  const char *icmp = get(n, "ICMP");
  if (icmp) {
    unsigned t = 0, c = 0;
    sscanf(icmp, "%u.%u", &t, &c);
    if (r->dst_port != (t << 8 | c) || r->icmp_type != t || r->icmp_code != c)
      mismatch("ICMP", "nfdump %s, bitarc dst_port %u type %u code %u", icmp, r->dst_port, r->icmp_type, r->icmp_code);
  }
  check_num(n, "src tos", r->tos);
  check_num(n, "in packets", r->packets);
  check_num(n, "in bytes", r->bytes);
  check_addr(n, "src addr", r->src);
  check_addr(n, "dst addr", r->dst);
  check_num(n, "input", r->in_if);
  check_num(n, "output", r->out_if);
  check_num(n, "src mask", r->src_mask);
  check_num(n, "dst mask", r->dst_mask);
  /* (raw output prints the source ToS as "dst tos": dst tos comes from fmt:%dtos) */
  check_num(n, "dtos", r->dst_tos);
  check_num(n, "direction", r->direction);
  check_num(n, "out packets", r->out_packets);
  check_num(n, "out bytes", r->out_bytes);
  check_num(n, "aggr flows", r->aggr_flows ? r->aggr_flows : 1);
  check_num(n, "src vlan", r->vlan);
  check_num(n, "dst vlan", r->dst_vlan);
  check_num(n, "src as", r->src_as);
  check_num(n, "dst as", r->dst_as);
  check_addr(n, "bgp next hop", r->bgp_next_hop);
  check_addr(n, "ip next hop", r->next_hop);
  for (int i = 0; i < 10; i++) {
    char key[16];
    snprintf(key, sizeof key, "MPLS Lbl %2d", i + 1);
    const char *v = get(n, key);
    unsigned lbl, exp, bos;
    if (v && sscanf(v, "%u-%u-%u", &lbl, &exp, &bos) == 3 && r->mpls[i] != (lbl << 4 | exp << 1 | bos))
      mismatch(key, "nfdump %s, bitarc %u-%u-%u", v, r->mpls[i] >> 4, (r->mpls[i] >> 1) & 7, r->mpls[i] & 1);
  }
  check_mac(n, "in src mac", r->in_src_mac);
  check_mac(n, "out dst mac", r->out_dst_mac);
  check_mac(n, "in dst mac", r->in_dst_mac);
  check_mac(n, "out src mac", r->out_src_mac);
  check_num(n, "bgp next as", r->next_as);
  check_num(n, "bgp prev as", r->prev_as);
  check_num(n, "fw event", r->fw_event);
  check_num(n, "fw ext event", r->fw_xevent);
  check_addr(n, "src xlt ip", r->xsrc);
  check_addr(n, "dst xlt ip", r->xdst);
  check_num(n, "src xlt port", r->xsrc_port);
  check_num(n, "dst xlt port", r->xdst_port);
  check_num(n, "nat event", r->nat_event);
  check_num(n, "ingress VRF", r->ingress_vrf);
  check_num(n, "egress VRF", r->egress_vrf);
  /* the exporter: the record's router address, else the exporter record */
  const char *sys = get(n, "export sysid");
  const nexp_t *e = sys && strtoul(sys, NULL, 10) < 65536 ? &exps[strtoul(sys, NULL, 10)] : NULL;
  if (get(n, "ip exporter")) check_addr(n, "ip exporter", r->exporter);
  else if (e && e->present) {
    nrec_t one = {.n = 1};
    snprintf(one.kv[0].key, sizeof one.kv[0].key, "exporter");
    snprintf(one.kv[0].val, sizeof one.kv[0].val, "%s", e->ip);
    check_addr(&one, "exporter", r->exporter);
  }
  if (get(n, "obs domainID")) check_num(n, "obs domainID", r->obs_domain);
  else if (e && e->present && r->obs_domain != e->id)
    mismatch("observation domain", "nfdump -E ID %lu, bitarc %u", e->id, r->obs_domain);
  const char *els = get(n, "Elements");
  int has_sampler_el = els && strstr(els, " 18 ") != NULL;  /* nfdump 1.7.1 does not print element 18 */
  if (e && !has_sampler_el && r->sampling != e->sampling)
    mismatch("sampling", "nfdump -E 1 in %lu, bitarc %u", e->sampling, r->sampling);
}

/* Parses `nfdump -r ref -q -o raw` into records. */
static nrec_t *read_raw(const char *ref, size_t *count) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "nfdump -r '%s' -q -o raw 2>/dev/null", ref);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t n = 0, cap = 1024;
  nrec_t *v = calloc(cap, sizeof(*v));
  char line[512];
  while (fgets(line, sizeof line, p)) {
    if (!strncmp(line, "Flow Record", 11)) {
      if (n == cap) { cap *= 2; v = realloc(v, cap * sizeof(*v)); }
      memset(&v[n++], 0, sizeof(*v));
      continue;
    }
    char *eq = strstr(line, " = ");
    if (!n || strncmp(line, "  ", 2) || !eq) continue;
    nrec_t *r = &v[n - 1];
    if (r->n == 96) continue;
    *eq = 0;
    char *k = line + 2, *val = eq + 3;
    for (char *e = k + strlen(k); e > k && e[-1] == ' ';) *--e = 0;
    while (*val == ' ') val++;
    if (!strcmp(k, "Elements")) {  /* "8: 1 3 5 6 ..." kept whole, padded with blanks */
      char tmp[96];
      val[strcspn(val, "\n")] = 0;
      snprintf(tmp, sizeof tmp, " %s ", strchr(val, ':') ? strchr(val, ':') + 1 : val);
      snprintf(r->kv[r->n].key, sizeof r->kv[r->n].key, "%s", k);
      snprintf(r->kv[r->n].val, sizeof r->kv[r->n].val, "%s", tmp);
      r->n++;
      continue;
    }
    val[strcspn(val, " \n[")] = 0;
    snprintf(r->kv[r->n].key, sizeof r->kv[r->n].key, "%s", k);
    snprintf(r->kv[r->n].val, sizeof r->kv[r->n].val, "%s", val);
    r->n++;
  }
  assert_int_equal(pclose(p), 0);
  /* dst tos of each flow, in the same order */
  snprintf(cmd, sizeof cmd, "nfdump -r '%s' -q -N -o 'fmt:%%dtos' 2>/dev/null", ref);
  p = popen(cmd, "r");
  assert_non_null(p);
  size_t i = 0;
  while (fgets(line, sizeof line, p) && i < n) {
    nrec_t *r = &v[i++];
    if (r->n == 96) continue;
    snprintf(r->kv[r->n].key, sizeof r->kv[r->n].key, "dtos");
    snprintf(r->kv[r->n].val, sizeof r->kv[r->n].val, "%lu", strtoul(line, NULL, 10));
    r->n++;
  }
  assert_int_equal(pclose(p), 0);
  assert_int_equal(i, n);
  *count = n;
  return v;
}

/* Exporters and their samplers from `nfdump -E ref`. */
static void read_exporters(const char *ref, nexp_t *exps) {
  char cmd[4096], line[512];
  snprintf(cmd, sizeof cmd, "nfdump -E '%s' 2>/dev/null", ref);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  nexp_t *cur = NULL;
  while (fgets(line, sizeof line, p)) {
    unsigned sysid;
    char ip[64];
    unsigned long id, algo, pi, ps;
    const char *s = strstr(line, "SysID:");
    if (s && sscanf(s, "SysID: %u, IP: %63[^,], version: %*u, ID: %lu", &sysid, ip, &id) == 3 && sysid < 65536) {
      cur = &exps[sysid];
      cur->present = 1;
      cur->id = id;
      snprintf(cur->ip, sizeof cur->ip, "%s", ip + strspn(ip, " "));
    } else if (cur && (s = strstr(line, "algorithm:")) &&
               sscanf(s, "algorithm: %lu, packet interval: %lu, packet space: %lu", &algo, &pi, &ps) == 3) {
      if (!cur->sampling && pi) cur->sampling = (pi + ps) / pi, cur->algo = algo;
    }
  }
  pclose(p);
}

static void test_pairs(void **state) {
  (void)state;
  const char *list = getenv("BA_NFFILE_PAIRS");
  if (!list) {
    fprintf(stderr, "BA_NFFILE_PAIRS not set: run through import_vs_nfdump.sh\n");
    skip();
  }
  FILE *f = fopen(list, "r");
  assert_non_null(f);
  char file[2048], ref[2048];
  int pairs = 0;
  nexp_t *exps = calloc(65536, sizeof(*exps));
  while (fscanf(f, "%2047s %2047s", file, ref) == 2) {
    vec_t v = {0};
    ba_nffile_result_t res;
    int rc = ba_nffile_ingest(file, NULL, collect, &v, &res);
    if (rc) fprintf(stderr, "%s: %s\n", file, res.errmsg);
    assert_int_equal(rc, 0);
    assert_int_equal(ba_nffile_dropped(&res), 0);
    size_t nn;
    nrec_t *want = read_raw(ref, &nn);
    memset(exps, 0, 65536 * sizeof(*exps));
    read_exporters(ref, exps);
    g_file = file;
    if (nn != v.n) fprintf(stderr, "%s: nfdump prints %zu flows, bitarc decodes %zu\n", file, nn, v.n);
    assert_int_equal(nn, v.n);
    assert_true(nn > 0);
    int before = g_fail;
    for (size_t i = 0; i < nn; i++) {
      g_idx = i;
      compare(&want[i], &v.r[i], exps);
    }
    fprintf(stderr, "%s: %zu flows (layout %u, %s) %s nfdump's\n", file, nn, res.layout,
            ba_nffile_compression_name(res.compression), g_fail == before ? "equal to" : "DIFFER from");
    free(want);
    free(v.r);
    pairs++;
  }
  fclose(f);
  free(exps);
  assert_true(pairs > 0);
  assert_int_equal(g_fail, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_pairs)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

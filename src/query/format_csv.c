/* The fixed record formats: nfdump 1.7.1's csv (48 columns) and pipe, a
 * raw dump in the manner of nfdump's, bitarc's ndjson, and null; plus the
 * field writers the fmt engine shares (dates, addresses, protocol names,
 * flags, MACs, scaled numbers). */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "query/format_int.h"

const char fmt_d2[200] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                         "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                         "8081828384858687888990919293949596979899";

static void date_tm(const ba_query_format_t *f, time_t t, struct tm *tm) {
  if (f->flags & BA_FMT_LOCAL) localtime_r(&t, tm);
  else gmtime_r(&t, tm);
}

/* Fills cache entry k for minute m: its prefix, or bad when the minute's
 * seconds do not all share it (an offset of odd seconds, a change of offset
 * inside the minute, a year not of 4 digits). */
static void minute_fill(const ba_query_format_t *f, int64_t m, unsigned k) {
  tcache_t *c = f->tc;
  struct tm a, b;
  char pa[24], pb[24];
  date_tm(f, (time_t)(m * 60), &a);
  date_tm(f, (time_t)(m * 60 + 59), &b);
  size_t la = strftime(pa, sizeof pa, "%Y-%m-%d %H:%M:", &a), lb = strftime(pb, sizeof pb, "%Y-%m-%d %H:%M:", &b);
  c->min[k] = m;
  c->bad[k] = !(la == 17 && lb == 17 && a.tm_sec == 0 && b.tm_sec == 59 && !memcmp(pa, pb, 17));
  if (!c->bad[k]) memcpy(c->pfx[k], pa, 17);
}

char *fmt_date_p(const ba_query_format_t *f, uint64_t ns, char *p) {
  uint64_t sec = ns / 1000000000ull;
  int64_t m = (int64_t)(sec / 60);
  unsigned k = (unsigned)m % TCACHE_N;
  tcache_t *c = f->tc;
  if (c->min[k] != m) minute_fill(f, m, k);
  if (!c->bad[k]) {
    memcpy(p, c->pfx[k], 17);
    memcpy(p + 17, fmt_d2 + 2 * (sec % 60), 2);
    return p + 19;
  }
  struct tm tm;
  char t[24];
  date_tm(f, (time_t)sec, &tm);
  if (strftime(t, sizeof t, "%Y-%m-%d %H:%M:%S", &tm) != 19) memcpy(t, "0000-00-00 00:00:00", 19);
  memcpy(p, t, 19);
  return p + 19;
}

void fmt_date(const ba_query_format_t *f, uint64_t ns, char out[20]) {
  fmt_date_p(f, ns, out);
  out[19] = 0;
}

int fmt_addr_is_v4(const uint8_t a[16], int ipver) {
  if (ipver == 4) return 1;
  if (ipver == 6) return 0;
  static const uint8_t zero[16] = {0};
  return ba_addr_is_v4(a) || !memcmp(a, zero, 16);
}

size_t fmt_addr(const uint8_t a[16], int ipver, int full, char out[48]) {
  if (fmt_addr_is_v4(a, ipver)) return fmt_v4(a, out);
  if (!inet_ntop(AF_INET6, a, out, 48)) out[0] = 0;
  size_t l = strlen(out);
  if (full || l <= 16) return l;
  /* nfdump's CondenseV6: the first 7 characters, "..", the last 7 */
  memmove(out + 9, out + l - 7, 8);
  out[7] = out[8] = '.';
  return 16;
}

const char *fmt_proto_name(unsigned p) {
  static const char *const n[138] = {
    "0", "ICMP", "IGMP", "GGP", "IPIP", "ST", "TCP", "CBT", "EGP", "IGP", "BBN", "NVPII", "PUP", "ARGUS",
    "ENCOM", "XNET", "CHAOS", "UDP", "MUX", "DCN", "HMP", "PRM", "XNS", "Trnk1", "Trnk2", "Leaf1", "Leaf2",
    "RDP", "IRTP", "ISO-4", "NETBK", "MFESP", "MEINP", "DCCP", "3PC", "IDPR", "XTP", "DDP", "IDPR", "TP++",
    "IL", "IPv6", "SDRP", "Rte6", "Frag6", "IDRP", "RSVP", "GRE", "MHRP", "BNA", "ESP", "AH", "INLSP",
    "SWIPE", "NARP", "MOBIL", "TLSP", "SKIP", "ICMP6", "NOHE6", "OPTS6", "HOST", "CFTP", "NET", "SATNT",
    "KLAN", "RVD", "IPPC", "FS", "SATM", "VISA", "IPCV", "CPNX", "CPHB", "WSN", "PVP", "BSATM", "SUNND",
    "WBMON", "WBEXP", "ISOIP", "VMTP", "SVMTP", "VINES", "TTP", "NSIGP", "DGP", "TCF", "EIGRP", "OSPF",
    "S-RPC", "LARP", "MTP", "AX.25", "OS", "MICP", "SCCSP", "ETHIP", "ENCAP", "99", "GMTP", "IFMP", "PNNI",
    "PIM", "ARIS", "SCPS", "QNX", "A/N", "IPcmp", "SNP", "CpqPP", "IPXIP", "VRRP", "PGM", "0hop", "L2TP",
    "DDX", "IATP", "STP", "SRP", "UTI", "SMP", "SM", "PTP", "ISIS4", "FIRE", "CRTP", "CRUDP", "128", "IPLT",
    "SPS", "PIPE", "SCTP", "FC", "134", "MHEAD", "UDP-L", "MPLS"};
  /* nfdump prints "%-5i" for the rest */
  static const char *const hi[] = {
    "138  ", "139  ", "140  ", "141  ", "142  ", "143  ", "144  ", "145  ", "146  ", "147  ", "148  ", "149  ",
    "150  ", "151  ", "152  ", "153  ", "154  ", "155  ", "156  ", "157  ", "158  ", "159  ", "160  ", "161  ",
    "162  ", "163  ", "164  ", "165  ", "166  ", "167  ", "168  ", "169  ", "170  ", "171  ", "172  ", "173  ",
    "174  ", "175  ", "176  ", "177  ", "178  ", "179  ", "180  ", "181  ", "182  ", "183  ", "184  ", "185  ",
    "186  ", "187  ", "188  ", "189  ", "190  ", "191  ", "192  ", "193  ", "194  ", "195  ", "196  ", "197  ",
    "198  ", "199  ", "200  ", "201  ", "202  ", "203  ", "204  ", "205  ", "206  ", "207  ", "208  ", "209  ",
    "210  ", "211  ", "212  ", "213  ", "214  ", "215  ", "216  ", "217  ", "218  ", "219  ", "220  ", "221  ",
    "222  ", "223  ", "224  ", "225  ", "226  ", "227  ", "228  ", "229  ", "230  ", "231  ", "232  ", "233  ",
    "234  ", "235  ", "236  ", "237  ", "238  ", "239  ", "240  ", "241  ", "242  ", "243  ", "244  ", "245  ",
    "246  ", "247  ", "248  ", "249  ", "250  ", "251  ", "252  ", "253  ", "254  ", "255  "};
  return p < 138 ? n[p] : p < 256 ? hi[p - 138] : "?";
}

const char *ba_query_proto_name(unsigned proto) { return fmt_proto_name(proto); }

void fmt_flags(unsigned f, char out[9]) {
  static const char letters[] = "CEUAPRSF";
  for (int i = 0; i < 8; i++) out[i] = (f >> (7 - i)) & 1 ? letters[i] : '.';
  out[8] = 0;
}

void fmt_mac(uint64_t m, ob_t *o) {
  static const char hx[] = "0123456789abcdef";
  char t[17];
  for (int i = 0; i < 6; i++) {
    unsigned b = (unsigned)(m >> (40 - 8 * i)) & 0xFF;
    t[3 * i] = hx[b >> 4];
    t[3 * i + 1] = hx[b & 15];
    if (i < 5) t[3 * i + 2] = ':';
  }
  ob_put(o, t, 17);
}

size_t ba_query_format_number(uint64_t v, unsigned flags, int fixed_width, char out[32]) {
  if (flags & BA_FMT_PLAIN) {
    char tmp[24];
    char *p = fmt_u64(v, tmp);
    size_t l = (size_t)(tmp + 24 - p);
    memcpy(out, p, l);
    out[l] = 0;
    return l;
  }
  double x = (double)v;
  int l;
  if (x >= 1e12) l = snprintf(out, 32, fixed_width ? "%5.1f T" : "%.1f T", x / 1e12);
  else if (x >= 1e9) l = snprintf(out, 32, fixed_width ? "%5.1f G" : "%.1f G", x / 1e9);
  else if (x >= 1e6) l = snprintf(out, 32, fixed_width ? "%5.1f M" : "%.1f M", x / 1e6);
  else {
    char tmp[24];
    char *p = fmt_u64(v, tmp);
    size_t n = (size_t)(tmp + 24 - p), pad = fixed_width && n < 4 ? 4 - n : 0;
    memset(out, ' ', pad);
    memcpy(out + pad, p, n);
    out[pad + n] = 0;
    return pad + n;
  }
  return l > 0 ? (size_t)l : 0;
}

/* ---------- csv (nfdump 1.7.1 output_csv.c) ---------- */

static const char g_csv_head[] =
  "ts,te,td,sa,da,sp,dp,pr,flg,fwd,stos,ipkt,ibyt,opkt,obyt,in,out,sas,das,smk,dmk,dtos,dir,nh,nhb,svln,dvln,"
  "ismc,odmc,idmc,osmc,mpls1,mpls2,mpls3,mpls4,mpls5,mpls6,mpls7,mpls8,mpls9,mpls10,cl,sl,al,ra,eng,exid,tr\n";

static void c_u(ob_t *o, uint64_t v) {
  ob_putc(o, ',');
  ob_u64(o, v);
}
static void c_addr(ob_t *o, const uint8_t a[16], int ipver) {
  char t[48];
  ob_putc(o, ',');
  ob_put(o, t, fmt_addr(a, ipver, 1, t));
}

/* The csv line of r at p, unchecked: the caller made FMT_FAST_ROOM bytes of
 * room (5 addresses of at most 46 characters, 3 dates, 4 MACs, 10 MPLS
 * labels and 30 numbers of at most 20 digits stay below 1,500). The same
 * text as csv_record, which tests/test_format checks. */
#define FMT_FAST_ROOM 2048
static char *p_addr(char *p, const uint8_t a[16], int ipver) {
  uint64_t hi;
  memcpy(&hi, a, 8);
  /* fmt_addr_is_v4 inlined: IPv4-mapped (::ffff:0:0/96) or all zero */
  int v4 = ipver == 4 || (ipver != 6 && hi == 0 && (a[8] | a[9]) == 0 &&
                          ((a[10] & a[11]) == 0xff || (a[10] | a[11] | a[12] | a[13] | a[14] | a[15]) == 0));
  if (v4) return pv4(p, a);
  char t[48];
  size_t l = fmt_addr(a, ipver, 1, t);
  memcpy(p, t, l);
  return p + l;
}
static char *p_mac(char *p, uint64_t m) {
  static const char hx[] = "0123456789abcdef";
  if (m == 0) {
    memcpy(p, ",00:00:00:00:00:00", 18);
    return p + 18;
  }
  *p++ = ',';
  for (int i = 0; i < 6; i++) {
    unsigned b = (unsigned)(m >> (40 - 8 * i)) & 0xFF;
    p[0] = hx[b >> 4];
    p[1] = hx[b & 15];
    p[2] = ':';
    p += 3;
  }
  return p - 1;
}
static inline char *p_cu(char *p, uint64_t v) {
  *p = ',';
  return pu64(p + 1, v);
}

static char *csv_fast(const ba_query_format_t *f, const ba_record_t *r, char *p) {
  p = fmt_date_p(f, r->first_ns, p);
  *p++ = ',';
  p = fmt_date_p(f, r->last_ns, p);
  uint64_t dur = fmt_dur_ms(r);
  p = p_cu(p, dur / 1000);
  unsigned ms = (unsigned)(dur % 1000);
  p[0] = '.';
  p[1] = (char)('0' + ms / 100);
  memcpy(p + 2, fmt_d2 + 2 * (ms % 100), 2);
  p += 4;
  *p++ = ',';
  p = p_addr(p, r->src, r->ipver);
  *p++ = ',';
  p = p_addr(p, r->dst, r->ipver);
  p = p_cu(p, r->src_port);
  p = p_cu(p, r->dst_port);
  *p++ = ',';
  const char *pn = fmt_proto_name(r->proto);
  size_t pl = strlen(pn);
  memcpy(p, pn, pl);
  p += pl;
  *p++ = ',';
  fmt_flags(r->tcp_flags, p);
  p += 8;
  memcpy(p, ",0", 2); /* fwd status: not stored */
  p += 2;
  p = p_cu(p, r->tos);
  p = p_cu(p, r->packets);
  p = p_cu(p, r->bytes);
  p = p_cu(p, r->out_packets);
  p = p_cu(p, r->out_bytes);
  p = p_cu(p, r->in_if);
  p = p_cu(p, r->out_if);
  p = p_cu(p, r->src_as);
  p = p_cu(p, r->dst_as);
  p = p_cu(p, r->src_mask);
  p = p_cu(p, r->dst_mask);
  p = p_cu(p, r->dst_tos);
  p = p_cu(p, r->direction);
  *p++ = ',';
  p = p_addr(p, r->next_hop, 0);
  *p++ = ',';
  p = p_addr(p, r->bgp_next_hop, 0);
  p = p_cu(p, r->vlan);
  p = p_cu(p, r->dst_vlan);
  p = p_mac(p, r->in_src_mac);
  p = p_mac(p, r->out_dst_mac);
  p = p_mac(p, r->in_dst_mac);
  p = p_mac(p, r->out_src_mac);
  for (int i = 0; i < 10; i++) {
    uint32_t l = r->mpls[i];
    p = p_cu(p, l >> 4);
    p[0] = '-';
    p[1] = (char)('0' + ((l & 0xF) >> 1));
    p[2] = '-';
    p[3] = (char)('0' + (l & 1));
    p += 4;
  }
  static const char lat[] = ",    0.000,    0.000,    0.000,"; /* latencies: not stored */
  memcpy(p, lat, sizeof lat - 1);
  p += sizeof lat - 1;
  p = p_addr(p, r->exporter, 0);
  p = p_cu(p, r->engine_type);
  *p++ = '/';
  p = pu64(p, r->engine_id);
  memcpy(p, ",0,", 3); /* exporter sysid: nfdump's file-local number; bitarc has none */
  p += 3;
  p = fmt_date_p(f, r->received_ns, p);
  unsigned rms = (unsigned)(r->received_ns / 1000000ull % 1000);
  p[0] = '.';
  p[1] = (char)('0' + rms / 100);
  memcpy(p + 2, fmt_d2 + 2 * (rms % 100), 2);
  p[4] = '\n';
  return p + 5;
}

static void csv_record(const ba_query_format_t *f, const ba_record_t *r, ob_t *o) {
  char d[20], fl[9];
  fmt_date(f, r->first_ns, d);
  ob_put(o, d, 19);
  ob_putc(o, ',');
  fmt_date(f, r->last_ns, d);
  ob_put(o, d, 19);
  uint64_t dur = fmt_dur_ms(r);
  c_u(o, dur / 1000);
  ob_putc(o, '.');
  ob_u64z(o, dur % 1000, 3);
  c_addr(o, r->src, r->ipver);
  c_addr(o, r->dst, r->ipver);
  c_u(o, r->src_port);
  c_u(o, r->dst_port);
  ob_putc(o, ',');
  ob_puts(o, fmt_proto_name(r->proto));
  fmt_flags(r->tcp_flags, fl);
  ob_putc(o, ',');
  ob_put(o, fl, 8);
  c_u(o, 0); /* fwd status: not stored */
  c_u(o, r->tos);
  c_u(o, r->packets);
  c_u(o, r->bytes);
  c_u(o, r->out_packets);
  c_u(o, r->out_bytes);
  c_u(o, r->in_if);
  c_u(o, r->out_if);
  c_u(o, r->src_as);
  c_u(o, r->dst_as);
  c_u(o, r->src_mask);
  c_u(o, r->dst_mask);
  c_u(o, r->dst_tos);
  c_u(o, r->direction);
  c_addr(o, r->next_hop, 0);
  c_addr(o, r->bgp_next_hop, 0);
  c_u(o, r->vlan);
  c_u(o, r->dst_vlan);
  const uint64_t macs[4] = {r->in_src_mac, r->out_dst_mac, r->in_dst_mac, r->out_src_mac};
  for (int i = 0; i < 4; i++) {
    ob_putc(o, ',');
    fmt_mac(macs[i], o);
  }
  for (int i = 0; i < 10; i++) {
    c_u(o, r->mpls[i] >> 4);
    ob_putc(o, '-');
    ob_u64(o, (r->mpls[i] & 0xF) >> 1);
    ob_putc(o, '-');
    ob_u64(o, r->mpls[i] & 1);
  }
  ob_puts(o, ",    0.000,    0.000,    0.000"); /* latencies: not stored */
  c_addr(o, r->exporter, 0);
  c_u(o, r->engine_type);
  ob_putc(o, '/');
  ob_u64(o, r->engine_id);
  c_u(o, 0); /* exporter sysid: nfdump's file-local number; bitarc has none */
  ob_putc(o, ',');
  fmt_date(f, r->received_ns, d);
  ob_put(o, d, 19);
  ob_putc(o, '.');
  ob_u64z(o, r->received_ns / 1000000ull % 1000, 3);
  ob_putc(o, '\n');
}

/* ---------- pipe (nfdump 1.7.1 output_pipe.c) ---------- */

static void pipe_addr(ob_t *o, const uint8_t a[16], int v4) {
  for (int w = 0; w < 4; w++) {
    uint32_t x = 0;
    if (!v4 || w == 3)
      for (int i = 0; i < 4; i++) x = x << 8 | a[4 * w + i];
    ob_putc(o, '|');
    ob_u64(o, x);
  }
}

static void pipe_record(const ba_record_t *r, ob_t *o) {
  int v4 = fmt_addr_is_v4(r->src, r->ipver);
  ob_u64(o, v4 ? 2 : 10);
  ob_putc(o, '|');
  ob_u64(o, fmt_ms(r->first_ns));
  ob_putc(o, '|');
  ob_u64(o, fmt_ms(r->last_ns));
  ob_putc(o, '|');
  ob_u64(o, r->proto);
  pipe_addr(o, r->src, v4);
  ob_putc(o, '|');
  ob_u64(o, r->src_port);
  pipe_addr(o, r->dst, v4);
  const uint64_t rest[] = {r->dst_port, r->src_as, r->dst_as, r->in_if, r->out_if, r->tcp_flags, r->tos, r->packets,
                           r->bytes};
  for (size_t i = 0; i < BA_ARRAY_LEN(rest); i++) {
    ob_putc(o, '|');
    ob_u64(o, rest[i]);
  }
  ob_putc(o, '\n');
}

/* ---------- raw: one field per line, nfdump's labels ---------- */

static void raw_line(ob_t *o, const char *label, const char *val) {
  char t[96];
  snprintf(t, sizeof(t), "  %-12s =  %16s\n", label, val);
  ob_puts(o, t);
}

static void raw_record(const ba_query_format_t *f, const ba_record_t *r, ob_t *o) {
  char v[64], a[48], d[20];
  ob_puts(o, "\nFlow Record: \n");
  snprintf(v, sizeof(v), "%u", r->engine_type);
  raw_line(o, "engine type", v);
  snprintf(v, sizeof(v), "%u", r->engine_id);
  raw_line(o, "engine ID", v);
  const struct { const char *l; uint64_t ns; } ts[] = {{"first", r->first_ns}, {"last", r->last_ns},
                                                       {"received at", r->received_ns}};
  for (int i = 0; i < 3; i++) {
    fmt_date(f, ts[i].ns, d);
    snprintf(v, sizeof(v), "%13" PRIu64 " [%s.%03u]", fmt_ms(ts[i].ns), d, (unsigned)(fmt_ms(ts[i].ns) % 1000));
    raw_line(o, ts[i].l, v);
  }
  const struct { const char *l; uint64_t v; } nums[] = {
    {"proto", r->proto}, {"tcp flags", r->tcp_flags}, {"src port", r->src_port}, {"dst port", r->dst_port},
    {"src tos", r->tos}, {"in packets", r->packets}, {"in bytes", r->bytes}, {"out packets", r->out_packets},
    {"out bytes", r->out_bytes}, {"input", r->in_if}, {"output", r->out_if}, {"src as", r->src_as},
    {"dst as", r->dst_as}, {"src mask", r->src_mask}, {"dst mask", r->dst_mask}, {"dst tos", r->dst_tos},
    {"direction", r->direction}, {"src vlan", r->vlan}, {"dst vlan", r->dst_vlan}};
  for (size_t i = 0; i < BA_ARRAY_LEN(nums); i++) {
    snprintf(v, sizeof(v), "%" PRIu64, nums[i].v);
    raw_line(o, nums[i].l, v);
  }
  const struct { const char *l; const uint8_t *a; int ver; } ads[] = {
    {"src addr", r->src, r->ipver}, {"dst addr", r->dst, r->ipver}, {"ip next hop", r->next_hop, 0},
    {"bgp next hop", r->bgp_next_hop, 0}, {"ip exporter", r->exporter, 0}};
  for (size_t i = 0; i < BA_ARRAY_LEN(ads); i++) {
    fmt_addr(ads[i].a, ads[i].ver, 1, a);
    raw_line(o, ads[i].l, a);
  }
}

/* ---------- ndjson (bitarc) ---------- */

static void j_str(ob_t *o, const char *k, const char *v) {
  ob_puts(o, k);
  ob_putc(o, '"');
  ob_puts(o, v);
  ob_putc(o, '"');
}
static void j_num(ob_t *o, const char *k, uint64_t v) {
  ob_puts(o, k);
  ob_u64(o, v);
}
static void j_time(ob_t *o, const char *k, uint64_t ns) {
  time_t t = (time_t)(ns / 1000000000ull);
  struct tm tm;
  char d[24];
  gmtime_r(&t, &tm);
  strftime(d, sizeof(d), "%Y-%m-%dT%H:%M:%S", &tm);
  ob_puts(o, k);
  ob_putc(o, '"');
  ob_puts(o, d);
  ob_putc(o, '.');
  ob_u64z(o, ns / 1000000ull % 1000, 3);
  ob_putc(o, '"');
}

static void ndjson_record(const ba_record_t *r, uint64_t flows, ob_t *o) {
  char a[48], fl[9];
  j_str(o, "{\"type\":", r->kind == BA_REC_PACKET ? "PACKET" : "FLOW");
  j_time(o, ",\"first\":", r->first_ns);
  j_time(o, ",\"last\":", r->last_ns);
  j_num(o, ",\"first_ns\":", r->first_ns);
  j_num(o, ",\"last_ns\":", r->last_ns);
  j_num(o, ",\"ipver\":", r->ipver);
  fmt_addr(r->src, r->ipver, 1, a);
  j_str(o, ",\"src_addr\":", a);
  fmt_addr(r->dst, r->ipver, 1, a);
  j_str(o, ",\"dst_addr\":", a);
  j_num(o, ",\"src_port\":", r->src_port);
  j_num(o, ",\"dst_port\":", r->dst_port);
  j_num(o, ",\"proto\":", r->proto);
  fmt_flags(r->tcp_flags, fl);
  j_str(o, ",\"tcp_flags\":", fl);
  j_num(o, ",\"tos\":", r->tos);
  j_num(o, ",\"packets\":", r->packets);
  j_num(o, ",\"bytes\":", r->bytes);
  j_num(o, ",\"flows\":", flows);
  j_num(o, ",\"src_as\":", r->src_as);
  j_num(o, ",\"dst_as\":", r->dst_as);
  j_num(o, ",\"in_if\":", r->in_if);
  j_num(o, ",\"out_if\":", r->out_if);
  j_num(o, ",\"vlan\":", r->vlan);
  fmt_addr(r->exporter, 0, 1, a);
  j_str(o, ",\"exporter\":", a);
  if (r->kind == BA_REC_PACKET) {
    j_num(o, ",\"caplen\":", r->caplen);
    j_num(o, ",\"wirelen\":", r->wirelen);
    j_num(o, ",\"linktype\":", r->linktype);
  }
  ob_put(o, "}\n", 2);
}

int fmt_fixed_header(const ba_query_format_t *f, ob_t *o) {
  if (f->mode == FM_CSV) ob_put(o, g_csv_head, sizeof(g_csv_head) - 1);
  return 0;
}

int fmt_fixed_record(const ba_query_format_t *f, const ba_record_t *r, uint64_t flows, ob_t *o) {
  switch (f->mode) {
    case FM_CSV:
      if (o->cap - BA_MIN(o->len, o->cap) >= FMT_FAST_ROOM)
        o->len = (size_t)(csv_fast(f, r, o->buf + o->len) - o->buf);
      else csv_record(f, r, o);
      break;
    case FM_PIPE: pipe_record(r, o); break;
    case FM_RAW: raw_record(f, r, o); break;
    case FM_NDJSON: ndjson_record(r, flows, o); break;
    default: break;
  }
  return 0;
}

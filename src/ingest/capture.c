/* pcap / pcapng files through libpcap (loaded on first use, pcap_dl.c): every
 * packet becomes a packet record, or, for captures of flow exports, every
 * export datagram is decoded into flow records with the capture's source
 * address as exporter. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "bitarc/ingest.h"
#include "common/common.h"
#include "ingest/pcap_dl.h"

#define CAP_BATCH 256
#define CAP_ARENA (1u << 20)
#define DETECT_MAX_PACKETS 2048
#define DETECT_MAX_BYTES (8u << 20)

typedef struct cap_state {
  const ba_capture_opts_t *o;
  ba_ingest_as_t as;
  int dlt;
  ba_record_sink_fn fn;
  void *ctx;
  ba_record_t recs[CAP_BATCH];
  size_t nrec;
  uint8_t *arena;
  size_t arena_used;
  ba_ingest_counts_t c; /* packet-mode counts and packets read */
  int rc;
} cap_state_t;

static int cap_flush(cap_state_t *s) {
  if (!s->nrec) return s->rc;
  size_t n = s->nrec;
  s->nrec = 0;
  s->arena_used = 0;
  if (s->rc) {
    s->c.dropped[BA_DROP_STORE] += n;
    return s->rc;
  }
  int rc = s->fn ? s->fn(s->ctx, s->recs, n) : 0;
  if (rc) {
    s->rc = rc;
    s->c.dropped[BA_DROP_STORE] += n;
  } else {
    s->c.records += n;
  }
  return rc;
}

static size_t udp_payload_len(const uint8_t *data, uint32_t caplen, size_t udp_off) {
  size_t avail = caplen - udp_off;
  uint16_t ul = ba_load_be16(data + udp_off - 4);
  if (ul >= 8 && (size_t)(ul - 8) < avail) return ul - 8u;
  return avail;
}

/* Whether a parsed UDP packet carries a flow export datagram. */
static int is_export(const ba_record_t *r, const uint8_t *data, uint32_t caplen, size_t udp_off, int lenient) {
  if (udp_off == SIZE_MAX || udp_off > caplen) return 0;
  size_t pl = udp_payload_len(data, caplen, udp_off);
  if (ba_flow_detect(data + udp_off, pl)) return 1;
  if (!lenient || pl < 2) return 0;
  uint16_t v = ba_load_be16(data + udp_off);
  return (v == 5 || v == 9 || v == 10) && (ba_flow_port_is_export(r->dst_port) || ba_flow_port_is_export(r->src_port));
}

static int cap_packet(cap_state_t *s, const struct pcap_pkthdr *h, const uint8_t *data, uint64_t ts_ns) {
  s->c.packets++;
  if (s->as == BA_INGEST_FLOWS) {
    ba_record_t r;
    size_t uo;
    ba_packet_parse(s->dlt, data, h->caplen, h->len, ts_ns, &r, &uo);
    if (!r.ipver || !is_export(&r, data, h->caplen, uo, 1)) {
      s->c.dropped[BA_DROP_NOT_EXPORT]++;
      return 0;
    }
    int rc = ba_flow_decode_at(s->o->flows, r.src, ts_ns, data + uo, udp_payload_len(data, h->caplen, uo), s->fn,
                              s->ctx);
    if (rc) s->rc = rc;
    return rc;
  }
  if (s->nrec == CAP_BATCH || h->caplen > CAP_ARENA - s->arena_used) {
    int rc = cap_flush(s);
    if (rc) return rc;
  }
  const uint8_t *frame = data;
  if (h->caplen <= CAP_ARENA) {
    memcpy(s->arena + s->arena_used, data, h->caplen);
    frame = s->arena + s->arena_used;
    s->arena_used += h->caplen;
  }
  ba_packet_parse(s->dlt, frame, h->caplen, h->len, ts_ns, &s->recs[s->nrec], NULL);
  s->nrec++;
  if (frame == data) return cap_flush(s); /* oversized frame: deliver before libpcap reuses its buffer */
  return 0;
}

typedef struct held_pkt {
  struct pcap_pkthdr h;
  uint64_t ts_ns;
  uint8_t *data;
} held_pkt_t;

static uint64_t ts_of(const struct pcap_pkthdr *h) {
  /* Opened with nanosecond precision: tv_usec holds nanoseconds. */
  return (uint64_t)h->ts.tv_sec * 1000000000ull + (uint64_t)h->ts.tv_usec;
}

/* Opens the capture (fp, or path when fp is NULL) into *pc; res gets the
 * file's size, or the reason it cannot be read (fp is closed then). */
static int cap_open(const ba_pcap_api_t *pcap, const char *path, FILE *fp, ba_capture_result_t *res, pcap_t **pc) {
  char eb[PCAP_ERRBUF_SIZE];
  eb[0] = 0;
  struct stat st;
  if (fp) {
    if (fstat(fileno(fp), &st) == 0 && S_ISREG(st.st_mode)) res->file_bytes = (uint64_t)st.st_size;
  } else if (stat(path, &st) == 0) {
    res->file_bytes = (uint64_t)st.st_size;
  }
  *pc = fp ? pcap->fopen_offline_with_tstamp_precision(fp, PCAP_TSTAMP_PRECISION_NANO, eb)
           : pcap->open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, eb);
  if (*pc) return BA_OK;
  int e = errno;
  snprintf(res->errmsg, sizeof(res->errmsg), "%s", eb);
  if (fp) fclose(fp);
  if (strstr(eb, "unknown file format") || strstr(eb, "bad dump file format") || strstr(eb, "not a"))
    return BA_ERR_NOT_OURS;
  if (strstr(eb, "truncated")) return BA_ERR_TRUNCATED;
  return (e == ENOENT || e == EACCES || e == EISDIR) && !fp ? BA_ERR_IO : BA_ERR_CORRUPT;
}

/* --as auto: the first packets are read and held (*held, *nheld; the caller
 * frees them), flows are chosen when most of them are export datagrams, and
 * the held packets are delivered. *r is libpcap's last answer (1: more to
 * read, -2: end of file, else a read error); *pos the file offset. */
static int cap_detect(cap_state_t *s, const ba_pcap_api_t *pcap, pcap_t *pc, FILE *pf, held_pkt_t **held,
                      size_t *nheld, uint64_t *pos, int *r) {
  struct pcap_pkthdr *h;
  const u_char *data;
  size_t held_bytes = 0, nexport = 0;
  held_pkt_t *hp = *held = ba_calloc(DETECT_MAX_PACKETS, sizeof(*hp));
  if (!hp) return BA_ERR_NOMEM;
  while (*nheld < DETECT_MAX_PACKETS && held_bytes < DETECT_MAX_BYTES) {
    *r = pcap->next_ex(pc, &h, &data);
    if (*r != 1) break;
    *pos = pf ? (uint64_t)ftell(pf) : *pos;
    held_pkt_t *k = &hp[*nheld];
    k->h = *h;
    k->ts_ns = ts_of(h);
    k->data = ba_malloc(h->caplen ? h->caplen : 1);
    if (!k->data) return BA_ERR_NOMEM;
    memcpy(k->data, data, h->caplen);
    held_bytes += h->caplen;
    ba_record_t pr;
    size_t uo;
    ba_packet_parse(s->dlt, data, h->caplen, h->len, 0, &pr, &uo);
    if (pr.ipver && is_export(&pr, data, h->caplen, uo, 0)) nexport++;
    (*nheld)++;
  }
  s->as = nexport > 0 && nexport * 2 > *nheld ? BA_INGEST_FLOWS : BA_INGEST_PACKETS;
  int rc = BA_OK;
  for (size_t i = 0; i < *nheld && !rc; i++) rc = cap_packet(s, &hp[i].h, hp[i].data, hp[i].ts_ns);
  return rc;
}

/* What the flow decoder counted since before, into res->counts. */
static void cap_flow_counts(const ba_capture_opts_t *opts, const ba_ingest_counts_t *before,
                            ba_capture_result_t *res) {
  ba_ingest_counts_t after, delta;
  ba_flow_decoder_counts(opts->flows, &after);
  memset(&delta, 0, sizeof(delta));
  /* after - before, field by field */
  const uint64_t *a = (const uint64_t *)&after, *b = (const uint64_t *)before;
  uint64_t *dd = (uint64_t *)&delta;
  for (size_t i = 0; i < sizeof(delta) / sizeof(uint64_t); i++) dd[i] = a[i] - b[i];
  delta.packets = 0;
  ba_ingest_counts_add(&res->counts, &delta);
}

int ba_capture_ingest(const char *path, FILE *fp, const ba_capture_opts_t *opts, ba_record_sink_fn fn,
                      void *ctx, ba_capture_result_t *res) {
  ba_capture_result_t dummy;
  if (!res) res = &dummy;
  memset(res, 0, sizeof(*res));
  if (!opts || (!path && !fp)) return BA_ERR_INVALID;
  if (opts->as != BA_INGEST_PACKETS && !opts->flows) {
    snprintf(res->errmsg, sizeof(res->errmsg), "flow decoding needs a decoder");
    if (fp) fclose(fp);
    return BA_ERR_INVALID;
  }
  const ba_pcap_api_t *pcap;
  if (ba_pcap_api(&pcap, res->errmsg, sizeof(res->errmsg)) < 0) {
    if (fp) fclose(fp);
    return BA_ERR_UNSUPPORTED;
  }
  pcap_t *pc;
  int rc = cap_open(pcap, path, fp, res, &pc);
  if (rc) return rc;
  cap_state_t *s = ba_calloc(1, sizeof(*s));
  uint8_t *arena = ba_malloc(CAP_ARENA);
  held_pkt_t *held = NULL;
  size_t nheld = 0;
  uint64_t pos = 0;
  ba_ingest_counts_t before;
  memset(&before, 0, sizeof(before));
  if (!s || !arena) {
    rc = BA_ERR_NOMEM;
    goto done;
  }
  s->o = opts;
  s->arena = arena;
  s->dlt = pcap->datalink(pc);
  s->fn = fn;
  s->ctx = ctx;
  s->as = opts->as;
  res->linktype = s->dlt;
  if (opts->flows) ba_flow_decoder_counts(opts->flows, &before);
  FILE *pf = pcap->file(pc);
  pos = pf ? (uint64_t)ftell(pf) : 0;
  int r = 1;
  if (s->as == BA_INGEST_AUTO && (rc = cap_detect(s, pcap, pc, pf, &held, &nheld, &pos, &r))) goto done;
  res->as = s->as;
  while (r == 1) {
    struct pcap_pkthdr *h;
    const u_char *data;
    r = pcap->next_ex(pc, &h, &data);
    if (r != 1) break;
    rc = cap_packet(s, h, data, ts_of(h));
    if (rc) goto done;
    if (pf) pos = (uint64_t)ftell(pf);
    if (opts->progress && (s->c.packets & 0xffff) == 0) opts->progress(opts->progress_ctx, pos);
  }
  if (r != -2) {
    /* A damaged record: everything before it was delivered. */
    res->error_packet = s->c.packets + 1;
    res->error_offset = pos;
    snprintf(res->errmsg, sizeof(res->errmsg), "%s", pcap->geterr(pc));
    rc = strstr(res->errmsg, "truncated") ? BA_ERR_TRUNCATED : BA_ERR_CORRUPT;
    if (rc == BA_ERR_TRUNCATED) s->c.dropped[BA_DROP_TRUNCATED]++;
  }
  int frc = cap_flush(s);
  if (!rc) rc = frc;
done:
  if (s) {
    res->as = s->as;
    res->counts = s->c;
    if (opts->flows && s->as == BA_INGEST_FLOWS) cap_flow_counts(opts, &before, res);
    if (opts->progress) opts->progress(opts->progress_ctx, pos);
  }
  if (held) {
    for (size_t i = 0; i < nheld; i++) ba_free(held[i].data);
    ba_free(held);
  }
  ba_free(arena);
  ba_free(s);
  pcap->close(pc);
  return rc;
}

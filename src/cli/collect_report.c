/* bitarc collect's reports (collect_report.h). */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/collect_report.h"

static uint64_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long long size = 0, res = 0;
  if (!f) return 0;
  int n = fscanf(f, "%llu %llu", &size, &res);
  fclose(f);
  long page = sysconf(_SC_PAGESIZE);
  return n == 2 && page > 0 ? (uint64_t)res * (uint64_t)page : 0;
}

void ba_coll_snap_take(ba_collector_t *c, uint64_t stored, double secs, int with_exporters, ba_coll_snap_t *s,
                       uint64_t *prev_stored, double *prev_secs) {
  memset(s, 0, sizeof(*s));
  s->secs = secs;
  s->stored = stored;
  double dt = secs - *prev_secs;
  s->rate = dt > 0 ? (double)(stored - *prev_stored) / dt : 0;
  *prev_stored = stored;
  *prev_secs = secs;
  s->rss_bytes = rss_bytes();
  ba_collector_get_stats(c, &s->st);
  s->nso = ba_collector_sockets(c, s->so, BA_COLLECTOR_MAX_SOCKETS);
  if (s->nso > BA_COLLECTOR_MAX_SOCKETS) s->nso = BA_COLLECTOR_MAX_SOCKETS;
  if (!with_exporters) return;
  size_t n = ba_collector_exporters(c, NULL, 0);
  s->ex = n ? calloc(n, sizeof(*s->ex)) : NULL;
  if (s->ex) {
    size_t m = ba_collector_exporters(c, s->ex, n); /* as many or more by now */
    s->nex = m < n ? m : n;
  }
  n = ba_collector_templates(c, NULL, 0);
  s->tp = n ? calloc(n, sizeof(*s->tp)) : NULL;
  if (s->tp) {
    size_t m = ba_collector_templates(c, s->tp, n);
    s->ntp = m < n ? m : n;
  }
}

void ba_coll_snap_clear(ba_coll_snap_t *s) {
  free(s->ex);
  s->ex = NULL;
  s->nex = 0;
  free(s->tp);
  s->tp = NULL;
  s->ntp = 0;
}

void ba_coll_fmt_bytes(char *buf, size_t len, uint64_t v) {
  static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double x = (double)v;
  int i = 0;
  while (x >= 1024 && i < 4) x /= 1024, i++;
  if (i == 0) snprintf(buf, len, "%" PRIu64 " B", v);
  else snprintf(buf, len, "%.1f %s", x, u[i]);
}

static uint64_t decoder_drops(const ba_ingest_counts_t *c) {
  return ba_ingest_counts_dropped(c) - c->dropped[BA_DROP_QUEUE_FULL] - c->dropped[BA_DROP_STORE] -
         c->dropped[BA_DROP_STOP_TIMEOUT];
}

void ba_coll_status_line(FILE *f, const ba_coll_snap_t *s) {
  char q[32], cap[32], rss[32];
  ba_coll_fmt_bytes(q, sizeof(q), s->st.queue_bytes);
  ba_coll_fmt_bytes(cap, sizeof(cap), s->st.queue_capacity);
  ba_coll_fmt_bytes(rss, sizeof(rss), s->rss_bytes);
  double fill = s->st.queue_capacity ? 100.0 * (double)s->st.queue_bytes / (double)s->st.queue_capacity : 0;
  double peak = s->st.queue_capacity ? 100.0 * (double)s->st.queue_peak / (double)s->st.queue_capacity : 0;
  fprintf(f, "bitarc collect: %.0f s: %.0f flows/s, stored %" PRIu64 "; queue %.1f %% (%s of %s, peak %.1f %%); "
          "drops: queue-full %" PRIu64 " datagrams, kernel ",
          s->secs, s->rate, s->stored, fill, q, cap, peak, s->st.queue_dropped);
  if (s->st.kernel_drops < 0) fprintf(f, "unknown");
  else fprintf(f, "%" PRId64 " datagrams", s->st.kernel_drops);
  fprintf(f, ", decoder %" PRIu64 ", store %" PRIu64 "; rss %s", decoder_drops(&s->st.counts),
          s->st.counts.dropped[BA_DROP_STORE], rss);
  if (s->cluster_on)
    fprintf(f, "; segments clustered %" PRIu64 ", skipped %" PRIu64 ", failed %" PRIu64, s->clustered,
            s->cluster_skipped, s->cluster_failed);
  fputc('\n', f);
  fflush(f);
}

void ba_coll_report_text(FILE *f, const ba_coll_snap_t *s) {
  char rb[32], pk[32], cap[32];
  ba_coll_fmt_bytes(rb, sizeof(rb), s->st.received_bytes);
  ba_coll_fmt_bytes(pk, sizeof(pk), s->st.queue_peak);
  ba_coll_fmt_bytes(cap, sizeof(cap), s->st.queue_capacity);
  fprintf(f, "bitarc collect: %s%.0f s: received %" PRIu64 " datagrams (%s), stored %" PRIu64 " flows (%.0f/s)",
          s->final ? "final, " : "", s->secs, s->st.received, rb, s->stored, s->secs > 0 ? s->stored / s->secs : 0);
  fprintf(f, ", queue peak %s of %s, queue-full drops %" PRIu64 " datagrams, kernel drops ", pk, cap,
          s->st.queue_dropped);
  if (s->st.kernel_drops < 0) fprintf(f, "unknown");
  else fprintf(f, "%" PRId64, s->st.kernel_drops);
  fprintf(f, "\n  decoder: ");
  ba_cli_print_counts(f, &s->st.counts);
  fputc('\n', f);
  if (s->final)
    fprintf(f, "  stop: read %" PRIu64 " datagrams from the sockets in %.3f s after the signal, %" PRIu64
            " of them dropped (stop-timeout)\n",
            s->st.stop_drained, s->st.stop_drain_s, s->st.stop_dropped);
  int any_tcp = 0;
  for (size_t i = 0; i < s->nso; i++) any_tcp |= s->so[i].tcp;
  for (size_t i = 0; (s->nso > 1 || any_tcp) && i < s->nso; i++) {
    const ba_collector_socket_t *o = &s->so[i];
    if (o->tcp) {
      fprintf(f,
              "  socket tcp:%s: received %" PRIu64 " messages, queue-full drops %" PRIu64 ", connections %" PRIu64
              " (open %" PRIu64 ", refused %" PRIu64 ", closed as not IPFIX %" PRIu64 ", cut mid-message %" PRIu64
              ")\n",
              o->address, o->received, o->queue_dropped, o->tcp_accepted, o->tcp_open, o->tcp_refused,
              o->tcp_bad_framing, o->tcp_truncated);
      continue;
    }
    fprintf(f, "  socket %s: received %" PRIu64 " datagrams, queue-full drops %" PRIu64 ", kernel drops %" PRId64 "\n",
            o->address, o->received, o->queue_dropped, o->kernel_drops);
  }
  for (size_t i = 0; i < s->nex; i++) {
    char a[64];
    ba_addr_format(s->ex[i].addr, a, sizeof(a));
    fprintf(f, "  exporter %s: received %" PRIu64 " datagrams, ", a, s->ex[i].received);
    ba_cli_print_counts(f, &s->ex[i].counts);
    if (s->ex[i].clock_suspicious)
      fprintf(f, "; its clock looks wrong (export - receive %" PRId64 " s; --rebase-time moves its flows)",
              s->ex[i].export_skew_s);
    if (s->ex[i].last_error[0]) fprintf(f, "; last drop: %s", s->ex[i].last_error);
    fputc('\n', f);
  }
  if (s->live_blocks) {
    char lb[32];
    ba_coll_fmt_bytes(lb, sizeof(lb), s->live_bytes);
    fprintf(f, "  live queries: %" PRIu64 " LIVE blocks written (%s)\n", s->live_blocks, lb);
  }
  if (s->cluster_on)
    fprintf(f, "  clustering: %" PRIu64 " segments clustered, %" PRIu64 " skipped (closed while another was being "
            "clustered, or expired), %" PRIu64 " failed\n", s->clustered, s->cluster_skipped, s->cluster_failed);
  ba_cli_print_templates(f, s->tp, s->ntp);
  fflush(f);
}

void ba_coll_report_json(FILE *f, const ba_coll_snap_t *s) {
  fprintf(f, "{\"final\":%s,\"time\":%lld,\"listen\":", s->final ? "true" : "false", (long long)time(NULL));
  ba_cli_json_string(f, s->nso ? s->so[0].address : "");
  fprintf(f, ",\"seconds\":%.3f,\"received\":%" PRIu64 ",\"received_bytes\":%" PRIu64 ",\"stored\":%" PRIu64
          ",\"flows_per_s\":%.0f,\"queue_dropped\":%" PRIu64 ",\"queue_dropped_bytes\":%" PRIu64
          ",\"kernel_drops\":%" PRId64 ",\"rcvbuf_granted\":%u,\"queue\":{\"bytes\":%" PRIu64
          ",\"capacity\":%" PRIu64 ",\"peak\":%" PRIu64 "},\"rss_bytes\":%" PRIu64 ",\"counts\":",
          s->secs, s->st.received, s->st.received_bytes, s->stored, s->rate, s->st.queue_dropped,
          s->st.queue_dropped_bytes, s->st.kernel_drops, s->st.rcvbuf_granted, s->st.queue_bytes,
          s->st.queue_capacity, s->st.queue_peak, s->rss_bytes);
  ba_cli_json_counts(f, &s->st.counts);
  fprintf(f, ",\"sockets\":[");
  for (size_t i = 0; i < s->nso; i++) {
    const ba_collector_socket_t *o = &s->so[i];
    fprintf(f, "%s{\"address\":", i ? "," : "");
    ba_cli_json_string(f, o->address);
    fprintf(f, ",\"listen\":");
    ba_cli_json_string(f, o->listen ? o->listen : "");
    fprintf(f, ",\"rcvbuf_asked\":%u,\"rcvbuf_granted\":%u,\"rcvbuf_forced\":%s,\"kernel_drops\":%" PRId64
            ",\"received\":%" PRIu64 ",\"received_bytes\":%" PRIu64 ",\"queue_dropped\":%" PRIu64
            ",\"queue_bytes\":%" PRIu64 ",\"queue_capacity\":%" PRIu64 ",\"queue_peak\":%" PRIu64,
            o->rcvbuf_asked, o->rcvbuf_granted, o->rcvbuf_forced ? "true" : "false", o->kernel_drops, o->received,
            o->received_bytes, o->queue_dropped, o->queue_bytes, o->queue_capacity, o->queue_peak);
    if (o->tcp)
      fprintf(f,
              ",\"tcp\":{\"accepted\":%" PRIu64 ",\"open\":%" PRIu64 ",\"refused\":%" PRIu64
              ",\"bad_framing\":%" PRIu64 ",\"truncated\":%" PRIu64 "}",
              o->tcp_accepted, o->tcp_open, o->tcp_refused, o->tcp_bad_framing, o->tcp_truncated);
    fputc('}', f);
  }
  fprintf(f, "],\"exporters\":[");
  for (size_t i = 0; i < s->nex; i++) {
    char a[64];
    ba_addr_format(s->ex[i].addr, a, sizeof(a));
    fprintf(f, "%s{\"exporter\":", i ? "," : "");
    ba_cli_json_string(f, a);
    fprintf(f, ",\"received\":%" PRIu64 ",\"received_bytes\":%" PRIu64 ",\"counts\":", s->ex[i].received,
            s->ex[i].received_bytes);
    ba_cli_json_counts(f, &s->ex[i].counts);
    fprintf(f, ",\"clock_suspicious\":%s,\"export_skew_s\":%" PRId64 ",\"last_error\":",
            s->ex[i].clock_suspicious ? "true" : "false", s->ex[i].export_skew_s);
    ba_cli_json_string(f, s->ex[i].last_error);
    fputc('}', f);
  }
  fprintf(f, "],\"stop\":{\"drained\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\"seconds\":%.3f}", s->st.stop_drained,
          s->st.stop_dropped, s->st.stop_drain_s);
  fprintf(f, ",\"live\":{\"blocks\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", s->live_blocks, s->live_bytes);
  if (s->cluster_on)
    fprintf(f, ",\"cluster\":{\"clustered\":%" PRIu64 ",\"skipped\":%" PRIu64 ",\"failed\":%" PRIu64 "}",
            s->clustered, s->cluster_skipped, s->cluster_failed);
  fprintf(f, ",\"templates\":[");
  ba_cli_json_templates(f, s->tp, s->ntp);
  fprintf(f, "]}\n");
}

int ba_coll_report_write(const char *path, const ba_coll_snap_t *s, int text, mode_t mode) {
  char tmp[4096];
  if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return -1;
  (void)fchmod(fd, mode); /* a temp file left by a crash keeps its old mode otherwise */
  FILE *f = fdopen(fd, "w");
  if (!f) {
    int e = errno;
    close(fd);
    unlink(tmp);
    errno = e;
    return -1;
  }
  if (text) ba_coll_report_text(f, s);
  else ba_coll_report_json(f, s);
  int bad = fflush(f) != 0 || ferror(f);
  int e = errno;
  if (fclose(f) != 0 && !bad) bad = 1, e = errno;
  if (bad || rename(tmp, path) != 0) {
    if (!bad) e = errno;
    unlink(tmp);
    errno = e;
    return -1;
  }
  return 0;
}

int ba_coll_stats_write(const char *path, const ba_coll_snap_t *s) { return ba_coll_report_write(path, s, 0, 0644); }

/* Retention while collecting: ba_store_expire with the collector's limits,
 * at start and every --expire-every. The writer's open slices are journals
 * (*.open), which ba_store_expire never deletes, so the pass needs no
 * coordination with the writer; a concurrent `bitarc expire` on the store
 * makes a pass skip (BA_ERR_BUSY) and the next one retries. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bitarc/bitarc.h"
#include "cli/cli.h"
#include "cli/collect_retention.h"

#define DEFAULT_EVERY_S 60

int ba_cli_retention_opt(int opt, const char *arg, ba_cli_retention_t *r) {
  long sec;
  switch (opt) {
  case BA_CLI_OPT_MAX_AGE:
    if ((sec = ba_cli_parse_seconds(arg)) <= 0) {
      ba_cli_err("collect", "--max-age '%s' is not a duration (e.g. 36h, 30d, 2w)", arg);
      return 2;
    }
    r->max_age_ns = (uint64_t)sec * 1000000000ull;
    return 0;
  case BA_CLI_OPT_MAX_SIZE:
    if (ba_cli_parse_bytes(arg, &r->max_bytes) < 0 || !r->max_bytes) {
      ba_cli_err("collect", "--max-size '%s' is not a size (e.g. 500G, 20M, 1048576)", arg);
      return 2;
    }
    return 0;
  case BA_CLI_OPT_EXPIRE_EVERY:
    if ((sec = ba_cli_parse_seconds(arg)) <= 0) {
      ba_cli_err("collect", "--expire-every '%s' is not a duration of at least 1s (e.g. 60s, 10m)", arg);
      return 2;
    }
    r->every_s = sec;
    return 0;
  default: return 2;
  }
}

int ba_cli_retention_on(const ba_cli_retention_t *r) { return r->max_age_ns || r->max_bytes; }

typedef struct pass {
  ba_cli_retention_t *r;
  int quiet;
  void (*note)(void *ctx, const char *line);
  void *ctx;
} pass_t;

static void on_item(void *vctx, const ba_expire_item_t *it) {
  pass_t *p = vctx;
  p->r->segments_deleted++;
  p->r->bytes_deleted += it->bytes;
  if (p->quiet) return;
  char line[512], t1[32], t2[32];
  time_t a = (time_t)(it->start_ns / 1000000000ull), b = (time_t)(it->end_ns / 1000000000ull);
  struct tm tm;
  if (!gmtime_r(&a, &tm) || !strftime(t1, sizeof t1, "%Y-%m-%dT%H:%M:%SZ", &tm)) snprintf(t1, sizeof t1, "?");
  if (!gmtime_r(&b, &tm) || !strftime(t2, sizeof t2, "%Y-%m-%dT%H:%M:%SZ", &tm)) snprintf(t2, sizeof t2, "?");
  snprintf(line, sizeof line, "expired %s (%s .. %s, %" PRIu64 " bytes, %s limit)", it->name, t1, t2, it->bytes,
           it->reason == BA_EXPIRE_AGE ? "--max-age" : "--max-size");
  p->note(p->ctx, line);
}

void ba_cli_retention_tick(ba_cli_retention_t *r, const char *store, uint64_t now_ns, int quiet,
                           void (*note)(void *ctx, const char *line), void *ctx) {
  if (!ba_cli_retention_on(r) || now_ns < r->next_ns) return;
  r->next_ns = now_ns + (uint64_t)(r->every_s > 0 ? r->every_s : DEFAULT_EVERY_S) * 1000000000ull;
  ba_expire_opts_t o;
  ba_expire_opts_init(&o);
  o.max_age_ns = r->max_age_ns;
  o.max_bytes = r->max_bytes;
  pass_t p = {r, quiet, note, ctx};
  o.report = on_item;
  o.report_ctx = &p;
  ba_expire_stats_t st;
  char err[512] = "", line[700];
  int rc = ba_store_expire(store, &o, &st, err, sizeof err);
  if (rc == BA_ERR_BUSY) {
    if (!r->busy_noted)
      note(ctx, "retention: another expire is running on the store; this pass is skipped (retried later)");
    r->busy_noted = 1;
    return;
  }
  r->busy_noted = 0;
  if (rc < 0) {
    snprintf(line, sizeof line, "warning: retention on '%s' failed: %s (retried in the next pass)", store,
             err[0] ? err : ba_strerror(rc));
    note(ctx, line);
    return;
  }
  if (st.size_unmet && !r->unmet_noted) {
    snprintf(line, sizeof line,
             "warning: '%s' is still above --max-size: the slices being written (journals, %" PRIu64
             " bytes) alone are larger",
             store, st.journal_bytes);
    note(ctx, line);
  }
  r->unmet_noted = st.size_unmet;
  if (st.segments_deleted && !quiet) {
    snprintf(line, sizeof line,
             "retention: %" PRIu64 " segments (%" PRIu64 " bytes) expired; %" PRIu64 " bytes left (%" PRIu64
             " segments deleted in this run)",
             st.segments_deleted, st.bytes_deleted, st.bytes_after, r->segments_deleted);
    note(ctx, line);
  }
}

/* bitarc collect's retention options (--max-age, --max-size, --expire-every):
 * the store's oldest complete segments are expired while collecting, with
 * ba_store_expire (never the slice being written). collect_retention.c. */
#ifndef BA_CLI_COLLECT_RETENTION_H
#define BA_CLI_COLLECT_RETENTION_H

#include <stdint.h>

enum { BA_CLI_OPT_MAX_AGE = 1100, BA_CLI_OPT_MAX_SIZE, BA_CLI_OPT_EXPIRE_EVERY };
#define BA_CLI_RETENTION_LONGOPTS                                                                      \
  {"max-age", required_argument, 0, BA_CLI_OPT_MAX_AGE}, {"max-size", required_argument, 0, BA_CLI_OPT_MAX_SIZE}, \
  {"expire-every", required_argument, 0, BA_CLI_OPT_EXPIRE_EVERY}
#define BA_CLI_RETENTION_HELP                                                                          \
  "retention (as bitarc expire, applied while collecting; the slice being written is never\n"         \
  "deleted; each deletion is logged):\n"                                                              \
  "      --max-age DUR      delete segments whose slice ended more than DUR ago (36h, 30d,\n"        \
  "                         2w; default: none)\n"                                                       \
  "      --max-size SIZE    then the oldest until segments + journals <= SIZE (500G, 20M;\n"          \
  "                         K M G T = powers of 1024; default: none)\n"                                 \
  "      --expire-every DUR how often the limits are applied (default 60s; also at start)\n"

typedef struct ba_cli_retention {
  uint64_t max_age_ns, max_bytes; /* 0 = no limit */
  long every_s;                   /* 0 = the default (60 s) */
  uint64_t next_ns;               /* monotonic time of the next pass; 0 = now */
  uint64_t segments_deleted, bytes_deleted;
  int busy_noted, unmet_noted;
} ba_cli_retention_t;

/* Applies one of the options above; 0, or 2 after an error naming it. */
int ba_cli_retention_opt(int opt, const char *arg, ba_cli_retention_t *r);
/* 1 if --max-age or --max-size was given. */
int ba_cli_retention_on(const ba_cli_retention_t *r);
/* A pass over `store` when one is due at monotonic time now_ns: expired
 * segments and trouble are told to note(ctx, line) (quiet: trouble only).
 * Never fails the collector: an error is noted and retried next time. */
void ba_cli_retention_tick(ba_cli_retention_t *r, const char *store, uint64_t now_ns, int quiet,
                           void (*note)(void *ctx, const char *line), void *ctx);

#endif

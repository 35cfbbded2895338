/* Record formats: the handle and the writers shared by the fmt engine
 * (format.c) and the fixed formats (format_csv.c). */
#ifndef BA_QUERY_FORMAT_INT_H
#define BA_QUERY_FORMAT_INT_H

#include "query/format_put.h"
#include "query/query_internal.h"

typedef enum { FM_FMT = 0, FM_CSV, FM_PIPE, FM_NDJSON, FM_RAW, FM_NULL } fmode_t;

typedef struct fitem {
  uint16_t tk;        /* token id (format.c), 0 = literal */
  uint32_t lit_off, lit_len;
} fitem_t;

/* Cache of formatted minutes, "YYYY-MM-DD hh:mm:" (direct mapped by minute):
 * localtime_r is the costliest step of a line, and a minute's 60 seconds
 * share the prefix when the zone's offset is whole minutes and does not
 * change inside that minute (checked at both ends when an entry is filled;
 * otherwise bad is set and such a minute's dates are formatted one by one). */
#define TCACHE_N 64
typedef struct tcache {
  int64_t min[TCACHE_N]; /* -1: empty */
  uint8_t bad[TCACHE_N];
  char pfx[TCACHE_N][17];
} tcache_t;

struct ba_query_format {
  fmode_t mode;
  unsigned flags;     /* BA_FMT_* */
  char *text;         /* the fmt string (literals point into it) */
  fitem_t *items;
  size_t n;
  uint32_t cols;
  char *header;       /* fmt: built from the tokens' headers, as nfdump */
  tcache_t *tc;       /* mutable through the const handle: one format per thread */
};

/* "YYYY-MM-DD hh:mm:ss" of a time (19 chars), local time unless BA_FMT_UTC... */
void fmt_date(const ba_query_format_t *f, uint64_t ns, char out[20]);
/* The same 19 characters at p (no NUL); returns p + 19. */
char *fmt_date_p(const ba_query_format_t *f, uint64_t ns, char *p);
/* Address text: IPv4 dotted quad when v4 (ipver 4, or an IPv4-mapped or
 * all-zero address when ipver is 0), else IPv6; condensed as nfdump unless
 * `full` (-6, csv). Returns the length. */
size_t fmt_addr(const uint8_t a[16], int ipver, int full, char out[48]);
int fmt_addr_is_v4(const uint8_t a[16], int ipver);
/* nfdump's protocol names (ProtoString); numbers for the rest. */
const char *fmt_proto_name(unsigned p);
void fmt_flags(unsigned f, char out[9]);
/* nfdump's millisecond times and duration (last - first, never negative). */
static inline uint64_t fmt_ms(uint64_t ns) { return ns / 1000000ull; }
static inline uint64_t fmt_dur_ms(const ba_record_t *r) {
  uint64_t a = fmt_ms(r->first_ns), b = fmt_ms(r->last_ns);
  return b > a ? b - a : 0;
}
void fmt_mac(uint64_t m, ob_t *o);

int fmt_fixed_record(const ba_query_format_t *f, const ba_record_t *r, uint64_t flows, ob_t *o);
int fmt_fixed_header(const ba_query_format_t *f, ob_t *o);

#endif

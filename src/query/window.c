/* Times: ISO and nfdump's -t date forms, relative durations, and the -t
 * window (ba_query_parse_window). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "query/parse_int.h"

/* ---------- times ---------- */

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  unsigned yoe = (unsigned)(y - era * 400);
  unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + (int64_t)doe - 719468;
}

/* YYYY-MM-DD[Thh[:mm[:ss[.fff]]]][Z] (also '/' and '.' as nfdump's -t), UTC. */
int qp_parse_iso(const char *s, size_t len, uint64_t *ns) {
  unsigned v[6] = {0, 1, 1, 0, 0, 0};
  size_t i = 0;
  int f;
  for (f = 0; f < 6; f++) {
    size_t st = i;
    unsigned x = 0;
    while (i < len && isdigit((unsigned char)s[i]) && i - st < 4) x = x * 10 + (unsigned)(s[i++] - '0');
    if (i == st || (f == 0 && i - st != 4) || (f > 0 && i - st != 2)) return -1;
    v[f] = x;
    if (i >= len) { f++; break; }
    char c = s[i];
    if (f < 2 && (c == '-' || c == '/')) { i++; continue; }
    if (f == 2 && (c == 'T' || c == 't' || c == '.')) { i++; continue; }
    if (f >= 3 && f < 5 && c == ':') { i++; continue; }
    f++;
    break;
  }
  if (f < 3) return -1;
  uint64_t frac = 0;
  if (i < len && s[i] == '.' && f == 6) {
    i++;
    uint64_t scale = 100000000ull;
    size_t st = i;
    while (i < len && isdigit((unsigned char)s[i])) {
      frac += (uint64_t)(s[i++] - '0') * scale;
      scale /= 10;
    }
    if (i == st) return -1;
  }
  if (i < len && (s[i] == 'Z' || s[i] == 'z')) i++;
  if (i != len) return -1;
  if (v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 || v[4] > 59 || v[5] > 60) return -1;
  int64_t days = days_from_civil((int64_t)v[0], v[1], v[2]);
  if (days < 0) return -1;
  *ns = ((uint64_t)days * 86400ull + v[3] * 3600ull + v[4] * 60ull + v[5]) * 1000000000ull + frac;
  return 0;
}

/* "3h" -> ns, units s m h d w. */
int qp_parse_rel(const char *s, size_t len, uint64_t *ns) {
  if (len < 2) return -1;
  uint64_t n = 0;
  size_t i = 0;
  while (i < len - 1 && isdigit((unsigned char)s[i])) {
    if (n > 1000000000ull) return -1;
    n = n * 10 + (uint64_t)(s[i++] - '0');
  }
  if (i == 0 || i != len - 1) return -1;
  uint64_t unit;
  switch (tolower((unsigned char)s[i])) {
    case 's': unit = 1; break;
    case 'm': unit = 60; break;
    case 'h': unit = 3600; break;
    case 'd': unit = 86400; break;
    case 'w': unit = 604800; break;
    default: return -1;
  }
  *ns = n * unit * 1000000000ull;
  return 0;
}

/* A wall-clock time parsed as if UTC, read in the local time zone instead
 * (as nfdump's mktime; an ambiguous or skipped DST hour as mktime decides). */
static uint64_t naive_to_local(uint64_t naive_ns) {
  time_t t = (time_t)(naive_ns / 1000000000ull);
  struct tm tm;
  gmtime_r(&t, &tm);
  tm.tm_isdst = -1;
  time_t l = mktime(&tm);
  if (l < 0) return 0;
  return (uint64_t)l * 1000000000ull + naive_ns % 1000000000ull;
}

/* nfdump's delta window: "+N" / "-N" seconds. */
static int parse_delta(const char *text, int64_t *out) {
  size_t len = strlen(text);
  if (len < 2 || len > 10 || (text[0] != '+' && text[0] != '-')) return -1;
  int64_t v = 0;
  for (size_t i = 1; i < len; i++) {
    if (!isdigit((unsigned char)text[i])) return -1;
    v = v * 10 + (text[i] - '0');
  }
  if (v == 0) return -1;
  *out = text[0] == '-' ? -v : v;
  return 0;
}

int ba_query_parse_window(const char *text, uint64_t now_ns, int local, ba_query_window_t *w) {
  BA_RETURN_IF(!text || !w, BA_ERR_INVALID);
  memset(w, 0, sizeof(*w));
  size_t len = strlen(text);
  uint64_t rel;
  if (text[0] == '+' || text[0] == '-') return parse_delta(text, &w->rel_s) == 0 ? 0 : BA_ERR_SYNTAX;
  if (qp_parse_rel(text, len, &rel) == 0) {
    w->start_ns = rel > now_ns ? 0 : now_ns - rel;
    w->end_ns = now_ns;
    return 0;
  }
  /* Split at the '-' that follows the first time (dates use '/'; ISO '-'
   * dates have their dash in position 4 or 7, so look for a dash after a
   * time part). */
  const char *dash = NULL;
  for (size_t i = 10; i < len; i++)
    if (text[i] == '-') {
      dash = text + i;
      break;
    }
  size_t l1 = dash ? (size_t)(dash - text) : len;
  uint64_t a, b = UINT64_MAX;
  if (qp_parse_iso(text, l1, &a) < 0) return BA_ERR_SYNTAX;
  if (dash && qp_parse_iso(dash + 1, len - l1 - 1, &b) < 0) return BA_ERR_SYNTAX;
  if (local) {
    a = naive_to_local(a);
    if (b != UINT64_MAX) b = naive_to_local(b);
  }
  if (dash && b < a) return BA_ERR_SYNTAX;
  w->start_ns = a;
  w->end_ns = b;
  return 0;
}

int ba_query_restrict_time(ba_query_t *q, uint64_t start_ns, uint64_t end_ns, int whole) {
  BA_RETURN_IF(!q || !q->root, BA_ERR_INVALID);
  qnode_t *a = qp_mk(QN_TIME, 0), *b = qp_mk(QN_TIME, 0), *j1 = qp_mk(QN_AND, 0), *j2 = qp_mk(QN_AND, 0);
  if (!a || !b || !j1 || !j2) {
    qnode_free(a);
    qnode_free(b);
    qnode_free(j1);
    qnode_free(j2);
    return BA_ERR_NOMEM;
  }
  a->field = QF_FIRST;
  a->cmp = QC_GE;
  a->value = start_ns;
  /* nfdump compares milliseconds: a flow ending within the end's millisecond is inside */
  uint64_t end = end_ns >= UINT64_MAX - 999999ull ? UINT64_MAX : end_ns / 1000000ull * 1000000ull + 999999ull;
  b->field = whole ? QF_LAST : QF_FIRST;
  b->cmp = QC_LE;
  b->value = end;
  j1->kid[0] = a;
  j1->kid[1] = b;
  j2->kid[0] = q->root;
  j2->kid[1] = j1;
  q->root = j2;
  q->cols = qnode_columns(j2);
  return 0;
}

/* The store directory's entries: one walk for every reader of the directory
 * (the store's segment list, crash recovery, retention, live queries, the
 * upgrade's scratch directory, collect --cluster), and the segment file
 * names: made from a slice start, parsed back, ordered. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "archive/archive.h"
#include "common/common.h"

int ba_dir_each(int dirfd, const char *sub, ba_dir_fn fn, void *ctx) {
  int fd = sub ? openat(dirfd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW) : dup(dirfd);
  if (fd < 0) return sub && errno == ENOENT ? BA_ERR_NOT_FOUND : BA_ERR_IO;
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return BA_ERR_IO;
  }
  rewinddir(d); /* a dup shares the offset of an earlier walk */
  struct dirent *e;
  int rc = BA_OK;
  while (rc == BA_OK && (e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    rc = fn(ctx, fd, e->d_name);
  }
  closedir(d);
  return rc;
}

int ba_name_ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a > b && !strcmp(s + a - b, suffix);
}

int ba_seg_name(uint64_t start_ns, unsigned seq, char *out, size_t cap) {
  time_t t = (time_t)(start_ns / 1000000000ull);
  struct tm tm;
  BA_RETURN_IF(!gmtime_r(&t, &tm), BA_ERR_INVALID);
  char suffix[16] = "";
  if (seq) snprintf(suffix, sizeof suffix, "-%u", seq);
  int n = snprintf(out, cap, "seg-%04d%02d%02dT%02d%02d%02dZ%s.bitarc", tm.tm_year + 1900,
                   tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, suffix);
  BA_RETURN_IF(n < 0 || (size_t)n >= cap, BA_ERR_OVERFLOW);
  return BA_OK;
}

/* The value of the n decimal digits at p; -1 if one is not a digit. */
static long digits(const char *p, int n) {
  long v = 0;
  for (int i = 0; i < n; i++) {
    if (p[i] < '0' || p[i] > '9') return -1;
    v = v * 10 + (p[i] - '0');
  }
  return v;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian). */
static int64_t days_from_civil(long y, long m, long d) {
  y -= m <= 2;
  long era = y / 400, yoe = y - era * 400, doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  return (int64_t)era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

/* Checked by hand, not by sscanf and a round trip through ba_seg_name: a
 * store open tests every directory entry. */
int ba_segment_name_parse(const char *n, uint64_t *start_ns, unsigned *seq) {
  static const char mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (strlen(n) < sizeof "seg-YYYYMMDDTHHMMSSZ.bitarc" - 1 || strncmp(n, "seg-", 4) || n[12] != 'T' || n[19] != 'Z')
    return 0;
  long y = digits(n + 4, 4), mo = digits(n + 8, 2), d = digits(n + 10, 2), h = digits(n + 13, 2),
       mi = digits(n + 15, 2), s = digits(n + 17, 2), q = 0;
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h < 0 || h > 23 || mi < 0 || mi > 59 ||
      s < 0 || s > 59)
    return 0;
  if (mo == 2 && d == 29 && (y % 4 || (y % 100 == 0 && y % 400))) return 0;
  const char *rest = n + 20;
  if (*rest == '-') {
    rest++;
    if (*rest < '1' || *rest > '9') return 0;
    while (*rest >= '0' && *rest <= '9' && q <= 1000000) q = q * 10 + (*rest++ - '0');
    if (q > 1000000) return 0;
  }
  uint64_t secs = (uint64_t)days_from_civil(y, mo, d) * 86400 + (uint64_t)(h * 3600 + mi * 60 + s);
  if (strcmp(rest, ".bitarc") || secs > UINT64_MAX / 1000000000ull) return 0; /* past 2554 in ns */
  if (start_ns) *start_ns = secs * 1000000000ull;
  if (seq) *seq = (unsigned)q;
  return 1;
}

int ba_segment_name_cmp(const char *a, const char *b) {
  int pa = ba_segment_name_parse(a, NULL, NULL), pb = ba_segment_name_parse(b, NULL, NULL);
  if (pa != pb) return pa ? 1 : -1;
  int k = pa ? strncmp(a + 4, b + 4, 16) : 0; /* YYYYMMDDTHHMMSSZ sorts as time does */
  if (k) return k;
  size_t la = strlen(a), lb = strlen(b); /* seg-X, seg-X-1, ..., seg-X-9, seg-X-10 */
  if (la != lb) return la < lb ? -1 : 1;
  return strcmp(a, b);
}

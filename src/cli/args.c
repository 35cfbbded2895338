/* Strict parsers of option values shared by the subcommands: a value that
 * does not parse entirely is refused (the caller names it in its error). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "cli/cli.h"

int ba_cli_parse_u64(const char *s, uint64_t *out) {
  if (!s || *s < '0' || *s > '9') return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end) return -1;
  *out = (uint64_t)v;
  return 0;
}

int ba_cli_parse_bytes(const char *s, uint64_t *out) {
  char *end;
  if (!s || *s < '0' || *s > '9') return -1;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) return -1;
  unsigned shift = 0;
  switch (*end) {
  case 0: break;
  case 'B': case 'b': end++; break;
  case 'K': case 'k': shift = 10; end++; break;
  case 'M': case 'm': shift = 20; end++; break;
  case 'G': case 'g': shift = 30; end++; break;
  case 'T': case 't': shift = 40; end++; break;
  default: return -1;
  }
  if (shift && (*end == 'B' || *end == 'b')) end++; /* 500GB */
  if (*end || v > (UINT64_MAX >> shift)) return -1;
  *out = (uint64_t)v << shift;
  return 0;
}

int ba_cli_opt_u64(const char *cmd, const char *opt, const char *arg, uint64_t lo, uint64_t hi, uint64_t *out) {
  uint64_t v;
  if (ba_cli_parse_u64(arg, &v) < 0 || v < lo || v > hi) {
    ba_cli_err(cmd, "--%s '%s': expected a whole number in %llu..%llu", opt, arg, (unsigned long long)lo,
               (unsigned long long)hi);
    return 2;
  }
  *out = v;
  return 0;
}

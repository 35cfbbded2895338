/* Status code table and debug tracing. */
#include <stdio.h>
#include <stdlib.h>

#include "bitarc/bitarc.h"
#include "common/common.h"

const char *ba_strerror(int status) {
  switch (status) {
  case BA_OK: return "success";
  case BA_ERR_NOMEM: return "out of memory";
  case BA_ERR_INVALID: return "invalid argument";
  case BA_ERR_CORRUPT: return "corrupt data";
  case BA_ERR_CHECKSUM: return "checksum mismatch";
  case BA_ERR_NOT_OURS: return "not a bitarc file (bad magic)";
  case BA_ERR_VERSION: return "unsupported (newer) format version";
  case BA_ERR_IO: return "input/output error";
  case BA_ERR_TRUNCATED: return "truncated input";
  case BA_ERR_UNSUPPORTED: return "unsupported feature";
  case BA_ERR_NOT_FOUND: return "not found";
  case BA_ERR_SYNTAX: return "syntax error";
  case BA_ERR_OVERFLOW: return "value out of range";
  case BA_ERR_NODEVICE: return "device not available";
  case BA_ERR_EXISTS: return "already exists";
  case BA_ERR_BUSY: return "resource busy (locked by another process)";
  default: return "unknown error";
  }
}

const char *ba_version(void) { return BA_VERSION_STRING; }

#ifndef NDEBUG
void ba_debug_trace(const char *file, int line, int code) {
  static int enabled = -1;
  if (enabled < 0) enabled = getenv("BITARC_TRACE") != NULL;
  /* Debug builds only, opt-in: the library otherwise never prints. */
  if (enabled) fprintf(stderr, "bitarc: %s:%d: %s\n", file, line, ba_strerror(code));
}
#endif

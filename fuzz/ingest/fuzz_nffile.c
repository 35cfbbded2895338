/* Fuzz target: one nfdump file (any layout, compression, records) read by
 * ba_nffile_ingest from memory. Every delivered record must be a flow of
 * IP version 4 or 6; the counters must add up; nothing may crash or leak. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bitarc/ingest.h"

static int sink(void *ctx, const ba_record_t *r, size_t n) {
  uint64_t *count = ctx;
  for (size_t i = 0; i < n; i++)
    if (r[i].kind != BA_REC_FLOW || (r[i].ipver != 4 && r[i].ipver != 6)) abort();
  *count += n;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  FILE *f = fmemopen((void *)(uintptr_t)data, size, "rb");
  if (!f) return 0;
  uint64_t count = 0;
  ba_nffile_result_t res;
  int rc = ba_nffile_ingest("fuzz", f, sink, &count, &res);
  if (count != res.records) abort();
  if (rc && !res.errmsg[0]) abort();  /* every failure is explained */
  return 0;
}

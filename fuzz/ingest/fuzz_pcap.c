/* Fuzz target: the input is a pcap or pcapng file, read through
 * pcap_fopen_offline from memory (fmemopen), auto-detecting packets vs flow
 * exports, with every packet parsed. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bitarc/ingest.h"

static int sink(void *ctx, const ba_record_t *r, size_t n) {
  uint64_t *acc = ctx;
  for (size_t i = 0; i < n; i++) {
    *acc += r[i].caplen + r[i].src_port;
    if (r[i].frame && r[i].caplen) *acc += r[i].frame[r[i].caplen - 1]; /* frame must be readable */
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!size) return 0;
  FILE *fp = fmemopen((void *)data, size, "rb");
  if (!fp) return 0;
  ba_flow_decoder_t *d;
  if (ba_flow_decoder_create(NULL, &d)) {
    fclose(fp);
    return 0;
  }
  ba_capture_opts_t o;
  memset(&o, 0, sizeof(o));
  o.flows = d;
  ba_capture_result_t res;
  uint64_t acc = 0;
  ba_capture_ingest(NULL, fp, &o, sink, &acc, &res);
  ba_flow_decoder_free(d);
  return 0;
}

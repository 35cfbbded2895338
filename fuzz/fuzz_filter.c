/* Fuzz target: the filter parser (and the evaluator and dump on what parses). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bitarc/query.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = 0;
  ba_query_t *q;
  if (ba_query_create(&q) == 0) {
    ba_query_set_now(q, 1720699200ull * 1000000000ull);
    if (ba_query_compile(q, text) == 0) {
      char buf[256];
      size_t len;
      ba_query_dump(q, buf, sizeof(buf), &len);
      ba_record_t r;
      memset(&r, 0, sizeof(r));
      r.ipver = 4;
      ba_addr_set_v4(r.src, 0x0A040102);
      ba_addr_set_v4(r.dst, 0xC0A80001);
      r.src_port = 1234;
      r.dst_port = 137;
      r.proto = 17;
      r.packets = 3;
      r.bytes = 300;
      r.last_ns = 1000000000;
      (void)ba_query_match(q, &r);
    } else {
      /* The error column always points inside the text (or at its end). */
      if (ba_query_errcol(q) > size) abort();
    }
    ba_query_free(q);
  }
  free(text);
  return 0;
}

/* Fuzz target: v9/IPFIX data records with variable-length elements (1- and
 * 3-byte prefixes, RFC 7011 §7), dataLinkFrameSection, and RFC 6313
 * sub-template lists (see fuzz_flow_paths.h for the input format). */
#include "fuzz_flow_paths.h"

static const uint16_t T[][2] = {{8, 4}, {82, 65535}, {12, 4}, {1, 4}, {2, 4}, {315, 65535}};
static const uint16_t L[][2] = {{293, 65535}, {292, 65535}, {7, 2}};
static const uint16_t S[][2] = {{56, 6}, {80, 6}};
static const uint16_t V6[][2] = {{1, 2}, {27, 16}, {83, 65535}};

static void tmpl(fz_buf_t *b, int v, uint16_t id, const uint16_t (*f)[2], size_t n) {
  fz_u16(b, id);
  fz_u16(b, (uint16_t)n);
  for (size_t i = 0; i < n; i++) fz_field(b, v, 0, f[i][0], f[i][1]);
}

static void prelude(fz_buf_t *b, int v) {
  fz_msg(b, v);
  fz_set(b, v == 9 ? 0 : 2);
  tmpl(b, v, 256, T, 6);
  tmpl(b, v, 257, L, 3);
  tmpl(b, v, 258, S, 2);
  tmpl(b, v, 259, V6, 3);
  fz_set_end(b);
  fz_msg_end(b, v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static fz_buf_t b9, b10;
  static const uint16_t tids[] = {256, 257, 258, 259};
  if (!b9.n) {
    prelude(&b9, 9);
    prelude(&b10, 10);
  }
  fz_path_t p = {b9.b, b10.b, b9.n, b10.n, tids, 4, 0};
  return fz_run_path(&p, data, size);
}

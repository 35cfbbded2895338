/* Fuzz target: v9/IPFIX options templates and options data (samplers by id
 * and generic, interface names, system init time) and data records that
 * name samplers, with counters scaled (see fuzz_flow_paths.h). */
#include "fuzz_flow_paths.h"

static void fields(fz_buf_t *b, int v, const uint16_t (*f)[2], size_t n) {
  for (size_t i = 0; i < n; i++) fz_field(b, v, 0, f[i][0], f[i][1]);
}

static void prelude(fz_buf_t *b, int v) {
  static const uint16_t sc9[][2] = {{1, 4}, {2, 4}};
  static const uint16_t op9[][2] = {{34, 4}, {35, 1}, {48, 1}, {49, 1}, {50, 4}, {82, 16}, {160, 8}};
  static const uint16_t a[][2] = {{302, 4}, {305, 4}, {306, 4}, {304, 1}};
  static const uint16_t c[][2] = {{10, 4}, {82, 65535}, {83, 65535}};
  static const uint16_t e[][2] = {{149, 4}, {160, 8}, {34, 4}, {35, 1}};
  static const uint16_t dt[][2] = {{8, 4}, {12, 4}, {48, 1}, {302, 4}, {1, 4}, {2, 4}, {22, 4}, {21, 4}, {34, 4},
                                   {23, 4}, {24, 4}};
  fz_msg(b, v);
  fz_set(b, v == 9 ? 1 : 3);
  if (v == 9) {
    fz_u16(b, 300);
    fz_u16(b, 8);
    fz_u16(b, 28);
    fields(b, v, sc9, 2);
    fields(b, v, op9, 7);
  } else {
    fz_u16(b, 301); fz_u16(b, 4); fz_u16(b, 1); fields(b, v, a, 4);
    fz_u16(b, 302); fz_u16(b, 3); fz_u16(b, 1); fields(b, v, c, 3);
    fz_u16(b, 303); fz_u16(b, 4); fz_u16(b, 1); fields(b, v, e, 4);
  }
  fz_set_end(b);
  fz_set(b, v == 9 ? 0 : 2);
  fz_u16(b, 310);
  fz_u16(b, 11);
  fields(b, v, dt, 11);
  fz_set_end(b);
  fz_msg_end(b, v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static fz_buf_t b9, b10;
  static const uint16_t tids[] = {300, 301, 302, 303, 310};
  if (!b9.n) {
    prelude(&b9, 9);
    prelude(&b10, 10);
  }
  fz_path_t p = {b9.b, b10.b, b9.n, b10.n, tids, 5, size && (data[0] & 1) ? BA_FLOW_RAW_COUNTERS : 0};
  return fz_run_path(&p, data, size);
}

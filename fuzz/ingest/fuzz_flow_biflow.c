/* Fuzz target: RFC 5103 biflow records (reverse elements of enterprise
 * 29305), out counters, Cisco ASA NSEL counters/events/NAT and every other
 * extended field (see fuzz_flow_paths.h); flows re-based on the receive time. */
#include "fuzz_flow_paths.h"

static void prelude(fz_buf_t *b, int v) {
  static const uint32_t bi[][3] = {{0, 8, 4},  {0, 12, 4},  {0, 4, 1},       {0, 1, 8},       {0, 2, 8},
                                   {0, 6, 2},  {29305, 1, 8}, {29305, 2, 4}, {29305, 6, 1},  {29305, 85, 8},
                                   {0, 23, 4}, {0, 24, 4},  {0, 152, 8},     {0, 153, 8},     {29305, 5, 1}};
  static const uint32_t asa[][3] = {{0, 8, 4},      {0, 12, 4},     {0, 4, 1},       {0, 231, 4},   {0, 232, 4},
                                    {0, 298, 4},    {0, 299, 4},    {0, 233, 1},     {0, 33002, 2}, {0, 40001, 4},
                                    {0, 40002, 4},  {0, 40003, 2},  {0, 40004, 2},   {0, 225, 4},   {0, 226, 4},
                                    {0, 227, 2},    {0, 228, 2},    {0, 281, 16},    {0, 282, 16},  {0, 323, 8},
                                    {0, 152, 8},    {0, 230, 1}};
  static const uint32_t ext[][3] = {{0, 27, 16}, {0, 28, 16}, {0, 9, 1},   {0, 13, 1},   {0, 15, 4},  {0, 62, 16},
                                    {0, 18, 4},  {0, 63, 16}, {0, 55, 1},  {0, 56, 6},   {0, 57, 6},  {0, 80, 6},
                                    {0, 81, 6},  {0, 58, 2},  {0, 59, 2},  {0, 61, 1},   {0, 70, 3},  {0, 71, 3},
                                    {0, 79, 3},  {0, 128, 4}, {0, 129, 4}, {0, 234, 4},  {0, 235, 4}, {0, 38, 1},
                                    {0, 39, 1},  {0, 3, 4},   {0, 149, 4}, {0, 161, 4},  {0, 154, 8}, {0, 159, 4}};
  fz_msg(b, v);
  fz_set(b, v == 9 ? 0 : 2);
  fz_u16(b, 400);
  fz_u16(b, 15);
  for (size_t i = 0; i < 15; i++) fz_field(b, v, bi[i][0], (uint16_t)bi[i][1], (uint16_t)bi[i][2]);
  fz_u16(b, 401);
  fz_u16(b, 22);
  for (size_t i = 0; i < 22; i++) fz_field(b, v, asa[i][0], (uint16_t)asa[i][1], (uint16_t)asa[i][2]);
  fz_u16(b, 402);
  fz_u16(b, 30);
  for (size_t i = 0; i < 30; i++) fz_field(b, v, ext[i][0], (uint16_t)ext[i][1], (uint16_t)ext[i][2]);
  fz_set_end(b);
  fz_msg_end(b, v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static fz_buf_t b9, b10;
  static const uint16_t tids[] = {400, 401, 402};
  if (!b9.n) {
    prelude(&b9, 9);
    prelude(&b10, 10);
  }
  fz_path_t p = {b9.b, b10.b, b9.n, b10.n, tids, 3, BA_FLOW_REBASE_TIME};
  return fz_run_path(&p, data, size);
}

/* Fuzz target: sequences of sFlow v5 datagrams (see fuzz_flows_common.h; the
 * first word of each datagram is forced to version 5). */
#include "fuzz_flows_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_flows(data, size, 0x5f5); }

/* Fuzz target: sequences of NetFlow v9 datagrams (see fuzz_flows_common.h). */
#include "fuzz_flows_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_flows(data, size, 9); }

/* bitarc bench: not built yet (placeholder until its issue lands). */
#include "cli/cli.h"

int ba_cmd_bench(int argc, char **argv) {
  (void)argc;
  (void)argv;
  ba_cli_err("bench", "not implemented yet");
  return 2;
}

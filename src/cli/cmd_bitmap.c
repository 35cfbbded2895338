/* bitarc bitmap: not built yet (placeholder until its issue lands). */
#include "cli/cli.h"

int ba_cmd_bitmap(int argc, char **argv) {
  (void)argc;
  (void)argv;
  ba_cli_err("bitmap", "not implemented yet");
  return 2;
}

/* bitarc collect: not built yet (placeholder until its issue lands). */
#include "cli/cli.h"

int ba_cmd_collect(int argc, char **argv) {
  (void)argc;
  (void)argv;
  ba_cli_err("collect", "not implemented yet");
  return 2;
}

/* bitarc verify: not built yet (placeholder until its issue lands). */
#include "cli/cli.h"

int ba_cmd_verify(int argc, char **argv) {
  (void)argc;
  (void)argv;
  ba_cli_err("verify", "not implemented yet");
  return 2;
}

/* bitarc stat: not built yet (placeholder until its issue lands). */
#include "cli/cli.h"

int ba_cmd_stat(int argc, char **argv) {
  (void)argc;
  (void)argv;
  ba_cli_err("stat", "not implemented yet");
  return 2;
}

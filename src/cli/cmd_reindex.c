/* bitarc reindex: not built yet (placeholder until its issue lands). */
#include "cli/cli.h"

int ba_cmd_reindex(int argc, char **argv) {
  (void)argc;
  (void)argv;
  ba_cli_err("reindex", "not implemented yet");
  return 2;
}

/* bitarc query: not built yet (placeholder until its issue lands). */
#include "cli/cli.h"

int ba_cmd_query(int argc, char **argv) {
  (void)argc;
  (void)argv;
  ba_cli_err("query", "not implemented yet");
  return 2;
}

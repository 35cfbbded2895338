/* bitarc ingest: not built yet (placeholder until its issue lands). */
#include "cli/cli.h"

int ba_cmd_ingest(int argc, char **argv) {
  (void)argc;
  (void)argv;
  ba_cli_err("ingest", "not implemented yet");
  return 2;
}

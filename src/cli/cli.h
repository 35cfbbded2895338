/* The bitarc command: one function per subcommand, one file each (cmd_<name>.c).
 * Conventions: exit 0 on success, 1 when the work ran but found a problem (e.g.
 * verify found damage), 2 for bad usage or bad input, which is named in the
 * message. Messages go to stderr prefixed "bitarc <cmd>: ". */
#ifndef BA_CLI_H
#define BA_CLI_H

#include <stdio.h>

int ba_cmd_bitmap(int argc, char **argv);
int ba_cmd_ingest(int argc, char **argv);
int ba_cmd_collect(int argc, char **argv);
int ba_cmd_query(int argc, char **argv);
int ba_cmd_stat(int argc, char **argv);
int ba_cmd_reindex(int argc, char **argv);
int ba_cmd_verify(int argc, char **argv);
int ba_cmd_bench(int argc, char **argv);

/* printf-style error to stderr with the "bitarc <cmd>: " prefix. */
void ba_cli_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

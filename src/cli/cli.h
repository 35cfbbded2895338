/* The bitarc command: one function per subcommand, one file each (cmd_<name>.c).
 * Conventions: exit 0 on success, 1 when the work ran but found a problem (e.g.
 * verify found damage), 2 for bad usage or bad input, which is named in the
 * message. Messages go to stderr prefixed "bitarc <cmd>: ". */
#ifndef BA_CLI_H
#define BA_CLI_H

#include <stdio.h>

#include "bitarc/gpu.h"

int ba_cmd_bitmap(int argc, char **argv);
int ba_cmd_ingest(int argc, char **argv);
int ba_cmd_collect(int argc, char **argv);
int ba_cmd_import(int argc, char **argv);
int ba_cmd_query(int argc, char **argv);
int ba_cmd_graph(int argc, char **argv);
int ba_cmd_stat(int argc, char **argv);
int ba_cmd_reindex(int argc, char **argv);
int ba_cmd_verify(int argc, char **argv);
int ba_cmd_bench(int argc, char **argv);
int ba_cmd_expire(int argc, char **argv);

/* printf-style error to stderr with the "bitarc <cmd>: " prefix. */
void ba_cli_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- shared by ingest and collect (defined in cmd_ingest.c) ---- */
struct ba_store_opts;
struct ba_ingest_counts;
struct ba_flow_template_info;
/* Store options both commands accept (getopt_long codes and table entries). */
enum {
  BA_CLI_OPT_CODEC = 1000, BA_CLI_OPT_COMPRESS, BA_CLI_OPT_SLICE, BA_CLI_OPT_REORDER, BA_CLI_OPT_THREADS,
  BA_CLI_OPT_BLOCK_ROWS, BA_CLI_OPT_TIME_BIN, BA_CLI_OPT_OLSH_MEM, BA_CLI_OPT_SEGMENT_ROWS
};
#define BA_CLI_STORE_LONGOPTS                                                                            \
  {"codec", required_argument, 0, BA_CLI_OPT_CODEC}, {"compress", required_argument, 0, BA_CLI_OPT_COMPRESS}, \
  {"slice", required_argument, 0, BA_CLI_OPT_SLICE}, {"reorder", required_argument, 0, BA_CLI_OPT_REORDER},   \
  {"threads", required_argument, 0, BA_CLI_OPT_THREADS},                                                   \
  {"block-rows", required_argument, 0, BA_CLI_OPT_BLOCK_ROWS},                                             \
  {"time-bin", required_argument, 0, BA_CLI_OPT_TIME_BIN}, {"olsh-mem", required_argument, 0, BA_CLI_OPT_OLSH_MEM}, \
  {"segment-rows", required_argument, 0, BA_CLI_OPT_SEGMENT_ROWS}
#define BA_CLI_STORE_HELP                                                                                \
  "store options:\n"                                                                                     \
  "  --codec NAME        index codec: wah32, wah64, plwah, compax, masc (default: store's)\n"              \
  "  --compress NAME     column blocks: none (default; values stay addressable), zstd, lz4, lzo\n"                                 \
  "  --slice DUR         time slice per segment: 3600, 1h, 15m, 1d (default 1h)\n"                        \
  "  --reorder none|olsh reordering before archiving (default none); olsh buffers records (oLSH)\n"    \
  "                      and writes each full buffer clustered by destination, source and\n"            \
  "                      ports: a smaller store and index, about 182 MB per open slice\n"               \
  "  --olsh-mem N        oLSH buffer in records (default 300000; 100000 keeps most of the gain)\n"       \
  "  --threads N         index/compression threads (default 2)\n"                                         \
  "  --block-rows N      rows per column block (default 4000)\n"                                         \
  "  --time-bin DUR      start-time index bin width (default 60 s)\n"                                     \
  "  --segment-rows N    rows per segment at most (default 33554432): a busier slice continues\n"         \
  "                      in the next segment, which bounds the open slice's index in memory\n"
/* Applies one of the store options; 0, or 2 after an error naming cmd. */
int ba_cli_store_opt(const char *cmd, int opt, const char *arg, struct ba_store_opts *o);
/* Opens the store writer of --store DIR; on failure prints why, naming cmd
 * and DIR, and returns 2 (*w stays NULL). */
struct ba_store_writer;
int ba_cli_writer_open(const char *cmd, const char *dir, const struct ba_store_opts *o, struct ba_store_writer **w);
/* Closes *w (NULL: nothing) and sets it NULL; 0, or 2 after an error naming
 * cmd and DIR. */
int ba_cli_writer_close(const char *cmd, const char *dir, struct ba_store_writer **w);
/* --report text|json: sets *json; 0, or 2 after an error naming cmd. */
int ba_cli_parse_report(const char *cmd, const char *arg, int *json);
/* "1200 s", "1h", "15m", "2d", "2w" -> seconds; -1 if not a duration. */
long ba_cli_parse_seconds(const char *s);
/* Counts as text ("records 12, dropped 3 (unknown-template 2 data sets, ...)"). */
/* ---- option values (args.c): 0, or -1 if the text is not one ---- */
#include <stdint.h>
/* A decimal whole number, nothing else. */
int ba_cli_parse_u64(const char *s, uint64_t *out);
/* "500G", "20M", "1048576", "2TB" (K/M/G/T = powers of 1024) -> bytes (for
 * expire's and collect's retention limits). */
int ba_cli_parse_bytes(const char *s, uint64_t *out);
/* --opt ARG as a whole number in [lo, hi]; 0, or 2 after an error naming
 * the option and the value. */
int ba_cli_opt_u64(const char *cmd, const char *opt, const char *arg, uint64_t lo, uint64_t hi, uint64_t *out);
void ba_cli_print_counts(FILE *f, const struct ba_ingest_counts *c);
/* Counts as a JSON object. */
void ba_cli_json_counts(FILE *f, const struct ba_ingest_counts *c);
void ba_cli_json_string(FILE *f, const char *s);
/* Per-template counts (ba_flow_decoder_templates): JSON objects separated by
 * commas (no brackets), or one indented text line per template. */
void ba_cli_json_templates(FILE *f, const struct ba_flow_template_info *t, size_t n);
void ba_cli_print_templates(FILE *f, const struct ba_flow_template_info *t, size_t n);

/* Parses --device NAME (cpu, omp, gpu) into *dev; on a bad name prints why
 * and returns 2 (the exit status for the caller). */
int ba_cli_device_name(const char *cmd, const char *name, ba_device_t *dev);
/* Checks that --device NAME (cpu, omp, gpu) can run here, printing the reason
 * when not (e.g. "no CUDA device: ..."), and registers the omp/gpu pipelines
 * with the batch index builder. 0 = usable, 2 = exit status for the caller. */
int ba_cli_device_check(const char *cmd, const char *name);
/* Range ORs on a device for ba_query_exec_opts.range_or: operands are turned
 * into wah64 when needed (the range-query paper's format), ORed by
 * ba_gpu_range and turned back into `codec`: same words as the CPU path. */
#include "bitarc/bitmap.h"
int ba_cli_device_range_open(const char *name, void **ctx);
int ba_cli_device_range_or(void *ctx, const ba_bitmap_t *const *bms, size_t n, uint64_t rows,
                           ba_codec_t codec, ba_bitmap_t **out);
void ba_cli_device_range_close(void *ctx);

#endif

/* bitarc: entry point and subcommand dispatch. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bitarc/bitarc.h"
#include "cli/cli.h"

typedef struct {
  const char *name;
  int (*fn)(int, char **);
  const char *summary;
} command_t;

static const command_t g_commands[] = {
  {"ingest", ba_cmd_ingest, "read pcap/pcapng captures or NetFlow/IPFIX exports into a store"},
  {"import", ba_cmd_import, "read nfdump files (nfcapd.*, layout 1 and 2, any compression) into a store"},
  {"collect", ba_cmd_collect, "receive NetFlow v5/v9 and IPFIX over UDP into a store"},
  {"query", ba_cmd_query, "find records with an nfdump-style filter, answered from the index"},
  {"graph", ba_cmd_graph, "flows/packets/bytes per interval for filters, as csv, SVG or PNG (nfsen)"},
  {"stat", ba_cmd_stat, "show a store's segments, time range, records and index sizes"},
  {"verify", ba_cmd_verify, "check every block of every segment (CRC32C, lengths, structure)"},
  {"expire", ba_cmd_expire, "delete the oldest segments beyond an age or size limit (nfexpire)"},
  {"reindex", ba_cmd_reindex, "rebuild a store's bitmap indexes (other codec or device)"},
  {"bitmap", ba_cmd_bitmap, "encode/decode one bitmap with a codec (wah32, plwah, masc, ...)"},
  {"bench", ba_cmd_bench, "built-in benchmarks (index build, range queries)"},
};

void ba_cli_err(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "bitarc %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

static void usage(FILE *f) {
  fprintf(f,
          "bitarc %s - network-traffic archive indexed by compressed bitmaps\n\n"
          "usage: bitarc <command> [options]   (bitarc <command> --help for details)\n\n"
          "commands:\n",
          ba_version());
  for (size_t i = 0; i < sizeof(g_commands) / sizeof(g_commands[0]); i++)
    fprintf(f, "  %-8s  %s\n", g_commands[i].name, g_commands[i].summary);
  fprintf(f,
          "\nexample:\n"
          "  bitarc ingest --store /tmp/st capture.pcap\n"
          "  bitarc query --store /tmp/st 'src net 10.4.0.0/16 and dst port 445'\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("bitarc %s\n", ba_version());
    return 0;
  }
  for (size_t i = 0; i < sizeof(g_commands) / sizeof(g_commands[0]); i++)
    if (!strcmp(argv[1], g_commands[i].name)) return g_commands[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "bitarc: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}

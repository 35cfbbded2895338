/* nffile_gen: writes nfdump files for the import tests (tests/ingest/
 * nffile_writer.h does the writing):
 *   nffile_gen v1 OUT COMP SEED N       random layout-1 (nfdump 1.6) file
 *   nffile_gen v2 OUT COMP SEED N       random layout-2 file of V3 records
 *   nffile_gen recompress IN OUT COMP   the same blocks with another codec
 * COMP: none, lzo, bz2, lz4, zstd. Debian's nfdump 1.7.1 writes only layout 2
 * and has no ZSTD; these files let the tests hold those cases against
 * nfdump's reader (layout 1) or against the file they were made from. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nffile_writer.h"

static int comp_code(const char *s) {
  static const char *const n[] = {"none", "lzo", "bz2", "lz4", "zstd"};
  for (int i = 0; i < 5; i++)
    if (!strcmp(s, n[i])) return i;
  return -1;
}

static int write_file(const char *path, const uint8_t *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(p, 1, n, f) != n || fclose(f)) {
    perror(path);
    return 1;
  }
  return 0;
}

static int gen(int layout, const char *out, int comp, unsigned long seed, long n) {
  g_nfw_rng ^= seed * 0x9E3779B97F4A7C15ull + 1;
  nfw_file_t f;
  nfw_begin(&f, layout, comp);
  nfw_exp_t e = {.id = 42, .sampling = 10, .sampling_algo = 0, .present = 1};
  ba_addr_set_v4(e.ip, 0xC0000201);
  nfw_exporter(&f, 1, 0xC0000201, 42);
  nfw_sampler(&f, 1, 10, 0);
  uint16_t maps[8][64];
  int nmap[8];
  ba_record_t r;
  for (long i = 0; i < n; i++) {
    if (layout == 1) {
      unsigned m = (unsigned)(i / 37) % 8;
      if (i % 37 == 0 && i / 37 < 8) {  /* a new map every 37 flows, re-defined ids later reuse it */
        nmap[m] = nfw_rand_v1_map(maps[m]);
        nfw_extmap(&f, (uint16_t)m, maps[m], nmap[m]);
      }
      nfw_v1_flow(&f, (uint16_t)m, maps[m], nmap[m], (unsigned)(nfw_rand() & 7), 1, &e, &r);
    } else {
      uint16_t ids[32];
      int k = nfw_rand_v3_list(ids);
      nfw_v3_flow(&f, ids, k, (int)(nfw_rand() & 1), 1, &e, &r);
    }
    if (f.nrec >= 250) nfw_block(&f, 0);
  }
  nfw_end(&f);
  int rc = write_file(out, f.out.p, f.out.n);
  free(f.out.p);
  return rc;
}

int main(int argc, char **argv) {
  if (argc == 6 && (!strcmp(argv[1], "v1") || !strcmp(argv[1], "v2"))) {
    int comp = comp_code(argv[3]);
    if (comp < 0 || (argv[1][1] == '1' && comp == NFW_ZSTD)) {
      fprintf(stderr, "nffile_gen: bad compression %s\n", argv[3]);
      return 2;
    }
    return gen(argv[1][1] - '0', argv[2], comp, strtoul(argv[4], NULL, 10), strtol(argv[5], NULL, 10));
  }
  if (argc == 5 && !strcmp(argv[1], "recompress")) {
    int comp = comp_code(argv[4]);
    FILE *f = fopen(argv[2], "rb");
    if (comp < 0 || !f) {
      fprintf(stderr, "nffile_gen: cannot read %s or bad compression %s\n", argv[2], argv[4]);
      return 2;
    }
    nfw_buf_t in = {0}, out = {0};
    uint8_t buf[65536];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0) nfw_put(&in, buf, k);
    fclose(f);
    if (nfw_recompress(in.p, in.n, comp, &out)) {
      fprintf(stderr, "nffile_gen: %s does not parse as an nfdump file\n", argv[2]);
      return 1;
    }
    int rc = write_file(argv[3], out.p, out.n);
    free(in.p);
    free(out.p);
    return rc;
  }
  fprintf(stderr, "usage: nffile_gen v1|v2 OUT COMP SEED N | recompress IN OUT COMP\n");
  return 2;
}

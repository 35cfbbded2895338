/* bitarc bitmap: encode a bit string with one codec, decode words back to bits,
 * and combine two bit strings with a boolean operation in the compressed domain.
 * Text in, text out, so the codecs can be checked by hand against the papers. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bitarc/bitmap.h"
#include "cli/cli.h"

#define CMD "bitmap"

static void usage(FILE *f) {
  fprintf(f,
    "usage: bitarc bitmap encode --codec NAME  < bits\n"
    "       bitarc bitmap decode --codec NAME --rows N  < words\n"
    "       bitarc bitmap op AND|OR|XOR|ANDNOT|NOT --codec NAME [--out-codec NAME]  < bits\n"
    "\n"
    "Encodes one bitmap with a compressed-bitmap codec, or decodes it back.\n"
    "\n"
    "  encode   reads '0'/'1' characters from stdin (whitespace is ignored); each\n"
    "           character is one row, in order (row 0 first). Prints the encoded\n"
    "           words, one upper-case hex word per line: 8 digits for the 32-bit\n"
    "           codecs, 16 for wah64.\n"
    "  decode   reads hex words (whitespace separated, optional 0x) from stdin and\n"
    "           prints the N-row bit string on one line. Words that are not a valid\n"
    "           encoding of exactly N rows are rejected.\n"
    "  op       reads two bit strings from stdin, one per line (one for NOT),\n"
    "           encodes each with --codec, runs the operation on the compressed\n"
    "           words and prints the result's words (in --out-codec, default\n"
    "           --codec), then a line '# ' followed by its bits. Operands of\n"
    "           different lengths are zero-padded to the longer one.\n"
    "\n"
    "options:\n"
    "  -c, --codec NAME      wah32, wah64, plwah, compax, masc or masc-qt (required)\n"
    "  -n, --rows N          rows the words describe (decode: required; no default)\n"
    "  -o, --out-codec NAME  codec of an op's result (op; default: --codec)\n"
    "  -h, --help            this text\n"
    "\n"
    "Rows are packed MSB-first: with 32-bit words a group holds 31 rows and its\n"
    "first row is payload bit 30 (decision D-1 of the codec spec).\n"
    "\n"
    "examples:\n"
    "  # The bitmap of the MASC paper's Fig. 5 (7 groups of 31 rows, 217 rows);\n"
    "  # MASC prints Fig. 11's words 0000002D 80000026 48000059 0000002E.\n"
    "  printf '%%s' 0000000000000000000000000000000 0000000000000111111111111111111 \\\n"
    "    1111111111111111111000000000000 0000000000000000000000000000000 \\\n"
    "    0000000000000000000000000000000 0000000000000111100000000000000 \\\n"
    "    0000000000000000000000000000000 | bitarc bitmap encode --codec masc\n"
    "\n"
    "  # Back to the 217 bits:\n"
    "  echo 0000002D 80000026 48000059 0000002E | bitarc bitmap decode --codec masc --rows 217\n"
    "\n"
    "  # WAH32 of 62 rows, all ones except row 40 (prints C0000001 7FDFFFFF):\n"
    "  { printf '1%%.0s' $(seq 40); printf 0; printf '1%%.0s' $(seq 21); } |\n"
    "    bitarc bitmap encode --codec wah32\n"
    "\n"
    "  # AND of two bitmaps in PLWAH, result in WAH32:\n"
    "  printf '0110\\n0101\\n' | bitarc bitmap op AND --codec plwah --out-codec wah32\n"
    "\n"
    "exit status: 0 on success, 2 for bad usage or bad input (named in the message),\n"
    "1 if the library failed (e.g. out of memory).\n");
}

/* Library failure: input errors are reported by the callers, this is the rest. */
static int lib_fail(const char *what, int rc) {
  ba_cli_err(CMD, "%s failed: %s", what, ba_strerror(rc));
  return rc == BA_ERR_NOMEM ? 1 : 2;
}

static void describe_char(int c, char *buf, size_t cap) {
  if (c >= 0x21 && c < 0x7F) snprintf(buf, cap, "'%c'", c);
  else snprintf(buf, cap, "byte 0x%02X", (unsigned)c & 0xFFu);
}

/* Input position, for messages: byte offset, line and column (1-based). */
typedef struct {
  FILE *in;
  uint64_t pos, line, col;
} reader_t;

/* Appends the '0'/'1' rows read from r->in to `bm` until EOF or, with
 * stop_at_line, the end of a line that held at least one bit; then finishes
 * `bm` at *nrows rows. Returns 0, or the exit status after reporting the
 * problem (2 = bad input, 1 = library failure). *eof tells whether input ended. */
static int read_bits(reader_t *r, ba_bitmap_t *bm, int stop_at_line, int *eof, uint64_t *nrows) {
  uint64_t acc = 0, total = 0;
  unsigned nacc = 0;
  int c, rc;
  *eof = 0;
  for (;;) {
    c = getc(r->in);
    if (c == EOF) {
      *eof = 1;
      break;
    }
    r->pos++;
    r->col++;
    if (c == '\n') {
      r->line++;
      r->col = 0;
      if (stop_at_line && total + nacc > 0) break;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f') continue;
    if (c != '0' && c != '1') {
      char d[32];
      describe_char(c, d, sizeof d);
      ba_cli_err(CMD, "bad character %s at line %" PRIu64 ", column %" PRIu64 " (byte %" PRIu64
                 " of the input): only '0', '1' and whitespace are allowed", d, r->line, r->col,
                 r->pos);
      return 2;
    }
    acc = (acc << 1) | (uint64_t)(c - '0');
    if (++nacc == 64) {
      if ((rc = ba_bitmap_append_bits(bm, acc, 64)) < 0) return lib_fail("appending rows", rc);
      total += 64;
      acc = 0;
      nacc = 0;
    }
  }
  if (ferror(r->in)) {
    ba_cli_err(CMD, "cannot read stdin: %s", strerror(errno));
    return 2;
  }
  if (nacc > 0 && (rc = ba_bitmap_append_bits(bm, acc, nacc)) < 0)
    return lib_fail("appending rows", rc);
  total += nacc;
  if ((rc = ba_bitmap_finish(bm, total)) < 0) return lib_fail("finishing the bitmap", rc);
  *nrows = total;
  return 0;
}

static int print_words(const ba_bitmap_t *bm) {
  size_t n = 0;
  const void *w = ba_bitmap_words(bm, &n);
  if (ba_codec_word_bits(ba_bitmap_codec(bm)) == 64) {
    const uint64_t *p = (const uint64_t *)w;
    for (size_t i = 0; i < n; i++) printf("%016" PRIX64 "\n", p[i]);
  } else {
    const uint32_t *p = (const uint32_t *)w;
    for (size_t i = 0; i < n; i++) printf("%08" PRIX32 "\n", p[i]);
  }
  return 0;
}

static int print_run(void *ctx, int value, uint64_t start, uint64_t nrows) {
  (void)ctx;
  (void)start;
  char buf[4096];
  memset(buf, value ? '1' : '0', sizeof buf);
  while (nrows > 0) {
    size_t k = nrows < sizeof buf ? (size_t)nrows : sizeof buf;
    if (fwrite(buf, 1, k, stdout) != k) return BA_ERR_IO;
    nrows -= k;
  }
  return 0;
}

static int print_bits(const ba_bitmap_t *bm) {
  int rc = ba_bitmap_foreach_run(bm, print_run, NULL);
  if (rc < 0) return lib_fail("walking the bitmap's runs", rc);
  putchar('\n');
  return 0;
}

static int finish_output(void) {
  if (fflush(stdout) != 0 || ferror(stdout)) {
    ba_cli_err(CMD, "cannot write stdout: %s", strerror(errno));
    return 1;
  }
  return 0;
}

static int do_encode(ba_codec_t codec) {
  ba_bitmap_t *bm = NULL;
  int rc = ba_bitmap_create(codec, &bm);
  if (rc < 0) return lib_fail("creating the bitmap", rc);
  reader_t r = {stdin, 0, 1, 0};
  int eof;
  uint64_t nrows;
  int st = read_bits(&r, bm, 0, &eof, &nrows);
  if (st == 0) st = print_words(bm);
  ba_bitmap_free(bm);
  return st ? st : finish_output();
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Reads every hex word of stdin into a growable array of 32- or 64-bit words. */
static int read_words(ba_codec_t codec, void **out, size_t *nout) {
  unsigned bits = ba_codec_word_bits(codec), maxdig = bits / 4;
  size_t n = 0, cap = 0;
  uint8_t *words = NULL;
  char tok[64];
  size_t tlen = 0, tokno = 0;
  int overlong = 0, c;
  *out = NULL;
  *nout = 0;
  for (;;) {
    c = getc(stdin);
    int space = c == EOF || c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' ||
                c == '\f' || c == ',';
    if (!space) {
      if (tlen < sizeof tok - 1) tok[tlen++] = (char)c;
      else overlong = 1;
      continue;
    }
    if (tlen > 0 || overlong) {
      tok[tlen] = '\0';
      tokno++;
      const char *h = tok;
      if (h[0] == '0' && (h[1] == 'x' || h[1] == 'X')) h += 2;
      size_t hl = strlen(h);
      for (size_t i = 0; i < hl; i++) {
        if (hexval((unsigned char)h[i]) < 0) {
          char dc[32];
          describe_char((unsigned char)h[i], dc, sizeof dc);
          ba_cli_err(CMD, "word %zu '%.40s%s' is not hex: %s at its character %zu", tokno, tok,
                     overlong ? "..." : "", dc, (size_t)(h - tok) + i + 1);
          free(words);
          return 2;
        }
      }
      if (hl == 0) {
        ba_cli_err(CMD, "word %zu '%s' has no hex digits", tokno, tok);
        free(words);
        return 2;
      }
      if (overlong || hl > maxdig) {
        ba_cli_err(CMD, "word %zu '%.40s%s' is too long for %s: at most %u hex digits", tokno, tok,
                   overlong ? "..." : "", ba_codec_name(codec), maxdig);
        free(words);
        return 2;
      }
      uint64_t v = 0;
      for (size_t i = 0; i < hl; i++) v = (v << 4) | (uint64_t)hexval((unsigned char)h[i]);
      if (n == cap) {
        cap = cap ? cap * 2 : 64;
        uint8_t *nw = realloc(words, cap * (bits / 8));
        if (!nw) {
          free(words);
          return lib_fail("reading words", BA_ERR_NOMEM);
        }
        words = nw;
      }
      if (bits == 64) {
        memcpy(words + n * 8, &v, 8);
      } else {
        uint32_t v32 = (uint32_t)v;
        memcpy(words + n * 4, &v32, 4);
      }
      n++;
      tlen = 0;
      overlong = 0;
    }
    if (c == EOF) break;
  }
  if (ferror(stdin)) {
    ba_cli_err(CMD, "cannot read stdin: %s", strerror(errno));
    free(words);
    return 2;
  }
  *out = words;
  *nout = n;
  return 0;
}

static int do_decode(ba_codec_t codec, uint64_t nrows) {
  void *words;
  size_t n;
  int st = read_words(codec, &words, &n);
  if (st) return st;
  ba_bitmap_t *bm = NULL;
  int rc = ba_bitmap_from_words(codec, words ? words : (const void *)"", n, nrows, &bm);
  free(words);
  if (rc == BA_ERR_CORRUPT || rc == BA_ERR_TRUNCATED || rc == BA_ERR_INVALID ||
      rc == BA_ERR_OVERFLOW) {
    ba_cli_err(CMD, "the %zu word%s on stdin %s not a valid %s bitmap of %" PRIu64
               " rows (corrupt, truncated, or another row count): %s", n, n == 1 ? "" : "s",
               n == 1 ? "is" : "are", ba_codec_name(codec), nrows, ba_strerror(rc));
    return 2;
  }
  if (rc < 0) return lib_fail("decoding the words", rc);
  st = print_bits(bm);
  ba_bitmap_free(bm);
  return st ? st : finish_output();
}

static int parse_op(const char *s, int *op) {
  static const struct { const char *name; int op; } ops[] = {
    {"and", BA_OP_AND}, {"or", BA_OP_OR}, {"xor", BA_OP_XOR}, {"andnot", BA_OP_ANDNOT},
    {"not", -1}};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (!strcasecmp(s, ops[i].name)) {
      *op = ops[i].op;
      return 0;
    }
  return -1;
}

static int do_op(const char *opname, ba_codec_t codec, ba_codec_t out_codec) {
  int op;
  if (parse_op(opname, &op) < 0) {
    ba_cli_err(CMD, "unknown operation '%s' (AND, OR, XOR, ANDNOT or NOT)", opname);
    return 2;
  }
  int nin = op < 0 ? 1 : 2;
  ba_bitmap_t *in[2] = {NULL, NULL}, *res = NULL;
  reader_t r = {stdin, 0, 1, 0};
  int st = 0, rc, eof = 0;
  uint64_t rows[2] = {0, 0};
  for (int i = 0; i < nin && st == 0; i++) {
    if ((rc = ba_bitmap_create(codec, &in[i])) < 0) st = lib_fail("creating a bitmap", rc);
    else if (eof) {
      ba_cli_err(CMD, "%s needs two bit strings on stdin, one per line; found one", opname);
      st = 2;
    } else st = read_bits(&r, in[i], 1, &eof, &rows[i]);
  }
  if (st == 0) {
    if (op < 0) rc = ba_bitmap_not(in[0], out_codec, &res);
    else rc = ba_bitmap_op((ba_op_t)op, in[0], in[1], out_codec, &res);
    if (rc < 0) st = lib_fail("the operation", rc);
  }
  if (st == 0) {
    print_words(res);
    fputs("# ", stdout);
    st = print_bits(res);
  }
  ba_bitmap_free(in[0]);
  ba_bitmap_free(in[1]);
  ba_bitmap_free(res);
  return st ? st : finish_output();
}

static int codec_arg(const char *s, ba_codec_t *out) {
  if (ba_codec_from_name(s, out) == 0) return 0;
  ba_cli_err(CMD, "unknown codec '%s' (wah32, wah64, plwah, compax, masc or masc-qt)", s);
  return -1;
}

int ba_cmd_bitmap(int argc, char **argv) {
  static const struct option longopts[] = {
    {"codec", required_argument, NULL, 'c'},
    {"rows", required_argument, NULL, 'n'},
    {"out-codec", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};
  const char *codec_s = NULL, *out_s = NULL, *rows_s = NULL;
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "c:n:o:h", longopts, NULL)) != -1) {
    switch (c) {
      case 'c': codec_s = optarg; break;
      case 'n': rows_s = optarg; break;
      case 'o': out_s = optarg; break;
      case 'h': usage(stdout); return 0;
      case ':':
        ba_cli_err(CMD, "option '%s' needs a value (see bitarc bitmap --help)", argv[optind - 1]);
        return 2;
      default:
        ba_cli_err(CMD, "unknown option '%s' (see bitarc bitmap --help)", argv[optind - 1]);
        return 2;
    }
  }
  if (optind >= argc) {
    ba_cli_err(CMD, "missing action: encode, decode or op (see bitarc bitmap --help)");
    return 2;
  }
  const char *action = argv[optind++];
  int is_op = !strcmp(action, "op");
  if (strcmp(action, "encode") && strcmp(action, "decode") && !is_op) {
    ba_cli_err(CMD, "unknown action '%s': encode, decode or op (see bitarc bitmap --help)", action);
    return 2;
  }
  const char *opname = NULL;
  if (is_op) {
    if (optind >= argc) {
      ba_cli_err(CMD, "op needs an operation: AND, OR, XOR, ANDNOT or NOT");
      return 2;
    }
    opname = argv[optind++];
  }
  if (optind < argc) {
    ba_cli_err(CMD, "unexpected argument '%s' (the input comes from stdin)", argv[optind]);
    return 2;
  }
  if (!codec_s) {
    ba_cli_err(CMD, "%s needs --codec NAME (wah32, wah64, plwah, compax, masc or masc-qt)", action);
    return 2;
  }
  ba_codec_t codec, out_codec;
  if (codec_arg(codec_s, &codec) < 0) return 2;
  out_codec = codec;
  if (out_s && codec_arg(out_s, &out_codec) < 0) return 2;
  if (out_s && !is_op) {
    ba_cli_err(CMD, "--out-codec applies to op only");
    return 2;
  }
  if (!strcmp(action, "decode")) {
    uint64_t nrows;
    if (!rows_s) {
      ba_cli_err(CMD, "decode needs --rows N, the number of rows the words describe");
      return 2;
    }
    if (ba_cli_parse_u64(rows_s, &nrows) < 0) {
      ba_cli_err(CMD, "--rows '%s' is not a non-negative decimal number", rows_s);
      return 2;
    }
    return do_decode(codec, nrows);
  }
  if (rows_s) {
    ba_cli_err(CMD, "--rows applies to decode only (encode counts the characters)");
    return 2;
  }
  return is_op ? do_op(opname, codec, out_codec) : do_encode(codec);
}

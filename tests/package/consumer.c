/* A program built against an installed libbitarc: writes 1000 flows (port 80 on
 * every third row), reopens the store and counts `dst port 80`. */
#include <bitarc/bitarc.h>
#include <stdio.h>
#include <string.h>

static int sink(void *ctx, const ba_record_t *r, size_t n) { (void)ctx; (void)r; (void)n; return 0; }

int main(int argc, char **argv) {
  if (argc != 2) return fprintf(stderr, "usage: consumer DIR\n"), 2;
  ba_store_opts_t o; ba_store_opts_init(&o);
  ba_store_writer_t *w; ba_store_t *s; ba_query_t *q;
  ba_query_exec_opts_t x; ba_query_exec_opts_init(&x); x.count_only = 1;
  ba_query_stats_t st; memset(&st, 0, sizeof st);
  if (ba_store_writer_open(argv[1], &o, &w) < 0) return fprintf(stderr, "open %s failed\n", argv[1]), 1;
  for (uint32_t i = 0; i < 1000; i++) {
    ba_record_t r; memset(&r, 0, sizeof r);
    r.kind = BA_REC_FLOW; r.ipver = 4; r.proto = 6; r.packets = 1; r.bytes = 60;
    r.first_ns = r.last_ns = 1700000000000000000ull + i * 1000000000ull;
    ba_addr_set_v4(r.src, 0x0a000001u + i); ba_addr_set_v4(r.dst, 0xc0000207u);
    r.dst_port = i % 3 == 0 ? 80 : 443;
    if (ba_store_writer_append(w, &r, 1) < 0) return 1;
  }
  if (ba_store_writer_close(w) < 0 || ba_store_open(argv[1], &s) < 0 || ba_query_create(&q) < 0) return 1;
  if (ba_query_compile(q, "dst port 80") < 0 || ba_query_run(q, s, &x, sink, NULL, &st) < 0) return 1;
  printf("bitarc %s: %llu of 1000 flows match 'dst port 80'\n", ba_version(), (unsigned long long)st.rows_matched);
  ba_query_free(q); ba_store_close(s);
  return st.rows_matched == 334 ? 0 : 1;
}

/* nfdump's file format, as read by bitarc import (nffile_read.c: file and
 * blocks, nffile_v1.c: layout-1 records with extension maps, nffile_v3.c:
 * layout-2 "V3" records with elements). Layout from nfdump's own headers
 * (nffileV2.h, nffile.h, nfx.h, nfxV3.h, exporter.h of nfdump 1.6/1.7),
 * re-stated here as offsets; no nfdump code is used. nfdump writes every
 * integer in the host's byte order; the magic 0xA50C read little-endian tells
 * that the file came from a little-endian host (the only kind read here). */
#ifndef BA_NFFILE_INTERNAL_H
#define BA_NFFILE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "bitarc/ingest.h"

#define NF_MAGIC 0xA50C
#define NF_LAYOUT_1 1
#define NF_LAYOUT_2 2

/* Layout 1 file header: magic u16, version u16, flags u32, NumBlocks u32,
 * ident char[128]; then a 136-byte stat record; then the blocks. */
#define NF_V1_HEADER_LEN 140
#define NF_V1_STAT_LEN 136
#define NF_V1_FLAG_LZO 0x01
#define NF_V1_FLAG_BZ2 0x08
#define NF_V1_FLAG_LZ4 0x10
/* Layout 2 file header: magic u16, version u16, nfdversion u32, created
 * i64, compression u8, encryption u8, appendixBlocks u16, creator/unused
 * u32, offAppendix i64, BlockSize u32, NumBlocks u32; then the blocks, then
 * the appendix blocks (ident, stat record), compressed like the data. */
#define NF_V2_HEADER_LEN 40

/* Compression codes of layout 2 (layout 1 flags map onto them). */
#define NF_COMP_NONE 0
#define NF_COMP_LZO 1
#define NF_COMP_BZ2 2
#define NF_COMP_LZ4 3
#define NF_COMP_ZSTD 4

/* Block header (both layouts): NumRecords u32, size u32 (payload bytes as
 * stored), type u16, flags u16. */
#define NF_BLOCK_HEADER_LEN 12
#define NF_BLOCK_TYPE_1 1 /* nfdump 1.5: unsupported by nfdump 1.7 too */
#define NF_BLOCK_TYPE_2 2 /* nfdump 1.6 records */
#define NF_BLOCK_TYPE_3 3 /* nfdump 1.7 records */
#define NF_BLOCK_TYPE_4 4 /* array block (nfdump internal tables) */
/* Largest decompressed block accepted (nfdump's own buffers are 5 MiB). */
#define NF_BLOCK_MAX (16u << 20)

/* Record types (record header: type u16, size u16 incl. header). */
#define NF_REC_COMMON_V0 1
#define NF_REC_EXTMAP 2
#define NF_REC_PORT_HISTO 3
#define NF_REC_BPP_HISTO 4
#define NF_REC_LEGACY_1 5
#define NF_REC_LEGACY_2 6
#define NF_REC_EXPORTER 7
#define NF_REC_EXPORTER_STAT 8
#define NF_REC_SAMPLER_V0 9
#define NF_REC_COMMON 10
#define NF_REC_V3 11
#define NF_REC_NBAR 12
#define NF_REC_IFNAME 13
#define NF_REC_VRFNAME 14
#define NF_REC_SAMPLER 15
#define NF_REC_IDENT 0x8001
#define NF_REC_STAT 0x8002

/* Exporters and samplers seen in a file, by nfdump's internal sysid. */
typedef struct nf_exporter {
  uint8_t ip[16];       /* 16-byte form of record.h */
  uint32_t id;          /* source id / observation domain */
  uint32_t sampling;    /* 1 in N from the exporter's generic sampler; 0 none */
  uint16_t sampling_algo;
  uint8_t present;
} nf_exporter_t;

/* One extension map of layout 1: the extension ids in record order. */
typedef struct nf_extmap {
  uint16_t n;
  uint16_t ids[64];
  uint8_t present;
} nf_extmap_t;

/* A sparse table keyed by a 16-bit id (exporter sysid, extension map id):
 * a slot array (allocated on first insert) pointing into a dense vector, so
 * a file with three exporters costs a few hundred KiB, not 65536 entries. */
typedef struct nf_table {
  uint32_t *slot;   /* 65536 entries: index + 1 into items, 0 = absent */
  uint8_t *items;
  size_t n, cap, elem;
} nf_table_t;
/* The entry for key, created zeroed when create is set; NULL when absent
 * (or when memory ran out: *nomem is set then). */
void *nf_table_get(nf_table_t *t, uint16_t key, int create, int *nomem);
void nf_table_free(nf_table_t *t);

/* Decoding state for one file. */
typedef struct nf_ctx {
  const char *name;               /* file name for messages */
  ba_nffile_result_t *res;
  nf_table_t exporters;           /* nf_exporter_t by sysid */
  nf_table_t maps;                /* nf_extmap_t by map id (layout 1) */
  ba_record_t *batch;
  size_t nbatch, cap;
  ba_record_sink_fn fn;
  void *sink_ctx;
  uint64_t block_no;              /* 1-based data block being decoded */
} nf_ctx_t;

/* Counts one dropped unit with its reason and, for the first drops, keeps a
 * message naming the block ("block 3 record 17: ...") in res->detail. */
void nff_drop(nf_ctx_t *c, ba_nffile_drop_t why, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Appends a finished record to the batch (flushing to the sink when full);
 * returns the sink's status. */
int nf_emit(nf_ctx_t *c, const ba_record_t *r);

/* One record (p points at its header, size bytes in all, size >= 4).
 * Flows go to nf_emit; a malformed one is counted. Return 0 or the sink's
 * status. */
int nf_v1_record(nf_ctx_t *c, const uint8_t *p, size_t size);
int nf_v3_record(nf_ctx_t *c, const uint8_t *p, size_t size);
int nf_v1_extmap(nf_ctx_t *c, const uint8_t *p, size_t size);
int nf_exporter_record(nf_ctx_t *c, const uint8_t *p, size_t size);
int nf_sampler_record(nf_ctx_t *c, const uint8_t *p, size_t size);
/* Exporter identity and sampling of sysid into r (when known). */
void nf_apply_exporter(nf_ctx_t *c, uint16_t sysid, ba_record_t *r);

/* Host-order (little-endian) 128-bit address as nfdump keeps it (two u64,
 * the first holding the high half) into network-order 16 bytes. */
void nf_load_v6(const uint8_t *p, uint8_t out[16]);
/* Sets ipver-independent fields of an ICMP flow from dst_port. */
void nf_fix_icmp(ba_record_t *r);

#endif

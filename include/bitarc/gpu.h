/* Device-parallel bitmap index creation and range queries (issue 6).
 *
 * One pipeline, written once against data-parallel primitives (sort by key,
 * reduce-by-key, scan, scatter, stream compaction), runs on three devices:
 *   BA_DEVICE_CPU  the library's ordinary CPU path (online builder, one thread;
 *                  ba_bitmap_op for queries): the reference and the fallback;
 *   BA_DEVICE_OMP  the pipeline on Thrust's OpenMP system (all host cores, no
 *                  GPU needed); present when bitarc_config.h has BA_HAVE_OMP_DEVICE;
 *   BA_DEVICE_GPU  the same pipeline compiled by nvcc for NVIDIA GPUs; present
 *                  when built with CUDA (BA_HAVE_CUDA) AND a device is found at
 *                  run time.
 * Every device returns words byte-identical to the CPU codecs (canonical
 * encodings of doc/codecs.md), so the result does not depend on the device.
 *
 * Typical use (e.g. `bitarc reindex --device D`, `bitarc query --device D`):
 *
 *   ba_gpu_t *g; char why[BA_GPU_ERRMSG_LEN];
 *   if (ba_gpu_open(BA_DEVICE_GPU, &g, why, sizeof why) == BA_ERR_NODEVICE)
 *     ... tell the user `why`, or fall back to BA_DEVICE_CPU ...
 *   ba_gpu_index_t *ix;
 *   rc = ba_gpu_build_index(g, BA_CODEC_PLWAH, dst_ports, nrows, 65536, &ix);
 *   for (size_t i = 0; i < ix->nkeys; i++) {        // one column per present value
 *     ba_bitmap_t *bm; rc = ba_gpu_index_bitmap(ix, i, &bm);   // value ix->keys[i]
 *     ...
 *   }
 *   ba_gpu_index_free(ix);
 *   rc = ba_gpu_range(g, BA_OP_OR, bins, nbins, BA_GPU_RANGE_AUTO, &result);
 *   ba_gpu_close(g);
 *
 * A handle is used by one thread at a time. Errors: every call returns 0 or a
 * negative ba_status; ba_gpu_errmsg() says what went wrong in words. */
#ifndef BITARC_GPU_H
#define BITARC_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "bitarc/bitmap.h"
#include "bitarc/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ba_device { BA_DEVICE_CPU = 0, BA_DEVICE_OMP = 1, BA_DEVICE_GPU = 2 } ba_device_t;

/* "cpu", "omp", "gpu"; NULL for an unknown id. */
const char *ba_device_name(ba_device_t dev);
/* Parses "cpu", "omp" or "gpu"; BA_ERR_INVALID otherwise. */
int ba_device_from_name(const char *name, ba_device_t *out);

#define BA_GPU_ERRMSG_LEN 192

typedef struct ba_gpu ba_gpu_t;

/* Opens a device. BA_ERR_NODEVICE when it is absent, with the reason in `why`
 * (may be NULL): "no CUDA device: <cudaGetErrorString>", "built without CUDA",
 * "built without OpenMP". */
int ba_gpu_open(ba_device_t dev, ba_gpu_t **out, char *why, size_t whycap);
void ba_gpu_close(ba_gpu_t *g);
ba_device_t ba_gpu_device(const ba_gpu_t *g);
/* Text of the last failure on this handle ("" if none). */
const char *ba_gpu_errmsg(const ba_gpu_t *g);

/* Largest number of rows sent to the device in one piece (0 = as large as the
 * device memory allows). Bigger batches are split into pieces and the pieces'
 * columns are joined on the host; the words are the same as for one piece.
 * Must be 0 or >= 64. Ignored by BA_DEVICE_CPU. */
int ba_gpu_set_max_batch(ba_gpu_t *g, size_t rows);

/* ------------------------------------------------------------------ index --- */

/* IMC'13 §3.1: the serialized index of one batch plus its metadata. Column i
 * holds the rows whose value is keys[i] (keys ascending, only values present in
 * the batch), as the words [offsets[i], offsets[i+1]) of `words`; `words` are
 * uint32_t for wah32/plwah/masc/masc-qt and uint64_t for wah64. Every column
 * describes exactly `nrows` rows. */
typedef struct ba_gpu_index {
  ba_codec_t codec;
  uint64_t nrows;
  size_t nkeys;
  uint32_t *keys;
  uint64_t *offsets; /* nkeys + 1 entries */
  void *words;
  size_t nwords;
} ba_gpu_index_t;

/* Builds one bitmap column per distinct value of values[0..n): row i has value
 * values[i]. Every value must be < cardinality (1..2^32; BA_ERR_INVALID names
 * the first row that is not); the devices sort only the key bits that
 * cardinality needs (8 bits at 256). Codecs: wah32, wah64, plwah, masc, masc-qt
 * (compax: BA_ERR_UNSUPPORTED on omp/gpu, see src/gpu/README.md; the cpu
 * device builds every codec). n may be 0 (no columns). */
int ba_gpu_build_index(ba_gpu_t *g, ba_codec_t codec, const uint32_t *values, size_t n,
                       uint64_t cardinality, ba_gpu_index_t **out);
void ba_gpu_index_free(ba_gpu_index_t *ix);
/* Column i as a validated, finished bitmap (a copy). */
int ba_gpu_index_bitmap(const ba_gpu_index_t *ix, size_t i, ba_bitmap_t **out);
/* Index of the column of `value`; BA_ERR_NOT_FOUND if the value is absent. */
int ba_gpu_index_find(const ba_gpu_index_t *ix, uint32_t value, size_t *i);

/* Per-step wall time of the last ba_gpu_build_index / ba_gpu_range (IMC'13
 * Fig. 6). Steps that a device does not have stay 0. Milliseconds, summed
 * over the pieces of a split batch. */
enum {
  BA_GPU_STEP_COPY_IN = 0, /* host -> device copy of the values (or bitmaps) */
  BA_GPU_STEP_SORT,        /* Alg. 2: sort rids by value (only the key bits in use) */
  BA_GPU_STEP_LITERALS,    /* Alg. 3: chunk ids + literals, reduce-by-key(value, chunk) */
  BA_GPU_STEP_FILLS,       /* Alg. 4 (+7 PLWAH merge, MASC runs): words per entry */
  BA_GPU_STEP_FUSE,        /* Alg. 5: scan of word counts, scatter of the words */
  BA_GPU_STEP_META,        /* Alg. 6: keys and column offsets */
  BA_GPU_STEP_COPY_OUT,    /* device -> host copy of index + metadata */
  BA_GPU_STEP_JOIN,        /* host: joining the columns of split pieces */
  BA_GPU_STEP_DECOMPRESS,  /* range: Alg. 1-2 of the range-query paper */
  BA_GPU_STEP_REDUCE,      /* range: COA / ROA / hybrid / ideal hybrid */
  BA_GPU_STEP_COMPRESS,    /* range: result back to canonical wah64 */
  BA_GPU_NSTEPS
};
typedef struct ba_gpu_times {
  double ms[BA_GPU_NSTEPS];
  unsigned pieces; /* device pieces of the last build (1 unless split) */
} ba_gpu_times_t;
const ba_gpu_times_t *ba_gpu_last_times(const ba_gpu_t *g);
/* Short name of a step ("sort", "literals", ...). */
const char *ba_gpu_step_name(unsigned step);

/* ------------------------------------------------------------ range query --- */

/* Strategies of Nelson et al., "Parallel acceleration of CPU and GPU range
 * queries over large data sets": every device strategy first decompresses the
 * operands in parallel (their Alg. 1-2), then reduces across the columns. */
typedef enum ba_gpu_range_alg {
  BA_GPU_RANGE_AUTO = 0,   /* ideal hybrid (the paper's best for <= 1024 bins) */
  BA_GPU_RANGE_COA,        /* column-oriented pairwise tree, log2(m) passes */
  BA_GPU_RANGE_ROA,        /* row-oriented: one segmented reduction per row word */
  BA_GPU_RANGE_HYBRID,     /* tiles of 32 columns, then a second round across tiles */
  BA_GPU_RANGE_IDEAL       /* ideal hybrid: one pass, each row word over all columns */
} ba_gpu_range_alg_t;
/* "auto", "coa", "roa", "hybrid", "ideal"; NULL if unknown. */
const char *ba_gpu_range_alg_name(ba_gpu_range_alg_t alg);
int ba_gpu_range_alg_from_name(const char *name, ba_gpu_range_alg_t *out);

/* OR (BA_OP_OR) or AND (BA_OP_AND) of bms[0..m) (m >= 1), all wah64 and
 * finished; rows may differ (shorter operands are zero-padded, D-6). The
 * result is a new finished wah64 bitmap of the largest row count, equal word
 * for word to folding ba_bitmap_op over the operands. The cpu device folds
 * ba_bitmap_op (the paper's iterative CPU method); `alg` matters only on
 * omp/gpu. BA_ERR_UNSUPPORTED for other codecs or operators. */
int ba_gpu_range(ba_gpu_t *g, ba_op_t op, const ba_bitmap_t *const *bms, size_t m,
                 ba_gpu_range_alg_t alg, ba_bitmap_t **out);

#ifdef __cplusplus
}
#endif
#endif

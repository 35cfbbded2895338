/* Interface between the C front (gpu.c) and the device back ends compiled from
 * pipeline.inl (build_omp.cpp with the host C++ compiler, build_cuda.cu with
 * nvcc). Plain C types only; the back ends catch every C++ exception. */
#ifndef BA_GPU_INTERNAL_H
#define BA_GPU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "bitarc/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Codec kinds the device pipeline knows. */
enum { BA_GPU_K_WAH32 = 0, BA_GPU_K_WAH64, BA_GPU_K_PLWAH, BA_GPU_K_MASC, BA_GPU_K_MASC_QT };

/* One piece of a batch: rows [0, n) of `values`, all < 2^key_bits. Output
 * arrays are allocated with ba_malloc by the back end and owned by the caller:
 * keys[nkeys], offsets[nkeys + 1], words[nwords] (4 or 8 bytes each). */
typedef struct ba_gpu_piece {
  const uint32_t *values;
  size_t n;
  unsigned key_bits; /* 1..32 */
  int kind;          /* BA_GPU_K_* */
  uint32_t *keys;
  uint64_t *offsets;
  void *words;
  size_t nkeys, nwords;
  double ms[BA_GPU_NSTEPS]; /* added to, per step */
} ba_gpu_piece_t;

/* One range query: m columns of wah64 words, all padded by the caller to the
 * same number of groups `groups` (so each column decodes to `groups` words).
 * words = concatenation, colstart[m + 1] word offsets. Output: canonical
 * wah64 words of the result (ba_malloc'd). op: 0 = AND, 1 = OR. */
typedef struct ba_gpu_rangejob {
  const uint64_t *words;
  const uint64_t *colstart;
  size_t m;
  uint64_t groups;
  int op;
  int alg; /* ba_gpu_range_alg_t, AUTO resolved by the caller */
  uint64_t *out;
  size_t nout;
  double ms[BA_GPU_NSTEPS];
} ba_gpu_rangejob_t;

/* Each device back end is a separate module, loaded with dlopen by
 * module_loader.c only when its device is opened: libbitarc-cuda.so (built by
 * nvcc, linked with the CUDA runtime) for gpu, libbitarc-omp.so (host C++
 * with -fopenmp, linked with libgomp and libstdc++) for omp. So neither
 * libbitarc nor the bitarc binary loads libcudart, libgomp or libstdc++ at
 * start. A module exports one function, BA_GPU_MODULE_ENTRY or
 * BA_OMP_MODULE_ENTRY, which checks the interface version and the sizes of
 * the job structures and fills a table of entry points (0 or a negative
 * ba_status, with text in err). Output arrays are allocated with `alloc` (the
 * host's ba_malloc). mem_budget: bytes the back end may use for one piece
 * (0 = unknown / unlimited). */
#define BA_GPU_MODULE_ABI 1
#define BA_GPU_MODULE_ENTRY "ba_gpu_cuda_module_v1"
#define BA_OMP_MODULE_ENTRY "ba_gpu_omp_module_v1"
typedef struct ba_gpu_backend {
  int (*probe)(char *err, size_t errcap);
  int (*build)(ba_gpu_piece_t *p, char *err, size_t errcap);
  int (*range)(ba_gpu_rangejob_t *j, char *err, size_t errcap);
  size_t (*mem_budget)(void);
} ba_gpu_backend_t;
typedef int (*ba_gpu_module_entry_fn)(int abi, size_t piece_size, size_t job_size,
                                      void *(*alloc)(size_t), ba_gpu_backend_t *out);
/* Load the CUDA / OpenMP module once per process (thread-safe) and return
 * its entry points, or BA_ERR_NODEVICE with the reason (the file looked for,
 * or dlerror naming the library it lacks, e.g. libcudart) in why. */
int ba_gpu_cuda_backend(const ba_gpu_backend_t **out, char *why, size_t whycap);
int ba_gpu_omp_backend(const ba_gpu_backend_t **out, char *why, size_t whycap);

#ifdef __cplusplus
}
#endif
#endif
